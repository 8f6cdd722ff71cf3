/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Connection management.  The guest never gets a socket: the host makes
 * and accepts TCP connections (within listen-allow / peer-allow), the MPA
 * exchange runs here on QEMU's main loop with non-blocking sockets, and a
 * QP adopts the established connection when it goes to RTS; from then on
 * the byte stream belongs to the QP's data path.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/sockets.h"
#include "rnic.h"
#include "qp.h"
#include "engine.h"
#include "trace.h"

/* ---- address policy ---- */

static bool rnic_prefix_parse(const char *str, RnicPrefix *p)
{
    g_autofree char *addr = g_strdup(str);
    char *slash = strchr(addr, '/');
    unsigned max;

    if (slash) {
        *slash++ = '\0';
    }
    memset(p, 0, sizeof(*p));
    if (inet_pton(AF_INET, addr, p->addr) == 1) {
        p->family = AF_INET;
        max = 32;
    } else if (inet_pton(AF_INET6, addr, p->addr) == 1) {
        p->family = AF_INET6;
        max = 128;
    } else {
        return false;
    }
    p->bits = max;
    if (slash && (qemu_strtoui(slash, NULL, 10, &p->bits) || p->bits > max)) {
        return false;
    }
    return true;
}

static GArray *rnic_prefixes_parse(const char *list, const char *prop,
                                   Error **errp)
{
    g_auto(GStrv) items = g_strsplit(list, ",", 0);
    GArray *a = g_array_new(false, false, sizeof(RnicPrefix));

    for (char **it = items; *it; it++) {
        RnicPrefix p;

        if (!**it) {
            continue;
        }
        if (!rnic_prefix_parse(*it, &p)) {
            error_setg(errp, "rnic: %s: '%s' is not an address or "
                       "address/prefix", prop, *it);
            g_array_free(a, true);
            return NULL;
        }
        g_array_append_val(a, p);
    }
    return a;
}

static bool rnic_prefix_match(const RnicPrefix *p, const uint8_t *addr)
{
    unsigned full = p->bits / 8, rest = p->bits % 8;

    if (memcmp(p->addr, addr, full)) {
        return false;
    }
    return !rest || !((p->addr[full] ^ addr[full]) & (0xff << (8 - rest)));
}

static bool rnic_allowed(GArray *list, const struct rnic_sockaddr *a)
{
    int family = a->family == RNIC_AF_INET ? AF_INET : AF_INET6;

    for (guint i = 0; i < list->len; i++) {
        const RnicPrefix *p = &g_array_index(list, RnicPrefix, i);

        if (p->family == family && rnic_prefix_match(p, a->addr)) {
            return true;
        }
    }
    return false;
}

/* ---- socket addresses ---- */

static bool rnic_sockaddr_to_host(const struct rnic_sockaddr *a,
                                  struct sockaddr_storage *ss,
                                  socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
    if (a->family == RNIC_AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;

        in->sin_family = AF_INET;
        in->sin_port = htons(le16_to_cpu(a->port));
        memcpy(&in->sin_addr, a->addr, 4);
        *len = sizeof(*in);
        return true;
    }
    if (a->family == RNIC_AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(le16_to_cpu(a->port));
        memcpy(&in6->sin6_addr, a->addr, 16);
        *len = sizeof(*in6);
        return true;
    }
    return false;
}

static void rnic_sockaddr_from_host(const struct sockaddr_storage *ss,
                                    struct rnic_sockaddr *a)
{
    memset(a, 0, sizeof(*a));
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)ss;

        a->family = RNIC_AF_INET;
        a->port = cpu_to_le16(ntohs(in->sin_port));
        memcpy(a->addr, &in->sin_addr, 4);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const void *)ss;

        a->family = RNIC_AF_INET6;
        a->port = cpu_to_le16(ntohs(in6->sin6_port));
        memcpy(a->addr, &in6->sin6_addr, 16);
    }
}

static void rnic_fd_names(int fd, struct rnic_sockaddr *local,
                          struct rnic_sockaddr *peer)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (local && !getsockname(fd, (struct sockaddr *)&ss, &len)) {
        rnic_sockaddr_from_host(&ss, local);
    }
    len = sizeof(ss);
    if (peer && !getpeername(fd, (struct sockaddr *)&ss, &len)) {
        rnic_sockaddr_from_host(&ss, peer);
    }
}

