/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest in which the test itself is the remote iWARP peer: it connects to
 * the device over TCP on 127.0.0.1, does the MPA exchange by hand and then
 * writes FPDUs byte by byte as a hostile or buggy peer would — invalid
 * STags, a second Write to a one-shot STag, a Send with no receive posted,
 * a Terminate, a broken CRC — and checks the device's Terminate on the
 * wire, its events, completions, and that nothing was placed.
 *
 * The wire is libqos's peer (rnic-peer.h): an independent reading of the
 * RFCs, not the core's.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "hw/pci/pci_regs.h"
#include "qemu/atomic.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "libqos/rnic-peer.h"

#define IOVA        0x10000000ull
#define QP_LOG      3
#define CQ_LOG      4

typedef struct Peer {
    QRnic t;
    uint32_t pdn, cqn, qpn;
    QRnicQp srq;            /* when the QP takes receives from an SRQ */
    uint64_t cq_ring, buf;
    QRnicQp qp;
    QRnicPeer wire;         /* our end of the connection */
    uint16_t qp_flags;      /* RNIC_QP_FLAG_* of the device's QP */
} Peer;

static uint64_t dev_stat(Peer *p, const char *name)
{
    return qrnic_qom_int(&p->t, "dev", name);
}

static void expect_closed(Peer *p)
{
    struct timeval tv = { .tv_sec = 5 };
    uint8_t b;

    setsockopt(p->wire.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    g_assert_cmpint(read(p->wire.fd, &b, 1), <=, 0);
}

/*
 * Device (started, in p->t): PD, CQ, QP, a 16 KiB buffer registered for
 * remote write with @policy, listening.  Test: connects and does the MPA
 * exchange.
 */
static uint32_t peer_setup(Peer *p, uint8_t policy, bool crc, int rcvbuf,
                           bool use_srq)
{
    struct rnic_cmd_listen l = {
        .local = qrnic_loopback(0),
    };
    struct rnic_cmd cmd;
    uint64_t pbl;
    uint32_t stag;
    struct rnic_cmd_reg_mr r;

    qrnic_test_enable(&p->t);
    p->pdn = qrnic_create_pd(&p->t);
    p->cqn = qrnic_create_cq(&p->t, CQ_LOG, 1, &p->cq_ring);
    g_assert_cmphex(qrnic_try_create_qp_flags(&p->t, p->pdn, p->cqn, p->cqn,
                                              use_srq ?
                                              qrnic_create_srq(&p->t, p->pdn,
                                                               &p->srq) :
                                              RNIC_NO_SRQ, QP_LOG, p->qp_flags,
                                              &p->qp), ==, RNIC_CMD_OK);
    p->buf = guest_alloc(p->t.alloc, 16384);
    qtest_memset(p->t.qts, p->buf, 0xee, 16384);
    pbl = guest_alloc(p->t.alloc, 32);
    for (int i = 0; i < 4; i++) {
        qtest_writeq(p->t.qts, pbl + 8 * i, p->buf + 4096 * i);
    }
    r = (struct rnic_cmd_reg_mr) {
        .pdn = cpu_to_le32(p->pdn),
        .access = cpu_to_le32(RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_WRITE),
        .iova = cpu_to_le64(IOVA),
        .length = cpu_to_le64(16384),
        .pbl_addr = cpu_to_le64(pbl),
        .npages = cpu_to_le32(4),
        .page_shift = 12,
        .key = 0x33,
        .policy = policy,
    };
    cmd = qrnic_cmd_ok(&p->t, RNIC_CMD_REG_MR, &r, sizeof(r));
    stag = le32_to_cpu(((struct rnic_cmd_reg_mr *)cmd.u.raw)->stag);

    cmd = qrnic_cmd_ok(&p->t, RNIC_CMD_LISTEN, &l, sizeof(l));
    qrnic_peer_init(&p->wire,
                    qrnic_tcp_connect(le16_to_cpu(((struct rnic_cmd_listen *)
                                                   cmd.u.raw)->local.port),
                                      rcvbuf), crc);
    qrnic_peer_accept(&p->wire, &p->t, p->qp.qpn, true);
    return stag;
}

static uint32_t peer_start_opts(Peer *p, uint8_t policy, bool crc,
                                int rcvbuf, bool use_srq)
{
    memset(p, 0, sizeof(*p));
    qrnic_test_start(&p->t, ",id=dev,listen-allow=127.0.0.1");
    return peer_setup(p, policy, crc, rcvbuf, use_srq);
}

static uint32_t peer_start(Peer *p, uint8_t policy, bool crc)
{
    return peer_start_opts(p, policy, crc, 0, false);
}

static void peer_stop(Peer *p)
{
    close(p->wire.fd);
    qrnic_test_stop(&p->t);
}

static void assert_untouched(Peer *p, uint32_t off, uint32_t len)
{
    g_autofree uint8_t *b = g_malloc(len);

    qtest_memread(p->t.qts, p->buf + off, b, len);
    for (uint32_t i = 0; i < len; i++) {
        g_assert_cmphex(b[i], ==, 0xee);
    }
}

static void test_write_placed(void)
{
    static const char msg[] = "placed by the peer";
    char got[sizeof(msg)];
    Peer p;
    uint32_t stag = peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);

    qrnic_peer_write(&p.wire, stag, IOVA + 5000, msg, sizeof(msg));
    qrnic_peer_write(&p.wire, stag, IOVA + 9000, msg, sizeof(msg));
    /* A Write is silent: read the memory once the device had its turn. */
    for (int i = 0; i < 1000; i++) {
        qtest_memread(p.t.qts, p.buf + 9000, got, sizeof(got));
        if (!memcmp(got, msg, sizeof(msg))) {
            break;
        }
        g_usleep(1000);
    }
    g_assert_cmpmem(got, sizeof(got), msg, sizeof(msg));
    qtest_memread(p.t.qts, p.buf + 5000, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), msg, sizeof(msg));
    assert_untouched(&p, 0, 5000);
    peer_stop(&p);
}

/*
 * The QP remembers the Terminate it sent: QUERY_QP reports it, and so does
 * the device's state dump (qom-get dev state).
 */
static void expect_last_terminate(Peer *p, uint8_t layer_etype, uint8_t ecode)
{
    struct rnic_cmd_query_qp q = { .qpn = cpu_to_le32(p->qp.qpn) };
    struct rnic_cmd cmd = qrnic_cmd_ok(&p->t, RNIC_CMD_QUERY_QP, &q, sizeof(q));
    struct rnic_cmd_query_qp *out = (void *)cmd.u.raw;
    QDict *r = qtest_qmp(p->t.qts, "{'execute': 'qom-get', 'arguments': {"
                         "'path': '/machine/peripheral/dev', "
                         "'property': 'state'}}");
    QList *qps = qdict_get_qlist(qdict_get_qdict(r, "return"), "qps");
    QDict *term = qdict_get_qdict(qobject_to(QDict, qlist_peek(qps)),
                                  "last-terminate");
    g_autofree char *hex = g_strdup_printf("0x%x", ecode);

    g_assert_cmphex(out->term_layer_etype, ==, layer_etype);
    g_assert_cmphex(out->term_ecode, ==, ecode);
    g_assert_cmpuint(out->term_received, ==, RNIC_QP_TERM_SENT);
    g_assert_nonnull(term);
    g_assert_cmpstr(qdict_get_str(term, "direction"), ==, "sent");
    g_assert_cmpint(qdict_get_int(term, "layer"), ==, layer_etype >> 4);
    g_assert_cmpint(qdict_get_int(term, "etype"), ==, layer_etype & 0xf);
    g_assert_cmpstr(qdict_get_str(term, "ecode"), ==, hex);
    qobject_unref(r);
}

