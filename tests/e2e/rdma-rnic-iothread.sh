#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rdma-rnic.sh with each guest's rnic on its own IOThread: rdma-core's
# tools in librnic's direct mode, whose doorbells come through the
# processes' doorbell pages into the IOThread's mailbox (rnic-db.c).
E2E_IOTHREAD=1 E2E_NAME=rdma-rnic-iothread \
    exec bash "$(dirname "$0")/rdma-rnic.sh"
