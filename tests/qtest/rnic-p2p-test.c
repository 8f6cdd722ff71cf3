/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for RFC 6581 peer-to-peer mode through the device: properties
 * mpa-p2p/mpa-rtr, the rtr byte of CONNECT/ACCEPT and QUERY_CONN.  The
 * test is the remote peer over TCP on 127.0.0.1, speaking MPA (no CRC)
 * and FPDUs through libqos's peer (rnic-peer.h).
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include <poll.h>
#include "libqos/rnic-peer.h"

#define EPROTO_LINUX 71

typedef struct P2p {
    QRnic t;
    uint32_t pdn, cqn;
    uint64_t cq_ring;
    QRnicQp qp;
    QRnicPeer wire;         /* the test's end of the connection */
} P2p;

/* The device reaches nothing by default: loopback, and @props. */
static void p2p_start(P2p *p, const char *props)
{
    g_autofree char *extra =
        g_strdup_printf(",listen-allow=127.0.0.1,peer-allow=127.0.0.1%s",
                        props ? props : "");

    qrnic_test_start(&p->t, extra);
    qrnic_test_enable(&p->t);
    p->pdn = qrnic_create_pd(&p->t);
    p->cqn = qrnic_create_cq(&p->t, 4, 1, &p->cq_ring);
    g_assert_cmphex(qrnic_try_create_qp(&p->t, p->pdn, p->cqn, p->cqn, 3,
                                        &p->qp), ==, RNIC_CMD_OK);
}

static bool readable(int fd, int ms)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    return poll(&pfd, 1, ms) == 1;
}

static void post_inline_send(P2p *p, const char *s)
{
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(1), .opcode = RNIC_WQE_SEND,
        .flags = RNIC_WQE_FLAG_INLINE | RNIC_WQE_FLAG_SIGNALED,
        .num_sge = strlen(s),
    };

    memcpy(w.sge, s, strlen(s));
    qrnic_post_send(&p->t, &p->qp, &w);
    qrnic_settle(&p->t);
}

/*
 * siw's peer-to-peer Request (Write and Read offered) against the default
 * device: the Reply names Write, and the guest's Send waits for the RTR.
 */
static void test_responder_waits_for_rtr(void)
{
    struct rnic_cmd_listen l = { .local = qrnic_loopback(0), .backlog = 1 };
    struct rnic_cmd_accept a = { 0 };
    struct rnic_cmd_query_conn q = { 0 };
    struct rnic_cmd cmd;
    struct rnic_event ev;
    QRnicMpa rep;
    uint8_t u[128];
    P2p p;

    p2p_start(&p, NULL);
    cmd = qrnic_cmd_ok(&p.t, RNIC_CMD_LISTEN, &l, sizeof(l));
    qrnic_peer_init(&p.wire,
                    qrnic_tcp_connect(le16_to_cpu(((struct rnic_cmd_listen *)
                                                   cmd.u.raw)->local.port),
                                      0), false);
    qrnic_peer_mpa_send(p.wire.fd, QRNIC_MPA_REQ_KEY, 0,
                        QRNIC_MPA_IRD_P2P | 1,
                        QRNIC_MPA_ORD_WRITE | QRNIC_MPA_ORD_READ | 1, "");
    qrnic_expect_event(&p.t, RNIC_EV_CONN_REQUEST, &ev);

    q.conn_id = ev.id;
    q.info_addr = cpu_to_le64(guest_alloc(p.t.alloc, RNIC_CONN_INFO_SIZE));
    cmd = qrnic_cmd_ok(&p.t, RNIC_CMD_QUERY_CONN, &q, sizeof(q));
    g_assert_cmphex(((struct rnic_cmd_query_conn *)cmd.u.raw)->peer_rtr, ==,
                    RNIC_RTR_P2P | RNIC_RTR_WRITE | RNIC_RTR_READ);

    a.conn_id = ev.id;
    a.qpn = cpu_to_le32(p.qp.qpn);
    a.param.ird = a.param.ord = cpu_to_le16(1);
    qrnic_cmd_ok(&p.t, RNIC_CMD_ACCEPT, &a, sizeof(a));
    qrnic_peer_mpa_read(p.wire.fd, QRNIC_MPA_REP_KEY, &rep);
    g_assert_cmphex(rep.flags, ==, QRNIC_MPA_FLAG_S);
    g_assert_cmphex(rep.ird & 0xc000, ==, QRNIC_MPA_IRD_P2P);
    g_assert_cmphex(rep.ord & 0xc000, ==, QRNIC_MPA_ORD_WRITE);
    qrnic_expect_event(&p.t, RNIC_EV_CONN_ESTABLISHED, &ev);
    cmd = qrnic_cmd_ok(&p.t, RNIC_CMD_QUERY_CONN, &q, sizeof(q));
    g_assert_cmphex(((struct rnic_cmd_query_conn *)cmd.u.raw)->rtr, ==,
                    RNIC_RTR_WRITE);

    post_inline_send(&p, "early");
    g_assert_false(readable(p.wire.fd, 300));   /* held until the RTR */
    /* siw's RTR: STag 1, TO 0 */
    qrnic_peer_send_tagged(&p.wire, QRNIC_RDMAP_WRITE, 1, 0, NULL, 0);
    for (int i = 0; i < 100 && !readable(p.wire.fd, 10); i++) {
        qrnic_settle(&p.t);
    }
    g_assert_cmpuint(qrnic_peer_recv_fpdu(&p.wire, u, sizeof(u)), ==,
                     QRNIC_DDP_UNTAGGED_HDR + 5);
    g_assert_cmphex(u[1] & 0xf, ==, QRNIC_RDMAP_SEND);
    g_assert_cmpmem(u + QRNIC_DDP_UNTAGGED_HDR, 5, "early", 5);
    g_assert_cmpuint(qrnic_query_qp_state(&p.t, p.qp.qpn), ==, RNIC_QPS_RTS);
    close(p.wire.fd);
    qrnic_test_stop(&p.t);
}

