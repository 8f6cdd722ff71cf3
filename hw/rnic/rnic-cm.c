/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Connection commands, listeners and the address policy.  The guest never
 * gets a socket: the host makes and accepts TCP connections (within
 * listen-allow / peer-allow), and rnic-conn.c owns each one from then on:
 * the MPA exchange, the QP's stream, the close.  Commands here only start
 * and steer connections.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/sockets.h"
#include "qemu/timer.h"
#include "rnic.h"
#include "rnic-capture.h"
#include "trace.h"

/* A listener whose accept() lacked resources tries again this late. */
#define RNIC_LISTEN_RETRY_MS 200

/* ---- address policy (core/device/addr_policy.c) ---- */

static bool rnic_policy_parse(const char *str, struct rnic_addr_policy *p,
                              const char *prop, Error **errp)
{
    char bad[64];
    int ret = rnic_addr_policy_parse(str, p, bad, sizeof(bad));

    if (ret == -EINVAL) {
        error_setg(errp, "rnic: %s: '%s' is not ADDR[/BITS][:PORT[-PORT]] "
                   "(IPv6 with a port: [ADDR][/BITS]:PORT[-PORT])", prop, bad);
    } else if (ret) {
        error_setg(errp, "rnic: %s: out of memory", prop);
    }
    return !ret;
}

/*
 * True when @a is allowed by @p; otherwise says, as a guest error, which
 * property would allow it.
 */
