/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qos-test's view of the rnic device: the qgraph node "rnic" (libqos/rnic.c)
 * on whichever pci-bus qos-test finds it, brought up as a driver does it.
 * Built into QEMU's qos-test, which runs these under
 * /<arch>/<machine>/.../pci-bus/rnic/rnic-tests/.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "standard-headers/linux/pci_regs.h"
#include "libqos/rnic.h"

/* Registers, rings, MSI-X, and the objects a first driver makes. */
static void test_bring_up(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *t = obj;
    QPCIDevice *dev = t->obj.get_driver(t, "pci-device");
    struct rnic_cmd_query_device q;
    struct rnic_device_attr attr;
    uint32_t pdn, cqn;
    uint64_t ring;
    QRnicQp qp;

    g_assert_true(dev == t->dev);
    g_assert_cmphex(qpci_config_readw(dev, PCI_CLASS_DEVICE), ==,
                    RNIC_PCI_CLASS);
    g_assert_cmphex(qrnic_rd(t, RNIC_REG_ID), ==, RNIC_ID_MAGIC);
    g_assert_cmphex(qrnic_rd(t, RNIC_REG_VERSION), ==, RNIC_VERSION_VALUE);
    g_assert_cmphex(qrnic_rd(t, RNIC_REG_STATUS), ==, 0);
    qrnic_test_enable(t);
    q.attr_addr = cpu_to_le64(guest_alloc(alloc, sizeof(attr)));
    qrnic_cmd_ok(t, RNIC_CMD_QUERY_DEVICE, &q, sizeof(q));
    qtest_memread(t->qts, le64_to_cpu(q.attr_addr), &attr, sizeof(attr));
    g_assert_cmphex(le32_to_cpu(attr.abi_version), ==, RNIC_VERSION_VALUE);
    g_assert_cmpuint(le32_to_cpu(attr.msix_vectors), ==, RNIC_MSIX_VECTORS);
    pdn = qrnic_create_pd(t);
    cqn = qrnic_create_cq(t, 4, 1, &ring);
    g_assert_cmphex(qrnic_try_create_qp(t, pdn, cqn, cqn, 3, &qp), ==,
                    RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_query_qp_state(t, qp.qpn), ==, RNIC_QPS_IDLE);
}

/*
 * The data path without a peer: receives posted to an unconnected QP
 * complete, flushed, in the guest's CQ once the QP goes to ERROR, and the
 * armed CQ's vector fires.
 */
static void test_flush(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *t = obj;
    struct rnic_cq_entry e;
    uint32_t pdn, cqn;
    uint64_t ring;
    QRnicQp qp;

    qrnic_test_enable(t);
    pdn = qrnic_create_pd(t);
    cqn = qrnic_create_cq(t, 3, 2, &ring);
    g_assert_cmphex(qrnic_try_create_qp(t, pdn, cqn, cqn, 3, &qp), ==,
                    RNIC_CMD_OK);
    for (int i = 0; i < 3; i++) {
        struct rnic_rq_wqe w = { .wr_id = cpu_to_le64(0x100 + i) };

        qrnic_post_recv(t, &qp, &w);
    }
    qrnic_wr(t, RNIC_REG_DB_CQ_ARM, cqn | RNIC_DB_ARM_NEXT);
    qrnic_modify_qp_state(t, qp.qpn, RNIC_QPS_ERROR, RNIC_CMD_OK);
    for (int i = 0; i < 3; i++) {
        g_assert_true(qrnic_read_cqe(t, ring, 3, i, &e));
        g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x100 + i);
        g_assert_cmpuint(e.status, ==, RNIC_CQE_WR_FLUSH_ERR);
        g_assert_cmpuint(e.opcode, ==, RNIC_WQE_RECV);
    }
    g_assert_false(qrnic_read_cqe(t, ring, 3, 3, &e));
    g_assert_true(qrnic_msix_fired(t, 2));
}

static void register_rnic_qos_tests(void)
{
    qos_add_test("bring-up", "rnic", test_bring_up, NULL);
    qos_add_test("flush", "rnic", test_flush, NULL);
}

libqos_init(register_rnic_qos_tests);
