/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for rnic's connection management.  The test plays the remote iWARP
 * peer over real TCP sockets on 127.0.0.1: it connects to the device's
 * listener, accepts the device's connections and speaks MPA by hand, and
 * hands a connected socket in through QMP getfd, as a host that makes
 * the guest's connections itself would.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/sockets.h"
#include <poll.h>
#include <sys/resource.h>
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "libqos/rnic-peer.h"

typedef struct CmTest {
    QRnic t;
    uint32_t pdn, cqn;
    uint64_t cq_ring;
} CmTest;

/* Loopback, every port: what these tests need (the default is nothing). */
#define CM_ALLOW ",listen-allow=127.0.0.1,peer-allow=127.0.0.1"

static void cm_start_raw(CmTest *c, const char *args)
{
    qrnic_test_start(&c->t, args);
    qrnic_test_enable(&c->t);
    c->pdn = qrnic_create_pd(&c->t);
    c->cqn = qrnic_create_cq(&c->t, 4, 1, &c->cq_ring);
}

static void cm_start(CmTest *c, const char *extra)
{
    g_autofree char *args = g_strdup_printf(CM_ALLOW "%s", extra ?: "");

    cm_start_raw(c, args);
}

static uint32_t cm_create_qp(CmTest *c)
{
    QRnicQp qp;

    g_assert_cmphex(qrnic_try_create_qp(&c->t, c->pdn, c->cqn, c->cqn, 3, &qp),
                    ==, RNIC_CMD_OK);
    return qp.qpn;
}

static uint32_t cm_listen_backlog(CmTest *c, uint32_t backlog,
                                  uint16_t *port)
{
    struct rnic_cmd_listen l = {
        .local = qrnic_loopback(0), .backlog = backlog,
    };
    struct rnic_cmd cmd = qrnic_cmd_ok(&c->t, RNIC_CMD_LISTEN, &l, sizeof(l));
    struct rnic_cmd_listen *out = (void *)cmd.u.raw;

    *port = le16_to_cpu(out->local.port);
    g_assert_cmpuint(*port, !=, 0);
    return le32_to_cpu(out->listener_id);
}

static uint32_t cm_listen(CmTest *c, uint16_t *port)
{
    return cm_listen_backlog(c, 4, port);
}

/* Private data the guest sends with CONNECT/ACCEPT/REJECT. */
static void cm_pdata(CmTest *c, struct rnic_conn_param *p, const char *s)
{
    uint64_t a = guest_alloc(c->t.alloc, 512);

    qtest_memwrite(c->t.qts, a, s, strlen(s));
    p->pdata_addr = cpu_to_le64(a);
    p->pdata_len = cpu_to_le16(strlen(s));
}

/* The peer on @fd sends an MPA Request; the guest sees CONN_REQUEST. */
static struct rnic_event cm_request(CmTest *c, int fd, const char *pdata)
{
    struct rnic_event ev;

    qrnic_peer_mpa_send(fd, QRNIC_MPA_REQ_KEY, 0, 1, 1, pdata);
    qrnic_wait_event(&c->t, &ev);
    g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_REQUEST);
    return ev;
}

/* The guest accepts @conn_id with a new QP; the peer reads the Reply. */
static uint32_t cm_accept(CmTest *c, int fd, uint32_t conn_id)
{
    struct rnic_cmd_accept a = { .conn_id = conn_id };
    struct rnic_event ev;
    uint32_t qpn = cm_create_qp(c);
    QRnicMpa rep;

    a.qpn = cpu_to_le32(qpn);
    qrnic_cmd_ok(&c->t, RNIC_CMD_ACCEPT, &a, sizeof(a));
    qrnic_peer_mpa_read(fd, QRNIC_MPA_REP_KEY, &rep);
    qrnic_wait_event(&c->t, &ev);
    g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_ESTABLISHED);
    g_assert_cmpuint(le32_to_cpu(ev.id), ==, qpn);
    g_assert_cmpuint(qrnic_query_qp_state(&c->t, qpn), ==, RNIC_QPS_RTS);
    return qpn;
}

static void test_listen_policy(void)
{
    struct rnic_cmd_listen l = { .local = qrnic_loopback(0) };
    CmTest c;
    uint16_t port;
    uint32_t id;

    cm_start(&c, NULL);
    id = cm_listen(&c, &port);
    /* A second listener on the same port fails on the host side. */
    l.local = qrnic_loopback(port);
    g_assert_cmphex(qrnic_cmd_status(&c.t, RNIC_CMD_LISTEN, &l, sizeof(l)),
                    ==, RNIC_CMD_ERR_ADDRINUSE);
    /* Only what listen-allow names: 192.0.2.1 (TEST-NET-1) is refused. */
    l.local.addr[0] = 192;
    l.local.addr[1] = 0;
    l.local.addr[2] = 2;
    g_assert_cmphex(qrnic_cmd_status(&c.t, RNIC_CMD_LISTEN, &l, sizeof(l)),
                    ==, RNIC_CMD_ERR_DENIED);
    l.listener_id = cpu_to_le32(id);
    qrnic_cmd_ok(&c.t, RNIC_CMD_UNLISTEN, &l, sizeof(l));
    g_assert_cmphex(qrnic_cmd_status(&c.t, RNIC_CMD_UNLISTEN, &l, sizeof(l)),
                    ==, RNIC_CMD_ERR_HANDLE);
    qrnic_test_stop(&c.t);
}

