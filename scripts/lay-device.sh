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

# wire FILE ANCHOR-REGEX LINE [ANCHOR-REGEX LINE ...]: FILE without the
# lines an earlier run added (those carrying the marker, or equal to a LINE),
# plus each LINE after the first line matching its ANCHOR.  The file is
# rewritten only when that changes it, so meson does not reconfigure.
wire() {
    local file=$1 tmp=$1.rnic-tmp
    shift
    grep -vF -e " $mark" "$file" > "$tmp" || true
    while [ $# -gt 0 ]; do
        grep -qE "$1" "$tmp" || {
            echo "lay-device: cannot find '$1' in $file: is this QEMU 10.0?" >&2
            rm -f "$tmp"
            exit 1
        }
        awk -v anchor="$1" -v line="$2" '
            $0 == line { next }
            { print }
            !done && $0 ~ anchor { print line; done = 1 }' "$tmp" > "$tmp.1"
        mv "$tmp.1" "$tmp"
        shift 2
    done
    if cmp -s "$file" "$tmp"; then
        rm -f "$tmp"
    else
        mv "$tmp" "$file"
    fi
}

link "$repo/hw/rnic" "$qemu/hw/rnic"
link "$repo/core" "$qemu/hw/rnic-core"
link "$repo/include/rnic" "$qemu/include/rnic"
link "$repo/hw/rnic/rnic-devices.mak" "$qemu/configs/devices/x86_64-softmmu/rnic.mak"
for t in "$repo"/tests/qtest/*.c; do
    link "$t" "$qemu/tests/qtest/$(basename "$t")"
done
link "$repo/tests/bench/device-bench.c" "$qemu/tests/qtest/rnic-device-bench.c"
for t in "$repo"/tests/qtest/libqos/*.[ch]; do
    link "$t" "$qemu/tests/qtest/libqos/$(basename "$t")"
done

wire "$qemu/hw/meson.build" \
    "^subdir\('xenpv'\)" "subdir('rnic-core') $mark" \
    "^subdir\('rnic-core'\)" "subdir('rnic') $mark"
wire "$qemu/hw/Kconfig" "^source xtensa/Kconfig" "source rnic/Kconfig"
wire "$qemu/meson.build" "^    'hw/nvme',$" "    'hw/rnic', $mark"
# qtests.txt: its "qos" tests go into qos-test, the others are qtests.
qtests=$(awk '!/^#/ && NF && !/ qos( |$)/ {
    printf "%s\x27%s\x27", n++ ? ", " : "", $1 }' "$repo/tests/qtest/qtests.txt")
qos=$(awk '!/^#/ && / qos( |$)/ {
    printf "%s\x27%s.c\x27", n++ ? ", " : "", $1 }' "$repo/tests/qtest/qtests.txt")
wire "$qemu/tests/qtest/meson.build" "^qtests_x86_64 = qtests_i386$" \
    "qtests_x86_64 += [$qtests] $mark" \
    "^qos_test_ss = ss.source_set" "qos_test_ss.add(files($qos)) $mark"
libqos=$(cd "$repo/tests/qtest/libqos" && ls -- *.c |
    awk '{ printf "%s\x27%s\x27", n++ ? ", " : "", $1 }')
wire "$qemu/tests/qtest/libqos/meson.build" "^        'e1000e.c',$" \
    "        $libqos, $mark"
