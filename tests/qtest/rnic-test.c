/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the rnic device: registers, the command queue, the event queue
 * and MSI-X, driven through libqos as a driver would drive them.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "libqtest.h"
#include "libqos/pci-pc.h"
#include "libqos/malloc-pc.h"
#include "standard-headers/linux/pci_regs.h"
#include "rnic/rnic-abi.h"

#define CMDQ_LOG    4
#define EQ_LOG      3
#define MSI_MAGIC   0x4d534900u     /* | vector */
#define TIMEOUT_US  (5 * G_USEC_PER_SEC)

typedef struct RnicTest {
    QTestState *qts;
    QGuestAllocator alloc;
    QPCIBus *bus;
    QPCIDevice *dev;
    QPCIBar regs;
    uint64_t cmdq, eq, msi_mem;
    uint32_t cmd_prod, eq_cons;
} RnicTest;

static void rnic_find(QPCIDevice *dev, int devfn, void *data)
{
    *(QPCIDevice **)data = dev;
}

static uint32_t rd(RnicTest *t, uint32_t reg)
{
    return qpci_io_readl(t->dev, t->regs, reg);
}

static void wr(RnicTest *t, uint32_t reg, uint32_t val)
{
    qpci_io_writel(t->dev, t->regs, reg, val);
}

/*
 * Unmask every MSI-X vector and point it at a word of guest memory, so that
 * an interrupt shows up as MSI_MAGIC | vector written there.
 */