static bool rnic_allowed(const struct rnic_addr_policy *p, const char *prop,
                         uint8_t opcode, const struct rnic_sockaddr *a)
{
    const char *cmd = rnic_cmd_name(opcode);
    enum rnic_addr_family f = a->family == RNIC_AF_INET ? RNIC_ADDR_IPV4
                                                        : RNIC_ADDR_IPV6;
    uint16_t port = le16_to_cpu(a->port);
    char buf[64], rule[64];

    if (rnic_addr_policy_allows(p, f, a->addr, port)) {
        return true;
    }
    rnic_addr_str(f, a->addr, port, buf, sizeof(buf));
    if (port) {
        qemu_log_mask(LOG_GUEST_ERROR, "rnic: %s to %s refused: not in %s; "
                      "allow it with -device rnic,%s=%s\n", cmd, buf, prop,
                      prop, buf);
        return false;
    }
    /* A rule that names ports never matches port 0: the rule has none. */
    pstrcpy(rule, sizeof(rule), buf);
    *strrchr(rule, ':') = '\0';
    qemu_log_mask(LOG_GUEST_ERROR, "rnic: %s to %s refused: not in %s; "
                  "port 0 is allowed only by a rule without a port, which "
                  "allows every port of the address: -device rnic,%s=%s\n",
                  cmd, buf, prop, prop, rule);
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

void rnic_sockaddr_from_host(const struct sockaddr_storage *ss,
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

/*
 * RFC 6581 RTR types: offered as initiator (mpa-p2p), taken as responder,
 * unless the guest's CONNECT or ACCEPT names them (@given, RNIC_RTR_*).
 */
static uint8_t rnic_cm_rtr(RnicState *s, bool initiator, uint8_t given)
{
    if (given & RNIC_RTR_GIVEN) {
        return given & RNIC_RTR_TYPES;
    }
    return initiator && !s->params.mpa_p2p ? 0 : s->params.mpa_rtr;
}

/* Our limits and the guest's choices for an MPA exchange. */
void rnic_mpa_params_for(RnicState *s, uint16_t ird, uint16_t ord,
                         const uint8_t *pd, uint16_t pd_len, uint8_t rtr,
                         struct rnic_mpa_params *p)
{
    *p = (struct rnic_mpa_params) {
        .rev = s->params.mpa_rev,
        .crc = s->params.mpa_crc,
        .markers_wanted = s->params.mpa_markers,
        .markers_allowed = s->params.mpa_markers,
        .ird = MIN(ird, s->params.limits.max_ird),
        .ord = MIN(ord, s->params.limits.max_ord),
        .rtr = rtr,
        .pd = pd,
        .pd_len = pd_len,
    };
}

/* ---- listeners ---- */

static void rnic_listener_acceptable(void *opaque);

/* An incoming connection refused before the guest hears of it: reset. */
static void rnic_listener_refuse(int fd, uint32_t listener, const char *why)
{
    struct linger lg = { .l_onoff = 1, .l_linger = 0 };

    qemu_log_mask(LOG_GUEST_ERROR, "rnic: listener %u: incoming connection "
                  "reset: %s\n", listener, why);
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
}

/*
 * Connections a listener may hold unanswered (MPA Request awaited, or
 * CONN_REQUEST posted): its LISTEN backlog, and its equal share of half
 * the event ring, so requests cannot push other events out and one
 * listener's silent peers cannot take another's room.
 */
static uint32_t rnic_listener_share(RnicState *s, const RnicListener *l)
{
    uint32_t open = 0;
    /* A disabled device's ring registers are the guest's to set at will. */
    uint32_t room = s->status & RNIC_STATUS_READY ?
                    rnic_ring_entries(&s->eq) / 2 : UINT32_MAX;

    for (int i = 0; i < RNIC_MAX_LISTENERS; i++) {
        open += !!s->listeners[i].id;
    }
    return MIN(l->backlog, MAX(1, room / MAX(open, 1)));
}

/*
 * A listener takes connections from the host's accept queue only while
 * it has room: the rest wait there, as in any TCP backlog, instead of
 * being reset, and come in as the guest answers the ones it has.
 */
static void rnic_listener_watch(RnicListener *l)
{
    bool want = l->fd >= 0 && !timer_pending(l->retry) &&
                l->waiting < rnic_listener_share(l->s, l);

    if (want != l->watched) {
        l->watched = want;
        rnic_set_fd_handler(l->s, l->fd, want ? rnic_listener_acceptable
                                              : NULL, NULL, l);
    }
}

/* A listener's count or the set of listeners changed: shares move. */
void rnic_listeners_watch(RnicState *s)
{
    for (int i = 0; i < RNIC_MAX_LISTENERS; i++) {
        if (s->listeners[i].id) {
            rnic_listener_watch(&s->listeners[i]);
        }
    }
}

/*
 * accept() failed for want of descriptors or memory: the connection stays
 * in the host's queue, so the listener would be readable at once again.
 * It sleeps instead, and tries again later.
 */
static void rnic_listener_sleep(RnicListener *l, int err)
{
    warn_report_once("rnic: accept failed (%s); listeners pause %d ms "
                     "between attempts", strerror(err),
                     RNIC_LISTEN_RETRY_MS);
    trace_rnic_conn_error(l->id, err, "accept");
    timer_mod(l->retry, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
              RNIC_LISTEN_RETRY_MS);
    rnic_listener_watch(l);
}

static void rnic_listener_accept(void *opaque)
{
    RnicListener *l = opaque;
    RnicState *s = l->s;
    struct rnic_mpa_params p;
    RnicConn *c;
    int fd;

    if (l->waiting >= rnic_listener_share(s, l)) {
        rnic_listener_watch(l);     /* a new listener took part of its share */
        return;
    }
    fd = qemu_accept(l->fd, NULL, NULL);
    if (fd < 0) {
        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
            rnic_listener_sleep(l, errno);
        }
        return;
    }
    c = rnic_conn_new(s, fd, false, true);
    if (!c) {
        rnic_listener_refuse(fd, l->id, "no connection slot for incoming "
                             "connections (max-qps are kept for CONNECT)");
        return;
    }
    c->listener_id = l->id;
    c->waiting = true;
    l->waiting++;
    rnic_listener_watch(l);
    rnic_fd_names(fd, &c->local, &c->peer);
    rnic_mpa_params_for(s, s->params.limits.max_ird,
                        s->params.limits.max_ord, NULL, 0,
                        rnic_cm_rtr(s, false, 0), &p);
    rnic_mpa_conn_init(&c->mpa, false, &p);
    trace_rnic_conn_incoming(c->id, l->id);
    rnic_conn_set_state(c, RNIC_CONN_WAIT_REQUEST);
}

/*
 * A listening socket on l->local (the host's address; port 0: any), whose
 * port then is the one bound.  false, with no socket, if the host refuses.
 */
static bool rnic_listener_bind(RnicListener *l)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd, one = 1;

    l->fd = -1;
    if (!rnic_sockaddr_to_host(&l->local, &ss, &len)) {
        return false;
    }
    fd = qemu_socket(ss.ss_family, SOCK_STREAM, 0);
    if (fd < 0) {
        return false;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, l->backlog)) {
        close(fd);
        return false;
    }
    qemu_socket_set_nonblock(fd);
    l->fd = fd;
    rnic_fd_names(fd, &l->local, NULL);
    rnic_cpr_keep(l->s->cpr_listeners, l - l->s->listeners, fd);
    return true;
}

