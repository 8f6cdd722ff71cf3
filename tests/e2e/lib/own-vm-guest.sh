#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The own-VM test, run inside an ordinary Debian VM (tests/e2e/own-vm.sh)
# by the image's rnic-e2e.service from the second disk, which holds this
# file as run.sh, guest-lib.sh (the markers) and the two packages.  It
# does what a user would: install the packages with apt (DKMS compiles
# rnic.ko here, for this kernel), give the RDMA address to the NIC with
# the rnic's MAC, modprobe rnic, then ping and rdma-core's and perftest's
# own tools from Debian against the other VM.
#   e2e.role=server|client  e2e.ip=ADDR  e2e.peer=ADDR  e2e.port=PORT
#   e2e.mac=MAC             the rnic's, and its companion NIC's
#   e2e.perf=ib_write_bw    (guest-lib.sh's e2e_perf_all)
#   e2e.break=no-provider   install rnic-dkms only: the test must fail
# Ports: rping on PORT, perftest from PORT+1 (its end rping after it).
# E2E-TIME NAME SECONDS lines tell the host where the time went.

disk=$(dirname "$0")
. "$disk/guest-lib.sh"
trap e2e_finish EXIT
export PATH=/usr/sbin:/usr/bin:/sbin:/bin

# Seconds since the kernel started: the boot's share of the wall time.
# The first echo ends whatever the firmware left on the console's line.
echo
echo "E2E-READY $(uname -r)"
echo "E2E-TIME boot $(cut -d' ' -f1 /proc/uptime)"

role=$(e2e_arg role)
me=$(e2e_arg ip)
peer=$(e2e_arg peer)
port=$(e2e_arg port)

# Each line of standard input behind the seconds since boot, so that the
# DKMS compile's share of apt's time can be read from its output.
own_stamp() {
    local line
    while IFS= read -r line; do
        echo "$(cut -d' ' -f1 /proc/uptime) $line"
    done
}

# Whole seconds between the first lines matching BEGIN and END of a
# stamped log (own_stamp), or "?" when one is missing.
own_span() {
    local a b
    a=$(grep -m1 "$2" "$1" | cut -d' ' -f1)
    b=$(grep -m1 "$3" "$1" | cut -d' ' -f1)
    if [ -n "$a" ] && [ -n "$b" ]; then
        echo $((${b%.*} - ${a%.*}))
    else
        echo "?"
    fi
}

# The packages, with apt as a user would install local .debs; everything
# they depend on is in the image already (no network needed).  rnic-dkms's
# postinst compiles rnic.ko between its "building" and DKMS's "Installing
# to" lines.
own_install() {
    local debs t0 rc
    debs="$disk/rnic-dkms_*.deb"
    [ "$(e2e_arg break)" = no-provider ] || debs="$debs $disk/librnic_*.deb"
    t0=$(date +%s)
    # shellcheck disable=SC2086
    { DEBIAN_FRONTEND=noninteractive apt-get install -y $debs 2>&1
      echo "apt-status $?"; } | own_stamp >/tmp/apt.out
    rc=$(sed -n 's/^[0-9.]* apt-status //p' /tmp/apt.out)
    echo "E2E-TIME install $(($(date +%s) - t0))"
    echo "E2E-TIME dkms-build $(own_span /tmp/apt.out 'rnic-dkms: building' 'Installing to')"
    if [ "$rc" != 0 ]; then
        cat /tmp/apt.out /var/lib/dkms/rnic/*/build/make.log 2>/dev/null
        e2e_fail install "apt-get install exited with status $rc"
        return 1
    fi
    grep -i dkms /tmp/apt.out
    e2e_pass install
    # dkms itself prints "echo: write error: Broken pipe" on every call
    # (its own check for /proc): noise, not a failure.
    e2e_check dkms-installed sh -c "dkms status rnic | grep -q '$(uname -r).*: installed'"
}

# The RDMA address on the NIC with the rnic's MAC (e2e.mac), as a user
# configures it: a systemd-networkd file ahead of the image's DHCP one.
own_address() {
    mkdir -p /run/systemd/network
    printf '[Match]\nMACAddress=%s\n\n[Network]\nAddress=%s/24\n' \
        "$(e2e_arg mac)" "$me" >/run/systemd/network/10-rnic.network
    networkctl reload
}

# rdma link's line for the port, once it is ACTIVE (networkd sets the
# address in its own time); at most 60 s.
own_link_active() {
    local i
    for i in $(seq 60); do
        rdma link show "$ibdev/1" | grep -q 'state ACTIVE' && return 0
        sleep 1
    done
    return 1
}

# rnic.ko, then the RDMA stack's user-space access (rdma-core's udev
# rules load these for a new device too; asking again costs nothing).
# udev names the devices (rdma_rename, predictable netdev names), so
# their names are read back: ibdev from sysfs, netdev from rdma link.
own_up() {
    own_address
    e2e_check modprobe-rnic modprobe rnic || return 1
    udevadm settle
    modprobe rdma_ucm && modprobe ib_uverbs ||
        { e2e_fail modules "modprobe rdma_ucm ib_uverbs failed"; return 1; }
    ibdev=$(ls /sys/class/infiniband | head -n1)
    own_link_active
    rdma link show
    netdev=$(rdma link show "$ibdev/1" | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
    echo "rdma device: ${ibdev:-none}, netdev: ${netdev:-none}"
    e2e_check rdma-link-companion sh -c "rdma link show $ibdev/1 | grep -q 'state ACTIVE' &&
        grep -qix '$(e2e_arg mac)' /sys/class/net/$netdev/address &&
        ! grep -q rnic /sys/class/net/$netdev/device/uevent" || return 1
    e2e_retry ping 30 ping -c 2 -W 2 "$peer"
    ibv_devinfo -d "$ibdev" >/tmp/devinfo.out 2>&1
    cat /tmp/devinfo.out
    e2e_check ibv_devinfo sh -c "grep -q 'transport:[[:space:]]*iWARP' /tmp/devinfo.out &&
        grep -q 'state:[[:space:]]*PORT_ACTIVE' /tmp/devinfo.out"
}

# rping with -V: every ping's data checked by the client.
own_rping() {
    if [ "$role" = server ]; then
        e2e_check rping-server timeout 300 rping -s -a "$me" -p "$port" -C 10 -v -V
    else
        e2e_retry rping-client 60 timeout 30 rping -c -a "$peer" -p "$port" -C 10 -v -V ||
            return 1
        e2e_rping_count /tmp/rping-client.out 'ping data: rdma-ping-' rping-verified 10
    fi
}

# Removing rnic-dkms takes rnic.ko out of the kernel's tree again (its
# prerm: dkms remove), so modprobe no longer finds it.
own_remove() {
    DEBIAN_FRONTEND=noninteractive apt-get remove -y rnic-dkms >/tmp/remove.out 2>&1 ||
        { cat /tmp/remove.out; e2e_fail remove "apt-get remove rnic-dkms failed"; return 1; }
    e2e_check remove-dkms sh -c '! modinfo rnic >/dev/null 2>&1 && [ -z "$(dkms status rnic)" ]'
}

own_tests() {
    local t0
    t0=$(date +%s)
    own_rping
    if [ "$role" = server ]; then
        e2e_perf_all server "$me" $((port + 1))
    else
        e2e_perf_all client "$peer" $((port + 1))
    fi
    e2e_rnic_unload_clean
    own_remove
    echo "E2E-TIME tests $(($(date +%s) - t0))"
}

own_install && own_up && own_tests
