/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest of rnic's data path: two rnic devices in one VM, connected over a
 * real TCP connection on 127.0.0.1, move data with every operation; each
 * byte is checked in guest memory.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qjson.h"
#include "qobject/qstring.h"
#include "libqos/rnic.h"

#define IOVA        QRNIC_MR_IOVA
#define BUF_SIZE    (64 * 1024)
#define QP_LOG      4
#define CQ_LOG      6

/* One side: its device, PD, CQ, QP and one registered buffer. */
typedef struct Side {
    QRnic t;
    uint32_t pdn, cqn;
    uint64_t cq_ring;
    uint32_t cq_cons;
    QRnicQp qp;
    uint64_t buf;
    uint32_t stag;
    uint16_t qp_flags;      /* RNIC_QP_FLAG_* of its QP */
} Side;

static void dp_setup(Side *x, uint32_t access)
{
    qrnic_test_enable(&x->t);
    x->pdn = qrnic_create_pd(&x->t);
    x->cqn = qrnic_create_cq(&x->t, CQ_LOG, 1, &x->cq_ring);
    g_assert_cmphex(qrnic_try_create_qp_flags(&x->t, x->pdn, x->cqn, x->cqn,
                                              RNIC_NO_SRQ, QP_LOG, x->qp_flags,
                                              &x->qp), ==, RNIC_CMD_OK);
    x->buf = guest_alloc(x->t.alloc, BUF_SIZE);
    g_assert_cmphex(x->buf & 0xfff, ==, 0);
    g_assert_cmphex(qrnic_reg_mr(&x->t, x->pdn, x->buf, BUF_SIZE, access,
                                 0x01, &x->stag), ==, RNIC_CMD_OK);
}

/* Waits in real time (the bytes cross a TCP connection) for a CQE. */
static void dp_cqe(Side *x, struct rnic_cq_entry *e)
{
    qrnic_wait_cqe(&x->t, x->cq_ring, CQ_LOG, x->cqn, &x->cq_cons, e);
}

static void dp_expect_cqe(Side *x, uint8_t opcode, uint8_t status,
                          uint64_t wr_id, struct rnic_cq_entry *e)
{
    dp_cqe(x, e);
    g_assert_cmphex(le64_to_cpu(e->wr_id), ==, wr_id);
    g_assert_cmpuint(e->status, ==, status);
    g_assert_cmpuint(e->opcode, ==, opcode);
}

/*
 * @a's and @b's bytes are the same, or become so within 5 s: a Write
 * completes at its sender when sent, and is placed at the peer after.
 */
static void check_same(Side *a, uint32_t aoff, Side *b, uint32_t boff,
                       uint32_t len)
{
    g_autofree uint8_t *pa = g_malloc(len);
    g_autofree uint8_t *pb = g_malloc(len);

    for (int n = 0; n < 500; n++) {
        qtest_memread(a->t.qts, a->buf + aoff, pa, len);
        qtest_memread(b->t.qts, b->buf + boff, pb, len);
        if (!memcmp(pa, pb, len)) {
            break;
        }
        g_usleep(10 * 1000);
    }
    g_assert_cmpmem(pa, len, pb, len);
}

/* Two devices, a listens, b connects; both QPs end in RTS. */
static void connect_pair_opts(Side *a, Side *b, const char *extra_a,
                              const char *extra_b, uint16_t qp_flags)
{
    const uint32_t access = RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_READ |
                            RNIC_ACC_REMOTE_WRITE | RNIC_ACC_REMOTE_ATOMIC;
    g_autofree char *xa = g_strdup_printf(",listen-allow=127.0.0.1%s",
                                          extra_a ?: "");
    g_autofree char *xb = g_strdup_printf(",peer-allow=127.0.0.1%s",
                                          extra_b ?: "");

    memset(a, 0, sizeof(*a));
    memset(b, 0, sizeof(*b));
    a->qp_flags = b->qp_flags = qp_flags;
    qrnic_test_start_pair(&a->t, &b->t, xa, xb);
    dp_setup(a, access);
    dp_setup(b, access);
    qrnic_connect_qps(&a->t, a->qp.qpn, &b->t, b->qp.qpn, 4);
    g_assert_cmpuint(qrnic_query_qp_state(&a->t, a->qp.qpn), ==, RNIC_QPS_RTS);
    g_assert_cmpuint(qrnic_query_qp_state(&b->t, b->qp.qpn), ==, RNIC_QPS_RTS);
}

static void connect_pair(Side *a, Side *b, const char *extra_a,
                         const char *extra_b)
{
    connect_pair_opts(a, b, extra_a, extra_b, 0);
}

static void stop_pair(Side *a, Side *b)
{
    qrnic_test_stop(&b->t);
    qrnic_test_stop(&a->t);
}

static void dp_post_recv(Side *x, uint64_t wr_id, uint32_t off, uint32_t len)
{
    struct rnic_rq_wqe w = {
        .wr_id = cpu_to_le64(wr_id),
        .num_sge = 1,
        .sge[0] = qrnic_sge(x->stag, IOVA + off, len),
    };

    qrnic_post_recv(&x->t, &x->qp, &w);
}

static void dp_post_send(Side *x, struct rnic_sq_wqe *w)
{
    w->flags |= RNIC_WQE_FLAG_SIGNALED;
    qrnic_post_send(&x->t, &x->qp, w);
}

static void sends(Side *a, Side *b)
{
    static const uint32_t sizes[] = { 0, 1, 1000, 4096, 40000 };
    struct rnic_cq_entry e;

    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
        struct rnic_sq_wqe w = {
            .wr_id = cpu_to_le64(0x5000 + i),
            .opcode = RNIC_WQE_SEND,
            .num_sge = sizes[i] ? 1 : 0,
            .sge[0] = qrnic_sge(a->stag, IOVA, sizes[i]),
        };

        qrnic_fill(a->t.qts, a->buf, MAX(sizes[i], 1), i);
        dp_post_recv(b, 0x6000 + i, 8192, BUF_SIZE - 8192);
        dp_post_send(a, &w);
        dp_expect_cqe(a, RNIC_WQE_SEND, RNIC_CQE_SUCCESS, 0x5000 + i, &e);
        dp_expect_cqe(b, RNIC_WQE_RECV, RNIC_CQE_SUCCESS, 0x6000 + i, &e);
        g_assert_cmpuint(le32_to_cpu(e.byte_len), ==, sizes[i]);
        g_assert_cmpuint(le32_to_cpu(e.qpn), ==, b->qp.qpn);
        if (sizes[i]) {
            check_same(a, 0, b, 8192, sizes[i]);
        }
    }
}

static void test_send(void)
{
    Side a, b;

    connect_pair(&a, &b, NULL, NULL);
    sends(&a, &b);
    g_assert_cmpuint(qrnic_qom_int(&a.t, "a", "stat-cqe-success"), ==, 5);
    g_assert_cmpuint(qrnic_qom_int(&b.t, "b", "stat-cqe-success"), ==, 5);
    g_assert_cmpuint(qrnic_qom_int(&b.t, "b", "stat-rx-bytes"), >, 45000);
    g_assert_cmpuint(qrnic_qom_int(&a.t, "a", "stat-tx-fpdus"), >=, 5);
    stop_pair(&a, &b);
}

/*
 * Live migration of both devices with Sends, a Write and a Read in flight
 * (migrate-connections=repair, the default): every message arrives whole
 * and verified, both QPs stay in RTS with no event, the stream goes on.
 */