static void rnic_listener_wake(void *opaque)
{
    RnicListener *l = opaque;

    if (l->fd < 0 && !l->s->frozen && !rnic_listener_bind(l)) {
        timer_mod(l->retry, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                  RNIC_LISTEN_RETRY_MS);
    }
    rnic_listener_watch(l);
}

static void rnic_listener_acceptable(void *opaque)
{
    rnic_guarded(((RnicListener *)opaque)->s, rnic_listener_accept, opaque);
}

static void rnic_listener_retry(void *opaque)
{
    rnic_guarded(((RnicListener *)opaque)->s, rnic_listener_wake, opaque);
}

uint16_t rnic_cmd_listen(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_listen *p = (void *)cmd->u.raw;
    struct rnic_sockaddr local = rnic_addr_to_host(s, &p->local);
    struct sockaddr_storage ss;
    socklen_t len;
    RnicListener *l = NULL;

    if (!rnic_sockaddr_to_host(&local, &ss, &len)) {
        return rnic_cmd_fail(RNIC_CMD_LISTEN, RNIC_CMD_ERR_PARAM,
                             "local.family is not INET or INET6");
    }
    if (!rnic_allowed(&s->params.listen_allow, "listen-allow", RNIC_CMD_LISTEN,
                      &local)) {
        return rnic_cmd_fail(RNIC_CMD_LISTEN, RNIC_CMD_ERR_DENIED,
                             "local: not in listen-allow");
    }
    for (int i = 0; i < RNIC_MAX_LISTENERS && !l; i++) {
        l = s->listeners[i].id ? NULL : &s->listeners[i];
    }
    if (!l) {
        return rnic_cmd_fail(RNIC_CMD_LISTEN, RNIC_CMD_ERR_RESOURCE,
                             "all listeners in use");
    }
    l->s = s;
    l->local = local;
    l->backlog = MAX(1, MIN(le32_to_cpu(p->backlog), RNIC_MAX_BACKLOG));
    if (!rnic_listener_bind(l)) {
        return rnic_cmd_fail(RNIC_CMD_LISTEN, RNIC_CMD_ERR_ADDRINUSE,
                             "local: the host cannot bind or listen on it");
    }
    l->id = l - s->listeners + 1;
    l->waiting = 0;
    l->watched = false;
    l->retry = rnic_timer_new_ms(s, rnic_listener_retry, l);
    /* The guest's address stays; only the port the host chose is news. */
    p->local.port = l->local.port;
    p->listener_id = cpu_to_le32(l->id);
    rnic_listeners_watch(s);
    trace_rnic_listen(l->id, le16_to_cpu(l->local.port));
    return RNIC_CMD_OK;
}

/* The listener and the connections it has not handed to a QP yet. */
static void rnic_listener_close(RnicListener *l)
{
    RnicState *s = l->s;

    for (uint32_t i = 0; i < s->max_conns; i++) {
        RnicConn *c = s->conns[i];

        if (c && c->listener_id == l->id && !c->qp) {
            rnic_conn_drop(c);
        }
    }
    if (l->fd >= 0) {
        rnic_set_fd_handler(l->s, l->fd, NULL, NULL, NULL);
        rnic_cpr_drop(s->cpr_listeners, l - s->listeners);
        close(l->fd);
    }
    timer_free(l->retry);
    l->retry = NULL;
    l->id = 0;
    l->watched = false;
    rnic_listeners_watch(s);
}

uint16_t rnic_cmd_unlisten(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_listen *p = (void *)cmd->u.raw;
    uint32_t id = le32_to_cpu(p->listener_id);

    if (!id || id > RNIC_MAX_LISTENERS || !s->listeners[id - 1].id) {
        return rnic_cmd_fail(RNIC_CMD_UNLISTEN, RNIC_CMD_ERR_HANDLE,
                             "listener_id: no such listener");
    }
    rnic_listener_close(&s->listeners[id - 1]);
    return RNIC_CMD_OK;
}

