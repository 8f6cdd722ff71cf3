#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Failure paths of the ib_device, seen through rdma-core's rping on two
# rnic guests: a connect to a port nobody listens on ends in REJECTED or
# UNREACHABLE (not a hang); kill -9 of a client mid-transfer ends the
# server's rping; the client's device resets a connection after
# fault-drop-after bytes and both rpings see DISCONNECTED and exit; the
# server guest removes its rnic (PCI remove) while an rping runs on it; then
# rmmod works on both guests and the kernel logged no warning.
. "$(dirname "$0")/lib/e2e.sh"

name=rdma-rnic-fail
e2e_prep
e2e_librnic_build

initrd=$E2E_OUT/$name.cpio.gz
e2e_rnic_verbs_initramfs "$initrd" /usr/bin/rping <<'GUEST'
role=$(e2e_arg role)
me=$(e2e_arg ip)
peer=$(e2e_arg peer)
port=$(e2e_arg port)

# The guest's timeout is busybox's: it runs the program in its own place
# and stops it with SIGTERM, so a hang ends with status 143, not
# coreutils' 124 (both are taken as one).
timed_out() {
    [ "$1" -eq 124 ] || [ "$1" -eq 143 ]
}

# NAME RC OUT PATTERN: passes when the program ended by itself (timed_out
# is a hang) and OUT says why.  rping exits 0 even when its connection
# failed, so its output is the judge.
ended_with() {
    local name=$1 rc=$2 out=$3 pattern=$4
    grep -v 'ping data' "$out"
    echo "$name: exit $rc"
    if timed_out "$rc"; then
        e2e_fail "$name" "still running when timeout stopped it"
    elif grep -q -E "$pattern" "$out"; then
        e2e_pass "$name"
    else
        e2e_fail "$name" "exit $rc without /$pattern/"
    fi
}

# OUT SECONDS ARGS...: an rping client to the peer, run again while it is
# REJECTED (the server's rping does not listen yet); its status.
rping_once_listened() {
    local out=$1 secs=$2 i=0 rc
    shift 2
    while :; do
        timeout "$secs" rping -c -a "$peer" "$@" >"$out" 2>&1
        rc=$?
        grep -q REJECTED "$out" && [ $i -lt 60 ] || return $rc
        sleep 1
        i=$((i + 1))
    done
}

e2e_rnic_up "$me" || exit
if [ "$role" = server ]; then
    # The killed client: the server's rping must end, however it ends.
    timeout 120 rping -s -a "$me" -p $((port + 1)) -C 100000000 -v \
        >/tmp/kill.out 2>&1
    rc=$?
    echo "$(grep -c 'ping data' /tmp/kill.out) pings, exit $rc"
    if timed_out $rc; then
        e2e_fail server-after-kill "rping still running after its client died"
    else
        e2e_pass server-after-kill
    fi
    timeout 120 rping -s -a "$me" -p $((port + 2)) -S 65000 -C 1000 \
        >/tmp/drop.out 2>&1
    # Its client's rping ends normally by disconnecting too: that the
    # drop happened is judged on the client.
    ended_with server-fault-drop $? /tmp/drop.out 'DISCONNECT'

    # Hot removal of the PCI function while an rping runs on it: the
    # removal completes, the rping ends, the client sees the disconnect.
    : >/tmp/unplug.out
    rping -s -a "$me" -p $((port + 3)) -C 100000000 -v >>/tmp/unplug.out 2>&1 &
    pid=$!
    i=0
    while [ $i -lt 120 ] && [ "$(grep -c 'ping data' /tmp/unplug.out)" -lt 10 ]; do
        sleep 1
        i=$((i + 1))
    done
    echo "$(grep -c 'ping data' /tmp/unplug.out) pings before the removal"
    dev=$(basename "$(readlink -f /sys/class/infiniband/rnic0/device)")
    e2e_check remove-while-running timeout 60 sh -c \
        "echo 1 >/sys/bus/pci/devices/$dev/remove && [ ! -e /sys/class/infiniband/rnic0 ]"
    i=0
    while [ $i -lt 30 ] && kill -0 $pid 2>/dev/null; do
        sleep 1
        i=$((i + 1))
    done
    if kill -0 $pid 2>/dev/null; then
        e2e_fail rping-after-removal "still running 30 s after the removal"
        kill -9 $pid
    else
        e2e_pass rping-after-removal
    fi
else
    timeout 30 rping -c -a "$peer" -p "$port" -C 1 >/tmp/refused.out 2>&1
    ended_with no-listener $? /tmp/refused.out 'REJECTED|UNREACHABLE'

    # kill -9 once pings flow (until the server listens, rping ends at once).
    i=0
    while [ $i -lt 60 ]; do
        rping -c -a "$peer" -p $((port + 1)) -C 100000000 -v \
            >/tmp/kill.out 2>&1 &
        pid=$!
        sleep 3
        if kill -0 $pid 2>/dev/null &&
            [ "$(grep -c 'ping data' /tmp/kill.out)" -gt 10 ]; then
            break
        fi
        kill -9 $pid 2>/dev/null
        wait $pid
        i=$((i + 1))
    done
    echo "$(grep -c 'ping data' /tmp/kill.out) pings before kill -9"
    e2e_check kill-9-client kill -9 $pid
    wait $pid

    # The device drops the connection after fault-drop-after bytes.
    rping_once_listened /tmp/drop.out 120 -p $((port + 2)) -S 65000 -C 1000
    # A client that completes its pings waits for nothing when the
    # disconnect comes; one cut off mid-run does (state 10 is ERROR).
    ended_with client-fault-drop $? /tmp/drop.out 'state 10|completion failed'

    # The server guest removes its rnic while this rping runs.
    rping_once_listened /tmp/unplug.out 150 -p $((port + 3)) -C 100000000
    ended_with client-peer-removed $? /tmp/unplug.out 'state 10|completion failed|DISCONNECT'
fi

e2e_rnic_unload_clean
GUEST

e2e_rnic_pair
args="e2e.port=$port"
# 32 MiB: far more than the killed rping moves in 3 s, far less than the
# 130 MB of the last rping.
e2e_guest_start "$name-server" "$initrd" \
    "e2e.role=server e2e.ip=$net.1 e2e.peer=$net.2 $args" $rnic_io -device "$dev"
e2e_guest_start "$name-client" "$initrd" \
    "e2e.role=client e2e.ip=$net.2 e2e.peer=$net.1 $args" \
    $rnic_io -device "$dev,fault-drop-after=33554432"

rc=0
e2e_guest_wait "$name-client" || rc=1
e2e_guest_wait "$name-server" || rc=1
e2e_result "$name" "$rc"
