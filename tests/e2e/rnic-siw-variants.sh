#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rnic against siw built in several configurations (lib/siw.sh: the
# constants of siw_main.c/siw_cm.c changed), both roles, one pair of guests
# per variant, Debian's rping on both sides:
#   siw guest: siw <-> siw over its own address first (the reference: does
#   siw itself take this configuration?), then "rping -s" for rnic's
#   client, then "rping -c" against rnic's server;
#   rnic guest (ib_device and librnic) with two devices: rnic0, the client
#   device, runs "rping -c -a 10.0.2.15" (the default addr-map makes that
#   the host's 127.0.2.15, slirp's forward to the siw guest), rnic1, the
#   server device, "rping -s -a 10.0.0.1" (the host's 127.0.0.1, where
#   slirp's 10.0.2.2 arrives).
# Every ping's data is verified on both sides.  After the guests, the MPA
# revision and CRC of each connection each device adopted (its trace,
# rnic_conn_rts) and the RFC 6581 RTR type each MPA Reply named (its
# capture) must be the ones expected.  rnic's client role may be marked
# "refused" (siw cannot serve it, against itself either): it must then
# fail cleanly on both sides, no ping and no hang, the device left with
# no QP and its port still active, and the other role still work.
#
# Arguments: variant names (default: all).  E2E_PINGS, E2E_PING_SIZE.
. "$(dirname "$0")/lib/e2e.sh"

count=${E2E_PINGS:-5}
size=${E2E_PING_SIZE:-4096}

# Per variant: rnic's client and server devices' properties (rdma_cm's
# CONNECT and ACCEPT name no RTR type: the device's mpa-p2p and mpa-rtr
# decide, docs/spec.md "Peer-to-peer mode"), options of rnic's rping -s,
# and each role's connection mode as "REV,CRC,RTR" (or "refused"); siw's
# own verdict against itself.
variant() {
    cdev='' sdev='' sopt='' siwsiw=ok
    case $1 in
    crc-required)   # siw asks for CRC; as responder it only follows the
                    # Request's C bit, so rnic's client asks too
        cdev=mpa-crc=required cwant=2,on,none swant=2,on,none ;;
    rev1)           # siw's Requests are revision 1; rnic's client too.
        # siw answering a revision 1 Request (siw's own, or rnic's) makes
        # rping's server fail its first RDMA Read ("post send error"):
        # without RFC 6581 data the peer's IRD is reported as 0 and the
        # server is left with no ORD.  So that role is refused, siw <-> siw
        # included.  rnic's server would be left so too (rdma_accept()
        # without parameters takes the peer's IRD, 0): rping -q accepts
        # with IRD and ORD 1 itself, and siw's rev 1 client against it
        # works.
        cdev=mpa-rev=1 cwant=refused sopt=-q swant=1,off,none siwsiw=fails ;;
    p2p-write)      # siw offers a Write RTR only
        cdev=mpa-p2p=on,mpa-rtr=write cwant=2,off,write swant=2,off,write ;;
    p2p-read)       # siw offers a Read RTR only
        cdev=mpa-p2p=on,mpa-rtr=read cwant=2,off,read swant=2,off,read ;;
    p2p-both)       # siw offers both; the server device's ACCEPT takes
                    # Read only (its default takes Write first)
        cdev=mpa-p2p=on cwant=2,off,write sdev=mpa-rtr=read swant=2,off,read ;;
    p2p-none)       # siw asks for peer-to-peer mode with no RTR type:
        # rnic answers client-server mode, as siw's client expects.  (rnic's
        # client offering only a Send RTR is left out: siw names a Write
        # RTR anyway, rnic refuses that Reply, and siw 6.1 waiting for its
        # RTR then crashes its kernel, docs/protocol.md.)
        cwant=2,off,none swant=2,off,none ;;
    accept-fix)     # siw with our patch for its accept window
        # (tests/e2e/siw-patches/): rnic's client sends at once, without
        # the hold it keeps for stock siw (siw-compat-hold-ms)
        cdev=siw-compat-hold-ms=0 cwant=2,off,none swant=2,off,none ;;
    *) e2e_die "no variant $1" ;;
    esac
}