/* Reads the guest's private data for an MPA frame. */
static uint16_t rnic_cm_pdata(RnicState *s, const struct rnic_conn_param *p,
                              uint8_t *buf)
{
    uint16_t len = le16_to_cpu(p->pdata_len);

    if (len > RNIC_MAX_PDATA) {         /* RFC 6581 takes 4 of the 512 */
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
    RnicQp *qp = rnic_dev_qp_get(s, qpn);

    return qp && !qp->conn && qp->core->state == RNIC_QP_IDLE ? qp : NULL;
}

static uint16_t rnic_conn_start_initiator(RnicState *s, RnicConn *c,
                                          RnicQp *qp,
                                          const struct rnic_conn_param *p,
                                          const uint8_t *pd)
{
    struct rnic_mpa_params mp;

    rnic_mpa_params_for(s, le16_to_cpu(p->ird), le16_to_cpu(p->ord), pd,
                        le16_to_cpu(p->pdata_len),
                        rnic_cm_rtr(s, true, p->rtr), &mp);
    if (rnic_mpa_conn_init(&c->mpa, true, &mp) < 0) {
        return RNIC_CMD_ERR_PARAM;
    }
    c->qp = qp;
    qp->conn = c;
    return RNIC_CMD_OK;
}

/*
 * CONNECT's local address, when the guest names one.  Mapped by
 * addr-map as LISTEN's is; the guest may take on the host only what it
 * may LISTEN on (listen-allow, on the host address).
 */
static uint16_t rnic_cm_bind_local(RnicState *s, int fd,
                                   const struct rnic_cmd_connect *p,
                                   struct rnic_sockaddr *local)
{
    uint64_t addr = le64_to_cpu(p->local_addr);
    struct sockaddr_storage ss;
    socklen_t len;
    int one = 1;

    if (!addr) {
        return RNIC_CMD_OK;
    }
    if (rnic_pci_read(s, addr, local, sizeof(*local))) {
        return rnic_cmd_fail(RNIC_CMD_CONNECT, RNIC_CMD_ERR_DMA,
                             "local_addr: not readable");
    }
    *local = rnic_addr_to_host(s, local);
    if (local->family != p->peer.family ||
        !rnic_sockaddr_to_host(local, &ss, &len)) {
        return rnic_cmd_fail(RNIC_CMD_CONNECT, RNIC_CMD_ERR_PARAM,
                             "local_addr: family is not the peer's");
    }
    if (!rnic_allowed(&s->params.listen_allow, "listen-allow", RNIC_CMD_CONNECT,
                      local)) {
        return rnic_cmd_fail(RNIC_CMD_CONNECT, RNIC_CMD_ERR_DENIED,
                             "local_addr: not in listen-allow");
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, len)) {
        return rnic_cmd_fail(RNIC_CMD_CONNECT, RNIC_CMD_ERR_ADDRINUSE,
                             "local_addr: the host cannot bind it");
    }
    return RNIC_CMD_OK;
}

