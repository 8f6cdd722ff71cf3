#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# NVMe over Fabrics on RDMA, the kernel's own RDMA users, on rnic: Linux's
# nvmet-rdma target with a RAM disk namespace and its nvme-rdma host
# (nvme-cli's "nvme connect -t rdma"), as blktests runs them over siw.
# The host writes MIB MiB of random data with direct I/O, reads it back
# and compares, reads the whole 64 MiB 8 times sequentially for a figure
# (E2E-FIGURE nvme-read), disconnects; the target then tears its
# configfs down and rnic.ko is unloaded with a clean kernel log.
#
# Arguments: modes (default: all of them, one after the other):
#   loop      one rnic guest, target and host on its own address
#   srq       as loop, nvmet-rdma with use_srq=1: its receives come from
#             shared receive queues, which must exist on rnic0 meanwhile
#   rnic      two rnic guests, target on one, host on the other
#   fault     as rnic, the host's device with fault-drop-after (4 MiB): the
#             host must reconnect (reconnect delay 1 s), again and again,
#             and the data still match (no read figure)
#   rnic-siw  rnic host, siw target (siw on slirp, as rdma-rnic-siw.sh)
#   siw-rnic  siw host, rnic target
#   siw       two siw guests: the reference figure for "rnic"
# E2E_NVME_MIB: the data checked (default 8); E2E_NVME_QEMU_ARGS: more
# QEMU options for every guest (-d guest_errors, -trace ...); E2E_NAME:
# what the guests, their initramfs and logs are named after (nvmeof).
. "$(dirname "$0")/lib/e2e.sh"

mib=${E2E_NVME_MIB:-8}
name=${E2E_NAME:-nvmeof}
e2e_prep
e2e_librnic_build

