#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# NVMe over Fabrics across a live migration (docs/spec.md "Migration"),
# in migrate-connections=reset mode, on one host: nvmeof.sh's target (a
# 64 MiB RAM disk exported by nvmet-rdma) in one rnic guest, its host
# (nvme connect -t rdma --reconnect-delay=1 --ctrl-loss-tmo=600) in
# another, which is migrated to a second QEMU (-incoming unix:) in the
# middle of its I/O, as rnic-migrate.sh moves its rping client.
#   1. The host writes 64 MiB of random data over the namespace, reads it
#      back and compares.
#   2. Two loops run in the host guest, each pass with direct I/O: the
#      writer writes the first 16 MiB in 4 KiB requests with data it has
#      not written there the pass before (the pattern from another
#      offset), reads them back and compares; the reader reads the last
#      32 MiB in 8 KiB requests and compares them with the pattern.
#      When each has passed once the guest says E2E-MIGRATE-READY and the
#      host migrates it and quits the source.  The move cuts the
#      controller's connections (reset): the controller leaves "live",
#      reconnects after a second, and the I/O that waited goes on.
#   3. The host tells the moved guest to go on (a line on its second
#      serial port).  It waits for the controller to be live again and
#      for a pass of each loop started after that, then stops them.
#      Every pass must have passed, one must have run across the moment
#      the controller left "live" and one across its return, the kernel
#      must have logged no I/O error, and the whole namespace read back
#      must equal what was written last.
# The migration's downtime, the reconnection's time (E2E-FIGURE
# nvme-reconnect, from /sys/class/nvme/nvme0/state polled every 50 ms)
# and the rnic_mig_* traces are printed.
# E2E_NAME: what the guests, their initramfs and logs are named after
# (nvmeof-migrate).
E2E_TIMEOUT=${E2E_TIMEOUT:-600}
. "$(dirname "$0")/lib/e2e.sh"

name=${E2E_NAME:-nvmeof-migrate}
e2e_prep
e2e_librnic_build

initrd=$E2E_OUT/$name.cpio.gz
e2e_rnic_verbs_initramfs "$initrd" -m nvmet-rdma -m nvme-rdma -m brd \
    /usr/sbin/nvme /usr/bin/rping <<'GUEST'