static void rnic_msix_setup(RnicTest *t)
{
    qpci_msix_enable(t->dev);
    t->msi_mem = guest_alloc(&t->alloc, 4 * RNIC_MSIX_VECTORS);
    for (int v = 0; v < RNIC_MSIX_VECTORS; v++) {
        uint64_t e = t->dev->msix_table_off + v * PCI_MSIX_ENTRY_SIZE;

        qtest_writel(t->qts, t->msi_mem + 4 * v, 0);
        qpci_io_writel(t->dev, t->dev->msix_table_bar,
                       e + PCI_MSIX_ENTRY_LOWER_ADDR, t->msi_mem + 4 * v);
        qpci_io_writel(t->dev, t->dev->msix_table_bar,
                       e + PCI_MSIX_ENTRY_UPPER_ADDR, 0);
        qpci_io_writel(t->dev, t->dev->msix_table_bar,
                       e + PCI_MSIX_ENTRY_DATA, MSI_MAGIC | v);
        qpci_io_writel(t->dev, t->dev->msix_table_bar,
                       e + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
    }
}

/* True once vector @v has fired since the last call; re-arms the word. */
static bool rnic_msix_fired(RnicTest *t, int v)
{
    uint32_t word = qtest_readl(t->qts, t->msi_mem + 4 * v);

    if (word == (MSI_MAGIC | v)) {
        qtest_writel(t->qts, t->msi_mem + 4 * v, 0);
        return true;
    }
    g_assert_cmphex(word, ==, 0);
    return false;
}

static void rnic_test_start(RnicTest *t, const char *extra)
{
    memset(t, 0, sizeof(*t));
    t->qts = qtest_initf("-M q35 -nodefaults -device rnic%s",
                         extra ? extra : "");
    pc_alloc_init(&t->alloc, t->qts, ALLOC_NO_FLAGS);
    t->bus = qpci_new_pc(t->qts, &t->alloc);
    qpci_device_foreach(t->bus, RNIC_PCI_VENDOR_ID, RNIC_PCI_DEVICE_ID,
                        rnic_find, &t->dev);
    g_assert_nonnull(t->dev);
    qpci_device_enable(t->dev);
    t->regs = qpci_iomap(t->dev, RNIC_BAR_REGS, NULL);
}

/* Program both rings and enable the device, as a driver's probe does. */
static void rnic_test_enable(RnicTest *t)
{
    rnic_msix_setup(t);
    t->cmdq = guest_alloc(&t->alloc, 4096);
    t->eq = guest_alloc(&t->alloc, 4096);
    g_assert_cmphex(t->cmdq & 0xfff, ==, 0);
    g_assert_cmphex(t->eq & 0xfff, ==, 0);
    qtest_memset(t->qts, t->eq, 0, 4096);
    wr(t, RNIC_REG_CMDQ_BASE_LO, t->cmdq);
    wr(t, RNIC_REG_CMDQ_BASE_HI, t->cmdq >> 32);
    wr(t, RNIC_REG_CMDQ_LOG_SIZE, CMDQ_LOG);
    wr(t, RNIC_REG_EQ_BASE_LO, t->eq);
    wr(t, RNIC_REG_EQ_BASE_HI, t->eq >> 32);
    wr(t, RNIC_REG_EQ_LOG_SIZE, EQ_LOG);
    wr(t, RNIC_REG_CONTROL, RNIC_CONTROL_ENABLE);
    g_assert_cmphex(rd(t, RNIC_REG_STATUS) & RNIC_STATUS_READY, ==,
                    RNIC_STATUS_READY);
}

static void rnic_test_stop(RnicTest *t)
{
    qpci_iounmap(t->dev, t->regs);
    g_free(t->dev);
    qpci_free_pc(t->bus);
    alloc_destroy(&t->alloc);
    qtest_quit(t->qts);
}

/* Posts one command, waits for its status and returns the slot. */
static struct rnic_cmd rnic_cmd(RnicTest *t, uint8_t opcode,
                                const void *payload, size_t len)
{
    uint64_t slot = t->cmdq + (t->cmd_prod & ((1u << CMDQ_LOG) - 1)) *
                    RNIC_CMD_SIZE;
    struct rnic_cmd cmd = {
        .opcode = opcode,
        .flags = RNIC_CMD_FLAG_IRQ,
        .status = cpu_to_le16(RNIC_CMD_STATUS_PENDING),
        .cookie = cpu_to_le32(0xc0ffee00 | t->cmd_prod),
    };
    gint64 end = g_get_monotonic_time() + TIMEOUT_US;

    g_assert_cmpuint(len, <=, sizeof(cmd.u));
    memcpy(cmd.u.raw, payload, len);
    qtest_memwrite(t->qts, slot, &cmd, sizeof(cmd));
    wr(t, RNIC_REG_CMDQ_PROD, ++t->cmd_prod);
    while (!rnic_msix_fired(t, RNIC_MSIX_VEC_ADMIN)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(t->qts, 10000);
    }
    qtest_memread(t->qts, slot, &cmd, sizeof(cmd));
    g_assert_cmpuint(rd(t, RNIC_REG_CMDQ_CONS), ==, t->cmd_prod);
    g_assert_cmphex(le32_to_cpu(cmd.cookie), ==, 0xc0ffee00 | (t->cmd_prod - 1));
    return cmd;
}


/* Runs a command that must succeed. */
static struct rnic_cmd rnic_cmd_ok(RnicTest *t, uint8_t opcode,
                                   const void *payload, size_t len)
{
    struct rnic_cmd cmd = rnic_cmd(t, opcode, payload, len);

    g_assert_cmphex(le16_to_cpu(cmd.status), ==, RNIC_CMD_OK);
    return cmd;
}

static uint16_t rnic_cmd_status(RnicTest *t, uint8_t opcode,
                                const void *payload, size_t len)
{
    return le16_to_cpu(rnic_cmd(t, opcode, payload, len).status);
}

static uint32_t rnic_create_pd(RnicTest *t)
{
    struct rnic_cmd cmd = rnic_cmd_ok(t, RNIC_CMD_CREATE_PD, NULL, 0);

    return le32_to_cpu(((struct rnic_cmd_pd *)cmd.u.raw)->pdn);
}

/* A CQ of 2^log entries on @vector; returns the cqn, the ring in *ring. */
static uint32_t rnic_create_cq(RnicTest *t, uint8_t log, uint8_t vector,
                               uint64_t *ring)
{
    struct rnic_cmd_create_cq p = {
        .log_size = log,
        .msix_vector = vector,
    };
    struct rnic_cmd cmd;

    *ring = guest_alloc(&t->alloc, MAX(4096, RNIC_CQE_SIZE << log));
    qtest_memset(t->qts, *ring, 0, RNIC_CQE_SIZE << log);
    p.ring_addr = cpu_to_le64(*ring);
    cmd = rnic_cmd_ok(t, RNIC_CMD_CREATE_CQ, &p, sizeof(p));
    return le32_to_cpu(((struct rnic_cmd_create_cq *)cmd.u.raw)->cqn);
}

typedef struct RnicTestQp {
    uint32_t qpn;
    uint64_t sq, rq;
    uint8_t log;
    uint16_t sq_prod, rq_prod;
} RnicTestQp;

static uint16_t rnic_try_create_qp(RnicTest *t, uint32_t pdn, uint32_t scq,
                                   uint32_t rcq, uint8_t log, RnicTestQp *qp)
{
    struct rnic_cmd_create_qp p = {
        .pdn = cpu_to_le32(pdn),
        .send_cqn = cpu_to_le32(scq),
        .recv_cqn = cpu_to_le32(rcq),
        .srqn = cpu_to_le32(RNIC_NO_SRQ),
        .sq_log_size = log,
        .rq_log_size = log,
    };
    struct rnic_cmd cmd;

    memset(qp, 0, sizeof(*qp));
    qp->log = log;
    qp->sq = guest_alloc(&t->alloc, MAX(4096, RNIC_SQ_WQE_SIZE << log));
    qp->rq = guest_alloc(&t->alloc, MAX(4096, RNIC_RQ_WQE_SIZE << log));
    p.sq_addr = cpu_to_le64(qp->sq);
    p.rq_addr = cpu_to_le64(qp->rq);
    cmd = rnic_cmd(t, RNIC_CMD_CREATE_QP, &p, sizeof(p));
    qp->qpn = le32_to_cpu(((struct rnic_cmd_create_qp *)cmd.u.raw)->qpn);
    return le16_to_cpu(cmd.status);
}

static void rnic_post_recv(RnicTest *t, RnicTestQp *qp,
                           const struct rnic_rq_wqe *w)
{
    uint64_t slot = qp->rq + (qp->rq_prod & ((1u << qp->log) - 1)) *
                    RNIC_RQ_WQE_SIZE;

    qtest_memwrite(t->qts, slot, w, sizeof(*w));
    wr(t, RNIC_REG_DB_RQ, RNIC_DB_VALUE(qp->qpn, ++qp->rq_prod));
}

static void rnic_post_send(RnicTest *t, RnicTestQp *qp,
                           const struct rnic_sq_wqe *w)
{
    uint64_t slot = qp->sq + (qp->sq_prod & ((1u << qp->log) - 1)) *
                    RNIC_SQ_WQE_SIZE;

    qtest_memwrite(t->qts, slot, w, sizeof(*w));
    wr(t, RNIC_REG_DB_SQ, RNIC_DB_VALUE(qp->qpn, ++qp->sq_prod));
}

static void rnic_modify_qp_state(RnicTest *t, uint32_t qpn, uint8_t state,
                                 uint16_t expect)
{
    struct rnic_cmd_modify_qp m = {
        .qpn = cpu_to_le32(qpn),
        .mask = cpu_to_le32(RNIC_MODIFY_STATE),
        .state = state,
    };

    g_assert_cmphex(rnic_cmd_status(t, RNIC_CMD_MODIFY_QP, &m, sizeof(m)),
                    ==, expect);
}

static uint8_t rnic_query_qp_state(RnicTest *t, uint32_t qpn)
{
    struct rnic_cmd_query_qp q = { .qpn = cpu_to_le32(qpn) };
    struct rnic_cmd cmd = rnic_cmd_ok(t, RNIC_CMD_QUERY_QP, &q, sizeof(q));

    return ((struct rnic_cmd_query_qp *)cmd.u.raw)->state;
}

/* Reads CQ entry @index if the device has written it (phase check). */
static bool rnic_read_cqe(RnicTest *t, uint64_t ring, uint8_t log,
                          uint32_t index, struct rnic_cq_entry *e)
{
    uint64_t addr = ring + (index & ((1u << log) - 1)) * RNIC_CQE_SIZE;

    qtest_memread(t->qts, addr, e, sizeof(*e));
    return e->phase == (((index >> log) & 1) ^ 1);
}

/* Lets the device's bottom halves run. */
static void rnic_settle(RnicTest *t)
{
    qtest_clock_step(t->qts, 1000);
}

/* Reads the next event if the device has written one. */
static bool rnic_next_event(RnicTest *t, struct rnic_event *ev)
{
    uint64_t addr = t->eq + (t->eq_cons & ((1u << EQ_LOG) - 1)) *
                    RNIC_EVENT_SIZE;
    uint8_t phase = ((t->eq_cons >> EQ_LOG) & 1) ^ 1;

    qtest_memread(t->qts, addr, ev, sizeof(*ev));
    if (ev->phase != phase) {
        return false;
    }
    wr(t, RNIC_REG_EQ_CONS, ++t->eq_cons);
    return true;
}

static void test_identity(void)
{
    RnicTest t;

    rnic_test_start(&t, NULL);
    g_assert_cmphex(qpci_config_readw(t.dev, PCI_CLASS_DEVICE), ==,
                    RNIC_PCI_CLASS);
    g_assert_cmphex(qpci_config_readb(t.dev, PCI_REVISION_ID), ==,
                    RNIC_PCI_REVISION);
    g_assert_cmphex(qpci_config_readw(t.dev, PCI_SUBSYSTEM_ID), ==,
                    RNIC_PCI_SUBSYS_ID);
    g_assert_cmphex(rd(&t, RNIC_REG_ID), ==, RNIC_ID_MAGIC);
    g_assert_cmphex(rd(&t, RNIC_REG_VERSION), ==, RNIC_VERSION_VALUE);
    g_assert_cmphex(rd(&t, RNIC_REG_STATUS), ==, 0);
    /* Read-only registers ignore writes. */
    wr(&t, RNIC_REG_ID, 0xdeadbeef);
    wr(&t, RNIC_REG_VERSION, 0xdeadbeef);
    wr(&t, RNIC_REG_STATUS, 0xffffffff);
    g_assert_cmphex(rd(&t, RNIC_REG_ID), ==, RNIC_ID_MAGIC);
    g_assert_cmphex(rd(&t, RNIC_REG_VERSION), ==, RNIC_VERSION_VALUE);
    g_assert_cmphex(rd(&t, RNIC_REG_STATUS), ==, 0);
    rnic_test_stop(&t);
}

static void test_scratch(void)
{
    static const uint32_t patterns[] = { 0xffffffff, 0xa5a5a5a5, 0x1, 0 };
    RnicTest t;

    rnic_test_start(&t, NULL);
    g_assert_cmphex(rd(&t, RNIC_REG_SCRATCH), ==, 0);
    for (size_t i = 0; i < G_N_ELEMENTS(patterns); i++) {
        wr(&t, RNIC_REG_SCRATCH, patterns[i]);
        g_assert_cmphex(rd(&t, RNIC_REG_SCRATCH), ==, patterns[i]);
    }
    /* System reset returns the scratch register to its reset value. */
    wr(&t, RNIC_REG_SCRATCH, 0x12345678);
    qtest_system_reset(t.qts);
    /* Reset clears the BARs too: map them again as firmware would. */
    qpci_device_enable(t.dev);
    t.regs = qpci_iomap(t.dev, RNIC_BAR_REGS, NULL);
    g_assert_cmphex(rd(&t, RNIC_REG_SCRATCH), ==, 0);
    rnic_test_stop(&t);
}

static void test_unknown_register(void)
{
    RnicTest t;

    rnic_test_start(&t, NULL);
    /* Unknown offsets read as zero and ignore writes, without a crash. */
    wr(&t, RNIC_BAR_REGS_SIZE - 4, 0xffffffff);
    g_assert_cmphex(rd(&t, RNIC_BAR_REGS_SIZE - 4), ==, 0);
    g_assert_cmphex(rd(&t, RNIC_REG_ID), ==, RNIC_ID_MAGIC);
    rnic_test_stop(&t);
}

static void test_enable_checks_rings(void)
{
    RnicTest t;

    rnic_test_start(&t, NULL);
    /* No rings: enable is refused. */
    wr(&t, RNIC_REG_CONTROL, RNIC_CONTROL_ENABLE);
    g_assert_cmphex(rd(&t, RNIC_REG_STATUS), ==, 0);
    /* A misaligned ring is refused as well. */
    wr(&t, RNIC_REG_CMDQ_BASE_LO, 0x100080);
    wr(&t, RNIC_REG_CMDQ_LOG_SIZE, 4);
    wr(&t, RNIC_REG_EQ_BASE_LO, 0x200000);
    wr(&t, RNIC_REG_EQ_LOG_SIZE, 4);
    wr(&t, RNIC_REG_CONTROL, RNIC_CONTROL_ENABLE);
    g_assert_cmphex(rd(&t, RNIC_REG_STATUS), ==, 0);
    /* So is a ring that is too large. */
    wr(&t, RNIC_REG_CMDQ_BASE_LO, 0x100000);
    wr(&t, RNIC_REG_CMDQ_LOG_SIZE, 13);
    wr(&t, RNIC_REG_CONTROL, RNIC_CONTROL_ENABLE);
    g_assert_cmphex(rd(&t, RNIC_REG_STATUS), ==, 0);
    /* A doorbell while disabled does nothing. */
    wr(&t, RNIC_REG_CMDQ_PROD, 1);
    g_assert_cmphex(rd(&t, RNIC_REG_CMDQ_CONS), ==, 0);

    rnic_test_enable(&t);
    /* Ring registers are fixed while enabled. */
    wr(&t, RNIC_REG_CMDQ_BASE_LO, 0x300000);
    g_assert_cmphex(rd(&t, RNIC_REG_CMDQ_BASE_LO), ==, (uint32_t)t.cmdq);
    /* CONTROL.RESET returns to the reset state. */
    wr(&t, RNIC_REG_CONTROL, RNIC_CONTROL_RESET);
    g_assert_cmphex(rd(&t, RNIC_REG_STATUS), ==, 0);
    g_assert_cmphex(rd(&t, RNIC_REG_CONTROL), ==, 0);
    g_assert_cmphex(rd(&t, RNIC_REG_CMDQ_BASE_LO), ==, 0);
    g_assert_cmphex(rd(&t, RNIC_REG_EQ_LOG_SIZE), ==, 0);
    rnic_test_stop(&t);
}

static void test_query_device(void)
{
    struct rnic_cmd_query_device q;
    struct rnic_device_attr attr;
    struct rnic_cmd cmd;
    RnicTest t;

    rnic_test_start(&t, ",max-qps=77,max-cqes=512,mpa-rev=1");
    rnic_test_enable(&t);
    q.attr_addr = cpu_to_le64(guest_alloc(&t.alloc, sizeof(attr)));
    cmd = rnic_cmd(&t, RNIC_CMD_QUERY_DEVICE, &q, sizeof(q));
    g_assert_cmphex(le16_to_cpu(cmd.status), ==, RNIC_CMD_OK);
    qtest_memread(t.qts, le64_to_cpu(q.attr_addr), &attr, sizeof(attr));
    g_assert_cmphex(le32_to_cpu(attr.abi_version), ==, RNIC_VERSION_VALUE);
    g_assert_cmpuint(le32_to_cpu(attr.max_qp), ==, 77);
    g_assert_cmpuint(le32_to_cpu(attr.max_cqe), ==, 512);
    g_assert_cmpuint(le32_to_cpu(attr.max_sge), ==, RNIC_WQE_MAX_SGE);
    g_assert_cmpuint(le32_to_cpu(attr.max_pdata), ==, RNIC_MAX_PDATA);
    g_assert_cmpuint(le32_to_cpu(attr.mpa_rev), ==, 1);
    g_assert_cmpuint(le32_to_cpu(attr.msix_vectors), ==, RNIC_MSIX_VECTORS);

    /* An attribute buffer outside guest memory gives a status, no crash. */
    q.attr_addr = cpu_to_le64(0xfffffffffffff000ull);
    cmd = rnic_cmd(&t, RNIC_CMD_QUERY_DEVICE, &q, sizeof(q));
    g_assert_cmphex(le16_to_cpu(cmd.status), ==, RNIC_CMD_ERR_DMA);
    rnic_test_stop(&t);
}

static void test_bad_opcode(void)
{
    struct rnic_cmd cmd;
    RnicTest t;

    rnic_test_start(&t, NULL);
    rnic_test_enable(&t);
    cmd = rnic_cmd(&t, 0xee, NULL, 0);
    g_assert_cmphex(le16_to_cpu(cmd.status), ==, RNIC_CMD_ERR_OPCODE);
    cmd = rnic_cmd(&t, 0, NULL, 0);
    g_assert_cmphex(le16_to_cpu(cmd.status), ==, RNIC_CMD_ERR_OPCODE);
    /* The ring wraps: more commands than entries all complete in order. */
    for (int i = 0; i < (2 << CMDQ_LOG) + 3; i++) {
        cmd = rnic_cmd(&t, 0xee, NULL, 0);
        g_assert_cmphex(le16_to_cpu(cmd.status), ==, RNIC_CMD_ERR_OPCODE);
    }
    rnic_test_stop(&t);
}

static void test_unreadable_cmdq_is_fatal(void)
{
    struct rnic_event ev;
    gint64 end = g_get_monotonic_time() + TIMEOUT_US;
    RnicTest t;

    rnic_test_start(&t, NULL);
    rnic_test_enable(&t);
    /* Move the command ring outside guest memory. */
    wr(&t, RNIC_REG_CONTROL, 0);
    wr(&t, RNIC_REG_CMDQ_BASE_HI, 0xfffff);
    wr(&t, RNIC_REG_CONTROL, RNIC_CONTROL_ENABLE);
    wr(&t, RNIC_REG_CMDQ_PROD, 1);
    while (!rnic_msix_fired(&t, RNIC_MSIX_VEC_ADMIN)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(t.qts, 10000);
    }
    g_assert_cmphex(rd(&t, RNIC_REG_STATUS) & RNIC_STATUS_FATAL, ==,
                    RNIC_STATUS_FATAL);
    g_assert_cmpuint(rd(&t, RNIC_REG_CMDQ_CONS), ==, 0);
    g_assert_true(rnic_next_event(&t, &ev));
    g_assert_cmpuint(ev.type, ==, RNIC_EV_FATAL);
    g_assert_cmpuint(le32_to_cpu(ev.arg0), ==, RNIC_CMD_ERR_DMA);
    g_assert_false(rnic_next_event(&t, &ev));
    rnic_test_stop(&t);
}


static void test_pd(void)
{
    struct rnic_cmd_pd p;
    RnicTest t;
    uint32_t a, b;

    rnic_test_start(&t, ",max-pds=2");
    rnic_test_enable(&t);
    a = rnic_create_pd(&t);
    b = rnic_create_pd(&t);
    g_assert_cmpuint(a, !=, b);
    /* The table holds two. */
    g_assert_cmphex(rnic_cmd_status(&t, RNIC_CMD_CREATE_PD, NULL, 0), ==,
                    RNIC_CMD_ERR_RESOURCE);
    p.pdn = cpu_to_le32(a);
    rnic_cmd_ok(&t, RNIC_CMD_DESTROY_PD, &p, sizeof(p));
    g_assert_cmphex(rnic_cmd_status(&t, RNIC_CMD_DESTROY_PD, &p, sizeof(p)),
                    !=, RNIC_CMD_OK);
    p.pdn = cpu_to_le32(0xdead);
    g_assert_cmphex(rnic_cmd_status(&t, RNIC_CMD_DESTROY_PD, &p, sizeof(p)),
                    !=, RNIC_CMD_OK);
    rnic_test_stop(&t);
}

static uint16_t rnic_reg_mr(RnicTest *t, uint32_t pdn, uint64_t buf,
                            uint32_t len, uint32_t access, uint8_t key,
                            uint32_t *stag)
{
    uint32_t npages = (len + 4095) / 4096;
    uint64_t pbl = guest_alloc(&t->alloc, npages * 8);
    struct rnic_cmd_reg_mr p = {
        .pdn = cpu_to_le32(pdn),
        .access = cpu_to_le32(access),
        .iova = cpu_to_le64(0x7f0000000000ull),
        .length = cpu_to_le64(len),
        .pbl_addr = cpu_to_le64(pbl),
        .npages = cpu_to_le32(npages),
        .page_shift = 12,
        .key = key,
        .policy = RNIC_MR_POLICY_PERSISTENT,
    };
    struct rnic_cmd cmd;

    for (uint32_t i = 0; i < npages; i++) {
        qtest_writeq(t->qts, pbl + 8 * i, buf + 4096 * i);
    }
    cmd = rnic_cmd(t, RNIC_CMD_REG_MR, &p, sizeof(p));
    *stag = le32_to_cpu(((struct rnic_cmd_reg_mr *)cmd.u.raw)->stag);
    return le16_to_cpu(cmd.status);
}

static void test_mr_mw(void)
{
    struct rnic_cmd_stag st;
    struct rnic_cmd_alloc_mw aw = { .type = 1, .key = 0x11 };
    struct rnic_cmd_bind_mw bw;
    struct rnic_cmd_pd pd;
    struct rnic_cmd cmd;
    uint32_t pdn, mr, mw, mr2;
    uint64_t buf;
    RnicTest t;

    rnic_test_start(&t, NULL);
    rnic_test_enable(&t);
    pdn = rnic_create_pd(&t);
    buf = guest_alloc(&t.alloc, 3 * 4096);
    g_assert_cmphex(rnic_reg_mr(&t, pdn, buf, 3 * 4096,
                                RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_WRITE |
                                RNIC_ACC_MW_BIND, 0x42, &mr), ==, RNIC_CMD_OK);
    g_assert_cmphex(mr & 0xff, ==, 0x42);
    /* Bad parameters: unknown PD, access bits, page shift. */
    g_assert_cmphex(rnic_reg_mr(&t, 0x999, buf, 4096, 0, 1, &mr2), ==,
                    RNIC_CMD_ERR_HANDLE);
    g_assert_cmphex(rnic_reg_mr(&t, pdn, buf, 4096, 0x1000, 1, &mr2), ==,
                    RNIC_CMD_ERR_PARAM);

    /* A type 1 window bound to a part of the region gets a new key. */
    aw.pdn = cpu_to_le32(pdn);
    cmd = rnic_cmd_ok(&t, RNIC_CMD_ALLOC_MW, &aw, sizeof(aw));
    mw = le32_to_cpu(((struct rnic_cmd_alloc_mw *)cmd.u.raw)->stag);
    bw = (struct rnic_cmd_bind_mw) {
        .mw_stag = cpu_to_le32(mw),
        .mr_stag = cpu_to_le32(mr),
        .addr = cpu_to_le64(0x7f0000000000ull + 4096),
        .length = cpu_to_le64(4096),
        .access = cpu_to_le32(RNIC_ACC_REMOTE_WRITE),
        .key = 0x12,
    };
    cmd = rnic_cmd_ok(&t, RNIC_CMD_BIND_MW, &bw, sizeof(bw));
    g_assert_cmphex(le32_to_cpu(((struct rnic_cmd_bind_mw *)cmd.u.raw)->new_stag),
                    ==, (mw & ~0xffu) | 0x12);
    /* A range outside the region is refused. */
    bw.mw_stag = cpu_to_le32((mw & ~0xffu) | 0x12);
    bw.key = 0x13;
    bw.length = cpu_to_le64(3 * 4096);
    g_assert_cmphex(rnic_cmd_status(&t, RNIC_CMD_BIND_MW, &bw, sizeof(bw)),
                    !=, RNIC_CMD_OK);
    /* The region cannot go while the window is bound, nor its PD. */
    st.stag = cpu_to_le32(mr);
    g_assert_cmphex(rnic_cmd_status(&t, RNIC_CMD_DEREG_MR, &st, sizeof(st)),
                    ==, RNIC_CMD_ERR_BUSY);
    pd.pdn = cpu_to_le32(pdn);
    g_assert_cmphex(rnic_cmd_status(&t, RNIC_CMD_DESTROY_PD, &pd, sizeof(pd)),
                    ==, RNIC_CMD_ERR_BUSY);
    st.stag = cpu_to_le32((mw & ~0xffu) | 0x12);
    rnic_cmd_ok(&t, RNIC_CMD_DEALLOC_MW, &st, sizeof(st));
    /* Local invalidate, then the stale STag is unknown to DEREG. */
    st.stag = cpu_to_le32(mr);
    rnic_cmd_ok(&t, RNIC_CMD_INVALIDATE, &st, sizeof(st));
    rnic_cmd_ok(&t, RNIC_CMD_DEREG_MR, &st, sizeof(st));
    g_assert_cmphex(rnic_cmd_status(&t, RNIC_CMD_DEREG_MR, &st, sizeof(st)),
                    ==, RNIC_CMD_ERR_HANDLE);
    rnic_cmd_ok(&t, RNIC_CMD_DESTROY_PD, &pd, sizeof(pd));
    rnic_test_stop(&t);
}

static void test_reg_mr_bad_page_list(void)
{
    struct rnic_cmd_reg_mr p = {
        .length = cpu_to_le64(4096),
        .pbl_addr = cpu_to_le64(0xffffffff00000000ull),
        .npages = cpu_to_le32(1),
        .page_shift = 12,
    };
    RnicTest t;

    rnic_test_start(&t, NULL);
    rnic_test_enable(&t);
    p.pdn = cpu_to_le32(rnic_create_pd(&t));
    g_assert_cmphex(rnic_cmd_status(&t, RNIC_CMD_REG_MR, &p, sizeof(p)), ==,
                    RNIC_CMD_ERR_DMA);
    p.npages = 0;
    g_assert_cmphex(rnic_cmd_status(&t, RNIC_CMD_REG_MR, &p, sizeof(p)), ==,
                    RNIC_CMD_ERR_PARAM);
    rnic_test_stop(&t);
}

static void test_cq_qp_lifecycle(void)
{
    struct rnic_cmd_create_cq dc;
    struct rnic_cmd_create_qp dq;
    uint32_t pdn, cqn, qpn;
    uint64_t ring;
    RnicTestQp qp, qp2;
    RnicTest t;

    rnic_test_start(&t, NULL);
    rnic_test_enable(&t);
    pdn = rnic_create_pd(&t);
    cqn = rnic_create_cq(&t, 4, 1, &ring);
    /* Vector 0 belongs to the admin queue; unknown CQs are refused. */
    dc = (struct rnic_cmd_create_cq) {
        .ring_addr = cpu_to_le64(ring), .log_size = 4, .msix_vector = 0,
    };
    g_assert_cmphex(rnic_cmd_status(&t, RNIC_CMD_CREATE_CQ, &dc, sizeof(dc)),
                    ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmphex(rnic_try_create_qp(&t, pdn, cqn, 77, 3, &qp), ==,
                    RNIC_CMD_ERR_HANDLE);
    g_assert_cmphex(rnic_try_create_qp(&t, pdn, cqn, cqn, 3, &qp), ==,
                    RNIC_CMD_OK);
    g_assert_cmpuint(rnic_query_qp_state(&t, qp.qpn), ==, RNIC_QPS_IDLE);
    /* A CQ in use cannot be destroyed. */
    dc.cqn = cpu_to_le32(cqn);
    g_assert_cmphex(rnic_cmd_status(&t, RNIC_CMD_DESTROY_CQ, &dc, sizeof(dc)),
                    ==, RNIC_CMD_ERR_BUSY);
    /* IDLE -> RTS is not the driver's to ask; IDLE -> ERROR -> IDLE is. */
    rnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_RTS, RNIC_CMD_ERR_PARAM);
    rnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_ERROR, RNIC_CMD_OK);
    g_assert_cmpuint(rnic_query_qp_state(&t, qp.qpn), ==, RNIC_QPS_ERROR);
    rnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_ERROR, RNIC_CMD_ERR_STATE);
    rnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_IDLE, RNIC_CMD_OK);

    /* A destroyed QP's number stays in timewait: the next QP gets another. */
    qpn = qp.qpn;
    dq.qpn = cpu_to_le32(qpn);
    rnic_cmd_ok(&t, RNIC_CMD_DESTROY_QP, &dq, sizeof(dq));
    g_assert_cmphex(rnic_cmd_status(&t, RNIC_CMD_QUERY_QP, &dq, sizeof(dq)),
                    ==, RNIC_CMD_ERR_HANDLE);
    g_assert_cmphex(rnic_try_create_qp(&t, pdn, cqn, cqn, 3, &qp2), ==,
                    RNIC_CMD_OK);
    g_assert_cmpuint(qp2.qpn, !=, qpn);
    dq.qpn = cpu_to_le32(qp2.qpn);
    rnic_cmd_ok(&t, RNIC_CMD_DESTROY_QP, &dq, sizeof(dq));
    rnic_cmd_ok(&t, RNIC_CMD_DESTROY_CQ, &dc, sizeof(dc));
    rnic_test_stop(&t);
}

