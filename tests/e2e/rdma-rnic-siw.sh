#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rnic against Linux's own software iWARP, both directions, with rdma-core
# tools on both sides: a guest with -device rnic (ib_device and librnic,
# address 10.0.0.1/16) and a siw guest (virtio-net on slirp, 10.0.2.15).
#   rnic "rping -c -a 10.0.2.15" -> addr-map 127.0.2.15:P -> slirp
#        hostfwd -> siw "rping -s"                         (and perftest)
#   siw "rping -c -a 10.0.2.2" -> slirp -> host 127.0.0.1:P -> addr-map
#        10.0.0.1:P -> rnic "rping -s"                     (and perftest)
# perftest with -R, 200 iterations each: ib_write_bw, ib_send_bw,
# ib_read_bw (64 KiB) and ib_send_lat (64 bytes) on ports P+1 to P+4,
# the end of them on the port after (e2e_perf_serve and e2e_perf_connect,
# lib/guest-lib.sh).
# Every connection the rnic adopts is traced (rnic_conn_rts) and must have
# MPA CRC as E2E_RNIC_CRC says: 0 (default: siw does not ask for it and
# rnic's default accepts either) or 1 (rdma-rnic-siw-crc.sh).
# E2E_RNIC_OPTS: more -device rnic options (",mpa-crc=required");
# E2E_RNIC_QEMU_ARGS: more QEMU options for the rnic guest (-trace ...);
# E2E_PERF: the perftest programs (PROG[:SIZE[:e]], comma-separated).
. "$(dirname "$0")/lib/e2e.sh"

name=${E2E_NAME:-rdma-rnic-siw}
e2e_prep
e2e_librnic_build

siw_initrd=$E2E_OUT/$name-peer.cpio.gz
perf=${E2E_PERF:-ib_write_bw,ib_send_bw,ib_read_bw,ib_send_lat}
progs=()
for p in ${perf//,/ }; do progs+=("/usr/bin/${p%%:*}"); done
e2e_siw_initramfs "$siw_initrd" "${progs[@]}" <<'GUEST'
pa=$(e2e_arg porta)
pb=$(e2e_arg portb)
e2e_siw_up 10.0.2.15 || exit
ip route add default via 10.0.2.2

# Servers for the rnic guest, which starts once they listen.  siw's
# accept() leaves a first FPDU that arrives right after its MPA Reply
# unread (docs/driver-guide.md, "no message from the peer"), and rping's
# client, over rnic, is now and then that fast: that server then waits
# until the client gives up (30 s), fails, and is started again here
# while the client retries; a later run must serve all 10 pings.
( i=0
  until timeout 200 rping -s -a 10.0.2.15 -p "$pa" -C 10 -v >/tmp/rping-s.out 2>&1; do
      i=$((i + 1))
      echo "siw rping -s: run $i failed"
      cat /tmp/rping-s.out
      [ $i -lt 4 ] || exit 1
  done ) &
s1=$!
e2e_perf_serve 10.0.2.15 $((pa + 1))
sleep 1
echo "SIW-READY"
e2e_rping_served $s1 siw-rping-server
e2e_perf_served 10.0.2.15 $((pa + 1))

# Clients of the rnic guest's servers (which listen from its start).
e2e_retry siw-rping-client 60 timeout 30 rping -c -a 10.0.2.2 -p "$pb" -C 10 -v -V
e2e_rping_count /tmp/siw-rping-client.out '^ping data: rdma-ping-' siw-rping-verified 10
e2e_perf_connect 10.0.2.2 $((pb + 1))
GUEST

rnic_initrd=$E2E_OUT/$name.cpio.gz
e2e_rnic_verbs_initramfs "$rnic_initrd" /usr/bin/rping "${progs[@]}" <<'GUEST'
pa=$(e2e_arg porta)
pb=$(e2e_arg portb)
ip link set lo up
# /16: the siw guest's 10.0.2.15 is on the link too.
modprobe rnic && modprobe rdma_ucm && modprobe ib_uverbs
ip link set rnic0 up && ip addr add 10.0.0.1/16 dev rnic0
e2e_check rdma-link-active sh -c 'rdma link show rnic0/1 | grep -q "state ACTIVE"'

# Servers for the siw guest's clients, listening from the start.
timeout 200 rping -s -a 10.0.0.1 -p "$pb" -C 10 -v >/tmp/rping-s.out 2>&1 &
s1=$!
e2e_perf_serve 10.0.0.1 $((pb + 1))

e2e_retry rnic-rping-client 60 timeout 30 rping -c -a 10.0.2.15 -p "$pa" -C 10 -v -V
e2e_rping_count /tmp/rnic-rping-client.out '^ping data: rdma-ping-' rnic-rping-verified 10
e2e_perf_connect 10.0.2.15 $((pa + 1))

e2e_rping_served $s1 rnic-rping-server
e2e_perf_served 10.0.0.1 $((pb + 1))
e2e_check unload rmmod rnic
GUEST

# Each side's ports: P for rping, P+1... for perftest and its end; the
# rnic may connect to the siw guest's (pa on) and listen on its own (pb
# on), and nothing else.
nports=$((${#progs[@]} + 2))
pa=$(e2e_free_ports "$nports")
pb=$(e2e_free_ports "$nports")
allow="peer-allow=127.0.2.15:$pa-$((pa + nports - 1))"
allow="$allow,listen-allow=127.0.0.1:$pb-$((pb + nports - 1))"
args="e2e.porta=$pa e2e.portb=$pb e2e.perf=$perf"
fwd="hostfwd=tcp:127.0.2.15:$pa-10.0.2.15:$pa"
for i in $(seq $((${#progs[@]} + 1))); do
    fwd="$fwd,hostfwd=tcp:127.0.2.15:$((pa + i))-10.0.2.15:$((pa + i))"
done
e2e_guest_start "$name-peer" "$siw_initrd" "$args" \
    -netdev "user,id=n0,$fwd" -device virtio-net-pci,netdev=n0,romfile=
# slirp accepts connections before the guest listens: wait for the servers.
e2e_wait_marker "$name-peer" SIW-READY
# shellcheck disable=SC2086
e2e_guest_start "$name" "$rnic_initrd" "$args" \
    -device "rnic,id=rnic0,$allow${E2E_RNIC_OPTS:-}" \
    -trace rnic_conn_rts ${E2E_RNIC_QEMU_ARGS:-}

rc=0
e2e_guest_wait "$name" || rc=1
e2e_guest_wait "$name-peer" || rc=1
# rping, each perftest program and the rping that ends them, each way
# (more if perftest had to run again).
crc=${E2E_RNIC_CRC:-0}
log=$E2E_LOGS/$name.log
# grep fails when it finds none: set -e must not stop here, before the
# verdict (grep -c prints 0 all the same).
n=$(grep -c "rnic_conn_rts .* crc $crc " "$log" || true)
grep "rnic_conn_rts" "$log" | sed 's/^/  /' || true
# The last grep reads all its input (no -q): one that stopped at the first
# line would leave the first to die of SIGPIPE, which pipefail then takes
# as the pipeline's status, and "!" as no connection without crc.
if [ "$n" -ge $((2 * (2 + ${#progs[@]}))) ] &&
   ! grep "rnic_conn_rts" "$log" | grep -v " crc $crc " >/dev/null; then
    echo "  $name: E2E-PASS mpa-crc-$crc ($n connections)"
else
    echo "  $name: E2E-FAIL mpa-crc-$crc: $n connections with crc $crc, or some without"
    rc=1
fi
e2e_result "$name" "$rc"
