/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest of rnic behind a vIOMMU: two rnic devices under intel-iommu with
 * DMA remapping on, programmed here as a guest's IOMMU driver would
 * (legacy mode, second-level tables, 39-bit address width).  The guest's
 * RAM is mapped 1:1 but for one 2 MiB hole; the registered buffers live
 * at IOVAs with no RAM behind them.  Data must land where the IOMMU
 * points, and a DMA address the IOMMU does not map must end in an error
 * the driver sees, never in a write to the RAM of the same number.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/units.h"
#include "hw/i386/intel_iommu_internal.h"
#include "libqos/rnic.h"

#define VTD_AW          39
#define VTD_PS          (1ull << 7)     /* a 2 MiB leaf at level 2 */
#define VTD_RW          (VTD_SL_R | VTD_SL_W)
#define RAM_SIZE        (128 * MiB)     /* qtest's default, mapped 1:1 */
#define WINDOW          (8 * GiB)       /* buffer IOVAs: no RAM there */
#define BUF_SIZE        (16 * 4096)
#define MR_IOVA         QRNIC_MR_IOVA
#define QP_LOG          4
#define CQ_LOG          6
#define CANARY          0x5a

/* The IOMMU's tables: root, one context table, levels 3 and 2. */
typedef struct Vtd {
    QTestState *qts;
    QGuestAllocator *alloc;
    uint64_t root, ctx, l3, l2_ram, l2_win, l1_win;
    uint64_t hole;          /* GPA of the unmapped 2 MiB */
} Vtd;

typedef struct Side {
    QRnic t;
    uint32_t pdn, cqn, cq_cons, stag;
    uint64_t cq_ring;
    QRnicQp qp;
    uint64_t buf;           /* GPA of the pages behind MR_IOVA */
} Side;

static uint64_t vtd_table(Vtd *v)
{
    uint64_t t = guest_alloc(v->alloc, 4096);

    g_assert_cmphex(t & 0xfff, ==, 0);
    qtest_memset(v->qts, t, 0, 4096);
    return t;
}

static void vtd_set(Vtd *v, uint64_t table, unsigned idx, uint64_t entry)
{
    qtest_writeq(v->qts, table + 8 * idx, entry);
}

/*
 * Tables for both devices' requester ids (one domain): RAM 1:1 in 2 MiB
 * leaves but for v->hole, and an empty window of 4 KiB pages at WINDOW.
 */
static void vtd_build(Vtd *v, QRnic *a, QRnic *b)
{
    uint64_t span = 4 * MiB;
    uint64_t at = guest_alloc(v->alloc, span);

    v->hole = ROUND_UP(at, 2 * MiB);    /* nothing else is allocated there */
    v->root = vtd_table(v);
    v->ctx = vtd_table(v);
    v->l3 = vtd_table(v);
    v->l2_ram = vtd_table(v);
    v->l2_win = vtd_table(v);
    v->l1_win = vtd_table(v);
    vtd_set(v, v->root, 0, v->ctx | VTD_ROOT_ENTRY_P);
    for (QRnic *t = a; t; t = t == a ? b : NULL) {
        uint64_t ce = v->ctx + 16 * t->dev->devfn;

        qtest_writeq(v->qts, ce, v->l3 | VTD_CONTEXT_ENTRY_P |
                     VTD_CONTEXT_TT_MULTI_LEVEL << 2);
        /* AW 1: 39 bits, three levels; domain 1. */
        qtest_writeq(v->qts, ce + 8, 1 | 1 << 8);
    }
    vtd_set(v, v->l3, 0, v->l2_ram | VTD_RW);
    for (uint64_t gpa = 0; gpa < RAM_SIZE; gpa += 2 * MiB) {
        if (gpa != v->hole) {
            vtd_set(v, v->l2_ram, gpa >> 21, gpa | VTD_RW | VTD_PS);
        }
    }
    vtd_set(v, v->l3, (WINDOW >> 30) & 511, v->l2_win | VTD_RW);
    vtd_set(v, v->l2_win, (WINDOW >> 21) & 511, v->l1_win | VTD_RW);
}

