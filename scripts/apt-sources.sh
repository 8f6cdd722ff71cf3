#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Adds the extra suites rnic needs, on the mirror this machine already
# uses: trixie as deb-src (QEMU 10.0's source, and rdma-core 56.1's, inside
# which the guests' libibverbs provider is built: tests/e2e/lib/librnic.sh
# says why not bookworm's 44.0) and bookworm-backports as deb (meson >= 1.5).
# The mirror is read from the machine's apt configuration so that no host
# name is ever written into the repository.
set -euo pipefail

out=/etc/apt/sources.list.d/rnic-extra.sources
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

mirror_uri() {
    local f
    # deb822 files first: the URIs line of a stanza carrying bookworm.
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && [ "$f" != "$out" ] || continue
        awk 'BEGIN{RS=""} /Suites:[^\n]*bookworm([ \n]|$)/ {
                 if (match($0, /URIs:[ \t]*[^ \t\n]+/)) {
                     s = substr($0, RSTART, RLENGTH); sub(/URIs:[ \t]*/, "", s);
                     print s; exit } }' "$f"
    done | head -n1 | grep . && return 0
    # One-line format.
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        awk '$1 == "deb" && $0 ~ / bookworm / {
                 for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' |
        head -n1 | grep .
}

uri=$(mirror_uri) || {
    echo "apt-sources: no Debian bookworm entry found in the apt configuration;" \
         "add one for your mirror, then re-run" >&2
    exit 1
}

want="Types: deb-src
URIs: $uri
Suites: trixie
Components: main
Signed-By: $keyring

Types: deb
URIs: $uri
Suites: bookworm-backports
Components: main
Signed-By: $keyring"

if [ "$(id -u)" != 0 ]; then
    echo "apt-sources: root is needed to write $out and update apt; re-run as root" >&2
    exit 1
fi
if [ ! -f "$out" ] || [ "$(cat "$out")" != "$want" ]; then
    printf '%s\n' "$want" > "$out"
fi
# Called only when something must be installed or fetched: refresh the lists.
apt-get -o DPkg::Lock::Timeout=600 update -qq
