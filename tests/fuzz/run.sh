#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Runs each libFuzzer target for a bounded time on its seeds and the
# corpus it grew before; fails if any target crashed, leaked, timed out
# or ran out of memory.  Per target it prints libFuzzer's last status line
# (executions, coverage, exec/s) and its "Done N runs" line.
# Usage: run.sh FUZZ_DIR SECONDS TARGET:MAX_LEN...
set -u
dir=$1
secs=$2
shift 2
failed=0
passed=0

for spec in "$@"; do
    t=${spec%%:*}
    max_len=${spec#*:}
    log=$dir/$t.log
    mkdir -p "$dir/work-$t"
    "$dir/$t" -max_total_time="$secs" -max_len="$max_len" -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$dir/crash-$t-" \
        "$dir/work-$t" "$dir/corpus-$t" >"$log" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "fuzz: $t: FAILED (exit $rc); the input is in $dir/crash-$t-*," \
             "the log in $log:"
        grep -v '^#' "$log" | tail -n 40
        failed=$((failed + 1))
        continue
    fi
    passed=$((passed + 1))
    echo "fuzz: $t: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1)"
    echo "fuzz: $t: $(grep -E '^Done [0-9]+ runs' "$log" | tail -n 1)"
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
