# SPDX-License-Identifier: GPL-2.0-or-later
#
# Live migration of a guest to a second QEMU on this host (sourced).  Each
# side has QMP on a socket, and the guest a second serial port on which
# the host says, on the destination, that the move is over.
#   e2e_migrate_init NAME          a fresh folder for the sockets ($run)
#                                  and the state file
#   e2e_migrate_ctl src|dst        that side's QEMU options
#   e2e_migrate_qmp src|dst ARGS   lib/qmp.py on that side
#   e2e_migrate_done               waits until the source completed, and
#                                  prints downtime, total time and RAM sent
#   e2e_migrate_left NAME MARKER   the source's guest after it quit: its
#                                  markers shown; fails on an E2E-FAIL or
#                                  without the E2E-PASS MARKER
#   e2e_migrate_go                 the moved guest goes on

# A UNIX socket's path holds at most 107 bytes, and build/ is as deep as
# the clone: the folder is a short private one under /tmp, removed when
# the scenario ends (e2e_guest_cleanup).
e2e_migrate_init() {
    run=$(mktemp -d "/tmp/rnic-$1.XXXXXX") ||
        e2e_die "cannot make a folder for $1's sockets"
    E2E_RUN_DIRS+=("$run")
}

e2e_migrate_ctl() {
    echo "-chardev socket,id=ctl,path=$run/$1-ctl.sock,server=on,wait=off" \
         "-device isa-serial,chardev=ctl" \
         "-qmp unix:$run/$1-qmp.sock,server=on,wait=off"
}

e2e_migrate_qmp() {
    python3 "$E2E_LIB/qmp.py" "$run/$1-qmp.sock" "${@:2}"
}

e2e_migrate_done() {
    local info
    info=$(e2e_migrate_qmp src --wait query-migrate status completed 300) ||
        return 1
    python3 - "$info" <<'PY' >&2
import json, sys
m = json.loads(sys.argv[1])
print(f"e2e: migration: downtime {m.get('downtime')} ms, total "
      f"{m.get('total-time')} ms, {m['ram']['transferred']} bytes of RAM "
      f"sent (setup {m.get('setup-time')} ms)")
PY
}

e2e_migrate_left() {
    local log=$E2E_LOGS/$1.log
    e2e_guest_wait "$1" 2>/dev/null || true
    tr -d '\r' <"$log" | grep -E 'rnic_mig_|^E2E-' >&2 || true
    ! grep -q '^E2E-FAIL' "$log" && grep -q "^E2E-PASS $2" "$log"
}

e2e_migrate_go() {
    python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"go\n")' \
        "$run/dst-ctl.sock"
}
