# SPDX-License-Identifier: GPL-2.0-or-later
#
# An ordinary Debian 12 VM's disk (sourced): made by mmdebstrap from the
# packages apt has, systemd as init, Debian's kernel with its headers and
# dkms, and rdma-core's tools from Debian.  Nothing of this repository is
# in it but one systemd unit that, when the kernel command line asks for a
# test (e2e.role=), mounts a second disk (label rnic-e2e) and runs its run.sh
# with its output on the serial console, where the host reads the
# E2E-PASS/FAIL/DONE markers (lib/guest.sh).
#
# The image is a raw ext4 file made with mke2fs -d (no loop device, no
# mount), cached under $E2E_OUT/vm: it is rebuilt only when the package
# list or this file changes (its stamp holds both), never because apt's
# lists moved on, so a second run boots the same image.  Guests boot it
# read-only (snapshot=on) so the cached base stays clean.
#
#   e2e_vm_image     builds or finds the image; sets E2E_VM_IMG (the disk),
#                    E2E_VM_KERNEL and E2E_VM_INITRD (the image's own
#                    vmlinuz and initrd, for QEMU's direct kernel boot)
#   e2e_vm_data_disk DIR OUT   a small ext4 image of DIR (the second disk)

E2E_VM_SUITE=bookworm
# What an "own VM" test uses (ping for the address the RDMA port shares
# with the VM's NIC), plus what it needs to boot
# (systemd-sysv, udev, and dbus, which systemd recommends).  mmdebstrap
# installs no Recommends: everything the VM uses is named here.
E2E_VM_PKGS=(systemd-sysv udev dbus kmod linux-image-amd64
             linux-headers-amd64 dkms rdma-core ibverbs-utils rdmacm-utils
             perftest iproute2 iputils-ping)
# Room left free in the root file system: apt unpacking the two packages,
# DKMS building rnic.ko (about 30 MB of objects), the journal.
E2E_VM_FREE_MIB=1024
E2E_VM_DIR=$E2E_OUT/vm

# The host apt's sources for the suite and its updates and security
# suites, as one-line entries: the mirror is read from apt, never written
# down (apt-cache policy shows the sources in whatever format they are
# configured).
e2e_vm_sources() {
    apt-cache policy | awk -v s="$E2E_VM_SUITE" '
        $2 ~ /:\/\// && $NF == "Packages" {
            split($3, sc, "/")
            if (sc[1] == s || sc[1] == s "-updates" || sc[1] == s "-security")
                print "deb " $2 " " sc[1] " " sc[2]
        }' | sort -u
}

# Host apt settings the guest's apt must share to read the same mirror (a
# snapshot mirror's Release files are past their Valid-Until).
e2e_vm_aptopts() {
    local k v
    for k in Acquire::Check-Valid-Until Acquire::Check-Date; do
        v=$(apt-config dump "$k" | sed -n "s/^$k \"\\(.*\\)\";$/\\1/p")
        [ -z "$v" ] || echo "--aptopt=$k \"$v\""
    done
}

# The unit the image carries: on a test boot, run the second disk's
# run.sh, its output on the serial console (not the journal, where the
# host cannot read it).
e2e_vm_unit() {
    cat <<'EOF'
[Unit]
Description=rnic e2e test from the second disk
ConditionKernelCommandLine=e2e.role
Requires=dev-disk-by\x2dlabel-rnic\x2de2e.device
After=dev-disk-by\x2dlabel-rnic\x2de2e.device local-fs.target

[Service]
Type=oneshot
ExecStart=/bin/sh -c 'mkdir -p /run/e2e && mount -o ro LABEL=rnic-e2e /run/e2e && exec sh /run/e2e/run.sh'
StandardOutput=tty
StandardError=inherit
TTYPath=/dev/ttyS0

[Install]
WantedBy=multi-user.target
EOF
}

