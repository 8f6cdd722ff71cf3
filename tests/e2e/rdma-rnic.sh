#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Two guests, each with -device rnic and nothing else, run rdma-core's own
# tools from Debian's packages on the ib_device and librnic: rdma link
# (ACTIVE, netdev shown), ibv_devices, ibv_devinfo -v (iWARP, the PCI
# IDs), rping in verify mode, ucmatose, rdma_server/rdma_client, then
# perftest with -R (rdma_cm).  The guests
# know each other only by their addresses on the rnic netdevs; the
# device's default addr-map takes 10.a.b.c to the host's 127.a.b.c.
# E2E_PERF: the perftest programs to run, PROG[:SIZE[:e]] comma-separated
# (e2e_perf_all in lib/guest-lib.sh; the default's Send bandwidth with
# events runs past the receiver's window, on its credits: the device must
# read them while it sends); E2E_PERF_DUR: seconds each (-D) instead of
# 200 iterations;
# E2E_SERVER_QEMU_ARGS, E2E_CLIENT_QEMU_ARGS: more QEMU options (-trace).
# E2E_IOTHREAD=1: each device on a named IOThread (iothread=);
# E2E_MAIN_LOOP=1: on the main loop (main-loop=on).
# E2E_RNIC_DIRECT=0: librnic posts and polls through the kernel
# (RNIC_DIRECT=0 in the guests), for make bench-guest's A/B.
. "$(dirname "$0")/lib/e2e.sh"

name=${E2E_NAME:-rdma-rnic}
perf=${E2E_PERF:-ib_write_bw,ib_send_lat:64:e,ib_send_bw:1048576:e}
e2e_prep
e2e_librnic_build

progs=(/usr/bin/rping /usr/bin/ibv_devices /usr/bin/ibv_devinfo
    /usr/bin/ucmatose /usr/bin/rdma_server /usr/bin/rdma_client
    /usr/bin/cmtime)
