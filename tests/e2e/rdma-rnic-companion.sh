#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The RDMA address is an ordinary IP address.  Each guest has a virtio-net
# NIC (the two joined by a -netdev socket link) with its rnic's MAC, so
# rnic.ko takes that NIC as its port's netdev, a companion as erdma's NIC
# is, and makes no netdev of its own.  The server loads rnic.ko before
# virtio_net (the companion comes later and replaces the port's own
# netdev), the client after it.  On the one address each guest gives its
# NIC: ping, rping -V, ib_write_bw -R, and qperf -cm1 (its six rc tests:
# Send, RDMA Read and RDMA Write with Immediate, bandwidth and latency),
# whose control socket is TCP between the guests over the NICs while its
# QPs connect through the devices.  (perftest without -R connects QPs by
# modify_qp, with no stream: no iWARP device can do that, siw and rnic
# included.)
# E2E_QPERF: the qperf tests, TEST[:SIZE] comma-separated (default: the
# six, the two that take a receive per message at 1M); E2E_QPERF_DUR:
# seconds each (default 2); E2E_NAME.  make bench-guest sets them for its
# RDMA Read figures (lib/qperf-figures.py reads the client's log).
# E2E_SERVER_QEMU_ARGS, E2E_CLIENT_QEMU_ARGS: more QEMU options (-trace).
. "$(dirname "$0")/lib/e2e.sh"

name=${E2E_NAME:-rdma-rnic-companion}
qperf=${E2E_QPERF:-rc_bw:1M,rc_lat,rc_rdma_read_bw,rc_rdma_read_lat,rc_rdma_write_bw:1M,rc_rdma_write_lat}
e2e_prep
e2e_librnic_build

initrd=$E2E_OUT/$name.cpio.gz
e2e_rnic_verbs_initramfs "$initrd" -m virtio_pci -m virtio_net \
    /usr/bin/rping /usr/bin/ib_write_bw /usr/bin/qperf <<'GUEST'
role=$(e2e_arg role)
me=$(e2e_arg ip)
peer=$(e2e_arg peer)
port=$(e2e_arg port)
mods="virtio_pci virtio_net rnic"
[ "$role" = server ] && mods="rnic virtio_pci virtio_net"
for m in $mods rdma_ucm ib_uverbs; do
    modprobe "$m" || { e2e_fail modules "modprobe $m failed"; exit; }
done
# rdma_cm's ephemeral ports (qperf's server binds port 0) come from the
# guest's local range: keep it inside the ports the devices allow.
echo "$((port + 8)) $((port + 15))" >/proc/sys/net/ipv4/ip_local_port_range
ip link set eth0 up && ip addr add "$me/24" dev eth0
rdma link show
e2e_check rdma-link-companion sh -c \
    'rdma link show rnic0/1 | grep -q "state ACTIVE .*netdev eth0"'
e2e_check no-own-netdev sh -c '! ip link show rnic0 2>/dev/null'
e2e_retry ping 30 ping -c 2 -W 2 "$peer"

# perftest as rdma-rnic.sh runs it (e2e_perf_all: the server restarts
# after a client that gave up, e.g. on perftest's clock check under TCG),
# on PORT+1; its closing rping on PORT+2 ends the server's side.
if [ "$role" = server ]; then
    qperf >/tmp/qperf-server.out 2>&1 &
    qperf_pid=$!
    e2e_check rping-server timeout 120 rping -s -a "$me" -p "$port" -C 5 -v
    e2e_perf_all server "$me" $((port + 1))
    kill "$qperf_pid"
else
    e2e_retry rping-client 60 timeout 30 rping -c -a "$peer" -p "$port" -C 5 -v -V
    # qperf's rc tests, one qperf each, as a user runs them; each must
    # print its figure (bw or latency) and no error.  Retried: Debian's
    # qperf 0.4.11 tells its client the port before it listens (fixed
    # upstream after 0.4.11), so a connect may be refused.  rc_bw (Send)
    # and rc_rdma_write_bw (RDMA Write with Immediate, RFC 7306) take a
    # receive at the server for every message: their 64 KiB default
    # overruns the 1024 receives qperf's server keeps posted whenever the
    # receiving guest falls that far behind (no credits in qperf, no RNR
    # in iWARP: a Send that finds no receive ends the connection with a
    # Terminate, "DDP untagged no buffer"), which under TCG is most runs;
    # at 1 MiB a message the server keeps up.  rc_rdma_write_bw also
    # posts 1024 Writes with Immediate at once on a QP it asked 1024 send
    # WRs of: each must fit, whatever WQEs the provider makes of it.
    # Each run's output follows an E2E-QPERF TEST SIZE line.
    dur=$(e2e_arg qdur)
    for ts in $(e2e_arg qperf | tr ',' ' '); do
        t=${ts%%:*} size=${ts#*:} want=latency
        [ "$size" = "$ts" ] && size=""
        case $t in *_bw) want=bw ;; esac
        echo "E2E-QPERF $t ${size:-default}"
        # shellcheck disable=SC2086
        e2e_retry "qperf-$ts" 5 timeout $((dur + 60)) qperf -cm1 -t "$dur" \
            ${size:+-m $size} "$peer" "$t"
        e2e_check "qperf-$ts-result" sh -c "grep -A1 '^$t:\$' /tmp/qperf-$ts.out |
            grep -qE '^ +$want += +[0-9.]+ [a-zA-Z/]+\$' &&
            ! grep -qiE 'fail|error|refused|reject' /tmp/qperf-$ts.out"
    done
    e2e_perf_all client "$peer" $((port + 1))
fi
e2e_rnic_unload_clean
GUEST

e2e_rnic_pair
link=$(e2e_free_port)
mac=52:54:00:e2:$((RANDOM % 90 + 10)):0
args="e2e.port=$port e2e.perf=ib_write_bw e2e.qperf=$qperf e2e.qdur=${E2E_QPERF_DUR:-2}"
# shellcheck disable=SC2086
e2e_guest_start "$name-server" "$initrd" \
    "e2e.role=server e2e.ip=$net.1 e2e.peer=$net.2 $args" $rnic_io \
    -netdev "socket,id=l0,listen=127.0.0.1:$link" \
    -device "virtio-net-pci,netdev=l0,mac=${mac}1,romfile=" -device "$dev,mac=${mac}1" \
    ${E2E_SERVER_QEMU_ARGS:-}
e2e_wait_listen "$link"
# shellcheck disable=SC2086
e2e_guest_start "$name-client" "$initrd" \
    "e2e.role=client e2e.ip=$net.2 e2e.peer=$net.1 $args" $rnic_io \
    -netdev "socket,id=l0,connect=127.0.0.1:$link" \
    -device "virtio-net-pci,netdev=l0,mac=${mac}2,romfile=" -device "$dev,mac=${mac}2" \
    ${E2E_CLIENT_QEMU_ARGS:-}

rc=0
e2e_guest_wait "$name-client" || rc=1
e2e_guest_wait "$name-server" || rc=1
e2e_result "$name" "$rc"
