#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rnic against Linux's own software iWARP: one guest with two rnic
# devices (/dev/rnic0 with the default MPA CRC policy, /dev/rnic1 with
# mpa-crc=required) runs rnic-tool's rping; a siw guest (virtio-net on
# slirp) runs Debian's rping.  Four sessions of N pings, each verified on
# both sides:
#   rnic client -> 127.0.0.1:PA -> slirp hostfwd -> siw "rping -s"  (CRC off, on)
#   siw "rping -c -a 10.0.2.2" -> slirp -> 127.0.0.1:PB -> rnic server  (CRC off, on)
. "$(dirname "$0")/lib/e2e.sh"

count=${E2E_PINGS:-10}
size=${E2E_PING_SIZE:-4096}

e2e_prep

siw_initrd=$E2E_OUT/rnic-siw-peer.cpio.gz
e2e_siw_initramfs "$siw_initrd" <<'GUEST'
count=$(e2e_arg count)
size=$(e2e_arg size)
e2e_siw_up 10.0.2.15 || exit
ip route add default via 10.0.2.2

# Servers for the rnic clients: both listen, then the host starts the
# rnic guest.
for p in $(e2e_arg porta0) $(e2e_arg porta1); do
    timeout 200 rping -s -a 10.0.2.15 -p "$p" -C "$count" -S "$size" -v \
        >"/tmp/server-$p.out" 2>&1 &
done
sleep 1
echo "SIW-READY"
wait
echo "servers done, uptime $(cut -d' ' -f1 /proc/uptime)"
for p in $(e2e_arg porta0) $(e2e_arg porta1); do
    cat "/tmp/server-$p.out"
    e2e_rping_count "/tmp/server-$p.out" 'server ping data: rdma-ping-' \
        "siw-server-$p" "$count"
done

# Clients of the rnic servers: retry until rnic-tool listens.
for p in $(e2e_arg portb0) $(e2e_arg portb1); do
    i=0
    until timeout 30 rping -c -a 10.0.2.2 -p "$p" -C "$count" -S "$size" \
            -v -V >"/tmp/client-$p.out" 2>&1; do
        echo "rping -c port $p attempt $i: status $?, uptime $(cut -d' ' -f1 /proc/uptime)"
        i=$((i + 1))
        [ $i -lt 60 ] || break
        sleep 1
    done
    cat "/tmp/client-$p.out"
    e2e_rping_count "/tmp/client-$p.out" '^ping data: rdma-ping-' \
        "siw-client-$p" "$count"
done
GUEST

rnic_initrd=$E2E_OUT/rnic-siw.cpio.gz
e2e_initramfs "$rnic_initrd" -k "$E2E_RNIC_KO" -b "$E2E_RNIC_TOOL" <<'GUEST'
count=$(e2e_arg count)
size=$(e2e_arg size)
e2e_check load modprobe rnic || exit
rnic-tool -d /dev/rnic0 info && rnic-tool -d /dev/rnic1 info

# Only the connection line says whether CRC32c was in use.
crc() {
    if grep -q "CRC $2" "/tmp/$1.out"; then
        e2e_pass "$1: MPA CRC $2"
    else
        e2e_fail "$1" "MPA CRC not $2"
    fi
}

# The servers listen from the start: the siw guest's clients come after
# its own servers are done, and must not find the ports closed (a refused
# connection through slirp leaves rping -c hanging).
rnic-tool -d /dev/rnic0 rping -s -a 127.0.0.1 -p "$(e2e_arg portb0)" \
    -C "$count" -S "$size" -v >/tmp/rping-s-crc-off.out 2>&1 &
s0=$!
rnic-tool -d /dev/rnic1 rping -s -a 127.0.0.1 -p "$(e2e_arg portb1)" \
    -C "$count" -S "$size" -v >/tmp/rping-s-crc-on.out 2>&1 &
s1=$!

e2e_tool rping-c-crc-off 1 rnic-tool -d /dev/rnic0 rping -c -a 127.0.0.1 \
    -p "$(e2e_arg porta0)" -C "$count" -S "$size" -v
crc rping-c-crc-off off
e2e_tool rping-c-crc-on 1 rnic-tool -d /dev/rnic1 rping -c -a 127.0.0.1 \
    -p "$(e2e_arg porta1)" -C "$count" -S "$size" -v
crc rping-c-crc-on on
wait $s0
e2e_tool_judge rping-s-crc-off 1 $? "rnic-tool rping -s (rnic0)"
crc rping-s-crc-off off
wait $s1
e2e_tool_judge rping-s-crc-on 1 $? "rnic-tool rping -s (rnic1)"
crc rping-s-crc-on on
e2e_check unload rmmod rnic
GUEST

pa0=$(e2e_free_port) pa1=$(e2e_free_port) pb0=$(e2e_free_port) pb1=$(e2e_free_port)
args="e2e.count=$count e2e.size=$size e2e.porta0=$pa0 e2e.porta1=$pa1 e2e.portb0=$pb0 e2e.portb1=$pb1"
e2e_guest_start siw-peer "$siw_initrd" "$args" \
    -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$pa0-10.0.2.15:$pa0,hostfwd=tcp:127.0.0.1:$pa1-10.0.2.15:$pa1" \
    -device virtio-net-pci,netdev=n0,romfile= \
    -object "filter-dump,id=d0,netdev=n0,file=$E2E_LOGS/siw-peer.pcap"
# slirp accepts connections before the guest listens: wait for rping -s.
e2e_wait_marker siw-peer SIW-READY
e2e_guest_start rnic-siw "$rnic_initrd" "$args" \
    -device "rnic,id=rnic0,peer-allow=127.0.0.1:$pa0,listen-allow=127.0.0.1:$pb0${E2E_RNIC_OPTS:-}$(e2e_capture rnic-siw-rnic0)" \
    -device "rnic,id=rnic1,mpa-crc=required,peer-allow=127.0.0.1:$pa1,listen-allow=127.0.0.1:$pb1${E2E_RNIC_OPTS:-}$(e2e_capture rnic-siw-rnic1)" \
    -D "$E2E_LOGS/rnic-siw.trace" -trace 'rnic_conn*' -trace rnic_cqe \
    -trace 'rnic_term*' -trace rnic_qp_state -trace rnic_event

rc=0
e2e_guest_wait rnic-siw || rc=1
e2e_guest_wait siw-peer || rc=1
e2e_capture_check rnic-siw-rnic0 rnic-siw-rnic1 || rc=1
e2e_result rnic-siw "$rc"