static void test_migrate_mid_stream(void)
{
    static const uint32_t sizes[] = { 1, 1000, 40000, 40000, 4096 };
    struct rnic_sq_wqe w = { .opcode = RNIC_WQE_WRITE, .num_sge = 1 };
    struct rnic_sq_wqe r = { .opcode = RNIC_WQE_READ, .num_sge = 1 };
    struct rnic_cq_entry e;
    struct rnic_event ev;
    uint64_t tx;
    Side a, b;

    if (getenv("RNIC_QTEST_CAPTURE")) {
        /* a capture is the process's: the new QEMU starts its file anew */
        g_test_skip("check-capture compares one process's capture");
        return;
    }
    connect_pair(&a, &b, NULL, NULL);
    qrnic_fill(a.t.qts, a.buf, BUF_SIZE, 7);
    qrnic_fill(b.t.qts, b.buf, BUF_SIZE, 9);
    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
        struct rnic_sq_wqe s = {
            .wr_id = cpu_to_le64(0x5000 + i), .opcode = RNIC_WQE_SEND,
            .num_sge = 1, .sge[0] = qrnic_sge(a.stag, IOVA + 8 * i, sizes[i]),
        };

        dp_post_recv(&b, 0x6000 + i, 4096 * i, BUF_SIZE - 4096 * i);
        dp_post_send(&a, &s);
    }
    r.wr_id = cpu_to_le64(0x8000);
    r.sge[0] = qrnic_sge(a.stag, IOVA + 50000, 4000);
    r.remote_stag = cpu_to_le32(b.stag);
    r.remote_addr = cpu_to_le64(IOVA + 60000);
    dp_post_send(&a, &r);
    w.wr_id = cpu_to_le64(0x7000);
    /* b's 32768..52768: clear of the Read's source (a Read may see a later
     * Write's data) */
    w.sge[0] = qrnic_sge(a.stag, IOVA, 20000);
    w.remote_stag = cpu_to_le32(b.stag);
    w.remote_addr = cpu_to_le64(IOVA + 32768);
    dp_post_send(&a, &w);
    qrnic_settle(&a.t);
    tx = qrnic_qom_int(&a.t, "a", "stat-tx-bytes");
    qrnic_test_migrate(&a.t, &b.t);
    /* the counters moved too */
    g_assert_cmpuint(qrnic_qom_int(&a.t, "a", "stat-tx-bytes"), >=, tx);
    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
        dp_expect_cqe(&a, RNIC_WQE_SEND, RNIC_CQE_SUCCESS, 0x5000 + i, &e);
        dp_expect_cqe(&b, RNIC_WQE_RECV, RNIC_CQE_SUCCESS, 0x6000 + i, &e);
        g_assert_cmpuint(le32_to_cpu(e.byte_len), ==, sizes[i]);
    }
    dp_expect_cqe(&a, RNIC_WQE_READ, RNIC_CQE_SUCCESS, 0x8000, &e);
    check_same(&a, 50000, &b, 60000, 4000);
    dp_expect_cqe(&a, RNIC_WQE_WRITE, RNIC_CQE_SUCCESS, 0x7000, &e);
    check_same(&a, 0, &b, 32768, 20000);
    g_assert_false(qrnic_next_event(&a.t, &ev));
    g_assert_false(qrnic_next_event(&b.t, &ev));
    g_assert_cmpuint(qrnic_query_qp_state(&a.t, a.qp.qpn), ==, RNIC_QPS_RTS);
    g_assert_cmpuint(qrnic_query_qp_state(&b.t, b.qp.qpn), ==, RNIC_QPS_RTS);
    sends(&a, &b);
    stop_pair(&a, &b);
}

/* With CRC32c required by one side, both use it and data is intact. */
static void test_send_crc(void)
{
    Side a, b;

    connect_pair(&a, &b, ",mpa-crc=required", NULL);
    sends(&a, &b);
    g_assert_cmpuint(qrnic_qom_int(&b.t, "b", "stat-crc-errors"), ==, 0);
    stop_pair(&a, &b);
}

/* fault-corrupt-crc: the receiver sees a bad CRC and terminates. */
static void test_fault_corrupt_crc(void)
{
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(1),
        .opcode = RNIC_WQE_SEND,
        .num_sge = 1,
    };
    struct rnic_cq_entry e;
    struct rnic_event ev;
    Side a, b;

    connect_pair(&a, &b, ",mpa-crc=required,fault-corrupt-crc=2", NULL);
    w.sge[0] = qrnic_sge(a.stag, IOVA, 100);
    dp_post_recv(&b, 11, 0, 1000);
    dp_post_recv(&b, 12, 0, 1000);
    dp_post_send(&a, &w);          /* FPDU 1: intact */
    dp_expect_cqe(&b, RNIC_WQE_RECV, RNIC_CQE_SUCCESS, 11, &e);
    w.wr_id = cpu_to_le64(2);
    dp_post_send(&a, &w);          /* FPDU 2: CRC inverted */
    qrnic_expect_event(&b.t, RNIC_EV_TERM_SENT, &ev);
    g_assert_cmphex(le32_to_cpu(ev.arg0), ==, 0x200);  /* LLP, MPA */
    g_assert_cmphex(le32_to_cpu(ev.arg1), ==, 0x02);   /* CRC error */
    g_assert_cmpuint(qrnic_qom_int(&b.t, "b", "stat-crc-errors"), ==, 1);
    dp_expect_cqe(&b, RNIC_WQE_RECV, RNIC_CQE_WR_FLUSH_ERR, 12, &e);
    stop_pair(&a, &b);
}

/* fault-drop-after: the connection is reset; both sides are told. */
static void test_fault_drop(void)
{
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(1),
        .opcode = RNIC_WQE_WRITE,
        .num_sge = 1,
    };
    struct rnic_event ev;
    Side a, b;

    connect_pair(&a, &b, ",fault-drop-after=3000", NULL);
    w.sge[0] = qrnic_sge(a.stag, IOVA, 8000);
    w.remote_stag = cpu_to_le32(b.stag);
    w.remote_addr = cpu_to_le64(IOVA);
    dp_post_send(&a, &w);
    qrnic_expect_event(&a.t, RNIC_EV_CONN_CLOSED, &ev);
    g_assert_cmpuint(le32_to_cpu(ev.arg0), ==, 1);
    qrnic_expect_event(&b.t, RNIC_EV_CONN_CLOSED, &ev);
    g_assert_cmpuint(qrnic_query_qp_state(&a.t, a.qp.qpn), ==, RNIC_QPS_ERROR);
    g_assert_cmpuint(qrnic_query_qp_state(&b.t, b.qp.qpn), ==, RNIC_QPS_ERROR);
    stop_pair(&a, &b);
}

static void test_write_read(void)
{
    struct rnic_cq_entry e;
    struct rnic_sq_wqe w;
    Side a, b;

    connect_pair(&a, &b, NULL, NULL);
    /* RDMA Write of 40000 bytes into b's buffer at offset 4096. */
    qrnic_fill(a.t.qts, a.buf, 40000, 3);
    w = (struct rnic_sq_wqe) {
        .wr_id = cpu_to_le64(0x7001),
        .opcode = RNIC_WQE_WRITE,
        .num_sge = 1,
        .sge[0] = qrnic_sge(a.stag, IOVA, 40000),
        .remote_stag = cpu_to_le32(b.stag),
        .remote_addr = cpu_to_le64(IOVA + 4096),
    };
    dp_post_send(&a, &w);
    dp_expect_cqe(&a, RNIC_WQE_WRITE, RNIC_CQE_SUCCESS, 0x7001, &e);
    /*
     * A Write completes at the sender only; wait for the bytes to land
     * by reading them back with an RDMA Read into a's second half.
     */
    w = (struct rnic_sq_wqe) {
        .wr_id = cpu_to_le64(0x7002),
        .opcode = RNIC_WQE_READ,
        .num_sge = 1,
        .sge[0] = qrnic_sge(a.stag, IOVA + 45000, 20000),
        .remote_stag = cpu_to_le32(b.stag),
        .remote_addr = cpu_to_le64(IOVA + 4096 + 10000),
    };
    dp_post_send(&a, &w);
    dp_expect_cqe(&a, RNIC_WQE_READ, RNIC_CQE_SUCCESS, 0x7002, &e);
    g_assert_cmpuint(le32_to_cpu(e.byte_len), ==, 20000);
    check_same(&a, 0, &b, 4096, 40000);
    check_same(&a, 10000, &a, 45000, 20000);
    stop_pair(&a, &b);
}

