#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Prints the accelerator a guest should run on here, kvm or tcg, and on
# stderr why.  KVM is used when /dev/kvm opens for reading and writing (as
# QEMU opens it) and the host's KVM runs hardware-virtualised guests
# (kvm_intel or kvm_amd): a host whose only KVM is kvm_pvm (a nested cloud
# machine without VT-x) runs PVM guest kernels only, and Debian's kernels
# are not those.  RNIC_ACCEL=kvm|tcg overrides the choice.
set -euo pipefail

pick() {
    if [ ! -c /dev/kvm ]; then
        echo "tcg no /dev/kvm"
    elif ! { exec 3<>/dev/kvm; } 2>/dev/null; then
        echo "tcg /dev/kvm does not open for reading and writing"
    elif [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; then
        echo "kvm /dev/kvm with $(ls -d /sys/module/kvm_intel /sys/module/kvm_amd 2>/dev/null | xargs -n1 basename | head -n1)"
    else
        echo "tcg /dev/kvm has neither kvm_intel nor kvm_amd behind it"
    fi
}

case ${RNIC_ACCEL:-} in
kvm | tcg) set -- "$RNIC_ACCEL" "RNIC_ACCEL=$RNIC_ACCEL" ;;
'') set -- $(pick) ;;
*) echo "accel: RNIC_ACCEL must be kvm or tcg, not '$RNIC_ACCEL'" >&2; exit 1 ;;
esac
accel=$1; shift
echo "accel: $accel ($*)" >&2
echo "$accel"