uint16_t rnic_cmd_connect(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_connect *p = (void *)cmd->u.raw;
    struct rnic_sockaddr peer = rnic_addr_to_host(s, &p->peer);
    uint8_t pd[RNIC_MAX_PDATA];
    struct sockaddr_storage ss;
    socklen_t len;
    RnicQp *qp = rnic_cm_idle_qp(s, le32_to_cpu(p->qpn));
    uint16_t status;
    RnicConn *c;
    int fd;

    if (!qp) {
        return rnic_cmd_fail(RNIC_CMD_CONNECT, RNIC_CMD_ERR_STATE,
                             "qpn: no such QP, or not IDLE and unconnected");
    }
    if (!rnic_sockaddr_to_host(&peer, &ss, &len)) {
        return rnic_cmd_fail(RNIC_CMD_CONNECT, RNIC_CMD_ERR_PARAM,
                             "peer.family is not INET or INET6");
    }
    if (!rnic_allowed(&s->params.peer_allow, "peer-allow", RNIC_CMD_CONNECT,
                      &peer)) {
        return rnic_cmd_fail(RNIC_CMD_CONNECT, RNIC_CMD_ERR_DENIED,
                             "peer: not in peer-allow");
    }
    status = rnic_cm_pdata(s, &p->param, pd);
    if (status != RNIC_CMD_OK) {
        return rnic_cmd_fail(RNIC_CMD_CONNECT, status,
                             "param.pdata_len or param.pdata_addr");
    }
    fd = qemu_socket(ss.ss_family, SOCK_STREAM, 0);
    c = fd < 0 ? NULL : rnic_conn_new(s, fd, true, false);
    if (!c) {
        if (fd >= 0) {
            close(fd);
        }
        return rnic_cmd_fail(RNIC_CMD_CONNECT, RNIC_CMD_ERR_RESOURCE,
                             "no socket or connection slot");
    }
    c->peer = p->peer;
    g_free(qp->rejected);               /* the last Reject is read by now */
    qp->rejected = NULL;
    status = rnic_cm_bind_local(s, fd, p, &c->local);
    if (status != RNIC_CMD_OK) {
        rnic_conn_drop(c);
        return status;
    }
    status = rnic_conn_start_initiator(s, c, qp, &p->param, pd);
    if (status != RNIC_CMD_OK) {
        rnic_conn_drop(c);
        return rnic_cmd_fail(RNIC_CMD_CONNECT, status,
                             "param: MPA parameters (rtr)");
    }
    /* Non-blocking: completion (or failure) arrives as writability. */
    if (connect(fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS) {
        int err = errno;

        rnic_conn_drop(c);
        trace_rnic_conn_error(0, err, "connect");
        return rnic_cmd_fail(RNIC_CMD_CONNECT, RNIC_CMD_ERR_PARAM,
                             strerror(err));
    }
    trace_rnic_connect(c->id, qp->qpn, le16_to_cpu(p->peer.port));
    rnic_conn_set_state(c, RNIC_CONN_CONNECTING);
    p->conn_id = cpu_to_le32(c->id);
    return RNIC_CMD_OK;
}

/*
 * The MPA Reply goes out before the QP's data path owns the socket: a
 * fresh socket buffer always takes a frame of at most 532 bytes, and if it
 * did not, the stream could not be used anyway.
 */
static void rnic_cm_send_reply(RnicConn *c, const void *buf, size_t len)
{
    ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);

    rnic_capture_sent_buf(c, buf, n);
    if (n != (ssize_t)len) {
        trace_rnic_conn_error(c->id, n < 0 ? errno : EAGAIN,
                              "MPA Reply not written at once");
        shutdown(c->fd, SHUT_RDWR);
    }
}

/* Responder side: the guest's answer to CONN_REQUEST. */
static uint16_t rnic_conn_reply(RnicState *s, RnicConn *c, RnicQp *qp,
                                const struct rnic_conn_param *p,
                                const uint8_t *pd)
{
    struct rnic_mpa_params mp;
    int len;

    rnic_mpa_params_for(s, le16_to_cpu(p->ird), le16_to_cpu(p->ord), pd,
                        le16_to_cpu(p->pdata_len),
                        rnic_cm_rtr(s, false, p->rtr), &mp);
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
    rnic_cm_send_reply(c, c->mpa.out, len);
    rnic_conn_adopt(c);
    return RNIC_CMD_OK;
}

uint16_t rnic_cmd_accept(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_accept *p = (void *)cmd->u.raw;
    RnicConn *c = rnic_conn_get(s, le32_to_cpu(p->conn_id));
    RnicQp *qp = rnic_cm_idle_qp(s, le32_to_cpu(p->qpn));
    uint8_t pd[RNIC_MAX_PDATA];
    uint16_t status;

    if (!c || c->state != RNIC_CONN_PENDING) {
        return rnic_cmd_fail(RNIC_CMD_ACCEPT, RNIC_CMD_ERR_HANDLE,
                             "conn_id: no pending connection");
    }
    if (!qp) {
        return rnic_cmd_fail(RNIC_CMD_ACCEPT, RNIC_CMD_ERR_STATE,
                             "qpn: no such QP, or not IDLE and unconnected");
    }
    status = rnic_cm_pdata(s, &p->param, pd);
    if (status != RNIC_CMD_OK) {
        return rnic_cmd_fail(RNIC_CMD_ACCEPT, status,
                             "param.pdata_len or param.pdata_addr");
    }
    if (c->initiator) {
        /* A handed-in connection on which we speak first. */
        status = rnic_conn_start_initiator(s, c, qp, &p->param, pd);
        if (status == RNIC_CMD_OK) {
            rnic_conn_set_state(c, RNIC_CONN_WAIT_REPLY);
            rnic_conn_send_mpa(c, c->mpa.out, c->mpa.out_len);
        }
    } else {
        status = rnic_conn_reply(s, c, qp, &p->param, pd);
    }
    return status == RNIC_CMD_OK ? status
                                 : rnic_cmd_fail(RNIC_CMD_ACCEPT, status,
                                                 "param: MPA parameters (rtr)");
}

