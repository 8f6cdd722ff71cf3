#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench-guest's migration line, from one rnic-migrate.sh run's output.

    migrate-figures.py MODE FILE
"""
import re
import sys

mode, path = sys.argv[1:3]
text = open(path).read()
down = re.search(r"migration: downtime (\d+) ms, total (\d+) ms, (\d+) bytes",
                 text)
qp = re.search(r"rnic_mig_move_out .*stream (\d+) bytes, TCP state (\d+) bytes",
               text)
dev = re.search(r"rnic_mig_save objects: (\d+) bytes", text)
if not (down and qp and dev and "E2E-RESULT PASS" in text):
    sys.exit(f"bench-guest: migrate-{mode}: failed or no figures (see {path})")
print(f"bench-guest: migrate-{mode}: downtime {down[1]} ms (total {down[2]} ms, "
      f"{down[3]} bytes of RAM sent); per connected QP {qp[1]} bytes of "
      f"stream state + {qp[2]} of TCP state; the device's objects {dev[1]} "
      f"bytes")
