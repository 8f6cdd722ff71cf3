#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# nvmeof.sh on Debian 12's 6.12 kernel line (E2E_KERNEL): nvmet-rdma and
# nvme-rdma of 6.12 on rnic, in every mode with an rnic in it (the modes
# named, or all but the siw-only reference).
[ $# -gt 0 ] || set -- loop rnic fault rnic-siw siw-rnic
E2E_KERNEL=6.12 E2E_NAME=nvmeof-6.12 \
    exec bash "$(dirname "$0")/nvmeof.sh" "$@"
