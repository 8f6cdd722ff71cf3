/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one owner of every connection: its socket, fd handlers, timers,
 * bottom half, state and freeing, in both phases.
 *
 *   MPA phase   CONNECTING -> WAIT_REPLY -> RTS            (CONNECT)
 *               WAIT_REQUEST -> PENDING -> RTS | REJECTING (listener)
 *               bounded by mpa-timeout-ms: a silent peer cannot hold a
 *               slot.
 *   RTS phase   the data-path pump (rnic-dp.c) reads and writes the QP's
 *               stream and returns a verdict; only this file acts on it.
 *   Closing     DRAINING (QP CLOSING: what is in flight still goes out)
 *               -> our FIN -> FIN_WAIT (the peer's FIN) -> closed; bounded
 *               by close-timeout-ms, then reset.  A peer's FIN in RTS
 *               takes the QP through CLOSING too (RFC 5040 section 8).
 *
 * Every way in (fd handlers, timers, the bottom half) goes through
 * rnic_guarded() or rnic_guarded_bh(), and every way in ends in
 * rnic_conn_run() or one of the close functions, whose last act may free
 * the connection: callers never touch it afterwards.
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/sockets.h"
#include "qemu/timer.h"
#include "rnic.h"
#include "device/tcp_repair.h"
#include "rnic-capture.h"
#include "trace.h"

static void rnic_conn_readable(void *opaque);
static void rnic_conn_writable(void *opaque);
static void rnic_conn_deadline(void *opaque);
static void rnic_conn_delay_over(void *opaque);
static void rnic_conn_again(void *opaque);

/* ---- slots ---- */

/*
 * Fixed socket buffers (sock-buf): the kernel's autotuning left a
 * loopback connection's speed to chance, and fixed buffers measured
 * faster between two QEMUs (docs/spec.md, sock-buf).  Best effort: the
 * kernel caps the size at net.core.wmem_max and rmem_max.
 */
static void rnic_conn_set_bufs(RnicState *s, int fd)
{
    int size = s->params.sock_buf;

    if (size) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    }
}

/*
 * Ids count up through [RNIC_CONN_ID_MIN, UINT32_MAX], skipping live ones:
 * a guest that acts on an id it read late (an event, a CONNECT's answer)
 * finds that connection or none, never a newer one, and no id equals a
 * QP number (CONN_ERROR's id may be either).
 */
static uint32_t rnic_conn_new_id(RnicState *s)
{
    uint32_t id = s->conn_last_id;

    do {
        id = id == UINT32_MAX ? RNIC_CONN_ID_MIN : MAX(id + 1,
                                                       RNIC_CONN_ID_MIN);
    } while (g_hash_table_contains(s->conn_ids, GUINT_TO_POINTER(id)));
    s->conn_last_id = id;
    return id;
}

/*
 * A slot for @fd.  Connections the guest did not ask for (@passive:
 * accepted, handed in) never take the max-qps slots kept for its own
 * CONNECTs; NULL when there is no slot for this kind.
 */
RnicConn *rnic_conn_new(RnicState *s, int fd, bool initiator, bool passive)
{
    RnicConn *c;
    uint32_t i;

    if (passive && s->passive_conns >= s->max_conns - s->params.limits.max_qp) {
        return NULL;
    }
    for (i = 0; i < s->max_conns && s->conns[i]; i++) {
        continue;
    }
    if (i == s->max_conns) {
        return NULL;
    }
    c = g_new0(RnicConn, 1);
    c->s = s;
    c->fd = fd;
    c->initiator = initiator;
    c->passive = passive;
    s->passive_conns += passive;
    c->id = rnic_conn_new_id(s);
    rnic_cpr_keep(s->cpr_conns, c->id, fd);
    c->slot = i;
    s->conns[i] = c;
    g_hash_table_insert(s->conn_ids, GUINT_TO_POINTER(c->id), c);
    c->deadline = rnic_timer_new_ms(s, rnic_conn_deadline, c);
    c->deadline_left = c->delay_left = -1;
    c->bh = rnic_bh_new(s, rnic_conn_again, c);
    qemu_socket_set_nonblock(fd);
    socket_set_nodelay(fd);
    rnic_conn_set_bufs(s, fd);
    return c;
}

