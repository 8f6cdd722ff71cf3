#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# NFS over RDMA between two rnic guests (make e2e): the kernel's nfsd with
# an RDMA listener (rpc.nfsd --rdma on NFS over RDMA's port, 20049, which
# the devices allow besides the scenario's own), NFSv4 only, so neither
# rpcbind nor statd is needed (rpc.mountd answers the export upcalls);
# the client mounts with proto=rdma (mount.nfs from nfs-common), writes a
# file of random data, unmounts, mounts again, reads it back and compares.
. "$(dirname "$0")/lib/e2e.sh"

name=${E2E_NAME:-nfs-rdma}
e2e_prep
e2e_librnic_build

initrd=$E2E_OUT/$name.cpio.gz
e2e_rnic_verbs_initramfs "$initrd" -m nfsd -m nfsv4 -m rpcrdma \
    /usr/sbin/rpc.nfsd /usr/sbin/rpc.mountd /usr/sbin/exportfs \
    /sbin/mount.nfs /etc/netconfig /etc/services /usr/bin/rping <<'GUEST'
role=$(e2e_arg role)
me=$(e2e_arg ip)
peer=$(e2e_arg peer)
port=$(e2e_arg port)
nfsport=$(e2e_arg nfsport)

e2e_rnic_up "$me" || exit
mkdir -p /var/lib/nfs/v4recovery /var/lib/nfs/rpc_pipefs /run /mnt

nfs_server() {
    modprobe nfsd && modprobe rpcrdma || return 1
    mkdir -p /export && chmod 0777 /export
    mount -t nfsd nfsd /proc/fs/nfsd || return 1
    echo "/export *(rw,no_root_squash,insecure,fsid=0,no_subtree_check)" >/etc/exports
    touch /var/lib/nfs/etab /var/lib/nfs/rmtab
    exportfs -ra || return 1
    rpc.mountd -N 2 -N 3 --no-udp || return 1
    # The client's first OPEN waits out the grace period: keep it short.
    echo 10 >/proc/fs/nfsd/nfsv4leasetime
    echo 10 >/proc/fs/nfsd/nfsv4gracetime
    rpc.nfsd -N 3 --no-udp --rdma="$nfsport" 4 || return 1
    cat /proc/fs/nfsd/portlist
}

nfs_mount() {
    mount.nfs "$peer:/" /mnt -o "vers=4.2,proto=rdma,port=$nfsport"
}

nfs_io() {
    dd if=/dev/urandom of=/tmp/pattern bs=1M count=8 2>/dev/null &&
        cp /tmp/pattern /mnt/data && sync && umount /mnt &&
        nfs_mount && cmp /tmp/pattern /mnt/data && umount /mnt
}

if [ "$role" = server ]; then
    e2e_check nfs-server nfs_server
    echo NFS-READY
    e2e_check client-done timeout 600 rping -s -a "$me" -p "$port" -C 1
    e2e_check server-file test -s /export/data
    # nfsd's RDMA listener and transports go before the device does.
    e2e_check nfs-stop sh -c 'rpc.nfsd 0 && exportfs -ua' 
else
    modprobe nfsv4 && modprobe rpcrdma
    e2e_retry nfs-mount 60 nfs_mount
    e2e_check nfs-over-rdma grep ' /mnt nfs4 .*proto=rdma' /proc/mounts
    e2e_check nfs-io nfs_io
    e2e_retry client-done 60 timeout 30 rping -c -a "$peer" -p "$port" -C 1
fi
dmesg | grep -iE 'nfs|rpcrdma|svcrdma' | tail -n 20
e2e_rnic_unload_clean
GUEST

nfsport=20049
e2e_rnic_pair "$nfsport"
args="e2e.port=$port e2e.nfsport=$nfsport"
# shellcheck disable=SC2086
e2e_guest_start "$name-server" "$initrd" \
    "e2e.role=server e2e.ip=$net.1 e2e.peer=$net.2 $args" $rnic_io -device "$dev"
# shellcheck disable=SC2086
e2e_guest_start "$name-client" "$initrd" \
    "e2e.role=client e2e.ip=$net.2 e2e.peer=$net.1 $args" $rnic_io -device "$dev"
rc=0
e2e_guest_wait "$name-client" || rc=1
e2e_guest_wait "$name-server" || rc=1
e2e_result "$name" "$rc"
