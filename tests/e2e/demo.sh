#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make demo: the rnic-rnic scenario (two guests, each with -device rnic and
# no network card, talking RDMA through a host loopback TCP connection),
# told as a short story: what was set up, each operation and its check,
# bandwidth and latency.  The full console logs stay under build/e2e/logs.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
logs=${E2E_LOGS:-$here/../../build/e2e/logs}
t0=$(date +%s)

echo "rnic demo: booting two Linux guests under TCG (about 20-30 s)..."
E2E_NAME=demo bash "$here/rnic-rnic.sh" >"$logs/../demo.out" 2>&1
rc=$?

# The console lines of a guest: markers without their prefix.
console() { tr -d '\r' <"$logs/demo-$1.log"; }
ops() {
    console "$1" | sed -n "s/^E2E-PASS $2: /  PASS  /p; s/^E2E-FAIL $2: /  FAIL  /p"
}

cat <<TXT

What ran: two QEMU guests, each with "-device rnic" and no NIC.  Each
loads rnic.ko, which brings the device up and offers /dev/rnic0; user
space (rnic-tool) creates a PD, CQs and a QP, registers its own memory,
and the devices carry iWARP (MPA/DDP/RDMAP) over a TCP connection that
QEMU makes on the host's loopback.  A device reaches only what it is told:
the server's may listen on two ports of 127.0.0.1
(listen-allow=127.0.0.1:PORT-PORT+1), the client's may connect to the
server's port only (peer-allow=127.0.0.1:PORT).

TXT
echo "Server guest:"
console server | grep -E '^(/dev/rnic0|server: (listening|connection [0-9]+ 127))' |
    sed 's/^/  /' | head -4
echo "Client guest:"
console client | grep -E '^client: (connection|server buffer)' | sed 's/^/  /' | head -2
echo
echo "Operations (client side; the server re-checks every byte it received):"
ops client client
echo
echo "Bandwidth and latency (guest clocks under TCG emulation):"
ops client bw
ops client lat
echo
echo "Server-side checks:"
ops server server
echo
bytes=$(console client | sed -n 's/^E2E-PASS client: .*\(rdma-write\|rdma-read\|send\) \([0-9]*\) bytes.*/\2/p' |
        awk '{ s += $1 } END { print s + 0 }')
echo "Operations moved $bytes payload bytes, all verified; unload: $(console client |
    grep -q '^E2E-PASS unload' && echo clean || echo FAILED)."
if [ $rc -eq 0 ]; then
    echo "demo: PASS in $(( $(date +%s) - t0 )) s"
else
    echo "demo: FAIL in $(( $(date +%s) - t0 )) s; see $logs/demo-*.log and $logs/../demo.out"
fi
exit $rc
