#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make bench-guest (not in make check nor make e2e: about 12 minutes):
# the device as a guest sees it.  In one run, one pair after the other on
# the same TCG settings, the same perftest programs with -R and -D (each
# runs BENCH_DUR seconds, default 10, so that the guest clock's granularity
# under TCG is not the error bar):
#   rnic <-> rnic   rdma-rnic-perf.sh (two guests with -device rnic)
#   io              the same, each device on an IOThread (E2E_IOTHREAD=1)
#   io-sys          io with librnic's direct mode off (RNIC_DIRECT=0):
#                   every post and poll a system call
#   io-prio         io with the IOThreads at nice -10 (E2E_IOTHREAD_NICE):
#                   perftest polls, so each TCG guest keeps a host core
#                   busy, and with 2 cores the devices get what is left
#   siw  <-> siw    siw-siw.sh (Linux's software iWARP over virtio-net)
#   raw TCP         two host processes on loopback (tests/bench/tcp-pair),
#                   the limit of any TCP-carried device
# then fio over NVMe-oF, rnic <-> rnic and siw <-> siw (nvmeof-fio.sh:
# 4 KiB random IOPS and 99th-percentile completion latency at queue depth
# 1 and 32, 128 KiB sequential bandwidth, each BENCH_DUR seconds, and the
# data written, read back and checked with CRC32c: bad data fail the
# bench); then one table of the figures and their ratios, with the
# machine's load at start and end.  perftest polls for completions, so the
# TCG guests keep host cores busy through the bandwidth tests, and on a
# small host the IOThreads wait for a core (docs/spec.md "On an IOThread"
# has the figures); send-bw-ev is Send bandwidth with both sides asleep on
# completion events (perftest has -e for Send, not for Write and Read):
# the device's bandwidth when the guests leave it the host's cores.
# Host CPU per byte: the user and system time of each pair's whole
# scenario (its QEMU processes, boots and functional checks included, so
# rnic's is counted high) over the bytes its bandwidth tests moved (BW
# average x BENCH_DUR; with -e, size x iterations).  TCP_PAIR: the
# tcp-pair binary (the Makefile builds it).  BENCH_PERF: the perftest
# runs, PROG:SIZE[:e] comma-separated.
. "$(dirname "$0")/lib/e2e.sh"

dur=${BENCH_DUR:-10}
perf=${BENCH_PERF:-ib_write_bw:65536,ib_write_bw:1048576,ib_read_bw:65536,ib_read_bw:1048576,ib_send_lat:64,ib_send_lat:64:e,ib_send_bw:1048576:e,ib_write_bw:4096}
# siw without bandwidth on events: that runs a count of messages (1000 a
# second of -D; perftest has no -D with -e), 10 GiB at 1 MiB, which at
# siw's few MB/s would take about half an hour.
perf_siw=$(tr ',' '\n' <<<"$perf" | grep -v '_bw:.*:e$' | paste -sd,)
tcp_pair=${TCP_PAIR:?set TCP_PAIR to the tcp-pair binary}
out=$E2E_OUT/bench-guest
mkdir -p "$out"
echo "bench-guest: load at start: $(uptime)"

# Each guest runs setup, the functional checks and then every test for
# dur seconds plus its connection setup: the usual timeout is too short.
n=$(tr ',' '\n' <<<"$perf" | wc -l)
export E2E_TIMEOUT=$((300 + n * (dur + 40)))
export E2E_PERF=$perf E2E_PERF_DUR=$dur

rc=0
: >"$out/tcp.txt"
for t in "bw 65536" "bw 1048576" "bw 4096" "lat 64"; do
    # shellcheck disable=SC2086
    "$tcp_pair" $t "$dur" | tee -a "$out/tcp.txt" || rc=1
done
e2e_apt_need time
/usr/bin/time -f '%U %S' -o "$out/cpu-rnic.txt" env E2E_NAME=bench-rnic-rnic \
    bash "$E2E_TOP/tests/e2e/rdma-rnic-perf.sh" || rc=1