uint16_t rnic_cmd_reject(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_accept *p = (void *)cmd->u.raw;
    RnicConn *c = rnic_conn_get(s, le32_to_cpu(p->conn_id));
    uint8_t pd[RNIC_MAX_PDATA];
    uint16_t status;
    int len;

    if (!c || c->state != RNIC_CONN_PENDING) {
        return rnic_cmd_fail(RNIC_CMD_REJECT, RNIC_CMD_ERR_HANDLE,
                             "conn_id: no pending connection");
    }
    status = rnic_cm_pdata(s, &p->param, pd);
    if (status != RNIC_CMD_OK) {
        return rnic_cmd_fail(RNIC_CMD_REJECT, status,
                             "param.pdata_len or param.pdata_addr");
    }
    if (c->initiator) {
        rnic_conn_drop(c);      /* nothing was said yet: just close */
        return RNIC_CMD_OK;
    }
    len = rnic_mpa_build_reject(c->mpa.peer.rev, pd,
                                le16_to_cpu(p->param.pdata_len), c->mpa.out,
                                sizeof(c->mpa.out));
    if (len < 0) {
        return rnic_cmd_fail(RNIC_CMD_REJECT, RNIC_CMD_ERR_PARAM,
                             "param: the MPA Reject cannot be built");
    }
    rnic_conn_set_state(c, RNIC_CONN_REJECTING);
    rnic_conn_send_mpa(c, c->mpa.out, len);
    return RNIC_CMD_OK;
}

uint16_t rnic_cmd_disconnect(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_disconnect *p = (void *)cmd->u.raw;
    RnicQp *qp = rnic_dev_qp_get(s, le32_to_cpu(p->qpn));
    bool abort = le32_to_cpu(p->flags) & RNIC_DISCONNECT_ABORT;
    RnicConn *c = qp ? qp->conn : NULL;

    if (!c) {
        return rnic_cmd_fail(RNIC_CMD_DISCONNECT, RNIC_CMD_ERR_STATE,
                             "qpn: no such QP, or not connected");
    }
    if (abort) {
        rnic_conn_abort(c);
    } else {
        rnic_conn_disconnect(c);
    }
    return RNIC_CMD_OK;
}

void rnic_conn_info_fill(const RnicConn *c, struct rnic_conn_info *info)
{
    memset(info, 0, sizeof(*info));
    info->local = c->local;
    info->peer = c->peer;
    info->ird = cpu_to_le16(c->mpa.peer.ird);
    info->ord = cpu_to_le16(c->mpa.peer.ord);
    info->pdata_len = cpu_to_le16(c->mpa.peer.pd_len);
    info->mpa_rev = c->mpa.peer.rev;
    info->mpa_crc = c->mpa.result.crc;
    /* Before the peer's MPA frame there is no private data: pd is NULL. */
    if (c->mpa.peer.pd_len) {
        memcpy(info->pdata, c->mpa.peer.pd, c->mpa.peer.pd_len);
    }
}

uint16_t rnic_cmd_query_conn(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_query_conn *p = (void *)cmd->u.raw;
    uint32_t id = le32_to_cpu(p->conn_id);
    RnicConn *c = rnic_conn_get(s, id);
    RnicQp *qp = c ? NULL : rnic_dev_qp_get(s, le32_to_cpu(p->qpn));
    struct rnic_conn_info info;

    if (c) {
        rnic_conn_info_fill(c, &info);
        p->rtr = c->mpa.result.rtr;
        p->peer_rtr = c->mpa.peer.p2p && !c->mpa.peer.reply ?
                      RNIC_RTR_P2P | c->mpa.peer.rtr : 0;
        p->flags = (c->mpa.result.markers_tx ? RNIC_CONN_MARKERS_TX : 0) |
                   (c->mpa.result.markers_rx ? RNIC_CONN_MARKERS_RX : 0);
    } else if (qp && qp->rejected && qp->rejected_conn == id) {
        info = *qp->rejected;           /* the peer's Reject, kept */
        p->rtr = p->peer_rtr = p->flags = 0;
    } else {
        return rnic_cmd_fail(RNIC_CMD_QUERY_CONN, RNIC_CMD_ERR_HANDLE,
                             "conn_id or qpn: no such connection");
    }
    if (rnic_pci_write(s, le64_to_cpu(p->info_addr), &info, sizeof(info))) {
        return rnic_cmd_fail(RNIC_CMD_QUERY_CONN, RNIC_CMD_ERR_DMA,
                             "info_addr: not writable");
    }
    return RNIC_CMD_OK;
}