static void test_invalid_stag(void)
{
    struct rnic_event ev;
    Peer p;
    uint32_t stag = peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);

    /* Right index, wrong key. */
    qrnic_peer_write(&p.wire, stag ^ 0xff, IOVA, "x", 1);
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_DDP_TAGGED, 0x00);
    qrnic_expect_event(&p.t, RNIC_EV_TERM_SENT, &ev);
    g_assert_cmphex(le32_to_cpu(ev.arg0), ==, QRNIC_TERM_DDP_TAGGED);
    expect_closed(&p);
    assert_untouched(&p, 0, 16384);
    g_assert_cmpuint(qrnic_query_qp_state(&p.t, p.qp.qpn), >=,
                     RNIC_QPS_TERMINATE);
    g_assert_cmpuint(dev_stat(&p, "stat-terminates-sent"), ==, 1);
    g_assert_cmpuint(dev_stat(&p, "stat-tx-fpdus"), ==, 1);   /* it */
    g_assert_cmpuint(dev_stat(&p, "stat-terminates-received"), ==, 0);
    {
        g_autofree char *terms = qrnic_qom_str(&p.t, "dev",
                                               "stat-terminates");

        g_assert_cmpstr(terms, ==, "sent 1/1/0x00=1");
    }
    expect_last_terminate(&p, 0x11, 0x00);
    g_assert_cmpuint(dev_stat(&p, "stat-rx-bytes"), >, 0);
    peer_stop(&p);
}

/*
 * The physical STag of a kernel QP's PD, named by the peer in a
 * Write to a bus address it guessed right: an invalid STag (Terminate),
 * nothing placed.
 */
static void test_phys_stag_from_wire(void)
{
    struct rnic_event ev;
    uint32_t phys;
    Peer p;

    memset(&p, 0, sizeof(p));
    p.qp_flags = RNIC_QP_FLAG_KERNEL;
    qrnic_test_start(&p.t, ",id=dev,listen-allow=127.0.0.1");
    peer_setup(&p, RNIC_MR_POLICY_PERSISTENT, false, 0, false);
    g_assert_cmphex(qrnic_alloc_mr(&p.t, p.pdn, 0, 0x44, RNIC_ALLOC_MR_PHYS,
                                   &phys), ==, RNIC_CMD_OK);
    qrnic_peer_write(&p.wire, phys, p.buf, "x", 1);
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_DDP_TAGGED, 0x00);
    qrnic_expect_event(&p.t, RNIC_EV_TERM_SENT, &ev);
    expect_closed(&p);
    assert_untouched(&p, 0, 16384);
    peer_stop(&p);
}

static struct rnic_cmd_query_qp query_qp(Peer *p)
{
    struct rnic_cmd_query_qp q = { .qpn = cpu_to_le32(p->qp.qpn) };
    struct rnic_cmd cmd = qrnic_cmd_ok(&p->t, RNIC_CMD_QUERY_QP, &q,
                                       sizeof(q));

    return *(struct rnic_cmd_query_qp *)cmd.u.raw;
}

/* QUERY_QP reports the connection and, once there is one, the Terminate. */
static void test_query_qp_terminate(void)
{
    struct rnic_cmd_query_qp q;
    struct rnic_event ev;
    Peer p;
    uint32_t stag = peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);

    q = query_qp(&p);
    g_assert_cmpuint(le32_to_cpu(q.conn_id), !=, 0);
    g_assert_cmpuint(q.term_received, ==, RNIC_QP_TERM_NONE);
    qrnic_peer_write(&p.wire, stag ^ 0xff, IOVA, "x", 1);
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_DDP_TAGGED, 0x00);
    qrnic_expect_event(&p.t, RNIC_EV_TERM_SENT, &ev);
    q = query_qp(&p);
    g_assert_cmpuint(q.term_received, ==, RNIC_QP_TERM_SENT);
    g_assert_cmphex(q.term_layer_etype, ==, 0x11);  /* DDP, tagged */
    g_assert_cmphex(q.term_ecode, ==, 0x00);        /* invalid STag */
    peer_stop(&p);
}

/*
 * UNLISTEN takes its connections not yet accepted with it: the peer's
 * socket is reset and ACCEPT no longer knows the connection.
 */
static void test_unlisten_resets_pending(void)
{
    struct rnic_cmd_listen l = {
        .local = qrnic_loopback(0),
    };
    uint8_t req[QRNIC_MPA_HDR], b;
    struct timeval tv = { .tv_sec = 5 };
    struct rnic_cmd_accept a = {
        .param = { .ird = cpu_to_le16(1), .ord = cpu_to_le16(1) },
    };
    struct rnic_event ev;
    struct rnic_cmd cmd;
    QRnicQp qp;
    uint32_t pdn, cqn;
    uint64_t ring;
    ssize_t n;
    Peer p;

    memset(&p, 0, sizeof(p));
    qrnic_test_start(&p.t, ",id=dev,listen-allow=127.0.0.1");
    qrnic_test_enable(&p.t);
    pdn = qrnic_create_pd(&p.t);
    cqn = qrnic_create_cq(&p.t, CQ_LOG, 1, &ring);
    g_assert_cmphex(qrnic_try_create_qp(&p.t, pdn, cqn, cqn, QP_LOG, &qp), ==,
                    RNIC_CMD_OK);
    cmd = qrnic_cmd_ok(&p.t, RNIC_CMD_LISTEN, &l, sizeof(l));
    l = *(struct rnic_cmd_listen *)cmd.u.raw;
    qrnic_peer_init(&p.wire, qrnic_tcp_connect(le16_to_cpu(l.local.port), 0),
                    false);
    qrnic_write_full(p.wire.fd, req,               /* rev 1, no pdata */
                     qrnic_peer_mpa_raw(req, QRNIC_MPA_REQ_KEY, 0, 1, NULL,
                                        0));
    qrnic_expect_event(&p.t, RNIC_EV_CONN_REQUEST, &ev);
    qrnic_cmd_ok(&p.t, RNIC_CMD_UNLISTEN, &l, sizeof(l));
    setsockopt(p.wire.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    n = read(p.wire.fd, &b, 1);
    g_assert_true(n == 0 || (n < 0 && errno == ECONNRESET));
    a.conn_id = ev.id;
    a.qpn = cpu_to_le32(qp.qpn);
    g_assert_cmphex(qrnic_cmd_status(&p.t, RNIC_CMD_ACCEPT, &a, sizeof(a)), ==,
                    RNIC_CMD_ERR_HANDLE);
    peer_stop(&p);
}

/*
 * An event arriving while the device is disabled, after the guest set the
 * event ring's log size to nonsense (allowed while disabled): nothing is
 * written and nothing shifts by 40 (UBSan in the sanitizer build).
 */
static void test_event_while_disabled(void)
{
    struct rnic_cmd_listen l = {
        .local = qrnic_loopback(0),
    };
    uint8_t req[QRNIC_MPA_HDR];
    struct rnic_cmd cmd;
    uint32_t eq_prod;
    Peer p;

    memset(&p, 0, sizeof(p));
    qrnic_test_start(&p.t, ",id=dev,listen-allow=127.0.0.1");
    qrnic_test_enable(&p.t);
    cmd = qrnic_cmd_ok(&p.t, RNIC_CMD_LISTEN, &l, sizeof(l));
    l = *(struct rnic_cmd_listen *)cmd.u.raw;
    eq_prod = qrnic_rd(&p.t, RNIC_REG_EQ_PROD);
    qrnic_wr(&p.t, RNIC_REG_CONTROL, 0);
    qrnic_wr(&p.t, RNIC_REG_EQ_LOG_SIZE, 40);
    qrnic_peer_init(&p.wire, qrnic_tcp_connect(le16_to_cpu(l.local.port), 0),
                    false);
    /* would post CONN_REQUEST */
    qrnic_write_full(p.wire.fd, req,
                     qrnic_peer_mpa_raw(req, QRNIC_MPA_REQ_KEY, 0, 1, NULL,
                                        0));
    for (int i = 0; i < 200; i++) {
        g_usleep(1000);
        qrnic_settle(&p.t);
    }
    g_assert_cmphex(qrnic_rd(&p.t, RNIC_REG_EQ_PROD), ==, eq_prod);
    g_assert_cmphex(qrnic_rd(&p.t, RNIC_REG_ID), ==, RNIC_ID_MAGIC);
    peer_stop(&p);
}

static void test_base_bounds(void)
{
    Peer p;
    uint32_t stag = peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);

    /* Last 4 bytes in range, the fifth beyond: all refused. */
    qrnic_peer_write(&p.wire, stag, IOVA + 16384 - 4, "12345", 5);
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_DDP_TAGGED, 0x01);
    expect_closed(&p);
    assert_untouched(&p, 0, 16384);
    peer_stop(&p);
}