/* One 4 KiB page of the window: IOVA WINDOW + @off to @gpa. */
static void vtd_map_window(Vtd *v, uint64_t off, uint64_t gpa)
{
    g_assert_cmpuint(off, <, 2 * MiB);
    vtd_set(v, v->l1_win, off >> 12, gpa | VTD_RW);
}

static void vtd_cmd(Vtd *v, uint32_t cmd, uint32_t status)
{
    qtest_writel(v->qts, Q35_HOST_BRIDGE_IOMMU_ADDR + DMAR_GCMD_REG, cmd);
    g_assert_cmphex(qtest_readl(v->qts, Q35_HOST_BRIDGE_IOMMU_ADDR +
                                DMAR_GSTS_REG) & status, ==, status);
}

/* Root table pointer, then translation on: from here every DMA remaps. */
static void vtd_enable(Vtd *v)
{
    qtest_writeq(v->qts, Q35_HOST_BRIDGE_IOMMU_ADDR + DMAR_RTADDR_REG,
                 v->root);
    vtd_cmd(v, VTD_GCMD_SRTP, VTD_GSTS_RTPS);
    vtd_cmd(v, VTD_GCMD_TE, VTD_GSTS_TES);
}

static uint32_t vtd_faults(Vtd *v)
{
    return qtest_readl(v->qts, Q35_HOST_BRIDGE_IOMMU_ADDR + DMAR_FSTS_REG);
}

static void iommu_setup(Side *x)
{
    qrnic_test_enable(&x->t);
    x->pdn = qrnic_create_pd(&x->t);
    x->cqn = qrnic_create_cq(&x->t, CQ_LOG, 1, &x->cq_ring);
    g_assert_cmphex(qrnic_try_create_qp(&x->t, x->pdn, x->cqn, x->cqn, QP_LOG,
                                        &x->qp), ==, RNIC_CMD_OK);
    x->buf = guest_alloc(x->t.alloc, BUF_SIZE);
}

/* @x's MR: BUF_SIZE at MR_IOVA, its pages at DMA address @dma on. */
static void iommu_reg(Side *x, uint64_t dma)
{
    const uint32_t access = RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_READ |
                            RNIC_ACC_REMOTE_WRITE;

    g_assert_cmphex(qrnic_reg_mr(&x->t, x->pdn, dma, BUF_SIZE, access, 1,
                                 &x->stag), ==, RNIC_CMD_OK);
}

/*
 * Both devices behind one IOMMU, RAM mapped, translation on, QPs
 * connected; the caller registers the MRs.
 */
static void start(Vtd *v, Side *a, Side *b)
{
    memset(a, 0, sizeof(*a));
    memset(b, 0, sizeof(*b));
    qrnic_test_start_pair_on(&a->t, &b->t,
                             "-device intel-iommu,aw-bits=39",
                             ",listen-allow=127.0.0.1",
                             ",peer-allow=127.0.0.1");
    *v = (Vtd) { .qts = a->t.qts, .alloc = a->t.alloc };
    vtd_build(v, &a->t, &b->t);
    vtd_enable(v);
    iommu_setup(a);
    iommu_setup(b);
    qrnic_connect_qps(&a->t, a->qp.qpn, &b->t, b->qp.qpn, 4);
}

static void iommu_cqe(Side *x, struct rnic_cq_entry *e)
{
    qrnic_wait_cqe(&x->t, x->cq_ring, CQ_LOG, x->cqn, &x->cq_cons, e);
}

static uint8_t iommu_expect(Side *x, uint64_t wr_id)
{
    struct rnic_cq_entry e;

    iommu_cqe(x, &e);
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, wr_id);
    return e.status;
}

static void iommu_post_recv(Side *x, uint64_t wr_id, uint32_t len)
{
    struct rnic_rq_wqe w = {
        .wr_id = cpu_to_le64(wr_id),
        .num_sge = 1,
        .sge[0] = qrnic_sge(x->stag, MR_IOVA, len),
    };

    qrnic_post_recv(&x->t, &x->qp, &w);
}

