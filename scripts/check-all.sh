#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# `make check`: runs every test part even when an earlier one fails, keeps
# each runner's own summary, and closes with one line counting them all.
set -uo pipefail

make=${MAKE:-make}
logdir=build/check-logs
mkdir -p "$logdir"
passed=0
failed=0
status=0
failed_logs=()

# Check prints "100%: Checks: N, Failures: F, Errors: E".
count_check() {
    local line n f e
    line=$(grep -E '^[0-9]+%: Checks: ' "$1" | tail -n1)
    [ -n "$line" ] || return 1
    n=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$line")
    f=$(sed -E 's/.*Failures: ([0-9]+).*/\1/' <<<"$line")
    e=$(sed -E 's/.*Errors: ([0-9]+).*/\1/' <<<"$line")
    passed=$((passed + n - f - e))
    failed=$((failed + f + e))
}

# Our e2e and fuzz runners print "WORD: N passed, N failed".
count_plain() {
    local line
    line=$(grep -E '^[a-z0-9]+: [0-9]+ passed, [0-9]+ failed$' "$1" | tail -n1)
    [ -n "$line" ] || return 1
    passed=$((passed + $(awk '{ print $2 }' <<<"$line")))
    failed=$((failed + $(awk '{ print $4 }' <<<"$line")))
}

# meson test prints "Ok: N" and "Fail: N" (and Timeout: N).
count_meson() {
    local ok fail to
    ok=$(awk '/^Ok:/ { print $2 }' "$1" | tail -n1)
    [ -n "$ok" ] || return 1
    fail=$(awk '/^Fail:/ { print $2 }' "$1" | tail -n1)
    to=$(awk '/^Timeout:/ { print $2 }' "$1" | tail -n1)
    passed=$((passed + ok))
    failed=$((failed + ${fail:-0} + ${to:-0}))
}

run_part() {    # run_part TARGET COUNTER
    local log=$logdir/$1.log start=$SECONDS
    $make --no-print-directory "$1" 2>&1 | tee "$log"
    echo "check: $1 took $((SECONDS - start)) s"
    if [ "${PIPESTATUS[0]}" != 0 ]; then
        status=1
        failed_logs+=("$log")
    fi
    if ! "$2" "$log"; then
        echo "check: $1 printed no summary (did it build?)"
        failed=$((failed + 1))
        status=1
    fi
}

for part in "$@"; do
    case $part in
    check-unit*) run_part "$part" count_check ;;
    check-e2e | check-capture | fuzz-smoke | check-soak | check-allow | \
        check-tsan | check-qemu | check-driver | check-spec | check-names)
        run_part "$part" count_plain ;;
    *) run_part "$part" count_meson ;;
    esac
done
# CI shows the end of this output: repeat what failed there, briefly.
if [ ${#failed_logs[@]} -gt 0 ]; then
    echo "check: what failed (whole logs: ${failed_logs[*]}):"
    grep -h -E '^  [^ ]+\| |E2E-FAIL|E2E-RESULT FAIL|timed out|no E2E-DONE|^FAIL| FAIL +[0-9.]+s| TIMEOUT +[0-9.]+s|[0-9]+:[EF]:|names no port' \
        "${failed_logs[@]}" | tail -n 40
fi
echo "check: $passed passed, $failed failed"
exit $status