/* The peer connects; the guest sees the request, accepts with a QP. */
static void test_passive_accept(void)
{
    struct rnic_cmd_query_conn q;
    struct rnic_conn_info info;
    struct rnic_cmd_accept a = { 0 };
    struct rnic_event ev;
    uint32_t listener, conn, qpn;
    QRnicMpa rep;
    uint16_t port;
    CmTest c;
    int fd;

    cm_start(&c, NULL);
    listener = cm_listen(&c, &port);
    fd = qrnic_tcp_connect(port, 0);
    qrnic_peer_mpa_send(fd, QRNIC_MPA_REQ_KEY, 0, 1, 1, "hello rnic");
    qrnic_wait_event(&c.t, &ev);
    g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_REQUEST);
    g_assert_cmpuint(le32_to_cpu(ev.arg0), ==, listener);
    g_assert_cmpuint(le32_to_cpu(ev.arg1), ==, strlen("hello rnic"));
    conn = le32_to_cpu(ev.id);

    q = (struct rnic_cmd_query_conn) {
        .conn_id = cpu_to_le32(conn),
        .info_addr = cpu_to_le64(guest_alloc(c.t.alloc, sizeof(info))),
    };
    qrnic_cmd_ok(&c.t, RNIC_CMD_QUERY_CONN, &q, sizeof(q));
    qtest_memread(c.t.qts, le64_to_cpu(q.info_addr), &info, sizeof(info));
    g_assert_cmpuint(le16_to_cpu(info.pdata_len), ==, strlen("hello rnic"));
    g_assert_cmpmem(info.pdata, strlen("hello rnic"), "hello rnic",
                    strlen("hello rnic"));
    g_assert_cmpuint(le16_to_cpu(info.local.port), ==, port);
    g_assert_cmpuint(info.mpa_rev, ==, 2);

    qpn = cm_create_qp(&c);
    a.conn_id = cpu_to_le32(conn);
    a.qpn = cpu_to_le32(qpn);
    a.param.ird = cpu_to_le16(4);
    a.param.ord = cpu_to_le16(4);
    cm_pdata(&c, &a.param, "welcome");
    qrnic_cmd_ok(&c.t, RNIC_CMD_ACCEPT, &a, sizeof(a));
    /* A second ACCEPT of the same connection is refused. */
    g_assert_cmphex(qrnic_cmd_status(&c.t, RNIC_CMD_ACCEPT, &a, sizeof(a)),
                    ==, RNIC_CMD_ERR_HANDLE);

    g_assert_cmpuint(qrnic_peer_mpa_read(fd, QRNIC_MPA_REP_KEY, &rep), ==,
                     4 + strlen("welcome"));
    g_assert_cmphex(rep.flags & (QRNIC_MPA_FLAG_R | QRNIC_MPA_FLAG_S), ==,
                    QRNIC_MPA_FLAG_S);
    g_assert_cmpmem(rep.pd + 4, strlen("welcome"), "welcome",
                    strlen("welcome"));
    qrnic_wait_event(&c.t, &ev);
    g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_ESTABLISHED);
    g_assert_cmpuint(le32_to_cpu(ev.id), ==, qpn);
    g_assert_cmpuint(qrnic_query_qp_state(&c.t, qpn), ==, RNIC_QPS_RTS);
    close(fd);
    qrnic_test_stop(&c.t);
}

/*
 * QUERY_CONN's flags say which directions carry MPA markers: each side's
 * M bit asks the other for them.  Without mpa-markers the device asks for
 * none, and refuses a peer that asks (tested in the core's unit tests).
 */
static void conn_markers(const char *props, uint8_t req_flags, uint8_t want)
{
    struct rnic_cmd_query_conn q;
    struct rnic_event ev;
    uint16_t port;
    CmTest c;
    int fd;

    cm_start(&c, props);
    cm_listen(&c, &port);
    fd = qrnic_tcp_connect(port, 0);
    qrnic_peer_mpa_send(fd, QRNIC_MPA_REQ_KEY, req_flags, 1, 1, "");
    qrnic_wait_event(&c.t, &ev);
    g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_REQUEST);
    cm_accept(&c, fd, ev.id);
    q = (struct rnic_cmd_query_conn) {
        .conn_id = ev.id,
        .flags = 0xff,
        .info_addr = cpu_to_le64(guest_alloc(c.t.alloc, RNIC_CONN_INFO_SIZE)),
    };
    q = *(struct rnic_cmd_query_conn *)
        qrnic_cmd_ok(&c.t, RNIC_CMD_QUERY_CONN, &q, sizeof(q)).u.raw;
    g_assert_cmphex(q.flags, ==, want);
    close(fd);
    qrnic_test_stop(&c.t);
}

static void test_conn_markers(void)
{
    conn_markers(NULL, 0, 0);
    conn_markers(",mpa-markers=on", 0, RNIC_CONN_MARKERS_RX);
    conn_markers(",mpa-markers=on", QRNIC_MPA_FLAG_M,
                 RNIC_CONN_MARKERS_TX | RNIC_CONN_MARKERS_RX);
}

/* The guest rejects: the peer gets a Reply with R set and the reason. */
static void test_passive_reject(void)
{
    struct rnic_cmd_accept r = { 0 };
    struct rnic_event ev;
    uint16_t port, len;
    QRnicMpa rep;
    uint8_t b;
    CmTest c;
    int fd;

    cm_start(&c, NULL);
    cm_listen(&c, &port);
    fd = qrnic_tcp_connect(port, 0);
    ev = cm_request(&c, fd, "");
    r.conn_id = ev.id;
    cm_pdata(&c, &r.param, "go away");
    qrnic_cmd_ok(&c.t, RNIC_CMD_REJECT, &r, sizeof(r));
    len = qrnic_peer_mpa_read(fd, QRNIC_MPA_REP_KEY, &rep);
    g_assert_cmphex(rep.flags & QRNIC_MPA_FLAG_R, ==, QRNIC_MPA_FLAG_R);
    g_assert_cmpuint(len, >=, strlen("go away"));
    g_assert_cmpmem(rep.pd + len - strlen("go away"), strlen("go away"),
                    "go away", strlen("go away"));
    /* Then the device closes the connection. */
    g_assert_cmpint(read(fd, &b, 1), ==, 0);
    close(fd);
    qrnic_test_stop(&c.t);
}

/* Garbage instead of an MPA Request never reaches the guest. */
static void test_passive_garbage(void)
{
    static const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    struct rnic_event ev;
    uint8_t b;
    uint16_t port;
    CmTest c;
    int fd;

    cm_start(&c, NULL);
    cm_listen(&c, &port);
    fd = qrnic_tcp_connect(port, 0);
    g_assert_cmpint(write(fd, junk, sizeof(junk) - 1), >, 0);
    {
        struct timeval tv = { .tv_sec = 5 };

        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        g_assert_cmpint(read(fd, &b, 1), <=, 0);     /* closed, no reply */
    }
    qrnic_settle(&c.t);
    g_assert_false(qrnic_next_event(&c.t, &ev));
    close(fd);
    qrnic_test_stop(&c.t);
}

