#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make check-qemu: the QEMU that make builds is one a user can run a VM
# on.  It has KVM and TCG, QEMU's default x86_64 devices and rnic, and a
# command line as users write them (disk on virtio-blk, virtio-scsi, nvme,
# e1000e and virtio-net on -nic user, xhci with a tablet, VGA) starts with
# -device rnic added, on q35 and on pc; the monitor's `info pci` then lists
# every one of those devices.  Ends with "qemu: N passed, N failed".
set -uo pipefail

qemu=${1:?usage: device-set.sh QEMU-BINARY}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

check() {   # check NAME COMMAND...: one result line
    if "${@:2}"; then
        echo "qemu: PASS $1"
        passed=$((passed + 1))
    else
        echo "qemu: FAIL $1"
        failed=$((failed + 1))
    fi
}

lists() {   # lists FILE WORD...: FILE has a line naming each WORD
    local f=$1 w
    shift
    for w; do
        grep -qE "$w" "$f" || { echo "qemu: '$w' missing from $f:" >&2; cat "$f" >&2; return 1; }
    done
}

"$qemu" -accel help >"$work/accel" 2>&1
check accel-kvm-tcg lists "$work/accel" '^kvm$' '^tcg$'
"$qemu" -device help >"$work/devices" 2>&1
check devices lists "$work/devices" \
    '"virtio-blk-pci"' '"virtio-scsi-pci"' '"virtio-net-pci"' '"nvme"' \
    '"e1000e"' '"qemu-xhci"' '"VGA"' '"intel-iommu"' '"rnic"'

# vendor:device as `info pci` prints them: virtio-blk, virtio-scsi,
# virtio-net, nvme, e1000e, xhci, VGA, and rnic's from the ABI header.
abi=$(dirname "$0")/../../include/rnic/rnic-abi.h
rnic_id() { awk -v n="$1" '$1 == "#define" && $2 == n { print substr($3, 3) }' "$abi"; }
want_pci=(1af4:1001 1af4:1004 1af4:1000 1b36:0010 8086:10d3 1b36:000d 1234:1111
    "$(rnic_id RNIC_PCI_VENDOR_ID):$(rnic_id RNIC_PCI_DEVICE_ID)")
truncate -s 16M "$work/disk.img"
truncate -s 16M "$work/nvme.img"

boot() {    # boot MACHINE: QEMU paused with the set, `info pci` in a file
    local m=$1
    printf 'info pci\nquit\n' | timeout 60 "$qemu" -M "$m" -accel tcg -S \
        -m 256 -display none -vga std -monitor stdio \
        -drive file="$work/disk.img",format=raw,if=virtio \
        -device virtio-scsi-pci \
        -drive file="$work/nvme.img",format=raw,if=none,id=nv \
        -device nvme,serial=rnic0001,drive=nv \
        -nic user,model=e1000e -nic user,model=virtio-net-pci \
        -device qemu-xhci -device usb-tablet \
        -device rnic >"$work/pci-$m" 2>&1
}

for m in q35 pc; do
    check "boot-$m" boot "$m"
    check "info-pci-$m" lists "$work/pci-$m" "${want_pci[@]/#/PCI device }"
done
echo "qemu: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