static void iommu_post_send(Side *x, uint8_t opcode, uint64_t wr_id,
                            uint32_t len, uint32_t rstag)
{
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(wr_id),
        .opcode = opcode,
        .flags = RNIC_WQE_FLAG_SIGNALED,
        .num_sge = 1,
        .sge[0] = qrnic_sge(x->stag, MR_IOVA, len),
        .remote_addr = cpu_to_le64(MR_IOVA),
        .remote_stag = cpu_to_le32(rstag),
    };

    qrnic_post_send(&x->t, &x->qp, &w);
}

static void assert_same(QTestState *qts, uint64_t a, uint64_t b, uint32_t len)
{
    g_autofree uint8_t *pa = g_malloc(len);
    g_autofree uint8_t *pb = g_malloc(len);

    qtest_memread(qts, a, pa, len);
    qtest_memread(qts, b, pb, len);
    g_assert_cmpmem(pa, len, pb, len);
}

static void assert_canary(QTestState *qts, uint64_t gpa, uint32_t len)
{
    g_autofree uint8_t *p = g_malloc(len);

    qtest_memread(qts, gpa, p, len);
    for (uint32_t i = 0; i < len; i++) {
        g_assert_cmphex(p[i], ==, CANARY);
    }
}

/*
 * Each MR's pages are at window IOVAs the IOMMU sends to the buffer's
 * RAM, in reverse page order: a Send, an RDMA Write and an RDMA Read
 * arrive byte for byte where the IOMMU points.  A device that took the
 * IOVAs for RAM addresses would find nothing there.
 */
static void test_translated(void)
{
    Vtd v;
    Side a, b;

    start(&v, &a, &b);
    for (int i = 0; i < 16; i++) {
        vtd_map_window(&v, 4096 * i, a.buf + 4096 * (15 - i));
        vtd_map_window(&v, 4096 * (16 + i), b.buf + 4096 * (15 - i));
    }
    iommu_reg(&a, WINDOW);
    iommu_reg(&b, WINDOW + 16 * 4096);

    qrnic_fill(v.qts, a.buf, BUF_SIZE, 1);
    iommu_post_recv(&b, 0x10, BUF_SIZE);
    iommu_post_send(&a, RNIC_WQE_SEND, 0x11, BUF_SIZE, 0);
    g_assert_cmpuint(iommu_expect(&a, 0x11), ==, RNIC_CQE_SUCCESS);
    g_assert_cmpuint(iommu_expect(&b, 0x10), ==, RNIC_CQE_SUCCESS);
    assert_same(v.qts, a.buf, b.buf, BUF_SIZE);

    qrnic_fill(v.qts, b.buf, BUF_SIZE, 2);
    iommu_post_send(&b, RNIC_WQE_WRITE, 0x20, BUF_SIZE, a.stag);
    g_assert_cmpuint(iommu_expect(&b, 0x20), ==, RNIC_CQE_SUCCESS);
    iommu_post_recv(&a, 0x22, 4);
    iommu_post_send(&b, RNIC_WQE_SEND, 0x21, 4, 0);   /* the Write is placed */
    g_assert_cmpuint(iommu_expect(&b, 0x21), ==, RNIC_CQE_SUCCESS);
    g_assert_cmpuint(iommu_expect(&a, 0x22), ==, RNIC_CQE_SUCCESS);
    assert_same(v.qts, a.buf + 4, b.buf + 4, BUF_SIZE - 4);

    qrnic_fill(v.qts, a.buf, BUF_SIZE, 3);
    iommu_post_send(&b, RNIC_WQE_READ, 0x30, BUF_SIZE, a.stag);
    g_assert_cmpuint(iommu_expect(&b, 0x30), ==, RNIC_CQE_SUCCESS);
    assert_same(v.qts, a.buf, b.buf, BUF_SIZE);
    g_assert_cmphex(vtd_faults(&v), ==, 0);
    qrnic_test_stop(&b.t);
    qrnic_test_stop(&a.t);
}