static void rnic_conn_unwait(RnicConn *c)
{
    if (c->waiting) {
        c->waiting = false;
        c->s->listeners[c->listener_id - 1].waiting--;
        rnic_listeners_watch(c->s);
    }
}

/* The only place a connection is freed. */
static void rnic_conn_free(RnicConn *c)
{
    RnicState *s = c->s;

    trace_rnic_conn_free(c->id);
    rnic_capture_closed(c, false);
    rnic_conn_unwait(c);
    rnic_dp_stop(c);
    if (c->fd >= 0) {
        rnic_set_fd_handler(s, c->fd, NULL, NULL, NULL);
        rnic_cpr_drop(s->cpr_conns, c->id);
        close(c->fd);
    }
    g_free(c->moved);
    timer_free(c->deadline);
    if (c->delay_timer) {
        timer_free(c->delay_timer);
    }
    qemu_bh_delete(c->bh);
    if (c->qp) {
        c->qp->conn = NULL;
    }
    s->passive_conns -= c->passive;
    s->conns[c->slot] = NULL;
    g_hash_table_remove(s->conn_ids, GUINT_TO_POINTER(c->id));
    g_free(c);
}

/* ---- waiting: handlers and timers as the state wants ---- */

static bool rnic_conn_mpa_phase(const RnicConn *c)
{
    return c->state == RNIC_CONN_CONNECTING ||
           c->state == RNIC_CONN_WAIT_REPLY ||
           c->state == RNIC_CONN_WAIT_REQUEST ||
           c->state == RNIC_CONN_REJECTING;
}

/*
 * Registers @rd and @wr on the socket unless they already are: on the
 * main loop QEMU's qemu_set_fd_handler() allocates a handler node and
 * wakes the loop on every call, and on an IOThread each change is an
 * epoll_ctl(), which the pump would otherwise pay after every step.
 */
static void rnic_conn_watch(RnicConn *c, IOHandler *rd, IOHandler *wr)
{
    if (rd != c->watch_rd || wr != c->watch_wr) {
        c->watch_rd = rd;
        c->watch_wr = wr;
        rnic_set_fd_handler(c->s, c->fd, rd, wr, c);
    }
}

static void rnic_conn_arm_deadline(RnicConn *c, uint32_t ms)
{
    if (!timer_pending(c->deadline)) {
        timer_mod(c->deadline, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + ms);
    }
}

/* MPA phase: read while the exchange needs the peer's bytes. */
static void rnic_conn_wait_mpa(RnicConn *c)
{
    bool rd = c->state == RNIC_CONN_WAIT_REPLY ||
              c->state == RNIC_CONN_WAIT_REQUEST;
    bool wr = c->state == RNIC_CONN_CONNECTING || c->out_off < c->out_len;

    rnic_conn_watch(c, rd ? rnic_conn_readable : NULL,
                    wr ? rnic_conn_writable : NULL);
    if (rnic_conn_mpa_phase(c)) {
        rnic_conn_arm_deadline(c, c->s->params.mpa_timeout_ms);
    } else {
        timer_del(c->deadline);
    }
}

