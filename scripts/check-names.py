#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`make check-names`: one name per thing in the code that ships.

In core/, hw/, guest-driver/ and include/, no function is defined in two
files (a function defined twice in one file, under #if alternatives, is
one thing) and no two headers share a name.  Ends with
"names: N passed, N failed".
"""
import os
import re
import sys
from collections import defaultdict

ROOTS = ("core", "hw", "guest-driver", "include")
# A definition starts at column 0 and its parameter list ends in "{".
DEF = re.compile(r"^(?![\s#/}])[^;{}()=]*?\b([A-Za-z_]\w*)\s*\(", re.M)


def sources(top):
    for root in ROOTS:
        for dirpath, _, names in os.walk(os.path.join(top, root)):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    yield os.path.join(dirpath, name)


def definitions(text):
    for m in DEF.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        rest = text[i:i + 200].lstrip()
        if rest.startswith("{"):
            yield m.group(1)


def main(top):
    funcs, headers = defaultdict(set), defaultdict(list)
    for path in sources(top):
        rel = os.path.relpath(path, top)
        if path.endswith(".h"):
            headers[os.path.basename(path)].append(rel)
        with open(path, errors="replace") as f:
            for name in definitions(f.read()):
                funcs[name].add(rel)
    checks = {
        "functions": {n: sorted(p) for n, p in funcs.items() if len(p) > 1},
        "headers": {n: p for n, p in headers.items() if len(p) > 1},
    }
    read = {"functions": len(funcs), "headers": len(headers)}
    failed = 0
    for what, twice in checks.items():
        for name, paths in sorted(twice.items()):
            print(f"names: {what}: {name} in {', '.join(paths)}")
        print(f"names: {'FAIL' if twice else 'PASS'} no two {what} share "
              f"a name ({read[what]} names)")
        failed += bool(twice)
    print(f"names: {len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
