#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Live migration of an rnic guest (docs/spec.md "Migration"), on one host:
# the client guest (-device rnic) is migrated to a second QEMU (-incoming
# unix:) in the middle of rping -v -V -C 2000 against a server guest.
#   rnic-migrate.sh [repair|reset|cpr|snapshot [rnic|siw]]
# MODE is the client's migrate-connections (repair or reset); or cpr:
# the migration is QEMU's cpr-transfer mode (guest RAM in a shared memfd,
# a second channel that hands the device's sockets to the new QEMU); or
# snapshot: `migrate file:` and a new QEMU with `-incoming file:` once the
# old one has quit, connections cut (reset).  The server is a second rnic
# guest (default) or a siw guest (virtio-net, reached through slirp).
# Without arguments, each of repair, cpr (against rnic and siw), reset and
# snapshot in turn.
#   1. rping -V -C 20 before: every ping verified.
#   2. rping -V -C 2000; after its tenth ping the host migrates the client
#      and quits the source.  repair and cpr: the connection moves with
#      its socket and the rping goes on to its 2000th ping, every ping
#      verified, status 0 on both sides.  reset: the move cuts it (as a
#      link failure); it ends with no ping that failed verification.
#   3. the host tells the moved guest to go on (a line on its second
#      serial port), and a new rping -V -C 20 must verify every ping.
# The migration's downtime, total time and bytes, and what moved (the
# device's state, each connection's stream and TCP state) are printed
# from QMP and the rnic_mig_* traces.
E2E_TIMEOUT=${E2E_TIMEOUT:-600}
. "$(dirname "$0")/lib/e2e.sh"

# Without arguments (make e2e): every mode against both peers.
if [ $# -eq 0 ]; then
    rc=0
    for v in "repair rnic" "repair siw" "cpr rnic" "cpr siw" "reset rnic" \
             "snapshot rnic"; do
        # shellcheck disable=SC2086
        "$0" $v || rc=1
    done
    exit "$rc"
fi
mode=$1
peer=${2:-rnic}
name=${E2E_NAME:-rnic-migrate-$mode-$peer}
e2e_prep
e2e_librnic_build

guest=$(cat <<'GUEST'
role=$(e2e_arg role)
me=$(e2e_arg ip)
peer=$(e2e_arg peer)
port=$(e2e_arg port)
mode=$(e2e_arg mode)
count=2000

# The rping across the move, by its status $1 and its pings' lines $2:
# none failed verification; moved (not reset), it ran to its last ping.
judge_move() {
    echo "rping across the move: status $1, $(grep -c 'ping data' /tmp/move.out) pings"
    cat /tmp/move.err
    e2e_check rping-move-verified sh -c '! grep -i -e mismatch -e invalid /tmp/move.out /tmp/move.err'
    if [ "$mode" != reset ]; then
        e2e_check rping-move-status test "$1" -eq 0
        e2e_rping_count /tmp/move.out "$2" rping-move $count
    fi
}

if [ "$role" = siw ]; then
    e2e_siw_up "$me" || exit
    ip route add default via 10.0.2.2
else
    e2e_rnic_up "$me" || exit
fi
if [ "$role" != client ]; then
    e2e_check rping-before timeout 300 rping -s -a "$me" -p "$port" -C 20 -V
    # stderr apart: its lines would land inside the pings' lines
    timeout 600 rping -s -a "$me" -p "$port" -v -V -C $count >/tmp/move.out 2>/tmp/move.err
    judge_move $? 'server ping data: rdma-ping-'
    e2e_check rping-after timeout 300 rping -s -a "$me" -p "$port" -C 20 -V
    exit
fi
e2e_retry rping-before 60 timeout 60 rping -c -a "$peer" -p "$port" -C 20 -V
stty -F /dev/ttyS1 raw -echo
# the server listens again once its first session is over: retry
for _ in $(seq 60); do
    rping -c -a "$peer" -p "$port" -v -V -C $count >/tmp/move.out 2>/tmp/move.err &
    pid=$!
    until [ "$(grep -c 'ping data' /tmp/move.out)" -ge 10 ]; do
        kill -0 $pid 2>/dev/null || break
        usleep 100000
    done
    kill -0 $pid 2>/dev/null && break
    wait $pid
    sleep 1
done
e2e_check rping-running-at-move kill -0 $pid
echo "E2E-MIGRATE-READY $(grep -c 'ping data' /tmp/move.out) pings"
# blocks until the host writes a line here, on the destination
head -n 1 /dev/ttyS1
echo "moved: the rping that was running"
wait $pid
judge_move $? '^ping data: rdma-ping-'
e2e_retry rping-after 60 timeout 60 rping -c -a "$peer" -p "$port" -C 20 -V
e2e_rnic_unload_clean
GUEST
)
initrd=$E2E_OUT/$name.cpio.gz
e2e_rnic_verbs_initramfs "$initrd" /usr/bin/rping <<<"$guest"
if [ "$peer" = siw ]; then
    siw_initrd=$E2E_OUT/$name-siw.cpio.gz
    e2e_siw_initramfs "$siw_initrd" <<<"$guest"
fi

e2e_rnic_pair
e2e_migrate_init "$name"

# what becomes of the connections: cpr moves them, a snapshot cuts them
conns=$mode
case $mode in cpr) conns=repair ;; snapshot) conns=reset ;; esac
args="e2e.port=$port e2e.mode=$conns"
if [ "$peer" = siw ]; then
    # the siw guest on slirp: the client's rnic reaches it at 127.0.2.15
    sport=$(e2e_free_ports 1)
    dev="rnic,id=rnic0,peer-allow=127.0.2.15:$sport"
    args="e2e.port=$sport e2e.mode=$conns"
    e2e_guest_start "$name-server" "$siw_initrd" \
        "e2e.role=siw e2e.ip=10.0.2.15 $args" \
        -netdev "user,id=n0,hostfwd=tcp:127.0.2.15:$sport-10.0.2.15:$sport" \
        -device virtio-net-pci,netdev=n0,romfile=
    cargs="e2e.role=client e2e.ip=10.0.0.1/16 e2e.peer=10.0.2.15 $args"
