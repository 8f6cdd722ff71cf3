#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks a capture the rnic device wrote against its own statistics.

Usage: check_capture.py FILE.pcapng [FILE.stats]

tshark decodes FILE.pcapng (iwarp_mpa / iwarp_ddp_rdmap).  Frames from the
device carry the source MAC 02:72:6e:69:63:00 ("rnic"), frames from the
peer 02:70:65:65:72:00.  The file passes when tshark marks no frame
malformed, and the FPDUs it decodes match the device's stat-* counters
(FILE.stats, written by the qtests' libqos with RNIC_QTEST_CAPTURE; else
the "rnic-stats" comment the device writes in the file's closing
Interface Statistics Block when the capture stops or QEMU exits):
FPDUs and opcodes sent, CRC verdicts (bad only where the device corrupted
one on purpose or counted a CRC error), and opcodes received.  Prints one
line per file, PASS or FAIL with the reasons; exit status 1 on FAIL.
"""
import collections
import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

RNIC_MAC = "02:72:6e:69:63:00"
OPS = ["write", "read-req", "read-resp", "send", "send-inv", "send-se",
       "send-se-inv", "terminate", "imm-data", "imm-data-se", "atomic-req",
       "atomic-resp"]


def wireshark_term_limit(fields):
    """Wireshark 4.0 sizes a Terminate's "Terminated DDP Header" by the
    error type (14 octets only for a tagged-buffer error), not by the
    offending segment's T flag as RFC 5040 section 4.8 says; a Terminate
    about a tagged segment for another DDP error (e.g. a local catastrophic
    error) then runs past the end and is called malformed.  True for
    exactly that: layer DDP, not a tagged-buffer error, D set, and a body
    that holds a 14-octet header."""
    def num(name):
        f = fields.get(name)
        return None if f is None else int(f.get("show"), 0)
    if num("iwarp_rdma.opcode") != 7 or num("iwarp_rdma.term_layer") != 1 \
            or num("iwarp_rdma.term_etype_ddp") == 1 \
            or num("iwarp_rdma.hdrct_d") != 1:
        return False
    rdma = 28 if num("iwarp_rdma.hdrct_r") == 1 else 0
    return num("iwarp_mpa.ulpdulength") == 18 + 4 + 2 + 14 + rdma


def decode(path):
    """Per direction: FPDUs, their opcodes (all, and those whose CRC is good
    or off), CRC verdicts; and the frames tshark calls malformed."""
    # MPA is found by a heuristic; tried first, so that a connection whose
    # random port is another protocol's well-known one (44818, EtherNet/IP,
    # once) is not decoded as that protocol.
    out = subprocess.run(
        ["tshark", "-r", path, "-T", "pdml",
         "-o", "tcp.try_heuristic_first:TRUE",
         "--disable-heuristic", "rpcrdma_iwarp"],
        check=True, capture_output=True, text=True).stdout
    d = {tx: {"fpdus": 0, "ops": collections.Counter(),
              "ops_ok": collections.Counter(),
              "good": 0, "bad": 0} for tx in (True, False)}
    d["tolerated"] = 0
    malformed = []
    frames = 0
    for pkt in ET.fromstring(out).iter("packet"):
        frames += 1
        fields = {}
        for f in pkt.iter("field"):
            fields.setdefault(f.get("name"), f)
        protos = {p.get("name") for p in pkt.iter("proto")}
        if "_ws.malformed" in protos:
            if wireshark_term_limit(fields):
                d["tolerated"] += 1
            else:
                malformed.append(frames)
        side = d[fields["eth.src"].get("show") == RNIC_MAC]
        if "iwarp_mpa.ulpdulength" not in fields:
            continue
        side["fpdus"] += 1
        crc = fields.get("iwarp_mpa.crc_check")
        bad = crc is not None and "Bad CRC" in crc.get("showname", "")
        if crc is not None:
            side["bad" if bad else "good"] += 1
        op = fields.get("iwarp_rdma.opcode")
        if op is not None:
            side["ops"][int(op.get("show"), 16)] += 1
            if not bad:
                side["ops_ok"][int(op.get("show"), 16)] += 1
    return d, malformed, frames


def load_stats(path):
    stats = collections.defaultdict(int)
    with open(path) as f:
        for line in f:
            name, value = line.split()
            stats[name] = int(value)
    return stats


def isb(pcap):
    """The last Interface Statistics Block: the device's counters from its
    "rnic-stats" comment (None without one), and packets dropped."""
    data = open(pcap, "rb").read()
    order = "<" if data[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
    off, found, dropped = 0, None, 0
    while off + 12 <= len(data):
        btype, blen = struct.unpack(order + "II", data[off:off + 8])
        if blen < 12:
            break
        if btype == 5:
            opt = off + 20
            while opt + 4 <= off + blen - 4:
                code, olen = struct.unpack(order + "HH", data[opt:opt + 4])
                if code == 0:
                    break
                val = data[opt + 4:opt + 4 + olen]
                if code == 1 and val.startswith(b"rnic-stats"):
                    found = val.decode()
                if code == 5 and olen == 8:
                    dropped = struct.unpack(order + "Q", val)[0]
                opt += 4 + (olen + 3) // 4 * 4
        off += blen
    if found is None:
        return None, dropped
    stats = collections.defaultdict(int)
    for item in found.split()[1:]:
        name, value = item.split("=")
        stats[name] = int(value)
    return stats, dropped


def check(pcap, stats_path):
    d, malformed, frames = decode(pcap)
    tx, rx = d[True], d[False]
    errs = []
    if malformed:
        errs.append("malformed frames %s" % malformed)
    st, dropped = isb(pcap)
    if stats_path:
        st = load_stats(stats_path)
    # A file that reached capture-limit holds less than the device did.
    same = (lambda cap, stat: cap <= stat) if dropped else \
        (lambda cap, stat: cap == stat)
    if st is None:
        errs.append("no statistics: no .stats file, no rnic-stats block")
    else:
        # Whatever the device framed itself is exact.
        if not same(tx["fpdus"], st["stat-tx-fpdus"]):
            errs.append("sent FPDUs: capture %d, stat-tx-fpdus %d"
                        % (tx["fpdus"], st["stat-tx-fpdus"]))
        if not same(tx["bad"], st["stat-tx-crc-corrupted"]):
            errs.append("sent bad CRCs: capture %d, stat-tx-crc-corrupted %d"
                        % (tx["bad"], st["stat-tx-crc-corrupted"]))
        if not same(rx["bad"], st["stat-crc-errors"]):
            errs.append("received bad CRCs: capture %d, stat-crc-errors %d"
                        % (rx["bad"], st["stat-crc-errors"]))
        # After the device stops reading (it sent a Terminate or lost the
        # stream), FPDUs read in the same chunk are in the capture but were
        # never parsed: then the capture may hold more.
        stopped = st["stat-terminates-sent"] or st["stat-streams-lost"] \
            or dropped
        for i, name in enumerate(OPS):
            s_tx, s_rx = st["stat-tx-op-" + name], st["stat-rx-op-" + name]
            if not same(tx["ops"][i], s_tx):
                errs.append("sent %s: capture %d, stat %d"
                            % (name, tx["ops"][i], s_tx))
            got = rx["ops_ok"][i]
            if (got < s_rx and not dropped) or (got > s_rx and not stopped):
                errs.append("received %s: capture %d, stat %d"
                            % (name, got, s_rx))
    ops = lambda c: ",".join("%s=%d" % (OPS[i], n)
                             for i, n in sorted(c.items())) or "-"
    summary = ("%d frames; sent %d FPDUs (%s, CRC good %d bad %d); "
               "received %d (%s, CRC good %d bad %d)"
               % (frames, tx["fpdus"], ops(tx["ops"]), tx["good"], tx["bad"],
                  rx["fpdus"], ops(rx["ops"]), rx["good"], rx["bad"]))
    if dropped:
        summary += "; %d packets not written (capture-limit)" % dropped
    if d["tolerated"]:
        summary += ("; %d Terminate(s) about a tagged segment that "
                    "Wireshark 4.0 misreads" % d["tolerated"])
    return errs, summary


def main():
    pcap = sys.argv[1]
    stats = sys.argv[2] if len(sys.argv) > 2 and \
        os.path.exists(sys.argv[2]) else None
    errs, summary = check(pcap, stats)
    name = pcap.rsplit("/", 1)[-1]
    if errs:
        print("FAIL %s: %s; %s" % (name, "; ".join(errs), summary))
        return 1
    print("PASS %s: %s" % (name, summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
