#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The table of make bench-guest (tests/e2e/bench-guest.sh).

perf-table.py TCP-FILE DUR NAME=LOG[:CPU] ... [--fio NAME=LOG] ...: for
each NAME (a pair of guests; one of them named siw), the perftest figures
its client guest's console holds between E2E-PERF-BEGIN TAG and
E2E-PERF-END (tests/e2e/lib/guest-lib.sh, e2e_perf_all), beside the raw
TCP figures of tests/bench/tcp-pair in TCP-FILE, with the ratio of every
other pair to siw and to raw TCP.  CPU: a file holding "USER SYS", the
seconds of the pair's whole scenario; with it, host CPU seconds per GiB
the bandwidth tests moved in DUR seconds each.  --fio NAME=LOG: the
NVMe-oF figures of pair NAME, from the console of
tests/e2e/nvmeof-fio.sh's host guest (fio_figures.py), as the nvme-*
rows.
"""
import re
import sys

from fio_figures import figures as fio_figures

# (label, perftest tag, column, unit, tcp-pair line "MODE SIZE")
ROWS = [
    ("write-bw 64KiB", "ib_write_bw-65536", "BW_average", "MB/s", "bw 65536"),
    ("write-bw 1MiB", "ib_write_bw-1048576", "BW_average", "MB/s", "bw 1048576"),
    ("read-bw 64KiB", "ib_read_bw-65536", "BW_average", "MB/s", "bw 65536"),
    ("read-bw 1MiB", "ib_read_bw-1048576", "BW_average", "MB/s", "bw 1048576"),
    ("send-lat 64B", "ib_send_lat-64", "t_avg", "us", "lat 64"),
    ("send-lat-ev 64B", "ib_send_lat-64-e", "t_avg", "us", "lat 64"),
    ("send-bw-ev 1MiB", "ib_send_bw-1048576-e", "BW_average", "MB/s", "bw 1048576"),
    ("write-rate 4KiB", "ib_write_bw-4096", "MsgRate", "Mpps", "rate 4096"),
    ("write-bw 4KiB", "ib_write_bw-4096", "BW_average", "MB/s", "bw 4096"),
]

# fio over NVMe-oF (tests/e2e/nvmeof-fio.fio's jobs): (label, job,
# figure, unit); p99 is the 99th percentile of completion latency.
FIO_ROWS = [
    ("nvme-rread-iops 4KiB qd1", "randread-4k-qd1", "iops", "IOPS"),
    ("nvme-rread-p99 4KiB qd1", "randread-4k-qd1", "p99", "us"),
    ("nvme-rread-iops 4KiB qd32", "randread-4k-qd32", "iops", "IOPS"),
    ("nvme-rread-p99 4KiB qd32", "randread-4k-qd32", "p99", "us"),
    ("nvme-rwrite-iops 4KiB qd1", "randwrite-4k-qd1", "iops", "IOPS"),
    ("nvme-rwrite-p99 4KiB qd1", "randwrite-4k-qd1", "p99", "us"),
    ("nvme-rwrite-iops 4KiB qd32", "randwrite-4k-qd32", "iops", "IOPS"),
    ("nvme-rwrite-p99 4KiB qd32", "randwrite-4k-qd32", "p99", "us"),
    ("nvme-read-bw 128KiB qd32", "read-128k-qd32", "bw", "MB/s"),
    ("nvme-write-bw 128KiB qd32", "write-128k-qd32", "bw", "MB/s"),
]

# perftest's headers have spaces inside column names.
HEADER_FIX = [("BW peak[MB/sec]", "BW_peak"), ("BW average[MB/sec]", "BW_average"),
              ("MsgRate[Mpps]", "MsgRate"), ("99.9% percentile[usec]", "p999"),
              ("99% percentile[usec]", "p99"), ("tps average", "tps"),
              ("[usec]", "")]


def perf_figures(path):
    """{tag: {column: value}} from one guest's console log."""
    out, tag, header = {}, None, None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.replace("\r", "").strip()
            m = re.match(r"^E2E-PERF-BEGIN (\S+)", line)
            if m:
                tag, header = m.group(1), None
            elif line.startswith("E2E-PERF-END"):
                tag = None
            elif tag and line.startswith("#bytes"):
                for a, b in HEADER_FIX:
                    line = line.replace(a, b)
                header = line.split()
            elif tag and header and re.match(r"^\d+\s+\d", line):
                vals = line.split()
                out[tag] = {h: float(v) for h, v in zip(header, vals)
                            if re.match(r"^[\d.]+$", v)}
                header = None
    return out