static void test_to_wrap(void)
{
    Peer p;
    uint32_t stag = peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);

    qrnic_peer_write(&p.wire, stag, UINT64_MAX - 1, "1234", 4);
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_DDP_TAGGED, 0x03);
    assert_untouched(&p, 0, 16384);
    peer_stop(&p);
}

static void test_one_shot_twice(void)
{
    static const char first[] = "first";
    char got[sizeof(first)];
    Peer p;
    uint32_t stag = peer_start(&p, RNIC_MR_POLICY_ONE_SHOT, false);

    qrnic_peer_write(&p.wire, stag, IOVA + 100, first, sizeof(first));
    /* The second message to the one-shot STag is refused, not placed. */
    qrnic_peer_write(&p.wire, stag, IOVA + 200, "second", 7);
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_DDP_TAGGED, 0x00);
    qtest_memread(p.t.qts, p.buf + 100, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), first, sizeof(first));
    assert_untouched(&p, 200, 7);
    peer_stop(&p);
}

static void test_send_without_receive(void)
{
    uint8_t u[64];
    size_t h;
    Peer p;

    peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);
    h = qrnic_peer_untagged_hdr(&p.wire, u, QRNIC_RDMAP_SEND, 0, 0, 0);
    memcpy(u + h, "hi", 2);
    qrnic_peer_send_fpdu(&p.wire, u, h + 2);
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_DDP_UNTAGGED, 0x02);
    peer_stop(&p);
}

static void test_bad_ddp_version(void)
{
    uint8_t u[64];
    Peer p;
    uint32_t stag = peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);
    size_t h = qrnic_peer_tagged_hdr(u, true, QRNIC_RDMAP_WRITE, stag, IOVA);

    u[0] = (u[0] & ~0x03) | 0x02;                   /* DV 2 */
    qrnic_peer_send_fpdu(&p.wire, u, h + 1);
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_DDP_TAGGED, 0x04);
    assert_untouched(&p, 0, 16384);
    peer_stop(&p);
}

/* The peer terminates: the device reports it and flushes the QP's work. */
static void test_terminate_received(void)
{
    struct rnic_rq_wqe w = { .wr_id = cpu_to_le64(0x77) };
    struct rnic_cq_entry e;
    struct rnic_event ev;
    uint8_t u[64];
    size_t h;
    Peer p;

    peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);
    qrnic_post_recv(&p.t, &p.qp, &w);
    h = qrnic_peer_untagged_hdr(&p.wire, u, QRNIC_RDMAP_TERMINATE, 0, 2, 0);
    u[h] = (0x0 << 4) | 0x2;    /* RDMAP, remote operation error */
    u[h + 1] = 0xff;            /* unspecified */
    u[h + 2] = 0;               /* no headers copied */
    u[h + 3] = 0;
    qrnic_peer_send_fpdu(&p.wire, u, h + 4);
    qrnic_expect_event(&p.t, RNIC_EV_TERM_RECEIVED, &ev);
    g_assert_cmphex(le32_to_cpu(ev.arg0), ==, QRNIC_TERM_RDMAP_REMOTE_OP);
    g_assert_cmphex(le32_to_cpu(ev.arg1), ==, 0xff);
    for (int i = 0; i < 1000 &&
         !qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, 0, &e); i++) {
        g_usleep(1000);
        qrnic_settle(&p.t);
    }
    g_assert_true(qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, 0, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x77);
    g_assert_cmpuint(e.status, ==, RNIC_CQE_WR_FLUSH_ERR);
    g_assert_cmpuint(dev_stat(&p, "stat-cqe-wr-flush-err"), ==, 1);
    g_assert_cmpuint(dev_stat(&p, "stat-terminates-received"), ==, 1);
    peer_stop(&p);
}

/* With CRC negotiated, a good FPDU is placed and a broken one ends it all. */
static void test_crc(void)
{
    static const char msg[] = "crc ok";
    char got[sizeof(msg)];
    uint8_t u[64];
    Peer p;
    uint32_t stag = peer_start(&p, RNIC_MR_POLICY_PERSISTENT, true);
    size_t h;

    qrnic_peer_write(&p.wire, stag, IOVA, msg, sizeof(msg));
    for (int i = 0; i < 1000; i++) {
        qtest_memread(p.t.qts, p.buf, got, sizeof(got));
        if (!memcmp(got, msg, sizeof(msg))) {
            break;
        }
        g_usleep(1000);
    }
    g_assert_cmpmem(got, sizeof(got), msg, sizeof(msg));
    /* Now one with a wrong CRC. */
    p.wire.crc = false;
    h = qrnic_peer_tagged_hdr(u, true, QRNIC_RDMAP_WRITE, stag, IOVA + 64);
    memcpy(u + h, "bad", 3);
    qrnic_peer_send_fpdu(&p.wire, u, h + 3);
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_LLP_MPA, 0x02);
    assert_untouched(&p, 64, 3);
    g_assert_cmpuint(dev_stat(&p, "stat-crc-errors"), ==, 1);
    peer_stop(&p);
}

/*
 * A receive buffer with a linked STag: when the peer's Send consumes the
 * buffer, the device invalidates the STag, and a later Write to it is
 * refused with a Terminate and not placed.
 */
static void test_recv_linked_stag(void)
{
    struct rnic_rq_wqe w = {
        .wr_id = cpu_to_le64(0x99),
        .num_sge = 1,
        .sge[0] = {
            .addr = cpu_to_le64(IOVA + 8192),
            .length = cpu_to_le32(64),
        },
    };
    struct rnic_cq_entry e;
    uint8_t u[64];
    size_t h;
    Peer p;
    uint32_t stag = peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);

    w.sge[0].stag = cpu_to_le32(stag);
    w.linked_stag = cpu_to_le32(stag);
    qrnic_post_recv(&p.t, &p.qp, &w);
    qrnic_settle(&p.t);
    /* Still valid while the buffer waits: a Write lands. */
    qrnic_peer_write(&p.wire, stag, IOVA, "before", 6);
    h = qrnic_peer_untagged_hdr(&p.wire, u, QRNIC_RDMAP_SEND, 0, 0, 0);
    memcpy(u + h, "msg", 3);
    qrnic_peer_send_fpdu(&p.wire, u, h + 3);
    for (int i = 0; i < 1000 &&
         !qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, 0, &e); i++) {
        g_usleep(1000);
        qrnic_settle(&p.t);
    }
    g_assert_true(qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, 0, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x99);
    g_assert_cmpuint(e.status, ==, RNIC_CQE_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(e.byte_len), ==, 3);
    /* The buffer was consumed: its STag is gone. */
    qrnic_peer_write(&p.wire, stag, IOVA + 100, "after", 5);
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_DDP_TAGGED, 0x00);
    assert_untouched(&p, 100, 5);
    peer_stop(&p);
}

/* Polls until @len bytes at buffer offset @off read @want. */
static bool wait_placed(Peer *p, uint32_t off, const void *want, size_t len)
{
    g_autofree uint8_t *b = g_malloc(len);

    for (int i = 0; i < 1000; i++) {
        qrnic_settle(&p->t);
        qtest_memread(p->t.qts, p->buf + off, b, len);
        if (!memcmp(b, want, len)) {
            return true;
        }
        g_usleep(1000);
    }
    return false;
}

/*
 * Receive-linked STags are scoped to the receive queue and its PD: a
 * second QP's buffer with the same wr_id keeps its STag when the first
 * QP's buffer is consumed, and a QP cannot link another PD's STag.
 */
