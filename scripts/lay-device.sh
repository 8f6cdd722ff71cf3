#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Lays rnic into a QEMU source tree: symlinked folders for the device, the
# protocol core, the shared header and the qtests, plus a few wiring lines in
# QEMU's build files.  Idempotent: every edit is made only if missing, so it
# can run on every ./configure.
set -euo pipefail

qemu=$1
repo=$2
mark='# rnic'

link() {    # link TARGET LINKNAME
    if [ "$(readlink "$2" 2>/dev/null)" != "$1" ]; then
        rm -rf "$2"
        ln -s "$1" "$2"
    fi
}

# add_after FILE ANCHOR-REGEX LINE: insert LINE after the first line matching
# ANCHOR-REGEX, unless LINE is already there.
add_after() {
    grep -qxF "$3" "$1" && return
    grep -qE "$2" "$1" || {
        echo "lay-device: cannot find '$2' in $1: is this QEMU 10.0?" >&2
        exit 1
    }
    awk -v anchor="$2" -v line="$3" \
        '{ print } !done && $0 ~ anchor { print line; done = 1 }' "$1" > "$1.rnic-tmp"
    mv "$1.rnic-tmp" "$1"
}

link "$repo/hw/rnic" "$qemu/hw/rnic"
link "$repo/core" "$qemu/hw/rnic-core"
link "$repo/include/rnic" "$qemu/include/rnic"
link "$repo/hw/rnic/rnic-devices.mak" "$qemu/configs/devices/x86_64-softmmu/rnic.mak"
for t in "$repo"/tests/qtest/*.c; do
    link "$t" "$qemu/tests/qtest/$(basename "$t")"
done

add_after "$qemu/hw/meson.build" "^subdir\('xenpv'\)" "subdir('rnic-core') $mark"
add_after "$qemu/hw/meson.build" "^subdir\('rnic-core'\)" "subdir('rnic') $mark"
add_after "$qemu/hw/Kconfig" "^source xtensa/Kconfig" "source rnic/Kconfig"
add_after "$qemu/meson.build" "^    'hw/nvme',$" "    'hw/rnic', $mark"
add_after "$qemu/tests/qtest/meson.build" "^qtests_x86_64 = qtests_i386$" \
    "qtests_x86_64 += ['rnic-test'] $mark"
