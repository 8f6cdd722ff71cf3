#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# QEMU's generic-fuzz target on -device rnic: the fuzzer writes and reads
# the device's BARs (registers, doorbells, the MSI-X table) and answers
# every DMA read the device makes (command descriptors, WQEs, page lists)
# with its own bytes.  The sanitizer build (build/qemu-san) reports any
# memory error.  Usage: device.sh QEMU_SAN_BUILD [libFuzzer options...]
set -u
build=$1
shift
# LISTEN and CONNECT stay on an address no service or other test binds on
# its own; a host service bound to every address (0.0.0.0) is reached on
# its port even so, with the fuzzer's bytes as private data.  Every port
# is allowed all the same: the corpus was grown with every port allowed,
# and its LISTENs and CONNECTs name whatever port their bytes hold (port 0
# included, which only a rule without a port allows); naming ports would
# turn them into ERR_DENIED and leave the socket paths unfuzzed.
addr=127.255.255.254
# main-loop=on: the device's work in the fuzzer's own thread, as each input
# runs it (on an IOThread it would run beside, and a crash not replay).
# allow-any-port: coverage of the socket paths (above); an address of its own
export QEMU_FUZZ_ARGS="-M q35 -nodefaults -device rnic,main-loop=on,listen-allow=$addr,peer-allow=$addr"
# The device's memory regions: rnic-regs (BAR 0), rnic-udb (BAR 4, the
# doorbell pages) and its MSI-X BAR.
export QEMU_FUZZ_OBJECTS="rnic*"
export ASAN_OPTIONS=detect_leaks=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
exec "$build/qemu-fuzz-x86_64" --fuzz-target=generic-fuzz "$@"