static void test_recv_link_scoped(void)
{
    struct rnic_rq_wqe w = {
        .wr_id = cpu_to_le64(0x99),
        .num_sge = 1,
        .sge[0] = {
            .addr = cpu_to_le64(IOVA + 8192),
            .length = cpu_to_le32(64),
        },
    };
    uint32_t acc = RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_WRITE;
    struct rnic_cq_entry e;
    QRnicQp qp2;
    uint32_t stag2, stag3, pd2;
    uint8_t u[64];
    size_t h;
    Peer p;
    uint32_t stag = peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);

    g_assert_cmphex(qrnic_try_create_qp(&p.t, p.pdn, p.cqn, p.cqn, QP_LOG,
                                        &qp2), ==, RNIC_CMD_OK);
    g_assert_cmphex(qrnic_reg_mr(&p.t, p.pdn, p.buf, 16384, acc, 0x44,
                                 &stag2), ==, RNIC_CMD_OK);
    w.sge[0].stag = cpu_to_le32(stag);
    w.linked_stag = cpu_to_le32(stag2);
    qrnic_post_recv(&p.t, &qp2, &w);        /* QP 2, wr_id 0x99 */
    w.linked_stag = cpu_to_le32(stag);
    qrnic_post_recv(&p.t, &p.qp, &w);       /* QP 1, wr_id 0x99 */
    qrnic_settle(&p.t);

    h = qrnic_peer_untagged_hdr(&p.wire, u, QRNIC_RDMAP_SEND, 0, 0, 0);
    memcpy(u + h, "msg", 3);
    qrnic_peer_send_fpdu(&p.wire, u, h + 3);
    for (int i = 0; i < 1000 &&
         !qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, 0, &e); i++) {
        g_usleep(1000);
        qrnic_settle(&p.t);
    }
    g_assert_true(qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, 0, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x99);
    g_assert_cmpuint(le32_to_cpu(e.qpn), ==, p.qp.qpn);
    g_assert_cmpuint(e.status, ==, RNIC_CQE_SUCCESS);
    /* QP 2's buffer was not consumed: its STag still takes a Write. */
    qrnic_peer_write(&p.wire, stag2, 0x7f0000000000ull + 200, "other", 5);
    g_assert_true(wait_placed(&p, 200, "other", 5));

    /* A STag of another PD cannot be linked: the entry fails, QP ERROR. */
    pd2 = qrnic_create_pd(&p.t);
    g_assert_cmphex(qrnic_reg_mr(&p.t, pd2, p.buf, 4096, acc, 0x55, &stag3),
                    ==, RNIC_CMD_OK);
    w.wr_id = cpu_to_le64(0x77);
    w.linked_stag = cpu_to_le32(stag3);
    qrnic_post_recv(&p.t, &p.qp, &w);
    for (int i = 0; i < 1000 &&
         !qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, 1, &e); i++) {
        qrnic_settle(&p.t);
    }
    g_assert_true(qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, 1, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x77);
    g_assert_cmpuint(e.status, !=, RNIC_CQE_SUCCESS);
    peer_stop(&p);
}

/*
 * A QP taking receives from an SRQ: Sends land in the SRQ's buffers in
 * order; with the SRQ empty the next Send is refused (no buffer).
 */
static void test_srq_receives(void)
{
    struct rnic_cq_entry e;
    uint8_t u[64], got[3];
    size_t h;
    Peer p;
    uint32_t stag = peer_start_opts(&p, RNIC_MR_POLICY_PERSISTENT, false, 0,
                                    true);

    for (int i = 0; i < 2; i++) {
        struct rnic_rq_wqe w = {
            .wr_id = cpu_to_le64(0x50 + i),
            .num_sge = 1,
            .sge[0] = {
                .addr = cpu_to_le64(IOVA + 1000 * i),
                .length = cpu_to_le32(64),
                .stag = cpu_to_le32(stag),
            },
        };

        qrnic_post_srq(&p.t, &p.srq, &w);
    }
    qrnic_settle(&p.t);     /* the SRQ doorbell is taken in a bottom half */
    for (int i = 0; i < 3; i++) {
        h = qrnic_peer_untagged_hdr(&p.wire, u, QRNIC_RDMAP_SEND, 0, 0, 0);
        memcpy(u + h, i ? "two" : "one", 3);
        qrnic_peer_send_fpdu(&p.wire, u, h + 3);
    }
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 1000 &&
             !qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, i, &e); k++) {
            g_usleep(1000);
            qrnic_settle(&p.t);
        }
        g_assert_true(qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, i, &e));
        g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x50 + i);
        g_assert_cmpuint(e.status, ==, RNIC_CQE_SUCCESS);
        qtest_memread(p.t.qts, p.buf + 1000 * i, got, 3);
        g_assert_cmpmem(got, 3, i ? "two" : "one", 3);
    }
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_DDP_UNTAGGED, 0x02);
    peer_stop(&p);
}

/* The peer's Send @i lands in SRQ receive @i, which completes. */
static void srq_send_one(Peer *p, int i)
{
    struct rnic_cq_entry e;
    uint8_t u[64];
    size_t h = qrnic_peer_untagged_hdr(&p->wire, u, QRNIC_RDMAP_SEND, 0, 0, 0);

    memcpy(u + h, "abc", 3);
    qrnic_peer_send_fpdu(&p->wire, u, h + 3);
    for (int k = 0; k < 1000 &&
         !qrnic_read_cqe(&p->t, p->cq_ring, CQ_LOG, i, &e); k++) {
        g_usleep(1000);
        qrnic_settle(&p->t);
    }
    g_assert_true(qrnic_read_cqe(&p->t, p->cq_ring, CQ_LOG, i, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x60 + i);
    g_assert_cmpuint(e.status, ==, RNIC_CQE_SUCCESS);
}

/*
 * The SRQ limit: armed at 3 with 4 receives posted, the Send that leaves
 * 2 makes the device post SRQ_LIMIT (arg0 2) once, in the same callback
 * as the completion; the next Send posts none (disarmed).  MODIFY_SRQ
 * refuses a limit above the SRQ's entries and an unknown SRQ.
 */
static void test_srq_limit(void)
{
    struct rnic_cmd_modify_srq m;
    struct rnic_event ev;
    Peer p;
    uint32_t stag = peer_start_opts(&p, RNIC_MR_POLICY_PERSISTENT, false, 0,
                                    true);

    for (int i = 0; i < 4; i++) {
        struct rnic_rq_wqe w = {
            .wr_id = cpu_to_le64(0x60 + i),
            .num_sge = 1,
            .sge[0] = {
                .addr = cpu_to_le64(IOVA + 100 * i),
                .length = cpu_to_le32(64),
                .stag = cpu_to_le32(stag),
            },
        };

        qrnic_post_srq(&p.t, &p.srq, &w);
    }
    qrnic_settle(&p.t);
    m = (struct rnic_cmd_modify_srq) {
        .srqn = cpu_to_le32(p.srq.qpn),
        .limit = cpu_to_le32((1u << p.srq.log) + 1),
    };
    g_assert_cmphex(qrnic_cmd_status(&p.t, RNIC_CMD_MODIFY_SRQ, &m, sizeof(m)),
                    ==, RNIC_CMD_ERR_PARAM);
    m.limit = cpu_to_le32(3);
    m.srqn = cpu_to_le32(p.srq.qpn + 1);
    g_assert_cmphex(qrnic_cmd_status(&p.t, RNIC_CMD_MODIFY_SRQ, &m, sizeof(m)),
                    ==, RNIC_CMD_ERR_HANDLE);
    m.srqn = cpu_to_le32(p.srq.qpn);
    qrnic_cmd_ok(&p.t, RNIC_CMD_MODIFY_SRQ, &m, sizeof(m));

    srq_send_one(&p, 0);
    g_assert_false(qrnic_next_event(&p.t, &ev));
    srq_send_one(&p, 1);
    g_assert_true(qrnic_next_event(&p.t, &ev));
    g_assert_cmpuint(ev.type, ==, RNIC_EV_SRQ_LIMIT);
    g_assert_cmpuint(le32_to_cpu(ev.id), ==, p.srq.qpn);
    g_assert_cmpuint(le32_to_cpu(ev.arg0), ==, 2);
    srq_send_one(&p, 2);
    g_assert_false(qrnic_next_event(&p.t, &ev));
    peer_stop(&p);
}

/*
 * An SRQ doorbell more than a ring ahead is refused, as SQ and RQ
 * doorbells are: nothing is taken from the ring (not 100 stale entries),
 * so the peer's Send finds no buffer.
 */
static void test_srq_doorbell_ahead(void)
{
    uint8_t u[64];
    size_t h;
    Peer p;

    peer_start_opts(&p, RNIC_MR_POLICY_PERSISTENT, false, 0, true);
    qrnic_wr(&p.t, RNIC_REG_DB_SRQ, RNIC_DB_VALUE(p.srq.qpn, 100));
    qrnic_settle(&p.t);
    h = qrnic_peer_untagged_hdr(&p.wire, u, QRNIC_RDMAP_SEND, 0, 0, 0);
    memcpy(u + h, "one", 3);
    qrnic_peer_send_fpdu(&p.wire, u, h + 3);
    /* no buffer */
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_DDP_UNTAGGED, 0x02);
    peer_stop(&p);
}

