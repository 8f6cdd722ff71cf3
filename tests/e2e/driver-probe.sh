#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The guest driver against the device: one guest with -device rnic loads
# rnic.ko, which must bring the device up and log the limits QUERY_DEVICE
# returned (max_qp set here through a device property, so a wrong value
# cannot pass by luck), then unloads without a kernel warning.
# A second guest, its rnic on an IOThread, then loads and unloads rnic.ko
# E2E_PROBE_CYCLES times (default 100): each cycle resets the device twice
# from a vCPU, which waits for the IOThread to do it (hw/rnic/rnic-thread.c
# says why that froze guests once).
. "$(dirname "$0")/lib/e2e.sh"

max_qps=77
cycles=${E2E_PROBE_CYCLES:-100}

e2e_prep

initrd=$E2E_OUT/driver-probe.cpio.gz
e2e_initramfs "$initrd" -k "$E2E_RNIC_KO" <<'GUEST'
want=$(e2e_arg max_qps)

e2e_check load modprobe rnic || exit
probe=$(dmesg | grep 'rnic ABI')
echo "dmesg: $probe"
case "$probe" in
*" max_qp $want "*) e2e_pass "query-device max_qp=$want" ;;
*) e2e_fail query-device "no probe line with max_qp $want" ;;
esac
if ls /sys/bus/pci/drivers/rnic | grep -q ':'; then
    e2e_pass bound
else
    e2e_fail bound "no device under /sys/bus/pci/drivers/rnic"
fi
# The QUERY_DEVICE completion came through MSI-X vector 0.
grep rnic-admin /proc/interrupts

e2e_check unload rmmod rnic
cycles=$(e2e_arg cycles)
if [ -n "$cycles" ]; then
    i=0
    while [ $i -lt "$cycles" ] && modprobe rnic && rmmod rnic; do
        i=$((i + 1))
    done
    if [ $i -eq "$cycles" ]; then
        e2e_pass "load-unload $cycles cycles"
    else
        e2e_fail load-unload "cycle $i failed"
    fi
fi
if lsmod | grep -q '^rnic '; then
    e2e_fail unload "rnic still listed by lsmod"
fi
dmesg | grep 'rnic' | grep -v 'rnic ABI'
if dmesg | grep -E 'WARNING:|BUG:|Oops|Call Trace'; then
    e2e_fail kernel-log "warnings in dmesg (above)"
else
    e2e_pass kernel-log
fi
GUEST

rc=0
e2e_guest_run driver-probe "$initrd" "e2e.max_qps=$max_qps" \
    -device "rnic,max-qps=$max_qps" || rc=1
e2e_guest_run driver-probe-iothread "$initrd" \
    "e2e.max_qps=$max_qps e2e.cycles=$cycles" -object iothread,id=io0 \
    -device "rnic,max-qps=$max_qps,iothread=io0" || rc=1
e2e_result driver-probe "$rc"