/*
 * A TCP connection made outside QEMU, handed in as a file descriptor, is
 * offered to the guest like an incoming one.  As responder
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
    c = rnic_conn_new(s, fd, initiator, true);
    if (!c) {
        error_setg(errp, "rnic: no connection slot for handed-in "
                   "connections (max-qps of them are kept for CONNECT)");
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
    rnic_mpa_params_for(s, s->params.limits.max_ird,
                        s->params.limits.max_ord, NULL, 0,
                        rnic_cm_rtr(s, false, 0), &p);
    rnic_mpa_conn_init(&c->mpa, false, &p);
    rnic_conn_set_state(c, RNIC_CONN_WAIT_REQUEST);
    return true;
}

bool rnic_cm_init(RnicState *s, Error **errp)
{
    if (!s->params.mpa_timeout_ms || !s->params.close_timeout_ms) {
        error_setg(errp, "rnic: mpa-timeout-ms and close-timeout-ms must be "
                   "at least 1");
        return false;
    }
    /* Nothing by default: the user names what the guest may reach. */
    if (!rnic_policy_parse(s->params.listen_allow_str ?: "",
                           &s->params.listen_allow, "listen-allow", errp)) {
        return false;
    }
    if (!rnic_policy_parse(s->params.peer_allow_str ?: "",
                           &s->params.peer_allow, "peer-allow", errp)) {
        rnic_addr_policy_free(&s->params.listen_allow);
        return false;
    }
    /* max-qps slots for the guest's CONNECTs, as many for the rest */
    s->max_conns = 2 * s->params.limits.max_qp;
    s->conns = g_new0(RnicConn *, s->max_conns);
    s->conn_ids = g_hash_table_new(g_direct_hash, g_direct_equal);
    return true;
}

/* Reset closes every connection and listener. */
/*
 * A listener the guest made, on its host address and port again (after a
 * migration), or soon: while another process (the migration's source on
 * this host) still holds the port, it tries every RNIC_LISTEN_RETRY_MS.
 */
void rnic_listener_restore(RnicState *s, uint32_t id,
                           const struct rnic_sockaddr *local,
                           uint32_t backlog)
{
    RnicListener *l = &s->listeners[id - 1];

    l->s = s;
    l->id = id;
    l->local = *local;
    l->backlog = MAX(1, MIN(backlog, RNIC_MAX_BACKLOG));
    l->waiting = 0;
    l->watched = false;
    l->retry = rnic_timer_new_ms(s, rnic_listener_retry, l);
    /* cpr-transfer handed the listening socket over */
    l->fd = rnic_cpr_take(s->cpr_listeners, id - 1);
    if (l->fd >= 0) {
        rnic_cpr_keep(s->cpr_listeners, id - 1, l->fd);
    } else if (!rnic_listener_bind(l)) {
        timer_mod(l->retry, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                  RNIC_LISTEN_RETRY_MS);
    }
    rnic_listener_watch(l);
}

/* Gives the port up (to a migration's destination); back on thaw. */
void rnic_listeners_unbind(RnicState *s)
{
    for (int i = 0; i < RNIC_MAX_LISTENERS; i++) {
        RnicListener *l = &s->listeners[i];

        if (l->id && l->fd >= 0) {
            rnic_set_fd_handler(s, l->fd, NULL, NULL, NULL);
            rnic_cpr_drop(s->cpr_listeners, i);
            close(l->fd);
            l->fd = -1;
            l->watched = false;
        }
    }
}

/* After a freeze: sockets back, and any port given up bound again. */
void rnic_listeners_thaw(RnicState *s)
{
    for (int i = 0; i < RNIC_MAX_LISTENERS; i++) {
        RnicListener *l = &s->listeners[i];

        if (l->id) {
            if (l->watched) {
                rnic_set_fd_handler(s, l->fd, rnic_listener_acceptable, NULL,
                                    l);
            }
            rnic_listener_wake(l);
        }
    }
}

void rnic_cm_reset(RnicState *s)
{
    rnic_conns_close_all(s);
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
    g_hash_table_destroy(s->conn_ids);
    rnic_addr_policy_free(&s->params.listen_allow);
    rnic_addr_policy_free(&s->params.peer_allow);
}
