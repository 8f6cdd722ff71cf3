/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for RFC 6581 peer-to-peer mode through the device: properties
 * mpa-p2p/mpa-rtr, the rtr byte of CONNECT/ACCEPT and QUERY_CONN.  The
 * test is the remote peer over TCP on 127.0.0.1, speaking MPA (no CRC)
 * and FPDUs by hand.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include <poll.h>
#include "libqos/rnic.h"

#define KEY_REQ     "MPA ID Req Frame"
#define KEY_REP     "MPA ID Rep Frame"
#define FLAG_R      0x20
#define FLAG_S      0x10
#define IRD_P2P     0x8000
#define IRD_SEND    0x4000
#define ORD_WRITE   0x8000
#define ORD_READ    0x4000
#define EPROTO_LINUX 71

typedef struct P2p {
    QRnic t;
    uint32_t pdn, cqn;
    uint64_t cq_ring;
    QRnicQp qp;
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

static struct rnic_sockaddr lo(uint16_t port)
{
    return (struct rnic_sockaddr) {
        .family = RNIC_AF_INET, .port = cpu_to_le16(port),
        .addr = { 127, 0, 0, 1 },
    };
}

/* A rev 2 frame with RFC 6581 words and no ULP private data. */
static void mpa_send(int fd, const char *key, uint16_t ird, uint16_t ord)
{
    uint8_t f[24];

    memcpy(f, key, 16);
    f[16] = FLAG_S;
    f[17] = 2;
    stw_be_p(f + 18, 4);
    stw_be_p(f + 20, ird);
    stw_be_p(f + 22, ord);
    qrnic_write_full(fd, f, sizeof(f));
}

/* Reads a frame; its flags, and its RFC 6581 words into @ird/@ord. */
static uint8_t mpa_recv(int fd, const char *key, uint16_t *ird,
                        uint16_t *ord, char *pd)
{
    uint8_t h[20], d[512];
    uint16_t len;

    qrnic_read_full(fd, h, sizeof(h));
    g_assert_cmpmem(h, 16, key, 16);
    len = lduw_be_p(h + 18);
    g_assert_cmpuint(len, <=, sizeof(d));
    qrnic_read_full(fd, d, len);
    if (h[16] & FLAG_S) {
        *ird = lduw_be_p(d);
        *ord = lduw_be_p(d + 2);
    } else if (pd) {
        memcpy(pd, d, len);
        pd[len] = 0;
    }
    return h[16];
}

/* One FPDU without CRC: its ULPDU into @u, the ULPDU length returned. */
static size_t fpdu_recv(int fd, uint8_t *u)
{
    uint8_t l[2], tail[7];
    size_t len;

    qrnic_read_full(fd, l, 2);
    len = lduw_be_p(l);
    qrnic_read_full(fd, u, len);
    qrnic_read_full(fd, tail, (-(len + 2) & 3) + 4);
    return len;
}

static void fpdu_send(int fd, const uint8_t *u, size_t len)
{
    uint8_t f[128] = { 0 };

    stw_be_p(f, len);
    memcpy(f + 2, u, len);
    qrnic_write_full(fd, f, 2 + len + (-(len + 2) & 3) + 4);
}

/* A zero-length tagged message (RTR Write, or the RTR's Read Response). */
static void tagged_empty(int fd, uint8_t opcode, uint32_t stag, uint64_t to)
{
    uint8_t u[14] = { 0xc1, 0x40 | opcode };

    stl_be_p(u + 2, stag);
    stq_be_p(u + 6, to);
    fpdu_send(fd, u, sizeof(u));
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
    struct rnic_cmd_listen l = { .local = lo(0), .backlog = 1 };
    struct rnic_cmd_accept a = { 0 };
    struct rnic_cmd_query_conn q = { 0 };
    struct rnic_cmd cmd;
    struct rnic_event ev;
    uint16_t ird, ord;
    uint8_t u[128];
    P2p p;
    int fd;

    p2p_start(&p, NULL);
    cmd = qrnic_cmd_ok(&p.t, RNIC_CMD_LISTEN, &l, sizeof(l));
    fd = qrnic_tcp_connect(le16_to_cpu(((struct rnic_cmd_listen *)
                                        cmd.u.raw)->local.port), 0);
    mpa_send(fd, KEY_REQ, IRD_P2P | 1, ORD_WRITE | ORD_READ | 1);
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
    g_assert_cmphex(mpa_recv(fd, KEY_REP, &ird, &ord, NULL), ==, FLAG_S);
    g_assert_cmphex(ird & 0xc000, ==, IRD_P2P);
    g_assert_cmphex(ord & 0xc000, ==, ORD_WRITE);
    qrnic_expect_event(&p.t, RNIC_EV_CONN_ESTABLISHED, &ev);
    cmd = qrnic_cmd_ok(&p.t, RNIC_CMD_QUERY_CONN, &q, sizeof(q));
    g_assert_cmphex(((struct rnic_cmd_query_conn *)cmd.u.raw)->rtr, ==,
                    RNIC_RTR_WRITE);

    post_inline_send(&p, "early");
    g_assert_false(readable(fd, 300));      /* held until the RTR */
    tagged_empty(fd, 0x0, 1, 0);            /* siw's RTR: STag 1, TO 0 */
    for (int i = 0; i < 100 && !readable(fd, 10); i++) {
        qrnic_settle(&p.t);
    }
    g_assert_cmpuint(fpdu_recv(fd, u), ==, 18 + 5);
    g_assert_cmphex(u[1] & 0xf, ==, 0x3);   /* Send */
    g_assert_cmpmem(u + 18, 5, "early", 5);
    g_assert_cmpuint(qrnic_query_qp_state(&p.t, p.qp.qpn), ==, RNIC_QPS_RTS);
    close(fd);
    qrnic_test_stop(&p.t);
}

/* mpa-rtr=write and a Request offering Read only: an MPA Reject. */
static void test_responder_refuses(void)
{
    struct rnic_cmd_listen l = { .local = lo(0), .backlog = 1 };
    struct rnic_event ev;
    struct rnic_cmd cmd;
    uint16_t ird, ord;
    char why[513];
    P2p p;
    int fd;

    p2p_start(&p, ",mpa-rtr=write");
    cmd = qrnic_cmd_ok(&p.t, RNIC_CMD_LISTEN, &l, sizeof(l));
    fd = qrnic_tcp_connect(le16_to_cpu(((struct rnic_cmd_listen *)
                                        cmd.u.raw)->local.port), 0);
    mpa_send(fd, KEY_REQ, IRD_P2P | 1, ORD_READ | 1);
    g_assert_cmphex(mpa_recv(fd, KEY_REP, &ird, &ord, why), ==, FLAG_R);
    g_assert_cmpstr(why, ==, "no matching RTR type");
    g_assert_false(qrnic_next_event(&p.t, &ev));
    close(fd);
    qrnic_test_stop(&p.t);
}

/* CONNECT as initiator: returns the peer's socket, Request read. */
static int connect_p2p(P2p *p, uint8_t rtr, uint16_t *ird, uint16_t *ord)
{
    struct rnic_cmd_connect k = { .param.rtr = rtr };
    uint16_t port;
    int lfd = qrnic_tcp_listen(&port), fd;

    k.qpn = cpu_to_le32(p->qp.qpn);
    k.peer = lo(port);
    k.param.ird = k.param.ord = cpu_to_le16(2);
    qrnic_cmd_ok(&p->t, RNIC_CMD_CONNECT, &k, sizeof(k));
    fd = qrnic_tcp_accept(lfd);
    close(lfd);
    g_assert_cmphex(mpa_recv(fd, KEY_REQ, ird, ord, NULL), ==, FLAG_S);
    return fd;
}

/*
 * mpa-p2p with a Read RTR: the Request offers Read only, the RTR Read
 * goes out first, and its empty Read Response completes nothing.
 */
static void test_initiator_read_rtr(void)
{
    struct rnic_cq_entry e;
    struct rnic_event ev;
    uint16_t ird, ord;
    uint8_t u[128];
    P2p p;
    int fd;

    p2p_start(&p, ",mpa-p2p=on,mpa-rtr=read");
    fd = connect_p2p(&p, 0, &ird, &ord);
    g_assert_cmphex(ird & 0xc000, ==, IRD_P2P);
    g_assert_cmphex(ord & 0xc000, ==, ORD_READ);
    mpa_send(fd, KEY_REP, IRD_P2P | 2, ORD_READ | 2);
    qrnic_expect_event(&p.t, RNIC_EV_CONN_ESTABLISHED, &ev);
    post_inline_send(&p, "after");

    g_assert_cmpuint(fpdu_recv(fd, u), ==, 18 + 28);
    g_assert_cmphex(u[1] & 0xf, ==, 0x1);           /* Read Request */
    g_assert_cmpuint(ldl_be_p(u + 18 + 12), ==, 0); /* of 0 octets */
    tagged_empty(fd, 0x2, ldl_be_p(u + 18), ldq_be_p(u + 18 + 4));
    g_assert_cmpuint(fpdu_recv(fd, u), ==, 18 + 5);
    g_assert_cmphex(u[1] & 0xf, ==, 0x3);           /* then the Send */
    qrnic_settle(&p.t);
    /* one CQE, the Send's: the RTR made none */
    g_assert_true(qrnic_read_cqe(&p.t, p.cq_ring, 4, 0, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 1);
    g_assert_false(qrnic_read_cqe(&p.t, p.cq_ring, 4, 1, &e));
    g_assert_cmpuint(qrnic_query_qp_state(&p.t, p.qp.qpn), ==, RNIC_QPS_RTS);
    close(fd);
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
    uint16_t ird, ord;
    uint8_t u[128];
    gint64 t0, waited_ms;
    P2p p;
    int fd;

    p2p_start(&p, ",mpa-p2p=on,mpa-rtr=read,siw-compat-hold-ms=300");
    fd = connect_p2p(&p, 0, &ird, &ord);
    mpa_send(fd, KEY_REP, IRD_P2P | 2, ORD_READ | 2);
    t0 = g_get_monotonic_time();
    qrnic_expect_event(&p.t, RNIC_EV_CONN_ESTABLISHED, &ev);
    g_assert_cmpuint(fpdu_recv(fd, u), ==, 18 + 28);   /* the RTR */
    waited_ms = (g_get_monotonic_time() - t0) / 1000;
    g_test_message("the RTR came %" PRId64 " ms after the Reply", waited_ms);
    g_assert_cmpint(waited_ms, >=, 300 - 1);   /* the device counts in ms */
    close(fd);
    qrnic_test_stop(&p.t);
}

/*
 * CONNECT naming a Send RTR (rtr byte) and a Reply naming Write, as siw
 * answers: a Terminate "no matching RTR", EOF, and CONN_ERROR EPROTO.
 */
static void test_initiator_refuses(void)
{
    struct rnic_event ev;
    uint16_t ird, ord;
    uint8_t u[128];
    P2p p;
    int fd;

    p2p_start(&p, NULL);
    fd = connect_p2p(&p, RNIC_RTR_GIVEN | RNIC_RTR_SEND, &ird, &ord);
    g_assert_cmphex(ird & 0xc000, ==, IRD_P2P | IRD_SEND);
    g_assert_cmphex(ord & 0xc000, ==, 0);
    mpa_send(fd, KEY_REP, IRD_P2P | 2, ORD_WRITE | 2);
    g_assert_cmpuint(fpdu_recv(fd, u), ==, 18 + 4);
    g_assert_cmphex(u[1] & 0xf, ==, 0x7);           /* Terminate */
    g_assert_cmphex(u[18], ==, 0x20);               /* LLP, MPA */
    g_assert_cmphex(u[19], ==, 0x07);               /* no matching RTR */
    g_assert_cmpint(read(fd, u, 1), ==, 0);
    qrnic_expect_event(&p.t, RNIC_EV_CONN_ERROR, &ev);
    g_assert_cmpuint(le32_to_cpu(ev.arg0), ==, EPROTO_LINUX);
    close(fd);
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
