#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Two guests, each with -device rnic and no network card: the server
# guest's rnic LISTENs on a host loopback port, the client guest's rnic
# CONNECTs to it, and rnic-tool runs every operation through /dev/rnic0
# (Send, Send with Invalidate, RDMA Write and Read, fetch-add,
# compare-swap, immediate data, a one-shot STag written twice), then a
# bandwidth and a latency run on fresh connections.  Every operation must
# print PASS.  Then the server guest removes the PCI function under an open
# file, and rnic.ko must unload cleanly in both guests.
. "$(dirname "$0")/lib/e2e.sh"

name=${E2E_NAME:-rnic-rnic}
e2e_prep

initrd=$E2E_OUT/$name.cpio.gz
e2e_initramfs "$initrd" -k "$E2E_RNIC_KO" -b "$E2E_RNIC_TOOL" <<'GUEST'
role=$(e2e_arg role)
port=$(e2e_arg port)

e2e_check load modprobe rnic || exit
[ -c /dev/rnic0 ] || { e2e_fail chardev "no /dev/rnic0"; exit; }
rnic-tool info

if [ "$role" = server ]; then
    # Three connections: the operations, bw, lat.
    e2e_tool server 12 rnic-tool server -a 127.0.0.1 -p "$port" -n 3
    # Hot removal with the file open: a server holding a PD, MRs, CQs, a
    # QP and a listener sleeps in GET_EVENT; removing the PCI function
    # must release everything and wake it with ENODEV.
    rnic-tool server -a 127.0.0.1 -p $((port + 1)) >/tmp/unplug.out 2>&1 &
    pid=$!
    sleep 2
    dev=$(basename "$(readlink -f /sys/class/misc/rnic0/device)")
    echo 1 >"/sys/bus/pci/devices/$dev/remove"
    wait $pid
    cat /tmp/unplug.out
    if grep -q 'No such device' /tmp/unplug.out && [ ! -e /dev/rnic0 ]; then
        e2e_pass "remove-while-open: the sleeping program got ENODEV"
    else
        e2e_fail remove-while-open "no ENODEV, or /dev/rnic0 still there"
    fi
else
    # The client retries CONNECT until the server guest listens.
    e2e_tool client 14 rnic-tool client -a 127.0.0.1 -p "$port"
    e2e_tool bw 2 rnic-tool bw -a 127.0.0.1 -p "$port" -S 65536 -C 300
    e2e_tool lat 2 rnic-tool lat -a 127.0.0.1 -p "$port" -S 64 -C 300
fi
grep rnic /proc/interrupts

e2e_check unload rmmod rnic
if dmesg | grep -E 'WARNING:|BUG:|Oops|Call Trace|stay (allocated|pinned)'; then
    e2e_fail kernel-log "warnings in dmesg (above)"
else
    e2e_pass kernel-log
fi
GUEST

# E2E_PORT: a fixed port (e.g. to capture it; the next one is used too);
# E2E_SERVER_QEMU_ARGS: more QEMU options for the server guest (-trace,
# -qmp, ...).
port=${E2E_PORT:-$(e2e_free_ports 2)}
# E2E_IOTHREAD=1: each guest's rnic on its own IOThread (iothread=).
io_obj='' io_opt=''
if [ "${E2E_IOTHREAD:-}" = 1 ]; then
    io_obj="-object iothread,id=rnicio" io_opt=",iothread=rnicio"
fi
# shellcheck disable=SC2086
# The device reaches only what it is told: the server may listen on its
# two ports of loopback (the hot-removal listener takes the second), the
# client may connect to the server's first port only.
e2e_guest_start "$name-server" "$initrd" "e2e.role=server e2e.port=$port" \
    $io_obj -device "rnic,id=rnic0,listen-allow=127.0.0.1:$port-$((port + 1))$io_opt${E2E_RNIC_OPTS:-}$(e2e_capture "$name-server")" \
    ${E2E_SERVER_QEMU_ARGS:-}
# shellcheck disable=SC2086
e2e_guest_start "$name-client" "$initrd" "e2e.role=client e2e.port=$port" \
    $io_obj -device "rnic,id=rnic0,peer-allow=127.0.0.1:$port$io_opt$(e2e_capture "$name-client")"

rc=0
e2e_guest_wait "$name-client" || rc=1
e2e_guest_wait "$name-server" || rc=1
e2e_capture_check "$name-server" "$name-client" || rc=1
e2e_result "$name" "$rc"
