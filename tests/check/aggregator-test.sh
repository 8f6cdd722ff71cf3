#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make check-aggregator: scripts/check-all.sh, the aggregator of make check,
# run on parts of this test's own (a make that runs the script named after
# each target), must count every part's summary and exit non-zero exactly
# when its closing line counts a failure.  Ends with
# "aggregator: N passed, N failed".
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# part TARGET EXIT-STATUS [LINE...]: a part that prints LINEs and exits so.
part() {
    local t=$1 rc=$2
    shift 2
    { echo '#!/bin/sh'; printf "echo '%s'\n" "$@"; echo "exit $rc"; } >"$work/$t"
}
cat >"$work/make" <<MAKE
#!/bin/sh
# The aggregator calls: make --no-print-directory TARGET
exec sh "$work/\$2"
MAKE
chmod +x "$work/make"

# aggregate NAME WANT-STATUS WANT-LINE TARGET...: one run of the aggregator.
aggregate() {
    local name=$1 want_rc=$2 want_line=$3 rc out
    shift 3
    out=$(cd "$top" && MAKE=$work/make CHECK_LOGDIR=$work/logs \
        bash scripts/check-all.sh "$@" 2>&1)
    rc=$?
    rc=$((rc != 0))
    if [ "$rc" = "$want_rc" ] && [ "$(tail -n 1 <<<"$out")" = "$want_line" ]; then
        echo "aggregator: PASS $name"
        passed=$((passed + 1))
    else
        echo "aggregator: FAIL $name: exit status $rc (want $want_rc), its output:"
        sed 's/^/  | /' <<<"$out"
        failed=$((failed + 1))
    fi
}

part check-names 0 'names: 3 passed, 0 failed'
part check-qtest 0 'Ok:                 7' 'Fail:               0'
aggregate all-pass 0 'check: 10 passed, 0 failed' check-names check-qtest

# Each way a part can fail, beside one that passes: its make fails and
# its summary counts it; its summary counts a failure and make does not
# fail; make fails and the summary counts none; no summary at all; a
# meson timeout.
part check-e2e 1 'e2e: 2 passed, 1 failed'
part check-unit 0 '100%: Checks: 5, Failures: 1, Errors: 0'
part check-allow 2 'allow: 4 passed, 0 failed'
part check-spec 0 'spec: PASS something that prints no summary line'
part check-qtest-san 1 'Ok:                 1' 'Fail:               0' 'Timeout:            1'
aggregate each-failure 1 'check: 14 passed, 5 failed' check-names check-e2e \
    check-unit check-allow check-spec check-qtest-san
aggregate one-failing-part 1 'check: 5 passed, 1 failed' check-names check-e2e
aggregate no-summary-last 1 'check: 3 passed, 1 failed' check-names check-spec

echo "aggregator: $passed passed, $failed failed"
[ "$failed" = 0 ]
