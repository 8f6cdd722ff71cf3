#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""fio's figures from the console of tests/e2e/nvmeof-fio.sh's host guest.

fio_figures.py LOG MIB: reads the JSON fio printed between E2E-FIO-BEGIN
and E2E-FIO-END (--output-format=json, the jobs of nvmeof-fio.fio), prints
one line per timed job, "fio: JOB DIR IOPS p99 P us BW MB/s" (p99: the
99th percentile of completion latency; MB = 2^20 bytes), and exits 1 with
"fio: error: ..." lines when a job of the job file is missing or reported
an error (a failed CRC32c check is err 84), or when a verify job did not
write and check all MIB MiB.  perf-table.py takes its figures from
figures().
"""
import json
import os
import re
import sys

JOBFILE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "..", "nvmeof-fio.fio")
# The jobs that check data rather than give figures: verify*; those
# named verify*-zero only write zeros over the area.
CHECK = "verify"


def job_names():
    with open(JOBFILE) as f:
        return [n for n in re.findall(r"^\[([^]]+)\]", f.read(), re.M)
                if n != "global"]


def fio_json(path):
    """The JSON between the markers of a console log (None if absent)."""
    lines, inside = [], False
    with open(path, errors="replace") as f:
        for line in f:
            line = line.replace("\r", "").rstrip("\n")
            if line.startswith("E2E-FIO-BEGIN"):
                lines, inside = [], True
            elif line.startswith("E2E-FIO-END") and inside:
                return json.loads("\n".join(lines))
            elif inside:
                lines.append(line)
    return None


def direction(job):
    return "write" if "write" in job else "read"


def figures(path, mib=None):
    """({job: {"iops", "p99" (us), "bw" (MB/s)}}, [error, ...]); without
    MIB, what the verify jobs covered is not checked."""
    errors, out = [], {}
    try:
        data = fio_json(path)
    except ValueError as e:
        return out, ["%s: fio's JSON does not parse: %s" % (path, e)]
    if data is None:
        return out, ["%s: no fio output (E2E-FIO-BEGIN ... E2E-FIO-END)" % path]
    jobs = {j["jobname"]: j for j in data.get("jobs", [])}
    size = (mib or 0) * 2**20
    for name in job_names():
        j = jobs.get(name)
        if j is None:
            errors.append("job %s did not run" % name)
            continue
        if j.get("error"):
            errors.append("job %s: fio error %d" % (name, j["error"]))
        if name.startswith(CHECK):
            read = 0 if name.endswith("-zero") else size
            if mib is not None and (j["write"]["io_bytes"] != size or
                                    j["read"]["io_bytes"] != read):
                errors.append("job %s wrote %d and read %d bytes, not %d "
                              "and %d" % (name, j["write"]["io_bytes"],
                                          j["read"]["io_bytes"], size, read))
        else:
            d = j[direction(name)]
            if not d["io_bytes"]:
                errors.append("job %s moved no data" % name)
                continue
            p99 = d["clat_ns"].get("percentile", {}).get("99.000000")
            out[name] = {"iops": d["iops"], "bw": d["bw_bytes"] / 2**20,
                         "p99": p99 / 1000 if p99 is not None else None}
    return out, errors


def main():
    path, mib = sys.argv[1], int(sys.argv[2])
    figs, errors = figures(path, mib)
    for name, f in figs.items():
        print("fio: %-18s %-5s %8.0f IOPS  p99 %8.0f us  %7.1f MB/s"
              % (name, direction(name), f["iops"], f["p99"] or 0, f["bw"]))
    for e in errors:
        print("fio: error: %s" % e)
    if errors:
        sys.exit(1)
    print("fio: %s: %d MiB zeroed, written, read back and checked (CRC32c)"
          % (", ".join(n for n in job_names() if n.startswith(CHECK) and
                       not n.endswith("-zero")), mib))


if __name__ == "__main__":
    main()
