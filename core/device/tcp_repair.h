/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Moving one connected TCP socket to another socket, on this host or
 * another, with Linux's TCP repair mode (TCP_REPAIR, Linux 4.8 or later):
 * the device's connections across a live migration.  The source saves
 * each socket into a blob that travels in the migration stream; the
 * destination rebuilds a socket with the same 4-tuple, sequence numbers,
 * queued bytes and options.  The peer sees a pause: no FIN, no RST, no
 * byte lost or repeated.  CRIU's libsoccr does the same for processes.
 *
 * Needs CAP_NET_ADMIN on both sides (-EPERM without).  No QEMU
 * dependency.
 *
 * The blob is opaque, versioned and little-endian: a fixed header
 * (RNIC_TCP_REPAIR_HDR_LEN bytes), then the send queue's bytes, then the
 * receive queue's.  Each queue is bounded by RNIC_TCP_REPAIR_QUEUE_MAX:
 * what the kernel queues is bounded by the socket buffers, which it
 * doubles from what SO_SNDBUF/SO_RCVBUF are given, so the bound is twice
 * the largest buffer a blob carries (RNIC_TCP_REPAIR_SOCK_BUF_MAX, 16 MiB,
 * four times the device's default sock-buf).  The device allows sock-buf
 * up to RNIC_SOCK_BUF_MAX (1 GiB), far more than a migration should carry
 * per connection; the kernel caps SO_SNDBUF and SO_RCVBUF at
 * net.core.wmem_max/rmem_max anyway, and autotuning at tcp_wmem/tcp_rmem's
 * maximum.  A queue over the bound fails the save with -E2BIG (the socket
 * goes on untouched); a buffer over it is saved as the bound.
 *
 * What the sequence of calls is, and what the peer sees:
 *
 * 1. Source: rnic_tcp_repair_save().  From then on the socket drops every
 *    segment that arrives, unacknowledged (a socket filter), so the state
 *    saved stays the state: what the peer sends after the save, it sends
 *    again when the new socket is there.
 * 2. Source: close() the old socket (in repair mode: nothing reaches the
 *    peer), or rnic_tcp_repair_cancel() if the migration failed.
 * 3. Destination: rnic_tcp_repair_restore().  On one host it succeeds only
 *    once the old socket is closed (-EADDRNOTAVAIL while it is open: the
 *    4-tuple is taken), so the caller closes the old one first.
 *
 * Between 2 and 3 no socket holds the 4-tuple.  On one host a segment
 * that arrives then meets the kernel's answer to a segment for no
 * connection: an RST, and the peer's connection is reset (the unit test
 * measures it).  What the peer sent while the socket was saved comes back
 * only with its retransmission, after its RTO (200 ms at least): a short
 * gap is safe for that.  A segment the peer sends in the gap itself (an
 * application write into window it still has, a keepalive) is not: on
 * one host close and restore back to back, and the gap stays a (small)
 * risk with a peer that is sending.  Across hosts the local address
 * moves with the socket (restore binds it: -EADDRNOTAVAIL where it is not
 * local).  A segment sent while it moves reaches no host, is lost, and
 * the peer retransmits it after its RTO, which the new socket answers;
 * but one that still reaches the old host after the close is answered
 * with an RST as on one host: the source gives the address up (or drops
 * its traffic) before it closes.
 *
 * What is carried: the 4-tuple (IPv4, IPv6, v4-mapped IPv6; an IPv6
 * scope id as the interface index, which another host may number
 * differently), both sequence numbers, the send queue (sent and not yet
 * acknowledged, then not yet sent), the receive queue (not yet read),
 * MSS clamp, window scales, SACK, timestamps and the timestamp clock,
 * the send and receive windows, TCP_NODELAY, SO_SNDBUF, SO_RCVBUF and
 * O_NONBLOCK.
 *
 * What is not:
 * - Only ESTABLISHED sockets: a half-closed one (a FIN sent or received)
 *   is refused with -EOPNOTSUPP (rebuilding a FIN needs a raw socket).
 * - Out-of-order data the kernel holds beyond a hole is not saved: it was
 *   SACKed, not acknowledged, and the peer, seeing the SACKs go (reneging,
 *   which RFC 2018 allows), sends it again after a timeout.
 * - Congestion state (cwnd, ssthresh, RTT estimates), the receive
 *   window's growth state (rcv_ssthresh, window clamp, computed from
 *   SO_RCVBUF at connect() as for a new connection) and ECN start over as
 *   for a new connection: throughput after a restore ramps up again.
 *   Data sent but not acknowledged is retransmitted after the initial RTO
 *   (1 s) if the peer had not received it.
 * - The timestamp clock (TCP_TIMESTAMP) goes on from the saved value plus
 *   the wall-clock time the move took, so that it is never behind what
 *   the old socket sent, and the peer's PAWS check passes.  Across hosts
 *   that holds as far as their clocks agree (NTP: well within a second);
 *   a clock behind by more than the old socket sent after the save makes
 *   the peer drop the new socket's segments until it has caught up.
 * - Restoring fixes SO_SNDBUF and SO_RCVBUF at their saved sizes (with
 *   SO_*BUFFORCE, above wmem_max/rmem_max), as the device's sock-buf does:
 *   a socket that autotuned stops autotuning.
 * - Urgent data, socket options other than those above, and a socket
 *   filter of the caller's (a socket with one is refused: -EBUSY).
 * - The filter stops segments from the moment it is on; one the kernel
 *   was already taking in is caught by reading the state twice.  Only a
 *   segment held up between the filter and TCP for longer than the whole
 *   save (conceivable with PREEMPT_RT's threaded softirqs) could land
 *   after it, acknowledged and lost.
 * - The restored fd is SOCK_CLOEXEC whatever the original was.
 */
#ifndef RNIC_TCP_REPAIR_H
#define RNIC_TCP_REPAIR_H

#include <stddef.h>
#include <stdint.h>

#define RNIC_TCP_REPAIR_VERSION         1
#define RNIC_TCP_REPAIR_HDR_LEN         136
/* The largest SO_SNDBUF/SO_RCVBUF setting a blob carries in full. */
#define RNIC_TCP_REPAIR_SOCK_BUF_MAX    (16u << 20)
/*
 * The most bytes either queue may hold (-E2BIG beyond), and the largest
 * buffer as getsockopt reads it back, doubled.
 */
#define RNIC_TCP_REPAIR_QUEUE_MAX       (2 * RNIC_TCP_REPAIR_SOCK_BUF_MAX)
/* The largest blob: 64 MiB of queues and the header. */
#define RNIC_TCP_REPAIR_BLOB_MAX \
    (RNIC_TCP_REPAIR_HDR_LEN + 2 * (size_t)RNIC_TCP_REPAIR_QUEUE_MAX)

/*
 * Enters repair mode on the connected TCP socket @fd, stops it taking
 * in segments, and saves everything needed to rebuild it.  On success
 * *@buf (malloc'd, the caller frees it) holds *@len bytes and @fd stays
 * in repair mode: the caller then closes it (no FIN, no RST reaches the
 * peer) or calls rnic_tcp_repair_cancel().  Returns 0 or -errno: -EPERM
 * without CAP_NET_ADMIN, -ENOTCONN if @fd is not connected,
 * -EOPNOTSUPP if half-closed or not TCP, -EAFNOSUPPORT if not IPv4/IPv6,
 * -EBUSY if it has a socket filter or is saved already, -E2BIG if a
 * queue is over RNIC_TCP_REPAIR_QUEUE_MAX, -EAGAIN if it kept changing
 * while it was read (a few tries).  On failure @fd goes on as before.
 */
int rnic_tcp_repair_save(int fd, uint8_t **buf, size_t *len);

/*
 * Leaves repair mode after rnic_tcp_repair_save(): the socket goes on as
 * if nothing happened (what the peer sent meanwhile, it sends again).
 * Returns 0 or -errno.
 */
int rnic_tcp_repair_cancel(int fd);

/*
 * Builds a new connected socket from the blob @buf of @len bytes and
 * returns its fd (O_NONBLOCK if the original was, SOCK_CLOEXEC), or
 * -errno.  The blob is untrusted input: everything is checked before a
 * socket is made (-EINVAL malformed, -EPROTONOSUPPORT another version,
 * -EAFNOSUPPORT another family, -E2BIG a queue or buffer over the
 * bounds above).  On one host the saved socket must be closed first
 * (-EADDRNOTAVAIL while it is open).  -EPERM without CAP_NET_ADMIN.
 * A failure sends nothing to the peer.
 */
int rnic_tcp_repair_restore(const uint8_t *buf, size_t len);

/*
 * rnic_tcp_repair_restore() in two steps, for several sockets whose other
 * ends may be among them (a connection between two devices of one VM):
 * rebuild holds each 4-tuple in repair mode, taking what arrives and
 * sending nothing; resume (the same blob) then makes each live.  On a
 * resume error the socket is back in repair mode: close it, silently.
 */
int rnic_tcp_repair_rebuild(const uint8_t *buf, size_t len);
int rnic_tcp_repair_resume(int fd, const uint8_t *buf, size_t len);

/*
 * For logs and docs: the sizes of the queues inside a blob, checked as
 * rnic_tcp_repair_restore() checks it.  @send_len counts the whole send
 * queue, @unsent_len the part of it never sent; any pointer may be NULL.
 * Returns 0 or the -errno rnic_tcp_repair_restore() would.
 */
int rnic_tcp_repair_queues(const uint8_t *buf, size_t len,
                           size_t *send_len, size_t *unsent_len,
                           size_t *recv_len);

#endif