/*
 * DEREG_MR while an RDMA Write from the region is framed ahead of a full
 * socket: the guest reuses the memory at once, and the peer, reading
 * everything the device still sends, never sees a byte of the new
 * content (a run of 0xab); the Write completes in error.
 */
static void test_dereg_during_write(void)
{
    enum { LEN = 16 * 1024 * 1024 };
    struct rnic_cmd_stag d;
    struct rnic_cq_entry e;
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(7),
        .opcode = RNIC_WQE_WRITE,
        .flags = RNIC_WQE_FLAG_SIGNALED,
        .num_sge = 1,
        .sge[0] = {
            .addr = cpu_to_le64(0x7f0000000000ull),
            .length = cpu_to_le32(LEN),
        },
        .remote_stag = cpu_to_le32(0x1234),
    };
    uint8_t sink[65536];
    size_t run = 0, longest = 0, total = 0;
    uint32_t big_stag;
    uint64_t big;
    ssize_t n;
    Peer p;

    peer_start_opts(&p, RNIC_MR_POLICY_PERSISTENT, false, 65536, false);
    big = guest_alloc(p.t.alloc, LEN);
    qtest_memset(p.t.qts, big, 0x11, LEN);
    g_assert_cmphex(qrnic_reg_mr(&p.t, p.pdn, big, LEN, RNIC_ACC_LOCAL_WRITE,
                                 0x44, &big_stag), ==, RNIC_CMD_OK);
    w.sge[0].stag = cpu_to_le32(big_stag);
    qrnic_post_send(&p.t, &p.qp, &w);
    for (int i = 0; i < 300; i++) {     /* the socket fills up */
        g_usleep(1000);
        qrnic_settle(&p.t);
    }
    g_assert_false(qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, 0, &e));
    d = (struct rnic_cmd_stag) { .stag = cpu_to_le32(big_stag) };
    qrnic_cmd_ok(&p.t, RNIC_CMD_DEREG_MR, &d, sizeof(d));
    qtest_memset(p.t.qts, big, 0xab, LEN);
    /* Read all the device still sends, until it closes. */
    for (int i = 0; i < 100000; i++) {
        n = recv(p.wire.fd, sink, sizeof(sink), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN)) {
            break;
        }
        if (n < 0) {
            g_usleep(100);
            qrnic_settle(&p.t);
            continue;
        }
        total += n;
        for (ssize_t k = 0; k < n; k++) {
            run = sink[k] == 0xab ? run + 1 : 0;
            longest = MAX(longest, run);
        }
    }
    g_test_message("%zu bytes after DEREG_MR; longest run of 0xab: %zu",
                   total, longest);
    g_assert_cmpuint(longest, <, 16);
    g_assert_cmpuint(total, <, LEN);
    g_assert_true(qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, 0, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 7);
    g_assert_cmpuint(e.status, ==, RNIC_CQE_LOC_PROT_ERR);
    peer_stop(&p);
}

/*
 * Backpressure: the peer stops reading, so the device can hand no more to
 * the socket and its RDMA Writes stop completing; nothing is lost, and
 * once the peer reads again, every Write completes.
 */
static void test_backpressure(void)
{
    enum { N = 8, LEN = 2 * 1024 * 1024 };
    uint64_t big = 0;
    uint32_t big_stag, done = 0;
    struct rnic_cq_entry e;
    uint8_t sink[65536];
    Peer p;

    peer_start_opts(&p, RNIC_MR_POLICY_PERSISTENT, false, 65536, false);
    big = guest_alloc(p.t.alloc, LEN);
    g_assert_cmphex(qrnic_reg_mr(&p.t, p.pdn, big, LEN, RNIC_ACC_LOCAL_WRITE,
                                 0x44, &big_stag), ==, RNIC_CMD_OK);
    for (int i = 0; i < N; i++) {
        struct rnic_sq_wqe w = {
            .wr_id = cpu_to_le64(i),
            .opcode = RNIC_WQE_WRITE,
            .flags = RNIC_WQE_FLAG_SIGNALED,
            .num_sge = 1,
            .sge[0] = {
                .addr = cpu_to_le64(0x7f0000000000ull),
                .length = cpu_to_le32(LEN),
                .stag = cpu_to_le32(big_stag),
            },
            .remote_stag = cpu_to_le32(0x1234),
        };

        qrnic_post_send(&p.t, &p.qp, &w);
    }
    /* 16 MiB cannot fit in the socket buffers of a 64 KiB window. */
    for (int i = 0; i < 300; i++) {
        g_usleep(1000);
        qrnic_settle(&p.t);
    }
    while (qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, done, &e)) {
        done++;
    }
    g_assert_cmpuint(done, <, N);
    /* The peer reads again: everything goes out and completes. */
    for (int i = 0; i < 100000 && done < N; i++) {
        if (recv(p.wire.fd, sink, sizeof(sink), MSG_DONTWAIT) <= 0) {
            g_usleep(100);
            qrnic_settle(&p.t);
        }
        while (done < N && qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, done, &e)) {
            g_assert_cmpuint(e.status, ==, RNIC_CQE_SUCCESS);
            g_assert_cmpuint(le64_to_cpu(e.wr_id), ==, done);
            done++;
        }
    }
    g_assert_cmpuint(done, ==, N);
    g_assert_cmpuint(dev_stat(&p, "stat-tx-bytes"), >=, (uint64_t)N * LEN);
    peer_stop(&p);
}

/*
 * Re-entrancy: the guest aims what the device writes from inside its
 * socket handler (placed data, an MSI-X message) at the device's own
 * registers or at the root port above it.  The device must refuse the
 * first (a guest error), survive the second, and never reset or free
 * itself under its own feet (docs/spec.md "DMA and interrupts").
 */

/* A one-page MR over @addr, whatever is there: the device cannot tell. */
static uint32_t reg_page_at(Peer *p, uint64_t addr)
{
    uint32_t stag;

    g_assert_cmphex(qrnic_reg_mr(&p->t, p->pdn, addr, 4096,
                                 RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_WRITE,
                                 0x44, &stag), ==, RNIC_CMD_OK);
    return stag;
}

/* Not reset: still enabled, and the QP still there (QUERY_QP succeeds). */
static void assert_still_ready(Peer *p)
{
    g_assert_cmphex(qrnic_rd(&p->t, RNIC_REG_STATUS), ==, RNIC_STATUS_READY);
    qrnic_query_qp_state(&p->t, p->qp.qpn);
}

static void test_write_into_own_bar(void)
{
    uint32_t reset = cpu_to_le32(RNIC_CONTROL_RESET);
    uint32_t stag;
    Peer p;

    peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);
    stag = reg_page_at(&p, p.t.regs.addr);
    qrnic_peer_write(&p.wire, stag, QRNIC_MR_IOVA + RNIC_REG_CONTROL, &reset,
                     4);
    /* Placement failed: DDP local catastrophic error, stream ended. */
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_DDP_CATASTROPHIC, 0);
    assert_still_ready(&p);
    peer_stop(&p);
}

