#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make check-driver: rnic.ko compiles against the headers of every kernel
# line the guests run (E2E_KERNEL_LINES: the newest version of each that
# apt has), with -Werror (Kbuild), each in build/driver/VERSION/, apart
# from the other builds.  Any warning kbuild prints fails it too: modpost's
# are not errors to -Werror.  One line per kernel, then "driver: N passed,
# N failed".
set -uo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/../e2e/lib/common.sh"
. "$E2E_LIB/kernel.sh"
. "$E2E_LIB/driver.sh"

# check_line LINE: builds rnic.ko for that kernel line; its own shell, as
# e2e_die exits and e2e_kver keeps the version it found.
check_line() {
    local out log t0
    E2E_KERNEL=$1
    unset E2E_KVER
    e2e_headers_prep
    out=$E2E_TOP/build/driver/$E2E_KVER
    log=$out.log
    # From nothing every time: a modpost warning is printed only by the
    # build that links, so an incremental one could hide it.
    rm -rf "$out"
    mkdir -p "$out"
    t0=$(date +%s)
    if ! e2e_driver_build "$E2E_KDIR" "$out" >"$log" 2>&1; then
        echo "driver: FAIL $E2E_KVER ($1): did not build (log: $log)"
    elif grep -qi 'warning' "$log"; then
        echo "driver: FAIL $E2E_KVER ($1): warnings (log: $log)"
    else
        echo "driver: PASS $E2E_KVER ($1): rnic.ko with -Werror, no warning ($(( $(date +%s) - t0 )) s)"
        return 0
    fi
    grep -iE 'error|warning' "$log" | head -n 20 | sed 's/^/  /'
    return 1
}

passed=0
failed=0
for line in "${E2E_KERNEL_LINES[@]}"; do
    if (check_line "$line"); then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
done
echo "driver: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
