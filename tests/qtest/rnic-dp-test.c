/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest of rnic's data path: two rnic devices in one VM, connected over a
 * real TCP connection on 127.0.0.1, move data with every operation; each
 * byte is checked in guest memory.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "libqos/rnic.h"

#define IOVA        0x7f0000000000ull
#define BUF_SIZE    (64 * 1024)
#define QP_LOG      4
#define CQ_LOG      6

/* One side: its device, PD, CQ, QP and one registered buffer. */
typedef struct Side {
    RnicTest t;
    uint32_t pdn, cqn;
    uint64_t cq_ring;
    uint32_t cq_cons;
    RnicTestQp qp;
    uint64_t buf;
    uint32_t stag;
} Side;

static void side_setup(Side *x, uint32_t access)
{
    rnic_test_enable(&x->t);
    x->pdn = rnic_create_pd(&x->t);
    x->cqn = rnic_create_cq(&x->t, CQ_LOG, 1, &x->cq_ring);
    g_assert_cmphex(rnic_try_create_qp(&x->t, x->pdn, x->cqn, x->cqn, QP_LOG,
                                       &x->qp), ==, RNIC_CMD_OK);
    x->buf = guest_alloc(x->t.alloc, BUF_SIZE);
    g_assert_cmphex(x->buf & 0xfff, ==, 0);
    g_assert_cmphex(rnic_reg_mr(&x->t, x->pdn, x->buf, BUF_SIZE, access,
                                0x01, &x->stag), ==, RNIC_CMD_OK);
}

/* Waits in real time (the bytes cross a TCP connection) for a CQE. */
static void side_cqe(Side *x, struct rnic_cq_entry *e)
{
    gint64 end = g_get_monotonic_time() + RNIC_TEST_TIMEOUT_US;

    while (!rnic_read_cqe(&x->t, x->cq_ring, CQ_LOG, x->cq_cons, e)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(500);
        rnic_settle(&x->t);
    }
    x->cq_cons++;
    rnic_wr(&x->t, RNIC_REG_DB_CQ, RNIC_DB_VALUE(x->cqn, x->cq_cons));
}

static void side_expect_cqe(Side *x, uint8_t opcode, uint8_t status,
                            uint64_t wr_id, struct rnic_cq_entry *e)
{
    side_cqe(x, e);
    g_assert_cmphex(le64_to_cpu(e->wr_id), ==, wr_id);
    g_assert_cmpuint(e->status, ==, status);
    g_assert_cmpuint(e->opcode, ==, opcode);
}

static void side_expect_event(Side *x, uint8_t type, struct rnic_event *ev)
{
    rnic_wait_event(&x->t, ev);
    g_assert_cmpuint(ev->type, ==, type);
}

static struct rnic_wqe_sge sge(Side *x, uint32_t off, uint32_t len)
{
    struct rnic_wqe_sge s = {
        .addr = cpu_to_le64(IOVA + off),
        .length = cpu_to_le32(len),
        .stag = cpu_to_le32(x->stag),
    };

    return s;
}

static void fill(Side *x, uint32_t off, uint32_t len, uint8_t seed)
{
    g_autofree uint8_t *p = g_malloc(len);

    for (uint32_t i = 0; i < len; i++) {
        p[i] = seed + i * 7;
    }
    qtest_memwrite(x->t.qts, x->buf + off, p, len);
}

static void check_same(Side *a, uint32_t aoff, Side *b, uint32_t boff,
                       uint32_t len)
{
    g_autofree uint8_t *pa = g_malloc(len);
    g_autofree uint8_t *pb = g_malloc(len);

    qtest_memread(a->t.qts, a->buf + aoff, pa, len);
    qtest_memread(b->t.qts, b->buf + boff, pb, len);
    g_assert_cmpmem(pa, len, pb, len);
}