/* The guest connects out; the test is the responder. */
static void test_active_connect(void)
{
    struct rnic_cmd_connect k = { 0 };
    struct rnic_event ev;
    QRnicMpa req;
    uint32_t qpn;
    uint16_t port;
    CmTest c;
    int lfd, fd;

    cm_start(&c, NULL);
    lfd = qrnic_tcp_listen(&port);
    qpn = cm_create_qp(&c);
    k.qpn = cpu_to_le32(qpn);
    k.peer = qrnic_loopback(port);
    k.param.ird = cpu_to_le16(2);
    k.param.ord = cpu_to_le16(2);
    cm_pdata(&c, &k.param, "ping");
    qrnic_cmd_ok(&c.t, RNIC_CMD_CONNECT, &k, sizeof(k));
    /* The QP is taken: a second CONNECT on it is refused. */
    g_assert_cmphex(qrnic_cmd_status(&c.t, RNIC_CMD_CONNECT, &k, sizeof(k)),
                    ==, RNIC_CMD_ERR_STATE);
    fd = qrnic_tcp_accept(lfd);
    g_assert_cmpuint(qrnic_peer_mpa_read(fd, QRNIC_MPA_REQ_KEY, &req), ==,
                     4 + 4);
    g_assert_cmphex(req.flags & QRNIC_MPA_FLAG_S, ==, QRNIC_MPA_FLAG_S);
    g_assert_cmpuint(req.ird & 0x3fff, ==, 2);
    g_assert_cmpuint(req.ord & 0x3fff, ==, 2);
    g_assert_cmpmem(req.pd + 4, 4, "ping", 4);
    qrnic_peer_mpa_send(fd, QRNIC_MPA_REP_KEY, 0, 2, 2, "pong");
    qrnic_wait_event(&c.t, &ev);
    g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_ESTABLISHED);
    g_assert_cmpuint(le32_to_cpu(ev.id), ==, qpn);
    g_assert_cmpuint(qrnic_query_qp_state(&c.t, qpn), ==, RNIC_QPS_RTS);
    close(fd);
    close(lfd);
    qrnic_test_stop(&c.t);
}

/* A CONNECT to the raw listener @lfd; its id once the peer is there. */
static uint32_t cm_connect_id(CmTest *c, uint32_t qpn, uint16_t port,
                              int lfd, int *fd)
{
    struct rnic_cmd_connect k = {
        .qpn = cpu_to_le32(qpn),
        .peer = qrnic_loopback(port),
    };
    struct rnic_cmd r = qrnic_cmd_ok(&c->t, RNIC_CMD_CONNECT, &k, sizeof(k));

    *fd = qrnic_tcp_accept(lfd);
    return le32_to_cpu(((struct rnic_cmd_connect *)r.u.raw)->conn_id);
}

/*
 * QUERY_CONN on a connection whose peer has not sent its MPA frame yet:
 * no private data to copy (a memcpy from NULL once made UBSan stop QEMU).
 */
static void test_query_before_mpa(void)
{
    struct rnic_cmd_query_conn q = { 0 };
    struct rnic_conn_info info;
    uint16_t port;
    CmTest c;
    int lfd, fd;

    cm_start(&c, NULL);
    lfd = qrnic_tcp_listen(&port);
    q.conn_id = cpu_to_le32(cm_connect_id(&c, cm_create_qp(&c), port, lfd,
                                          &fd));
    q.info_addr = cpu_to_le64(guest_alloc(c.t.alloc, RNIC_CONN_INFO_SIZE));
    /* Connected, the MPA Request sent, no Reply yet. */
    qrnic_cmd_ok(&c.t, RNIC_CMD_QUERY_CONN, &q, sizeof(q));
    qtest_memread(c.t.qts, le64_to_cpu(q.info_addr), &info, sizeof(info));
    g_assert_cmpuint(le16_to_cpu(info.pdata_len), ==, 0);
    g_assert_cmpuint(le16_to_cpu(info.peer.port), ==, port);
    close(fd);
    close(lfd);
    qrnic_test_stop(&c.t);
}

/*
 * After CONN_REJECTED the peer's private data is read with QUERY_CONN
 * naming the QP (the connection itself is gone: without the QP,
 * ERR_HANDLE).
 */
static void expect_reject_kept(CmTest *c, const struct rnic_event *ev,
                               const char *why)
{
    struct rnic_cmd_query_conn q = {
        .conn_id = ev->arg0,
        .info_addr = cpu_to_le64(guest_alloc(c->t.alloc,
                                             RNIC_CONN_INFO_SIZE)),
    };
    struct rnic_conn_info info;
    size_t n = strlen(why);
    uint16_t len;

    g_assert_cmphex(qrnic_cmd_status(&c->t, RNIC_CMD_QUERY_CONN, &q,
                                     sizeof(q)), ==, RNIC_CMD_ERR_HANDLE);
    q.qpn = ev->id;
    qrnic_cmd_ok(&c->t, RNIC_CMD_QUERY_CONN, &q, sizeof(q));
    qtest_memread(c->t.qts, le64_to_cpu(q.info_addr), &info, sizeof(info));
    len = le16_to_cpu(info.pdata_len);
    g_assert_cmpuint(len, ==, le32_to_cpu(ev->arg1));
    g_assert_cmpuint(len, >=, n);
    g_assert_cmpmem(info.pdata + len - n, n, why, n);
}

