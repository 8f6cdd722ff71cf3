#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Two guests, each with -device rnic and no network card, on the verbs
# stack alone (rnic.ko's ib_device, librnic, rdma_cm): verbs-ops runs
# every operation between them (Send, RDMA Write and Read, fetch-add,
# compare-swap, immediate data, Send with Invalidate; through rnicdv.h a
# one-shot STag, a receive-linked STag, an RTR type chosen per connection
# and the connection's details), each checked byte for byte against the
# peer's memory; then perftest's ib_write_bw and ib_send_lat (-R) for
# bandwidth and latency.  Every check must print PASS, each device's
# capture must read as well-formed iWARP, and rnic.ko must unload cleanly.
# E2E_SERVER_QEMU_ARGS: more QEMU options for the server guest (-trace,
# -qmp, ...); E2E_RNIC_OPTS: more -device rnic options for both;
# E2E_IOTHREAD=1: each device on a named IOThread (iothread=);
# E2E_MAIN_LOOP=1: on the main loop (main-loop=on).
. "$(dirname "$0")/lib/e2e.sh"

name=${E2E_NAME:-rnic-rnic}
perf=ib_write_bw,ib_send_lat:64:e
e2e_prep
e2e_librnic_build

initrd=$E2E_OUT/$name.cpio.gz
e2e_rnic_verbs_initramfs "$initrd" /usr/bin/rping /usr/bin/ib_write_bw \
    /usr/bin/ib_send_lat <<'GUEST'
role=$(e2e_arg role)
me=$(e2e_arg ip)
peer=$(e2e_arg peer)
port=$(e2e_arg port)

e2e_rnic_up "$me" || exit
# verbs-ops on PORT (its client retries until the server listens), then
# perftest from PORT+1.
if [ "$role" = server ]; then
    e2e_tool server 12 verbs-ops -s "$me" "$port"
    e2e_perf_all server "$me" $((port + 1))
else
    e2e_tool client 18 verbs-ops -c "$peer" "$port"
    e2e_perf_all client "$peer" $((port + 1))
fi
grep rnic /proc/interrupts
e2e_rnic_unload_clean
GUEST

e2e_rnic_pair
args="e2e.port=$port e2e.perf=$perf"
# shellcheck disable=SC2086
e2e_guest_start "$name-server" "$initrd" \
    "e2e.role=server e2e.ip=$net.1 e2e.peer=$net.2 $args" $rnic_io \
    -device "$dev${E2E_RNIC_OPTS:-}$(e2e_capture "$name-server")" \
    ${E2E_SERVER_QEMU_ARGS:-}
# shellcheck disable=SC2086
e2e_guest_start "$name-client" "$initrd" \
    "e2e.role=client e2e.ip=$net.2 e2e.peer=$net.1 $args" $rnic_io \
    -device "$dev${E2E_RNIC_OPTS:-}$(e2e_capture "$name-client")"

rc=0
e2e_guest_wait "$name-client" || rc=1
e2e_guest_wait "$name-server" || rc=1
e2e_capture_check "$name-server" "$name-client" || rc=1
e2e_result "$name" "$rc"