static void test_atomics_and_immediate(void)
{
    struct rnic_cq_entry e;
    struct rnic_sq_wqe w;
    uint64_t v;
    Side a, b;

    connect_pair(&a, &b, NULL, NULL);
    qtest_writeq(b.t.qts, b.buf + 256, 1000);
    w = (struct rnic_sq_wqe) {
        .wr_id = cpu_to_le64(0x8001),
        .opcode = RNIC_WQE_ATOMIC_FADD,
        .num_sge = 1,
        .sge[0] = qrnic_sge(a.stag, IOVA + 64, 8),
        .remote_stag = cpu_to_le32(b.stag),
        .remote_addr = cpu_to_le64(IOVA + 256),
        .atomic_arg0 = cpu_to_le64(42),
    };
    dp_post_send(&a, &w);
    dp_expect_cqe(&a, RNIC_WQE_ATOMIC_FADD, RNIC_CQE_SUCCESS, 0x8001, &e);
    g_assert_cmpuint(qtest_readq(a.t.qts, a.buf + 64), ==, 1000);
    /* Compare-and-swap: matches 1042, so 7 is stored. */
    w.wr_id = cpu_to_le64(0x8002);
    w.opcode = RNIC_WQE_ATOMIC_CSWAP;
    w.sge[0] = qrnic_sge(a.stag, IOVA + 72, 8);
    w.atomic_arg0 = cpu_to_le64(1042);
    w.atomic_arg1 = cpu_to_le64(7);
    dp_post_send(&a, &w);
    dp_expect_cqe(&a, RNIC_WQE_ATOMIC_CSWAP, RNIC_CQE_SUCCESS, 0x8002, &e);
    g_assert_cmpuint(qtest_readq(a.t.qts, a.buf + 72), ==, 1042);
    v = qtest_readq(b.t.qts, b.buf + 256);
    g_assert_cmpuint(v, ==, 7);

    /* Immediate data consumes a receive and carries 32 bits. */
    dp_post_recv(&b, 0x9001, 0, 64);
    w = (struct rnic_sq_wqe) {
        .wr_id = cpu_to_le64(0x8003),
        .opcode = RNIC_WQE_IMM_DATA,
        .flags = RNIC_WQE_FLAG_SOLICITED,
        .imm_or_stag = cpu_to_le32(0xfeedf00d),
    };
    dp_post_send(&a, &w);
    dp_expect_cqe(&a, RNIC_WQE_IMM_DATA, RNIC_CQE_SUCCESS, 0x8003, &e);
    dp_expect_cqe(&b, RNIC_WQE_RECV, RNIC_CQE_SUCCESS, 0x9001, &e);
    g_assert_cmphex(e.flags & RNIC_CQE_FLAG_WITH_IMM, ==,
                    RNIC_CQE_FLAG_WITH_IMM);
    g_assert_cmphex(e.flags & RNIC_CQE_FLAG_SOLICITED, ==,
                    RNIC_CQE_FLAG_SOLICITED);
    g_assert_cmphex(le32_to_cpu(e.imm), ==, 0xfeedf00d);
    stop_pair(&a, &b);
}

/*
 * Send with Invalidate names b's STag: b's completion says which, and a
 * later RDMA Write to it is refused with a Terminate.
 */
static void test_send_with_invalidate(void)
{
    struct rnic_cq_entry e;
    struct rnic_event ev;
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(0xa001),
        .opcode = RNIC_WQE_SEND_INV,
        .num_sge = 1,
    };
    uint64_t target;
    uint32_t tstag;
    Side a, b;

    connect_pair(&a, &b, NULL, NULL);
    /* The STag b advertised: a region of its own, not the receive buffer. */
    target = guest_alloc(b.t.alloc, 4096);
    g_assert_cmphex(qrnic_reg_mr(&b.t, b.pdn, target, 4096,
                                 RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_WRITE,
                                 0x02, &tstag), ==, RNIC_CMD_OK);
    w.sge[0] = qrnic_sge(a.stag, IOVA, 100);
    w.imm_or_stag = cpu_to_le32(tstag);
    qrnic_fill(a.t.qts, a.buf, 100, 9);
    dp_post_recv(&b, 0xb001, 0, 1000);
    dp_post_send(&a, &w);
    dp_expect_cqe(&a, RNIC_WQE_SEND, RNIC_CQE_SUCCESS, 0xa001, &e);
    dp_expect_cqe(&b, RNIC_WQE_RECV, RNIC_CQE_SUCCESS, 0xb001, &e);
    g_assert_cmphex(e.flags & RNIC_CQE_FLAG_WITH_INV, ==,
                    RNIC_CQE_FLAG_WITH_INV);
    g_assert_cmphex(le32_to_cpu(e.invalidated_stag), ==, tstag);
    check_same(&a, 0, &b, 0, 100);

    qtest_memset(b.t.qts, target, 0x55, 4096);
    w = (struct rnic_sq_wqe) {
        .wr_id = cpu_to_le64(0xa002),
        .opcode = RNIC_WQE_WRITE,
        .num_sge = 1,
        .sge[0] = qrnic_sge(a.stag, IOVA, 100),
        .remote_stag = cpu_to_le32(tstag),
        .remote_addr = cpu_to_le64(IOVA),
    };
    dp_post_send(&a, &w);
    /* b refuses: Terminate sent (DDP, tagged buffer, invalid STag). */
    qrnic_expect_event(&b.t, RNIC_EV_TERM_SENT, &ev);
    g_assert_cmphex(le32_to_cpu(ev.arg0), ==, 0x101);
    g_assert_cmphex(le32_to_cpu(ev.arg1), ==, 0x00);
    qrnic_expect_event(&a.t, RNIC_EV_TERM_RECEIVED, &ev);
    g_assert_cmphex(le32_to_cpu(ev.arg0), ==, 0x101);
    /* Nothing was placed. */
    {
        uint8_t got[100];

        qtest_memread(b.t.qts, target, got, sizeof(got));
        for (int i = 0; i < 100; i++) {
            g_assert_cmpuint(got[i], ==, 0x55);
        }
    }
    /*
     * iWARP Writes are not acknowledged: a's Write completed when sent; the
     * Terminate then ends a's QP and later work is flushed.
     */
    dp_expect_cqe(&a, RNIC_WQE_WRITE, RNIC_CQE_SUCCESS, 0xa002, &e);
    g_assert_cmpuint(qrnic_query_qp_state(&a.t, a.qp.qpn), >=,
                     RNIC_QPS_TERMINATE);
    w.wr_id = cpu_to_le64(0xa003);
    dp_post_send(&a, &w);
    dp_expect_cqe(&a, RNIC_WQE_WRITE, RNIC_CQE_WR_FLUSH_ERR, 0xa003, &e);
    stop_pair(&a, &b);
}

/* @n signaled 40000-byte Writes from a into b's buffer, left in flight. */
static void post_writes(Side *a, Side *b, int n)
{
    for (int i = 0; i < n; i++) {
        struct rnic_sq_wqe w = {
            .wr_id = cpu_to_le64(i),
            .opcode = RNIC_WQE_WRITE,
            .num_sge = 1,
            .sge[0] = qrnic_sge(a->stag, IOVA, 40000),
            .remote_stag = cpu_to_le32(b->stag),
            .remote_addr = cpu_to_le64(IOVA),
        };

        dp_post_send(a, &w);
    }
}

/*
 * A receive posted while the receiver still places Writes, then a Send
 * behind them: the receive was posted before the Send arrived, so the
 * Send takes it, though the device may not have fetched it yet when the
 * Send's bytes come (its IOThread placing the Writes, the doorbell in its
 * mailbox: rnic_wq_recv_now()).  That order depends on the threads'
 * timing, which a qtest does not control: the rounds give it chances,
 * and test_send_takes_late_recv (unit tests) checks it deterministically.
 */
