#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Reference scenario: two guests running Linux's own software iWARP (siw)
# over virtio-net, linked by a loopback TCP socket, and rdma-core's rping
# between them.  It proves the kernel, siw.ko, rdma-core and initramfs
# pipeline that the rnic-versus-siw scenarios build on.
# E2E_PERF, E2E_PERF_DUR: the perftest runs, as in rdma-rnic.sh (the
# siw-side figures of make bench-guest); E2E_NAME: the guests' names.
. "$(dirname "$0")/lib/e2e.sh"

name=${E2E_NAME:-siw-siw}
perf=${E2E_PERF:-ib_write_bw,ib_send_lat}
e2e_prep

progs=()
for p in ${perf//,/ }; do progs+=("/usr/bin/${p%%:*}"); done
initrd=$E2E_OUT/$name.cpio.gz
e2e_siw_initramfs "$initrd" "${progs[@]}" <<'GUEST'
role=$(e2e_arg role)
me=$(e2e_arg ip)
peer=$(e2e_arg peer)

e2e_siw_up "$me" || exit
rdma link show

if [ "$role" = server ]; then
    # One connection, then rping -s returns.
    e2e_check rping-server timeout 120 rping -s -a "$me" -C 10 -v
    # The reference figures for rdma-rnic.sh's, with the same options.
    e2e_perf_all server "$me" 18515
else
    # The server guest boots alongside: retry until its rping listens.
    i=0
    until timeout 20 rping -c -a "$peer" -C 10 -v >/tmp/rping.out 2>&1; do
        echo "rping -c attempt $i: status $?"; cat /tmp/rping.out
        i=$((i + 1))
        [ $i -lt 30 ] || { e2e_fail rping-client "no server after $i tries"; exit; }
        sleep 1
    done
    cat /tmp/rping.out
    n=$(grep -c 'ping data: rdma-ping-' /tmp/rping.out)
    if [ "$n" -eq 10 ]; then
        e2e_pass "rping-client 10 pings"
    else
        e2e_fail rping-client "$n of 10 pings verified"
    fi
    e2e_perf_all client "$peer" 18515
fi
GUEST

port=$(e2e_free_port)
# romfile= : no iPXE option ROM to load, a second less per boot.
nic=virtio-net-pci,netdev=n0,romfile=
args="e2e.perf=$perf${E2E_PERF_DUR:+ e2e.dur=$E2E_PERF_DUR}"
e2e_guest_start "$name-server" "$initrd" \
    "e2e.role=server e2e.ip=10.0.0.1 e2e.peer=10.0.0.2 $args" \
    -netdev "socket,id=n0,listen=127.0.0.1:$port" -device "$nic,mac=52:54:00:e2:e0:01"
e2e_wait_listen "$port"
e2e_guest_start "$name-client" "$initrd" \
    "e2e.role=client e2e.ip=10.0.0.2 e2e.peer=10.0.0.1 $args" \
    -netdev "socket,id=n0,connect=127.0.0.1:$port" -device "$nic,mac=52:54:00:e2:e0:02"

rc=0
e2e_guest_wait "$name-client" || rc=1
e2e_guest_wait "$name-server" || rc=1
e2e_result "$name" "$rc"