/* ---- connection objects ---- */

static RnicConn *rnic_conn_get(RnicState *s, uint32_t id)
{
    uint32_t i = (id & 0xffff) - 1;

    if (i >= s->max_conns || !s->conns[i] || s->conns[i]->id != id) {
        return NULL;
    }
    return s->conns[i];
}

static RnicConn *rnic_conn_new(RnicState *s, int fd, bool initiator)
{
    RnicConn *c;
    uint32_t i;

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
    /* A generation in the high bits keeps stale ids from matching. */
    s->conn_gen++;
    c->id = (uint32_t)s->conn_gen << 16 | (i + 1);
    s->conns[i] = c;
    qemu_socket_set_nonblock(fd);
    socket_set_nodelay(fd);
    return c;
}

void rnic_conn_free(RnicConn *c)
{
    RnicState *s = c->s;

    trace_rnic_conn_free(c->id);
    rnic_dp_stop(c);
    qemu_set_fd_handler(c->fd, NULL, NULL, NULL);
    close(c->fd);
    if (c->qp) {
        c->qp->conn = NULL;
    }
    s->conns[(c->id & 0xffff) - 1] = NULL;
    g_free(c);
}

static void rnic_conn_readable(void *opaque);
static void rnic_conn_writable(void *opaque);

/*
 * Reads while the MPA exchange needs the peer's bytes; writes while there
 * is something to write.
 */
static void rnic_conn_update_handlers(RnicConn *c)
{
    bool rd = c->state == RNIC_CONN_WAIT_REPLY ||
              c->state == RNIC_CONN_WAIT_REQUEST;
    bool wr = c->state == RNIC_CONN_CONNECTING || c->out_off < c->out_len;

    qemu_set_fd_handler(c->fd, rd ? rnic_conn_readable : NULL,
                        wr ? rnic_conn_writable : NULL, c);
}

static void rnic_conn_queue(RnicConn *c, const void *buf, size_t len)
{
    assert(len <= sizeof(c->out));
    memcpy(c->out, buf, len);
    c->out_len = len;
    c->out_off = 0;
    rnic_conn_update_handlers(c);
}

static void rnic_conn_error(RnicConn *c, int err, const char *why)
{
    RnicState *s = c->s;

    trace_rnic_conn_error(c->id, err, why);
    rnic_eq_post(s, RNIC_EV_CONN_ERROR, c->qp ? c->qp->qpn : c->id, err, 0);
    if (c->ep) {
        rnic_ep_modify(c->ep, RNIC_QP_ERROR);
        rnic_cqs_flush_to_guest(s);
    }
    rnic_conn_free(c);
}

static void rnic_conn_set_state(RnicConn *c, RnicConnState state)
{
    trace_rnic_conn_state(c->id, c->state, state);
    c->state = state;
    rnic_conn_update_handlers(c);
}

/* Our limits and the guest's choices for an MPA exchange. */
static void rnic_mpa_params_for(RnicState *s, uint16_t ird, uint16_t ord,
                                const uint8_t *pd, uint16_t pd_len,
                                struct rnic_mpa_params *p)
{
    *p = (struct rnic_mpa_params) {
        .rev = s->mpa_rev,
        .crc = s->mpa_crc,
        .markers_wanted = s->mpa_markers,
        .markers_allowed = s->mpa_markers,
        .ird = MIN(ird, s->limits.max_ird),
        .ord = MIN(ord, s->limits.max_ord),
        .pd = pd,
        .pd_len = pd_len,
    };
}

/*
 * The QP takes the stream over: its endpoint moves it IDLE -> RTS with
 * the negotiated limits and owns the socket from now on.
 */
static void rnic_conn_adopt(RnicConn *c)
{
    const struct rnic_mpa_result *r = &c->mpa.result;
    uint32_t qpn = c->qp->qpn;

    trace_rnic_conn_state(c->id, c->state, RNIC_CONN_RTS);
    c->state = RNIC_CONN_RTS;
    if (!rnic_dp_start(c)) {
        rnic_conn_error(c, ENOMEM, "cannot start the QP's data path");
        return;
    }
    trace_rnic_conn_rts(c->id, qpn, r->rev, r->crc, r->ird, r->ord);
    rnic_eq_post(c->s, RNIC_EV_CONN_ESTABLISHED, qpn, c->id, 0);
    rnic_dp_pump(c);    /* last: it may close the connection */
}