static void test_send_behind_writes(void)
{
    const uint32_t access = RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_WRITE;
    const uint32_t big = 1024 * 1024;
    struct rnic_sq_wqe w[14];
    struct rnic_cq_entry e;
    uint32_t src, dst;
    Side a, b;

    connect_pair(&a, &b, NULL, NULL);
    g_assert_cmphex(qrnic_reg_mr(&a.t, a.pdn, guest_alloc(a.t.alloc, big),
                                 big, access, 0x02, &dst), ==, RNIC_CMD_OK);
    g_assert_cmphex(qrnic_reg_mr(&b.t, b.pdn, guest_alloc(b.t.alloc, big),
                                 big, access, 0x02, &src), ==, RNIC_CMD_OK);
    for (int i = 0; i < 13; i++) {
        w[i] = (struct rnic_sq_wqe) {
            .wr_id = cpu_to_le64(i),
            .opcode = RNIC_WQE_WRITE,
            .num_sge = 1,
            .sge[0] = qrnic_sge(src, IOVA, big),
            .remote_stag = cpu_to_le32(dst),
            .remote_addr = cpu_to_le64(IOVA),
        };
    }
    w[13] = (struct rnic_sq_wqe) {
        .wr_id = cpu_to_le64(13),
        .opcode = RNIC_WQE_SEND,
        .flags = RNIC_WQE_FLAG_SIGNALED,
        .num_sge = 1,
        .sge[0] = qrnic_sge(b.stag, IOVA, 64),
    };
    for (int round = 0; round < 10; round++) {
        qrnic_post_sends(&b.t, &b.qp, w, 13);
        dp_post_recv(&a, round, 0, 64);
        qrnic_post_send(&b.t, &b.qp, &w[13]);
        dp_expect_cqe(&b, RNIC_WQE_SEND, RNIC_CQE_SUCCESS, 13, &e);
        dp_expect_cqe(&a, RNIC_WQE_RECV, RNIC_CQE_SUCCESS, round, &e);
    }
    g_assert_cmpuint(qrnic_query_qp_state(&a.t, a.qp.qpn), ==, RNIC_QPS_RTS);
    stop_pair(&a, &b);
}

/*
 * A system reset while Writes and Sends are in flight: both devices come
 * back in their reset state, and work again from scratch.
 */
static void test_reset_in_flight(void)
{
    Side a, b;

    connect_pair(&a, &b, NULL, NULL);
    post_writes(&a, &b, 8);
    qtest_system_reset(a.t.qts);
    qrnic_test_after_reset(&a.t);
    qrnic_test_after_reset(&b.t);
    g_assert_cmphex(qrnic_rd(&a.t, RNIC_REG_STATUS), ==, 0);
    g_assert_cmphex(qrnic_rd(&b.t, RNIC_REG_STATUS), ==, 0);
    g_assert_cmphex(qrnic_rd(&a.t, RNIC_REG_CMDQ_BASE_LO), ==, 0);
    /* Everything was destroyed: set up again, connect again, send. */
    {
        Side a2 = { .t = a.t }, b2 = { .t = b.t };
        const uint32_t access = RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_WRITE;

        dp_setup(&a2, access);
        dp_setup(&b2, access);
        qrnic_connect_qps(&a2.t, a2.qp.qpn, &b2.t, b2.qp.qpn, 0);
        sends(&a2, &b2);
        stop_pair(&a2, &b2);
    }
}

/*
 * CONTROL.RESET written while a's Writes are moving: the register write
 * defers the reset to the end of its own callback; with an IOThread it
 * then runs there, between two of the IOThread's runs.  b sees its
 * connection reset, QEMU lives on.
 */
static void test_control_reset_in_flight(void)
{
    struct rnic_event ev;
    Side a, b;

    connect_pair(&a, &b, NULL, NULL);
    post_writes(&a, &b, 8);
    qrnic_wr(&a.t, RNIC_REG_CONTROL, RNIC_CONTROL_RESET);
    g_assert_cmphex(qrnic_rd(&a.t, RNIC_REG_STATUS), ==, 0);
    g_assert_cmphex(qrnic_rd(&a.t, RNIC_REG_CMDQ_BASE_LO), ==, 0);
    do {
        qrnic_wait_event(&b.t, &ev);
    } while (ev.type != RNIC_EV_CONN_CLOSED);
    qtest_qmp_assert_success(a.t.qts, "{'execute': 'query-status'}");
    stop_pair(&a, &b);
}

/* qom-get DEV state, as QMP returns it (a JSON object). */
static QDict *get_state(Side *x, const char *id)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/%s", id);
    QDict *r = qtest_qmp(x->t.qts, "{'execute': 'qom-get', 'arguments': {"
                         "'path': %s, 'property': 'state'}}", path);
    QDict *st = qdict_get_qdict(r, "return");

    g_assert_nonnull(st);
    qobject_ref(st);
    qobject_unref(r);
    return st;
}

static QDict *only(QDict *st, const char *key)
{
    QList *l = qdict_get_qlist(st, key);

    g_assert_nonnull(l);
    g_assert_cmpuint(qlist_size(l), ==, 1);
    return qobject_to(QDict, qlist_peek(l));
}

/*
 * The state dump: after a Write, each side's QP, CQ, STag and connection
 * are there with the values the commands set; HMP prints the same.
 */
static void test_state(void)
{
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(1),
        .opcode = RNIC_WQE_WRITE,
        .num_sge = 1,
    };
    g_autofree char *stag = NULL, *hmp = NULL;
    struct rnic_cq_entry e;
    QDict *st, *qp, *cq, *mr, *conn;
    QList *access;
    Side a, b;

    connect_pair(&a, &b, NULL, NULL);
    w.sge[0] = qrnic_sge(a.stag, IOVA, 3000);
    w.remote_stag = cpu_to_le32(b.stag);
    w.remote_addr = cpu_to_le64(IOVA);
    dp_post_recv(&a, 9, 0, 100);
    dp_post_send(&a, &w);
    dp_expect_cqe(&a, RNIC_WQE_WRITE, RNIC_CQE_SUCCESS, 1, &e);
    qrnic_wr(&b.t, RNIC_REG_DB_CQ_ARM, b.cqn | RNIC_DB_ARM_NEXT);
    qrnic_settle(&b.t);

    st = get_state(&a, "a");
    g_assert_true(qdict_get_bool(st, "enabled"));
    qp = only(st, "qps");
    g_assert_cmpint(qdict_get_int(qp, "qpn"), ==, a.qp.qpn);
    g_assert_cmpstr(qdict_get_str(qp, "state"), ==, "RTS");
    g_assert_cmpint(qdict_get_int(qp, "pd"), ==, a.pdn);
    g_assert_false(qdict_get_bool(qp, "kernel"));
    g_assert_cmpint(qdict_get_int(qp, "send-cq"), ==, a.cqn);
    g_assert_cmpint(qdict_get_int(qp, "ird"), ==, 4);
    g_assert_cmpint(qdict_get_int(qp, "ord"), ==, 4);
    g_assert_cmpint(qdict_get_int(qdict_get_qdict(qp, "sq"), "prod"), ==, 1);
    g_assert_cmpint(qdict_get_int(qdict_get_qdict(qp, "sq"), "cons"), ==, 1);
    g_assert_cmpint(qdict_get_int(qdict_get_qdict(qp, "rq"), "posted"), ==,
                    1);
    g_assert_true(g_str_has_prefix(qdict_get_str(qp, "peer"), "127.0.0.1:"));
    g_assert_true(qobject_type(qdict_get(qp, "last-terminate")) ==
                  QTYPE_QNULL);
    cq = only(st, "cqs");
    g_assert_cmpint(qdict_get_int(cq, "cqn"), ==, a.cqn);
    g_assert_cmpstr(qdict_get_str(cq, "armed"), ==, "no");
    g_assert_cmpint(qdict_get_int(cq, "prod"), ==, 1);
    mr = only(st, "stags");
    stag = g_strdup_printf("0x%x", a.stag);
    g_assert_cmpstr(qdict_get_str(mr, "stag"), ==, stag);
    g_assert_cmpstr(qdict_get_str(mr, "type"), ==, "mr");
    g_assert_cmpstr(qdict_get_str(mr, "base"), ==, "0x7f0000000000");
    g_assert_cmpint(qdict_get_int(mr, "length"), ==, BUF_SIZE);
    g_assert_cmpstr(qdict_get_str(mr, "policy"), ==, "persistent");
    access = qdict_get_qlist(mr, "access");
    g_assert_cmpuint(qlist_size(access), ==, 5);   /* + local-read */
    conn = only(st, "connections");
    g_assert_cmpstr(qdict_get_str(conn, "state"), ==, "rts");
    g_assert_cmpstr(qdict_get_str(conn, "role"), ==, "responder");
    g_assert_cmpint(qdict_get_int(conn, "qpn"), ==, a.qp.qpn);
    g_assert_cmpint(qdict_get_int(conn, "bytes"), >, 3000);
    g_assert_cmpint(qdict_get_int(qdict_get_qdict(conn, "mpa"), "rev"), ==,
                    2);
    g_assert_cmpstr(qdict_get_str(conn, "id"), ==, qdict_get_str(qp, "conn"));
    g_assert_cmpuint(qlist_size(qdict_get_qlist(st, "listeners")), ==, 1);
    qobject_unref(st);

    st = get_state(&b, "b");
    g_assert_cmpstr(qdict_get_str(only(st, "cqs"), "armed"), ==, "next");
    g_assert_cmpstr(qdict_get_str(only(st, "connections"), "role"), ==,
                    "initiator");
    qobject_unref(st);

    hmp = qtest_hmp(a.t.qts, "qom-get /machine/peripheral/a state");
    g_assert_nonnull(strstr(hmp, "\"state\": \"RTS\""));
    g_assert_nonnull(strstr(hmp, stag));
    stop_pair(&a, &b);
}

