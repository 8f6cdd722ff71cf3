#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rdma-rnic.sh with each guest's rnic on QEMU's main loop (main-loop=on):
# rdma-core's tools in librnic's direct mode, whose doorbells come through
# the processes' doorbell pages to the main loop instead of the device's
# IOThread.
E2E_MAIN_LOOP=1 E2E_NAME=rdma-rnic-main-loop \
    exec bash "$(dirname "$0")/rdma-rnic.sh"
