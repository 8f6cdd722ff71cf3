#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rnic against siw built in several configurations (lib/siw.sh: the
# constants of siw_main.c/siw_cm.c changed), both roles, one pair of guests
# per variant:
#   siw guest: siw <-> siw over its own address first (the reference: does
#   siw itself take this configuration?), then "rping -s" for rnic's
#   client, then "rping -c" against rnic's server;
#   rnic guest: /dev/rnic0 (client device) runs rnic-tool's rping client,
#   /dev/rnic1 (server device) its server.
# Every ping's data is verified on both sides, and the MPA revision, CRC
# and RFC 6581 RTR type rnic reports for each connection must be the ones
# expected.  rnic's client role may be marked "refused" (siw cannot serve
# it, against itself either): it must then fail cleanly on both sides, no
# ping and no hang, and the other role still work.
#
# Arguments: variant names (default: all).  E2E_PINGS, E2E_PING_SIZE.
. "$(dirname "$0")/lib/e2e.sh"

count=${E2E_PINGS:-5}
size=${E2E_PING_SIZE:-4096}

# Per variant: rnic's client and server devices' properties, rnic-tool
# options of each role, and what each connection must report as
# "REV,CRC,RTR" (or "refused"); siw's own verdict against itself.
variant() {
    cdev='' sdev='' copt='' sopt='' siwsiw=ok
    case $1 in
    crc-required)   # siw asks for CRC; as responder it only follows the
                    # Request's C bit, so rnic's client asks too
        cdev=mpa-crc=required cwant=2,on,none swant=2,on,none ;;
    rev1)           # siw's Requests are revision 1; rnic's client too.
        # siw answering a revision 1 Request (siw's own, or rnic's) makes
        # rping's server fail its first RDMA Read ("post send error"):
        # without RFC 6581 data the peer's IRD is reported as 0 and the
        # server is left with no ORD.  So that role is refused, siw <-> siw
        # included; siw's rev 1 client against rnic's server works.
        cdev=mpa-rev=1 cwant=refused swant=1,off,none siwsiw=fails ;;
    p2p-write)      # siw offers a Write RTR only
        cdev=mpa-p2p=on,mpa-rtr=write cwant=2,off,write swant=2,off,write ;;
    p2p-read)       # siw offers a Read RTR only
        cdev=mpa-p2p=on,mpa-rtr=read cwant=2,off,read swant=2,off,read ;;
    p2p-both)       # siw offers both; rnic's ACCEPT takes Read (-R)
        cdev=mpa-p2p=on cwant=2,off,write sopt='-R read' swant=2,off,read ;;
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

# rnic's server: retry until rnic-tool listens.
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
    e2e_initramfs "$1" -k "$E2E_RNIC_KO" -b "$E2E_RNIC_TOOL" <<'GUEST'
count=$(e2e_arg count)
size=$(e2e_arg size)
e2e_check load modprobe rnic || exit
rnic-tool -d /dev/rnic0 info && rnic-tool -d /dev/rnic1 info

# "REV,CRC,RTR" as rnic-tool's connection line says it.
mode() {
    local want
    want=$(echo "$2" | sed 's/^\(.*\),\(.*\),\(.*\)$/MPA rev \1, CRC \2, RTR \3,/')
    if grep -q "$want" "/tmp/$1.out"; then
        e2e_pass "$1: $want"
    else
        e2e_fail "$1" "no '$want' in its connection line"
    fi
}

# The server listens from the start.
# shellcheck disable=SC2046
rnic-tool -d /dev/rnic1 rping -s -a 127.0.0.1 -p "$(e2e_arg portb)" \
    -C "$count" -S "$size" -v $(e2e_arg sopt | tr _ ' ') \
    >/tmp/rping-s.out 2>&1 &
s=$!

cargs="-d /dev/rnic0 rping -c -a 127.0.0.1 -p $(e2e_arg porta) -C $count"
cargs="$cargs -S $size -v $(e2e_arg copt | tr _ ' ')"
if [ "$(e2e_arg cwant)" = refused ]; then
    # Refused cleanly: the tool fails on its own (no timeout), no ping
    # goes through, and the device still answers.
    # shellcheck disable=SC2086
    timeout 60 rnic-tool $cargs >/tmp/rping-c.out 2>&1
    rc=$?
    grep -v 'ping data' /tmp/rping-c.out
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] &&
       ! grep -q -e '^ping data' -e 'no message from the peer' /tmp/rping-c.out; then
        e2e_pass "rping-c: refused, status $rc"
    else
        e2e_fail rping-c "not refused cleanly (status $rc)"
    fi
    e2e_check rnic0-after rnic-tool -d /dev/rnic0 info
else
    # shellcheck disable=SC2086
    e2e_tool rping-c 1 rnic-tool $cargs
    mode rping-c "$(e2e_arg cwant)"
fi
wait $s
e2e_tool_judge rping-s 1 $? "rnic-tool rping -s (rnic1)"
mode rping-s "$(e2e_arg swant)"
e2e_check unload rmmod rnic
GUEST
}

run_variant() {
    local v=$1 pa pb args rc=0
    variant "$v"
    e2e_siw_variant "$v"
    siw_guest "$E2E_OUT/siw-$v.cpio.gz"
    rnic_guest "$E2E_OUT/rnic-siw-$v.cpio.gz"
    pa=$(e2e_free_port) pb=$(e2e_free_port)
    args="e2e.count=$count e2e.size=$size e2e.porta=$pa e2e.portb=$pb"
    args+=" e2e.cwant=$cwant e2e.swant=$swant e2e.siwsiw=$siwsiw"
    args+=" e2e.copt=${copt// /_} e2e.sopt=${sopt// /_}"
    # Evidence for a lost message: the siw guest's side of slirp as a
    # pcap, and the rnic device's connection, QP and completion traces.
    e2e_guest_start "siw-$v" "$E2E_OUT/siw-$v.cpio.gz" "$args" \
        -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$pa-10.0.2.15:$pa" \
        -device virtio-net-pci,netdev=n0,romfile= \
        -object "filter-dump,id=d0,netdev=n0,file=$E2E_LOGS/siw-$v.pcap"
    e2e_wait_marker "siw-$v" SIW-READY
    e2e_guest_start "rnic-siw-$v" "$E2E_OUT/rnic-siw-$v.cpio.gz" "$args" \
        -device "rnic,id=rnic0,peer-allow=127.0.0.1:$pa${cdev:+,$cdev}" \
        -device "rnic,id=rnic1,listen-allow=127.0.0.1:$pb${sdev:+,$sdev}" \
        -D "$E2E_LOGS/rnic-siw-$v.trace" -trace 'rnic_conn*' \
        -trace rnic_cqe -trace 'rnic_term*' -trace rnic_qp_state
    e2e_guest_wait "rnic-siw-$v" || rc=1
    e2e_guest_wait "siw-$v" || rc=1
    echo "variant $v: $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
    return $rc
}

e2e_prep
variants=("$@")
[ ${#variants[@]} -gt 0 ] ||
    variants=(crc-required rev1 p2p-write p2p-read p2p-both p2p-none
              accept-fix)
rc=0
for v in "${variants[@]}"; do
    run_variant "$v" || rc=1
done
e2e_result "rnic-siw-variants ${variants[*]}" "$rc"
