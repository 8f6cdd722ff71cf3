#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make e2e: every scenario (tests/e2e/*.sh but the helpers), one after the
# other because each one boots TCG guests that want both cores.  Runs them
# all even when one fails, then prints one summary line.
set -uo pipefail
cd "$(dirname "$0")" || exit 1

# Scenarios named on the command line (SCRIPT or SCRIPT:ARG,ARG...), or
# all of them.
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(*.sh)

passed=0
failed=0
for t in "${scenarios[@]}"; do
    # check-allow.sh boots nothing: make check-allow runs it.
    case $t in
    prep.sh | run-all.sh | demo.sh | bench-guest.sh | check-allow.sh) continue ;;
    esac
    script=${t%%:*} args=()
    [ "$script" = "$t" ] || IFS=, read -ra args <<<"${t#*:}"
    echo "e2e: running $t"
    if ./"$script" ${args[@]+"${args[@]}"}; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
done
echo "e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
