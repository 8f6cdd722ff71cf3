#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fio over NVMe over Fabrics between two guests: nvmeof.sh's target (a
# 64 MiB RAM disk exported by nvmet-rdma) in one, its host (nvme connect
# -t rdma) in the other, which runs fio from Debian's package with the
# jobs of nvmeof-fio.fio on the namespace: 4 KiB random reads and writes
# at queue depth 1 and 32, 128 KiB sequential reads and writes, each
# E2E_FIO_DUR seconds (default 10); then, twice, fio zeroes the area it
# uses, writes it, reads it back and checks it (CRC32c), in the same run.  fio's JSON
# goes to the host's console between E2E-FIO-BEGIN and E2E-FIO-END;
# lib/fio_figures.py prints the figures from it and fails the scenario
# when fio found bad data or a job is missing.  The figures are make
# bench-guest's nvme-* rows.
#
# Arguments: the pairs, one after the other (default both):
#   rnic   two rnic guests (as nvmeof.sh rnic)
#   siw    two siw guests over virtio-net (as nvmeof.sh siw): the reference
# E2E_FIO_MIB: the part of the namespace fio uses (default 32); E2E_NAME:
# what the guests, their initramfs and logs are named after (nvmeof-fio;
# a pair's guests are NAME-KIND-target and NAME-KIND-host).
. "$(dirname "$0")/lib/e2e.sh"

dur=${E2E_FIO_DUR:-10}
mib=${E2E_FIO_MIB:-32}
name=${E2E_NAME:-nvmeof-fio}
# Boot and connect, then ten jobs: six of dur seconds, four of the check
# (each writes mib MiB; two read them back), fio's start between them.
t=$((240 + 6 * dur + 10 * 15))
[ "$E2E_TIMEOUT" -ge "$t" ] || E2E_TIMEOUT=$t
e2e_prep

# The guest's test: e2e.role target or host, e2e.dev rnic or siw, e2e.ip
# the guest's own address (with its prefix length), e2e.peer the
# target's, e2e.port the NVMe port, the next one for the host's "done"
# (one rping).
files=(-m nvmet-rdma -m nvme-rdma -m brd /usr/sbin/nvme /usr/bin/rping
    /usr/bin/fio -a "$E2E_TOP/tests/e2e/nvmeof-fio.fio=/etc/e2e/nvmeof-fio.fio")
guest_test() {
    cat <<'GUEST'
ip=$(e2e_arg ip)
me=${ip%/*}
peer=$(e2e_arg peer)
port=$(e2e_arg port)
if [ "$(e2e_arg dev)" = rnic ]; then
    e2e_rnic_up "$ip" || exit
else
    e2e_siw_up "$me" || exit
fi

if [ "$(e2e_arg role)" = target ]; then
    e2e_check nvmet-config e2e_nvmet_config "$me" "$port"
    echo NVMET-READY
    e2e_check host-done timeout 900 rping -s -a "$me" -p $((port + 1)) -C 1
    e2e_check nvmet-teardown e2e_nvmet_teardown
else
    if e2e_retry nvme-connect 60 e2e_nvme_connect "$peer" "$port"; then
        nvme list
        # The job file's variables.
        export FIO_DEV=/dev/nvme0n1 FIO_DUR="$(e2e_arg dur)" \
            FIO_SIZE="$(e2e_arg mib)M"
        e2e_check fio fio --eta=never --output-format=json \
            --output=/tmp/fio.json /etc/e2e/nvmeof-fio.fio
        echo E2E-FIO-BEGIN
        cat /tmp/fio.json
        echo E2E-FIO-END
        e2e_check nvme-disconnect nvme disconnect -n "$E2E_NQN"
    fi
    e2e_retry host-done 60 timeout 30 rping -c -a "$peer" -p $((port + 1)) -C 1
fi
dmesg | grep -E 'nvme|rdma' | tail -n 20
[ "$(e2e_arg dev)" != rnic ] || e2e_rnic_unload_clean
GUEST
}

# e2e_guest_start for this test: NAME KIND "E2E ARGS" QEMU-ARGS...
guest() {
    local g=$1 kind=$2 a=$3
    shift 3
    e2e_guest_start "$g" "$E2E_OUT/$name-$kind.cpio.gz" \
        "e2e.dev=$kind e2e.mib=$mib e2e.dur=$dur e2e.${a// / e2e.}" "$@"
}

# run_pair runs as "run_pair || rc=1", where set -e does not act: an
# initramfs whose build failed (e2e_die ends only the pipeline's subshell)
# must stop the run, not leave the guests an older run's.
run_pair() {
    local kind=$1 rc=0 p sock tgt=$name-$1-target host=$name-$1-host
    local nic=virtio-net-pci,netdev=n0,romfile=
    case $kind in
    rnic)
        e2e_librnic_build
        guest_test | e2e_rnic_verbs_initramfs "$E2E_OUT/$name-rnic.cpio.gz" "${files[@]}" ||
            e2e_die "the rnic guests' initramfs did not build"
        # The NVMe port and the "done" rping's: the first two of the
        # pair's block.  net, port, dev and rnic_io are e2e_rnic_pair's.
        e2e_rnic_pair
        # shellcheck disable=SC2086,SC2154
        guest "$tgt" rnic "role=target ip=$net.1/24 peer=$net.1 port=$port" \
            $rnic_io -device "$dev"
        # shellcheck disable=SC2086,SC2154
        guest "$host" rnic "role=host ip=$net.2/24 peer=$net.1 port=$port" \
            $rnic_io -device "$dev" ;;
    siw)
        guest_test | e2e_siw_initramfs "$E2E_OUT/$name-siw.cpio.gz" "${files[@]}" ||
            e2e_die "the siw guests' initramfs did not build"
        p=$(e2e_free_ports 2) sock=$(e2e_free_port)
        guest "$tgt" siw "role=target ip=10.0.0.1/24 port=$p" \
            -netdev "socket,id=n0,listen=127.0.0.1:$sock" \
            -device "$nic,mac=52:54:00:e2:e0:01"
        e2e_wait_listen "$sock"
        guest "$host" siw "role=host ip=10.0.0.2/24 peer=10.0.0.1 port=$p" \
            -netdev "socket,id=n0,connect=127.0.0.1:$sock" \
            -device "$nic,mac=52:54:00:e2:e0:02" ;;
    *) e2e_die "no pair $kind (rnic or siw)" ;;
    esac
    e2e_guest_wait "$host" || rc=1
    e2e_guest_wait "$tgt" || rc=1
    python3 "$E2E_LIB/fio_figures.py" "$E2E_LOGS/$host.log" "$mib" |
        sed "s/^/$kind: /" || rc=1
    echo "pair $kind: $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
    return $rc
}

kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(rnic siw)
rc=0
for k in "${kinds[@]}"; do
    run_pair "$k" || rc=1
done
e2e_result "$name ${kinds[*]}" "$rc"