role=$(e2e_arg role)
ip=$(e2e_arg ip)
me=${ip%/*}
peer=$(e2e_arg peer)
port=$(e2e_arg port)
e2e_rnic_up "$ip" || exit

if [ "$role" = target ]; then
    e2e_check nvmet-config e2e_nvmet_config "$me" "$port"
    echo NVMET-READY
    e2e_check host-done timeout 550 rping -s -a "$me" -p $((port + 1)) -C 1
    e2e_check nvmet-teardown e2e_nvmet_teardown
    dmesg | grep -E 'nvme|rdma' | tail -n 20
    e2e_rnic_unload_clean
    exit
fi

dev=/dev/nvme0n1
MiB=1048576

# The pattern: 64 MiB of random data, the whole namespace.
write_pattern() {
    dd if=/dev/urandom of=/tmp/pattern bs=1M count=64 2>/dev/null &&
        dd if=/tmp/pattern of=$dev bs=1M oflag=direct 2>/dev/null &&
        dd if=$dev of=/tmp/back bs=1M iflag=direct 2>/dev/null &&
        cmp /tmp/back /tmp/pattern && rm /tmp/back
}

# Writer pass K: the first 16 MiB from the pattern at K % 48 MiB (never
# what the pass before wrote there), 4 KiB at a time; read back, compared.
wpass() {
    local s=$(($1 % 48))
    dd if=/tmp/pattern of=$dev bs=4k skip=$((s * 256)) count=4096 \
        oflag=direct 2>/dev/null &&
        dd if=$dev of=/tmp/wback bs=1M count=16 iflag=direct 2>/dev/null &&
        cmp -n $((16 * MiB)) /tmp/wback /tmp/pattern 0 $((s * MiB))
}

# Reader pass: the last 32 MiB, 8 KiB at a time, against the pattern.
rpass() {
    dd if=$dev of=/tmp/rback bs=8k skip=4096 count=4096 iflag=direct \
        2>/dev/null &&
        cmp /tmp/rback /tmp/pattern 0 $((32 * MiB))
}

# loop NAME FUNC: FUNC 1, FUNC 2, ... until /tmp/stop exists or a pass
# fails; a line "K START END STATUS" (by /proc/uptime) in /tmp/NAME.passes
# for each.
loop() {
    local k=0 t0 t1 rc
    until [ -e /tmp/stop ]; do
        k=$((k + 1))
        read -r t0 _ </proc/uptime
        "$2" $k
        rc=$?
        read -r t1 _ </proc/uptime
        echo "$k $t0 $t1 $rc" >>"/tmp/$1.passes"
        [ $rc -eq 0 ] || break
    done
}

# The controller's state, a line "TIME STATE" in /tmp/states at each change.
watch_state() {
    local s last="" t
    while :; do
        read -r s </sys/class/nvme/nvme0/state 2>/dev/null || s=none
        if [ "$s" != "$last" ]; then
            read -r t _ </proc/uptime
            echo "$t $s" >>/tmp/states
            last=$s
        fi
        usleep 50000
    done
}

# "DOWN UP": when the controller first left live, when it was live again.
down_up() {
    awk '$2 == "live" { if (down != "" && up == "") up = $1; seen = 1; next }
         seen && down == "" { down = $1 }
         END { if (up == "") exit 1; print down, up }' /tmp/states
}

# The kernel's times of the first error recovery and the reconnection.
dmesg_reconnect() {
    dmesg | tr -d '[]' | awk '
        /nvme0: starting error recovery/ && a == "" { a = $1 }
        /nvme0: Successfully reconnected/ && a != "" && b == "" { b = $1 }
        END { if (b != "") printf "dmesg: error recovery at %.2f s, reconnected at %.2f s: %.2f s", a, b, b - a }'
}

# passed_after NAME T: NAME's loop finished a pass started after T, or failed.
passed_after() {
    awk -v t="$2" '$2 > t + 0 || $4 != 0 { n++ } END { exit !n }' \
        "/tmp/$1.passes" 2>/dev/null
}

# all_passed NAME: every pass of NAME's loop passed, and there was one.
all_passed() {
    cat "/tmp/$1.passes"
    awk '$4 != 0 { bad++ } END { exit bad || !NR }' "/tmp/$1.passes"
}

both_passed() {
    all_passed w && all_passed r
}

# spans T: a pass of either loop started before T and ended after it.
spans() {
    awk -v t="$1" '$2 < t + 0 && $3 > t + 0 { n++ } END { exit !n }' \
        /tmp/w.passes /tmp/r.passes
}

# wait_for TENTHS CMD...: until CMD succeeds, at most TENTHS / 10 s.
wait_for() {
    local n=$1
    shift
    until "$@"; do
        n=$((n - 1))
        [ $n -gt 0 ] || return 1
        usleep 100000
    done
}

e2e_retry nvme-connect 60 e2e_nvme_connect "$peer" "$port" \
    --reconnect-delay=1 --ctrl-loss-tmo=600 || exit
nvme list
e2e_check nvme-write-pattern write_pattern || exit

stty -F /dev/ttyS1 raw -echo
rm -f /tmp/stop /tmp/states /tmp/w.passes /tmp/r.passes
watch_state &
watcher=$!
loop w wpass &
writer=$!
loop r rpass &
reader=$!
wait_for 1200 sh -c '[ -s /tmp/w.passes ] && [ -s /tmp/r.passes ]'
e2e_check nvme-io-before-move both_passed
echo "E2E-MIGRATE-READY writer pass $(wc -l </tmp/w.passes), reader pass $(wc -l </tmp/r.passes)"
# blocks until the host writes a line here, on the destination
head -n 1 /dev/ttyS1
echo "moved: the writer and the reader that were running"

if wait_for 1200 down_up; then
    down_up >/tmp/down-up
    read -r down up </tmp/down-up
    e2e_pass nvme-ctrl-live-again
else
    down="" up=""
    e2e_fail nvme-ctrl-live-again "the controller did not leave live and come back in 120 s"
fi
cat /tmp/states
# each loop goes on until one of its passes started after the reconnection
wait_for 1200 passed_after w "${up:-0}"
wait_for 1200 passed_after r "${up:-0}"
touch /tmp/stop
wait $writer
wait $reader
kill $watcher
if [ -n "$up" ]; then
    echo "E2E-FIGURE nvme-reconnect $(awk -v a="$down" -v b="$up" 'BEGIN { printf "%.2f s", b - a }') (state: left live at $down s, live again at $up s; $(dmesg_reconnect))"
    e2e_check nvme-io-running-at-move spans "$down"
    e2e_check nvme-io-through-reconnect spans "$up"
fi
e2e_check nvme-writes-across-move all_passed w
e2e_check nvme-reads-across-move all_passed r
dmesg | grep -E 'nvme|rdma' | tail -n 20
e2e_check nvme-reconnected sh -c 'dmesg | grep "Successfully reconnected"'
e2e_check nvme-no-io-error sh -c '! dmesg | grep "I/O error"'

# The whole namespace: the first 16 MiB as the writer's last pass wrote
# them, the rest as the pattern.
last=$(tail -n 1 /tmp/w.passes | cut -d' ' -f1)
rm -f /tmp/wback /tmp/rback
e2e_check nvme-compare-after sh -c "
    dd if=$dev of=/tmp/back bs=1M iflag=direct 2>/dev/null &&
    cmp -n $((16 * MiB)) /tmp/back /tmp/pattern 0 $((last % 48 * MiB)) &&
    cmp /tmp/back /tmp/pattern $((16 * MiB)) $((16 * MiB))"
e2e_check nvme-disconnect nvme disconnect -n "$E2E_NQN"
e2e_retry host-done 60 timeout 30 rping -c -a "$peer" -p $((port + 1)) -C 1
e2e_rnic_unload_clean
GUEST

e2e_rnic_pair
e2e_migrate_init "$name"

# shellcheck disable=SC2086,SC2154
e2e_guest_start "$name-target" "$initrd" \
    "e2e.role=target e2e.ip=$net.1/24 e2e.port=$port" $rnic_io -device "$dev"
hargs="e2e.role=host e2e.ip=$net.2/24 e2e.peer=$net.1 e2e.port=$port"
host=(-device "$dev,migrate-connections=reset" -trace 'rnic_mig_*')
# shellcheck disable=SC2086,SC2046
e2e_guest_start "$name-host" "$initrd" "$hargs" $rnic_io "${host[@]}" \
    $(e2e_migrate_ctl src)

rc=0
e2e_wait_marker "$name-host" E2E-MIGRATE-READY 400
# shellcheck disable=SC2086,SC2046
e2e_guest_start "$name-moved" "$initrd" "$hargs" $rnic_io "${host[@]}" \
    $(e2e_migrate_ctl dst) -incoming "unix:$run/mig.sock"
for _ in $(seq 100); do [ -S "$run/mig.sock" ] && break; sleep 0.1; done
e2e_migrate_qmp src migrate "{\"uri\": \"unix:$run/mig.sock\"}" >/dev/null
e2e_migrate_done || rc=1
e2e_migrate_qmp dst --wait query-status status running 120 >/dev/null || rc=1
e2e_migrate_qmp src quit >/dev/null || true
e2e_migrate_left "$name-host" nvme-io-before-move || rc=1
e2e_migrate_go || rc=1
e2e_guest_wait "$name-moved" || rc=1
tr -d '\r' <"$E2E_LOGS/$name-moved.log" |
    grep -E 'rnic_mig_|^E2E-FIGURE|nvme nvme0: (starting|Reconnecting|Successfully)' |
    awk '!seen[$0]++' >&2 || true
e2e_guest_wait "$name-target" || rc=1
e2e_result "$name" "$rc"