/*
 * A driver bug: b's MR names pages at IOVAs equal to RAM addresses the
 * IOMMU does not map (the hole, filled with a canary).  The Send that
 * arrives there fails b's receive with LOC_ACCESS_ERR and ends the
 * stream; the IOMMU records a fault; the RAM of that number stays
 * untouched.
 */
static void test_unmapped_page(void)
{
    Vtd v;
    Side a, b;

    start(&v, &a, &b);
    iommu_reg(&a, a.buf);
    iommu_reg(&b, v.hole);
    qtest_memset(v.qts, v.hole, CANARY, BUF_SIZE);
    qrnic_fill(v.qts, a.buf, BUF_SIZE, 4);
    iommu_post_recv(&b, 0x40, BUF_SIZE);
    iommu_post_send(&a, RNIC_WQE_SEND, 0x41, BUF_SIZE, 0);
    g_assert_cmpuint(iommu_expect(&b, 0x40), ==, RNIC_CQE_LOC_ACCESS_ERR);
    g_assert_cmphex(vtd_faults(&v) & VTD_FSTS_PPF, ==, VTD_FSTS_PPF);
    assert_canary(v.qts, v.hole, BUF_SIZE);
    /* Terminate sent: ERROR follows once the peer closes. */
    g_assert_cmpuint(qrnic_query_qp_state(&b.t, b.qp.qpn), >=,
                     RNIC_QPS_TERMINATE);
    qrnic_test_stop(&b.t);
    qrnic_test_stop(&a.t);
}

/*
 * The same for a ring: a connected QP whose send queue sits at an IOVA
 * the IOMMU does not map.  The device cannot fetch the posted WQE: the
 * QP leaves RTS with an event, the device stays up, and the RAM of
 * that number is left as the driver wrote it.
 */
static void test_unmapped_ring(void)
{
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(0x50),
        .opcode = RNIC_WQE_SEND,
        .flags = RNIC_WQE_FLAG_SIGNALED,
    };
    g_autofree uint8_t *before = g_malloc(4096);
    g_autofree uint8_t *after = g_malloc(4096);
    QRnicQp qa, qb;
    struct rnic_event ev;
    Vtd v;
    Side a, b;

    start(&v, &a, &b);
    g_assert_cmphex(qrnic_create_qp_at(&a.t, a.pdn, a.cqn, a.cqn, QP_LOG,
                                       v.hole, guest_alloc(a.t.alloc, 4096),
                                       &qa), ==, RNIC_CMD_OK);
    g_assert_cmphex(qrnic_try_create_qp(&b.t, b.pdn, b.cqn, b.cqn, QP_LOG,
                                        &qb), ==, RNIC_CMD_OK);
    qrnic_connect_qps(&a.t, qa.qpn, &b.t, qb.qpn, 4);
    qtest_memset(v.qts, v.hole, CANARY, 4096);
    qrnic_post_send(&a.t, &qa, &w);
    qtest_memread(v.qts, v.hole, before, 4096);
    do {
        qrnic_wait_event(&a.t, &ev);
    } while (ev.type != RNIC_EV_QP_ERROR);
    g_assert_cmpuint(le32_to_cpu(ev.id), ==, qa.qpn);
    g_assert_cmpuint(qrnic_query_qp_state(&a.t, qa.qpn), >=,
                     RNIC_QPS_TERMINATE);
    g_assert_cmphex(vtd_faults(&v) & VTD_FSTS_PPF, ==, VTD_FSTS_PPF);
    qtest_memread(v.qts, v.hole, after, 4096);
    g_assert_cmpmem(before, 4096, after, 4096);
    g_assert_cmpuint(qrnic_rd(&a.t, RNIC_REG_STATUS) & RNIC_STATUS_READY, ==,
                     RNIC_STATUS_READY);
    qrnic_test_stop(&b.t);
    qrnic_test_stop(&a.t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qrnic_test_add_both("/rnic/iommu/translated", test_translated);
    qrnic_test_add_both("/rnic/iommu/unmapped-page", test_unmapped_page);
    qrnic_test_add_both("/rnic/iommu/unmapped-ring", test_unmapped_ring);
    return g_test_run();
}
