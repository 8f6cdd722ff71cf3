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
    return g_test_run();
}
