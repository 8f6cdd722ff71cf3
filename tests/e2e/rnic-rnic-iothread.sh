#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rnic-rnic.sh with each guest's rnic on its own IOThread (-object iothread
# -device rnic,iothread=): the same operations must pass when sockets,
# placement and completions run off QEMU's main loop, under the device
# lock, with doorbells through the mailbox (hw/rnic/rnic-db.c): paths the
# main loop never takes.
E2E_IOTHREAD=1 E2E_NAME=rnic-rnic-iothread \
    exec bash "$(dirname "$0")/rnic-rnic.sh"