/* A Send completes on an armed CQ whose MSI-X message is CONTROL.RESET. */
static void test_msix_into_own_bar(void)
{
    struct rnic_rq_wqe rw = { .wr_id = cpu_to_le64(7) };
    QPCIDevice *d;
    struct rnic_cq_entry e;
    uint8_t u[64];
    uint64_t entry;
    Peer p;
    size_t h;

    peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);
    d = p.t.dev;
    entry = d->msix_table_off + 1 * PCI_MSIX_ENTRY_SIZE;
    qpci_io_writel(d, d->msix_table_bar, entry + PCI_MSIX_ENTRY_LOWER_ADDR,
                   p.t.regs.addr + RNIC_REG_CONTROL);
    qpci_io_writel(d, d->msix_table_bar, entry + PCI_MSIX_ENTRY_UPPER_ADDR,
                   p.t.regs.addr >> 32);
    qpci_io_writel(d, d->msix_table_bar, entry + PCI_MSIX_ENTRY_DATA,
                   RNIC_CONTROL_RESET);
    qrnic_post_recv(&p.t, &p.qp, &rw);
    qrnic_wr(&p.t, RNIC_REG_DB_CQ_ARM, p.cqn | RNIC_DB_ARM_NEXT);
    qrnic_settle(&p.t);
    h = qrnic_peer_untagged_hdr(&p.wire, u, QRNIC_RDMAP_SEND, 0, 0, 0);
    qrnic_peer_send_fpdu(&p.wire, u, h);
    for (int i = 0; i < 5000 && !qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, 0,
                                                &e); i++) {
        g_usleep(1000);
    }
    g_assert_cmpuint(le64_to_cpu(e.wr_id), ==, 7);
    assert_still_ready(&p);
    peer_stop(&p);
}

/*
 * A peer behind the root port, for DMA into config space; false (the test
 * skipped) on an IOThread, whose DMA reaches RAM only (docs/spec.md): the
 * main-loop variant alone runs it.
 */
static bool peer_start_in_slot(Peer *p, uint32_t *stag)
{
    if (qrnic_test_threaded()) {
        g_test_skip("an IOThread's DMA does not reach config space");
        return false;
    }
    memset(p, 0, sizeof(*p));
    qrnic_test_start_in_slot(&p->t, ",id=dev,listen-allow=127.0.0.1");
    *stag = peer_setup(p, RNIC_MR_POLICY_PERSISTENT, false, 0, false);
    return true;
}

/*
 * A Write placed into the root port's config space (ECAM) powers the
 * slot off: the device is unplugged while its socket handler runs.
 */
static void test_unplug_from_own_write(void)
{
    QTestState *qts;
    uint16_t sltctl;
    uint32_t stag;
    uint8_t exp;
    Peer p;

    if (!peer_start_in_slot(&p, &stag)) {
        return;
    }
    qts = p.t.qts;
    exp = qpci_find_capability(p.t.port, PCI_CAP_ID_EXP, 0);
    g_assert_cmpuint(exp, !=, 0);
    sltctl = cpu_to_le16(qpci_config_readw(p.t.port, exp + PCI_EXP_SLTCTL) |
                         PCI_EXP_SLTCTL_PWR_OFF);
    stag = reg_page_at(&p, qrnic_test_port_ecam(&p.t));
    qrnic_peer_write(&p.wire, stag, QRNIC_MR_IOVA + exp + PCI_EXP_SLTCTL,
                     &sltctl, 2);
    qtest_qmp_eventwait(qts, "DEVICE_DELETED");
    /* The device closed its connection on the way out; QEMU lives on. */
    expect_closed(&p);
    qtest_qmp_assert_success(qts, "{'execute': 'query-status'}");
    peer_stop(&p);
}

/*
 * Three Writes in one TCP send, so that one run of the socket handler
 * places them: into a page of RAM, into the device's own PCI_COMMAND
 * through ECAM (bus mastering off), and into the same page again.  The
 * third must not land although the run had reached that page before
 * (docs/spec.md "DMA and interrupts": a change of the memory map applies
 * from the next copy).
 */
static void test_master_off_mid_run(void)
{
    uint8_t f[3 * 128], one[64], two[64], got[64], ee[64];
    uint16_t cmd;
    uint32_t stag, cfg;
    size_t n = 0;
    Peer p;

    if (!peer_start_in_slot(&p, &stag)) {
        return;
    }
    cfg = reg_page_at(&p, qrnic_test_dev_ecam(&p.t));
    cmd = cpu_to_le16(qpci_config_readw(p.t.dev, PCI_COMMAND) &
                      ~PCI_COMMAND_MASTER);
    memset(one, 0x11, sizeof(one));
    memset(two, 0x22, sizeof(two));
    memset(ee, 0xee, sizeof(ee));
    qrnic_peer_add_tagged(&p.wire, f, &n, sizeof(f), QRNIC_RDMAP_WRITE, stag,
                          IOVA, one, sizeof(one));
    qrnic_peer_add_tagged(&p.wire, f, &n, sizeof(f), QRNIC_RDMAP_WRITE, cfg,
                          QRNIC_MR_IOVA + PCI_COMMAND, &cmd, sizeof(cmd));
    qrnic_peer_add_tagged(&p.wire, f, &n, sizeof(f), QRNIC_RDMAP_WRITE, stag,
                          IOVA + 128, two, sizeof(two));
    qrnic_write_full(p.wire.fd, f, n);
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_DDP_CATASTROPHIC, 0);
    qtest_memread(p.t.qts, p.buf, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), one, sizeof(one));
    qtest_memread(p.t.qts, p.buf + 128, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), ee, sizeof(ee));
    g_assert_cmphex(qpci_config_readw(p.t.dev, PCI_COMMAND) &
                    PCI_COMMAND_MASTER, ==, 0);
    peer_stop(&p);
}

/*
 * The slot is powered off (hot-unplug) while the device places a stream
 * of RDMA Writes: with an IOThread, unplug stops it between two of its
 * callbacks; the connection is reset, QEMU lives on.
 */
static void test_unplug_in_flight(void)
{
    uint8_t data[1000];
    uint16_t sltctl;
    uint32_t stag;
    uint8_t exp;
    Peer p;

    memset(&p, 0, sizeof(p));
    memset(data, 0x5a, sizeof(data));
    qrnic_test_start_in_slot(&p.t, ",id=dev,listen-allow=127.0.0.1");
    stag = peer_setup(&p, RNIC_MR_POLICY_PERSISTENT, false, 0, false);
    for (int i = 0; i < 4000; i++) {
        qrnic_peer_write(&p.wire, stag, IOVA + (i % 16) * sizeof(data), data,
                         sizeof(data));
    }
    exp = qpci_find_capability(p.t.port, PCI_CAP_ID_EXP, 0);
    sltctl = qpci_config_readw(p.t.port, exp + PCI_EXP_SLTCTL);
    qpci_config_writew(p.t.port, exp + PCI_EXP_SLTCTL,
                       sltctl | PCI_EXP_SLTCTL_PWR_OFF);
    qtest_qmp_eventwait(p.t.qts, "DEVICE_DELETED");
    expect_closed(&p);
    qtest_qmp_assert_success(p.t.qts, "{'execute': 'query-status'}");
    peer_stop(&p);
}

/* Nanoseconds thread @tid of QEMU has run (/proc schedstat). */
static uint64_t thread_run_ns(Peer *p, int64_t tid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/task/%" PRId64
                                            "/schedstat",
                                            (int)qtest_pid(p->t.qts), tid);
    g_autofree char *text = NULL;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    return g_ascii_strtoull(text, NULL, 10);
}

/*
 * On an IOThread (the device's own, or iothread=): that thread, not the
 * main loop, places a 16 MB stream of RDMA Writes (CPU time of each
 * thread while it flows).
 */
static void test_iothread_does_the_work(void)
{
    const int n = 16000;
    uint8_t data[1000];
    uint64_t io0, main0, io_ns, main_ns, want;
    int64_t tid;
    uint32_t stag;
    Peer p;

    if (!qrnic_test_threaded()) {
        g_test_skip("no IOThread");
        return;
    }
    memset(data, 0x5a, sizeof(data));
    stag = peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);
    g_assert_cmpint(qrnic_iothreads(p.t.qts, &tid), ==, 1);
    want = qrnic_qom_int(&p.t, "dev", "stat-rx-bytes");
    io0 = thread_run_ns(&p, tid);
    main0 = thread_run_ns(&p, qtest_pid(p.t.qts));
    for (int i = 0; i < n; i++) {
        qrnic_peer_write(&p.wire, stag, IOVA + (i % 16) * sizeof(data), data,
                         sizeof(data));
    }
    want += n * qrnic_peer_fpdu_size(QRNIC_DDP_TAGGED_HDR + sizeof(data));
    for (int i = 0; i < 5000 &&
         qrnic_qom_int(&p.t, "dev", "stat-rx-bytes") < want; i++) {
        g_usleep(1000);
    }
    io_ns = thread_run_ns(&p, tid) - io0;
    main_ns = thread_run_ns(&p, qtest_pid(p.t.qts)) - main0;
    g_test_message("16 MB placed: IOThread ran %" PRIu64 " us, main thread "
                   "%" PRIu64 " us", io_ns / 1000, main_ns / 1000);
    g_assert_cmpuint(qrnic_qom_int(&p.t, "dev", "stat-rx-bytes"), >=, want);
    g_assert_cmpuint(io_ns, >, main_ns);
    peer_stop(&p);
}