static void test_active_rejected_and_denied(void)
{
    struct rnic_cmd_connect k = { 0 };
    struct rnic_event ev;
    QRnicMpa req;
    uint32_t qpn;
    uint16_t port;
    CmTest c;
    int lfd, fd;

    cm_start(&c, NULL);
    qpn = cm_create_qp(&c);
    k.qpn = cpu_to_le32(qpn);
    k.peer = qrnic_loopback(9);
    k.peer.addr[0] = 192;
    k.peer.addr[1] = 0;
    k.peer.addr[2] = 2;
    g_assert_cmphex(qrnic_cmd_status(&c.t, RNIC_CMD_CONNECT, &k, sizeof(k)),
                    ==, RNIC_CMD_ERR_DENIED);

    lfd = qrnic_tcp_listen(&port);
    k.peer = qrnic_loopback(port);
    qrnic_cmd_ok(&c.t, RNIC_CMD_CONNECT, &k, sizeof(k));
    fd = qrnic_tcp_accept(lfd);
    qrnic_peer_mpa_read(fd, QRNIC_MPA_REQ_KEY, &req);
    qrnic_peer_mpa_send(fd, QRNIC_MPA_REP_KEY, QRNIC_MPA_FLAG_R, 0, 0, "busy");
    qrnic_wait_event(&c.t, &ev);
    g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_REJECTED);
    g_assert_cmpuint(le32_to_cpu(ev.id), ==, qpn);
    g_assert_cmpuint(qrnic_query_qp_state(&c.t, qpn), ==, RNIC_QPS_IDLE);
    expect_reject_kept(&c, &ev, "busy");
    close(fd);

    /* Nobody listening any more: the connect fails with an event. */
    close(lfd);
    qrnic_cmd_ok(&c.t, RNIC_CMD_CONNECT, &k, sizeof(k));
    qrnic_wait_event(&c.t, &ev);
    g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_ERROR);
    g_assert_cmpuint(le32_to_cpu(ev.arg0), ==, ECONNREFUSED);
    qrnic_test_stop(&c.t);
}

/* A loopback port nobody listens on right now. */
static uint16_t free_port(void)
{
    uint16_t port;
    int fd = qrnic_tcp_listen(&port);

    close(fd);
    return port;
}

/*
 * CONNECT binds the local address the guest names, within
 * listen-allow; the peer sees the connection come from it.
 */
static void test_active_local_bind(void)
{
    struct rnic_cmd_connect k = { 0 };
    struct rnic_sockaddr local;
    struct sockaddr_in from;
    socklen_t flen = sizeof(from);
    uint64_t laddr;
    uint16_t port, lport = free_port();
    CmTest c;
    int lfd, fd;

    cm_start(&c, NULL);
    lfd = qrnic_tcp_listen(&port);
    k.qpn = cpu_to_le32(cm_create_qp(&c));
    k.peer = qrnic_loopback(port);
    laddr = guest_alloc(c.t.alloc, sizeof(local));
    k.local_addr = cpu_to_le64(laddr);

    /* Outside listen-allow: refused before any socket is bound. */
    local = qrnic_loopback(lport);
    local.addr[3] = 2;
    qtest_memwrite(c.t.qts, laddr, &local, sizeof(local));
    g_assert_cmphex(qrnic_cmd_status(&c.t, RNIC_CMD_CONNECT, &k, sizeof(k)),
                    ==, RNIC_CMD_ERR_DENIED);
    local.family = RNIC_AF_INET6;
    qtest_memwrite(c.t.qts, laddr, &local, sizeof(local));
    g_assert_cmphex(qrnic_cmd_status(&c.t, RNIC_CMD_CONNECT, &k, sizeof(k)),
                    ==, RNIC_CMD_ERR_PARAM);

    /* Taken by a listener on the host. */
    local = qrnic_loopback(port);
    qtest_memwrite(c.t.qts, laddr, &local, sizeof(local));
    g_assert_cmphex(qrnic_cmd_status(&c.t, RNIC_CMD_CONNECT, &k, sizeof(k)),
                    ==, RNIC_CMD_ERR_ADDRINUSE);

    /* The guest's 10.0.0.1 is the host's 127.0.0.1 (addr-map default). */
    local = qrnic_loopback(lport);
    local.addr[0] = 10;
    qtest_memwrite(c.t.qts, laddr, &local, sizeof(local));
    qrnic_cmd_ok(&c.t, RNIC_CMD_CONNECT, &k, sizeof(k));
    fd = qrnic_tcp_accept(lfd);
    g_assert_cmpint(getpeername(fd, (struct sockaddr *)&from, &flen), ==, 0);
    g_assert_cmpuint(ntohs(from.sin_port), ==, lport);
    g_assert_cmphex(ntohl(from.sin_addr.s_addr), ==, INADDR_LOOPBACK);
    close(fd);
    close(lfd);
    qrnic_test_stop(&c.t);
}

/* A connection made outside QEMU, handed in by fd, reaches the guest. */
static void test_handoff_fd(void)
{
    struct rnic_event ev;
    uint16_t port;
    CmTest c;
    int lfd, outside, inside;

    cm_start(&c, ",id=rnic0");
    lfd = qrnic_tcp_listen(&port);
    outside = qrnic_tcp_connect(port, 0);
    inside = qrnic_tcp_accept(lfd);
    qtest_qmp_fds_assert_success(c.t.qts, &inside, 1,
        "{'execute': 'getfd', 'arguments': {'fdname': 'conn0'}}");
    qtest_qmp_assert_success(c.t.qts,
        "{'execute': 'qom-set', 'arguments': {'path': '/machine/peripheral/"
        "rnic0', 'property': 'handoff-fd', 'value': 'conn0'}}");
    close(inside);
    /* The outside end speaks MPA first (the device is responder). */
    ev = cm_request(&c, outside, "fd");
    g_assert_cmphex(le32_to_cpu(ev.arg0), ==, RNIC_LISTENER_HANDED_IN);
    cm_accept(&c, outside, ev.id);

    /* An fd that is not a socket is refused. */
    {
        int fds[2];
        QDict *r;

        g_assert_cmpint(pipe(fds), ==, 0);
        qtest_qmp_fds_assert_success(c.t.qts, &fds[0], 1,
            "{'execute': 'getfd', 'arguments': {'fdname': 'pipe0'}}");
        r = qtest_qmp(c.t.qts, "{'execute': 'qom-set', 'arguments': {"
                      "'path': '/machine/peripheral/rnic0', 'property': "
                      "'handoff-fd', 'value': 'pipe0'}}");
        g_assert_true(qdict_haskey(r, "error"));
        qobject_unref(r);
        close(fds[0]);
        close(fds[1]);
    }

    /*
     * A bare number names one of QEMU's own descriptors (its QMP or qtest
     * socket among them): never adopted, never closed.  QEMU answers on
     * both sockets afterwards.
     */
    for (int fd = 0; fd < 64; fd++) {
        g_autofree char *num = g_strdup_printf("%d", fd);
        QDict *r = qtest_qmp(c.t.qts, "{'execute': 'qom-set', 'arguments': {"
                             "'path': '/machine/peripheral/rnic0', "
                             "'property': 'handoff-fd', 'value': %s}}", num);

        g_assert_true(qdict_haskey(r, "error"));
        qobject_unref(r);
    }
    g_assert_cmphex(qrnic_rd(&c.t, RNIC_REG_SCRATCH), ==, 0);
    close(outside);
    close(lfd);
    qrnic_test_stop(&c.t);
}