def tcp_figures(path):
    """{"MODE SIZE": value} from tcp-pair's lines."""
    out = {}
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) >= 4 and w[0] == "tcp-pair":
                out[w[1] + " " + w[2]] = float(w[3])
                if w[1] == "bw":    # its message rate, in Mpps
                    out["rate " + w[2]] = float(w[3]) * 2**20 / int(w[2]) / 1e6
    return out


def cpu_per_gib(figs, cpu_path, dur):
    """Host CPU seconds per GiB: all of a scenario's CPU time over the
    bytes its bandwidth tests moved: BW average (MB/s) for dur seconds,
    or with -e (a count, not a time) message size times iterations."""
    with open(cpu_path) as f:
        user, sys_ = (float(x) for x in f.read().split()[-2:])
    mib = sum(v["#bytes"] * v["#iterations"] / 2**20 if t.endswith("-e")
              else v["BW_average"] * dur
              for t, v in figs.items() if "BW_average" in v)
    return (user + sys_) / (mib / 1024) if mib else None


def fmt(v):
    if v is None:
        return "-"
    return "%.4g" % v if abs(v) < 1e4 else "%.0f" % v


def ratio(a, b):
    return "%.3g" % (a / b) if a is not None and b else "-"


def main():
    tcp, dur = tcp_figures(sys.argv[1]), float(sys.argv[2])
    pairs = []                  # (name, figures, cpu file or None)
    fio = {}                    # name: fio figures, as "fio:JOB" tags
    args = sys.argv[3:]
    while args:
        arg = args.pop(0)
        if arg == "--fio":
            name, log = args.pop(0).split("=", 1)
            figs, errors = fio_figures(log)
            for e in errors:
                print("bench-guest: nvme %s: %s" % (name, e))
            fio[name] = {"fio:" + j: f for j, f in figs.items()}
            continue
        name, spec = arg.split("=", 1)
        log, _, cpu = spec.partition(":")
        pairs.append((name, perf_figures(log), cpu or None))
    siw = dict((n, f) for n, f, _ in pairs).get("siw", {})
    others = [(n, f) for n, f, _ in pairs if n != "siw"]
    heads = [n for n, _, _ in pairs] + ["raw-TCP", "unit"] + \
        ["%s/siw" % n for n, _ in others] + ["%s/TCP" % n for n, _ in others]
    fio_rows = [(label, "fio:" + job, col, unit, None)
                for label, job, col, unit in FIO_ROWS] if fio else []
    line = "bench-guest: %%-%ds" % max([16] + [len(r[0]) for r in
                                            ROWS + fio_rows]) + \
        " %10s" * len(heads)

    def row(label, tag, col, unit, tkey):
        vals = [f.get(tag, {}).get(col) for _, f, _ in pairs]
        s = siw.get(tag, {}).get(col)
        t = tcp.get(tkey)
        mine = [f.get(tag, {}).get(col) for _, f in others]
        print(line % tuple([label] + [fmt(v) for v in vals] + [fmt(t), unit] +
                           [ratio(v, s) for v in mine] +
                           [ratio(v, t) for v in mine]))

    print(line % tuple(["figure"] + heads))
    for r in ROWS:
        row(*r)
    cpu = {n: cpu_per_gib(f, c, dur) if c else None for n, f, c in pairs}
    print(line % tuple(["host-cpu/GiB"] + [fmt(cpu[n]) for n, _, _ in pairs] +
                       ["-", "s"] +
                       [ratio(cpu[n], cpu.get("siw")) for n, _ in others] +
                       ["-"] * len(others)))
    for n, f, _ in pairs:
        f.update(fio.get(n, {}))
    for r in fio_rows:
        row(*r)

if __name__ == "__main__":
    main()
