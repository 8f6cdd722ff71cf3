#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# `make check-capture`: runs the qtests that move data (CAPTURE_QTESTS in
# the Makefile: two devices, the test playing the peer, connection setup,
# bounds under load, RFC 6581 RTR) with every device recording its traffic
# (RNIC_QTEST_CAPTURE), then has tshark decode each capture and compares
# it with the device's statistics (check_capture.py).  Ends with
# "capture: N passed, N failed".
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
qemu_build=${QEMU_BUILD:-$top/build/qemu}
out=$top/build/captures/qtest
tests=${CAPTURE_QTESTS:?set by make check-capture}
passed=0
failed=0

if ! command -v tshark > /dev/null; then
    echo "check-capture: tshark is missing; run ./configure --install-deps"
    echo "capture: 0 passed, 1 failed"
    exit 1
fi
rm -rf "$out"
mkdir -p "$out"
for t in $tests; do
    if (cd "$qemu_build" && RNIC_QTEST_CAPTURE=$out \
        QTEST_QEMU_BINARY=./qemu-system-x86_64 ./tests/qtest/$t \
        > "$out/$t.log" 2>&1); then
        echo "check-capture: $t ran"
    else
        echo "check-capture: $t failed (log: $out/$t.log)"
        failed=$((failed + 1))
    fi
done
for pcap in "$out"/*.pcapng; do
    [ -e "$pcap" ] || continue
    if python3 "$top/tests/capture/check_capture.py" "$pcap" \
        "${pcap%.pcapng}.stats"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
done
[ $passed -gt 0 ] || { echo "check-capture: no capture was written"; failed=$((failed + 1)); }
echo "capture: $passed passed, $failed failed"
[ $failed = 0 ]