/* a listens, b connects; both QPs end in RTS. */
static void connect_pair(Side *a, Side *b, const char *extra_a,
                         const char *extra_b)
{
    const uint32_t access = RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_READ |
                            RNIC_ACC_REMOTE_WRITE | RNIC_ACC_REMOTE_ATOMIC;
    g_autofree char *xa = g_strdup_printf(",listen-allow=127.0.0.1%s",
                                          extra_a ?: "");
    g_autofree char *xb = g_strdup_printf(",peer-allow=127.0.0.1%s",
                                          extra_b ?: "");

    memset(a, 0, sizeof(*a));
    memset(b, 0, sizeof(*b));
    rnic_test_start_pair(&a->t, &b->t, xa, xb);
    side_setup(a, access);
    side_setup(b, access);
    rnic_connect_qps(&a->t, a->qp.qpn, &b->t, b->qp.qpn, 4);
    g_assert_cmpuint(rnic_query_qp_state(&a->t, a->qp.qpn), ==, RNIC_QPS_RTS);
    g_assert_cmpuint(rnic_query_qp_state(&b->t, b->qp.qpn), ==, RNIC_QPS_RTS);
}

static void stop_pair(Side *a, Side *b)
{
    rnic_test_stop(&b->t);
    rnic_test_stop(&a->t);
}

static void post_recv(Side *x, uint64_t wr_id, uint32_t off, uint32_t len)
{
    struct rnic_rq_wqe w = {
        .wr_id = cpu_to_le64(wr_id),
        .num_sge = 1,
        .sge[0] = sge(x, off, len),
    };

    rnic_post_recv(&x->t, &x->qp, &w);
}

static void post_send(Side *x, struct rnic_sq_wqe *w)
{
    w->flags |= RNIC_WQE_FLAG_SIGNALED;
    rnic_post_send(&x->t, &x->qp, w);
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
            .sge[0] = sge(a, 0, sizes[i]),
        };

        fill(a, 0, MAX(sizes[i], 1), i);
        post_recv(b, 0x6000 + i, 8192, BUF_SIZE - 8192);
        post_send(a, &w);
        side_expect_cqe(a, RNIC_WQE_SEND, RNIC_CQE_SUCCESS, 0x5000 + i, &e);
        side_expect_cqe(b, RNIC_WQE_RECV, RNIC_CQE_SUCCESS, 0x6000 + i, &e);
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
    g_assert_cmpuint(rnic_qom_int(&a.t, "a", "stat-cqe-success"), ==, 5);
    g_assert_cmpuint(rnic_qom_int(&b.t, "b", "stat-cqe-success"), ==, 5);
    g_assert_cmpuint(rnic_qom_int(&b.t, "b", "stat-rx-bytes"), >, 45000);
    g_assert_cmpuint(rnic_qom_int(&a.t, "a", "stat-tx-fpdus"), >=, 5);
    stop_pair(&a, &b);
}

/* With CRC32c required by one side, both use it and data is intact. */
static void test_send_crc(void)
{
    Side a, b;

    connect_pair(&a, &b, ",mpa-crc=required", NULL);
    sends(&a, &b);
    g_assert_cmpuint(rnic_qom_int(&b.t, "b", "stat-crc-errors"), ==, 0);
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
    w.sge[0] = sge(&a, 0, 100);
    post_recv(&b, 11, 0, 1000);
    post_recv(&b, 12, 0, 1000);
    post_send(&a, &w);          /* FPDU 1: intact */
    side_expect_cqe(&b, RNIC_WQE_RECV, RNIC_CQE_SUCCESS, 11, &e);
    w.wr_id = cpu_to_le64(2);
    post_send(&a, &w);          /* FPDU 2: CRC inverted */
    side_expect_event(&b, RNIC_EV_TERM_SENT, &ev);
    g_assert_cmphex(le32_to_cpu(ev.arg0), ==, 0x200);  /* LLP, MPA */
    g_assert_cmphex(le32_to_cpu(ev.arg1), ==, 0x02);   /* CRC error */
    g_assert_cmpuint(rnic_qom_int(&b.t, "b", "stat-crc-errors"), ==, 1);
    side_expect_cqe(&b, RNIC_WQE_RECV, RNIC_CQE_WR_FLUSH_ERR, 12, &e);
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
    w.sge[0] = sge(&a, 0, 8000);
    w.remote_stag = cpu_to_le32(b.stag);
    w.remote_addr = cpu_to_le64(IOVA);
    post_send(&a, &w);
    side_expect_event(&a, RNIC_EV_CONN_CLOSED, &ev);
    g_assert_cmpuint(le32_to_cpu(ev.arg0), ==, 1);
    side_expect_event(&b, RNIC_EV_CONN_CLOSED, &ev);
    g_assert_cmpuint(rnic_query_qp_state(&a.t, a.qp.qpn), ==, RNIC_QPS_ERROR);
    g_assert_cmpuint(rnic_query_qp_state(&b.t, b.qp.qpn), ==, RNIC_QPS_ERROR);
    stop_pair(&a, &b);
}

