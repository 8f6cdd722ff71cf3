/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the rnic device: identification and scratch registers, read
 * and written through libqos PCI accessors as a driver would.
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/pci-pc.h"
#include "standard-headers/linux/pci_regs.h"
#include "rnic/rnic-abi.h"

typedef struct RnicTest {
    QTestState *qts;
    QPCIBus *bus;
    QPCIDevice *dev;
    QPCIBar regs;
} RnicTest;

static void rnic_find(QPCIDevice *dev, int devfn, void *data)
{
    *(QPCIDevice **)data = dev;
}

static void rnic_test_start(RnicTest *t)
{
    t->qts = qtest_init("-M q35 -nodefaults -device rnic");
    t->bus = qpci_new_pc(t->qts, NULL);
    t->dev = NULL;
    qpci_device_foreach(t->bus, RNIC_PCI_VENDOR_ID, RNIC_PCI_DEVICE_ID,
                        rnic_find, &t->dev);
    g_assert_nonnull(t->dev);
    qpci_device_enable(t->dev);
    t->regs = qpci_iomap(t->dev, RNIC_BAR_REGS, NULL);
}

static void rnic_test_stop(RnicTest *t)
{
    qpci_iounmap(t->dev, t->regs);
    g_free(t->dev);
    qpci_free_pc(t->bus);
    qtest_quit(t->qts);
}

static uint32_t rd(RnicTest *t, uint32_t reg)
{
    return qpci_io_readl(t->dev, t->regs, reg);
}

static void wr(RnicTest *t, uint32_t reg, uint32_t val)
{
    qpci_io_writel(t->dev, t->regs, reg, val);
}

static void test_identity(void)
{
    RnicTest t;

    rnic_test_start(&t);
    g_assert_cmphex(qpci_config_readw(t.dev, PCI_CLASS_DEVICE), ==,
                    RNIC_PCI_CLASS);
    g_assert_cmphex(qpci_config_readb(t.dev, PCI_REVISION_ID), ==,
                    RNIC_PCI_REVISION);
    g_assert_cmphex(rd(&t, RNIC_REG_ID), ==, RNIC_ID_MAGIC);
    g_assert_cmphex(rd(&t, RNIC_REG_VERSION), ==, RNIC_VERSION_VALUE);
    /* Read-only registers ignore writes. */
    wr(&t, RNIC_REG_ID, 0xdeadbeef);
    wr(&t, RNIC_REG_VERSION, 0xdeadbeef);
    g_assert_cmphex(rd(&t, RNIC_REG_ID), ==, RNIC_ID_MAGIC);
    g_assert_cmphex(rd(&t, RNIC_REG_VERSION), ==, RNIC_VERSION_VALUE);
    rnic_test_stop(&t);
}

static void test_scratch(void)
{
    static const uint32_t patterns[] = { 0xffffffff, 0xa5a5a5a5, 0x1, 0 };
    RnicTest t;

    rnic_test_start(&t);
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

    rnic_test_start(&t);
    /* Unknown offsets read as zero and ignore writes, without a crash. */
    wr(&t, RNIC_BAR_REGS_SIZE - 4, 0xffffffff);
    g_assert_cmphex(rd(&t, RNIC_BAR_REGS_SIZE - 4), ==, 0);
    g_assert_cmphex(rd(&t, RNIC_REG_ID), ==, RNIC_ID_MAGIC);
    rnic_test_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/rnic/identity", test_identity);
    qtest_add_func("/rnic/scratch", test_scratch);
    qtest_add_func("/rnic/unknown-register", test_unknown_register);
    return g_test_run();
}