/* The LLP connection is gone, or we close it: the QP learns, then the guest. */
void rnic_conn_closed(RnicConn *c, bool abortive)
{
    RnicState *s = c->s;
    RnicQp *qp = c->qp;

    if (c->ep) {
        rnic_ep_connection_closed(c->ep);
    } else if (qp) {
        rnic_qp_connection_closed(qp->core);
    }
    rnic_conn_free(c);
    rnic_cqs_flush_to_guest(s);
    if (qp) {
        rnic_eq_post(s, RNIC_EV_CONN_CLOSED, qp->qpn, abortive, 0);
    }
}

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
    RnicState *s = c->s;

    if (err == RNIC_MPA_ERR_REJECTED) {
        uint32_t qpn = c->qp->qpn;

        trace_rnic_conn_rejected(c->id, c->mpa.peer.pd_len);
        rnic_eq_post(s, RNIC_EV_CONN_REJECTED, qpn, c->id,
                     c->mpa.peer.pd_len);
        rnic_conn_free(c);
        return;
    }
    if (c->mpa.out_len) {
        /* The core built a Reject for the peer: send it, then close. */
        rnic_conn_queue(c, c->mpa.out, c->mpa.out_len);
        rnic_conn_set_state(c, RNIC_CONN_CLOSING);
    }
    trace_rnic_conn_error(c->id, EPROTO, rnic_mpa_strerror(err));
    if (!c->initiator) {
        /* The guest never saw this connection: nothing to tell it. */
        if (c->state != RNIC_CONN_CLOSING) {
            rnic_conn_free(c);
        }
        return;
    }
    rnic_conn_error(c, EPROTO, rnic_mpa_strerror(err));
}

static void rnic_conn_read(void *opaque)
{
    RnicConn *c = opaque;
    uint8_t buf[sizeof(c->early)];
    ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
    size_t used;
    int ret;

    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    if (n <= 0) {
        rnic_conn_error(c, n ? errno : ECONNRESET,
                        "connection closed during MPA setup");
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

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
        rnic_conn_error(c, err ? err : errno, "TCP connect failed");
        return;
    }
    rnic_fd_names(c->fd, &c->local, NULL);
    trace_rnic_conn_state(c->id, c->state, RNIC_CONN_WAIT_REPLY);
    c->state = RNIC_CONN_WAIT_REPLY;
    rnic_conn_queue(c, c->mpa.out, c->mpa.out_len);
}

static void rnic_conn_write(void *opaque)
{
    RnicConn *c = opaque;
    ssize_t n;

    if (c->state == RNIC_CONN_CONNECTING) {
        rnic_conn_connected(c);
        return;
    }
    n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
             MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    if (n < 0) {
        rnic_conn_error(c, errno, "send failed during MPA setup");
        return;
    }
    c->out_off += n;
    if (c->out_off < c->out_len) {
        return;
    }
    if (c->state == RNIC_CONN_CLOSING) {
        rnic_conn_free(c);
        return;
    }
    rnic_conn_update_handlers(c);
}

static void rnic_conn_readable(void *opaque)
{
    rnic_guarded(((RnicConn *)opaque)->s, rnic_conn_read, opaque);
}

static void rnic_conn_writable(void *opaque)
{
    rnic_guarded(((RnicConn *)opaque)->s, rnic_conn_write, opaque);
}

/*
 * The MPA Reply goes out before the QP's data path owns the socket: a
 * fresh socket buffer always takes a frame of at most 532 bytes, and if it
 * did not, the stream could not be used anyway.
 */
static void rnic_conn_send_reply(RnicConn *c, const void *buf, size_t len)
{
    ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);

    if (n != (ssize_t)len) {
        trace_rnic_conn_error(c->id, n < 0 ? errno : EAGAIN,
                              "MPA Reply not written at once");
        shutdown(c->fd, SHUT_RDWR);
    }
}

/* SO_LINGER 0: close() sends a reset, as an abortive close must. */
void rnic_conn_abort(RnicConn *c)
{
    struct linger lg = { .l_onoff = 1, .l_linger = 0 };

    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    if (c->ep) {
        rnic_ep_modify(c->ep, RNIC_QP_ERROR);
    } else if (c->qp) {
        rnic_qp_modify(c->qp->core, RNIC_QP_ERROR);
    }
    rnic_conn_closed(c, true);
}

