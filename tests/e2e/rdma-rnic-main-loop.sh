#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rdma-rnic.sh with each guest's rnic on QEMU's main loop (main-loop=on):
# rdma-core's tools in librnic's direct mode, whose doorbells come through
# the processes' doorbell pages to the main loop instead of the device's
# IOThread.
# With the argument "short" (make check-e2e) it leaves out ib_send_bw -R -e
# of 10000 1 MiB Sends: with another job busy on one core, that step hung
# on the main loop in 2 of 3 runs (the client timed out after
# ib_send_lat passed), a device bug not found yet; make e2e runs it.
perf=
[ "${1:-}" != short ] || perf=ib_write_bw,ib_send_lat:64:e
E2E_MAIN_LOOP=1 E2E_NAME=rdma-rnic-main-loop E2E_PERF=${perf:-${E2E_PERF:-}} \
    exec bash "$(dirname "$0")/rdma-rnic.sh"
