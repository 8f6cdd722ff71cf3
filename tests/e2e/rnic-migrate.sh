#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Live migration of an rnic guest (docs/spec.md "Migration"), on one host:
# two guests with -device rnic, the client migrated to a second QEMU
# (-incoming unix:) in the middle of a verified rping against the server.
#   1. rping -V -C 20 before: every ping verified.
#   2. a long rping -V runs; at E2E-MIGRATE-READY the host migrates the
#      client and quits the source.  Connections are cut by the move
#      (migrate-connections=reset): that rping must end, with no ping
#      that failed verification.
#   3. the host tells the moved guest to go on (a line on its second
#      serial port), and a new rping -V -C 20 must verify every ping:
#      the device, its tables and the ib_device went on.
# The migration's downtime, total time and bytes, and the size of the
# device's own state, are printed from QMP and the rnic_mig_save trace.
E2E_TIMEOUT=${E2E_TIMEOUT:-600}
. "$(dirname "$0")/lib/e2e.sh"

name=${E2E_NAME:-rnic-migrate}
e2e_prep
e2e_librnic_build

initrd=$E2E_OUT/$name.cpio.gz
e2e_rnic_verbs_initramfs "$initrd" /usr/bin/rping <<'GUEST'
role=$(e2e_arg role)
me=$(e2e_arg ip)
peer=$(e2e_arg peer)
port=$(e2e_arg port)

e2e_rnic_up "$me" || exit
if [ "$role" = server ]; then
    e2e_check rping-before timeout 300 rping -s -a "$me" -p "$port" -C 20 -V
    # the session the migration cuts ends when the source QEMU quits
    timeout 600 rping -s -a "$me" -p "$port" -v -V >/tmp/cut.out 2>&1
    echo "rping server of the cut session: status $?"
    e2e_check rping-cut-verified sh -c '! grep -i -e mismatch -e invalid /tmp/cut.out'
    e2e_check rping-after timeout 300 rping -s -a "$me" -p "$port" -C 20 -V
else
    e2e_retry rping-before 60 timeout 60 rping -c -a "$peer" -p "$port" -C 20 -V
    stty -F /dev/ttyS1 raw -echo
    # the server listens again once its first session is over: retry
    for _ in $(seq 60); do
        rping -c -a "$peer" -p "$port" -v -V >/tmp/cut.out 2>&1 &
        pid=$!
        until [ "$(grep -c 'ping data' /tmp/cut.out)" -ge 10 ]; do
            kill -0 $pid 2>/dev/null || break
            usleep 100000
        done
        kill -0 $pid 2>/dev/null && break
        wait $pid
        sleep 1
    done
    e2e_check rping-running-at-move kill -0 $pid
    echo "E2E-MIGRATE-READY $(grep -c 'ping data' /tmp/cut.out) pings"
    # blocks until the host writes a line here, on the destination
    head -n 1 /dev/ttyS1
    echo "moved: the rping that was running"
    wait $pid
    echo "status $?, $(grep -c 'ping data' /tmp/cut.out) pings"
    tail -n 3 /tmp/cut.out
    e2e_check rping-cut-verified sh -c '! grep -i -e mismatch -e invalid /tmp/cut.out'
    e2e_retry rping-after 60 timeout 60 rping -c -a "$peer" -p "$port" -C 20 -V
fi
e2e_rnic_unload_clean
GUEST

e2e_rnic_pair
run=$E2E_OUT/$name
mkdir -p "$run"
rm -f "$run"/*.sock
client=(-device "$dev" -trace rnic_mig_save -trace rnic_mig_load
        -trace rnic_mig_cut)
# the guest's second serial port: the host's word that the move is over
ctl() { echo "-chardev socket,id=ctl,path=$run/$1-ctl.sock,server=on,wait=off -device isa-serial,chardev=ctl -qmp unix:$run/$1-qmp.sock,server=on,wait=off"; }

args="e2e.port=$port"
# shellcheck disable=SC2086
e2e_guest_start "$name-server" "$initrd" \
    "e2e.role=server e2e.ip=$net.1 e2e.peer=$net.2 $args" $rnic_io \
    -device "$dev"
cargs="e2e.role=client e2e.ip=$net.2 e2e.peer=$net.1 $args"
# shellcheck disable=SC2086,SC2046
e2e_guest_start "$name-client" "$initrd" "$cargs" $rnic_io "${client[@]}" \
    $(ctl src)

rc=0
e2e_wait_marker "$name-client" E2E-MIGRATE-READY 600
# shellcheck disable=SC2086,SC2046
e2e_guest_start "$name-moved" "$initrd" "$cargs" $rnic_io "${client[@]}" \
    $(ctl dst) -incoming "unix:$run/mig.sock"
for _ in $(seq 100); do [ -S "$run/mig.sock" ] && break; sleep 0.1; done
qmp() { python3 "$E2E_LIB/qmp.py" "$run/$1-qmp.sock" "${@:2}"; }
qmp src migrate "{\"uri\": \"unix:$run/mig.sock\"}" >/dev/null
info=$(qmp src --wait query-migrate status completed 300) || rc=1
python3 - "$info" <<'EOF' >&2 || true
import json, sys
m = json.loads(sys.argv[1])
print(f"e2e: migration: downtime {m.get('downtime')} ms, total "
      f"{m.get('total-time')} ms, {m['ram']['transferred']} bytes of RAM "
      f"sent (setup {m.get('setup-time')} ms)")
EOF
qmp dst --wait query-status status running 120 >/dev/null || rc=1
qmp src quit >/dev/null || true
e2e_guest_wait "$name-client" 2>/dev/null || true
tr -d '\r' <"$E2E_LOGS/$name-client.log" | grep -E 'rnic_mig_save|^E2E-' >&2 || true
grep -q '^E2E-FAIL' "$E2E_LOGS/$name-client.log" && rc=1
grep -q '^E2E-PASS rping-before' "$E2E_LOGS/$name-client.log" || rc=1
python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"go\n")' \
    "$run/dst-ctl.sock" || rc=1
e2e_guest_wait "$name-moved" || rc=1
tr -d '\r' <"$E2E_LOGS/$name-moved.log" | grep -E 'rnic_mig_(load|cut)' >&2 || true
e2e_guest_wait "$name-server" || rc=1
e2e_result "$name" "$rc"
