#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make check-allow: every listen-allow and peer-allow rule that the
# documented setups give (README.md, docs/*.md, the Makefiles, the e2e and
# fuzz scripts) must name its ports.  CONNECT sends the MPA Request, with
# the guest's private data, to whatever listens at an allowed address and
# port: a rule without a port hands the guest every service on that
# address (docs/spec.md, "Addresses").  A rule is read as written, shell
# expansions standing for unknown text, so a port must show after its
# address: ADDR:$port passes, $addr alone does not.  A line that must
# allow every port says why in a comment on it or on the line before:
# "# allow-any-port: REASON" (or <!-- ... --> in Markdown).
# Usage: check-allow.sh [TOP] (default: this repository); ends with
# "allow: N passed, N failed", N counting rules.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=${1:-$here/../..}
cd "$top"

files=()
for f in README.md docs/*.md Makefile mk/*.mk tests/*/*.mk tests/fuzz/*.sh; do
    [ -f "$f" ] && files+=("$f")
done
while IFS= read -r f; do
    # This file names the properties in its own words, not as a setup.
    [ "$f" = tests/e2e/check-allow.sh ] || files+=("$f")
done < <(find tests/e2e -name '*.sh' | sort)

awk '
# A rule names a port when a colon follows its address: after "]" for
# [IPv6], the only colon of an IPv4 rule; a bare IPv6 address (more than
# one colon) has none.
function has_port(r) {
    if (r ~ /^\[/)
        return r ~ /^\[[^]]*\](\/[^:]*)?:./
    return gsub(/:/, ":", r) == 1 && r ~ /:./
}
function marked(s) {
    return s ~ /(#|<!--)[ \t]*allow-any-port:[ \t]*[^ \t]/
}
FNR == 1 { prev = "" }
{
    line = $0
    # Shell expansions become one letter: colons, braces and spaces
    # within them belong to no rule.
    gsub(/\$\(\([^()]*\)\)/, "V", line)
    gsub(/\$\{[^}]*\}/, "V", line)
    gsub(/\$\([^()]*\)/, "V", line)
    while (match(line, /(listen|peer)-allow=/)) {
        prop = substr(line, RSTART, RLENGTH - 1)
        rest = substr(line, RSTART + RLENGTH)
        # The value ends at a space, quote, backquote or parenthesis, or
        # at a single comma (the next -device property); ",," is a comma
        # within the value, between two rules.
        val = ""
        while (rest != "") {
            c = substr(rest, 1, 1)
            if (c == ",") {
                if (substr(rest, 2, 1) != ",")
                    break
                val = val ",,"
                rest = substr(rest, 3)
                continue
            }
            if (c ~ /[ \t"`()]/ || c == "\047")
                break
            val = val c
            rest = substr(rest, 2)
        }
        line = rest
        n = split(val, rules, ",,")
        for (i = 1; i <= n; i++) {
            if (rules[i] == "")
                continue
            if (has_port(rules[i])) {
                passed++
            } else if (marked($0) || marked(prev)) {
                passed++
                printf "allow: %s:%d: %s rule %s allows every port (marked allow-any-port)\n",
                    FILENAME, FNR, prop, rules[i]
            } else {
                failed++
                printf "allow: %s:%d: %s rule %s names no port\n",
                    FILENAME, FNR, prop, rules[i]
            }
        }
    }
    prev = $0
}
END {
    if (passed + failed == 0) {
        print "allow: no listen-allow or peer-allow rule found: is this the repository?"
        failed = 1
    }
    printf "allow: %d passed, %d failed\n", passed, failed
    exit (failed > 0)
}
' "${files[@]}"
