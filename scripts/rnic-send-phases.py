#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Where a Send ping-pong between two rnic guests waits.

rnic-send-phases.py A.trace B.trace [BYTES]

Each file is one QEMU's trace, both QEMUs on one host so that their
clocks agree: QEMU's log backend with timestamps, `-msg timestamp=on
-trace events=EVENTS,file=A.trace`, EVENTS a file naming rnic_doorbell,
rnic_tx, rnic_rx and rnic_cqe one per line.  BYTES: the size of one FPDU on the wire as
rnic_tx and rnic_rx print it (default 88: a 64-byte Send, as ib_send_lat
sends it).  Each one-way trip is cut into four phases:

  doorbell->sendmsg   the SQ doorbell until the FPDU went to the socket
                      (waking the device's thread, fetching the WQE,
                      framing, CRC, sendmsg)
  sendmsg->peer-recv  loopback TCP and the waking of the peer's thread
  recv->cqe           the peer placing the Send and writing its CQE
  cqe->doorbell       the peer guest seeing the CQE and posting its
                      answer (guest time under TCG)

and printed as median, mean and 90th percentile over every trip but the
first 100 (connection setup, warm-up).  Tracing costs a write() per
event: the phases are longer than untraced, compare runs traced alike.
"""
import re
import statistics
import sys

PHASES = ("doorbell->sendmsg", "sendmsg->peer-recv", "recv->cqe",
          "cqe->doorbell")
LINE = re.compile(r"\d+@(\d+)\.(\d+):(rnic_\w+) (.*)")


def events(paths):
    out = []
    for side, path in enumerate(paths):
        with open(path, errors="replace") as f:
            for line in f:
                m = LINE.match(line)
                if m:
                    t = int(m.group(1)) * 1e6 + int(m.group(2))
                    out.append((t, side, m.group(3), m.group(4)))
    return sorted(out)


def phases(evs, size):
    """{phase: [microseconds]}: each phase ends at the next event of the
    trip and starts at the last event that began it."""
    ph = {p: [] for p in PHASES}
    last = {}

    def step(key, phase, t):
        if key in last:
            ph[phase].append(t - last.pop(key))

    for t, side, name, arg in evs:
        peer = 1 - side
        if name == "rnic_doorbell" and arg.startswith("doorbell 0x100 "):
            step((side, "cqe"), "cqe->doorbell", t)
            last[(side, "db")] = t
        elif name == "rnic_tx" and arg.endswith("sendmsg %d" % size):
            step((side, "db"), "doorbell->sendmsg", t)
            last[(side, "tx")] = t
        elif name == "rnic_rx" and arg.endswith("recv %d" % size):
            step((peer, "tx"), "sendmsg->peer-recv", t)
            last[(side, "rx")] = t
        elif name == "rnic_cqe" and " RECV " in arg:
            step((side, "rx"), "recv->cqe", t)
            last[(side, "cqe")] = t
    return ph


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 88
    ph = phases(events(sys.argv[1:3]), size)
    total = 0.0
    for p in PHASES:
        v = sorted(ph[p][100:])
        if not v:
            print("%-19s no trips (is BYTES right?)" % p)
            continue
        med = statistics.median(v)
        total += med
        print("%-19s n=%-6d median %8.1f us  mean %8.1f  p90 %8.1f" %
              (p, len(v), med, statistics.mean(v), v[int(len(v) * 0.9)]))
    print("%-19s %17.1f us (sum of the medians)" % ("one way", total))


if __name__ == "__main__":
    main()