/* RTS phase: what the pump's verdict asks for. */
static void rnic_conn_wait_dp(RnicConn *c, RnicVerdict v)
{
    bool rd = !c->rx_stopped && !c->peer_fin;
    /*
     * More to send after a spent budget: on an IOThread the socket's
     * writable event brings the pump back, in the turn that serves the
     * other sockets (a bottom half would keep the loop from them:
     * rnic-poll.c).
     */
    bool more_fd = v == RNIC_DP_MORE && c->s->poller;

    rnic_conn_watch(c, rd ? rnic_conn_readable : NULL,
                    v == RNIC_DP_BLOCKED || more_fd ? rnic_conn_writable
                                                    : NULL);
    if (v == RNIC_DP_MORE && !more_fd) {
        qemu_bh_schedule(c->bh);
    }
    if (v == RNIC_DP_DELAYED) {
        if (!c->delay_timer) {
            c->delay_timer = rnic_timer_new_ms(c->s, rnic_conn_delay_over,
                                               c);
        }
        if (!timer_pending(c->delay_timer)) {
            timer_mod(c->delay_timer, rnic_dp_delay_end(c));
        }
    }
    if (c->state == RNIC_CONN_DRAINING || c->state == RNIC_CONN_FIN_WAIT) {
        rnic_conn_arm_deadline(c, c->s->params.close_timeout_ms);
    }
}

void rnic_conn_set_state(RnicConn *c, RnicConnState state)
{
    trace_rnic_conn_state(c->id, c->state, state);
    c->state = state;
    if (state != RNIC_CONN_WAIT_REQUEST && state != RNIC_CONN_PENDING) {
        rnic_conn_unwait(c);
    }
    if (state < RNIC_CONN_RTS) {
        rnic_conn_wait_mpa(c);
    }
}

/* An MPA frame (or Reject) to write before anything else. */
void rnic_conn_send_mpa(RnicConn *c, const void *buf, size_t len)
{
    assert(len <= sizeof(c->out));
    memcpy(c->out, buf, len);
    c->out_len = len;
    c->out_off = 0;
    rnic_conn_wait_mpa(c);
}

/* ---- ends ---- */

/*
 * Events about a QP follow its completions: the guest that reads the
 * event finds the flushed WRs already in its CQs.
 */
static void rnic_conn_event(RnicState *s, uint8_t type, uint32_t id,
                            uint32_t arg0, uint32_t arg1)
{
    rnic_cqs_deliver(s);
    rnic_eq_post(s, type, id, arg0, arg1);
}

/* The LLP connection is gone: the QP learns, then the guest; freed. */
static void rnic_conn_closed(RnicConn *c, bool abortive)
{
    RnicState *s = c->s;
    RnicQp *qp = c->qp;

    if (c->ep) {
        rnic_ep_connection_closed(c->ep);
    } else if (qp) {
        rnic_qp_connection_closed(qp->core);
    }
    rnic_conn_free(c);
    if (qp) {
        rnic_conn_event(s, RNIC_EV_CONN_CLOSED, qp->qpn, abortive, 0);
    }
}

/* SO_LINGER 0: close() sends a reset, as an abortive close must. */
static void rnic_conn_reset_socket(RnicConn *c)
{
    struct linger lg = { .l_onoff = 1, .l_linger = 0 };

    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    rnic_capture_closed(c, true);
}

void rnic_conn_abort(RnicConn *c)
{
    rnic_conn_reset_socket(c);
    if (c->ep) {
        rnic_ep_modify(c->ep, RNIC_QP_ERROR);
    } else if (c->qp) {
        rnic_qp_modify(c->qp->core, RNIC_QP_ERROR);
    }
    rnic_conn_closed(c, true);
}

/* A connection the guest never saw (or no longer owns): reset, freed. */
void rnic_conn_drop(RnicConn *c)
{
    rnic_conn_reset_socket(c);
    rnic_conn_free(c);
}

/* The MPA phase failed on a connection the guest knows about. */
static void rnic_conn_error(RnicConn *c, int err, const char *why)
{
    RnicState *s = c->s;
    uint32_t id = c->qp ? c->qp->qpn : c->id;

    trace_rnic_conn_error(c->id, err, why);
    if (c->ep) {
        rnic_ep_modify(c->ep, RNIC_QP_ERROR);
    }
    rnic_conn_free(c);
    rnic_conn_event(s, RNIC_EV_CONN_ERROR, id, err, 0);
}

/* The guest's QP is destroyed: its connection goes with it. */
void rnic_conn_qp_gone(RnicQp *qp)
{
    if (qp->conn) {
        rnic_conn_free(qp->conn);
    }
}

