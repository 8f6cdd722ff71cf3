# SPDX-License-Identifier: GPL-2.0-or-later
#
# Boots guests and judges them by their console markers (sourced).
#
#   e2e_guest_start NAME INITRD "KERNEL ARGS" [QEMU ARGS...]   (background)
#   e2e_guest_wait NAME      waits, then 0 if the guest passed
#   e2e_guest_run  ...       both at once
#
# The console goes to $E2E_LOGS/NAME.log.  A guest passes when it printed
# E2E-DONE with at least one E2E-PASS and no E2E-FAIL (nor counted one),
# and its QEMU exited with status 0; a guest that hangs is killed after
# E2E_TIMEOUT seconds (sized for TCG: ~10 s to /init).
# Guests run on KVM where the host has a usable one, on TCG otherwise
# (scripts/accel.sh says which, and why).
# E2E_MACHINE_ARGS: QEMU options for every guest of a scenario, ahead of
# its devices (a vIOMMU must come before the devices it translates for);
# E2E_KERNEL_ARGS: more kernel arguments for every guest.

E2E_TIMEOUT=${E2E_TIMEOUT:-240}
E2E_ACCEL=${E2E_ACCEL:-$(bash "$E2E_TOP/scripts/accel.sh")}
E2E_LOGS=${E2E_LOGS:-$E2E_OUT/logs}
declare -A E2E_GUEST_PID=() E2E_GUEST_DOG=()

e2e_guest_start() {
    local name=$1 initrd=$2 append=$3; shift 3
    local log=$E2E_LOGS/$name.log
    mkdir -p "$E2E_LOGS"
    rm -f "$E2E_LOGS/$name.hang.txt"
    [ -x "$E2E_QEMU" ] || e2e_die "no $E2E_QEMU; run 'make qemu' first"
    # -nodefaults: without it SeaBIOS spends ~30 s under TCG probing the
    # default CD-ROM before it boots the kernel.
    # shellcheck disable=SC2086
    timeout -k 10 "$E2E_TIMEOUT" "$E2E_QEMU" \
        -M q35 -accel "$E2E_ACCEL" -cpu max -m 512 -nodefaults -nographic \
        -serial stdio -no-reboot \
        -kernel "$E2E_VMLINUZ" -initrd "$initrd" \
        -append "console=ttyS0 quiet panic=-1 $append ${E2E_KERNEL_ARGS:-}" \
        ${E2E_IOTHREAD_NICE:+-name debug-threads=on} \
        ${E2E_MACHINE_ARGS:-} "$@" </dev/null >"$log" 2>&1 &
    E2E_GUEST_PID[$name]=$!
    e2e_guest_watchdog "$name" "$!" </dev/null >/dev/null 2>&1 &
    E2E_GUEST_DOG[$name]=$!
    [ -z "${E2E_IOTHREAD_NICE:-}" ] ||
        e2e_iothread_nice "${E2E_GUEST_PID[$name]}" "$E2E_IOTHREAD_NICE"
}

# E2E_IOTHREAD_NICE=N: the IOThreads of every guest's QEMU (the threads
# debug-threads names "IO ID") run at nice N: on a host with no core to
# spare for each IOThread, what comes closest (bench-guest's column
# io-prio).  A negative N needs root; without it the scenario stops
# rather than print figures under a name they do not have.
e2e_iothread_nice() {   # TIMEOUT-PID N
    local qpid t n=0 tries=50
    while [ $((tries -= 1)) -ge 0 ]; do
        qpid=$(e2e_guest_qemu "$1")
        for t in ${qpid:+/proc/$qpid/task/*}; do
            case $(cat "$t/comm" 2>/dev/null) in
            "IO "*) renice -n "$2" -p "${t##*/}" >/dev/null ||
                        e2e_die "E2E_IOTHREAD_NICE: cannot renice ${t##*/}"
                    n=$((n + 1)) ;;
            esac
        done
        [ "$n" -eq 0 ] || return 0
        sleep 0.2
    done
    e2e_die "E2E_IOTHREAD_NICE: no IOThread in QEMU ${qpid:-?}"
}

# The QEMU that e2e_guest_start's timeout (pid $1) runs, if it runs yet.
e2e_guest_qemu() {
    pgrep -P "$1" | head -n 1 || true
}

# Shortly before the timeout kills a hung guest, the stacks of its QEMU's
# threads go to NAME.hang.txt: whether the device or the guest hung is
# then on record, also when it happened once on CI.
e2e_guest_watchdog() {
    local name=$1 tpid=$2 qpid
    sleep $((E2E_TIMEOUT - 15))
    qpid=$(e2e_guest_qemu "$tpid")
    [ -n "$qpid" ] && command -v gdb >/dev/null || return 0
    gdb -batch -p "$qpid" -ex 'thread apply all bt' \
        >"$E2E_LOGS/$name.hang.txt" 2>&1
}

