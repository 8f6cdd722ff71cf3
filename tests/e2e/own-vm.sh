#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Own VM: two ordinary Debian 12 VMs, each with -device rnic, get rnic the
# way a user's VM would.  The disk is made from apt by mmdebstrap (systemd,
# Debian's kernel and headers, dkms, rdma-core, perftest: lib/vm-image.sh)
# and booted on virtio-blk with -nic user; the only things of this
# repository that reach the VMs are the two packages of make guest-debs
# (rnic-dkms, librnic) and the test script, on a second small disk.  In
# each VM apt installs the packages, DKMS compiles rnic.ko for the VM's
# kernel, modprobe rnic; the RDMA address is that of a NIC with the rnic's
# MAC (its companion; systemd-networkd gives it the address); then between
# the two VMs: ping, rdma link, ibv_devinfo, rping -V and ib_write_bw -R,
# all from Debian's rdma-core and perftest (lib/own-vm-guest.sh).  Prints where the time went: image, packages,
# boot, DKMS in the guest, tests.
# Costs (TCG, 2 cores, measured): about 3 minutes with the image cached
# (boot 17-22 s, apt with the DKMS compile 2-2.5 min, tests 5-17 s), plus
# 1.5-2.5 minutes when the image is built; each VM has E2E_OWN_VM_MEM MiB;
# the image is a 2 GiB sparse file under build/e2e/vm (1 GiB used).  Not
# part of make check for that (CI's budget); make e2e runs it.
# E2E_OWN_VM_BREAK=no-provider: the VMs install rnic-dkms only, and the
# scenario must fail (ibv_devinfo finds no device; the tests stop there).
. "$(dirname "$0")/lib/e2e.sh"
. "$E2E_LIB/vm-image.sh"

name=own-vm
# The VM runs gcc for DKMS beside apt and systemd's services: 1.5 GiB
# leaves it room (less was not tried).
E2E_OWN_VM_MEM=${E2E_OWN_VM_MEM:-1536}
# Boot, apt and the compile take minutes under TCG (see Costs above).
# shellcheck disable=SC2034  # E2E_TIMEOUT, E2E_VMLINUZ: for e2e_guest_start
E2E_TIMEOUT=${E2E_OWN_VM_TIMEOUT:-1500}
data=$E2E_OUT/$name

# own_took NAME T0: an "own-vm: NAME N s" line for the time since T0.
own_took() {
    echo "$name: $1 $(($(date +%s) - $2)) s" >&2
}

# The second disk: the packages, the guest's test and the marker helpers.
own_data_disk() {
    local debs
    mapfile -t debs < <(bash "$E2E_TOP/guest-driver/packaging/build-debs.sh")
    [ ${#debs[@]} -eq 2 ] || e2e_die "make guest-debs made ${#debs[@]} packages, not 2"
    rm -rf "$data/disk"
    mkdir -p "$data/disk"
    cp "${debs[@]}" "$data/disk/"
    cp "$E2E_LIB/own-vm-guest.sh" "$data/disk/run.sh"
    cp "$E2E_LIB/guest-lib.sh" "$data/disk/"
    e2e_vm_data_disk "$data/disk" "$data/disk.img"
}

# own_vm ROLE ADDR PEER LINK MAC: one VM in the background.  The image is
# opened with snapshot=on, its writes going to a temporary overlay, so both
# VMs share the cached image and leave it as it was.  Besides -nic user it
# has a second NIC, on a -netdev socket LINK between the two VMs, whose
# MAC is its rnic's: the port's companion, so the RDMA address is an
# address of that NIC and carries the VMs' own TCP too.
own_vm() {
    # shellcheck disable=SC2154,SC2086  # set by e2e_rnic_pair; rnic_io: words
    e2e_guest_start "$name-$1" "$E2E_VM_INITRD" \
        "root=LABEL=rnic-vm rw e2e.role=$1 e2e.ip=$2 e2e.peer=$3 e2e.port=$port e2e.mac=$5 e2e.perf=ib_write_bw${E2E_OWN_VM_BREAK:+ e2e.break=$E2E_OWN_VM_BREAK}" \
        -m "$E2E_OWN_VM_MEM" \
        -drive "file=$E2E_VM_IMG,if=virtio,format=raw,snapshot=on" \
        -drive "file=$data/disk.img,if=virtio,format=raw,readonly=on" \
        -nic user,model=virtio-net-pci \
        -netdev "socket,id=l0,$4" -device "virtio-net-pci,netdev=l0,mac=$5" \
        $rnic_io -device "$dev,mac=$5"
}

# The guest's E2E-TIME NAME SECONDS lines, as "NAME N s" for the summary.
own_guest_times() {
    tr -d '\r' <"$E2E_LOGS/$name-$1.log" |
        sed -n 's/^E2E-TIME \([a-z-]*\) \([0-9?]*\).*/\1 \2 s/p' | paste -sd, - |
        sed 's/,/, /g'
}

t=$(date +%s)
e2e_vm_image
own_took "image (built or cached: $E2E_VM_DIR)" "$t"
t=$(date +%s)
mkdir -p "$data"
own_data_disk
own_took "packages and second disk" "$t"

e2e_rnic_pair
# shellcheck disable=SC2034
E2E_VMLINUZ=$E2E_VM_KERNEL
t=$(date +%s)
# shellcheck disable=SC2154  # net: e2e_rnic_pair
link=$(e2e_free_port)
mac=52:54:00:e2:$((RANDOM % 90 + 10)):0
own_vm server "$net.1" "$net.2" "listen=127.0.0.1:$link" "${mac}1"
e2e_wait_listen "$link"
own_vm client "$net.2" "$net.1" "connect=127.0.0.1:$link" "${mac}2"
rc=0
e2e_guest_wait "$name-client" || rc=1
e2e_guest_wait "$name-server" || rc=1
own_took "VMs (boot, DKMS, tests)" "$t"
for r in server client; do
    echo "$name: $r: $(own_guest_times "$r")" >&2
done
e2e_result "$name" "$rc"