void rnic_conns_close_all(RnicState *s)
{
    for (uint32_t i = 0; i < s->max_conns; i++) {
        if (s->conns[i]) {
            rnic_conn_free(s->conns[i]);
        }
    }
}

/* ---- RTS phase ---- */

/*
 * Runs the pump once and acts on its verdict: the one place where a
 * connected stream's fate is decided.  May free @c.
 */
static void rnic_conn_step(RnicConn *c, bool readable)
{
    RnicVerdict v = RNIC_DP_OK;

    if (readable) {
        v = rnic_dp_rx(c);
    }
    if (v == RNIC_DP_OK) {
        v = rnic_dp_tx(c);
    }
    if (v == RNIC_DP_ABORT) {
        rnic_conn_abort(c);
        return;
    }
    if (c->close_pending) {
        /* Terminate sent or received, or stream lost: close once out. */
        if (v == RNIC_DP_OK) {
            rnic_conn_closed(c, true);
            return;
        }
    } else if (c->peer_fin && c->state == RNIC_CONN_RTS) {
        /* RFC 5040: the peer's FIN takes the QP through CLOSING. */
        rnic_ep_modify(c->ep, RNIC_QP_CLOSING);
        rnic_conn_set_state(c, RNIC_CONN_DRAINING);
        rnic_conn_step(c, false);
        return;
    }
    if (c->state == RNIC_CONN_DRAINING && v == RNIC_DP_OK) {
        /* Nothing in flight is left to send: our FIN. */
        shutdown(c->fd, SHUT_WR);
        rnic_conn_set_state(c, RNIC_CONN_FIN_WAIT);
    }
    if (c->state == RNIC_CONN_FIN_WAIT && c->peer_fin) {
        rnic_conn_closed(c, false);
        return;
    }
    rnic_conn_wait_dp(c, v);
}

/* Runs the pump after new work (a doorbell, a command); may free @c. */
void rnic_conn_run(RnicConn *c)
{
    if (c->ep) {
        rnic_conn_step(c, false);
    }
}

/*
 * The QP takes the stream over: its endpoint moves it IDLE -> RTS with
 * the negotiated limits and owns the stream from now on.  May free @c.
 */
void rnic_conn_adopt(RnicConn *c)
{
    const struct rnic_mpa_result *r = &c->mpa.result;
    uint32_t qpn = c->qp->qpn;

    rnic_conn_set_state(c, RNIC_CONN_RTS);
    timer_del(c->deadline);
    if (!rnic_dp_start(c, 0)) {
        rnic_conn_error(c, ENOMEM, "cannot start the QP's data path");
        return;
    }
    trace_rnic_conn_rts(c->id, qpn, r->rev, r->crc, r->ird, r->ord);
    rnic_conn_event(c->s, RNIC_EV_CONN_ESTABLISHED, qpn, c->id, 0);
    rnic_conn_step(c, false);
}

/* Graceful: what is in flight goes out, then FIN, then the peer's FIN. */
void rnic_conn_disconnect(RnicConn *c)
{
    if (!c->ep) {
        if (c->qp) {
            rnic_qp_modify(c->qp->core, RNIC_QP_CLOSING);
        }
        shutdown(c->fd, SHUT_WR);
        rnic_conn_closed(c, false);
        return;
    }
    if (c->state == RNIC_CONN_RTS) {
        rnic_ep_modify(c->ep, RNIC_QP_CLOSING);
        rnic_conn_set_state(c, RNIC_CONN_DRAINING);
    }
    rnic_conn_step(c, false);
}

/* A malformed WQE: Terminate, QP to TERMINATE then ERROR, close. */
void rnic_conn_local_error(RnicConn *c)
{
    if (!c->ep) {
        rnic_conn_abort(c);
        return;
    }
    rnic_ep_local_error(c->ep);
    c->rx_stopped = true;
    c->close_pending = true;
    rnic_conn_step(c, false);
}

/* ---- MPA phase ---- */

