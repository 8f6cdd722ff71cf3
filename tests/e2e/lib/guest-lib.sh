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
