#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rnic-rnic.sh with each guest's rnic on QEMU's main loop (main-loop=on)
# instead of the IOThread of its own it has by default: the same
# operations must pass when sockets, placement and completions run in the
# main loop, with doorbells served in the vCPU's MMIO write: paths the
# IOThread never takes.
E2E_MAIN_LOOP=1 E2E_NAME=rnic-rnic-main-loop \
    exec bash "$(dirname "$0")/rnic-rnic.sh"
