#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Runs one worked example of docs/debugging.md and shows what a driver
# writer would look at: what the driver saw, QEMU's log (-d guest_errors,
# -trace 'rnic_*'), the device's state dump and its capture in tshark.
# Usage: tests/debug/example.sh read-stag|cq-not-armed|no-receive
set -euo pipefail

name=${1:?usage: $0 read-stag|cq-not-armed|no-receive}
top=$(cd "$(dirname "$0")/../.." && pwd)
qemu_build=${QEMU_BUILD:-$top/build/qemu}
rel=build/examples/$name
dir=$top/$rel
rm -rf "$dir"
mkdir -p "$dir"

section() { printf '\n== %s ==\n' "$*"; }

section "what the driver saw (tests/qtest/rnic-dp-test.c, /rnic/dp/example/$name)"
(cd "$qemu_build" && RNIC_EXAMPLE_DIR=$dir \
    QTEST_QEMU_BINARY=./qemu-system-x86_64 ./tests/qtest/rnic-dp-test \
    -p "/x86_64/rnic/dp/example/$name") > "$dir/test.log" 2>&1 ||
    { cat "$dir/test.log"; exit 1; }
sed -n 's/^# example: //p' "$dir/test.log"

section "QEMU's log: -d guest_errors -trace 'rnic_*' -D $rel/qemu.log," \
    "from the connection's RTS on (registers, doorbells, vector 0 left out)"
sed -E 's/^[0-9]+@[0-9.]+://' "$dir/qemu.log" |
    sed -n '/rnic_conn_rts/,$p' |
    grep -v -e '^rnic_reg_' -e '^rnic_doorbell' -e '^rnic_irq MSI-X vector 0' |
    head -n 20

section "state: qom-get /machine/peripheral/ID state (QPs and CQs)"
python3 - "$dir" <<'PY'
import json, sys
for dev in "ab":
    st = json.load(open("%s/state-%s.json" % (sys.argv[1], dev)))
    for qp in st["qps"]:
        rq = qp.get("rq", {})
        print("%s: QP %d %s ird %d ord %d sq prod %d cons %d, rq posted %s, "
              "last-terminate %s" % (dev, qp["qpn"], qp["state"], qp["ird"],
              qp["ord"], qp["sq"]["prod"], qp["sq"]["cons"],
              rq.get("posted", "-"), json.dumps(qp["last-terminate"])))
    for cq in st["cqs"]:
        print("%s: CQ %d armed %s prod %d cons %d vector %d" % (dev, cq["cqn"],
              cq["armed"], cq["prod"], cq["cons"], cq["vector"]))
    for s in st["stags"]:
        print("%s: STag %s %s pd %d base %s length %d %s" % (dev, s["stag"],
              s["type"], s["pd"], s["base"], s["length"], ",".join(s["access"])))
PY

section "capture: tshark -r $rel/b.pcapng (after the SYN exchange)"
tshark -r "$dir/b.pcapng" -o tcp.try_heuristic_first:TRUE --disable-heuristic rpcrdma_iwarp 2>/dev/null |
    sed -n '4,$p'
section "the FPDUs' STags: tshark -T fields -e frame.number" \
    "-e iwarp_rdma.opcode -e iwarp_ddp.stag -e iwarp_rdma.srcstag"
tshark -r "$dir/b.pcapng" -o tcp.try_heuristic_first:TRUE --disable-heuristic rpcrdma_iwarp -T fields \
    -e frame.number -e iwarp_rdma.opcode -e iwarp_ddp.stag \
    -e iwarp_rdma.srcstag -Y iwarp_ddp_rdmap 2>/dev/null
if tshark -r "$dir/b.pcapng" -o tcp.try_heuristic_first:TRUE -Y 'iwarp_rdma.opcode == 7' 2>/dev/null | grep -q .; then
    section "the Terminate, decoded (tshark -V -Y 'iwarp_rdma.opcode == 7')"
    tshark -r "$dir/b.pcapng" -o tcp.try_heuristic_first:TRUE --disable-heuristic rpcrdma_iwarp -V \
        -Y 'iwarp_rdma.opcode == 7' 2>/dev/null |
        sed -n '/Terminate Control/,/Terminated DDP/p' | head -n 14
fi
