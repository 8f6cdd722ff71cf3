#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make check-tsan: the device's qtests (main loop and IOThread) and a
# smaller scale soak on the ThreadSanitizer build of QEMU, then
# check-reports.py sorts what TSan reported (tests/tsan/check-reports.py
# says which reports fail the run).  Ends with "tsan: N passed, N failed":
# the qtests' subtests, and one more failure if the device raced.
#
# Usage: run.sh QEMU-SRC QEMU-TSAN-BUILD QTEST...
set -uo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
shift 2
here=$(cd "$(dirname "$0")" && pwd)
logs=$build/tsan-logs
rm -rf "$logs"
mkdir -p "$logs"
# QEMU's own suppressions (recursive mutexes, pthread internals).
export TSAN_OPTIONS="suppressions=$src/tests/tsan/suppressions.tsan detect_deadlocks=false history_size=7 exitcode=0 die_after_fork=0 log_path=$logs/tsan"
export QTEST_QEMU_BINARY=./qemu-system-x86_64
passed=0
failed=0

tally() {   # tally TAP-LOG EXIT-STATUS
    local ok bad
    ok=$(grep -c '^ok ' "$1")
    bad=$(grep -c '^not ok ' "$1")
    passed=$((passed + ok))
    failed=$((failed + bad))
    if [ "$2" != 0 ] && [ "$bad" = 0 ]; then
        echo "tsan: $(basename "$1" .log) exited with status $2"
        failed=$((failed + 1))
    fi
}

for t in "$@"; do
    echo "tsan: running $t"
    (cd "$build" && timeout 1200 "./tests/qtest/$t" --tap -k) \
        >"$logs/$t.log" 2>&1
    tally "$logs/$t.log" $?
done
# The soak at a tenth of its size: every way into the device at once.
echo "tsan: running rnic-soak-test (SOAK_QPS=1000 SOAK_CONNS=100)"
(cd "$build" && SOAK_QPS=1000 SOAK_CONNS=100 timeout 1200 \
    ./tests/qtest/rnic-soak-test --tap -k) >"$logs/rnic-soak-test.log" 2>&1
tally "$logs/rnic-soak-test.log" $?

python3 "$here/check-reports.py" "$logs" || failed=$((failed + 1))
echo "tsan: $passed passed, $failed failed"
[ "$failed" = 0 ]
