# SPDX-License-Identifier: GPL-2.0-or-later
#
# The one file a scenario sources: every host-side helper, and e2e_prep,
# which makes (or finds in the cache) everything the guests need.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
. "$E2E_LIB/kernel.sh"
. "$E2E_LIB/driver.sh"
. "$E2E_LIB/siw.sh"
. "$E2E_LIB/userland.sh"
. "$E2E_LIB/librnic.sh"
. "$E2E_LIB/initramfs.sh"
. "$E2E_LIB/guest.sh"
. "$E2E_LIB/migrate.sh"

# The guest driver, built against the guest's headers in a folder of that
# kernel's (lib/driver.sh).  Kbuild takes seconds to find nothing to do,
# so look first.
e2e_rnic_build() {
    local out=$E2E_OUT/rnic/$E2E_KVER
    E2E_RNIC_KO=$(e2e_driver_ko "$out")
    e2e_driver_fresh "$out" "$E2E_KDIR" && return 0
    e2e_driver_build "$E2E_KDIR" "$out" >/dev/null ||
        e2e_die "rnic.ko did not build against $E2E_KDIR"
}

e2e_prep() {
    e2e_apt_need busybox-static cpio kmod
    e2e_kernel_prep
    e2e_siw_build
    e2e_userland_prep
    e2e_rnic_build
}

# Every rnic in a scenario records its traffic (docs/debugging.md, "The
# capture").  After the guests, tshark must decode each capture with no
# malformed frame, and find it matching the counters the device wrote at
# its end (tests/capture/check_capture.py).
E2E_CAPTURES=${E2E_CAPTURES:-$E2E_OUT/captures}
e2e_capture() {         # NAME: the -device option that records to NAME
    mkdir -p "$E2E_CAPTURES"
    rm -f "$E2E_CAPTURES/$1.pcapng"*
    echo ",capture=$E2E_CAPTURES/$1.pcapng"
}

e2e_capture_check() {   # NAME...
    local n rc=0
    for n; do
        python3 "$E2E_TOP/tests/capture/check_capture.py" \
            "$E2E_CAPTURES/$n.pcapng" >&2 || rc=1
    done
    return "$rc"
}

# Scenario bookkeeping: one line with the verdict and the wall time.
E2E_T0=$(date +%s)
e2e_result() {
    local name=$1 rc=$2
    if [ "$rc" -eq 0 ]; then
        echo "E2E-RESULT PASS $name ($(( $(date +%s) - E2E_T0 )) s)"
    else
        echo "E2E-RESULT FAIL $name ($(( $(date +%s) - E2E_T0 )) s)"
    fi
    return "$rc"
}