/* mpa-rtr=write and a Request offering Read only: an MPA Reject. */
static void test_responder_refuses(void)
{
    struct rnic_cmd_listen l = { .local = qrnic_loopback(0), .backlog = 1 };
    struct rnic_event ev;
    struct rnic_cmd cmd;
    QRnicMpa rep;
    P2p p;
    int fd;

    p2p_start(&p, ",mpa-rtr=write");
    cmd = qrnic_cmd_ok(&p.t, RNIC_CMD_LISTEN, &l, sizeof(l));
    fd = qrnic_tcp_connect(le16_to_cpu(((struct rnic_cmd_listen *)
                                        cmd.u.raw)->local.port), 0);
    qrnic_peer_mpa_send(fd, QRNIC_MPA_REQ_KEY, 0, QRNIC_MPA_IRD_P2P | 1,
                        QRNIC_MPA_ORD_READ | 1, "");
    qrnic_peer_mpa_read(fd, QRNIC_MPA_REP_KEY, &rep);
    g_assert_cmphex(rep.flags, ==, QRNIC_MPA_FLAG_R);
    g_assert_cmpstr((char *)rep.pd, ==, "no matching RTR type");
    g_assert_false(qrnic_next_event(&p.t, &ev));
    close(fd);
    qrnic_test_stop(&p.t);
}

/* CONNECT as initiator: p->wire is the peer's end, its Request in @req. */
static void connect_p2p(P2p *p, uint8_t rtr, QRnicMpa *req)
{
    struct rnic_cmd_connect k = { .param.rtr = rtr };
    uint16_t port;
    int lfd = qrnic_tcp_listen(&port);

    k.qpn = cpu_to_le32(p->qp.qpn);
    k.peer = qrnic_loopback(port);
    k.param.ird = k.param.ord = cpu_to_le16(2);
    qrnic_cmd_ok(&p->t, RNIC_CMD_CONNECT, &k, sizeof(k));
    qrnic_peer_init(&p->wire, qrnic_tcp_accept(lfd), false);
    close(lfd);
    qrnic_peer_mpa_read(p->wire.fd, QRNIC_MPA_REQ_KEY, req);
    g_assert_cmphex(req->flags, ==, QRNIC_MPA_FLAG_S);
}

/*
 * mpa-p2p with a Read RTR: the Request offers Read only, the RTR Read
 * goes out first, and its empty Read Response completes nothing.
 */