/*
 * capture set at run time: the connection already open is not recorded
 * (its FPDU boundaries are unknown), one opened afterwards is.
 */
static void test_capture_runtime(void)
{
    g_autofree char *file = g_strdup_printf("%s/rnic-capture-%d.pcapng",
                                            g_get_tmp_dir(), getpid());
    struct rnic_cq_entry e;
    QDict *st, *cap;
    Side a, b, a2, b2;
    gsize len;
    g_autofree gchar *data = NULL;

    if (getenv("RNIC_QTEST_CAPTURE")) {
        g_test_skip("the capture is already driven by RNIC_QTEST_CAPTURE");
        return;
    }
    connect_pair(&a, &b, NULL, NULL);
    qobject_unref(qtest_qmp(a.t.qts, "{'execute': 'qom-set', 'arguments': {"
                            "'path': '/machine/peripheral/a', "
                            "'property': 'capture', 'value': %s}}", file));
    sends(&a, &b);
    st = get_state(&a, "a");
    cap = qdict_get_qdict(st, "capture");
    g_assert_cmpstr(qdict_get_str(cap, "file"), ==, file);
    g_assert_cmpint(qdict_get_int(cap, "packets"), ==, 0);
    qobject_unref(st);

    /* A second pair of QPs on a new connection: recorded. */
    a2 = a;
    b2 = b;
    g_assert_cmphex(qrnic_try_create_qp(&a2.t, a.pdn, a.cqn, a.cqn, QP_LOG,
                                        &a2.qp), ==, RNIC_CMD_OK);
    g_assert_cmphex(qrnic_try_create_qp(&b2.t, b.pdn, b.cqn, b.cqn, QP_LOG,
                                        &b2.qp), ==, RNIC_CMD_OK);
    qrnic_connect_qps(&a2.t, a2.qp.qpn, &b2.t, b2.qp.qpn, 0);
    dp_post_recv(&b2, 5, 0, 100);
    {
        struct rnic_sq_wqe w = {
            .wr_id = cpu_to_le64(4), .opcode = RNIC_WQE_SEND, .num_sge = 1,
        };

        w.sge[0] = qrnic_sge(a2.stag, IOVA, 100);
        dp_post_send(&a2, &w);
    }
    dp_expect_cqe(&b2, RNIC_WQE_RECV, RNIC_CQE_SUCCESS, 5, &e);
    st = get_state(&a, "a");
    cap = qdict_get_qdict(st, "capture");
    /* SYN, SYN-ACK, ACK, MPA Request, Reply and the Send */
    g_assert_cmpint(qdict_get_int(cap, "packets"), ==, 6);
    g_assert_cmpint(qdict_get_int(cap, "streams"), ==, 1);
    g_assert_cmpint(qdict_get_int(cap, "dropped"), ==, 0);
    qobject_unref(st);
    qobject_unref(qtest_qmp(a.t.qts, "{'execute': 'qom-set', 'arguments': {"
                            "'path': '/machine/peripheral/a', "
                            "'property': 'capture', 'value': ''}}"));
    g_assert_true(g_file_get_contents(file, &data, &len, NULL));
    g_assert_cmpuint(len, >, 6 * 54);
    g_assert_cmpmem(data, 4, "\x0a\x0d\x0d\x0a", 4);   /* pcapng */
    unlink(file);
    stop_pair(&a, &b);
}

static void remove_dir_files(const char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    const char *name;

    g_assert_nonnull(d);
    while ((name = g_dir_read_name(d))) {
        g_autofree char *f = g_build_filename(dir, name, NULL);

        unlink(f);
    }
    g_dir_close(d);
}

/*
 * QEMU stops while both devices capture, rotating small files, and Writes
 * are in flight: the capture is finished under the device's lock, so the
 * IOThread's writer is never freed under it (ASan once caught fclose
 * from a rotation after the exit notifier had freed the writer).
 */
static void test_capture_exit_in_flight(void)
{
    g_autofree char *dir = g_dir_make_tmp("rnic-capture-XXXXXX", NULL);
    g_autofree char *xa = NULL, *xb = NULL;
    Side a, b;

    if (getenv("RNIC_QTEST_CAPTURE")) {
        g_test_skip("the capture is already driven by RNIC_QTEST_CAPTURE");
        return;
    }
    g_assert_nonnull(dir);
    xa = g_strdup_printf(",capture=%s/a.pcapng,capture-limit=65536,"
                         "capture-files=3", dir);
    xb = g_strdup_printf(",capture=%s/b.pcapng,capture-limit=65536,"
                         "capture-files=3", dir);
    connect_pair(&a, &b, xa, xb);
    qrnic_fill(a.t.qts, a.buf, 40000, 3);
    post_writes(&a, &b, (1 << QP_LOG) - 1);
    stop_pair(&a, &b);
    remove_dir_files(dir);
    g_assert_cmpint(rmdir(dir), ==, 0);
}

/*
 * The worked examples of docs/debugging.md: a driver's mistake, and what
 * it looks like.  Each asserts the symptom.  With RNIC_EXAMPLE_DIR set
 * (tests/debug/example.sh), QEMU also logs guest errors and rnic_* traces
 * to DIR/qemu.log, both devices record their traffic to DIR/a.pcapng and
 * DIR/b.pcapng, and their state dumps go to DIR/state-a.json and -b.json.
 */
static const char *const cqe_names[] = RNIC_CQE_STATUS_NAMES;
static const char *const event_names[] = RNIC_EVENT_NAMES;

static void example_start(Side *a, Side *b)
{
    const char *dir = getenv("RNIC_EXAMPLE_DIR");
    g_autofree char *ea = NULL, *eb = NULL;

    if (dir) {
        ea = g_strdup_printf(",capture=%s/a.pcapng", dir);
        eb = g_strdup_printf(",capture=%s/b.pcapng -d guest_errors "
                             "-trace rnic_* -D %s/qemu.log", dir, dir);
    }
    connect_pair(a, b, ea, eb);
}

static void example_stop(Side *a, Side *b)
{
    const char *dir = getenv("RNIC_EXAMPLE_DIR");

    for (int i = 0; dir && i < 2; i++) {
        Side *x = i ? b : a;
        const char *id = i ? "b" : "a";
        QDict *st = get_state(x, id);
        g_autoptr(GString) json = qobject_to_json_pretty(QOBJECT(st), true);
        g_autofree char *file = g_strdup_printf("%s/state-%s.json", dir, id);

        g_assert_true(g_file_set_contents(file, json->str, json->len, NULL));
        qobject_unref(st);
    }
    stop_pair(a, b);
}

static void example_cqe(Side *x, const char *who, uint8_t status)
{
    struct rnic_cq_entry e;

    dp_cqe(x, &e);
    g_test_message("example: %s: CQE wr_id 0x%" PRIx64 " status %s", who,
                   le64_to_cpu(e.wr_id), cqe_names[e.status]);
    g_assert_cmpuint(e.status, ==, status);
}

static void example_event(Side *x, const char *who, uint8_t type)
{
    struct rnic_event ev;

    qrnic_wait_event(&x->t, &ev);
    g_test_message("example: %s: event %s id %u arg0 0x%x arg1 0x%x", who,
                   event_names[ev.type], le32_to_cpu(ev.id),
                   le32_to_cpu(ev.arg0), le32_to_cpu(ev.arg1));
    g_assert_cmpuint(ev.type, ==, type);
}