/* ---- closing, malformed work, floods: orderly ends, a free main loop ---- */

static void peer_disconnect(Peer *p, uint32_t flags)
{
    struct rnic_cmd_disconnect d = {
        .qpn = cpu_to_le32(p->qp.qpn), .flags = cpu_to_le32(flags),
    };

    qrnic_cmd_ok(&p->t, RNIC_CMD_DISCONNECT, &d, sizeof(d));
}

/* The CONN_CLOSED event, skipping others; returns its "abortive" flag. */
static uint32_t expect_conn_closed(Peer *p)
{
    struct rnic_event ev;

    do {
        qrnic_wait_event(&p->t, &ev);
    } while (ev.type != RNIC_EV_CONN_CLOSED);
    g_assert_cmpuint(le32_to_cpu(ev.id), ==, p->qp.qpn);
    return le32_to_cpu(ev.arg0);
}

/* RFC 5040: the peer's FIN takes an RTS QP through CLOSING to IDLE. */
static void test_peer_fin_closing(void)
{
    Peer p;

    peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);
    shutdown(p.wire.fd, SHUT_WR);
    g_assert_cmpuint(expect_conn_closed(&p), ==, 0);
    g_assert_cmpuint(qrnic_query_qp_state(&p.t, p.qp.qpn), ==, RNIC_QPS_IDLE);
    expect_closed(&p);      /* our FIN came back */
    peer_stop(&p);
}

/*
 * Graceful DISCONNECT while 16 MiB of Writes are stuck behind a 64 KiB
 * window (more than the socket buffers hold): the Write the data path
 * had begun still goes out whole, then FIN; once the peer closes too, the
 * Writes never begun are flushed (CLOSING starts nothing new).
 */
static void test_disconnect_drains(void)
{
    enum { LEN = 2 * 1024 * 1024, N = 8 };
    uint64_t big, got = 0;
    uint32_t big_stag;
    struct rnic_cq_entry e;
    uint8_t sink[65536];
    uint32_t done = 0, ok = 0;
    ssize_t n;
    Peer p;
    struct rnic_sq_wqe w = {
        .opcode = RNIC_WQE_WRITE,
        .flags = RNIC_WQE_FLAG_SIGNALED,
        .num_sge = 1,
        .sge[0] = {
            .addr = cpu_to_le64(QRNIC_MR_IOVA),
            .length = cpu_to_le32(LEN),
        },
        .remote_stag = cpu_to_le32(0x1234),
    };

    peer_start_opts(&p, RNIC_MR_POLICY_PERSISTENT, false, 65536, false);
    big = guest_alloc(p.t.alloc, LEN);
    g_assert_cmphex(qrnic_reg_mr(&p.t, p.pdn, big, LEN, RNIC_ACC_LOCAL_WRITE,
                                 0x44, &big_stag), ==, RNIC_CMD_OK);
    w.sge[0].stag = cpu_to_le32(big_stag);
    for (int i = 0; i < N; i++) {
        w.wr_id = cpu_to_le64(i);
        qrnic_post_send(&p.t, &p.qp, &w);
    }
    for (int i = 0; i < 50; i++) {
        g_usleep(1000);
        qrnic_settle(&p.t);
    }
    peer_disconnect(&p, 0);
    while ((n = read(p.wire.fd, sink, sizeof(sink))) > 0) {
        got += n;
        qrnic_settle(&p.t);
    }
    g_assert_cmpint(n, ==, 0);              /* FIN, not a reset */
    shutdown(p.wire.fd, SHUT_WR);
    g_assert_cmpuint(expect_conn_closed(&p), ==, 0);
    /*
     * The Writes begun before DISCONNECT completed, whole; those not begun
     * were flushed (the QP was CLOSING) and not one octet of them left.
     */
    while (qrnic_read_cqe(&p.t, p.cq_ring, CQ_LOG, done + ok, &e)) {
        g_assert_cmpuint(le64_to_cpu(e.wr_id), ==, done + ok);
        if (e.status == RNIC_CQE_SUCCESS) {
            g_assert_cmpuint(done, ==, 0);
            ok++;
        } else {
            g_assert_cmpuint(e.status, ==, RNIC_CQE_WR_FLUSH_ERR);
            done++;
        }
    }
    g_test_message("%" PRIu64 " octets for %u whole Writes", got, ok);
    g_assert_cmpuint(done + ok, ==, N);
    g_assert_cmpuint(ok, >=, 1);
    g_assert_cmpuint(got, >, (uint64_t)ok * LEN);
    g_assert_cmpuint(got, <, (uint64_t)ok * LEN + LEN / 32);   /* framing */
    g_assert_cmpuint(qrnic_query_qp_state(&p.t, p.qp.qpn), ==,
                     RNIC_QPS_ERROR);
    peer_stop(&p);
}

/* Completions in the CQ with @wr_id after the device settled. */
static int cqes_with_wr_id(Peer *p, uint64_t wr_id, uint8_t *status)
{
    struct rnic_cq_entry e;
    int n = 0;

    qrnic_settle(&p->t);
    for (uint32_t i = 0; qrnic_read_cqe(&p->t, p->cq_ring, CQ_LOG, i, &e);
         i++) {
        if (le64_to_cpu(e.wr_id) == wr_id) {
            *status = e.status;
            n++;
        }
    }
    return n;
}

/*
 * A malformed send queue entry on a connected QP: one error completion,
 * the QP in ERROR, a Terminate on the wire (RDMAP, local catastrophic),
 * and the connection closed.
 */
static void test_malformed_wqe(void)
{
    struct rnic_sq_wqe w = { .wr_id = cpu_to_le64(0xbad), .opcode = 0x7f };
    struct timeval tv = { .tv_sec = 5 };
    struct rnic_event ev;
    uint8_t status;
    Peer p;

    peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);
    setsockopt(p.wire.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    qrnic_post_send(&p.t, &p.qp, &w);
    qrnic_expect_event(&p.t, RNIC_EV_QP_ERROR, &ev);
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_RDMAP_CATASTROPHIC, 0);
    expect_closed(&p);
    g_assert_cmpuint(expect_conn_closed(&p), ==, 1);
    g_assert_cmpint(cqes_with_wr_id(&p, 0xbad, &status), ==, 1);
    g_assert_cmpuint(status, ==, RNIC_CQE_LOC_QP_OP_ERR);
    g_assert_cmpuint(qrnic_query_qp_state(&p.t, p.qp.qpn), ==, RNIC_QPS_ERROR);
    peer_stop(&p);
}

/* A receive the core took but whose linked STag is bad: one completion. */
static void test_bad_recv_link_one_cqe(void)
{
    struct rnic_rq_wqe w = {
        .wr_id = cpu_to_le64(0x77),
        .linked_stag = cpu_to_le32(0x12345600),
    };
    struct timeval tv = { .tv_sec = 5 };
    uint8_t status;
    Peer p;

    peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);
    setsockopt(p.wire.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    qrnic_post_recv(&p.t, &p.qp, &w);
    qrnic_peer_expect_terminate(&p.wire, QRNIC_TERM_RDMAP_CATASTROPHIC, 0);
    expect_closed(&p);
    expect_conn_closed(&p);
    g_assert_cmpint(cqes_with_wr_id(&p, 0x77, &status), ==, 1);
    peer_stop(&p);
}

/* The flood: a thread reads the device's Read Response as fast as it can. */
typedef struct Drain {
    int fd;
    uint64_t bytes;         /* atomic */
} Drain;

static gpointer drain_thread(gpointer opaque)
{
    Drain *d = opaque;
    g_autofree uint8_t *buf = g_malloc(1 << 20);
    ssize_t n;

    while ((n = read(d->fd, buf, 1 << 20)) > 0) {
        qatomic_add(&d->bytes, n);
    }
    return NULL;
}