/* Graceful: what was handed to the socket is delivered, then FIN. */
static void rnic_conn_shutdown(RnicConn *c)
{
    if (c->ep) {
        rnic_ep_modify(c->ep, RNIC_QP_CLOSING);
    } else if (c->qp) {
        rnic_qp_modify(c->qp->core, RNIC_QP_CLOSING);
    }
    shutdown(c->fd, SHUT_WR);
    rnic_conn_closed(c, false);
}

/* ---- listeners ---- */

static void rnic_listener_accept(void *opaque)
{
    RnicListener *l = opaque;
    struct rnic_mpa_params p;
    RnicConn *c;
    int fd = qemu_accept(l->fd, NULL, NULL);

    if (fd < 0) {
        return;
    }
    c = rnic_conn_new(l->s, fd, false);
    if (!c) {
        qemu_log_mask(LOG_GUEST_ERROR, "rnic: connection table full; "
                      "incoming connection refused\n");
        close(fd);
        return;
    }
    c->listener_id = l->id;
    rnic_fd_names(fd, &c->local, &c->peer);
    rnic_mpa_params_for(l->s, l->s->limits.max_ird, l->s->limits.max_ord,
                        NULL, 0, &p);
    rnic_mpa_conn_init(&c->mpa, false, &p);
    trace_rnic_conn_incoming(c->id, l->id);
    rnic_conn_set_state(c, RNIC_CONN_WAIT_REQUEST);
}

static void rnic_listener_acceptable(void *opaque)
{
    rnic_guarded(((RnicListener *)opaque)->s, rnic_listener_accept, opaque);
}

static uint16_t rnic_cm_fail(const char *cmd, uint16_t status,
                             const char *why)
{
    qemu_log_mask(LOG_GUEST_ERROR, "rnic: %s failed: %s\n", cmd, why);
    trace_rnic_err_cmd(cmd, status, why);
    return status;
}

uint16_t rnic_cmd_listen(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_listen *p = (void *)cmd->u.raw;
    struct sockaddr_storage ss;
    socklen_t len;
    RnicListener *l = NULL;
    int fd, one = 1;

    if (!rnic_sockaddr_to_host(&p->local, &ss, &len)) {
        return rnic_cm_fail("LISTEN", RNIC_CMD_ERR_PARAM, "bad family");
    }
    if (!rnic_allowed(s->listen_allow, &p->local)) {
        return rnic_cm_fail("LISTEN", RNIC_CMD_ERR_DENIED,
                            "address not in listen-allow");
    }
    for (int i = 0; i < RNIC_MAX_LISTENERS && !l; i++) {
        l = s->listeners[i].id ? NULL : &s->listeners[i];
    }
    if (!l) {
        return rnic_cm_fail("LISTEN", RNIC_CMD_ERR_RESOURCE,
                            "all listeners in use");
    }
    fd = qemu_socket(ss.ss_family, SOCK_STREAM, 0);
    if (fd < 0) {
        return rnic_cm_fail("LISTEN", RNIC_CMD_ERR_RESOURCE, "no socket");
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, len) ||
        listen(fd, MAX(1, MIN(le32_to_cpu(p->backlog), 128)))) {
        close(fd);
        return rnic_cm_fail("LISTEN", RNIC_CMD_ERR_ADDRINUSE,
                            "host cannot bind or listen on the address");
    }
    qemu_socket_set_nonblock(fd);
    l->s = s;
    l->fd = fd;
    l->id = l - s->listeners + 1;
    rnic_fd_names(fd, &l->local, NULL);
    p->local = l->local;
    p->listener_id = cpu_to_le32(l->id);
    qemu_set_fd_handler(fd, rnic_listener_acceptable, NULL, l);
    trace_rnic_listen(l->id, le16_to_cpu(l->local.port));
    return RNIC_CMD_OK;
}

static void rnic_listener_close(RnicListener *l)
{
    qemu_set_fd_handler(l->fd, NULL, NULL, NULL);
    close(l->fd);
    l->id = 0;
}

uint16_t rnic_cmd_unlisten(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_listen *p = (void *)cmd->u.raw;
    uint32_t id = le32_to_cpu(p->listener_id);

    if (!id || id > RNIC_MAX_LISTENERS || !s->listeners[id - 1].id) {
        return rnic_cm_fail("UNLISTEN", RNIC_CMD_ERR_HANDLE,
                            "no such listener");
    }
    rnic_listener_close(&s->listeners[id - 1]);
    return RNIC_CMD_OK;
}

