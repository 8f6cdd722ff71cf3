#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench-guest's qperf lines, from rdma-rnic-companion.sh's client log:
each bandwidth test's figure, then RDMA Read against Send.

    qperf-figures.py LOG READ-TAG SEND-TAG

A TAG is TEST:SIZE as in E2E_QPERF (rc_rdma_read_bw:64K).  qperf -cm1
connects with an ORD and IRD of 1 (its rdma.c), so its Read bandwidth
is one Read per round trip.
"""
import re
import sys

UNIT = {"B/sec": 1e-9, "KB/sec": 1e-6, "MB/sec": 1e-3, "GB/sec": 1.0}


def figures(path):
    """{TEST:SIZE: GB/s} of the bandwidth tests in the log."""
    out, tag = {}, None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.replace("\r", "").strip()
            m = re.match(r"^E2E-QPERF (\S+) (\S+)$", line)
            if m:
                tag = m[1] if m[2] == "default" else f"{m[1]}:{m[2]}"
                continue
            m = re.match(r"^bw\s+=\s+([\d.]+) (\S+)$", line)
            if tag and m and m[2] in UNIT:
                out[tag] = float(m[1]) * UNIT[m[2]]
                tag = None
    return out


def main():
    path, read, send = sys.argv[1:4]
    bw = figures(path)
    for tag, gbs in bw.items():
        print(f"bench-guest: qperf {tag} {gbs:.3g} GB/s")
    if read not in bw or send not in bw:
        sys.exit(f"bench-guest: qperf: no {read} or {send} figure (see {path})")
    print(f"bench-guest: qperf {read} / {send} = {bw[read] / bw[send]:.2f} "
          "(qperf -cm1: ORD 1, one Read per round trip)")


main()
