#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rdma-rnic.sh on Debian 12's 6.12 kernel line (E2E_KERNEL): rdma-core's
# tools and perftest between two rnic guests, rnic.ko built against 6.12.
E2E_KERNEL=6.12 E2E_NAME=rdma-rnic-6.12 \
    exec bash "$(dirname "$0")/rdma-rnic.sh"