siw_guest() {
    e2e_siw_initramfs "$1" <<'GUEST'
count=$(e2e_arg count)
size=$(e2e_arg size)
me=10.0.2.15
e2e_siw_up $me || exit
ip route add default via 10.0.2.2

# siw against itself, same configuration, over its own address.
rping -s -a $me -p 7000 -C "$count" -S "$size" -v >/tmp/ref-s.out 2>&1 &
ref=$!
sleep 1
timeout 20 rping -c -a $me -p 7000 -C "$count" -S "$size" -v -V \
    >/tmp/ref-c.out 2>&1
echo "siw-siw client status $?"
kill $ref 2>/dev/null
cat /tmp/ref-c.out
if [ "$(e2e_arg siwsiw)" = ok ]; then
    e2e_rping_count /tmp/ref-c.out '^ping data: rdma-ping-' siw-siw "$count"
else
    e2e_rping_count /tmp/ref-c.out '^ping data: rdma-ping-' siw-siw-fails 0
fi

# rnic's client: rping -s answers once, then returns.
timeout 120 rping -s -a $me -p "$(e2e_arg porta)" -C "$count" -S "$size" \
    -v >/tmp/server.out 2>&1 &
sleep 1
echo "SIW-READY"
wait
cat /tmp/server.out
[ "$(e2e_arg cwant)" = refused ] && n=0 || n=$count
e2e_rping_count /tmp/server.out 'server ping data: rdma-ping-' siw-server "$n"

# rnic's server: retry until its rping -s listens.
i=0
until timeout 30 rping -c -a 10.0.2.2 -p "$(e2e_arg portb)" -C "$count" \
        -S "$size" -v -V >/tmp/client.out 2>&1; do
    echo "rping -c attempt $i: status $?"
    cat /tmp/client.out
    i=$((i + 1))
    [ $i -lt 60 ] || break
    sleep 1
done
cat /tmp/client.out
e2e_rping_count /tmp/client.out '^ping data: rdma-ping-' siw-client "$count"
GUEST
}

rnic_guest() {
    e2e_rnic_verbs_initramfs "$1" /usr/bin/rping /usr/bin/ibv_devinfo <<'GUEST'
count=$(e2e_arg count)
size=$(e2e_arg size)
modprobe rnic && modprobe rdma_ucm && modprobe ib_uverbs ||
    { e2e_fail modules "modprobe failed"; exit; }
# rnic0 (the first -device) is the client device: /16, so that the siw
# guest's 10.0.2.15 is reached through it.  rnic1, the server device, has
# 10.0.0.1 alone: rping -s binds to it, and so to rnic1.
ip link set rnic0 up && ip addr add 10.0.0.2/16 dev rnic0
ip link set rnic1 up && ip addr add 10.0.0.1/32 dev rnic1
rdma link show
e2e_check rdma-links-active sh -c 'rdma link show rnic0/1 | grep -q "state ACTIVE .*netdev rnic0" &&
    rdma link show rnic1/1 | grep -q "state ACTIVE .*netdev rnic1"' || exit

# The server listens from the start.
# shellcheck disable=SC2046
timeout 200 rping -s $(e2e_arg sopt) -a 10.0.0.1 -p "$(e2e_arg portb)" \
    -C "$count" -S "$size" -v >/tmp/rping-s.out 2>&1 &
s=$!

timeout 60 rping -c -a 10.0.2.15 -p "$(e2e_arg porta)" -C "$count" \
    -S "$size" -v -V >/tmp/rping-c.out 2>&1
rc=$?
cat /tmp/rping-c.out
if [ "$(e2e_arg cwant)" = refused ]; then
    # Refused cleanly: rping ends on its own (a hang is timeout's 124, or
    # 143 from the guest's busybox timeout, which stops it with SIGTERM)
    # and says why, no ping goes through, nothing of it stays on the
    # device, whose port is still up.  Debian 12's rping (44.0) exits 0
    # even when its connection failed, so its output is the judge.
    if [ $rc -ne 124 ] && [ $rc -ne 143 ] && ! grep -q 'ping data' /tmp/rping-c.out &&
       grep -q -E 'DISCONNECT|REJECTED|state 10|completion failed' /tmp/rping-c.out; then
        e2e_pass "rnic-client: refused, status $rc"
    else
        e2e_fail rnic-client "not refused cleanly (status $rc)"
    fi
    rdma res show qp
    e2e_check rnic0-after sh -c '! rdma res show qp link rnic0/1 | grep -q . &&
        ibv_devinfo -d rnic0 | grep -q "state:.*PORT_ACTIVE"'
else
    [ $rc -eq 0 ] || e2e_fail rnic-client "rping -c exited with status $rc"
    e2e_rping_count /tmp/rping-c.out '^ping data: rdma-ping-' rnic-client "$count"
fi
wait $s
rc=$?
cat /tmp/rping-s.out
[ $rc -eq 0 ] || e2e_fail rnic-server "rping -s exited with status $rc"
e2e_rping_count /tmp/rping-s.out 'server ping data: rdma-ping-' rnic-server "$count"
e2e_rnic_unload_clean
GUEST
}

# The connections the device adopted, from the trace of both devices:
# "c REV,CRC" for one rnic initiated (rnic_connect), "s REV,CRC" for one
# it accepted (rnic_conn_incoming).  The two devices number their
# connections alike, but the roles take turns (the siw guest's client
# starts once its server is done): a connection has the role of the last
# one opened under its number.
conn_modes() {
    awk '$1 == "rnic_connect" { role[$3] = "c" }
         $1 == "rnic_conn_incoming" { role[$3] = "s" }
         $1 == "rnic_conn_rts" && $9 == "rev" && $11 == "crc" {
             print role[$3], $10 "," ($12 ? "on" : "off") }' "$1"
}

