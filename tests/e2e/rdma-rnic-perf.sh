#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rdma-rnic.sh with the rest of perftest (make e2e; make check runs
# rdma-rnic.sh with ib_write_bw only): bandwidth of Send and RDMA Read,
# latency of Send, RDMA Write and RDMA Read, all with -R (rdma_cm).
E2E_NAME=${E2E_NAME:-rdma-rnic-perf} \
E2E_PERF=${E2E_PERF:-ib_send_bw,ib_read_bw,ib_send_lat,ib_write_lat,ib_read_lat} \
    exec bash "$(dirname "$0")/rdma-rnic.sh"
