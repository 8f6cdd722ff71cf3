#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rdma-rnic-siw.sh with the rnic requiring MPA CRC (mpa-crc=required):
# siw, which does not require it, must agree to it in both directions, and
# every connection the rnic adopts must run with CRC32c (make e2e).
E2E_NAME=rdma-rnic-siw-crc E2E_RNIC_CRC=1 \
E2E_RNIC_OPTS="${E2E_RNIC_OPTS:-},mpa-crc=required" \
    exec bash "$(dirname "$0")/rdma-rnic-siw.sh"