/* Reads the guest's private data for an MPA frame. */
static uint16_t rnic_cm_pdata(RnicState *s, const struct rnic_cmd_connect *p,
                              uint8_t *buf)
{
    uint16_t len = le16_to_cpu(p->pdata_len);

    if (len > RNIC_MAX_PDATA - 4) {     /* RFC 6581 takes 4 of the 512 */
        return RNIC_CMD_ERR_PARAM;
    }
    if (len && rnic_pci_read(s, le64_to_cpu(p->pdata_addr), buf, len)) {
        return RNIC_CMD_ERR_DMA;
    }
    return RNIC_CMD_OK;
}

/* A QP may adopt one connection, and only while IDLE. */
static RnicQp *rnic_cm_idle_qp(RnicState *s, uint32_t qpn)
{
    RnicQp *qp = rnic_qp_get(s, qpn);

    return qp && !qp->conn && qp->core->state == RNIC_QP_IDLE ? qp : NULL;
}

static uint16_t rnic_conn_start_initiator(RnicState *s, RnicConn *c,
                                          RnicQp *qp,
                                          const struct rnic_cmd_connect *p,
                                          const uint8_t *pd)
{
    struct rnic_mpa_params mp;

    rnic_mpa_params_for(s, le16_to_cpu(p->ird), le16_to_cpu(p->ord), pd,
                        le16_to_cpu(p->pdata_len), &mp);
    if (rnic_mpa_conn_init(&c->mpa, true, &mp) < 0) {
        return RNIC_CMD_ERR_PARAM;
    }
    c->qp = qp;
    qp->conn = c;
    return RNIC_CMD_OK;
}