/* DISCONNECT with ABORT resets the TCP connection. */
static void test_abortive_disconnect(void)
{
    struct rnic_cmd_disconnect d;
    struct rnic_event ev;
    uint32_t qpn;
    uint16_t port;
    CmTest c;
    int fd;

    cm_start(&c, NULL);
    cm_listen(&c, &port);
    fd = qrnic_tcp_connect(port, 0);
    ev = cm_request(&c, fd, "");
    qpn = cm_accept(&c, fd, ev.id);

    d = (struct rnic_cmd_disconnect) {
        .qpn = cpu_to_le32(qpn),
        .flags = cpu_to_le32(RNIC_DISCONNECT_ABORT),
    };
    qrnic_cmd_ok(&c.t, RNIC_CMD_DISCONNECT, &d, sizeof(d));
    qrnic_wait_event(&c.t, &ev);
    g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_CLOSED);
    g_assert_cmpuint(le32_to_cpu(ev.arg0), ==, 1);
    g_assert_cmpuint(qrnic_query_qp_state(&c.t, qpn), ==, RNIC_QPS_ERROR);
    {
        struct timeval tv = { .tv_sec = 5 };
        uint8_t b;

        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        g_assert_cmpint(read(fd, &b, 1), <, 0);
        g_assert_cmpint(errno, ==, ECONNRESET);
    }
    /* Not connected any more. */
    g_assert_cmphex(qrnic_cmd_status(&c.t, RNIC_CMD_DISCONNECT, &d, sizeof(d)),
                    ==, RNIC_CMD_ERR_STATE);
    close(fd);
    qrnic_test_stop(&c.t);
}

/* ---- limits a peer cannot exhaust: slots, descriptors, events ---- */

/* True when the device closed or reset @fd within @secs seconds. */
static bool closed_within(int fd, int secs)
{
    struct timeval tv = { .tv_sec = secs };
    uint8_t b[64];
    ssize_t n;

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    do {
        n = read(fd, b, sizeof(b));
    } while (n > 0);
    return n == 0 || errno == ECONNRESET;
}

/* No FIN or reset from the device within @ms: still waiting its turn. */
static bool open_after(int fd, int ms)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    return poll(&pfd, 1, ms) == 0;
}

static uint16_t cm_connect_status(CmTest *c, uint16_t port)
{
    struct rnic_cmd_connect k = {
        .qpn = cpu_to_le32(cm_create_qp(c)),
        .peer = qrnic_loopback(port),
    };

    return qrnic_cmd_status(&c->t, RNIC_CMD_CONNECT, &k, sizeof(k));
}

static uint16_t cm_listen_status(CmTest *c, uint16_t port)
{
    struct rnic_cmd_listen l = { .local = qrnic_loopback(port), .backlog = 1 };

    return qrnic_cmd_status(&c->t, RNIC_CMD_LISTEN, &l, sizeof(l));
}

/* Without listen-allow / peer-allow the guest reaches nothing. */
static void test_default_deny(void)
{
    uint16_t mine = free_port(), theirs;
    int lfd = qrnic_tcp_listen(&theirs);
    g_autofree char *args = g_strdup_printf(
        ",listen-allow=127.0.0.1:%u-%u,peer-allow=127.0.0.1:%u",
        mine, mine + 1, theirs);
    CmTest c;

    cm_start_raw(&c, NULL);
    g_assert_cmphex(cm_listen_status(&c, 0), ==, RNIC_CMD_ERR_DENIED);
    g_assert_cmphex(cm_listen_status(&c, mine), ==, RNIC_CMD_ERR_DENIED);
    g_assert_cmphex(cm_connect_status(&c, theirs), ==, RNIC_CMD_ERR_DENIED);
    qrnic_test_stop(&c.t);

    /* Port ranges: only the named ports, and port 0 needs a portless rule */
    cm_start_raw(&c, args);
    g_assert_cmphex(cm_listen_status(&c, 0), ==, RNIC_CMD_ERR_DENIED);
    g_assert_cmphex(cm_listen_status(&c, mine + 2), ==, RNIC_CMD_ERR_DENIED);
    g_assert_cmphex(cm_listen_status(&c, mine), ==, RNIC_CMD_OK);
    g_assert_cmphex(cm_connect_status(&c, theirs + 1), ==,
                    RNIC_CMD_ERR_DENIED);
    g_assert_cmphex(cm_connect_status(&c, theirs), ==, RNIC_CMD_OK);
    close(lfd);
    qrnic_test_stop(&c.t);
}

/* A peer that connects and says nothing loses its slot (mpa-timeout-ms). */
static void test_mpa_timeout(void)
{
    struct rnic_event ev;
    uint16_t port;
    int fd, lfd, silent;
    CmTest c;

    cm_start(&c, ",mpa-timeout-ms=300");
    cm_listen(&c, &port);
    fd = qrnic_tcp_connect(port, 0);
    g_assert_true(closed_within(fd, 10));
    qrnic_settle(&c.t);
    g_assert_false(qrnic_next_event(&c.t, &ev));
    close(fd);

    /* Our CONNECT to a peer that accepts and never answers: CONN_ERROR. */
    lfd = qrnic_tcp_listen(&port);
    g_assert_cmphex(cm_connect_status(&c, port), ==, RNIC_CMD_OK);
    silent = qrnic_tcp_accept(lfd);
    qrnic_wait_event(&c.t, &ev);
    g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_ERROR);
    g_assert_cmpuint(le32_to_cpu(ev.arg0), ==, ETIMEDOUT);
    close(silent);
    close(lfd);
    qrnic_test_stop(&c.t);
}