/*
 * a reads b's buffer, but the STag b advertised went through htonl() on
 * b's side and was not swapped back on a's: the Read names an STag b does
 * not have, b answers with a Terminate, and a's Read fails.
 */
static void test_example_read_stag(void)
{
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(0x1ead),
        .opcode = RNIC_WQE_READ,
        .num_sge = 1,
    };
    Side a, b;

    example_start(&a, &b);
    w.sge[0] = qrnic_sge(a.stag, IOVA, 512);
    w.remote_stag = cpu_to_le32(bswap32(b.stag));       /* the bug */
    w.remote_addr = cpu_to_le64(IOVA);
    dp_post_send(&a, &w);
    example_cqe(&a, "a", RNIC_CQE_REM_ACCESS_ERR);
    example_event(&a, "a", RNIC_EV_TERM_RECEIVED);
    example_event(&b, "b", RNIC_EV_TERM_SENT);
    example_stop(&a, &b);
}

/*
 * b's driver waits for the interrupt of its receive CQ, which it never
 * armed: the completion is in the ring, no MSI-X comes.  Arming it (the
 * fix) makes the next completion signal.
 */
static void test_example_cq_not_armed(void)
{
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(0x5e4d),
        .opcode = RNIC_WQE_SEND,
        .num_sge = 1,
    };
    bool fired;
    Side a, b;

    example_start(&a, &b);
    w.sge[0] = qrnic_sge(a.stag, IOVA, 64);
    dp_post_recv(&b, 0x4ecf, 0, 4096);
    dp_post_send(&a, &w);
    example_cqe(&b, "b", RNIC_CQE_SUCCESS);
    fired = qrnic_msix_fired(&b.t, 1);
    g_test_message("example: b: MSI-X vector 1 fired: %s",
                   fired ? "yes" : "no");
    g_assert_false(fired);
    example_stop(&a, &b);
}

static void test_example_cq_armed(void)
{
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(0x5e4d),
        .opcode = RNIC_WQE_SEND,
        .num_sge = 1,
    };
    gint64 end;
    Side a, b;

    connect_pair(&a, &b, NULL, NULL);
    w.sge[0] = qrnic_sge(a.stag, IOVA, 64);
    dp_post_recv(&b, 0x4ecf, 0, 4096);
    qrnic_wr(&b.t, RNIC_REG_DB_CQ_ARM, b.cqn | RNIC_DB_ARM_NEXT); /* fix */
    dp_post_send(&a, &w);
    end = g_get_monotonic_time() + QRNIC_TIMEOUT_US;
    while (!qrnic_msix_fired(&b.t, 1)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(500);
        qrnic_settle(&b.t);
    }
    stop_pair(&a, &b);
}

/*
 * A driver arms its CQ, looks at the ring once more and sleeps if it is
 * empty; on an IOThread the arm is mailed (rnic-db.c), not applied at
 * once.  Each round b reads 1 MiB from a and arms while the Read Response
 * streams in, a few microseconds later each round, so that some arms are
 * mailed while the device handles the Response's last octets and writes
 * the completion.  The round ends when the completion is in the ring
 * after the arm, or else when the interrupt comes; a lost wake-up is a
 * round with neither, ended by QRNIC_TIMEOUT_US.
 */
#define ARM_ROUNDS      400
#define ARM_SPREAD_US   400     /* the arm's delay: round % ARM_SPREAD_US */
#define ARM_READ_LEN    (1024 * 1024)

static void cq_arm_round(Side *b, uint32_t sink, uint32_t src, uint32_t i)
{
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(i),
        .opcode = RNIC_WQE_READ,
        .num_sge = 1,
        .sge[0] = qrnic_sge(sink, IOVA, ARM_READ_LEN),
        .remote_stag = cpu_to_le32(src),
        .remote_addr = cpu_to_le64(IOVA),
    };
    gint64 end = g_get_monotonic_time() + QRNIC_TIMEOUT_US;
    struct rnic_cq_entry e;

    qrnic_msix_fired(&b->t, 1);     /* one a round before may have sent */
    dp_post_send(b, &w);
    g_usleep(i % ARM_SPREAD_US);
    qrnic_wr(&b->t, RNIC_REG_DB_CQ_ARM, b->cqn | RNIC_DB_ARM_NEXT);
    if (!qrnic_read_cqe(&b->t, b->cq_ring, CQ_LOG, b->cq_cons, &e)) {
        while (!qrnic_msix_fired(&b->t, 1)) {
            g_assert_cmpint(g_get_monotonic_time(), <, end);
            g_usleep(50);
        }
    }
    dp_expect_cqe(b, RNIC_WQE_READ, RNIC_CQE_SUCCESS, i, &e);
}

/* An MR of ARM_READ_LEN on @x, for the Reads of cq_arm_round(). */
static uint32_t cq_arm_mr(Side *x)
{
    uint64_t buf = guest_alloc(x->t.alloc, ARM_READ_LEN);
    uint32_t stag;

    g_assert_cmphex(qrnic_reg_mr(&x->t, x->pdn, buf, ARM_READ_LEN,
                                 RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_READ,
                                 0x02, &stag), ==, RNIC_CMD_OK);
    return stag;
}

static void test_cq_arm_race(void)
{
    uint32_t src, sink;
    Side a, b;

    connect_pair(&a, &b, NULL, NULL);
    src = cq_arm_mr(&a);
    sink = cq_arm_mr(&b);
    for (uint32_t i = 0; i < ARM_ROUNDS; i++) {
        cq_arm_round(&b, sink, src, i);
    }
    stop_pair(&a, &b);
}

/*
 * a sends before b's driver posted a receive buffer: b has nowhere to put
 * the message, terminates the connection, and a learns it only from the
 * Terminate (its Send had already completed: iWARP has no acknowledgement).
 */
static void test_example_no_receive(void)
{
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(0x5e4d),
        .opcode = RNIC_WQE_SEND,
        .num_sge = 1,
    };
    Side a, b;

    example_start(&a, &b);
    w.sge[0] = qrnic_sge(a.stag, IOVA, 64);
    dp_post_send(&a, &w);      /* b posted no receive: the bug */
    example_cqe(&a, "a", RNIC_CQE_SUCCESS);
    example_event(&a, "a", RNIC_EV_TERM_RECEIVED);
    example_event(&b, "b", RNIC_EV_TERM_SENT);
    example_stop(&a, &b);
}

/* ---- fast registration, physical STag, Read with Invalidate ---- */

#define FR_OFF      32768       /* pages of the buffer FAST_REG maps */
#define FR_IOVA     0x5000000ull
#define FR_ACCESS   (RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_READ | \
                     RNIC_ACC_REMOTE_WRITE)

/*
 * FAST_REG of @npages 4 KiB pages of x's buffer from FR_OFF, listed last
 * page first (so TO FR_IOVA is the last page), as STag @stag.
 */
static struct rnic_sq_wqe fast_reg_wqe(Side *x, uint64_t wr_id, uint32_t stag,
                                       uint32_t npages)
{
    uint64_t pbl = guest_alloc(x->t.alloc, 8 * npages);
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(wr_id),
        .opcode = RNIC_WQE_FAST_REG,
    };

    for (uint32_t i = 0; i < npages; i++) {
        qtest_writeq(x->t.qts, pbl + 8 * i,
                     x->buf + FR_OFF + 4096 * (npages - 1 - i));
    }
    w.fr = (struct rnic_wqe_fast_reg) {
        .pbl_addr = cpu_to_le64(pbl),
        .iova = cpu_to_le64(FR_IOVA),
        .length = cpu_to_le64(4096 * npages),
        .npages = cpu_to_le32(npages),
        .access = cpu_to_le32(FR_ACCESS),
        .stag = cpu_to_le32(stag),
        .page_shift = 12,
    };
    return w;
}

/* An ALLOC_MR region of @max_pages on x's PD, as STag with key 0x11. */
static uint32_t alloc_fr(Side *x, uint32_t max_pages)
{
    uint32_t stag;

    g_assert_cmphex(qrnic_alloc_mr(&x->t, x->pdn, max_pages, 0x10, 0, &stag),
                    ==, RNIC_CMD_OK);
    g_assert_cmphex(stag & 0xff, ==, 0x10);
    return (stag & ~0xffu) | 0x11;      /* FAST_REG gives it a new key */
}