# The configuration an installer would have written: the root file
# system, a host name, DHCP on the virtio NIC (-nic user), and the unit.
# The serial getty is masked: its prompt would land among the markers.
e2e_vm_configure() {
    local root=$1
    echo 'LABEL=rnic-vm / ext4 rw,errors=remount-ro 0 1' >"$root/etc/fstab"
    echo rnic-vm >"$root/etc/hostname"
    printf '[Match]\nName=en*\n\n[Network]\nDHCP=yes\n' \
        >"$root/etc/systemd/network/20-wired.network"
    e2e_vm_unit >"$root/etc/systemd/system/rnic-e2e.service"
    chroot "$root" systemctl enable -q systemd-networkd rnic-e2e.service
    chroot "$root" systemctl mask -q serial-getty@ttyS0.service
}

# mmdebstrap mounts /proc and more inside the tree while it installs, and
# where the host calls an unmount busy it says so and leaves the mount:
# the tree must hold none before it is measured, copied and removed.
e2e_vm_unmount() {
    local m
    awk -v r="$1/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r |
        while read -r m; do
            umount -l "$m" || e2e_die "cannot unmount $m"
        done
}

e2e_vm_stamp() {
    { echo "$E2E_VM_SUITE ${E2E_VM_PKGS[*]} free=$E2E_VM_FREE_MIB"
      sha256sum <"$E2E_LIB/vm-image.sh"; } | sha256sum | cut -d' ' -f1
}

e2e_vm_image() {
    local stamp root size sources=() opts=()
    E2E_VM_IMG=$E2E_VM_DIR/root.img
    E2E_VM_KERNEL=$E2E_VM_DIR/vmlinuz
    E2E_VM_INITRD=$E2E_VM_DIR/initrd.img
    stamp=$(e2e_vm_stamp)
    if [ "$(cat "$E2E_VM_DIR/stamp" 2>/dev/null)" = "$stamp" ] &&
       [ -f "$E2E_VM_IMG" ] && [ -f "$E2E_VM_KERNEL" ] && [ -f "$E2E_VM_INITRD" ]; then
        return 0
    fi
    e2e_log "building the VM image (mmdebstrap $E2E_VM_SUITE: ${E2E_VM_PKGS[*]})"
    e2e_apt_need mmdebstrap e2fsprogs
    mapfile -t sources < <(e2e_vm_sources)
    [ ${#sources[@]} -gt 0 ] ||
        e2e_die "apt has no $E2E_VM_SUITE source; run apt-get update"
    mapfile -t opts < <(e2e_vm_aptopts)
    rm -rf "$E2E_VM_DIR"
    root=$E2E_VM_DIR/root
    mkdir -p "$root"
    mmdebstrap --mode=root --variant=apt --format=directory \
        --include="${E2E_VM_PKGS[*]}" ${opts[@]+"${opts[@]}"} \
        "$E2E_VM_SUITE" "$root" "${sources[@]}" >&2 ||
        e2e_die "mmdebstrap failed"
    e2e_vm_unmount "$root"
    e2e_vm_configure "$root"
    # The image's own kernel and initrd (initramfs-tools made it inside),
    # through the links Debian keeps at the top of the tree.
    cp -L "$root/vmlinuz" "$E2E_VM_KERNEL" && cp -L "$root/initrd.img" "$E2E_VM_INITRD" ||
        e2e_die "no /vmlinuz or /initrd.img in the image"
    size=$(( $(du -sm "$root" | cut -f1) + E2E_VM_FREE_MIB ))
    mke2fs -q -t ext4 -L rnic-vm -d "$root" "$E2E_VM_IMG" "${size}M" ||
        e2e_die "mke2fs -d $root failed"
    rm -rf "$root"
    echo "$stamp" >"$E2E_VM_DIR/stamp"
}

# e2e_vm_data_disk DIR OUT: the second disk, DIR's files on ext4, sized
# to them (mke2fs wants some room for its own metadata).
e2e_vm_data_disk() {
    local size
    size=$(( $(du -sm "$1" | cut -f1) + 16 ))
    rm -f "$2"
    mke2fs -q -t ext4 -L rnic-e2e -d "$1" "$2" "${size}M" ||
        e2e_die "mke2fs -d $1 failed"
}