/*
 * LISTEN's backlog bounds the requests the guest has not answered: beyond
 * it a flood of MPA Requests waits in the host's accept queue (no event,
 * no reset), and comes in as the guest answers.
 */
static void test_listen_backlog(void)
{
    struct rnic_cmd_listen l = { .local = qrnic_loopback(0), .backlog = 2 };
    uint8_t frame[64];
    size_t len = qrnic_peer_mpa_frame(frame, QRNIC_MPA_REQ_KEY, 0, 1, 1, "");
    struct rnic_event ev;
    struct rnic_cmd cmd;
    uint32_t first = 0;
    int fds[5];
    uint16_t port;
    CmTest c;

    cm_start(&c, NULL);
    cmd = qrnic_cmd_ok(&c.t, RNIC_CMD_LISTEN, &l, sizeof(l));
    port = le16_to_cpu(((struct rnic_cmd_listen *)cmd.u.raw)->local.port);
    for (int i = 0; i < 5; i++) {
        fds[i] = qrnic_tcp_connect(port, 0);
        g_assert_cmpint(send(fds[i], frame, len, MSG_NOSIGNAL), ==, len);
        /* one at a time, so the device takes them in this order */
        if (i < 2) {
            qrnic_wait_event(&c.t, &ev);
            g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_REQUEST);
            first = first ?: ev.id;
        }
    }
    for (int i = 2; i < 5; i++) {
        g_assert_true(open_after(fds[i], 100));
    }
    qrnic_settle(&c.t);
    g_assert_false(qrnic_next_event(&c.t, &ev));
    /* Answering one lets the next in. */
    cm_accept(&c, fds[0], first);
    qrnic_wait_event(&c.t, &ev);
    g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_REQUEST);
    g_assert_true(open_after(fds[3], 100));
    /*
     * UNLISTEN resets the connections still waiting for an answer, and
     * the host those in its accept queue.
     */
    l.listener_id = ((struct rnic_cmd_listen *)cmd.u.raw)->listener_id;
    qrnic_cmd_ok(&c.t, RNIC_CMD_UNLISTEN, &l, sizeof(l));
    for (int i = 1; i < 5; i++) {
        g_assert_true(closed_within(fds[i], 10));
    }
    for (int i = 0; i < 5; i++) {
        close(fds[i]);
    }
    qrnic_test_stop(&c.t);
}

/*
 * Incoming connections cannot take the slots kept for the guest's own
 * CONNECTs: with max-qps=2 (4 slots) two silent peers are all a listener
 * gets, and CONNECT still works.
 */
static void test_connect_slots_reserved(void)
{
    struct rnic_cmd_listen l = { .local = qrnic_loopback(0), .backlog = 8 };
    struct rnic_cmd cmd;
    uint16_t port, theirs;
    int fds[4], lfd, out;
    QRnicMpa req;
    CmTest c;

    cm_start(&c, ",max-qps=2");
    cmd = qrnic_cmd_ok(&c.t, RNIC_CMD_LISTEN, &l, sizeof(l));
    port = le16_to_cpu(((struct rnic_cmd_listen *)cmd.u.raw)->local.port);
    for (int i = 0; i < 4; i++) {
        fds[i] = qrnic_tcp_connect(port, 0);
    }
    g_assert_true(closed_within(fds[2], 10));
    g_assert_true(closed_within(fds[3], 10));
    lfd = qrnic_tcp_listen(&theirs);
    g_assert_cmphex(cm_connect_status(&c, theirs), ==, RNIC_CMD_OK);
    out = qrnic_tcp_accept(lfd);
    qrnic_peer_mpa_read(out, QRNIC_MPA_REQ_KEY, &req);
    close(out);
    close(lfd);
    for (int i = 0; i < 4; i++) {
        close(fds[i]);
    }
    qrnic_test_stop(&c.t);
}

/* CPU seconds QEMU has used so far. */
static double qemu_cpu_seconds(CmTest *c)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/stat",
                                            (int)qtest_pid(c->t.qts));
    g_autofree char *stat = NULL;
    unsigned long ut = 0, st = 0;
    char *p;

    g_assert_true(g_file_get_contents(path, &stat, NULL, NULL));
    p = strrchr(stat, ')');
    g_assert_nonnull(p);
    /* after "comm)": utime and stime are the 12th and 13th fields */
    g_assert_cmpint(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u "
                           "%*u %*u %lu %lu", &ut, &st), ==, 2);
    return (double)(ut + st) / sysconf(_SC_CLK_TCK);
}

/* The descriptor QEMU's next socket would get: the lowest one unused. */
static int qemu_lowest_free_fd(CmTest *c)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/fd",
                                            (int)qtest_pid(c->t.qts));
    g_autoptr(GHashTable) used = g_hash_table_new(NULL, NULL);
    GDir *d = g_dir_open(path, 0, NULL);
    const char *name;
    int n = 0;

    g_assert_nonnull(d);
    while ((name = g_dir_read_name(d))) {
        g_hash_table_add(used, GINT_TO_POINTER(atoi(name) + 1));
    }
    g_dir_close(d);
    while (g_hash_table_contains(used, GINT_TO_POINTER(n + 1))) {
        n++;
    }
    return n;
}

/*
 * accept() failing with EMFILE leaves the connection queued and the
 * listener readable: the device must pause it, not spin, and take the
 * connection once descriptors are back.
 */
