#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rdma-rnic-siw.sh on Debian 12's 6.12 kernel line (E2E_KERNEL): rnic
# against 6.12's own siw (built from linux-source-6.12, as Debian's image
# has none), rping and perftest both ways.
E2E_KERNEL=6.12 E2E_NAME=rdma-rnic-siw-6.12 \
    exec bash "$(dirname "$0")/rdma-rnic-siw.sh"