# The guest's test, for rnic and siw guests alike: e2e.role is target,
# host or both; e2e.dev rnic or siw; e2e.ip the guest's own address
# (with its prefix length), e2e.peer the target's; e2e.port the NVMe
# port, the next one for the host's "done" (one rping).
nvme=(-m nvmet-rdma -m nvme-rdma -m brd /usr/sbin/nvme /usr/bin/rping)
guest_test() {
    cat <<'GUEST'
role=$(e2e_arg role)
ip=$(e2e_arg ip)
me=${ip%/*}
peer=$(e2e_arg peer)
port=$(e2e_arg port)
if [ "$(e2e_arg dev)" = rnic ]; then
    e2e_rnic_up "$ip" || exit
else
    e2e_siw_up "$me" || exit
fi

host() {
    # shellcheck disable=SC2046
    e2e_retry nvme-connect 60 e2e_nvme_connect "$peer" "$port" \
        $(e2e_arg nvmeopts | tr _ ' ') || return
    nvme list
    e2e_check nvme-io e2e_nvme_io "$(e2e_arg mib)"
    [ -z "$(e2e_arg srq)" ] ||
        e2e_check nvmet-srq sh -c 'rdma res show srq | grep rnic0'
    if [ -n "$(e2e_arg fault)" ]; then
        e2e_check nvme-reconnected sh -c 'dmesg | grep "Successfully reconnected"'
    else
        e2e_check nvme-read-rate e2e_nvme_read_rate 64 8
    fi
    e2e_check nvme-disconnect nvme disconnect -n "$E2E_NQN"
}

# The target's module parameter, before e2e_nvmet_config loads it.
[ -z "$(e2e_arg srq)" ] || e2e_check nvmet-use-srq modprobe nvmet-rdma use_srq=1
case $role in
both)
    e2e_check nvmet-config e2e_nvmet_config "$me" "$port" && host
    e2e_check nvmet-teardown e2e_nvmet_teardown ;;
target)
    e2e_check nvmet-config e2e_nvmet_config "$me" "$port"
    echo NVMET-READY
    e2e_check host-done timeout 900 rping -s -a "$me" -p $((port + 1)) -C 1
    e2e_check nvmet-teardown e2e_nvmet_teardown ;;
host)
    host
    e2e_retry host-done 60 timeout 30 rping -c -a "$peer" -p $((port + 1)) -C 1 ;;
esac
dmesg | grep -E 'nvme|rdma' | tail -n 20
[ "$(e2e_arg dev)" != rnic ] || e2e_rnic_unload_clean
GUEST
}
guest_test | e2e_rnic_verbs_initramfs "$E2E_OUT/$name-rnic.cpio.gz" "${nvme[@]}"
guest_test | e2e_siw_initramfs "$E2E_OUT/$name-siw.cpio.gz" "${nvme[@]}"

# e2e_guest_start for this test: NAME DEV(rnic|siw) "E2E ARGS" QEMU-ARGS...
guest() {
    local g=$1 kind=$2 a=$3
    shift 3
    # shellcheck disable=SC2086
    e2e_guest_start "$g" "$E2E_OUT/$name-$kind.cpio.gz" \
        "e2e.dev=$kind e2e.mib=$mib e2e.${a// / e2e.}" "$@" \
        ${E2E_NVME_QEMU_ARGS:-}
}

run_mode() {
    local m=$1 rc=0 p tgt host fwd sock fig a
    local nic=virtio-net-pci,netdev=n0,romfile=
    # The NVMe port P and P+1 (the host's "done" rping): the first two of
    # the rnic pair's block (e2e_rnic_pair), or two free ports that an
    # rnic facing siw allows and nothing else.
    case $m in
    loop | srq | rnic | fault) e2e_rnic_pair; p=$port ;;
    *) p=$(e2e_free_ports 2) ;;
    esac
    tgt=$name-$m-target host=$name-$m-host
    case $m in
    loop | srq)
        a="role=both ip=$net.1/24 peer=$net.1 port=$p"
        [ "$m" = loop ] || a="$a srq=1"
        guest "$name-$m" rnic "$a" \
            $rnic_io -device "$dev"
        e2e_guest_wait "$name-$m" || rc=1 ;;
    rnic | fault)
        guest "$tgt" rnic "role=target ip=$net.1/24 peer=$net.1 port=$p" \
            $rnic_io -device "$dev"
        if [ "$m" = fault ]; then
            guest "$host" rnic "role=host ip=$net.2/24 peer=$net.1 port=$p fault=1 nvmeopts=--reconnect-delay=1_--ctrl-loss-tmo=120" \
                $rnic_io -device "$dev,fault-drop-after=4194304"
        else
            guest "$host" rnic "role=host ip=$net.2/24 peer=$net.1 port=$p" \
                $rnic_io -device "$dev"
        fi ;;
    rnic-siw)
        # rnic host: 10.0.2.15 -> addr-map 127.0.2.15 -> slirp -> siw.
        fwd="hostfwd=tcp:127.0.2.15:$p-10.0.2.15:$p"
        fwd="$fwd,hostfwd=tcp:127.0.2.15:$((p + 1))-10.0.2.15:$((p + 1))"
        guest "$tgt" siw "role=target ip=10.0.2.15/24 port=$p" \
            -netdev "user,id=n0,$fwd" -device "$nic"
        # slirp accepts before the guest listens: wait for the target.
        e2e_wait_marker "$tgt" NVMET-READY
        guest "$host" rnic "role=host ip=10.0.0.1/16 peer=10.0.2.15 port=$p" \
            -device "rnic,id=rnic0,peer-allow=127.0.2.15:$p-$((p + 1))"
        ;;
    siw-rnic)
        # siw host: 10.0.2.2 (slirp) -> 127.0.0.1 -> addr-map 10.0.0.1.
        guest "$tgt" rnic "role=target ip=10.0.0.1/16 port=$p" \
            -device "rnic,id=rnic0,listen-allow=127.0.0.1:$p-$((p + 1))"
        e2e_wait_marker "$tgt" NVMET-READY
        guest "$host" siw "role=host ip=10.0.2.15/24 peer=10.0.2.2 port=$p" \
            -netdev user,id=n0 -device "$nic" ;;
    siw)
        sock=$(e2e_free_port)
        guest "$tgt" siw "role=target ip=10.0.0.1/24 port=$p" \
            -netdev "socket,id=n0,listen=127.0.0.1:$sock" \
            -device "$nic,mac=52:54:00:e2:e0:01"
        e2e_wait_listen "$sock"
        guest "$host" siw "role=host ip=10.0.0.2/24 peer=10.0.0.1 port=$p" \
            -netdev "socket,id=n0,connect=127.0.0.1:$sock" \
            -device "$nic,mac=52:54:00:e2:e0:02" ;;
    *) e2e_die "no mode $m" ;;
    esac
    if [ "$m" != loop ] && [ "$m" != srq ]; then
        e2e_guest_wait "$host" || rc=1
        e2e_guest_wait "$tgt" || rc=1
        host=$E2E_LOGS/$host.log
    else
        host=$E2E_LOGS/$name-$m.log
    fi
    fig=$(tr -d '\r' <"$host" | sed -n 's/^E2E-FIGURE nvme-read //p')
    echo "mode $m: $([ $rc -eq 0 ] && echo PASS || echo FAIL)${fig:+, nvme-read $fig}"
    return $rc
}

modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(loop srq rnic fault rnic-siw siw-rnic siw)
rc=0
for m in "${modes[@]}"; do
    run_mode "$m" || rc=1
done
e2e_result "$name ${modes[*]}" "$rc"