for p in ${perf//,/ }; do progs+=("/usr/bin/${p%%:*}"); done
initrd=$E2E_OUT/$name.cpio.gz
e2e_rnic_verbs_initramfs "$initrd" "${progs[@]}" <<'GUEST'
role=$(e2e_arg role)
me=$(e2e_arg ip)
peer=$(e2e_arg peer)
port=$(e2e_arg port)
direct=$(e2e_arg direct)
[ -z "$direct" ] || export RNIC_DIRECT="$direct"

e2e_rnic_up "$me" || exit
ibv_devices
e2e_check ibv_devices sh -c 'ibv_devices | grep -q "rnic0"'
ibv_devinfo -v >/tmp/devinfo.out 2>&1
cat /tmp/devinfo.out
e2e_check ibv_devinfo-iwarp grep -q 'transport:[[:space:]]*iWARP' /tmp/devinfo.out
e2e_check ibv_devinfo-ids sh -c 'grep -q "vendor_id:[[:space:]]*0x1234" /tmp/devinfo.out &&
    grep -q "vendor_part_id:[[:space:]]*29289" /tmp/devinfo.out &&
    grep -q "state:[[:space:]]*PORT_ACTIVE" /tmp/devinfo.out'
# librnic and this libibverbs agree on the structs they share, in direct
# mode and without it.
e2e_check verbs-abi-check verbs-abi-check
e2e_check verbs-abi-check-nodirect sh -c 'RNIC_DIRECT=0 verbs-abi-check'

# Ports: rping on PORT, ucmatose, rdma_server and verbs-wr-check on
# PORT+10, +11 and +12, verbs-event-check on +13 (direct mode) and +14
# (RNIC_DIRECT=0), cmtime on +15, perftest from PORT+1 up.
if [ "$role" = server ]; then
    # cmtime's server never ends by itself: it answers in the background
    # (the client checks that every connect went through).
    cmtime -b "$me" -p $((port + 15)) -c 100 >/tmp/cmtime-server.out 2>&1 &
    cmtime_pid=$!
    e2e_check rping-server timeout 120 rping -s -a "$me" -p "$port" -C 10 -v
    e2e_check ucmatose-server timeout 120 ucmatose -b "$me" -p $((port + 10))
    e2e_check rdma_server timeout 120 rdma_server -s "$me" -p $((port + 11))
    e2e_check verbs-wr-server timeout 120 verbs-wr-check -s "$me" $((port + 12))
    e2e_check verbs-event-server timeout 120 \
        verbs-event-check -s "$me" $((port + 13))
    e2e_check verbs-event-server-nodirect timeout 120 \
        verbs-event-check -s "$me" $((port + 14))
    e2e_perf_all server "$me" $((port + 1))
    kill "$cmtime_pid" 2>/dev/null
else
    e2e_retry rping-client 60 timeout 30 rping -c -a "$peer" -p "$port" -C 10 -v -V
    n=$(grep -c 'ping data: rdma-ping-' /tmp/rping-client.out)
    if [ "$n" -eq 10 ]; then
        e2e_pass "rping-verified 10 pings"
    else
        e2e_fail rping-verified "$n of 10 pings verified"
    fi
    e2e_retry ucmatose-client 60 timeout 30 ucmatose -s "$peer" -p $((port + 10))
    e2e_retry rdma_client 60 timeout 30 rdma_client -s "$peer" -p $((port + 11))
    e2e_retry verbs-wr-client 60 timeout 30 verbs-wr-check -c "$peer" $((port + 12))
    e2e_retry verbs-event-client 60 timeout 30 \
        verbs-event-check -c "$peer" $((port + 13))
    e2e_retry verbs-event-client-nodirect 60 timeout 30 \
        sh -c "RNIC_DIRECT=0 verbs-event-check -c $peer $((port + 14))"
    # A burst of 100 connects: every one is held until the server's
    # rdma_cm answers it (a device that reset the burst's tail gave
    # REJECTED, -104).  Retried only while the server is not listening.
    for i in $(seq 60); do
        timeout 180 cmtime -s "$peer" -p $((port + 15)) -c 100 \
            >/tmp/cmtime.out 2>&1 && break
        grep -q -- '-104' /tmp/cmtime.out && break
        sleep 1
    done
    cat /tmp/cmtime.out
    e2e_check cmtime-100 sh -c "! grep -qiE 'error|reject' /tmp/cmtime.out &&
        grep -qi connect /tmp/cmtime.out"
    e2e_perf_all client "$peer" $((port + 1))
fi

e2e_rnic_unload_clean
GUEST

# The devices allow E2E_RNIC_PORTS ports from PORT and no others
# (e2e_rnic_pair); perftest takes PORT+1 to PORT+n+1.
n=$(tr ',' '\n' <<<"$perf" | wc -l)
[ $((n + 2)) -le "$E2E_RNIC_PORTS" ] ||
    e2e_die "E2E_PERF: $n programs, more than the $((E2E_RNIC_PORTS - 2)) that fit"
e2e_rnic_pair
args="e2e.port=$port e2e.perf=$perf${E2E_PERF_DUR:+ e2e.dur=$E2E_PERF_DUR}"
args="$args${E2E_RNIC_DIRECT:+ e2e.direct=$E2E_RNIC_DIRECT}"
# shellcheck disable=SC2086
e2e_guest_start "$name-server" "$initrd" \
    "e2e.role=server e2e.ip=$net.1 e2e.peer=$net.2 $args" $rnic_io -device "$dev" \
    ${E2E_SERVER_QEMU_ARGS:-}
# shellcheck disable=SC2086
e2e_guest_start "$name-client" "$initrd" \
    "e2e.role=client e2e.ip=$net.2 e2e.peer=$net.1 $args" $rnic_io -device "$dev" \
    ${E2E_CLIENT_QEMU_ARGS:-}

rc=0
e2e_guest_wait "$name-client" || rc=1
e2e_guest_wait "$name-server" || rc=1
e2e_result "$name" "$rc"
