# SPDX-License-Identifier: GPL-2.0-or-later
#
# Guest side (busybox ash), sourced by every test's /init as
# /lib/e2e/guest-lib.sh.  The host reads the verdict from these markers on
# the serial console, so each is one line starting at column 0:
#   E2E-READY            the guest is up and the test starts
#   E2E-PASS name        a check passed
#   E2E-FAIL name: why   a check failed
#   E2E-DONE passed=N failed=N   the test ran to its end
# Anything else on the console is context for a human reading the log.

e2e_passed=0
e2e_failed=0

e2e_setup() {
    export PATH=/usr/sbin:/usr/bin:/sbin:/bin
    mount -t proc proc /proc
    mount -t sysfs sysfs /sys
    mount -t devtmpfs devtmpfs /dev
    mount -t tmpfs tmpfs /tmp
    ip link set lo up
    # Whatever happens below, end with a verdict and power off: /init
    # exiting would panic the kernel and hide the reason.
    trap e2e_finish EXIT
    echo "E2E-READY $(uname -r)"
}

# Value of e2e.NAME=VALUE on the kernel command line: how the host passes
# per-guest parameters (role, addresses, expected values).
e2e_arg() {
    tr ' ' '\n' </proc/cmdline | sed -n "s/^e2e\\.$1=//p"
}

e2e_pass() {
    e2e_passed=$((e2e_passed + 1))
    echo "E2E-PASS $1"
}

e2e_fail() {
    e2e_failed=$((e2e_failed + 1))
    echo "E2E-FAIL $1: $2"
}

# e2e_check NAME CMD...: runs CMD, its output on the console, and records
# the outcome under NAME.  Returns CMD's status so a test can stop early.
e2e_check() {
    local name=$1 rc
    shift
    "$@"
    rc=$?
    if [ $rc -eq 0 ]; then
        e2e_pass "$name"
    else
        e2e_fail "$name" "'$*' exited with status $rc"
    fi
    return $rc
}

e2e_finish() {
    trap - EXIT
    echo "E2E-DONE passed=$e2e_passed failed=$e2e_failed"
    sync
    poweroff -f
}

# e2e_tool NAME MIN CMD...: runs a test program whose checks print lines
# "PASS what" or "FAIL what" (rnic-tool).  Its output goes to the console
# and to /tmp/NAME.out; each such line becomes an E2E-PASS / E2E-FAIL
# marker.  It fails unless CMD exits 0 with at least MIN PASS lines.
e2e_tool() {
    local name=$1 min=$2
    shift 2
    "$@" >"/tmp/$name.out" 2>&1
    e2e_tool_judge "$name" "$min" $? "$*"
}

# e2e_tool_judge NAME MIN STATUS [CMD]: the same for a program that ran
# in the background with its output in /tmp/NAME.out.
e2e_tool_judge() {
    local name=$1 min=$2 rc=$3 n=0 line
    while IFS= read -r line; do
        case $line in
        "PASS "*) e2e_pass "$name: ${line#PASS }"; n=$((n + 1)) ;;
        "FAIL "*) e2e_fail "$name" "${line#FAIL }" ;;
        *) echo "$line" ;;
        esac
    done <"/tmp/$name.out"
    [ "$rc" -eq 0 ] || e2e_fail "$name" "'${4:-$name}' exited with status $rc"
    [ $n -ge "$min" ] || e2e_fail "$name" "$n checks passed, expected $min"
    [ "$rc" -eq 0 ] && [ $n -ge "$min" ]
}

# siw guests: eth0 with ADDR/24, then a siw device on it.
e2e_siw_up() {
    modprobe virtio_pci && modprobe virtio_net && modprobe siw &&
        modprobe rdma_ucm || { e2e_fail modules "modprobe failed"; return 1; }
    ip addr add "$1/24" dev eth0 && ip link set eth0 up
    e2e_check siw-link rdma link add siw0 type siw netdev eth0
}