uint16_t rnic_cmd_connect(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_connect *p = (void *)cmd->u.raw;
    uint8_t pd[RNIC_MAX_PDATA];
    struct sockaddr_storage ss;
    socklen_t len;
    RnicQp *qp = rnic_cm_idle_qp(s, le32_to_cpu(p->qpn));
    uint16_t status;
    RnicConn *c;
    int fd;

    if (!qp) {
        return rnic_cm_fail("CONNECT", RNIC_CMD_ERR_STATE,
                            "no such QP, or not IDLE and unconnected");
    }
    if (!rnic_sockaddr_to_host(&p->peer, &ss, &len)) {
        return rnic_cm_fail("CONNECT", RNIC_CMD_ERR_PARAM, "bad family");
    }
    if (!rnic_allowed(s->peer_allow, &p->peer)) {
        return rnic_cm_fail("CONNECT", RNIC_CMD_ERR_DENIED,
                            "peer not in peer-allow");
    }
    status = rnic_cm_pdata(s, p, pd);
    if (status != RNIC_CMD_OK) {
        return rnic_cm_fail("CONNECT", status, "private data");
    }
    fd = qemu_socket(ss.ss_family, SOCK_STREAM, 0);
    c = fd < 0 ? NULL : rnic_conn_new(s, fd, true);
    if (!c) {
        if (fd >= 0) {
            close(fd);
        }
        return rnic_cm_fail("CONNECT", RNIC_CMD_ERR_RESOURCE,
                            "no socket or connection slot");
    }
    c->peer = p->peer;
    status = rnic_conn_start_initiator(s, c, qp, p, pd);
    if (status != RNIC_CMD_OK) {
        rnic_conn_free(c);
        return rnic_cm_fail("CONNECT", status, "MPA parameters");
    }
    /* Non-blocking: completion (or failure) arrives as writability. */
    if (connect(fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS) {
        int err = errno;

        rnic_conn_free(c);
        trace_rnic_conn_error(0, err, "connect");
        return rnic_cm_fail("CONNECT", RNIC_CMD_ERR_PARAM, strerror(err));
    }
    trace_rnic_connect(c->id, qp->qpn, le16_to_cpu(p->peer.port));
    rnic_conn_set_state(c, RNIC_CONN_CONNECTING);
    p->conn_id = cpu_to_le32(c->id);
    return RNIC_CMD_OK;
}

/* Responder side: the guest's answer to CONN_REQUEST. */
static uint16_t rnic_conn_reply(RnicState *s, RnicConn *c, RnicQp *qp,
                                const struct rnic_cmd_connect *p,
                                const uint8_t *pd)
{
    struct rnic_mpa_params mp;
    int len;

    rnic_mpa_params_for(s, le16_to_cpu(p->ird), le16_to_cpu(p->ord), pd,
                        le16_to_cpu(p->pdata_len), &mp);
    if (rnic_mpa_negotiate_request(&mp, &c->mpa.peer, &c->mpa.result) < 0) {
        return RNIC_CMD_ERR_PARAM;
    }
    len = rnic_mpa_build_reply(&mp, &c->mpa.result, c->mpa.out,
                               sizeof(c->mpa.out));
    if (len < 0) {
        return RNIC_CMD_ERR_PARAM;
    }
    c->qp = qp;
    qp->conn = c;
    rnic_conn_send_reply(c, c->mpa.out, len);
    rnic_conn_adopt(c);
    return RNIC_CMD_OK;
}

uint16_t rnic_cmd_accept(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_connect *p = (void *)cmd->u.raw;
    RnicConn *c = rnic_conn_get(s, le32_to_cpu(p->conn_id));
    RnicQp *qp = rnic_cm_idle_qp(s, le32_to_cpu(p->qpn));
    uint8_t pd[RNIC_MAX_PDATA];
    uint16_t status;

    if (!c || c->state != RNIC_CONN_PENDING) {
        return rnic_cm_fail("ACCEPT", RNIC_CMD_ERR_HANDLE,
                            "no pending connection with this id");
    }
    if (!qp) {
        return rnic_cm_fail("ACCEPT", RNIC_CMD_ERR_STATE,
                            "no such QP, or not IDLE and unconnected");
    }
    status = rnic_cm_pdata(s, p, pd);
    if (status != RNIC_CMD_OK) {
        return rnic_cm_fail("ACCEPT", status, "private data");
    }
    if (c->initiator) {
        /* A handed-in connection on which we speak first. */
        status = rnic_conn_start_initiator(s, c, qp, p, pd);
        if (status == RNIC_CMD_OK) {
            trace_rnic_conn_state(c->id, c->state, RNIC_CONN_WAIT_REPLY);
            c->state = RNIC_CONN_WAIT_REPLY;
            rnic_conn_queue(c, c->mpa.out, c->mpa.out_len);
        }
    } else {
        status = rnic_conn_reply(s, c, qp, p, pd);
    }
    return status == RNIC_CMD_OK ? status
                                 : rnic_cm_fail("ACCEPT", status, "MPA");
}

uint16_t rnic_cmd_reject(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_connect *p = (void *)cmd->u.raw;
    RnicConn *c = rnic_conn_get(s, le32_to_cpu(p->conn_id));
    uint8_t pd[RNIC_MAX_PDATA];
    uint16_t status;
    int len;

    if (!c || c->state != RNIC_CONN_PENDING) {
        return rnic_cm_fail("REJECT", RNIC_CMD_ERR_HANDLE,
                            "no pending connection with this id");
    }
    status = rnic_cm_pdata(s, p, pd);
    if (status != RNIC_CMD_OK) {
        return rnic_cm_fail("REJECT", status, "private data");
    }
    if (c->initiator) {
        rnic_conn_free(c);      /* nothing was said yet: just close */
        return RNIC_CMD_OK;
    }
    len = rnic_mpa_build_reject(c->mpa.peer.rev, pd,
                                le16_to_cpu(p->pdata_len), c->mpa.out,
                                sizeof(c->mpa.out));
    if (len < 0) {
        return rnic_cm_fail("REJECT", RNIC_CMD_ERR_PARAM, "MPA reject");
    }
    trace_rnic_conn_state(c->id, c->state, RNIC_CONN_CLOSING);
    c->state = RNIC_CONN_CLOSING;
    rnic_conn_queue(c, c->mpa.out, len);
    return RNIC_CMD_OK;
}

uint16_t rnic_cmd_disconnect(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_disconnect *p = (void *)cmd->u.raw;
    RnicQp *qp = rnic_qp_get(s, le32_to_cpu(p->qpn));
    bool abort = le32_to_cpu(p->flags) & RNIC_DISCONNECT_ABORT;
    RnicConn *c = qp ? qp->conn : NULL;

    if (!c) {
        return rnic_cm_fail("DISCONNECT", RNIC_CMD_ERR_STATE,
                            "no such QP, or not connected");
    }
    if (abort) {
        rnic_conn_abort(c);
    } else {
        rnic_conn_shutdown(c);
    }
    return RNIC_CMD_OK;
}

uint16_t rnic_cmd_query_conn(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_query_conn *p = (void *)cmd->u.raw;
    RnicConn *c = rnic_conn_get(s, le32_to_cpu(p->conn_id));
    struct rnic_conn_info info;

    if (!c) {
        return rnic_cm_fail("QUERY_CONN", RNIC_CMD_ERR_HANDLE,
                            "no such connection");
    }
    memset(&info, 0, sizeof(info));
    info.local = c->local;
    info.peer = c->peer;
    info.ird = cpu_to_le16(c->mpa.peer.ird);
    info.ord = cpu_to_le16(c->mpa.peer.ord);
    info.pdata_len = cpu_to_le16(c->mpa.peer.pd_len);
    info.mpa_rev = c->mpa.peer.rev;
    info.mpa_crc = c->mpa.result.crc;
    memcpy(info.pdata, c->mpa.peer.pd, c->mpa.peer.pd_len);
    if (rnic_pci_write(s, le64_to_cpu(p->info_addr), &info, sizeof(info))) {
        return rnic_cm_fail("QUERY_CONN", RNIC_CMD_ERR_DMA,
                            "info buffer not writable");
    }
    return RNIC_CMD_OK;
}

/*
 * Seed 004: a TCP connection made outside QEMU, handed in as a file
 * descriptor, is offered to the guest like an incoming one.  As responder
 * we first wait for the peer's MPA Request; as initiator the guest's
 * ACCEPT makes us send ours.
 */
bool rnic_cm_hand_in_fd(RnicState *s, int fd, bool initiator, Error **errp)
{
    struct rnic_mpa_params p;
    RnicConn *c;
    int type = 0;
    socklen_t len = sizeof(type);

    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) ||
        type != SOCK_STREAM) {
        error_setg(errp, "rnic: handed-in fd %d is not a stream socket", fd);
        return false;
    }
    c = rnic_conn_new(s, fd, initiator);
    if (!c) {
        error_setg(errp, "rnic: connection table full");
        return false;
    }
    c->listener_id = RNIC_LISTENER_HANDED_IN;
    rnic_fd_names(fd, &c->local, &c->peer);
    trace_rnic_conn_incoming(c->id, c->listener_id);
    if (initiator) {
        rnic_conn_set_state(c, RNIC_CONN_PENDING);
        rnic_eq_post(s, RNIC_EV_CONN_REQUEST, c->id, c->listener_id, 0);
        return true;
    }
    rnic_mpa_params_for(s, s->limits.max_ird, s->limits.max_ord, NULL, 0, &p);
    rnic_mpa_conn_init(&c->mpa, false, &p);
    rnic_conn_set_state(c, RNIC_CONN_WAIT_REQUEST);
    return true;
}

