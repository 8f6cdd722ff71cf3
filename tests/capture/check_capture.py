#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks a capture the rnic device wrote against its own statistics.

Usage: check_capture.py FILE.pcapng [FILE.stats]
       check_capture.py --dir FOLDER    (every FILE.pcapng with its FILE.stats)

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
import concurrent.futures
import html
import os
import re
import struct
import subprocess
import sys

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


# A PDML field line: its name, and what it shows (show=, showname=).
PDML_FIELD = re.compile(r'<field name="([^"]*)"(?: showname="([^"]*)")?'
                        r'(?:.*? show="([^"]*)")?')


def pdml_packets(path):
    """Per packet of PDML, the first field of each name and the names of the
    protocols.  tshark prints a field or a protocol per line; lines are
    read as they come, not as one document: payload bytes, printed in hex,
    make the PDML of a capture 15 times its size, and only the protocols
    looked at are printed (-J).  MPA is found by a heuristic; tried first,
    so that a connection whose random port is another protocol's
    well-known one (44818, EtherNet/IP, once) is not decoded as that
    protocol."""
    cmd = ["tshark", "-r", path, "-T", "pdml",
           "-J", "eth iwarp_mpa iwarp_ddp_rdmap _ws.malformed",
           "-o", "tcp.try_heuristic_first:TRUE",
           "--disable-heuristic", "rpcrdma_iwarp"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,
                          stderr=subprocess.PIPE, errors="replace") as tshark:
        fields, protos = None, None
        for line in tshark.stdout:
            line = line.lstrip()
            if line.startswith("<field "):
                if fields is None or len(line) > 4096:
                    continue        # a field of payload bytes
                m = PDML_FIELD.match(line)
                if m and m.group(1) not in fields:
                    fields[m.group(1)] = {
                        "showname": html.unescape(m.group(2) or ""),
                        "show": html.unescape(m.group(3) or "")}
            elif line.startswith("<proto "):
                protos.add(line.split('"')[1])
            elif line.startswith("<packet>"):
                fields, protos = {}, set()
            elif line.startswith("</packet>"):
                yield fields, protos
                fields = None
        err = tshark.stderr.read()
    if tshark.returncode:
        raise subprocess.CalledProcessError(tshark.returncode, cmd, None, err)


def decode(path):
    """Per direction: FPDUs, their opcodes (all, and those whose CRC is good
    or off), CRC verdicts; and the frames tshark calls malformed."""
    d = {tx: {"fpdus": 0, "ops": collections.Counter(),
              "ops_ok": collections.Counter(),
              "good": 0, "bad": 0} for tx in (True, False)}
    d["tolerated"] = 0
    malformed = []
    frames = 0
    for fields, protos in pdml_packets(path):
        frames += 1
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


def check_one(pcap, stats=None):
    """One line, PASS or FAIL, for one capture; True when it passed."""
    name = pcap.rsplit("/", 1)[-1]
    try:
        errs, summary = check(pcap, stats)
    except subprocess.CalledProcessError as e:
        print("FAIL %s: tshark: %s" % (name, (e.stderr or "").strip()),
              flush=True)
        return False
    if errs:
        print("FAIL %s: %s; %s" % (name, "; ".join(errs), summary), flush=True)
        return False
    print("PASS %s: %s" % (name, summary), flush=True)
    return True


def check_dir(folder):
    """Every capture in FOLDER with its FILE.stats, as many at a time as
    there are processors (most of the time is tshark's)."""
    pcaps = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                   if f.endswith(".pcapng"))
    stats = [p[:-len(".pcapng")] + ".stats" for p in pcaps]
    stats = [s if os.path.exists(s) else None for s in stats]
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        ok = list(pool.map(check_one, pcaps, stats))
    return 0 if ok and all(ok) else 1


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--dir":
        return check_dir(sys.argv[2])
    stats = sys.argv[2] if len(sys.argv) > 2 and \
        os.path.exists(sys.argv[2]) else None
    return 0 if check_one(sys.argv[1], stats) else 1


if __name__ == "__main__":
    sys.exit(main())