static void test_accept_emfile(void)
{
    struct rlimit lim, low;
    double cpu0, cpu1, wall0, wall1;
    uint16_t port;
    pid_t pid;
    int fd;
    CmTest c;

    cm_start(&c, NULL);
    cm_listen(&c, &port);
    pid = qtest_pid(c.t.qts);
    g_assert_cmpint(prlimit(pid, RLIMIT_NOFILE, NULL, &lim), ==, 0);
    low = lim;
    low.rlim_cur = qemu_lowest_free_fd(&c);
    g_assert_cmpint(prlimit(pid, RLIMIT_NOFILE, &low, NULL), ==, 0);
    fd = qrnic_tcp_connect(port, 0);

    cpu0 = qemu_cpu_seconds(&c);
    wall0 = g_get_monotonic_time() / 1e6;
    g_usleep(G_USEC_PER_SEC);
    cpu1 = qemu_cpu_seconds(&c);
    wall1 = g_get_monotonic_time() / 1e6;
    g_test_message("QEMU used %.2f s of CPU in %.2f s with accept() "
                   "failing", cpu1 - cpu0, wall1 - wall0);
    /* a spinning main loop takes a whole core; a paused listener none */
    g_assert_cmpfloat(cpu1 - cpu0, <, 0.25 * (wall1 - wall0));

    g_assert_cmpint(prlimit(pid, RLIMIT_NOFILE, &lim, NULL), ==, 0);
    cm_request(&c, fd, "back");
    close(fd);
    qrnic_test_stop(&c.t);
}

/*
 * A flood of MPA Requests over two listeners while the guest reads no
 * events: requests never take more than half the event ring (8 entries
 * here, 2 for each listener), so the event that follows them still fits.
 */
static void test_request_flood_keeps_events(void)
{
    struct rnic_cmd_listen l = { .local = qrnic_loopback(0), .backlog = 8 };
    uint8_t frame[64];
    size_t len = qrnic_peer_mpa_frame(frame, QRNIC_MPA_REQ_KEY, 0, 1, 1, "");
    uint16_t ports[2], closed_port = free_port();
    struct rnic_event ev;
    int fds[8], requests = 0, errors = 0;
    CmTest c;

    cm_start(&c, NULL);
    for (int i = 0; i < 2; i++) {
        struct rnic_cmd cmd = qrnic_cmd_ok(&c.t, RNIC_CMD_LISTEN, &l,
                                           sizeof(l));

        ports[i] = le16_to_cpu(((struct rnic_cmd_listen *)cmd.u.raw)->
                               local.port);
    }
    for (int i = 0; i < 8; i++) {
        fds[i] = qrnic_tcp_connect(ports[i % 2], 0);
        g_assert_cmpint(send(fds[i], frame, len, MSG_NOSIGNAL), ==, len);
        g_usleep(100 * 1000);   /* taken in this order */
    }
    /* Beyond each listener's share they wait in the host's queue. */
    for (int i = 4; i < 8; i++) {
        g_assert_true(open_after(fds[i], 10));
    }
    /* An event of another kind: a CONNECT the host refuses. */
    g_assert_cmphex(cm_connect_status(&c, closed_port), ==, RNIC_CMD_OK);
    for (int i = 0; i < 100; i++) {
        g_usleep(10 * 1000);
        qrnic_settle(&c.t);
        if (qrnic_rd(&c.t, RNIC_REG_EQ_PROD) - c.t.eq_cons == 5) {
            break;
        }
    }
    g_assert_cmphex(qrnic_rd(&c.t, RNIC_REG_STATUS) & RNIC_STATUS_EQ_OVERFLOW,
                    ==, 0);
    while (qrnic_next_event(&c.t, &ev)) {
        requests += ev.type == RNIC_EV_CONN_REQUEST;
        errors += ev.type == RNIC_EV_CONN_ERROR;
    }
    g_assert_cmpint(requests, ==, 4);
    g_assert_cmpint(errors, ==, 1);
    for (int i = 0; i < 8; i++) {
        close(fds[i]);
    }
    qrnic_test_stop(&c.t);
}

/* Connections in the state dump of device "d". */
static int cm_conns(CmTest *c)
{
    QDict *r = qtest_qmp(c->t.qts, "{'execute': 'qom-get', 'arguments': {"
                         "'path': '/machine/peripheral/d', "
                         "'property': 'state'}}");
    int n = qlist_size(qdict_get_qlist(qdict_get_qdict(r, "return"),
                                       "connections"));

    qobject_unref(r);
    return n;
}

/*
 * Silent peers of one listener (they connect and never send their MPA
 * Request) take that listener's share of the event ring's room, not
 * another's: a peer of the second listener still gets through, and the
 * silent ones beyond the share wait in the host's queue, not reset.
 */
static void test_listener_share(void)
{
    enum { SILENT = 6 };
    uint16_t port_a, port_b;
    uint32_t id_b;
    struct rnic_event ev;
    int fds[SILENT], fd;
    CmTest c;

    cm_start(&c, ",id=d");
    cm_listen_backlog(&c, 64, &port_a);
    id_b = cm_listen_backlog(&c, 64, &port_b);
    for (int i = 0; i < SILENT; i++) {
        fds[i] = qrnic_tcp_connect(port_a, 0);
    }
    /* 2 of them taken (half of 8 events, over 2 listeners); let it settle */
    for (int i = 0; i < 500 && cm_conns(&c) < 2; i++) {
        g_usleep(1000);
    }
    g_usleep(100 * 1000);
    fd = qrnic_tcp_connect(port_b, 0);
    ev = cm_request(&c, fd, "b");
    g_assert_cmpuint(le32_to_cpu(ev.arg0), ==, id_b);
    for (int i = 0; i < SILENT; i++) {
        g_assert_true(open_after(fds[i], 10));
        close(fds[i]);
    }
    close(fd);
    qrnic_test_stop(&c.t);
}

/*
 * A burst of connections far beyond the room for unanswered requests (4
 * here) is held, not reset: every peer gets the guest's answer, here an
 * MPA Reject, as rdma_cm's listeners answer a burst one by one.
 */
