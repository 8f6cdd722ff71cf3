#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# More of rdma-core's own tools from Debian's packages between two rnic
# guests, as a user runs them, in make e2e only.  rsockets, the socket
# API on rdma_cm (librdmacm; on iWARP it sends its messages as Sends, not
# as Writes with Immediate): rstream and riostream (riowrite into a
# buffer the peer maps with riomap), each moving 100 transfers of 64 KiB
# both ways with every byte verified (-T v), and rcopy, a file across
# that the server compares with its own copy.  Then cmtime -c 1000: a
# burst of 1000 connects (rdma-rnic.sh, in make check, makes 100), every
# one of them established (about 20 s under TCG).  The guests know each
# other by the addresses of their rnic netdevs, as in rdma-rnic.sh.
. "$(dirname "$0")/lib/e2e.sh"

name=rdma-rnic-tools
e2e_prep
e2e_librnic_build

initrd=$E2E_OUT/$name.cpio.gz
e2e_rnic_verbs_initramfs "$initrd" /usr/bin/rping /usr/bin/rstream \
    /usr/bin/riostream /usr/bin/rcopy /usr/bin/cmtime <<'GUEST'
role=$(e2e_arg role)
me=$(e2e_arg ip)
peer=$(e2e_arg peer)
port=$(e2e_arg port)

e2e_rnic_up "$me" || exit
# The same 1.3 MB on both sides: the client sends it, the server compares.
seq 1 200000 >/tmp/rcopy.src

# Ports: rstream on PORT, riostream +1, rcopy +2, cmtime +3; the client's
# rping on +4 tells the server it is done.
if [ "$role" = server ]; then
    # rcopy's server and cmtime's never end by themselves.
    rcopy -p $((port + 2)) >/tmp/rcopy-server.out 2>&1 &
    rcopy_pid=$!
    cmtime -b "$me" -p $((port + 3)) -c 1000 >/tmp/cmtime-server.out 2>&1 &
    cmtime_pid=$!
    e2e_check rstream-server timeout 120 \
        rstream -b "$me" -p "$port" -S 65536 -C 100 -T v
    e2e_check riostream-server timeout 120 \
        riostream -b "$me" -p $((port + 1)) -S 65536 -C 100 -T v
    e2e_check client-done timeout 200 rping -s -a "$me" -p $((port + 4)) -C 1
    kill "$rcopy_pid" "$cmtime_pid" 2>/dev/null
    cat /tmp/rcopy-server.out
    echo
    e2e_check rcopy-file cmp /tmp/rcopy.src /tmp/rcopy.dst
else
    # Retried while the server is not listening yet.  rstream and
    # riostream print one line of figures, "custom" first.
    for t in rstream:0 riostream:1; do
        prog=${t%:*}
        e2e_retry "$prog" 60 timeout 60 \
            "$prog" -s "$peer" -p $((port + ${t#*:})) -S 65536 -C 100 -T v
        e2e_check "$prog-result" sh -c "grep -qE '^custom +64k +100 +1 ' /tmp/$prog.out &&
            ! grep -qiE 'error|fail|refused|reject' /tmp/$prog.out"
    done
    e2e_retry rcopy 60 timeout 60 \
        rcopy /tmp/rcopy.src "$peer:/tmp/rcopy.dst" -p $((port + 2))
    e2e_check rcopy-result sh -c "grep -qE '^1288895 bytes in [0-9.]+ seconds = [0-9.]+ Gb/sec' /tmp/rcopy.out"
    # The server's cmtime has listened since it came up.  cmtime ends
    # well whatever its connects did: each one that fails prints an
    # event with its error.
    start=$(date +%s)
    timeout 180 cmtime -s "$peer" -p $((port + 3)) -c 1000 >/tmp/cmtime.out 2>&1
    echo "cmtime: exit status $?, $(($(date +%s) - start)) s"
    cat /tmp/cmtime.out
    e2e_check cmtime-1000 sh -c "grep -qE '^connect +:' /tmp/cmtime.out &&
        ! grep -qiE 'error|reject|unreachable|fail' /tmp/cmtime.out"
    e2e_retry client-done 60 timeout 30 rping -c -a "$peer" -p $((port + 4)) -C 1
fi

e2e_rnic_unload_clean
GUEST

e2e_rnic_pair
# Under TCG the server guest answers the burst's last requests up to
# 15 s after their MPA Requests went out, longer than mpa-timeout-ms (5 s
# by default, host time) on a busy host, and the initiators' devices
# reset them (ETIMEDOUT: in one run 263 of the 1000 came back
# RDMA_CM_EVENT_UNREACHABLE, in another the slowest took 4.4 s).  Under
# TCG they wait a minute.
[ "$E2E_ACCEL" != tcg ] || dev="$dev,mpa-timeout-ms=60000"
args="e2e.port=$port"
# shellcheck disable=SC2086
e2e_guest_start "$name-server" "$initrd" \
    "e2e.role=server e2e.ip=$net.1 e2e.peer=$net.2 $args" $rnic_io -device "$dev"
# shellcheck disable=SC2086
e2e_guest_start "$name-client" "$initrd" \
    "e2e.role=client e2e.ip=$net.2 e2e.peer=$net.1 $args" $rnic_io -device "$dev"

rc=0
e2e_guest_wait "$name-client" || rc=1
e2e_guest_wait "$name-server" || rc=1
e2e_result "$name" "$rc"
