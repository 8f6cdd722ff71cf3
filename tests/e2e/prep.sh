#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make e2e-prep: the guest kernel, siw.ko, rnic.ko and the guests' user
# space, fetched or built into build/e2e/ once, for every kernel line
# (E2E_KERNEL_LINES); later runs find them there.
# With --kdir (make guest-driver) it only unpacks the headers of the
# default line's kernel and prints their folder.
. "$(dirname "$0")/lib/e2e.sh"

if [ "${1:-}" = --kdir ]; then
    e2e_headers_prep
    echo "$E2E_KDIR"
    exit 0
fi
for line in "${E2E_KERNEL_LINES[@]}"; do
    (
        E2E_KERNEL=$line
        unset E2E_KVER
        e2e_prep
        e2e_log "kernel $E2E_KVER: $E2E_VMLINUZ"
        e2e_log "siw: $E2E_SIW_KO"
        e2e_log "rnic: $E2E_RNIC_KO"
        e2e_log "guest user space: $E2E_USERLAND"
    )
done
