#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A QMP client for the scenarios: one command, its "return" as JSON.

    qmp.py SOCKET COMMAND [ARGUMENTS-JSON]
    qmp.py SOCKET --wait COMMAND KEY VALUE [SECONDS]
        polls COMMAND until its return's KEY is VALUE; fails on "failed"
        or after SECONDS (default 300), then prints the last return
"""
import json
import socket
import sys
import time


class Qmp:
    def __init__(self, path):
        # a new QEMU of cpr-transfer opens its monitor late: wait for it
        end = time.monotonic() + 60
        while True:
            self.sock = socket.socket(socket.AF_UNIX)
            try:
                self.sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                self.sock.close()
                if time.monotonic() > end:
                    raise
                time.sleep(0.1)
        self.file = self.sock.makefile("rw")
        self._read()                            # the greeting
        self.run("qmp_capabilities")

    def _read(self):
        while True:
            msg = json.loads(self.file.readline())
            if "event" not in msg:
                return msg

    def run(self, cmd, args=None):
        req = {"execute": cmd}
        if args:
            req["arguments"] = args
        self.file.write(json.dumps(req) + "\n")
        self.file.flush()
        rsp = self._read()
        if "error" in rsp:
            sys.exit(f"qmp: {cmd}: {rsp['error']['desc']}")
        return rsp["return"]


def main():
    argv = sys.argv[1:]
    qmp = Qmp(argv[0])
    if argv[1] == "--wait":
        cmd, key, want = argv[2:5]
        end = time.monotonic() + float(argv[5] if len(argv) > 5 else 300)
        while True:
            ret = qmp.run(cmd)
            if str(ret.get(key)) == want:
                break
            if ret.get(key) == "failed" or time.monotonic() > end:
                sys.exit(f"qmp: {cmd}: {key} is {ret.get(key)}: {ret}")
            time.sleep(0.1)
    else:
        ret = qmp.run(argv[1], json.loads(argv[2]) if len(argv) > 2 else None)
    print(json.dumps(ret))


if __name__ == "__main__":
    main()