/usr/bin/time -f '%U %S' -o "$out/cpu-rnic-io.txt" env E2E_IOTHREAD=1 \
    E2E_NAME=bench-rnic-io bash "$E2E_TOP/tests/e2e/rdma-rnic-perf.sh" || rc=1
/usr/bin/time -f '%U %S' -o "$out/cpu-rnic-io-sys.txt" env E2E_IOTHREAD=1 \
    E2E_RNIC_DIRECT=0 E2E_NAME=bench-rnic-io-sys \
    bash "$E2E_TOP/tests/e2e/rdma-rnic-perf.sh" || rc=1
/usr/bin/time -f '%U %S' -o "$out/cpu-rnic-io-prio.txt" env E2E_IOTHREAD=1 \
    E2E_IOTHREAD_NICE=-10 E2E_NAME=bench-rnic-io-prio \
    bash "$E2E_TOP/tests/e2e/rdma-rnic-perf.sh" || rc=1
/usr/bin/time -f '%U %S' -o "$out/cpu-siw.txt" env E2E_NAME=bench-siw-siw \
    E2E_PERF="$perf_siw" bash "$E2E_TOP/tests/e2e/siw-siw.sh" || rc=1
# A pair that never booted must not leave an older run's figures behind.
fio=$E2E_LOGS/bench-nvmeof-fio
rm -f "$fio-rnic-host.log" "$fio-siw-host.log"
E2E_NAME=bench-nvmeof-fio E2E_FIO_DUR=$dur \
    bash "$E2E_TOP/tests/e2e/nvmeof-fio.sh" rnic siw || rc=1

# RDMA Read as qperf measures it (-cm1: an ORD of 1), 64 KiB Reads
# against 1 MiB Sends (at 64 KiB qperf's Sends outrun its receives under
# TCG: rdma-rnic-companion.sh says why), two rnic guests.
read=rc_rdma_read_bw:64K send=rc_bw:1M
E2E_NAME=bench-qperf E2E_QPERF_DUR=$dur E2E_QPERF=$read,$send,rc_rdma_read_bw:1M \
    bash "$E2E_TOP/tests/e2e/rdma-rnic-companion.sh" || rc=1

# Live migration of a guest with one connected QP (rping running): the
# downtime QMP reports, and what moved for the QP (its stream state, and
# with TCP repair the socket's state), for each way a connection moves.
for m in repair cpr; do
    E2E_NAME=bench-migrate-$m bash "$E2E_TOP/tests/e2e/rnic-migrate.sh" \
        "$m" rnic >"$out/migrate-$m.txt" 2>&1 || rc=1
done

echo "bench-guest: perftest -R -D $dur; MB = 2^20 bytes; send-lat is perftest's t_avg (half the round trip); io: rnic with iothread="
echo "bench-guest: nvme-*: fio over NVMe-oF, $dur s a job; p99: 99th percentile of completion latency"
python3 "$E2E_LIB/perf-table.py" "$out/tcp.txt" "$dur" \
    "rnic=$E2E_LOGS/bench-rnic-rnic-client.log:$out/cpu-rnic.txt" \
    "io=$E2E_LOGS/bench-rnic-io-client.log:$out/cpu-rnic-io.txt" \
    "io-sys=$E2E_LOGS/bench-rnic-io-sys-client.log:$out/cpu-rnic-io-sys.txt" \
    "io-prio=$E2E_LOGS/bench-rnic-io-prio-client.log:$out/cpu-rnic-io-prio.txt" \
    "siw=$E2E_LOGS/bench-siw-siw-client.log:$out/cpu-siw.txt" \
    --fio "rnic=$fio-rnic-host.log" --fio "siw=$fio-siw-host.log" || rc=1
for m in repair cpr; do
    python3 "$E2E_LIB/migrate-figures.py" "$m" "$out/migrate-$m.txt" || rc=1
done
python3 "$E2E_LIB/qperf-figures.py" "$E2E_LOGS/bench-qperf-client.log" \
    "$read" "$send" || rc=1
echo "bench-guest: load at end: $(uptime)"
exit "$rc"
