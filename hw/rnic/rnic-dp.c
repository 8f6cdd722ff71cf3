/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The data-path pump of a connected QP: the socket's bytes go to the
 * protocol core's endpoint, and what the endpoint wants to send goes to
 * the socket as zero-copy iovecs over guest memory.  Non-blocking: when
 * the peer stops reading, sendmsg says EAGAIN and nothing more is pulled
 * from the send queue until the socket is writable again (backpressure,
 * not buffering).
 *
 * Each call does a bounded amount of work (RNIC_DP_RX_BUDGET octets read,
 * RNIC_DP_TX_BUDGET written) and returns a verdict; the connection's owner
 * (rnic-conn.c) acts on it: waits, runs the pump again, closes or resets.
 * Nothing the pump runs frees or closes anything, so nothing here can
 * pull the connection from under a caller; the owner alone frees the
 * endpoint, through rnic_dp_stop().
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/units.h"
#include "rnic.h"
#include "rnic-capture.h"
#include "trace.h"

/*
 * Octets one run may write before the loop gets its turn again: one
 * batch, since a run costs a loop turn whatever it carries (engine.h).
 */
#define RNIC_DP_TX_BUDGET RNIC_EP_TX_BATCH_BYTES

/*
 * Octets one readable callback may take in RNIC_EP_RX_CHUNK reads: a read
 * that fills the chunk leaves more behind, and reading it now saves the
 * loop turn (a ppoll and the dispatch) that would hand it over: one turn
 * per MiB instead of four (measured in docs/protocol.md section 3).
 */
#define RNIC_DP_RX_BUDGET RNIC_EP_TX_BATCH_BYTES

static uint32_t rnic_term_arg0(struct rnic_term_code code)
{
    return (uint32_t)code.layer << 8 | code.etype;
}

static void rnic_dp_term_sent(void *opaque, struct rnic_term_code code)
{
    RnicConn *c = opaque;

    trace_rnic_term_sent(c->qp->qpn, rnic_term_code_str(code));
    rnic_dev_qp_note_term(c->qp, true, code.layer, code.etype, code.ecode);
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
    rnic_dev_qp_note_term(c->qp, false, code.layer, code.etype, code.ecode);
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

static void rnic_dp_need_recv(void *opaque)
{
    RnicConn *c = opaque;

    rnic_wq_recv_now(c->s, c->qp);
}

static const struct rnic_ep_ops rnic_dp_ops = {
    .term_sent = rnic_dp_term_sent,
    .term_received = rnic_dp_term_received,
    .state_changed = rnic_dp_state_changed,
    .stream_lost = rnic_dp_stream_lost,
    .need_recv = rnic_dp_need_recv,
};

/* Receives the stream took from the QP's SRQ may have reached its limit. */
static void rnic_dp_srq_limit(RnicConn *c)
{
    if (c->qp && c->qp->srq) {
        rnic_dev_srq_check_limit(c->s, c->qp->srq);
    }
}

/*
 * The QP adopts the MPA connection: from now on the stream is its own.
 * The caller runs the pump once it is done with @c.
 */
bool rnic_dp_start(RnicConn *c, uint32_t mulpdu)
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
        .rx_op_count = s->stats.rx_op,
        .tx_op_count = s->stats.tx_op,
        .mulpdu = mulpdu,
    };

    if (!getsockopt(c->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) && mss > 0) {
        p.emss = mss;
    }
    c->ep = rnic_ep_new(&p);
    if (!c->ep) {
        return false;
    }
    if (c->initiator && s->params.siw_hold_ms) {
        c->hold_until = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                        s->params.siw_hold_ms;
    }
    if (c->early_len) {
        rnic_ep_rx(c->ep, c->early, c->early_len);
        c->early_len = 0;
        rnic_dp_srq_limit(c);
    }
    return true;
}

void rnic_dp_stop(RnicConn *c)
{
    if (c->ep) {
        rnic_ep_free(c->ep);
        c->ep = NULL;
    }
}

/*
 * siw compatibility (siw-compat-hold-ms): Linux siw's siw_accept() sends
 * its MPA Reply before it points the socket's data-ready callback at the
 * QP, and what arrives in between stays unread until more data comes
 * (docs/driver-guide.md).  As initiator we send nothing, an RTR included,
 * until that long after the Reply; work posted later goes at once.
 */
static bool rnic_dp_held(RnicConn *c)
{
    if (c->hold_until &&
        qemu_clock_get_ms(QEMU_CLOCK_REALTIME) < c->hold_until) {
        return true;
    }
    c->hold_until = 0;
    return false;
}

/* When the burst that rnic_dp_tx() held (RNIC_DP_DELAYED) may go. */
int64_t rnic_dp_delay_end(RnicConn *c)
{
    return c->hold_until ?: qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                            c->s->params.fault_delay_ms;
}