# The RFC 6581 RTR type each MPA Reply in a device's capture names:
# "none" for client-server mode (revision 1, or no P bit in the IRD
# word).  The Reply's first 4 octets of private data: IRD with bits P
# (peer-to-peer) and L (zero-length Send), ORD with bits W (Write) and R
# (Read).
reply_rtrs() {
    tshark -r "$1" -o tcp.try_heuristic_first:TRUE \
        --disable-heuristic rpcrdma_iwarp -Y iwarp_mpa.rep -T fields \
        -e iwarp_mpa.rev -e iwarp_mpa.privatedata 2>/dev/null |
    awk 'function hex(s,  i, n) {
             n = 0
             for (i = 1; i <= length(s); i++)
                 n = n * 16 + index("0123456789abcdef", substr(tolower(s), i, 1)) - 1
             return n
         }
         {
             pd = $2
             gsub(/:/, "", pd)
             ird = hex(substr(pd, 1, 4)); ord = hex(substr(pd, 5, 4))
             if ($1 != 2 || length(pd) < 8 || int(ird / 32768) % 2 == 0) {
                 print "none"
                 next
             }
             t = ""
             if (int(ird / 16384) % 2) t = t ",send"
             if (int(ord / 32768) % 2) t = t ",write"
             if (int(ord / 16384) % 2) t = t ",read"
             print t == "" ? "none" : substr(t, 2)
         }'
}

# mode_check NAME ROLE TRACE CAPTURE WANT: every connection of ROLE in
# TRACE has WANT's "REV,CRC", every MPA Reply in CAPTURE names WANT's RTR
# type, and there is at least one of each.
mode_check() {
    local name=$1 role=$2 trace=$3 cap=$4 want=$5 modes rtrs
    modes=$(conn_modes "$trace" | sed -n "s/^$role //p")
    rtrs=$(reply_rtrs "$cap")
    echo "  $name: connections $(paste -sd' ' <<<"$modes"), RTR $(paste -sd' ' <<<"$rtrs")"
    if [ -n "$modes" ] && [ -n "$rtrs" ] &&
       ! grep -qvx "${want%,*}" <<<"$modes" &&
       ! grep -qvx "${want##*,}" <<<"$rtrs"; then
        echo "  $name: E2E-PASS MPA rev, CRC, RTR $want"
    else
        echo "  $name: E2E-FAIL MPA rev, CRC, RTR not $want"
        return 1
    fi
}

run_variant() {
    local v=$1 pa pb args rc=0 trace
    variant "$v"
    e2e_siw_variant "$v"
    siw_guest "$E2E_OUT/siw-$v.cpio.gz"
    rnic_guest "$E2E_OUT/rnic-siw-$v.cpio.gz"
    pa=$(e2e_free_ports 2)
    pb=$((pa + 1))
    args="e2e.count=$count e2e.size=$size e2e.porta=$pa e2e.portb=$pb"
    args+=" e2e.cwant=$cwant e2e.sopt=$sopt e2e.siwsiw=$siwsiw"
    trace=$E2E_LOGS/rnic-siw-$v.trace
    rm -f "$trace"
    # Evidence for a lost message: the siw guest's side of slirp as a
    # pcap, and the rnic devices' captures and connection, QP and
    # completion traces.
    e2e_guest_start "siw-$v" "$E2E_OUT/siw-$v.cpio.gz" "$args" \
        -netdev "user,id=n0,hostfwd=tcp:127.0.2.15:$pa-10.0.2.15:$pa" \
        -device virtio-net-pci,netdev=n0,romfile= \
        -object "filter-dump,id=d0,netdev=n0,file=$E2E_LOGS/siw-$v.pcap"
    e2e_wait_marker "siw-$v" SIW-READY
    e2e_guest_start "rnic-siw-$v" "$E2E_OUT/rnic-siw-$v.cpio.gz" "$args" \
        -device "rnic,id=rnic0,peer-allow=127.0.2.15:$pa${cdev:+,$cdev}$(e2e_capture "rnic-siw-$v-client")" \
        -device "rnic,id=rnic1,listen-allow=127.0.0.1:$pb${sdev:+,$sdev}$(e2e_capture "rnic-siw-$v-server")" \
        -D "$trace" -trace 'rnic_conn*' \
        -trace rnic_cqe -trace 'rnic_term*' -trace rnic_qp_state
    e2e_guest_wait "rnic-siw-$v" || rc=1
    e2e_guest_wait "siw-$v" || rc=1
    e2e_capture_check "rnic-siw-$v-client" "rnic-siw-$v-server" || rc=1
    [ "$cwant" = refused ] ||
        mode_check rnic-client c "$trace" \
            "$E2E_CAPTURES/rnic-siw-$v-client.pcapng" "$cwant" || rc=1
    mode_check rnic-server s "$trace" \
        "$E2E_CAPTURES/rnic-siw-$v-server.pcapng" "$swant" || rc=1
    echo "variant $v: $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
    return $rc
}

e2e_prep
e2e_librnic_build
variants=("$@")
[ ${#variants[@]} -gt 0 ] ||
    variants=(crc-required rev1 p2p-write p2p-read p2p-both p2p-none
              accept-fix)
rc=0
for v in "${variants[@]}"; do
    run_variant "$v" || rc=1
done
e2e_result "rnic-siw-variants ${variants[*]}" "$rc"