static void test_initiator_read_rtr(void)
{
    const size_t hdr = QRNIC_DDP_UNTAGGED_HDR;
    struct rnic_cq_entry e;
    struct rnic_event ev;
    QRnicMpa req;
    uint8_t u[128];
    P2p p;

    p2p_start(&p, ",mpa-p2p=on,mpa-rtr=read");
    connect_p2p(&p, 0, &req);
    g_assert_cmphex(req.ird & 0xc000, ==, QRNIC_MPA_IRD_P2P);
    g_assert_cmphex(req.ord & 0xc000, ==, QRNIC_MPA_ORD_READ);
    qrnic_peer_mpa_send(p.wire.fd, QRNIC_MPA_REP_KEY, 0, QRNIC_MPA_IRD_P2P | 2,
                        QRNIC_MPA_ORD_READ | 2, "");
    qrnic_expect_event(&p.t, RNIC_EV_CONN_ESTABLISHED, &ev);
    post_inline_send(&p, "after");

    g_assert_cmpuint(qrnic_peer_recv_fpdu(&p.wire, u, sizeof(u)), ==,
                     QRNIC_READ_REQ_LEN);
    g_assert_cmphex(u[1] & 0xf, ==, QRNIC_RDMAP_READ_REQ);
    g_assert_cmpuint(ldl_be_p(u + hdr + 12), ==, 0);    /* of 0 octets */
    qrnic_peer_send_tagged(&p.wire, QRNIC_RDMAP_READ_RESP, ldl_be_p(u + hdr),
                           ldq_be_p(u + hdr + 4), NULL, 0);
    g_assert_cmpuint(qrnic_peer_recv_fpdu(&p.wire, u, sizeof(u)), ==,
                     hdr + 5);
    g_assert_cmphex(u[1] & 0xf, ==, QRNIC_RDMAP_SEND);  /* then the Send */
    qrnic_settle(&p.t);
    /* one CQE, the Send's: the RTR made none */
    g_assert_true(qrnic_read_cqe(&p.t, p.cq_ring, 4, 0, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 1);
    g_assert_false(qrnic_read_cqe(&p.t, p.cq_ring, 4, 1, &e));
    g_assert_cmpuint(qrnic_query_qp_state(&p.t, p.qp.qpn), ==, RNIC_QPS_RTS);
    close(p.wire.fd);
    qrnic_test_stop(&p.t);
}

/*
 * siw-compat-hold-ms: as initiator the device sends nothing, its RTR
 * included, until that long after the peer's MPA Reply (siw's accept
 * window, docs/driver-guide.md).
 */
static void test_initiator_holds(void)
{
    struct rnic_event ev;
    QRnicMpa req;
    uint8_t u[128];
    gint64 t0, waited_ms;
    P2p p;

    p2p_start(&p, ",mpa-p2p=on,mpa-rtr=read,siw-compat-hold-ms=300");
    connect_p2p(&p, 0, &req);
    qrnic_peer_mpa_send(p.wire.fd, QRNIC_MPA_REP_KEY, 0, QRNIC_MPA_IRD_P2P | 2,
                        QRNIC_MPA_ORD_READ | 2, "");
    t0 = g_get_monotonic_time();
    qrnic_expect_event(&p.t, RNIC_EV_CONN_ESTABLISHED, &ev);
    /* the RTR */
    g_assert_cmpuint(qrnic_peer_recv_fpdu(&p.wire, u, sizeof(u)), ==,
                     QRNIC_READ_REQ_LEN);
    waited_ms = (g_get_monotonic_time() - t0) / 1000;
    g_test_message("the RTR came %" PRId64 " ms after the Reply", waited_ms);
    g_assert_cmpint(waited_ms, >=, 300 - 1);   /* the device counts in ms */
    close(p.wire.fd);
    qrnic_test_stop(&p.t);
}

/*
 * CONNECT naming a Send RTR (rtr byte) and a Reply naming Write, as siw
 * answers: a Terminate "no matching RTR", EOF, and CONN_ERROR EPROTO.
 */
static void test_initiator_refuses(void)
{
    struct rnic_event ev;
    QRnicMpa req;
    uint8_t u[128];
    P2p p;

    p2p_start(&p, NULL);
    connect_p2p(&p, RNIC_RTR_GIVEN | RNIC_RTR_SEND, &req);
    g_assert_cmphex(req.ird & 0xc000, ==,
                    QRNIC_MPA_IRD_P2P | QRNIC_MPA_IRD_SEND);
    g_assert_cmphex(req.ord & 0xc000, ==, 0);
    qrnic_peer_mpa_send(p.wire.fd, QRNIC_MPA_REP_KEY, 0, QRNIC_MPA_IRD_P2P | 2,
                        QRNIC_MPA_ORD_WRITE | 2, "");
    /* "no matching RTR" */
    g_assert_cmpuint(qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_LLP_MPA,
                                                 0x07), ==, QRNIC_TERM_LEN);
    g_assert_cmpint(read(p.wire.fd, u, 1), ==, 0);
    qrnic_expect_event(&p.t, RNIC_EV_CONN_ERROR, &ev);
    g_assert_cmpuint(le32_to_cpu(ev.arg0), ==, EPROTO_LINUX);
    close(p.wire.fd);
    qrnic_test_stop(&p.t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qrnic_test_add_both("/rnic/p2p/responder-waits-for-rtr",
                        test_responder_waits_for_rtr);
    qrnic_test_add_both("/rnic/p2p/responder-refuses", test_responder_refuses);
    qrnic_test_add_both("/rnic/p2p/initiator-read-rtr",
                        test_initiator_read_rtr);
    qrnic_test_add_both("/rnic/p2p/initiator-holds", test_initiator_holds);
    qrnic_test_add_both("/rnic/p2p/initiator-refuses", test_initiator_refuses);
    return g_test_run();
}