static struct rnic_sq_wqe write_wqe(uint64_t wr_id, struct rnic_wqe_sge s,
                                    uint32_t rstag, uint64_t raddr)
{
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(wr_id),
        .opcode = RNIC_WQE_WRITE,
        .flags = RNIC_WQE_FLAG_SIGNALED,
        .num_sge = 1,
        .sge[0] = s,
        .remote_stag = cpu_to_le32(rstag),
        .remote_addr = cpu_to_le64(raddr),
    };

    return w;
}

/*
 * FAST_REG, Write through it, LOCAL_INV, Write through it again, all
 * posted at once on one SQ: the first Write sees the registration (the
 * pages in the listed order), the second fails, as rdma_rw relies on.
 */
static void test_fast_reg_order(void)
{
    struct rnic_sq_wqe w[4];
    struct rnic_cq_entry e;
    struct rnic_event ev;
    uint32_t fr;
    Side a, b;

    connect_pair_opts(&a, &b, NULL, NULL, RNIC_QP_FLAG_KERNEL);
    fr = alloc_fr(&a, 4);
    qrnic_fill(a.t.qts, a.buf + FR_OFF, 16384, 9);
    w[0] = fast_reg_wqe(&a, 1, fr, 4);
    w[1] = write_wqe(2, qrnic_sge(fr, FR_IOVA, 16384), b.stag, IOVA);
    w[2] = (struct rnic_sq_wqe) {
        .wr_id = cpu_to_le64(3), .opcode = RNIC_WQE_LOCAL_INV,
        .imm_or_stag = cpu_to_le32(fr),
    };
    w[3] = write_wqe(4, qrnic_sge(fr, FR_IOVA, 16384), b.stag, IOVA);
    for (int i = 0; i < 4; i++) {
        dp_post_send(&a, &w[i]);
    }
    dp_expect_cqe(&a, RNIC_WQE_FAST_REG, RNIC_CQE_SUCCESS, 1, &e);
    dp_expect_cqe(&a, RNIC_WQE_WRITE, RNIC_CQE_SUCCESS, 2, &e);
    dp_expect_cqe(&a, RNIC_WQE_LOCAL_INV, RNIC_CQE_SUCCESS, 3, &e);
    dp_expect_cqe(&a, RNIC_WQE_WRITE, RNIC_CQE_LOC_PROT_ERR, 4, &e);
    /* b got the first Write before a's Terminate: its page k is a's 3 - k */
    qrnic_expect_event(&b.t, RNIC_EV_TERM_RECEIVED, &ev);
    for (int k = 0; k < 4; k++) {
        check_same(&a, FR_OFF + 4096 * (3 - k), &b, 4096 * k, 4096);
    }
    stop_pair(&a, &b);
}

/* A user QP: FAST_REG fails, and the physical STag does not exist. */
static void test_user_qp_refused(void)
{
    struct rnic_sq_wqe w;
    struct rnic_cq_entry e;
    uint32_t phys;
    Side a, b;

    connect_pair(&a, &b, NULL, NULL);
    w = fast_reg_wqe(&a, 1, alloc_fr(&a, 4), 4);
    dp_post_send(&a, &w);
    dp_expect_cqe(&a, RNIC_WQE_FAST_REG, RNIC_CQE_LOC_QP_OP_ERR, 1, &e);
    stop_pair(&a, &b);

    connect_pair(&a, &b, NULL, NULL);
    g_assert_cmphex(qrnic_alloc_mr(&a.t, a.pdn, 0, 0x20, RNIC_ALLOC_MR_PHYS,
                                   &phys), ==, RNIC_CMD_OK);
    w = write_wqe(2, qrnic_sge(phys, a.buf, 100), b.stag, IOVA);
    dp_post_send(&a, &w);
    dp_expect_cqe(&a, RNIC_WQE_WRITE, RNIC_CQE_LOC_PROT_ERR, 2, &e);
    stop_pair(&a, &b);
}

/*
 * A kernel QP's physical STag: the SGE's address is the bus address, for
 * Writes and Sends out and for receive buffers in.
 */
static void test_phys_stag(void)
{
    struct rnic_sq_wqe w;
    struct rnic_rq_wqe r = { .wr_id = cpu_to_le64(0x21), .num_sge = 1 };
    struct rnic_cmd_stag inv;
    g_autofree char *name = NULL;
    const QListEntry *entry;
    QList *access = NULL;
    bool kernel_only = false;
    QDict *st;
    struct rnic_cq_entry e;
    uint32_t pa, pb;
    Side a, b;

    connect_pair_opts(&a, &b, NULL, NULL, RNIC_QP_FLAG_KERNEL);
    g_assert_cmphex(qrnic_alloc_mr(&a.t, a.pdn, 0, 0x20, RNIC_ALLOC_MR_PHYS,
                                   &pa), ==, RNIC_CMD_OK);
    g_assert_cmphex(qrnic_alloc_mr(&b.t, b.pdn, 0, 0x30, RNIC_ALLOC_MR_PHYS,
                                   &pb), ==, RNIC_CMD_OK);
    qrnic_fill(a.t.qts, a.buf, 5000, 4);
    w = write_wqe(1, qrnic_sge(pa, a.buf, 5000), b.stag, IOVA + 8192);
    dp_post_send(&a, &w);
    dp_expect_cqe(&a, RNIC_WQE_WRITE, RNIC_CQE_SUCCESS, 1, &e);
    r.sge[0] = qrnic_sge(pb, b.buf + 20000, 1000);
    qrnic_post_recv(&b.t, &b.qp, &r);
    w = (struct rnic_sq_wqe) {
        .wr_id = cpu_to_le64(2), .opcode = RNIC_WQE_SEND, .num_sge = 1,
        .sge[0] = qrnic_sge(pa, a.buf + 100, 300),
    };
    dp_post_send(&a, &w);
    dp_expect_cqe(&a, RNIC_WQE_SEND, RNIC_CQE_SUCCESS, 2, &e);
    dp_expect_cqe(&b, RNIC_WQE_RECV, RNIC_CQE_SUCCESS, 0x21, &e);
    g_assert_cmpuint(le32_to_cpu(e.byte_len), ==, 300);
    check_same(&a, 0, &b, 8192, 5000);
    check_same(&a, 100, &b, 20000, 300);
    /* The state dump tells the kernel QP and the physical STag apart. */
    st = get_state(&a, "a");
    g_assert_true(qdict_get_bool(only(st, "qps"), "kernel"));
    name = g_strdup_printf("0x%x", pa);
    QLIST_FOREACH_ENTRY(qdict_get_qlist(st, "stags"), entry) {
        QDict *d = qobject_to(QDict, qlist_entry_obj(entry));

        if (!strcmp(qdict_get_str(d, "stag"), name)) {
            access = qdict_get_qlist(d, "access");
        }
    }
    g_assert_nonnull(access);
    g_assert_cmpuint(qlist_size(access), ==, 3);
    QLIST_FOREACH_ENTRY(access, entry) {
        kernel_only |= !strcmp(qstring_get_str(qobject_to(QString,
                               qlist_entry_obj(entry))), "kernel-qps-only");
    }
    g_assert_true(kernel_only);
    qobject_unref(st);
    /* Not an STag one can invalidate. */
    inv.stag = cpu_to_le32(pa);
    g_assert_cmphex(qrnic_cmd_status(&a.t, RNIC_CMD_INVALIDATE, &inv,
                                     sizeof(inv)), ==, RNIC_CMD_ERR_BUSY);
    stop_pair(&a, &b);
}

/*
 * Read with local invalidate into a fast-registered sink: the completion
 * says the sink was invalidated, and it is (a Write from it fails).
 */
