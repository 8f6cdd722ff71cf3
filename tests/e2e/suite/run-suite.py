#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""rdma-core's own test suite (pyverbs), loaded as its run_tests.py loads
it, with one line per test that the host can read off the console:

    SUITE-RESULT OUTCOME TEST-ID [REASON]

OUTCOME is pass, fail, error, skip, xfail or xpass.  One harness-only
change: a device with no parent (siw) finds its netdev through
`rdma -j link`, as a device with one (rnic) does through sysfs, so that
rdma_cm's tests run on both.

Usage: run-suite.py SUITE_DIR --dev DEV --port 1 --gid 0
"""
import json
import os
import subprocess
import sys
import unittest
from importlib.machinery import SourceFileLoader


class LineResult(unittest.TextTestResult):
    def _line(self, outcome, test, why=""):
        why = " ".join(str(why).split())[:200]
        print(f"SUITE-RESULT {outcome} {test.id()}{' ' + why if why else ''}",
              flush=True)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._line("pass", test)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._line("fail", test, err[1])

    def addError(self, test, err):
        super().addError(test, err)
        self._line("error", test, f"{err[0].__name__}: {err[1]}")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._line("skip", test, reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._line("xfail", test)

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._line("xpass", test)


def netdev_from_rdma_link(base):
    """RDMATestCase._get_ip_mac, for a device without device/net/."""
    orig = base.RDMATestCase._get_ip_mac

    def get_ip_mac(self, dev, port, idx):
        if os.path.exists(f"/sys/class/infiniband/{dev}/device/net/"):
            return orig(self, dev, port, idx)
        link = json.loads(subprocess.check_output(
            ["rdma", "-j", "link", "show", f"{dev}/{port}"]))
        ip = mac = None
        try:
            ip, mac = self.get_ip_mac_address(link[0]["netdev"])
        except (KeyError, IndexError, subprocess.CalledProcessError):
            pass
        self.args.append([dev, port, idx, ip, mac])

    base.RDMATestCase._get_ip_mac = get_ip_mac


def main():
    suite_dir = sys.argv.pop(1)
    sys.path.insert(0, suite_dir)
    from args_parser import parser
    parser.parse_args()
    tests = SourceFileLoader(
        "tests", os.path.join(suite_dir, "__init__.py")).load_module()
    import tests.base
    netdev_from_rdma_link(tests.base)
    runner = unittest.TextTestRunner(resultclass=LineResult, verbosity=0,
                                     stream=sys.stdout)
    unittest.main(module=tests, testRunner=runner, exit=False, argv=[
        sys.argv[0]])
    print("SUITE-END", flush=True)


if __name__ == "__main__":
    main()