/* Receives posted to an unconnected QP are flushed when it goes to ERROR. */
static void test_flush_to_guest_cq(void)
{
    struct rnic_cq_entry e;
    uint32_t pdn, cqn;
    uint64_t ring;
    RnicTestQp qp;
    RnicTest t;

    rnic_test_start(&t, NULL);
    rnic_test_enable(&t);
    pdn = rnic_create_pd(&t);
    cqn = rnic_create_cq(&t, 3, 2, &ring);
    g_assert_cmphex(rnic_try_create_qp(&t, pdn, cqn, cqn, 3, &qp), ==,
                    RNIC_CMD_OK);
    for (int i = 0; i < 5; i++) {
        struct rnic_rq_wqe w = { .wr_id = cpu_to_le64(0x100 + i) };

        rnic_post_recv(&t, &qp, &w);
    }
    rnic_settle(&t);
    g_assert_false(rnic_read_cqe(&t, ring, 3, 0, &e));
    wr(&t, RNIC_REG_DB_CQ_ARM, cqn | RNIC_DB_ARM_NEXT);
    rnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_ERROR, RNIC_CMD_OK);
    for (int i = 0; i < 5; i++) {
        g_assert_true(rnic_read_cqe(&t, ring, 3, i, &e));
        g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x100 + i);
        g_assert_cmpuint(e.status, ==, RNIC_CQE_WR_FLUSH_ERR);
        g_assert_cmpuint(e.opcode, ==, RNIC_WQE_RECV);
        g_assert_cmpuint(le32_to_cpu(e.qpn), ==, qp.qpn);
    }
    g_assert_false(rnic_read_cqe(&t, ring, 3, 5, &e));
    g_assert_true(rnic_msix_fired(&t, 2));
    /* A receive posted in ERROR completes at once with a flush. */
    {
        struct rnic_rq_wqe w = { .wr_id = cpu_to_le64(0x200) };

        rnic_post_recv(&t, &qp, &w);
    }
    rnic_settle(&t);
    g_assert_true(rnic_read_cqe(&t, ring, 3, 5, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x200);
    g_assert_cmpuint(e.status, ==, RNIC_CQE_WR_FLUSH_ERR);
    /* Not armed again: no second interrupt. */
    g_assert_false(rnic_msix_fired(&t, 2));
    rnic_test_stop(&t);
}