/*
 * The peer reads 4 GiB out of guest memory (one 2 MiB page mapped 2047
 * times) and drains it as fast as it can: QMP must still answer while the
 * device sends.  The budget per run is what keeps the main loop free; the
 * time is printed, not asserted (this machine is shared); what is asserted
 * is how much the device sent while one QMP command waited.
 */
static void test_read_flood_qmp(void)
{
    enum { PAGE = 2 * 1024 * 1024, N = 2047 };
    uint64_t mem, page, pbl, sent_at[5], most = 0;
    double worst = 0;
    uint8_t u[64];
    size_t h;
    struct rnic_cmd_reg_mr r;
    struct rnic_cmd cmd;
    uint32_t stag;
    Drain d = { 0 };
    int big_rcvbuf = 256 * 1024 * 1024;
    gint64 t_start;
    GThread *th;
    Peer p;

    peer_start(&p, RNIC_MR_POLICY_PERSISTENT, false);
    mem = guest_alloc(p.t.alloc, 2 * PAGE);
    page = (mem + PAGE - 1) & ~(uint64_t)(PAGE - 1);
    pbl = guest_alloc(p.t.alloc, 8 * N);
    for (int i = 0; i < N; i++) {
        qtest_writeq(p.t.qts, pbl + 8 * i, page);
    }
    r = (struct rnic_cmd_reg_mr) {
        .pdn = cpu_to_le32(p.pdn),
        .access = cpu_to_le32(RNIC_ACC_REMOTE_READ),
        .iova = cpu_to_le64(0),
        .length = cpu_to_le64((uint64_t)PAGE * N),
        .pbl_addr = cpu_to_le64(pbl),
        .npages = cpu_to_le32(N),
        .page_shift = 21,
        .key = 0x55,
    };
    cmd = qrnic_cmd_ok(&p.t, RNIC_CMD_REG_MR, &r, sizeof(r));
    stag = le32_to_cpu(((struct rnic_cmd_reg_mr *)cmd.u.raw)->stag);

    /* RDMA Read Request (RFC 5040 section 4.4), QN 1 */
    /* 4 GiB - 2 MiB from @stag into our STag 0x4242 */
    h = qrnic_peer_read_req(&p.wire, u, 0x4242, 0, (uint32_t)PAGE * N, stag,
                            0);
    qrnic_peer_send_fpdu(&p.wire, u, h);

    /*
     * A receive buffer far beyond the socket's send buffer (root may force
     * it): the device's socket then rarely pushes back, and only the
     * budget gives the main loop its turn.
     */
    setsockopt(p.wire.fd, SOL_SOCKET, SO_RCVBUFFORCE, &big_rcvbuf,
               sizeof(big_rcvbuf));
    d.fd = p.wire.fd;
    t_start = g_get_monotonic_time();
    th = g_thread_new("drain", drain_thread, &d);
    for (int i = 0; i < 30000 && qatomic_read(&d.bytes) < 1024 * 1024; i++) {
        g_usleep(1000);
    }
    g_assert_cmpuint(qatomic_read(&d.bytes), >=, 1024 * 1024);
    for (int i = 0; i < 5; i++) {
        gint64 t0 = g_get_monotonic_time();
        uint64_t before = qatomic_read(&d.bytes);
        QDict *resp = qtest_qmp(p.t.qts, "{'execute': 'query-status'}");
        double ms = (g_get_monotonic_time() - t0) / 1000.0;

        g_assert_true(qdict_haskey(resp, "return"));
        qobject_unref(resp);
        sent_at[i] = qatomic_read(&d.bytes);
        worst = MAX(worst, ms);
        most = MAX(most, sent_at[i] - before);
    }
    g_test_message("QMP answered 5 times during a 4 GiB Read Response, "
                   "slowest %.1f ms, at most %" PRIu64 " bytes sent while "
                   "one waited; the peer had %" PRIu64 " .. %" PRIu64
                   " bytes then", worst, most, sent_at[0], sent_at[4]);
    /*
     * Work, not time: a budgeted device yields to QMP within a few runs
     * (a few MB); one without a budget sent ~260 MB before it answered.
     */
    g_assert_cmpuint(most, <, 128 * 1024 * 1024);
    /*
     * The runs that gave way to QMP came back: all of it arrives, payload
     * and framing.  The device sends in 1 MiB runs, a divisor of the
     * payload: the count may pass through exactly PAGE * N on the way.
     */
    for (int i = 0; i < 120000 && qatomic_read(&d.bytes) <= (uint64_t)PAGE * N;
         i++) {
        g_usleep(1000);
    }
    g_test_message("the peer had %" PRIu64 " bytes after %.1f s",
                   qatomic_read(&d.bytes),
                   (g_get_monotonic_time() - t_start) / 1e6);
    g_assert_cmpuint(qatomic_read(&d.bytes), >, (uint64_t)PAGE * N);
    shutdown(p.wire.fd, SHUT_RDWR);
    g_thread_join(th);
    peer_stop(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qrnic_test_add_both("/rnic/peer/write-placed", test_write_placed);
    qrnic_test_add_both("/rnic/peer/invalid-stag", test_invalid_stag);
    qrnic_test_add_both("/rnic/peer/phys-stag-from-wire",
                        test_phys_stag_from_wire);
    qrnic_test_add_both("/rnic/peer/query-qp-terminate",
                        test_query_qp_terminate);
    qrnic_test_add_both("/rnic/peer/unlisten-resets-pending",
                   test_unlisten_resets_pending);
    qrnic_test_add_both("/rnic/peer/event-while-disabled",
                   test_event_while_disabled);
    qrnic_test_add_both("/rnic/peer/base-bounds", test_base_bounds);
    qrnic_test_add_both("/rnic/peer/to-wrap", test_to_wrap);
    qrnic_test_add_both("/rnic/peer/one-shot-twice", test_one_shot_twice);
    qrnic_test_add_both("/rnic/peer/send-without-receive",
                   test_send_without_receive);
    qrnic_test_add_both("/rnic/peer/bad-ddp-version", test_bad_ddp_version);
    qrnic_test_add_both("/rnic/peer/terminate-received",
                        test_terminate_received);
    qrnic_test_add_both("/rnic/peer/crc", test_crc);
    qrnic_test_add_both("/rnic/peer/backpressure", test_backpressure);
    qrnic_test_add_both("/rnic/peer/dereg-during-write",
                        test_dereg_during_write);
    qrnic_test_add_both("/rnic/peer/srq-receives", test_srq_receives);
    qrnic_test_add_both("/rnic/peer/srq-limit", test_srq_limit);
    qrnic_test_add_both("/rnic/peer/srq-doorbell-ahead",
                        test_srq_doorbell_ahead);
    qrnic_test_add_both("/rnic/peer/recv-linked-stag", test_recv_linked_stag);
    qrnic_test_add_both("/rnic/peer/write-into-own-bar",
                        test_write_into_own_bar);
    qrnic_test_add_both("/rnic/peer/msix-into-own-bar", test_msix_into_own_bar);
    qrnic_test_add_both("/rnic/peer/unplug-from-own-write",
                   test_unplug_from_own_write);
    qrnic_test_add_both("/rnic/peer/unplug-in-flight", test_unplug_in_flight);
    qrnic_test_add_both("/rnic/peer/master-off-mid-run",
                        test_master_off_mid_run);
    qrnic_test_add_both("/rnic/peer/iothread-does-the-work",
                        test_iothread_does_the_work);
    qrnic_test_add_both("/rnic/peer/peer-fin-closing", test_peer_fin_closing);
    qrnic_test_add_both("/rnic/peer/disconnect-drains", test_disconnect_drains);
    qrnic_test_add_both("/rnic/peer/malformed-wqe", test_malformed_wqe);
    qrnic_test_add_both("/rnic/peer/bad-recv-link-one-cqe",
                   test_bad_recv_link_one_cqe);
    qrnic_test_add_both("/rnic/peer/read-flood-qmp", test_read_flood_qmp);
    qrnic_test_add_both("/rnic/peer/recv-link-scoped", test_recv_link_scoped);
    return g_test_run();
}