static void test_write_read(void)
{
    struct rnic_cq_entry e;
    struct rnic_sq_wqe w;
    Side a, b;

    connect_pair(&a, &b, NULL, NULL);
    /* RDMA Write of 40000 bytes into b's buffer at offset 4096. */
    fill(&a, 0, 40000, 3);
    w = (struct rnic_sq_wqe) {
        .wr_id = cpu_to_le64(0x7001),
        .opcode = RNIC_WQE_WRITE,
        .num_sge = 1,
        .sge[0] = sge(&a, 0, 40000),
        .remote_stag = cpu_to_le32(b.stag),
        .remote_addr = cpu_to_le64(IOVA + 4096),
    };
    post_send(&a, &w);
    side_expect_cqe(&a, RNIC_WQE_WRITE, RNIC_CQE_SUCCESS, 0x7001, &e);
    /*
     * A Write completes at the sender only; wait for the bytes to land
     * by reading them back with an RDMA Read into a's second half.
     */
    w = (struct rnic_sq_wqe) {
        .wr_id = cpu_to_le64(0x7002),
        .opcode = RNIC_WQE_READ,
        .num_sge = 1,
        .sge[0] = sge(&a, 45000, 20000),
        .remote_stag = cpu_to_le32(b.stag),
        .remote_addr = cpu_to_le64(IOVA + 4096 + 10000),
    };
    post_send(&a, &w);
    side_expect_cqe(&a, RNIC_WQE_READ, RNIC_CQE_SUCCESS, 0x7002, &e);
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
        .sge[0] = sge(&a, 64, 8),
        .remote_stag = cpu_to_le32(b.stag),
        .remote_addr = cpu_to_le64(IOVA + 256),
        .atomic_arg0 = cpu_to_le64(42),
    };
    post_send(&a, &w);
    side_expect_cqe(&a, RNIC_WQE_ATOMIC_FADD, RNIC_CQE_SUCCESS, 0x8001, &e);
    g_assert_cmpuint(qtest_readq(a.t.qts, a.buf + 64), ==, 1000);
    /* Compare-and-swap: matches 1042, so 7 is stored. */
    w.wr_id = cpu_to_le64(0x8002);
    w.opcode = RNIC_WQE_ATOMIC_CSWAP;
    w.sge[0] = sge(&a, 72, 8);
    w.atomic_arg0 = cpu_to_le64(1042);
    w.atomic_arg1 = cpu_to_le64(7);
    post_send(&a, &w);
    side_expect_cqe(&a, RNIC_WQE_ATOMIC_CSWAP, RNIC_CQE_SUCCESS, 0x8002, &e);
    g_assert_cmpuint(qtest_readq(a.t.qts, a.buf + 72), ==, 1042);
    v = qtest_readq(b.t.qts, b.buf + 256);
    g_assert_cmpuint(v, ==, 7);

    /* Immediate data consumes a receive and carries 32 bits. */
    post_recv(&b, 0x9001, 0, 64);
    w = (struct rnic_sq_wqe) {
        .wr_id = cpu_to_le64(0x8003),
        .opcode = RNIC_WQE_IMM_DATA,
        .flags = RNIC_WQE_FLAG_SOLICITED,
        .imm_or_stag = cpu_to_le32(0xfeedf00d),
    };
    post_send(&a, &w);
    side_expect_cqe(&a, RNIC_WQE_IMM_DATA, RNIC_CQE_SUCCESS, 0x8003, &e);
    side_expect_cqe(&b, RNIC_WQE_RECV, RNIC_CQE_SUCCESS, 0x9001, &e);
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
    g_assert_cmphex(rnic_reg_mr(&b.t, b.pdn, target, 4096,
                                RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_WRITE,
                                0x02, &tstag), ==, RNIC_CMD_OK);
    w.sge[0] = sge(&a, 0, 100);
    w.imm_or_stag = cpu_to_le32(tstag);
    fill(&a, 0, 100, 9);
    post_recv(&b, 0xb001, 0, 1000);
    post_send(&a, &w);
    side_expect_cqe(&a, RNIC_WQE_SEND, RNIC_CQE_SUCCESS, 0xa001, &e);
    side_expect_cqe(&b, RNIC_WQE_RECV, RNIC_CQE_SUCCESS, 0xb001, &e);
    g_assert_cmphex(e.flags & RNIC_CQE_FLAG_WITH_INV, ==,
                    RNIC_CQE_FLAG_WITH_INV);
    g_assert_cmphex(le32_to_cpu(e.invalidated_stag), ==, tstag);
    check_same(&a, 0, &b, 0, 100);

    qtest_memset(b.t.qts, target, 0x55, 4096);
    w = (struct rnic_sq_wqe) {
        .wr_id = cpu_to_le64(0xa002),
        .opcode = RNIC_WQE_WRITE,
        .num_sge = 1,
        .sge[0] = sge(&a, 0, 100),
        .remote_stag = cpu_to_le32(tstag),
        .remote_addr = cpu_to_le64(IOVA),
    };
    post_send(&a, &w);
    /* b refuses: Terminate sent (DDP, tagged buffer, invalid STag). */
    side_expect_event(&b, RNIC_EV_TERM_SENT, &ev);
    g_assert_cmphex(le32_to_cpu(ev.arg0), ==, 0x101);
    g_assert_cmphex(le32_to_cpu(ev.arg1), ==, 0x00);
    side_expect_event(&a, RNIC_EV_TERM_RECEIVED, &ev);
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
    side_expect_cqe(&a, RNIC_WQE_WRITE, RNIC_CQE_SUCCESS, 0xa002, &e);
    g_assert_cmpuint(rnic_query_qp_state(&a.t, a.qp.qpn), >=,
                     RNIC_QPS_TERMINATE);
    w.wr_id = cpu_to_le64(0xa003);
    post_send(&a, &w);
    side_expect_cqe(&a, RNIC_WQE_WRITE, RNIC_CQE_WR_FLUSH_ERR, 0xa003, &e);
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
            .sge[0] = sge(a, 0, 40000),
            .remote_stag = cpu_to_le32(b->stag),
            .remote_addr = cpu_to_le64(IOVA),
        };

        post_send(a, &w);
    }
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
    rnic_test_after_reset(&a.t);
    rnic_test_after_reset(&b.t);
    g_assert_cmphex(rnic_rd(&a.t, RNIC_REG_STATUS), ==, 0);
    g_assert_cmphex(rnic_rd(&b.t, RNIC_REG_STATUS), ==, 0);
    g_assert_cmphex(rnic_rd(&a.t, RNIC_REG_CMDQ_BASE_LO), ==, 0);
    /* Everything was destroyed: set up again, connect again, send. */
    {
        Side a2 = { .t = a.t }, b2 = { .t = b.t };
        const uint32_t access = RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_WRITE;

        side_setup(&a2, access);
        side_setup(&b2, access);
        rnic_connect_qps(&a2.t, a2.qp.qpn, &b2.t, b2.qp.qpn, 0);
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
    rnic_wr(&a.t, RNIC_REG_CONTROL, RNIC_CONTROL_RESET);
    g_assert_cmphex(rnic_rd(&a.t, RNIC_REG_STATUS), ==, 0);
    g_assert_cmphex(rnic_rd(&a.t, RNIC_REG_CMDQ_BASE_LO), ==, 0);
    do {
        rnic_wait_event(&b.t, &ev);
    } while (ev.type != RNIC_EV_CONN_CLOSED);
    qtest_qmp_assert_success(a.t.qts, "{'execute': 'query-status'}");
    stop_pair(&a, &b);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    rnic_test_add_both("/rnic/dp/send", test_send);
    rnic_test_add_both("/rnic/dp/send-crc", test_send_crc);
    rnic_test_add_both("/rnic/dp/fault-corrupt-crc", test_fault_corrupt_crc);
    rnic_test_add_both("/rnic/dp/fault-drop", test_fault_drop);
    rnic_test_add_both("/rnic/dp/reset-in-flight", test_reset_in_flight);
    rnic_test_add_both("/rnic/dp/control-reset-in-flight",
                       test_control_reset_in_flight);
    rnic_test_add_both("/rnic/dp/write-read", test_write_read);
    rnic_test_add_both("/rnic/dp/atomics-immediate",
                       test_atomics_and_immediate);
    rnic_test_add_both("/rnic/dp/send-with-invalidate",
                       test_send_with_invalidate);
    return g_test_run();
}