else
    # shellcheck disable=SC2086
    e2e_guest_start "$name-server" "$initrd" \
        "e2e.role=server e2e.ip=$net.1 e2e.peer=$net.2 $args" $rnic_io \
        -device "$dev"
    cargs="e2e.role=client e2e.ip=$net.2 e2e.peer=$net.1 $args"
fi
client=(-device "$dev,migrate-connections=$conns" -trace 'rnic_mig_*')
if [ "$mode" = cpr ]; then
    # cpr-transfer: guest RAM the new QEMU maps in place
    client+=(-machine memory-backend=ram0,aux-ram-share=on
             -object memory-backend-memfd,id=ram0,size=512M,share=on)
fi
# shellcheck disable=SC2086,SC2046
e2e_guest_start "$name-client" "$initrd" "$cargs" $rnic_io "${client[@]}" \
    $(e2e_migrate_ctl src)

rc=0
e2e_wait_marker "$name-client" E2E-MIGRATE-READY 600
incoming=(-incoming "unix:$run/mig.sock")
channels="[{\"channel-type\": \"main\", \"addr\": {\"transport\": \"socket\", \"type\": \"unix\", \"path\": \"$run/mig.sock\"}}"
if [ "$mode" = cpr ]; then
    cpr="{\"channel-type\": \"cpr\", \"addr\": {\"transport\": \"socket\", \"type\": \"unix\", \"path\": \"$run/cpr.sock\"}}"
    incoming+=(-incoming "$cpr")
    channels+=", $cpr"
fi
moved() {
    # shellcheck disable=SC2086,SC2046
    e2e_guest_start "$name-moved" "$initrd" "$cargs" $rnic_io "${client[@]}" \
        $(e2e_migrate_ctl dst) "${incoming[@]}"
}
if [ "$mode" = snapshot ]; then
    # the old QEMU writes the VM to a file and quits; a new one reads it
    rm -f "$run/vm.state"
    channels="[{\"channel-type\": \"main\", \"addr\": {\"transport\": \"file\", \"filename\": \"$run/vm.state\", \"offset\": 0}}"
    incoming=(-incoming "file:$run/vm.state")
else
    moved
    sock=$run/mig.sock
    [ "$mode" != cpr ] || sock=$run/cpr.sock
    for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
fi
[ "$mode" != cpr ] ||
    e2e_migrate_qmp src migrate-set-parameters '{"mode": "cpr-transfer"}' \
        >/dev/null
e2e_migrate_qmp src migrate "{\"channels\": $channels]}" >/dev/null
e2e_migrate_done || rc=1
if [ "$mode" = snapshot ]; then
    e2e_migrate_qmp src quit >/dev/null || true
    t0=$(date +%s%N)
    moved
fi
e2e_migrate_qmp dst --wait query-status status running 120 >/dev/null || rc=1
[ "$mode" != snapshot ] ||
    e2e_log "snapshot: the new QEMU ran the guest $((($(date +%s%N) - t0) / 1000000)) ms after it started"
e2e_migrate_qmp src quit >/dev/null 2>&1 || true
e2e_migrate_left "$name-client" rping-before || rc=1
e2e_migrate_go || rc=1
e2e_guest_wait "$name-moved" || rc=1
tr -d '\r' <"$E2E_LOGS/$name-moved.log" | grep -E 'rnic_mig_' >&2 || true
e2e_guest_wait "$name-server" || rc=1
e2e_result "$name" "$rc"