static void test_burst_held(void)
{
    enum { PEERS = 40 };
    uint8_t frame[64];
    size_t len = qrnic_peer_mpa_frame(frame, QRNIC_MPA_REQ_KEY, 0, 1, 1, "");
    QRnicMpa rep;
    uint16_t port;
    int fds[PEERS];
    CmTest c;

    cm_start(&c, NULL);
    cm_listen_backlog(&c, 128, &port);
    for (int i = 0; i < PEERS; i++) {
        fds[i] = qrnic_tcp_connect(port, 0);
        g_assert_cmpint(send(fds[i], frame, len, MSG_NOSIGNAL), ==, len);
    }
    for (int i = 0; i < PEERS; i++) {
        struct rnic_cmd_accept r = { 0 };
        struct rnic_event ev;

        qrnic_wait_event(&c.t, &ev);
        g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_REQUEST);
        r.conn_id = ev.id;
        qrnic_cmd_ok(&c.t, RNIC_CMD_REJECT, &r, sizeof(r));
    }
    for (int i = 0; i < PEERS; i++) {
        qrnic_peer_mpa_read(fds[i], QRNIC_MPA_REP_KEY, &rep);
        g_assert_cmphex(rep.flags & QRNIC_MPA_FLAG_R, ==, QRNIC_MPA_FLAG_R);
        close(fds[i]);
    }
    g_assert_cmphex(qrnic_rd(&c.t, RNIC_REG_STATUS) & RNIC_STATUS_EQ_OVERFLOW,
                    ==, 0);
    qrnic_test_stop(&c.t);
}

/*
 * CONNECTs the host never makes (a local address outside listen-allow)
 * still take and free a connection: @n of them, 15 per doorbell.
 */
static void cm_burn_conn_ids(CmTest *c, uint32_t qpn, uint16_t port,
                             uint32_t n)
{
    struct rnic_sockaddr local = qrnic_loopback(0);
    uint64_t laddr = guest_alloc(c->t.alloc, sizeof(local));
    struct rnic_cmd_connect k = {
        .qpn = cpu_to_le32(qpn),
        .peer = qrnic_loopback(port),
        .local_addr = cpu_to_le64(laddr),
    };
    uint32_t batch = (1u << QRNIC_CMDQ_LOG) - 1;

    local.addr[3] = 2;      /* 127.0.0.2: not in listen-allow */
    qtest_memwrite(c->t.qts, laddr, &local, sizeof(local));
    g_assert_cmphex(qrnic_cmd_status(&c->t, RNIC_CMD_CONNECT, &k, sizeof(k)),
                    ==, RNIC_CMD_ERR_DENIED);
    for (uint32_t done = 1; done < n; done += batch) {
        uint32_t m = MIN(batch, n - done);

        for (uint32_t i = 0; i < m; i++) {
            qrnic_cmd_queue(&c->t, RNIC_CMD_CONNECT, &k, sizeof(k));
        }
        qrnic_wr(&c->t, RNIC_REG_CMDQ_PROD, c->t.cmd_prod);
        while (qrnic_rd(&c->t, RNIC_REG_CMDQ_CONS) != c->t.cmd_prod) {
            qtest_clock_step(c->t.qts, 1000);
        }
    }
}

/*
 * Connection ids do not come back after 2^15 connections (a 15-bit
 * generation once did), and never equal a QP number: a guest acting on an
 * id it read late reaches that connection or none.
 */
static void test_conn_ids_not_reused(void)
{
    uint32_t qpn, first, again;
    struct rnic_event ev;
    uint16_t port;
    CmTest c;
    int lfd, fd;

    cm_start(&c, NULL);
    lfd = qrnic_tcp_listen(&port);
    qpn = cm_create_qp(&c);
    first = cm_connect_id(&c, qpn, port, lfd, &fd);
    close(fd);              /* the connection fails: CONN_ERROR, freed */
    qrnic_wait_event(&c.t, &ev);
    g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_ERROR);
    g_assert_cmpuint(le32_to_cpu(ev.id), ==, qpn);
    cm_burn_conn_ids(&c, qpn, port, 32767);
    again = cm_connect_id(&c, qpn, port, lfd, &fd);
    g_assert_cmphex(first, >=, RNIC_CONN_ID_MIN);
    g_assert_cmphex(again, >=, RNIC_CONN_ID_MIN);
    g_assert_cmphex(again, !=, first);
    /* The old id reaches nothing. */
    {
        struct rnic_cmd_query_conn q = {
            .conn_id = cpu_to_le32(first),
            .info_addr = cpu_to_le64(guest_alloc(c.t.alloc,
                                                 RNIC_CONN_INFO_SIZE)),
        };

        g_assert_cmphex(qrnic_cmd_status(&c.t, RNIC_CMD_QUERY_CONN, &q,
                                         sizeof(q)), ==, RNIC_CMD_ERR_HANDLE);
    }
    close(fd);
    close(lfd);
    qrnic_test_stop(&c.t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qrnic_test_add_both("/rnic/cm/listen-policy", test_listen_policy);
    qrnic_test_add_both("/rnic/cm/passive-accept", test_passive_accept);
    qrnic_test_add_both("/rnic/cm/passive-reject", test_passive_reject);
    qrnic_test_add_both("/rnic/cm/conn-markers", test_conn_markers);
    qrnic_test_add_both("/rnic/cm/passive-garbage", test_passive_garbage);
    qrnic_test_add_both("/rnic/cm/active-connect", test_active_connect);
    qrnic_test_add_both("/rnic/cm/query-before-mpa", test_query_before_mpa);
    qrnic_test_add_both("/rnic/cm/active-rejected-denied",
                        test_active_rejected_and_denied);
    qrnic_test_add_both("/rnic/cm/active-local-bind", test_active_local_bind);
    qrnic_test_add_both("/rnic/cm/handoff-fd", test_handoff_fd);
    qrnic_test_add_both("/rnic/cm/abortive-disconnect",
                           test_abortive_disconnect);
    qrnic_test_add_both("/rnic/cm/default-deny", test_default_deny);
    qrnic_test_add_both("/rnic/cm/mpa-timeout", test_mpa_timeout);
    qrnic_test_add_both("/rnic/cm/listen-backlog", test_listen_backlog);
    qrnic_test_add_both("/rnic/cm/connect-slots-reserved",
                        test_connect_slots_reserved);
    qrnic_test_add_both("/rnic/cm/accept-emfile", test_accept_emfile);
    qrnic_test_add_both("/rnic/cm/request-flood-keeps-events",
                        test_request_flood_keeps_events);
    qrnic_test_add_both("/rnic/cm/listener-share", test_listener_share);
    qrnic_test_add_both("/rnic/cm/burst-held", test_burst_held);
    qtest_add_func("/rnic/cm/conn-ids-not-reused", test_conn_ids_not_reused);
    return g_test_run();
}
