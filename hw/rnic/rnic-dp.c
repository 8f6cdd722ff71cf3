/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The data path of a connected QP: the socket's bytes go to the protocol
 * core's endpoint, and what the endpoint wants to send goes to the socket
 * as zero-copy iovecs over guest memory.  All on QEMU's main loop with a
 * non-blocking socket: when the peer stops reading, the socket buffer
 * fills, sendmsg says EAGAIN and nothing more is pulled from the send
 * queue until the socket is writable again (backpressure, not buffering).
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/units.h"
#include "qemu/main-loop.h"
#include "rnic.h"
#include "engine.h"
#include "trace.h"

#define RNIC_DP_IOV_MAX 64
#define RNIC_DP_RX_CHUNK (64 * KiB)

static void rnic_dp_readable(void *opaque);
static void rnic_dp_writable(void *opaque);

static void rnic_dp_set_handlers(RnicConn *c, bool want_write)
{
    qemu_set_fd_handler(c->fd, c->rx_stopped ? NULL : rnic_dp_readable,
                        want_write ? rnic_dp_writable : NULL, c);
}

static uint32_t rnic_term_arg0(struct rnic_term_code code)
{
    return (uint32_t)code.layer << 8 | code.etype;
}

static void rnic_dp_term_sent(void *opaque, struct rnic_term_code code)
{
    RnicConn *c = opaque;

    trace_rnic_term_sent(c->qp->qpn, rnic_term_code_str(code));
    rnic_stats_term(c->s, true, code.layer, code.etype, code.ecode);
    rnic_eq_post(c->s, RNIC_EV_TERM_SENT, c->qp->qpn, rnic_term_arg0(code),
                 code.ecode);
    c->rx_stopped = true;
    c->close_pending = true;
}

static void rnic_dp_term_received(void *opaque, struct rnic_term_code code)
{
    RnicConn *c = opaque;

    trace_rnic_term_received(c->qp->qpn, rnic_term_code_str(code));
    rnic_stats_term(c->s, false, code.layer, code.etype, code.ecode);
    rnic_eq_post(c->s, RNIC_EV_TERM_RECEIVED, c->qp->qpn,
                 rnic_term_arg0(code), code.ecode);
    c->rx_stopped = true;
    c->close_pending = true;
}

static void rnic_dp_state_changed(void *opaque, enum rnic_qp_state state)
{
    RnicConn *c = opaque;

    trace_rnic_qp_state(c->qp->qpn, rnic_qp_state_str(state));
}

static void rnic_dp_stream_lost(void *opaque, struct rnic_term_code code)
{
    RnicConn *c = opaque;

    qemu_log_mask(LOG_GUEST_ERROR, "rnic: QP %u: the peer's stream cannot "
                  "be parsed (%s); terminating\n", c->qp->qpn,
                  rnic_term_code_str(code));
    c->s->stats.streams_lost++;
    if (code.layer == RNIC_TERM_LAYER_LLP && code.ecode == RNIC_MPA_ECODE_CRC) {
        c->s->stats.crc_errors++;
    }
    c->rx_stopped = true;
    c->close_pending = true;
}

static const struct rnic_ep_ops rnic_dp_ops = {
    .term_sent = rnic_dp_term_sent,
    .term_received = rnic_dp_term_received,
    .state_changed = rnic_dp_state_changed,
    .stream_lost = rnic_dp_stream_lost,
};

/*
 * The QP adopts the MPA connection: from now on the stream is its own.
 * The caller pumps once it is done with @c (a pump may close it).
 */
bool rnic_dp_start(RnicConn *c)
{
    RnicState *s = c->s;
    int mss = 0;
    socklen_t len = sizeof(mss);
    struct rnic_ep_params p = {
        .qp = c->qp->core,
        .stags = s->stags,
        .dma = &s->dma,
        .pd = c->qp->pdn,
        .mpa = c->mpa.result,
        .initiator = c->initiator,
        .ops = &rnic_dp_ops,
        .opaque = c,
    };

    if (!getsockopt(c->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) && mss > 0) {
        p.emss = mss;
    }
    c->ep = rnic_ep_new(&p);
    if (!c->ep) {
        return false;
    }
    if (c->early_len) {
        rnic_ep_rx(c->ep, c->early, c->early_len);
        c->early_len = 0;
    }
    return true;
}