static void rnic_conn_mpa_done(RnicConn *c)
{
    if (c->initiator) {
        rnic_conn_adopt(c);
        return;
    }
    rnic_conn_set_state(c, RNIC_CONN_PENDING);
    rnic_eq_post(c->s, RNIC_EV_CONN_REQUEST, c->id, c->listener_id,
                 c->mpa.peer.pd_len);
}

static void rnic_conn_mpa_failed(RnicConn *c, int err)
{
    if (err == RNIC_MPA_ERR_REJECTED) {
        RnicState *s = c->s;
        uint32_t qpn = c->qp->qpn, id = c->id;
        uint16_t pd_len = c->mpa.peer.pd_len;

        trace_rnic_conn_rejected(id, pd_len);
        /* Readable by QUERY_CONN after the event */
        g_free(c->qp->rejected);
        c->qp->rejected = g_new(struct rnic_conn_info, 1);
        c->qp->rejected_conn = id;
        rnic_conn_info_fill(c, c->qp->rejected);
        rnic_conn_free(c);
        rnic_eq_post(s, RNIC_EV_CONN_REJECTED, qpn, id, pd_len);
        return;
    }
    trace_rnic_conn_error(c->id, EPROTO, rnic_mpa_strerror(err));
    if (c->initiator) {
        /* RFC 6581: the Terminate refusing the Reply, our only FPDU */
        if (c->mpa.out_len) {
            send(c->fd, c->mpa.out, c->mpa.out_len,
                 MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        rnic_conn_error(c, EPROTO, rnic_mpa_strerror(err));
    } else if (c->mpa.out_len) {
        /* The core built a Reject for the peer: send it, then close. */
        rnic_conn_set_state(c, RNIC_CONN_REJECTING);
        rnic_conn_send_mpa(c, c->mpa.out, c->mpa.out_len);
    } else {
        rnic_conn_free(c);   /* the guest never saw it: nothing to tell */
    }
}

static void rnic_conn_mpa_read(RnicConn *c)
{
    uint8_t buf[sizeof(c->early)];
    ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
    size_t used;
    int ret;

    rnic_capture_received(c, buf, n);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    if (n <= 0) {
        if (c->initiator) {
            rnic_conn_error(c, n ? errno : ECONNRESET,
                            "connection closed during MPA setup");
        } else {
            rnic_conn_free(c);
        }
        return;
    }
    ret = rnic_mpa_conn_input(&c->mpa, buf, n, &used);
    if (ret < 0) {
        rnic_conn_mpa_failed(c, ret);
        return;
    }
    if (ret == RNIC_MPA_DONE) {
        /* FPDUs may follow in the same read: keep them for the QP. */
        c->early_len = n - used;
        memcpy(c->early, buf + used, c->early_len);
        rnic_conn_mpa_done(c);
    }
}

static void rnic_conn_connected(RnicConn *c)
{
    int err = 0;
    socklen_t len = sizeof(err);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
        rnic_conn_error(c, err ? err : errno, "TCP connect failed");
        return;
    }
    if (!getsockname(c->fd, (struct sockaddr *)&ss, &sl)) {
        rnic_sockaddr_from_host(&ss, &c->local);
    }
    rnic_conn_set_state(c, RNIC_CONN_WAIT_REPLY);
    rnic_conn_send_mpa(c, c->mpa.out, c->mpa.out_len);
}

static void rnic_conn_mpa_write(RnicConn *c)
{
    ssize_t n;

    if (c->state == RNIC_CONN_CONNECTING) {
        rnic_conn_connected(c);
        return;
    }
    n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
             MSG_NOSIGNAL);
    rnic_capture_sent_buf(c, c->out + c->out_off, n);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    if (n < 0) {
        if (c->initiator) {
            rnic_conn_error(c, errno, "send failed during MPA setup");
        } else {
            rnic_conn_free(c);
        }
        return;
    }
    c->out_off += n;
    if (c->out_off == c->out_len && c->state == RNIC_CONN_REJECTING) {
        rnic_conn_free(c);
        return;
    }
    rnic_conn_wait_mpa(c);
}

