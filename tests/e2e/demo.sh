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

echo "rnic demo: booting two Linux guests under TCG (about 30-40 s)..."
E2E_NAME=demo bash "$here/rnic-rnic.sh" >"$logs/../demo.out" 2>&1
rc=$?

# The console lines of a guest: markers without their prefix.
console() { tr -d '\r' <"$logs/demo-$1.log"; }
ops() {
    console "$1" | sed -n "s/^E2E-PASS $2: /  PASS  /p; s/^E2E-FAIL $2: /  FAIL  /p"
}
# perftest's result line of PROG in the client's console: its columns.
perf() {
    console client | sed -n "/^E2E-PERF-BEGIN $1/,/^E2E-PERF-END/p" |
        awk '$1 ~ /^[0-9]+$/ && NF >= 5 { print; exit }'
}

cat <<TXT

What ran: two QEMU guests, each with "-device rnic" and no NIC.  Each
loads rnic.ko, an iWARP RDMA device (rnic0) with a network interface of
its own that the guest gives an address; rdma_cm connects the guests by
those addresses, and the devices carry iWARP (MPA/DDP/RDMAP) over TCP
connections that QEMU makes on the host's loopback (the device's addr-map
takes 10.a.b.c to 127.a.b.c).  A device reaches only the ports it is told
(listen-allow, peer-allow).  The program, verbs-ops, uses libibverbs,
librdmacm and rnic's own verbs (librnic's infiniband/rnicdv.h).

TXT
echo "Server guest's connections (rnicdv_query_conn):"
console server | grep -E '^server: connection:' | sed 's/^server: /  /'
echo
echo "Operations (client side; the server re-checks every byte it received):"
ops client client
echo
echo "Server-side checks:"
ops server server
echo
echo "Bandwidth and latency (perftest -R, guest clocks under TCG emulation):"
perf ib_write_bw | awk '{ printf "  ib_write_bw  %s-byte RDMA Writes: %s MB/s average\n", $1, $4 }'
perf ib_send_lat | awk '{ printf "  ib_send_lat  %s-byte Sends: %s us average, %s us typical\n", $1, $6, $5 }'
echo
echo "Unload: $(console client | grep -q '^E2E-PASS unload' && echo clean || echo FAILED)."
if [ $rc -eq 0 ]; then
    echo "demo: PASS in $(( $(date +%s) - t0 )) s"
else
    echo "demo: FAIL in $(( $(date +%s) - t0 )) s; see $logs/demo-*.log and $logs/../demo.out"
fi
exit $rc
