#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""One table of rdma-core's suite on rnic and on siw, from the guests'
console logs (SUITE-RESULT lines of run-suite.py), and its verdict:

- every test that passes on siw passes on rnic;
- no test fails or errors on rnic unless ALLOWED names it, with the
  reason (a test that assumes InfiniBand: docs/driver-guide.md,
  "rdma-core's test suite");
- where ALLOWED names a test of test_iwarp.py in its place ("iwarp:
  CLASS.TEST"), that test passes on rnic.

Usage: suite-table.py RNIC_LOG SIW_LOG ALLOWED
"""
import re
import sys
from collections import Counter

LINE = re.compile(r"^SUITE-RESULT (\w+) (\S+)(?: (.*))?$")
IWARP = re.compile(r"\biwarp: (\S+)")
BAD = ("fail", "error")


def results(path):
    got, ended = {}, False
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\r\n")
            m = LINE.match(line)
            if m:
                got[m.group(2)] = (m.group(1), m.group(3) or "")
            ended |= line == "SUITE-END"
    return got, ended


def allowed(path):
    """TEST-ID: reason, one a line; '#' starts a comment."""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                test, _, why = line.partition(":")
                out[test.strip()] = why.strip()
    return out


def outcome(got, suffix):
    """The outcome of the one test whose id ends with @suffix, or "-"."""
    found = [o for t, (o, _) in got.items() if t.endswith(suffix)]
    return found[0] if len(found) == 1 else "-"


def main(rnic_log, siw_log, allowed_path):
    rnic, rnic_ended = results(rnic_log)
    siw, siw_ended = results(siw_log)
    ok_bad = allowed(allowed_path)
    problems = []
    for name, ended, got in (("rnic", rnic_ended, rnic),
                             ("siw", siw_ended, siw)):
        if not ended or not got:
            problems.append(f"the suite did not run to its end on {name}")
    print(f"{'test':<80} {'rnic':<6} siw")
    for test in sorted(set(rnic) | set(siw)):
        r = rnic.get(test, ("-", ""))[0]
        s = siw.get(test, ("-", ""))[0]
        if (r, s) != ("skip", "skip"):
            print(f"{test:<80} {r:<6} {s}")
        if s == "pass" and r != "pass":
            problems.append(f"{test}: passes on siw, {r} on rnic: "
                            f"{rnic.get(test, ('', ''))[1]}")
        elif r in BAD and test not in ok_bad:
            problems.append(f"{test}: {r} on rnic: {rnic[test][1]}")
    for test, why in sorted(ok_bad.items()):
        m = IWARP.search(why)
        if m and outcome(rnic, "test_iwarp." + m.group(1)) != "pass":
            problems.append(f"{test}: its rdma_cm counterpart {m.group(1)}"
                            f" did not pass on rnic")
    for name, got in (("rnic", rnic), ("siw", siw)):
        c = Counter(o for o, _ in got.values())
        print(f"suite: {name}: {len(got)} tests, " +
              ", ".join(f"{c[o]} {o}" for o in
                        ("pass", "fail", "error", "skip", "xfail", "xpass")))
    for p in problems:
        print(f"suite: PROBLEM {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