/* A malformed send WQE gives LOC_QP_OP_ERR, QP_ERROR and a QP in ERROR. */
static void test_bad_wqe(void)
{
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(0xbad),
        .opcode = 0x55,
        .flags = RNIC_WQE_FLAG_SIGNALED,
    };
    struct rnic_cq_entry e;
    struct rnic_event ev;
    uint32_t pdn, cqn;
    uint64_t ring;
    RnicTestQp qp;
    RnicTest t;

    rnic_test_start(&t, NULL);
    rnic_test_enable(&t);
    pdn = rnic_create_pd(&t);
    cqn = rnic_create_cq(&t, 3, 3, &ring);
    g_assert_cmphex(rnic_try_create_qp(&t, pdn, cqn, cqn, 3, &qp), ==,
                    RNIC_CMD_OK);
    rnic_post_send(&t, &qp, &w);
    rnic_settle(&t);
    g_assert_true(rnic_read_cqe(&t, ring, 3, 0, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0xbad);
    g_assert_cmpuint(e.status, ==, RNIC_CQE_LOC_QP_OP_ERR);
    g_assert_true(rnic_next_event(&t, &ev));
    g_assert_cmpuint(ev.type, ==, RNIC_EV_QP_ERROR);
    g_assert_cmpuint(le32_to_cpu(ev.id), ==, qp.qpn);
    g_assert_cmpuint(rnic_query_qp_state(&t, qp.qpn), ==, RNIC_QPS_ERROR);
    /* A doorbell for a QP that does not exist is ignored. */
    wr(&t, RNIC_REG_DB_SQ, RNIC_DB_VALUE(0x7777, 1));
    rnic_settle(&t);
    g_assert_false(rnic_read_cqe(&t, ring, 3, 1, &e));
    rnic_test_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/rnic/regs/identity", test_identity);
    qtest_add_func("/rnic/regs/scratch", test_scratch);
    qtest_add_func("/rnic/regs/unknown", test_unknown_register);
    qtest_add_func("/rnic/regs/enable", test_enable_checks_rings);
    qtest_add_func("/rnic/cmd/query-device", test_query_device);
    qtest_add_func("/rnic/cmd/bad-opcode", test_bad_opcode);
    qtest_add_func("/rnic/cmd/unreadable-ring", test_unreadable_cmdq_is_fatal);
    qtest_add_func("/rnic/verbs/pd", test_pd);
    qtest_add_func("/rnic/verbs/mr-mw", test_mr_mw);
    qtest_add_func("/rnic/verbs/reg-mr-bad-page-list", test_reg_mr_bad_page_list);
    qtest_add_func("/rnic/verbs/cq-qp", test_cq_qp_lifecycle);
    qtest_add_func("/rnic/wq/flush", test_flush_to_guest_cq);
    qtest_add_func("/rnic/wq/bad-wqe", test_bad_wqe);
    return g_test_run();
}