static void test_read_inv(void)
{
    struct rnic_sq_wqe w;
    struct rnic_cq_entry e;
    uint32_t fr;
    Side a, b;

    connect_pair_opts(&a, &b, NULL, NULL, RNIC_QP_FLAG_KERNEL);
    fr = alloc_fr(&a, 2);
    qrnic_fill(b.t.qts, b.buf + 4096, 8192, 5);
    w = fast_reg_wqe(&a, 1, fr, 2);
    w.flags = 0;
    qrnic_post_send(&a.t, &a.qp, &w);
    w = (struct rnic_sq_wqe) {
        .wr_id = cpu_to_le64(2), .opcode = RNIC_WQE_READ_INV, .num_sge = 1,
        .sge[0] = qrnic_sge(fr, FR_IOVA, 8192),
        .remote_stag = cpu_to_le32(b.stag),
        .remote_addr = cpu_to_le64(IOVA + 4096),
        .imm_or_stag = cpu_to_le32(fr),
    };
    dp_post_send(&a, &w);
    dp_expect_cqe(&a, RNIC_WQE_READ, RNIC_CQE_SUCCESS, 2, &e);
    g_assert_cmpuint(le32_to_cpu(e.byte_len), ==, 8192);
    g_assert_cmphex(e.flags & RNIC_CQE_FLAG_WITH_INV, ==,
                    RNIC_CQE_FLAG_WITH_INV);
    g_assert_cmphex(le32_to_cpu(e.invalidated_stag), ==, fr);
    check_same(&a, FR_OFF + 4096, &b, 4096, 4096);
    check_same(&a, FR_OFF, &b, 8192, 4096);
    w = write_wqe(3, qrnic_sge(fr, FR_IOVA, 10), b.stag, IOVA);
    dp_post_send(&a, &w);
    dp_expect_cqe(&a, RNIC_WQE_WRITE, RNIC_CQE_LOC_PROT_ERR, 3, &e);
    stop_pair(&a, &b);
}

/*
 * ib_drain_qp: unsignaled Writes, the QP to ERROR, then a marker on each
 * queue.  The markers complete (flushed) after every earlier WR of their
 * queue has its completion or none (done and unsignaled), in order.
 */
static void test_drain(void)
{
    struct rnic_sq_wqe w;
    struct rnic_cq_entry e;
    uint64_t last_sq = 0;
    bool sq_done = false, rq_done = false;
    Side a, b;

    connect_pair(&a, &b, NULL, NULL);
    for (int i = 0; i < 12; i++) {
        w = write_wqe(0x100 + i, qrnic_sge(a.stag, IOVA, 4000), b.stag,
                      IOVA);
        w.flags = i % 4 == 3 ? RNIC_WQE_FLAG_SIGNALED : 0;
        qrnic_post_send(&a.t, &a.qp, &w);
    }
    qrnic_modify_qp_state(&a.t, a.qp.qpn, RNIC_QPS_ERROR, RNIC_CMD_OK);
    w = (struct rnic_sq_wqe) { .wr_id = cpu_to_le64(0xd500), .opcode =
                               RNIC_WQE_SEND };
    dp_post_send(&a, &w);
    dp_post_recv(&a, 0xd7, 0, 64);
    while (!sq_done || !rq_done) {
        dp_cqe(&a, &e);
        if (e.opcode == RNIC_WQE_RECV) {
            g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0xd7);
            g_assert_cmpuint(e.status, ==, RNIC_CQE_WR_FLUSH_ERR);
            rq_done = true;
            continue;
        }
        g_assert_false(sq_done);
        g_assert_cmphex(le64_to_cpu(e.wr_id), >, last_sq);
        last_sq = le64_to_cpu(e.wr_id);
        sq_done = last_sq == 0xd500;
        g_assert_true(!sq_done || e.status == RNIC_CQE_WR_FLUSH_ERR);
    }
    qrnic_settle(&a.t);
    g_assert_false(qrnic_read_cqe(&a.t, a.cq_ring, CQ_LOG, a.cq_cons, &e));
    stop_pair(&a, &b);
}

/*
 * What a fuzzer would try: FAST_REG page lists too long for the region or
 * absurdly long, bad page sizes, an unreadable list, a length the pages do
 * not cover, a region that is no ALLOC_MR one.  Each ends in an error
 * completion; the device answers commands afterwards.
 */
static void test_fast_reg_bounds(void)
{
    static const struct {
        uint32_t npages;
        uint8_t shift;
        uint64_t pbl;           /* 0: a valid one */
        uint64_t length;        /* 0: npages pages */
        bool other_mr;
        uint8_t status;
    } cases[] = {
        { 3, 12, 0, 0, false, RNIC_CQE_LOC_QP_OP_ERR },
        { 0xffffffff, 12, 0, 0, false, RNIC_CQE_LOC_QP_OP_ERR },
        { 2, 11, 0, 0, false, RNIC_CQE_LOC_QP_OP_ERR },
        { 2, 22, 0, 0, false, RNIC_CQE_LOC_QP_OP_ERR },
        { 2, 12, 1ull << 62, 0, false, RNIC_CQE_LOC_ACCESS_ERR },
        { 2, 12, 0, 3 * 4096, false, RNIC_CQE_LOC_QP_OP_ERR },
        { 2, 12, 0, 0, true, RNIC_CQE_LOC_PROT_ERR },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        struct rnic_sq_wqe w;
        struct rnic_cq_entry e;
        Side a, b;

        connect_pair_opts(&a, &b, NULL, NULL, RNIC_QP_FLAG_KERNEL);
        w = fast_reg_wqe(&a, 1, alloc_fr(&a, 2), 2);
        w.fr.npages = cpu_to_le32(cases[i].npages);
        w.fr.page_shift = cases[i].shift;
        if (cases[i].pbl) {
            w.fr.pbl_addr = cpu_to_le64(cases[i].pbl);
        }
        if (cases[i].length) {
            w.fr.length = cpu_to_le64(cases[i].length);
        }
        if (cases[i].other_mr) {
            w.fr.stag = cpu_to_le32(a.stag + 1);
        }
        dp_post_send(&a, &w);
        dp_expect_cqe(&a, RNIC_WQE_FAST_REG, cases[i].status, 1, &e);
        g_assert_cmpuint(qrnic_query_qp_state(&a.t, a.qp.qpn), >=,
                         RNIC_QPS_TERMINATE);
        stop_pair(&a, &b);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qrnic_test_add_both("/rnic/dp/send", test_send);
    qrnic_test_add_both("/rnic/dp/migrate-mid-stream",
                        test_migrate_mid_stream);
    qrnic_test_add_both("/rnic/dp/send-crc", test_send_crc);
    qrnic_test_add_both("/rnic/dp/fault-corrupt-crc", test_fault_corrupt_crc);
    qrnic_test_add_both("/rnic/dp/fault-drop", test_fault_drop);
    qrnic_test_add_both("/rnic/dp/send-behind-writes",
                        test_send_behind_writes);
    qrnic_test_add_both("/rnic/dp/reset-in-flight", test_reset_in_flight);
    qrnic_test_add_both("/rnic/dp/control-reset-in-flight",
                        test_control_reset_in_flight);
    qrnic_test_add_both("/rnic/dp/write-read", test_write_read);
    qrnic_test_add_both("/rnic/dp/atomics-immediate",
                        test_atomics_and_immediate);
    qrnic_test_add_both("/rnic/dp/send-with-invalidate",
                        test_send_with_invalidate);
    qrnic_test_add_both("/rnic/dp/state", test_state);
    qrnic_test_add_both("/rnic/dp/fast-reg-order", test_fast_reg_order);
    qrnic_test_add_both("/rnic/dp/user-qp-refused", test_user_qp_refused);
    qrnic_test_add_both("/rnic/dp/phys-stag", test_phys_stag);
    qrnic_test_add_both("/rnic/dp/read-inv", test_read_inv);
    qrnic_test_add_both("/rnic/dp/drain", test_drain);
    qrnic_test_add_both("/rnic/dp/fast-reg-bounds", test_fast_reg_bounds);
    qrnic_test_add_both("/rnic/dp/capture-runtime", test_capture_runtime);
    qrnic_test_add_both("/rnic/dp/capture-exit-in-flight",
                        test_capture_exit_in_flight);
    qtest_add_func("/rnic/dp/cq-arm-race", test_cq_arm_race);
    qtest_add_func("/rnic/dp/example/read-stag", test_example_read_stag);
    qtest_add_func("/rnic/dp/example/cq-not-armed",
                   test_example_cq_not_armed);
    qtest_add_func("/rnic/dp/example/cq-armed", test_example_cq_armed);
    qtest_add_func("/rnic/dp/example/no-receive", test_example_no_receive);
    return g_test_run();
}