void rnic_dp_stop(RnicConn *c)
{
    rnic_fault_fini(c);
    if (c->ep) {
        rnic_ep_free(c->ep);
        c->ep = NULL;
    }
}

/*
 * Writes what the endpoint has until the socket pushes back: several
 * FPDUs per system call, or one when fault-corrupt-crc needs to rewrite
 * a CRC.  One iovec stays spare for that.
 */
static bool rnic_dp_flush(RnicConn *c)
{
    struct iovec iov[RNIC_DP_IOV_MAX];
    bool corrupt = c->s->fault_corrupt_crc;
    int cnt;
    size_t n;

    while ((n = rnic_ep_tx_peek_batch(c->ep, iov, RNIC_DP_IOV_MAX - 1, &cnt,
                                      corrupt ? 1 : RNIC_EP_TX_BATCH_FPDUS))) {
        struct msghdr msg = { .msg_iov = iov };
        ssize_t w;

        if (rnic_fault_delay(c)) {
            return false;   /* the timer pumps again */
        }
        if (corrupt) {
            rnic_fault_tx_iov(c, iov, &cnt);
        }
        msg.msg_iovlen = cnt;
        w = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            return true;
        }
        if (w < 0) {
            trace_rnic_conn_error(c->id, errno, "send");
            c->rx_stopped = true;
            c->close_pending = true;
            return false;
        }
        c->s->stats.tx_bytes += w;
        rnic_fault_tx_sent(c, iov, cnt, w);
        rnic_ep_tx_advance(c->ep, w);
        if (rnic_fault_drop(c, w)) {
            c->drop_now = true;
            return false;
        }
        if ((size_t)w < n) {
            return true;
        }
    }
    return false;
}

/*
 * Runs the transmit side, then settles what it changed: completions to
 * the guest, and the close a Terminate asked for.
 */
void rnic_dp_pump(RnicConn *c)
{
    RnicState *s = c->s;
    bool blocked = rnic_dp_flush(c);

    /* Only this QP's CQs can have new entries: no scan of every CQ. */
    rnic_cq_flush_to_guest(s, c->qp->scq);
    if (c->qp->rcq != c->qp->scq) {
        rnic_cq_flush_to_guest(s, c->qp->rcq);
    }
    if (c->drop_now) {
        rnic_conn_abort(c);
        return;
    }
    if (c->close_pending && !blocked) {
        rnic_conn_closed(c, true);
        return;
    }
    rnic_dp_set_handlers(c, blocked);
}

static void rnic_dp_read(void *opaque)
{
    RnicConn *c = opaque;
    RnicState *s = c->s;
    ssize_t n = recv(c->fd, s->rx_buf, RNIC_DP_RX_CHUNK, 0);

    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    if (n <= 0) {
        /* The peer closed (or reset): the LLP is gone. */
        rnic_conn_closed(c, n < 0);
        return;
    }
    s->stats.rx_bytes += n;
    rnic_ep_rx(c->ep, s->rx_buf, n);
    c->drop_now |= rnic_fault_drop(c, n);
    rnic_dp_pump(c);
}

static void rnic_dp_write(void *opaque)
{
    rnic_dp_pump(opaque);
}

static void rnic_dp_readable(void *opaque)
{
    rnic_guarded(((RnicConn *)opaque)->s, rnic_dp_read, opaque);
}

static void rnic_dp_writable(void *opaque)
{
    rnic_guarded(((RnicConn *)opaque)->s, rnic_dp_write, opaque);
}

void rnic_dp_init(RnicState *s)
{
    s->rx_buf = g_malloc(RNIC_DP_RX_CHUNK);
}
