# SPDX-License-Identifier: GPL-2.0-or-later
"""The tables of a Markdown page, as docs/spec.md writes them."""


def tables(text):
    """(heading, rows) of each table; rows are lists of cells, the first
    the column titles; heading is the last '#' line above the table."""
    heading, rows = "", None
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if rows is None:
                rows = [cells]
            elif not set("".join(cells)) <= set("-: "):
                rows.append(cells)
            continue
        if rows is not None:
            yield heading, rows
            rows = None
        if line.startswith("#"):
            heading = line
