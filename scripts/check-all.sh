#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# `make check`: runs every test part even when an earlier one fails, keeps
# each runner's own summary, and closes with one line counting them all.
# It exits 0 exactly when that line counts no failure (tests/check/
# aggregator-test.sh holds it to that).  MAKE and CHECK_LOGDIR let that
# test run it on parts of its own.
set -uo pipefail

make=${MAKE:-make}
logdir=${CHECK_LOGDIR:-build/check-logs}
mkdir -p "$logdir"
passed=0
failed=0
failed_logs=()
times=()

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

# run_part TARGET COUNTER: a part fails when make fails, when its summary
# counts a failure, or when it prints no summary; a part whose make failed
# but whose summary counts no failure is counted as one failure, so that
# the closing line's count is never 0 when the exit status is not.
run_part() {
    local log=$logdir/$1.log start=$SECONDS rc before=$failed
    $make --no-print-directory "$1" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    times+=("$(printf '%6d s  %s' $((SECONDS - start)) "$1")")
    echo "check: $1 took $((SECONDS - start)) s"
    if ! "$2" "$log"; then
        echo "check: $1 printed no summary (did it build?)"
        failed=$((failed + 1))
    elif [ "$rc" != 0 ] && [ "$failed" = "$before" ]; then
        echo "check: $1 exited with status $rc but counted no failure"
        failed=$((failed + 1))
    fi
    [ "$failed" = "$before" ] || failed_logs+=("$log")
}

for part in "$@"; do
    case $part in
    check-unit*) run_part "$part" count_check ;;
    check-e2e | check-capture | fuzz-smoke | check-soak | check-allow | \
        check-tsan | check-qemu | check-driver | check-spec | check-names | \
        check-aggregator)
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
echo "check: time per part:"
printf 'check: %s\n' "${times[@]}"
echo "check: all parts took $SECONDS s"
echo "check: $passed passed, $failed failed"
[ "$failed" = 0 ]