/* One write of up to a batch of FPDUs, through the fault filter. */
static ssize_t rnic_dp_send_batch(RnicConn *c, size_t *offered)
{
    struct iovec iov[RNIC_EP_TX_BATCH_IOV];
    struct rnic_ep_tx_fpdu fpdus[RNIC_EP_TX_BATCH_FPDUS];
    bool corrupt = c->s->params.fault_corrupt_crc;
    /* room for the filter to split one iovec per FPDU */
    int max = RNIC_EP_TX_BATCH_IOV - (corrupt ? RNIC_EP_TX_BATCH_FPDUS : 0);
    struct msghdr msg = { .msg_iov = iov };
    int cnt, nfpdus;
    uint64_t before = rnic_ep_tx_fpdus_sent(c->ep);
    ssize_t w;

    *offered = rnic_ep_tx_peek_fpdus(c->ep, iov, max, &cnt,
                                     RNIC_EP_TX_BATCH_FPDUS, fpdus, &nfpdus);
    if (!*offered) {
        return 0;
    }
    if (rnic_dp_held(c) || rnic_fault_delay(c)) {
        *offered = 0;
        return -EINPROGRESS;
    }
    if (corrupt) {
        cnt = rnic_fault_tx_filter(c, iov, cnt, RNIC_EP_TX_BATCH_IOV, fpdus,
                                   nfpdus);
    }
    msg.msg_iovlen = cnt;
    w = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
    trace_rnic_tx(c->id, w);
    rnic_capture_sent(c, iov, cnt, w);
    if (w < 0) {
        return -errno;
    }
    c->s->stats.tx_bytes += w;
    rnic_ep_tx_advance(c->ep, w);
    c->s->stats.tx_fpdus += rnic_ep_tx_fpdus_sent(c->ep) - before;
    return w;
}

/*
 * Writes what the endpoint has, until the socket pushes back, nothing is
 * left, or RNIC_DP_TX_BUDGET octets went out in this run.
 */
RnicVerdict rnic_dp_tx(RnicConn *c)
{
    size_t done = 0;

    while (c->ep) {
        size_t offered;
        ssize_t w = rnic_dp_send_batch(c, &offered);

        if (w == -EINPROGRESS) {
            return RNIC_DP_DELAYED;
        }
        if (w == -EAGAIN || w == -EINTR) {
            return RNIC_DP_BLOCKED;
        }
        if (w < 0) {
            trace_rnic_conn_error(c->id, -w, "send");
            return RNIC_DP_ABORT;
        }
        if (!offered) {
            return RNIC_DP_OK;
        }
        if (rnic_fault_drop(c, w)) {
            return RNIC_DP_ABORT;
        }
        if ((size_t)w < offered) {
            return RNIC_DP_BLOCKED;
        }
        done += w;
        if (done >= RNIC_DP_TX_BUDGET) {
            return RNIC_DP_MORE;
        }
    }
    return RNIC_DP_OK;
}

/*
 * One read (at most RNIC_EP_RX_CHUNK octets) into the endpoint.  The
 * peer's FIN sets peer_fin; a reset or a read error is ABORT.  *full:
 * the read filled the chunk.
 */
static RnicVerdict rnic_dp_rx_chunk(RnicConn *c, bool *full)
{
    RnicState *s = c->s;
    ssize_t n = recv(c->fd, s->rx_buf, RNIC_EP_RX_CHUNK, 0);

    *full = n == RNIC_EP_RX_CHUNK;
    trace_rnic_rx(c->id, n);
    rnic_capture_received(c, s->rx_buf, n);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return RNIC_DP_OK;
    }
    if (n < 0) {
        trace_rnic_conn_error(c->id, errno, "recv");
        return RNIC_DP_ABORT;
    }
    if (n == 0) {
        c->peer_fin = true;
        return RNIC_DP_OK;
    }
    s->stats.rx_bytes += n;
    if (c->ep) {
        rnic_ep_rx(c->ep, s->rx_buf, n);
    }
    return rnic_fault_drop(c, n) ? RNIC_DP_ABORT : RNIC_DP_OK;
}

/*
 * Reads while each read fills the chunk, up to RNIC_DP_RX_BUDGET, and
 * while the endpoint still takes the stream (a Terminate stops it).
 */
RnicVerdict rnic_dp_rx(RnicConn *c)
{
    RnicVerdict v;
    size_t done = 0;
    bool full;

    do {
        v = rnic_dp_rx_chunk(c, &full);
        done += RNIC_EP_RX_CHUNK;
    } while (v == RNIC_DP_OK && full && done < RNIC_DP_RX_BUDGET && c->ep &&
             !c->rx_stopped);
    rnic_dp_srq_limit(c);
    return v;
}

void rnic_dp_init(RnicState *s)
{
    s->rx_buf = g_malloc(RNIC_EP_RX_CHUNK);
}
