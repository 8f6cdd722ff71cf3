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
# "PASS what" or "FAIL what" (verbs-ops).  Its output goes to the console
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

# rnic guests on the RDMA stack: rnic.ko, rdma_cm and uverbs, the port's
# netdev up with ADDR[/LEN] (default /24); the port must come up ACTIVE.
e2e_rnic_up() {
    local a=$1
    case $a in */*) ;; *) a=$a/24 ;; esac
    modprobe rnic && modprobe rdma_ucm && modprobe ib_uverbs ||
        { e2e_fail modules "modprobe failed"; return 1; }
    ip link set rnic0 up && ip addr add "$a" dev rnic0
    rdma link show
    e2e_check rdma-link-active sh -c 'rdma link show rnic0/1 | grep -q "state ACTIVE .*netdev rnic0"'
    ! grep -q 'intel_iommu=on' /proc/cmdline || e2e_rnic_iommu_check
}

# Booted with intel_iommu=on: rnic's DMA goes through the IOMMU, in
# strict mode when iommu.strict=1 (every unmap invalidates at once).
e2e_rnic_iommu_check() {
    local grp=/sys/class/infiniband/rnic0/device/iommu_group want=DMA
    grep -q 'iommu.strict=1' /proc/cmdline || want=DMA-FQ
    e2e_check rnic-iommu-group test -e "$grp"
    e2e_check rnic-iommu-domain sh -c "cat $grp/type; grep -qx $want $grp/type"
}

# e2e_retry NAME TRIES CMD...: runs CMD until it succeeds (a server in the
# other guest may not be up yet), its last output in /tmp/NAME.out.
e2e_retry() {
    local name=$1 tries=$2 i=0
    shift 2
    until "$@" >"/tmp/$name.out" 2>&1; do
        # Not the server missing: show what went wrong.
        grep -q 'RDMA_CM_EVENT_REJECTED' "/tmp/$name.out" ||
            { echo "$name attempt $i:"; cat "/tmp/$name.out"; }
        i=$((i + 1))
        if [ $i -ge "$tries" ]; then
            cat "/tmp/$name.out"
            e2e_fail "$name" "'$*' failed $i times"
            return 1
        fi
        sleep 1
    done
    cat "/tmp/$name.out"
    e2e_pass "$name"
}

# The end of an rdma-core scenario: rmmod rnic with rdma_cm and uverbs
# still loaded (the ib_device leaves them cleanly), and a clean kernel log.
e2e_rnic_unload_clean() {
    e2e_check unload rmmod rnic
    if dmesg | grep -A 12 -E 'WARNING:|BUG:|Oops|Call Trace' | head -n 40 | grep .; then
        e2e_fail kernel-log "warnings in dmesg (above)"
    else
        e2e_pass kernel-log
    fi
}

# e2e_rping_count FILE PATTERN NAME N: rping printed PATTERN exactly N
# times (its client "ping data:" for every verified ping with -V, its
# server "server ping data:" for every ping it read).
e2e_rping_count() {
    local n
    n=$(grep -c "$2" "$1")
    if [ "$n" -eq "$4" ]; then
        e2e_pass "$3: $n pings"
    else
        e2e_fail "$3" "$n of $4 pings"
    fi
}

# e2e_rping_served PID NAME: waits for a background "rping -s -C 10"
# (output in /tmp/rping-s.out) and judges it: its status, and 10 pings.
e2e_rping_served() {
    local rc
    wait "$1"
    rc=$?
    cat /tmp/rping-s.out
    [ $rc -eq 0 ] || e2e_fail "$2" "rping -s exited with status $rc"
    e2e_rping_count /tmp/rping-s.out 'server ping data: rdma-ping-' "$2" 10
}

# perftest from the kernel command line: e2e.perf is a comma-separated
# list of PROG, PROG:SIZE (bytes; default 64 for *_lat, 65536 else) or
# PROG:SIZE:e (both sides with -e: they sleep on completion events, so
# the figure includes the interrupt path),
# e2e.dur=SECONDS runs each for that long (-D; with -e, which perftest
# cannot run with -D, 1000 iterations a second) instead of 200 iterations
# (10000 with -e: far past perftest's receive window of 512, so that a Send
# test runs on the credits the receiver writes back), all with -R, test I
# on port PORT+I.  perftest under TCG sometimes moves
# the data and then cannot report ("Correlation coefficient r^2 < 0.9":
# its clock calibration), so the client retries each test until it
# reports and every server serves again and again until the client is
# through, which it says with one rping on the port after the last.
#   e2e_perf_serve ADDR PORT     starts every server in the background
#   e2e_perf_served ADDR PORT    waits for the client's rping, stops them
#   e2e_perf_connect PEER PORT   runs the clients in order
#   e2e_perf_all server ADDR PORT / e2e_perf_all client PEER PORT: either
# Each client's output is printed between E2E-PERF-BEGIN TAG and
# E2E-PERF-END lines (TAG: PROG-SIZE, PROG-SIZE-e) for the host to read
# figures from.
e2e_perf_loops=""

e2e_perf_list() {       # "PROG SIZE [-e]" lines
    local t prog size ev
    for t in $(e2e_arg perf | tr ',' ' '); do
        prog=${t%%:*}
        size=${t#"$prog"}
        size=${size#:}
        ev=${size#*:}
        [ "$ev" = "$size" ] && ev=""
        size=${size%%:*}
        if [ -z "$size" ]; then
            case $prog in *_lat) size=64 ;; *) size=65536 ;; esac
        fi
        echo "$prog $size${ev:+ -$ev}"
    done
}

e2e_perf_n() {          # perftest's option for how long; $1: -e or not
    local dur
    dur=$(e2e_arg dur)
    if [ -n "$dur" ] && [ -n "$1" ]; then
        echo "-n $((dur * 1000))"   # perftest has no -D with -e
    elif [ -n "$dur" ]; then
        echo "-D $dur"
    elif [ -n "$1" ]; then
        echo "-n 10000"
    else
        echo "-n 200"
    fi
}

e2e_perf_serve() {
    local p=$2 prog size ev
    while read -r prog size ev; do
        # shellcheck disable=SC2046,SC2086
        e2e_perf_loop "$prog" "$p" -s "$size" $ev $(e2e_perf_n $ev) &
        e2e_perf_loops="$e2e_perf_loops $!:$prog-$size$ev:$p"
        p=$((p + 1))
    done <<EOT
$(e2e_perf_list)
EOT
}

e2e_perf_served() {
    local n
    n=$(e2e_perf_list | wc -l)
    e2e_check perf-done timeout 3000 rping -s -a "$1" -p $(($2 + n)) -C 1
    e2e_perf_stop "$e2e_perf_loops"
    e2e_perf_loops=""
}

e2e_perf_connect() {
    local p=$2 prog size ev
    while read -r prog size ev; do
        # shellcheck disable=SC2046,SC2086
        e2e_retry "$prog-$size$ev" 60 timeout 300 \
            "$prog" -R -p "$p" -s "$size" $ev $(e2e_perf_n $ev) "$1"
        echo "E2E-PERF-BEGIN $prog-$size$ev"
        cat "/tmp/$prog-$size$ev.out"
        echo "E2E-PERF-END"
        p=$((p + 1))
    done <<EOT
$(e2e_perf_list)
EOT
    e2e_retry perf-done 60 timeout 30 rping -c -a "$1" -p "$p" -C 1
}

e2e_perf_all() {
    if [ "$1" = server ]; then
        e2e_perf_serve "$2" "$3"
        e2e_perf_served "$2" "$3"
    else
        e2e_perf_connect "$2" "$3"
    fi
}

# e2e_perf_loop PROG PORT ARGS...: serves PROG -R on PORT until stopped;
# its output in /tmp/PROG-PORT.out, one line in /tmp/PROG-PORT.ok for
# every run that ended well, the pid of the one running in .pid.
e2e_perf_loop() {
    local prog=$1 p=$2
    shift 2
    while :; do
        "$prog" -R -p "$p" "$@" >>"/tmp/$prog-$p.out" 2>&1 &
        echo $! >"/tmp/$prog-$p.pid"
        wait $! && echo ok >>"/tmp/$prog-$p.ok"
    done
}

# e2e_perf_stop "PID:TAG:PORT ...": ends the loops and their servers (so
# that the device can be unloaded); a server passed if a run ended well.
e2e_perf_stop() {
    local x pid tag p prog
    for x in $1; do
        pid=${x%%:*} tag=${x#*:} p=${x##*:}
        tag=${tag%:*} prog=${tag%%-*}
        kill "$pid"
        kill "$(cat "/tmp/$prog-$p.pid")" 2>/dev/null
        wait "$pid" 2>/dev/null
        cat "/tmp/$prog-$p.out"
        if [ -s "/tmp/$prog-$p.ok" ]; then
            e2e_pass "$tag-server"
        else
            e2e_fail "$tag-server" "no run of $prog on port $p ended well"
        fi
    done
}

# NVMe over Fabrics on RDMA, as blktests runs it over siw.  The target: a
# 64 MiB RAM disk (brd) as namespace 1 of subsystem E2E_NQN on an rdma
# port, configured through configfs (bookworm has no nvmetcli).  The host:
# nvme-cli's "nvme connect -t rdma".
E2E_NQN=nqn.2026-12.org.rnic:e2e

e2e_nvmet_config() {    # ADDR PORT
    local c=/sys/kernel/config/nvmet s
    modprobe brd rd_nr=1 rd_size=65536 && modprobe nvmet-rdma || return 1
    grep -q ' /sys/kernel/config ' /proc/mounts ||
        mount -t configfs none /sys/kernel/config || return 1
    s=$c/subsystems/$E2E_NQN
    mkdir "$s" && echo 1 >"$s/attr_allow_any_host" &&
        mkdir "$s/namespaces/1" &&
        echo /dev/ram0 >"$s/namespaces/1/device_path" &&
        echo 1 >"$s/namespaces/1/enable" &&
        mkdir "$c/ports/1" && echo rdma >"$c/ports/1/addr_trtype" &&
        echo ipv4 >"$c/ports/1/addr_adrfam" &&
        echo "$1" >"$c/ports/1/addr_traddr" &&
        echo "$2" >"$c/ports/1/addr_trsvcid" &&
        ln -s "$s" "$c/ports/1/subsystems/$E2E_NQN"
}

# The port goes first: its listener, and with it every host's queue.
e2e_nvmet_teardown() {
    local c=/sys/kernel/config/nvmet s=/sys/kernel/config/nvmet/subsystems/$E2E_NQN
    rm "$c/ports/1/subsystems/$E2E_NQN" && rmdir "$c/ports/1" &&
        echo 0 >"$s/namespaces/1/enable" && rmdir "$s/namespaces/1" &&
        rmdir "$s"
}

# e2e_nvme_connect ADDR PORT [OPTION...]: until the namespace is there.
# The guest has no /etc/nvme: each attempt is a new host, its host ID the
# UUID of its NQN (6.12 refuses a host ID it knows under another NQN).
e2e_nvme_connect() {
    local addr=$1 port=$2 i uuid
    shift 2
    modprobe nvme-rdma || return 1
    uuid=$(cat /proc/sys/kernel/random/uuid)
    nvme connect -t rdma -a "$addr" -s "$port" -n "$E2E_NQN" \
        --hostnqn="nqn.2014-08.org.nvmexpress:uuid:$uuid" --hostid="$uuid" \
        "$@" || return 1
    for i in $(seq 100); do
        [ -b /dev/nvme0n1 ] && return 0
        sleep 0.2
    done
    echo "no /dev/nvme0n1"
    return 1
}

# e2e_nvme_io MIB: MIB MiB of random data written with direct I/O, read
# back the same way and compared.
e2e_nvme_io() {
    dd if=/dev/urandom of=/tmp/pattern bs=1M count="$1" 2>/dev/null &&
        dd if=/tmp/pattern of=/dev/nvme0n1 bs=1M oflag=direct &&
        dd if=/dev/nvme0n1 of=/tmp/back bs=1M count="$1" iflag=direct &&
        cmp /tmp/pattern /tmp/back
}

# e2e_nvme_read_rate MIB N: N sequential direct-I/O reads of the first MIB
# MiB in 1 MiB requests, their rate in MB/s by the guest's clock
# (/proc/uptime, 10 ms steps) on an "E2E-FIGURE nvme-read" line.
e2e_nvme_read_rate() {
    local t0 t1 i rc=0
    t0=$(cut -d' ' -f1 /proc/uptime)
    for i in $(seq "$2"); do
        dd if=/dev/nvme0n1 of=/dev/null bs=1M count="$1" iflag=direct \
            2>/dev/null || rc=1
    done
    t1=$(cut -d' ' -f1 /proc/uptime)
    echo "E2E-FIGURE nvme-read $(awk -v m="$(($1 * $2))" -v a="$t0" -v b="$t1" \
        'BEGIN { printf "%.0f MB/s (%d MiB in %.2f s)", m * 1.048576 / (b - a), m, b - a }')"
    return $rc
}