/* ---- ways in ---- */

static void rnic_conn_read(void *opaque)
{
    RnicConn *c = opaque;

    if (c->ep) {
        rnic_conn_step(c, true);
    } else {
        rnic_conn_mpa_read(c);
    }
}

static void rnic_conn_write(void *opaque)
{
    RnicConn *c = opaque;

    if (c->ep) {
        rnic_conn_step(c, false);
    } else {
        rnic_conn_mpa_write(c);
    }
}

/* The MPA exchange or the graceful close took too long. */
static void rnic_conn_expired(void *opaque)
{
    RnicConn *c = opaque;

    qemu_log_mask(LOG_GUEST_ERROR, "rnic: conn 0x%x: peer silent for too "
                  "long in state %d (mpa-timeout-ms / close-timeout-ms); "
                  "reset\n", c->id, c->state);
    if (c->ep) {
        rnic_conn_abort(c);
    } else if (c->initiator && c->qp) {
        rnic_conn_reset_socket(c);
        rnic_conn_error(c, ETIMEDOUT, "MPA exchange timed out");
    } else {
        rnic_conn_drop(c);
    }
}

static void rnic_conn_delay_expired(void *opaque)
{
    RnicConn *c = opaque;

    c->delay_done = true;
    rnic_conn_run(c);
}

static void rnic_conn_readable(void *opaque)
{
    rnic_guarded(((RnicConn *)opaque)->s, rnic_conn_read, opaque);
}

static void rnic_conn_writable(void *opaque)
{
    rnic_guarded(((RnicConn *)opaque)->s, rnic_conn_write, opaque);
}

static void rnic_conn_deadline(void *opaque)
{
    rnic_guarded(((RnicConn *)opaque)->s, rnic_conn_expired, opaque);
}

static void rnic_conn_delay_over(void *opaque)
{
    rnic_guarded(((RnicConn *)opaque)->s, rnic_conn_delay_expired, opaque);
}

static void rnic_conn_again_run(void *opaque)
{
    rnic_conn_run(opaque);
}

static void rnic_conn_again(void *opaque)
{
    rnic_guarded_bh(((RnicConn *)opaque)->s, rnic_conn_again_run, opaque);
}

/* ---- a stopped VM (rnic-migrate.c) ---- */

/* What is left of @t in ms, -1 if it is not armed; it is disarmed. */
static int64_t rnic_timer_pause(QEMUTimer *t)
{
    int64_t left = -1;

    if (t && timer_pending(t)) {
        left = MAX(0, timer_expire_time_ns(t) / SCALE_MS -
                      qemu_clock_get_ms(QEMU_CLOCK_REALTIME));
        timer_del(t);
    }
    return left;
}

static void rnic_timer_resume(QEMUTimer *t, int64_t left)
{
    if (t && left >= 0) {
        timer_mod(t, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + left);
    }
}

/*
 * The VM stopped: nothing of @c runs (no handler, timer or bottom half)
 * until rnic_conn_thaw(), so nothing reaches guest memory after the
 * device's state is saved; the host's socket buffers hold what arrives.
 */
void rnic_conn_freeze(RnicConn *c)
{
    if (c->fd >= 0 && (c->watch_rd || c->watch_wr)) {
        rnic_set_fd_handler(c->s, c->fd, NULL, NULL, NULL);
    }
    c->deadline_left = rnic_timer_pause(c->deadline);
    c->delay_left = rnic_timer_pause(c->delay_timer);
    qemu_bh_cancel(c->bh);
}

void rnic_conn_thaw(RnicConn *c)
{
    if (c->fd >= 0 && (c->watch_rd || c->watch_wr)) {
        rnic_set_fd_handler(c->s, c->fd, c->watch_rd, c->watch_wr, c);
    }
    rnic_timer_resume(c->deadline, c->deadline_left);
    rnic_timer_resume(c->delay_timer, c->delay_left);
    qemu_bh_schedule(c->bh);    /* the pump looks once at what waited */
}