void rnic_cm_qp_gone(RnicState *s, RnicQp *qp)
{
    if (qp->conn) {
        rnic_conn_free(qp->conn);
    }
}

bool rnic_cm_init(RnicState *s, Error **errp)
{
    s->listen_allow = rnic_prefixes_parse(s->listen_allow_str ?:
                                          "127.0.0.0/8,::1", "listen-allow",
                                          errp);
    if (!s->listen_allow) {
        return false;
    }
    s->peer_allow = rnic_prefixes_parse(s->peer_allow_str ?:
                                        "127.0.0.0/8,::1", "peer-allow", errp);
    if (!s->peer_allow) {
        return false;
    }
    s->max_conns = MIN(2 * s->limits.max_qp, 0xffff);
    s->conns = g_new0(RnicConn *, s->max_conns);
    return true;
}

/* Reset closes every connection and listener. */
void rnic_cm_reset(RnicState *s)
{
    for (uint32_t i = 0; i < s->max_conns; i++) {
        if (s->conns[i]) {
            rnic_conn_free(s->conns[i]);
        }
    }
    for (int i = 0; i < RNIC_MAX_LISTENERS; i++) {
        if (s->listeners[i].id) {
            rnic_listener_close(&s->listeners[i]);
        }
    }
}

void rnic_cm_fini(RnicState *s)
{
    rnic_cm_reset(s);
    g_free(s->conns);
    g_array_free(s->listen_allow, true);
    g_array_free(s->peer_allow, true);
}
