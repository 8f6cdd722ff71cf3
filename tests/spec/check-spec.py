#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# docs/spec.md against include/rnic/rnic-abi.h: every structure of the
# header has a table in the spec whose rows (offset, size, field) are the
# compiler's, in order; tables that show part of a structure (a command
# that reads only the handle) agree with it; every register, opcode and
# status code of the header is in a spec table with its value, and the
# spec names none the header lacks; every section that the spec or the
# header's comments name ("Title") exists.  The compiler's view comes from
# tests/spec/abi-layout.c (offsetof, sizeof).
#
# Usage: check-spec.py SPEC_MD HEADER < abi-layout output
import re
import sys
from pathlib import Path

from mdtables import tables

# A constant table is known by its first two column titles.
PREFIX = {("offset", "name"): "RNIC_REG_",
          ("code", "name"): "RNIC_CMD_",
          ("opcode", "name"): "RNIC_CMD_",
          ("wqe opcode", "name"): "RNIC_WQE_",
          ("cqe status", "name"): "RNIC_CQE_",
          ("type", "name"): "RNIC_EV_",
          ("access", "name"): "RNIC_ACC_"}
RENAME = {"RNIC_CMD_PENDING": "RNIC_CMD_STATUS_PENDING"}
TICK = re.compile(r"`([^`]+)`")


def compiler_view(lines):
    structs, consts, cur = {}, {}, None
    for line in lines:
        kind, name, *rest = line.split()
        if kind == "struct":
            cur = structs[name] = []
        elif kind == "field":
            cur.append((int(rest[0]), int(rest[1]), name))
        else:
            consts[name] = int(rest[0])
    return structs, consts


def field_name(cell):
    m = TICK.search(cell)
    return m.group(1).split("[")[0] if m else cell


def check_layouts(spec_tables, structs, errors):
    full = set()
    for heading, rows in spec_tables:
        m = re.search(r"`struct (rnic_\w+)`", heading)
        if not m or [c.lower() for c in rows[0][:3]] != \
                ["offset", "size", "field"]:
            continue
        name = m.group(1)
        if name not in structs:
            errors.append(f"{heading}: no struct {name} in rnic-abi.h "
                          "(or not in tests/spec/abi-layout.c)")
            continue
        got = [(int(r[0]), int(r[1]), field_name(r[2])) for r in rows[1:]]
        want = structs[name]
        if got == want:
            full.add(name)
        elif not all(g in want for g in got):
            bad = [g for g in got if g not in want]
            errors.append(f"struct {name}: spec rows {bad} are not the "
                          f"header's; header: {want}")
    for name in structs:
        if name not in full:
            errors.append(f"struct {name}: no spec table lists all its "
                          f"fields: {structs[name]}")


def check_constants(spec_tables, consts, errors):
    seen = set()
    for heading, rows in spec_tables:
        key = tuple(c.lower() for c in rows[0][:2])
        if key not in PREFIX:
            continue
        for r in rows[1:]:
            value, name = TICK.search(r[0]), TICK.search(r[1])
            if not value or not name:
                errors.append(f"{heading}: row {r} has no `value` `NAME`")
                continue
            cname = PREFIX[key] + name.group(1)
            cname = RENAME.get(cname, cname)
            if cname not in consts:
                errors.append(f"{heading}: {name.group(1)} is not "
                              f"{cname} of rnic-abi.h")
            elif int(value.group(1), 0) != consts[cname]:
                errors.append(f"{cname}: spec {value.group(1)}, header "
                              f"{consts[cname]:#x}")
            seen.add(cname)
    for cname in consts:
        if cname.startswith(tuple(PREFIX.values())) and cname not in seen:
            errors.append(f"{cname}: in rnic-abi.h, in no spec table")


def check_version(text, consts, errors):
    m = re.search(r"^\| `0x004` \| `VERSION` \| RO \| `(0x[0-9a-f]+)`",
                  text, re.M)
    if not m or int(m.group(1), 16) != consts["RNIC_VERSION_VALUE"]:
        errors.append("VERSION's reset value in the register table is not "
                      f"{consts['RNIC_VERSION_VALUE']:#010x}")


def check_references(text, header, errors):
    heads = [h.replace("`", "") for h in
             re.findall(r"^#+ (.*)$", text, re.M)]
    refs = re.findall(r'\("([A-Z][^"]*)"', text) + \
        re.findall(r'docs/spec\.md "([^"]*)', header.replace("\n *", " "))
    for ref in sorted(set(" ".join(r.split()) for r in refs)):
        if not any(h.startswith(ref) for h in heads):
            errors.append(f'section "{ref}" is named but is not in spec.md')


def main(spec, header):
    structs, consts = compiler_view(sys.stdin.read().splitlines())
    text = Path(spec).read_text()
    spec_tables = list(tables(text))
    errors = []
    check_layouts(spec_tables, structs, errors)
    check_constants(spec_tables, consts, errors)
    check_version(text, consts, errors)
    check_references(text, Path(header).read_text(), errors)
    for e in errors:
        print(f"spec: {e}")
    print(f"spec: {len(structs)} structures, {len(consts)} constants; "
          f"{len(errors)} disagreements")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