/* ---- a connection that moves with its socket (rnic-migrate.c) ---- */

/*
 * The stream is quiet to move: what was framed is in the socket (sent
 * now, while the VM stops, if the socket takes it), no Terminate and no
 * close under way.
 */
bool rnic_conn_quiesce(RnicConn *c)
{
    int64_t hold = c->hold_until - qemu_clock_get_ms(QEMU_CLOCK_REALTIME);

    /* siw-compat-hold-ms: at most that long, then the FPDUs it holds go */
    if (c->hold_until && hold > 0) {
        g_usleep(hold * 1000);
    }
    c->hold_until = 0;
    for (int i = 0; i < RNIC_DP_QUIESCE_RUNS; i++) {
        if (c->state != RNIC_CONN_RTS || !c->ep || c->close_pending ||
            c->peer_fin) {
            return false;
        }
        if (rnic_ep_tx_quiet(c->ep)) {
            return true;
        }
        if (rnic_dp_tx(c) != RNIC_DP_MORE && !rnic_ep_tx_quiet(c->ep)) {
            return false;
        }
    }
    return false;
}

/*
 * The socket went with the migration, closed in repair mode (the peer
 * sees nothing): @blob rebuilds it should this VM run again.
 */
void rnic_conn_detach(RnicConn *c, uint8_t *blob, size_t len)
{
    if (c->watch_rd || c->watch_wr) {
        rnic_set_fd_handler(c->s, c->fd, NULL, NULL, NULL);
    }
    rnic_cpr_drop(c->s->cpr_conns, c->id);
    close(c->fd);
    c->fd = -1;
    g_free(c->moved);
    c->moved = blob;
    c->moved_len = len;
}

/*
 * The VM runs: a socket that moved in (rebuilt in repair mode) goes live,
 * or one that left with a migration that failed comes back.
 */
bool rnic_conn_reattach(RnicConn *c)
{
    int ret = 0;

    if (c->fd < 0) {
        ret = c->fd = rnic_tcp_repair_rebuild(c->moved, c->moved_len);
        if (c->fd >= 0) {
            rnic_cpr_keep(c->s->cpr_conns, c->id, c->fd);
        }
    }
    if (c->fd >= 0) {
        ret = rnic_tcp_repair_resume(c->fd, c->moved, c->moved_len);
    }
    g_free(c->moved);
    c->moved = NULL;
    if (ret < 0) {
        trace_rnic_conn_error(c->id, -ret, "socket back from repair");
        return false;
    }
    return true;
}

/*
 * A connection that moved in with its socket @fd: rebuilt in repair mode
 * from @blob (live at thaw), or handed over live by cpr-transfer (@blob
 * NULL).  RTS on @qp, the stream where it was (the caller loads the
 * endpoint).  Nothing runs before thaw.
 */
RnicConn *rnic_conn_moved_in(RnicState *s, int fd, const uint8_t *blob,
                             size_t len, uint32_t id, bool initiator,
                             bool passive, RnicQp *qp,
                             const struct rnic_mpa_conn *mpa, uint32_t mulpdu)
{
    RnicConn *c = rnic_conn_new(s, fd, initiator, passive);

    if (!c) {
        close(fd);
        return NULL;
    }
    g_hash_table_remove(s->conn_ids, GUINT_TO_POINTER(c->id));
    rnic_cpr_drop(s->cpr_conns, c->id);
    c->id = id;
    g_hash_table_insert(s->conn_ids, GUINT_TO_POINTER(c->id), c);
    rnic_cpr_keep(s->cpr_conns, c->id, fd);
    c->mpa = *mpa;
    c->state = RNIC_CONN_RTS;
    c->qp = qp;
    qp->conn = c;
    if (!rnic_dp_start(c, mulpdu)) {
        rnic_conn_drop(c);
        return NULL;
    }
    c->hold_until = 0;
    c->watch_rd = rnic_conn_readable;
    c->moved = blob ? g_memdup2(blob, len) : NULL;
    c->moved_len = len;
    return c;
}