# The guest's verdict from its log; prints the markers for the reader.
e2e_guest_verdict() {
    local name=$1 rc=$2 log=$E2E_LOGS/$1.log markers
    markers=$(tr -d '\r' <"$log" | grep -E '^E2E-(PASS|FAIL|DONE)' || true)
    [ -z "$markers" ] || sed "s/^/  $name: /" <<<"$markers" >&2
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        e2e_log "$name: timed out after ${E2E_TIMEOUT}s (log: $log; QEMU's threads: $E2E_LOGS/$name.hang.txt)"
        e2e_guest_excerpt "$name"
        return 1
    fi
    if ! grep -q '^E2E-DONE' <<<"$markers"; then
        e2e_log "$name: no E2E-DONE, QEMU exit status $rc (log: $log)"
        e2e_guest_excerpt "$name"
        return 1
    fi
    # The DONE line's count too: an E2E-FAIL line that a kernel message
    # broke on the serial console is no marker, but it was counted.
    if grep -q '^E2E-FAIL' <<<"$markers" || ! grep -q '^E2E-PASS' <<<"$markers" ||
       grep -q '^E2E-DONE .*failed=[1-9]' <<<"$markers"; then
        e2e_log "$name: failed (log: $log)"
        e2e_guest_excerpt "$name" '^E2E-FAIL'
        return 1
    fi
    # A guest that powers off ends its QEMU with status 0: any other is
    # QEMU failing after the guest's verdict (a crash at shutdown, say).
    if [ "$rc" -ne 0 ]; then
        e2e_log "$name: the guest passed, but QEMU exited with status $rc (log: $log)"
        e2e_guest_excerpt "$name"
        return 1
    fi
}

# e2e_guest_excerpt NAME [PATTERN]: a failed guest's console around the
# lines matching PATTERN (without one, its end), as "  NAME| LINE": a CI
# run may keep only the end of its output, which make check closes with
# these lines.  rping's per-ping lines would crowd out the rest.
e2e_guest_excerpt() {
    local name=$1 at=${2:-}
    tr -d '\r' <"$E2E_LOGS/$name.log" | grep -v 'ping data' | cut -c1-160 |
        if [ -z "$at" ]; then tail -n 15; else grep -B 8 -E "$at" | tail -n 30; fi |
        sed "s/^/  $name| /" >&2
}

e2e_guest_wait() {
    local rc=0
    wait "${E2E_GUEST_PID[$1]}" || rc=$?
    kill "${E2E_GUEST_DOG[$1]}" 2>/dev/null || true
    e2e_guest_verdict "$1" "$rc"
}

e2e_guest_run() {
    e2e_guest_start "$@"
    e2e_guest_wait "$1"
}

# Guests still running when the scenario ends (it failed half-way) are
# stopped rather than left to their timeout; the scenario's private
# folders (lib/migrate.sh) go.
E2E_RUN_DIRS=()
e2e_guest_cleanup() {
    local pid
    for pid in ${E2E_GUEST_PID[@]+"${E2E_GUEST_PID[@]}"} \
               ${E2E_GUEST_DOG[@]+"${E2E_GUEST_DOG[@]}"}; do
        kill "$pid" 2>/dev/null || true
    done
    rm -rf ${E2E_RUN_DIRS[@]+"${E2E_RUN_DIRS[@]}"}
}
trap e2e_guest_cleanup EXIT

# A loopback TCP port nobody listens on right now, for -netdev socket.
e2e_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# e2e_free_ports N: the first of N consecutive loopback ports that are
# free and below the kernel's ephemeral range, so that no connection the
# host opens meanwhile (slirp's, the device's) takes one of them as its
# source port: a guest listening there afterwards would get EADDRINUSE.
e2e_free_ports() {
    python3 - "$1" <<'EOF'
import random, socket, sys
n = int(sys.argv[1])
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    base = random.randrange(10000, lo - n)
    socks = []
    try:
        for i in range(n):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", base + i))
    except OSError:
        continue
    finally:
        for s in socks:
            s.close()
    print(base)
    break
else:
    sys.exit("no free port block")
EOF
}

# Waits until a QEMU -netdev socket,listen= is up: probing it by connecting
# would take the one peer slot it has, so look at the socket table instead.
e2e_wait_listen() {
    local port=$1 _
    for _ in $(seq 50); do
        ss -Hltn "sport = :$port" | grep -q . && return 0
        sleep 0.2
    done
    e2e_die "nothing listens on 127.0.0.1:$port"
}

# Waits until guest NAME printed a line starting with MARKER on its
# console (a server that is ready), at most SECONDS.
e2e_wait_marker() {
    local name=$1 marker=$2 secs=${3:-120} _
    for _ in $(seq $((secs * 5))); do
        tr -d '\r' <"$E2E_LOGS/$name.log" 2>/dev/null | grep -q "^$marker" &&
            return 0
        kill -0 "${E2E_GUEST_PID[$name]}" 2>/dev/null ||
            e2e_die "$name ended before printing $marker"
        sleep 0.2
    done
    e2e_die "$name: no $marker after ${secs}s"
}
