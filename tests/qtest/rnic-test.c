/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the rnic device: registers, the command queue, the event queue
 * and MSI-X, driven through libqos as a driver would drive them.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "standard-headers/linux/pci_regs.h"
#include "libqos/rnic.h"

static void test_identity(void)
{
    QRnic t;

    qrnic_test_start(&t, NULL);
    g_assert_cmphex(qpci_config_readw(t.dev, PCI_CLASS_DEVICE), ==,
                    RNIC_PCI_CLASS);
    g_assert_cmphex(qpci_config_readb(t.dev, PCI_REVISION_ID), ==,
                    RNIC_PCI_REVISION);
    g_assert_cmphex(qpci_config_readw(t.dev, PCI_SUBSYSTEM_ID), ==,
                    RNIC_PCI_SUBSYS_ID);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_ID), ==, RNIC_ID_MAGIC);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_VERSION), ==, RNIC_VERSION_VALUE);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_STATUS), ==, 0);
    /* Read-only registers ignore writes. */
    qrnic_wr(&t, RNIC_REG_ID, 0xdeadbeef);
    qrnic_wr(&t, RNIC_REG_VERSION, 0xdeadbeef);
    qrnic_wr(&t, RNIC_REG_STATUS, 0xffffffff);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_ID), ==, RNIC_ID_MAGIC);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_VERSION), ==, RNIC_VERSION_VALUE);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_STATUS), ==, 0);
    qrnic_test_stop(&t);
}

static void test_scratch(void)
{
    static const uint32_t patterns[] = { 0xffffffff, 0xa5a5a5a5, 0x1, 0 };
    QRnic t;

    qrnic_test_start(&t, NULL);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_SCRATCH), ==, 0);
    for (size_t i = 0; i < G_N_ELEMENTS(patterns); i++) {
        qrnic_wr(&t, RNIC_REG_SCRATCH, patterns[i]);
        g_assert_cmphex(qrnic_rd(&t, RNIC_REG_SCRATCH), ==, patterns[i]);
    }
    /* System reset returns the scratch register to its reset value. */
    qrnic_wr(&t, RNIC_REG_SCRATCH, 0x12345678);
    qtest_system_reset(t.qts);
    /* Reset clears the BARs too: map them again as firmware would. */
    qpci_device_enable(t.dev);
    t.regs = qpci_iomap(t.dev, RNIC_BAR_REGS, NULL);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_SCRATCH), ==, 0);
    qrnic_test_stop(&t);
}

static void test_unknown_register(void)
{
    QRnic t;

    qrnic_test_start(&t, NULL);
    /* Unknown offsets read as zero and ignore writes, without a crash. */
    qrnic_wr(&t, RNIC_BAR_REGS_SIZE - 4, 0xffffffff);
    g_assert_cmphex(qrnic_rd(&t, RNIC_BAR_REGS_SIZE - 4), ==, 0);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_ID), ==, RNIC_ID_MAGIC);
    qrnic_test_stop(&t);
}

static void test_enable_checks_rings(void)
{
    QRnic t;

    qrnic_test_start(&t, NULL);
    /* No rings: enable is refused. */
    qrnic_wr(&t, RNIC_REG_CONTROL, RNIC_CONTROL_ENABLE);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_STATUS), ==, 0);
    /* A misaligned ring is refused as well. */
    qrnic_wr(&t, RNIC_REG_CMDQ_BASE_LO, 0x100080);
    qrnic_wr(&t, RNIC_REG_CMDQ_LOG_SIZE, 4);
    qrnic_wr(&t, RNIC_REG_EQ_BASE_LO, 0x200000);
    qrnic_wr(&t, RNIC_REG_EQ_LOG_SIZE, 4);
    qrnic_wr(&t, RNIC_REG_CONTROL, RNIC_CONTROL_ENABLE);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_STATUS), ==, 0);
    /* So is a ring that is too large. */
    qrnic_wr(&t, RNIC_REG_CMDQ_BASE_LO, 0x100000);
    qrnic_wr(&t, RNIC_REG_CMDQ_LOG_SIZE, 13);
    qrnic_wr(&t, RNIC_REG_CONTROL, RNIC_CONTROL_ENABLE);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_STATUS), ==, 0);
    /* A doorbell while disabled does nothing. */
    qrnic_wr(&t, RNIC_REG_CMDQ_PROD, 1);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_CMDQ_CONS), ==, 0);

    qrnic_test_enable(&t);
    /* Ring registers are fixed while enabled. */
    qrnic_wr(&t, RNIC_REG_CMDQ_BASE_LO, 0x300000);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_CMDQ_BASE_LO), ==, (uint32_t)t.cmdq);
    /* CONTROL.RESET returns to the reset state. */
    qrnic_wr(&t, RNIC_REG_CONTROL, RNIC_CONTROL_RESET);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_STATUS), ==, 0);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_CONTROL), ==, 0);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_CMDQ_BASE_LO), ==, 0);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_EQ_LOG_SIZE), ==, 0);
    qrnic_test_stop(&t);
}

/*
 * A disabled device's ring registers take any value; the state dump must
 * report them without computing a size from a nonsense log size (UBSan
 * once stopped QEMU here: shift exponent 4294967295).
 */
static void test_state_any_ring_regs(void)
{
    QRnic t;
    QDict *r, *st;

    qrnic_test_start(&t, ",id=r");
    qrnic_wr(&t, RNIC_REG_CMDQ_BASE_LO, 0x100000);
    qrnic_wr(&t, RNIC_REG_CMDQ_LOG_SIZE, 0xffffffff);
    qrnic_wr(&t, RNIC_REG_EQ_BASE_LO, 0x200000);
    qrnic_wr(&t, RNIC_REG_EQ_LOG_SIZE, 32);
    r = qtest_qmp(t.qts, "{'execute': 'qom-get', 'arguments': {"
                  "'path': '/machine/peripheral/r', 'property': 'state'}}");
    st = qdict_get_qdict(r, "return");
    g_assert_nonnull(st);
    g_assert_cmpint(qdict_get_int(qdict_get_qdict(st, "cmdq"), "size"), ==,
                    0);
    g_assert_cmpint(qdict_get_int(qdict_get_qdict(st, "eq"), "size"), ==, 0);
    qobject_unref(r);
    qrnic_wr(&t, RNIC_REG_EQ_LOG_SIZE, 4);
    r = qtest_qmp(t.qts, "{'execute': 'qom-get', 'arguments': {"
                  "'path': '/machine/peripheral/r', 'property': 'state'}}");
    st = qdict_get_qdict(r, "return");
    g_assert_cmpint(qdict_get_int(qdict_get_qdict(st, "eq"), "size"), ==, 16);
    qobject_unref(r);
    qrnic_test_stop(&t);
}

static void test_query_device(void)
{
    struct rnic_cmd_query_device q;
    struct rnic_device_attr attr;
    struct rnic_cmd cmd;
    QRnic t;

    qrnic_test_start(&t, ",max-qps=77,max-cqes=512,mpa-rev=1");
    qrnic_test_enable(&t);
    q.attr_addr = cpu_to_le64(guest_alloc(t.alloc, sizeof(attr)));
    cmd = qrnic_cmd(&t, RNIC_CMD_QUERY_DEVICE, &q, sizeof(q));
    g_assert_cmphex(le16_to_cpu(cmd.status), ==, RNIC_CMD_OK);
    qtest_memread(t.qts, le64_to_cpu(q.attr_addr), &attr, sizeof(attr));
    g_assert_cmphex(le32_to_cpu(attr.abi_version), ==, RNIC_VERSION_VALUE);
    g_assert_cmpuint(le32_to_cpu(attr.max_qp), ==, 77);
    g_assert_cmpuint(le32_to_cpu(attr.max_cqe), ==, 512);
    g_assert_cmpuint(le32_to_cpu(attr.max_sge), ==, RNIC_WQE_MAX_SGE);
    g_assert_cmpuint(le32_to_cpu(attr.max_pdata), ==, RNIC_MAX_PDATA);
    g_assert_cmpuint(le32_to_cpu(attr.mpa_rev), ==, 1);
    g_assert_cmpuint(le32_to_cpu(attr.msix_vectors), ==, RNIC_MSIX_VECTORS);
    /* Every page size from 4 KiB to 2 MiB. */
    g_assert_cmphex(le32_to_cpu(attr.page_size_cap), ==, 0x3ff000);

    /* An attribute buffer outside guest memory gives a status, no crash. */
    q.attr_addr = cpu_to_le64(0xfffffffffffff000ull);
    cmd = qrnic_cmd(&t, RNIC_CMD_QUERY_DEVICE, &q, sizeof(q));
    g_assert_cmphex(le16_to_cpu(cmd.status), ==, RNIC_CMD_ERR_DMA);
    qrnic_test_stop(&t);
}

/*
 * VERSION is 1.2 (a 0.x driver, which checks the major, refuses the 1.x
 * command layouts rather than misreading them); QUERY_DEVICE's mac (QEMU's
 * default scheme, or the property) and max_fast_reg_pages.
 */
static void test_abi_version(void)
{
    static const uint8_t set[6] = { 0x02, 0x00, 0x00, 0xab, 0xcd, 0xef };
    struct rnic_cmd_query_device q;
    struct rnic_device_attr attr;
    QRnic t;

    g_assert_cmphex(RNIC_VERSION_VALUE, ==, 0x00010002);
    for (int i = 0; i < 2; i++) {
        qrnic_test_start(&t, i ? ",mac=02:00:00:ab:cd:ef" : "");
        g_assert_cmphex(qrnic_rd(&t, RNIC_REG_VERSION), ==, 0x00010002);
        qrnic_test_enable(&t);
        q.attr_addr = cpu_to_le64(guest_alloc(t.alloc, sizeof(attr)));
        qrnic_cmd_ok(&t, RNIC_CMD_QUERY_DEVICE, &q, sizeof(q));
        qtest_memread(t.qts, le64_to_cpu(q.attr_addr), &attr, sizeof(attr));
        g_assert_cmpuint(le32_to_cpu(attr.max_fast_reg_pages), ==,
                         RNIC_FAST_REG_MAX_PAGES);
        if (i) {
            g_assert_cmpmem(attr.mac, 6, set, 6);
        } else {
            /* 52:54:00:12:34:56 + n: QEMU's default for NICs */
            g_assert_cmphex(attr.mac[0], ==, 0x52);
            g_assert_cmphex(attr.mac[1], ==, 0x54);
            g_assert_cmphex(attr.mac[2], ==, 0x00);
        }
        qrnic_test_stop(&t);
    }
}

/* ALLOC_MR's and CREATE_QP's new fields are checked like every other. */
static void test_alloc_mr_params(void)
{
    uint32_t pdn, cqn, stag;
    uint64_t ring;
    QRnicQp qp;
    QRnic t;

    qrnic_test_start(&t, ",max-mrs=3");
    qrnic_test_enable(&t);
    pdn = qrnic_create_pd(&t);
    g_assert_cmphex(qrnic_alloc_mr(&t, pdn, 0, 1, 0, &stag), ==,
                    RNIC_CMD_ERR_PARAM);
    g_assert_cmphex(qrnic_alloc_mr(&t, pdn, RNIC_FAST_REG_MAX_PAGES + 1, 1, 0,
                                   &stag), ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmphex(qrnic_alloc_mr(&t, pdn, 4, 1, RNIC_ALLOC_MR_PHYS, &stag),
                    ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmphex(qrnic_alloc_mr(&t, pdn, 4, 1, 0x80, &stag), ==,
                    RNIC_CMD_ERR_PARAM);
    g_assert_cmphex(qrnic_alloc_mr(&t, pdn + 9, 4, 1, 0, &stag), ==,
                    RNIC_CMD_ERR_HANDLE);
    g_assert_cmphex(qrnic_alloc_mr(&t, pdn, RNIC_FAST_REG_MAX_PAGES, 1, 0,
                                   &stag), ==, RNIC_CMD_OK);
    g_assert_cmphex(qrnic_alloc_mr(&t, pdn, 0, 2, RNIC_ALLOC_MR_PHYS, &stag),
                    ==, RNIC_CMD_OK);
    /* max-mrs counts both kinds */
    g_assert_cmphex(qrnic_alloc_mr(&t, pdn, 1, 3, 0, &stag), ==, RNIC_CMD_OK);
    g_assert_cmphex(qrnic_alloc_mr(&t, pdn, 1, 4, 0, &stag), ==,
                    RNIC_CMD_ERR_RESOURCE);
    /* The PD is busy while they exist. */
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_DESTROY_PD, &pdn,
                                     sizeof(pdn)), ==, RNIC_CMD_ERR_BUSY);

    cqn = qrnic_create_cq(&t, 4, 1, &ring);
    g_assert_cmphex(qrnic_try_create_qp_flags(&t, pdn, cqn, cqn, RNIC_NO_SRQ, 3,
                                              0x8000, &qp), ==,
                    RNIC_CMD_ERR_PARAM);
    g_assert_cmphex(qrnic_try_create_qp_flags(&t, pdn, cqn, cqn, RNIC_NO_SRQ, 3,
                                              RNIC_QP_FLAG_KERNEL, &qp), ==,
                    RNIC_CMD_OK);
    qrnic_test_stop(&t);
}

static void test_bad_opcode(void)
{
    struct rnic_cmd cmd;
    QRnic t;

    qrnic_test_start(&t, NULL);
    qrnic_test_enable(&t);
    cmd = qrnic_cmd(&t, 0xee, NULL, 0);
    g_assert_cmphex(le16_to_cpu(cmd.status), ==, RNIC_CMD_ERR_OPCODE);
    cmd = qrnic_cmd(&t, 0, NULL, 0);
    g_assert_cmphex(le16_to_cpu(cmd.status), ==, RNIC_CMD_ERR_OPCODE);
    /* The ring wraps: more commands than entries all complete in order. */
    for (int i = 0; i < (2 << QRNIC_CMDQ_LOG) + 3; i++) {
        cmd = qrnic_cmd(&t, 0xee, NULL, 0);
        g_assert_cmphex(le16_to_cpu(cmd.status), ==, RNIC_CMD_ERR_OPCODE);
    }
    qrnic_test_stop(&t);
}

static void test_unreadable_cmdq_is_fatal(void)
{
    struct rnic_event ev;
    gint64 end = g_get_monotonic_time() + QRNIC_TIMEOUT_US;
    QRnic t;

    qrnic_test_start(&t, NULL);
    qrnic_test_enable(&t);
    /* Move the command ring outside guest memory. */
    qrnic_wr(&t, RNIC_REG_CONTROL, 0);
    qrnic_wr(&t, RNIC_REG_CMDQ_BASE_HI, 0xfffff);
    qrnic_wr(&t, RNIC_REG_CONTROL, RNIC_CONTROL_ENABLE);
    qrnic_wr(&t, RNIC_REG_CMDQ_PROD, 1);
    while (!qrnic_msix_fired(&t, RNIC_MSIX_VEC_ADMIN)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(t.qts, 10000);
    }
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_STATUS) & RNIC_STATUS_FATAL, ==,
                    RNIC_STATUS_FATAL);
    g_assert_cmpuint(qrnic_rd(&t, RNIC_REG_CMDQ_CONS), ==, 0);
    g_assert_true(qrnic_next_event(&t, &ev));
    g_assert_cmpuint(ev.type, ==, RNIC_EV_FATAL);
    g_assert_cmpuint(le32_to_cpu(ev.arg0), ==, RNIC_CMD_ERR_DMA);
    g_assert_false(qrnic_next_event(&t, &ev));
    qrnic_test_stop(&t);
}

/*
 * A command producer index more than a ring ahead is dropped at the
 * write: the device neither runs the garbage it would name nor forgets
 * the command posted before it.
 */
static void test_cmdq_prod_far_ahead(void)
{
    struct rnic_cmd_pd p = { 0 };
    QRnic t;

    qrnic_test_start(&t, NULL);
    qrnic_test_enable(&t);
    qrnic_cmd_queue(&t, RNIC_CMD_CREATE_PD, &p, sizeof(p));
    qrnic_wr(&t, RNIC_REG_CMDQ_PROD, t.cmd_prod);
    qrnic_wr(&t, RNIC_REG_CMDQ_PROD,
             t.cmd_prod + (1u << QRNIC_CMDQ_LOG) + 5);
    qrnic_settle(&t);
    g_assert_cmpuint(qrnic_rd(&t, RNIC_REG_CMDQ_CONS), ==, t.cmd_prod);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_STATUS) & RNIC_STATUS_FATAL, ==, 0);
    qrnic_create_pd(&t);    /* the queue goes on */
    qrnic_test_stop(&t);
}

static void test_pd(void)
{
    struct rnic_cmd_pd p;
    QRnic t;
    uint32_t a, b;

    qrnic_test_start(&t, ",max-pds=2");
    qrnic_test_enable(&t);
    a = qrnic_create_pd(&t);
    b = qrnic_create_pd(&t);
    g_assert_cmpuint(a, !=, b);
    /* The table holds two. */
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_CREATE_PD, NULL, 0), ==,
                    RNIC_CMD_ERR_RESOURCE);
    p.pdn = cpu_to_le32(a);
    qrnic_cmd_ok(&t, RNIC_CMD_DESTROY_PD, &p, sizeof(p));
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_DESTROY_PD, &p, sizeof(p)),
                    !=, RNIC_CMD_OK);
    p.pdn = cpu_to_le32(0xdead);
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_DESTROY_PD, &p, sizeof(p)),
                    !=, RNIC_CMD_OK);
    qrnic_test_stop(&t);
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
    QRnic t;

    qrnic_test_start(&t, NULL);
    qrnic_test_enable(&t);
    pdn = qrnic_create_pd(&t);
    buf = guest_alloc(t.alloc, 3 * 4096);
    g_assert_cmphex(qrnic_reg_mr(&t, pdn, buf, 3 * 4096,
                                 RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_WRITE |
                                 RNIC_ACC_MW_BIND, 0x42, &mr), ==, RNIC_CMD_OK);
    g_assert_cmphex(mr & 0xff, ==, 0x42);
    /* Bad parameters: unknown PD, access bits, page shift. */
    g_assert_cmphex(qrnic_reg_mr(&t, 0x999, buf, 4096, 0, 1, &mr2), ==,
                    RNIC_CMD_ERR_HANDLE);
    g_assert_cmphex(qrnic_reg_mr(&t, pdn, buf, 4096, 0x1000, 1, &mr2), ==,
                    RNIC_CMD_ERR_PARAM);

    /* A type 1 window bound to a part of the region gets a new key. */
    aw.pdn = cpu_to_le32(pdn);
    cmd = qrnic_cmd_ok(&t, RNIC_CMD_ALLOC_MW, &aw, sizeof(aw));
    mw = le32_to_cpu(((struct rnic_cmd_alloc_mw *)cmd.u.raw)->stag);
    bw = (struct rnic_cmd_bind_mw) {
        .mw_stag = cpu_to_le32(mw),
        .mr_stag = cpu_to_le32(mr),
        .addr = cpu_to_le64(0x7f0000000000ull + 4096),
        .length = cpu_to_le64(4096),
        .access = cpu_to_le32(RNIC_ACC_REMOTE_WRITE),
        .key = 0x12,
    };
    cmd = qrnic_cmd_ok(&t, RNIC_CMD_BIND_MW, &bw, sizeof(bw));
    bw = *(struct rnic_cmd_bind_mw *)cmd.u.raw;
    g_assert_cmphex(le32_to_cpu(bw.new_stag), ==, (mw & ~0xffu) | 0x12);
    /* A range outside the region is refused. */
    bw.mw_stag = cpu_to_le32((mw & ~0xffu) | 0x12);
    bw.key = 0x13;
    bw.length = cpu_to_le64(3 * 4096);
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_BIND_MW, &bw, sizeof(bw)),
                    !=, RNIC_CMD_OK);
    /* The region cannot go while the window is bound, nor its PD. */
    st.stag = cpu_to_le32(mr);
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_DEREG_MR, &st, sizeof(st)),
                    ==, RNIC_CMD_ERR_BUSY);
    pd.pdn = cpu_to_le32(pdn);
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_DESTROY_PD, &pd, sizeof(pd)),
                    ==, RNIC_CMD_ERR_BUSY);
    /*
     * DEALLOC_MW names the window by its index, any key (a bind through a
     * send queue changes the key without the driver hearing); a region is
     * not a window.
     */
    st.stag = cpu_to_le32(mr);
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_DEALLOC_MW, &st, sizeof(st)),
                    ==, RNIC_CMD_ERR_HANDLE);
    st.stag = cpu_to_le32(mw);
    qrnic_cmd_ok(&t, RNIC_CMD_DEALLOC_MW, &st, sizeof(st));
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_DEALLOC_MW, &st, sizeof(st)),
                    ==, RNIC_CMD_ERR_HANDLE);
    /* Local invalidate, then the stale STag is unknown to DEREG. */
    st.stag = cpu_to_le32(mr);
    qrnic_cmd_ok(&t, RNIC_CMD_INVALIDATE, &st, sizeof(st));
    qrnic_cmd_ok(&t, RNIC_CMD_DEREG_MR, &st, sizeof(st));
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_DEREG_MR, &st, sizeof(st)),
                    ==, RNIC_CMD_ERR_HANDLE);
    qrnic_cmd_ok(&t, RNIC_CMD_DESTROY_PD, &pd, sizeof(pd));
    qrnic_test_stop(&t);
}

static void test_reg_mr_bad_page_list(void)
{
    struct rnic_cmd_reg_mr p = {
        .length = cpu_to_le64(4096),
        .pbl_addr = cpu_to_le64(0xffffffff00000000ull),
        .npages = cpu_to_le32(1),
        .page_shift = 12,
    };
    QRnic t;

    qrnic_test_start(&t, NULL);
    qrnic_test_enable(&t);
    p.pdn = cpu_to_le32(qrnic_create_pd(&t));
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_REG_MR, &p, sizeof(p)), ==,
                    RNIC_CMD_ERR_DMA);
    p.npages = 0;
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_REG_MR, &p, sizeof(p)), ==,
                    RNIC_CMD_ERR_PARAM);
    /* Larger than QUERY_DEVICE's max_mr_size. */
    p.npages = cpu_to_le32(1);
    p.length = cpu_to_le64(1ull << 32);
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_REG_MR, &p, sizeof(p)), ==,
                    RNIC_CMD_ERR_PARAM);
    qrnic_test_stop(&t);
}

static void test_cq_qp_lifecycle(void)
{
    struct rnic_cmd_cq dc;
    struct rnic_cmd_qp dq;
    uint32_t pdn, cqn, qpn;
    uint64_t ring;
    QRnicQp qp, qp2;
    QRnic t;

    qrnic_test_start(&t, NULL);
    qrnic_test_enable(&t);
    pdn = qrnic_create_pd(&t);
    cqn = qrnic_create_cq(&t, 4, 1, &ring);
    /* Vector 0 belongs to the admin queue; unknown CQs are refused. */
    dc = (struct rnic_cmd_cq) {
        .ring_addr = cpu_to_le64(ring), .log_size = 4, .msix_vector = 0,
    };
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_CREATE_CQ, &dc, sizeof(dc)),
                    ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmphex(qrnic_try_create_qp(&t, pdn, cqn, 77, 3, &qp), ==,
                    RNIC_CMD_ERR_HANDLE);
    g_assert_cmphex(qrnic_try_create_qp(&t, pdn, cqn, cqn, 3, &qp), ==,
                    RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_query_qp_state(&t, qp.qpn), ==, RNIC_QPS_IDLE);
    /* A CQ in use cannot be destroyed. */
    dc.cqn = cpu_to_le32(cqn);
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_DESTROY_CQ, &dc, sizeof(dc)),
                    ==, RNIC_CMD_ERR_BUSY);
    /*
     * IDLE -> RTS is not the driver's to ask; IDLE -> ERROR -> IDLE is,
     * and ERROR again in ERROR does nothing, as in the verbs.
     */
    qrnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_RTS, RNIC_CMD_ERR_PARAM);
    qrnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_IDLE, RNIC_CMD_ERR_STATE);
    qrnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_ERROR, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_query_qp_state(&t, qp.qpn), ==, RNIC_QPS_ERROR);
    qrnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_ERROR, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_query_qp_state(&t, qp.qpn), ==, RNIC_QPS_ERROR);
    qrnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_IDLE, RNIC_CMD_OK);

    /* A destroyed QP's number stays in timewait: the next QP gets another. */
    qpn = qp.qpn;
    dq.qpn = cpu_to_le32(qpn);
    qrnic_cmd_ok(&t, RNIC_CMD_DESTROY_QP, &dq, sizeof(dq));
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_QUERY_QP, &dq, sizeof(dq)),
                    ==, RNIC_CMD_ERR_HANDLE);
    g_assert_cmphex(qrnic_try_create_qp(&t, pdn, cqn, cqn, 3, &qp2), ==,
                    RNIC_CMD_OK);
    g_assert_cmpuint(qp2.qpn, !=, qpn);
    dq.qpn = cpu_to_le32(qp2.qpn);
    qrnic_cmd_ok(&t, RNIC_CMD_DESTROY_QP, &dq, sizeof(dq));
    qrnic_cmd_ok(&t, RNIC_CMD_DESTROY_CQ, &dc, sizeof(dc));
    qrnic_test_stop(&t);
}

/*
 * A device with a PD (its number in *@pdn unless NULL), a CQ of 8 entries
 * on MSI-X @vector and a QP of 8+8 entries using it; returns the cqn.
 */
static uint32_t start_with_qp_pd(QRnic *t, uint8_t vector, uint64_t *ring,
                                 QRnicQp *qp, uint32_t *pdn_out)
{
    uint32_t pdn, cqn;

    qrnic_test_start(t, NULL);
    qrnic_test_enable(t);
    pdn = qrnic_create_pd(t);
    if (pdn_out) {
        *pdn_out = pdn;
    }
    cqn = qrnic_create_cq(t, 3, vector, ring);
    g_assert_cmphex(qrnic_try_create_qp(t, pdn, cqn, cqn, 3, qp), ==,
                    RNIC_CMD_OK);
    return cqn;
}

static uint32_t start_with_qp(QRnic *t, uint8_t vector, uint64_t *ring,
                              QRnicQp *qp)
{
    return start_with_qp_pd(t, vector, ring, qp, NULL);
}

/*
 * A receive posted to a QP in ERROR is flushed at once and links no STag:
 * its region can still get a window, which a linked region cannot.
 */
static void test_flushed_recv_links_nothing(void)
{
    struct rnic_cmd_alloc_mw aw = { .type = 1, .key = 1 };
    struct rnic_rq_wqe w = { .wr_id = cpu_to_le64(0x51) };
    struct rnic_cmd_bind_mw bw;
    struct rnic_cq_entry e;
    struct rnic_cmd cmd;
    uint32_t pdn, mr;
    uint64_t ring, buf;
    QRnicQp qp;
    QRnic t;

    start_with_qp_pd(&t, 2, &ring, &qp, &pdn);
    buf = guest_alloc(t.alloc, 4096);
    g_assert_cmphex(qrnic_reg_mr(&t, pdn, buf, 4096, RNIC_ACC_LOCAL_WRITE |
                                 RNIC_ACC_MW_BIND, 0x42, &mr), ==, RNIC_CMD_OK);
    qrnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_ERROR, RNIC_CMD_OK);
    w.linked_stag = cpu_to_le32(mr);
    qrnic_post_recv(&t, &qp, &w);
    qrnic_settle(&t);
    g_assert_true(qrnic_read_cqe(&t, ring, 3, 0, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x51);
    g_assert_cmpuint(e.status, ==, RNIC_CQE_WR_FLUSH_ERR);
    aw.pdn = cpu_to_le32(pdn);
    cmd = qrnic_cmd_ok(&t, RNIC_CMD_ALLOC_MW, &aw, sizeof(aw));
    bw = (struct rnic_cmd_bind_mw) {
        .mw_stag = ((struct rnic_cmd_alloc_mw *)cmd.u.raw)->stag,
        .mr_stag = cpu_to_le32(mr),
        .addr = cpu_to_le64(0x7f0000000000ull),
        .length = cpu_to_le64(4096),
        .access = cpu_to_le32(RNIC_ACC_REMOTE_READ),
        .key = 2,
    };
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_BIND_MW, &bw, sizeof(bw)),
                    ==, RNIC_CMD_OK);
    qrnic_test_stop(&t);
}

/* Receives posted to an unconnected QP are flushed when it goes to ERROR. */
static void test_flush_to_guest_cq(void)
{
    struct rnic_cq_entry e;
    uint32_t cqn;
    uint64_t ring;
    QRnicQp qp;
    QRnic t;

    cqn = start_with_qp(&t, 2, &ring, &qp);
    for (int i = 0; i < 5; i++) {
        struct rnic_rq_wqe w = { .wr_id = cpu_to_le64(0x100 + i) };

        qrnic_post_recv(&t, &qp, &w);
    }
    qrnic_settle(&t);
    g_assert_false(qrnic_read_cqe(&t, ring, 3, 0, &e));
    qrnic_wr(&t, RNIC_REG_DB_CQ_ARM, cqn | RNIC_DB_ARM_NEXT);
    qrnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_ERROR, RNIC_CMD_OK);
    for (int i = 0; i < 5; i++) {
        g_assert_true(qrnic_read_cqe(&t, ring, 3, i, &e));
        g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x100 + i);
        g_assert_cmpuint(e.status, ==, RNIC_CQE_WR_FLUSH_ERR);
        g_assert_cmpuint(e.opcode, ==, RNIC_WQE_RECV);
        g_assert_cmpuint(le32_to_cpu(e.qpn), ==, qp.qpn);
    }
    g_assert_false(qrnic_read_cqe(&t, ring, 3, 5, &e));
    g_assert_true(qrnic_msix_fired(&t, 2));
    /* A receive posted in ERROR completes at once with a flush. */
    {
        struct rnic_rq_wqe w = { .wr_id = cpu_to_le64(0x200) };

        qrnic_post_recv(&t, &qp, &w);
    }
    qrnic_settle(&t);
    g_assert_true(qrnic_read_cqe(&t, ring, 3, 5, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x200);
    g_assert_cmpuint(e.status, ==, RNIC_CQE_WR_FLUSH_ERR);
    /* Not armed again: no second interrupt. */
    g_assert_false(qrnic_msix_fired(&t, 2));
    qrnic_test_stop(&t);
}

/* A CQ of two entries on MSI-X vector 3, a QP of 4+4 entries using it. */
static uint32_t start_with_cq_of_two(QRnic *t, uint64_t *ring, QRnicQp *qp)
{
    uint32_t pdn, cqn;

    qrnic_test_start(t, NULL);
    qrnic_test_enable(t);
    pdn = qrnic_create_pd(t);
    cqn = qrnic_create_cq(t, 1, 3, ring);
    g_assert_cmphex(qrnic_try_create_qp(t, pdn, cqn, cqn, 2, qp), ==,
                    RNIC_CMD_OK);
    return cqn;
}

/*
 * Completions made before an arm but written to the guest's ring after it
 * (they waited in the device for room) interrupt: the guest sees them as
 * new.  Without that, a driver that armed and found its ring empty would
 * sleep forever (rping's client did, between the data path making a
 * completion and the bottom half writing it).
 */
static void test_arm_with_waiting_completions(void)
{
    struct rnic_cq_entry e;
    uint64_t ring;
    QRnicQp qp;
    QRnic t;
    uint32_t cqn = start_with_cq_of_two(&t, &ring, &qp);

    for (int i = 0; i < 4; i++) {
        struct rnic_rq_wqe w = { .wr_id = cpu_to_le64(0x100 + i) };

        if (i == 2) {
            /* Two flushes fill the ring of two... */
            qrnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_ERROR, RNIC_CMD_OK);
            g_assert_true(qrnic_read_cqe(&t, ring, 1, 1, &e));
        }
        qrnic_post_recv(&t, &qp, &w);
    }
    /* ... and two more wait in the device for room. */
    qrnic_settle(&t);
    g_assert_false(qrnic_read_cqe(&t, ring, 1, 2, &e));
    g_assert_false(qrnic_msix_fired(&t, 3));
    qrnic_wr(&t, RNIC_REG_DB_CQ_ARM, cqn | RNIC_DB_ARM_NEXT);
    qrnic_wr(&t, RNIC_REG_DB_CQ, RNIC_DB_VALUE(cqn, 2));
    qrnic_settle(&t);
    g_assert_true(qrnic_read_cqe(&t, ring, 1, 2, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x102);
    g_assert_true(qrnic_msix_fired(&t, 3));
    qrnic_test_stop(&t);
}

/*
 * An arm used up while the guest's ring is full: the interrupt waits for
 * the completion to be in the ring.  Raised before, it would find nothing
 * new, and the completion written when the guest makes room would come
 * with no interrupt at all.
 */
static void test_arm_with_ring_full(void)
{
    struct rnic_cq_entry e;
    uint64_t ring;
    QRnicQp qp;
    QRnic t;
    uint32_t cqn = start_with_cq_of_two(&t, &ring, &qp);

    qrnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_ERROR, RNIC_CMD_OK);
    for (int i = 0; i < 2; i++) {
        struct rnic_rq_wqe w = { .wr_id = cpu_to_le64(0x100 + i) };

        qrnic_post_recv(&t, &qp, &w);
    }
    qrnic_settle(&t);
    g_assert_true(qrnic_read_cqe(&t, ring, 1, 1, &e));
    g_assert_false(qrnic_msix_fired(&t, 3));
    /* the ring of two is full: the next completion waits in the device */
    qrnic_wr(&t, RNIC_REG_DB_CQ_ARM, cqn | RNIC_DB_ARM_NEXT);
    qrnic_post_recv(&t, &qp, &(struct rnic_rq_wqe) {
                        .wr_id = cpu_to_le64(0x102) });
    qrnic_settle(&t);
    g_assert_false(qrnic_read_cqe(&t, ring, 1, 2, &e));
    g_assert_false(qrnic_msix_fired(&t, 3));
    qrnic_wr(&t, RNIC_REG_DB_CQ, RNIC_DB_VALUE(cqn, 2));
    qrnic_settle(&t);
    g_assert_true(qrnic_read_cqe(&t, ring, 1, 2, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x102);
    g_assert_true(qrnic_msix_fired(&t, 3));
    qrnic_test_stop(&t);
}

static bool wait_cqe(QRnic *t, uint64_t ring, uint8_t log, uint32_t index,
                     struct rnic_cq_entry *e)
{
    for (int n = 0; n < 500; n++) {
        if (qrnic_read_cqe(t, ring, log, index, e)) {
            return true;
        }
        qrnic_settle(t);
    }
    return false;
}

/*
 * Doorbells written back to back, without waiting in between, are all
 * acted on, each work request exactly once (with an IOThread they go
 * through the mailbox of rnic-db.c, where a newer index replaces an older
 * one); doorbells for queues that do not exist, inside and outside the id
 * range, change nothing; completions that waited for room in the CQ ring
 * follow the CQ's consumer doorbell.
 */
static void test_doorbell_burst(void)
{
    struct rnic_cq_entry e;
    uint64_t ring;
    QRnicQp qp;
    QRnic t;
    uint32_t cqn = start_with_qp(&t, 2, &ring, &qp);   /* 8 CQEs, 8 WQEs */

    qrnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_ERROR, RNIC_CMD_OK);
    for (int i = 0; i < 16; i++) {
        struct rnic_rq_wqe w = { .wr_id = cpu_to_le64(0x100 + i) };

        if (i == 8) {
            /* The first 8 flushed fill the CQ ring; the next 8 wait. */
            for (int j = 0; j < 8; j++) {
                g_assert_true(wait_cqe(&t, ring, 3, j, &e));
                g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x100 + j);
                g_assert_cmpuint(e.status, ==, RNIC_CQE_WR_FLUSH_ERR);
            }
        }
        qrnic_post_recv(&t, &qp, &w);
        qrnic_wr(&t, RNIC_REG_DB_RQ, RNIC_DB_VALUE(qp.qpn + 1, i));
        qrnic_wr(&t, RNIC_REG_DB_SQ, RNIC_DB_VALUE(0xffff, i));
        qrnic_wr(&t, RNIC_REG_DB_CQ, RNIC_DB_VALUE(cqn + 1, i));
    }
    qrnic_settle(&t);
    g_assert_false(qrnic_read_cqe(&t, ring, 3, 8, &e));
    qrnic_wr(&t, RNIC_REG_DB_CQ, RNIC_DB_VALUE(cqn, 8));
    for (int i = 8; i < 16; i++) {
        g_assert_true(wait_cqe(&t, ring, 3, i, &e));
        g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x100 + i);
    }
    qrnic_wr(&t, RNIC_REG_DB_CQ, RNIC_DB_VALUE(cqn, 16));
    qrnic_settle(&t);
    g_assert_false(qrnic_read_cqe(&t, ring, 3, 16, &e));
    qrnic_test_stop(&t);
}

/*
 * Queues of no page (the kernel's) are rung through none, not even the one
 * their number had before (a CQ number comes back, the lowest free).
 */
static void doorbell_pages_reuse(QRnic *t, uint32_t pdn, uint32_t cqn,
                                 uint32_t qpn)
{
    struct rnic_cmd_qp dq = { .qpn = cpu_to_le32(qpn) };
    struct rnic_cmd_cq dc = { .cqn = cpu_to_le32(cqn) };
    struct rnic_rq_wqe w = { .wr_id = cpu_to_le64(0x200) };
    struct rnic_cq_entry e;
    uint64_t ring;
    QRnicQp qp;

    qrnic_cmd_ok(t, RNIC_CMD_DESTROY_QP, &dq, sizeof(dq));
    qrnic_cmd_ok(t, RNIC_CMD_DESTROY_CQ, &dc, sizeof(dc));
    t->udb = 0;
    g_assert_cmpuint(qrnic_create_cq(t, 3, 4, &ring), ==, cqn);
    g_assert_cmphex(qrnic_try_create_qp(t, pdn, cqn, cqn, 2, &qp), ==,
                    RNIC_CMD_OK);
    qrnic_modify_qp_state(t, qp.qpn, RNIC_QPS_ERROR, RNIC_CMD_OK);
    qtest_memwrite(t->qts, qp.rq, &w, sizeof(w));
    qrnic_udb_wr(t, 1, RNIC_REG_DB_CQ_ARM, cqn | RNIC_DB_ARM_NEXT);
    qrnic_udb_wr(t, 1, RNIC_REG_DB_RQ, RNIC_DB_VALUE(qp.qpn, 1));
    qrnic_settle(t);
    g_assert_false(qrnic_read_cqe(t, ring, 3, 0, &e));
    qrnic_wr(t, RNIC_REG_DB_RQ, RNIC_DB_VALUE(qp.qpn, 1));
    g_assert_true(wait_cqe(t, ring, 3, 0, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x200);
    qrnic_settle(t);
    g_assert_false(qrnic_msix_fired(t, 4));
}

/*
 * Doorbell pages: a queue created with udb = n + 1 is rung
 * through page n of BAR 4 (and BAR 0, the kernel's), never through another
 * page; a doorbell through another page does nothing.  (That it cannot
 * displace the owner's from the IOThread's mailbox depends on the drain's
 * timing, which a qtest does not control: rnic_db_post() checks the owner
 * before it mails.)
 */
static void test_doorbell_pages(void)
{
    struct rnic_cmd_query_device q;
    struct rnic_device_attr attr;
    struct rnic_cq_entry e;
    uint32_t pdn, cqn;
    uint64_t ring;
    QRnicQp qp, bad;
    QRnic t;

    qrnic_test_start(&t, ",udb-pages=4");
    qrnic_test_enable(&t);
    q.attr_addr = cpu_to_le64(guest_alloc(t.alloc, sizeof(attr)));
    qrnic_cmd_ok(&t, RNIC_CMD_QUERY_DEVICE, &q, sizeof(q));
    qtest_memread(t.qts, le64_to_cpu(q.attr_addr), &attr, sizeof(attr));
    g_assert_cmpuint(le32_to_cpu(attr.udb_pages), ==, 4);
    g_assert_cmphex(qrnic_udb_rd(&t, 3, RNIC_REG_DB_SQ), ==, 0);
    g_assert_cmpuint(t.udb_size, ==, 4 * RNIC_UDB_PAGE_SIZE);
    pdn = qrnic_create_pd(&t);
    t.udb = 5;                  /* page 4: beyond the BAR */
    g_assert_cmphex(qrnic_try_create_qp(&t, pdn, 1, 1, 2, &bad), ==,
                    RNIC_CMD_ERR_HANDLE);
    t.udb = 2;                  /* page 1 */
    cqn = qrnic_create_cq(&t, 3, 3, &ring);
    g_assert_cmphex(qrnic_try_create_qp(&t, pdn, cqn, cqn, 2, &qp), ==,
                    RNIC_CMD_OK);
    t.udb = 5;
    g_assert_cmphex(qrnic_try_create_qp(&t, pdn, cqn, cqn, 2, &bad), ==,
                    RNIC_CMD_ERR_PARAM);
    qrnic_modify_qp_state(&t, qp.qpn, RNIC_QPS_ERROR, RNIC_CMD_OK);
    for (int i = 0; i < 3; i++) {
        struct rnic_rq_wqe w = { .wr_id = cpu_to_le64(0x100 + i) };

        qtest_memwrite(t.qts, qp.rq + i * RNIC_RQ_WQE_SIZE, &w, sizeof(w));
    }
    /* Another page, and a write beside the doorbells: nothing. */
    qrnic_udb_wr(&t, 0, RNIC_REG_DB_RQ, RNIC_DB_VALUE(qp.qpn, 1));
    qrnic_udb_wr(&t, 1, RNIC_REG_ID, RNIC_DB_VALUE(qp.qpn, 1));
    qrnic_settle(&t);
    g_assert_false(qrnic_read_cqe(&t, ring, 3, 0, &e));
    /* The owner's page, then at once another's: the owner's counts. */
    qrnic_udb_wr(&t, 1, RNIC_REG_DB_RQ, RNIC_DB_VALUE(qp.qpn, 2));
    qrnic_udb_wr(&t, 3, RNIC_REG_DB_RQ, RNIC_DB_VALUE(qp.qpn, 3));
    g_assert_true(wait_cqe(&t, ring, 3, 1, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x101);
    qrnic_settle(&t);
    g_assert_false(qrnic_read_cqe(&t, ring, 3, 2, &e));
    /* Arming through another page arms nothing; through BAR 0 it does. */
    qrnic_udb_wr(&t, 0, RNIC_REG_DB_CQ_ARM, cqn | RNIC_DB_ARM_NEXT);
    qrnic_udb_wr(&t, 1, RNIC_REG_DB_CQ, RNIC_DB_VALUE(cqn, 2));
    qrnic_wr(&t, RNIC_REG_DB_RQ, RNIC_DB_VALUE(qp.qpn, 3));
    g_assert_true(wait_cqe(&t, ring, 3, 2, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x102);
    g_assert_false(qrnic_msix_fired(&t, 3));
    qrnic_udb_wr(&t, 1, RNIC_REG_DB_CQ_ARM, cqn | RNIC_DB_ARM_NEXT);
    qtest_memwrite(t.qts, qp.rq + 3 * RNIC_RQ_WQE_SIZE,
                   &(struct rnic_rq_wqe){ .wr_id = cpu_to_le64(0x103) },
                   sizeof(struct rnic_rq_wqe));
    qrnic_udb_wr(&t, 1, RNIC_REG_DB_RQ, RNIC_DB_VALUE(qp.qpn, 4));
    g_assert_true(wait_cqe(&t, ring, 3, 3, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0x103);
    qrnic_settle(&t);
    g_assert_true(qrnic_msix_fired(&t, 3));
    doorbell_pages_reuse(&t, pdn, cqn, qp.qpn);
    qrnic_test_stop(&t);
}

/*
 * A malformed send WQE gives LOC_QP_OP_ERR with the entry's own opcode,
 * QP_ERROR and a QP in ERROR; one of unknown opcode reports SEND.
 */
static void test_bad_wqe(void)
{
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(0xbad),
        .opcode = RNIC_WQE_READ,
        .flags = RNIC_WQE_FLAG_SIGNALED,
        .num_sge = 2,           /* a Read has one sink */
    };
    struct rnic_cq_entry e;
    struct rnic_event ev;
    uint64_t ring;
    QRnicQp qp;
    QRnic t;

    start_with_qp(&t, 3, &ring, &qp);
    qrnic_post_send(&t, &qp, &w);
    qrnic_settle(&t);
    g_assert_true(qrnic_read_cqe(&t, ring, 3, 0, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0xbad);
    g_assert_cmpuint(e.status, ==, RNIC_CQE_LOC_QP_OP_ERR);
    g_assert_cmpuint(e.opcode, ==, RNIC_WQE_READ);
    g_assert_true(qrnic_next_event(&t, &ev));
    g_assert_cmpuint(ev.type, ==, RNIC_EV_QP_ERROR);
    g_assert_cmpuint(le32_to_cpu(ev.id), ==, qp.qpn);
    g_assert_cmpuint(qrnic_query_qp_state(&t, qp.qpn), ==, RNIC_QPS_ERROR);
    w.opcode = 0x55;
    w.wr_id = cpu_to_le64(0xbad2);
    qrnic_post_send(&t, &qp, &w);
    qrnic_settle(&t);
    g_assert_true(qrnic_read_cqe(&t, ring, 3, 1, &e));
    g_assert_cmphex(le64_to_cpu(e.wr_id), ==, 0xbad2);
    g_assert_cmpuint(e.status, ==, RNIC_CQE_LOC_QP_OP_ERR);
    g_assert_cmpuint(e.opcode, ==, RNIC_WQE_SEND);
    /* A doorbell for a QP that does not exist is ignored. */
    qrnic_wr(&t, RNIC_REG_DB_SQ, RNIC_DB_VALUE(0x7777, 1));
    qrnic_settle(&t);
    g_assert_false(qrnic_read_cqe(&t, ring, 3, 2, &e));
    qrnic_test_stop(&t);
}

/*
 * A TCP connection made outside QEMU, handed to device "r" (a responder:
 * it waits for the MPA Request).  Returns the test's end; *lfd is the
 * listener it came through.
 */
static int handoff_connection(QTestState *qts, int *lfd)
{
    uint16_t port;
    int outside, inside;

    *lfd = qrnic_tcp_listen(&port);
    outside = qrnic_tcp_connect(port, 0);
    inside = qrnic_tcp_accept(*lfd);
    qtest_qmp_fds_assert_success(qts, &inside, 1,
        "{'execute': 'getfd', 'arguments': {'fdname': 'c'}}");
    qtest_qmp_assert_success(qts, "{'execute': 'qom-set', 'arguments': {"
        "'path': '/machine/peripheral/r', 'property': 'handoff-fd', "
        "'value': 'c'}}");
    close(inside);
    return outside;
}

/*
 * Hot-unplug from a PCIe root port (native hotplug, the test playing the
 * guest that powers the slot off) while the device holds a connection
 * handed in by the host: the device goes and the connection is closed,
 * and the device's own IOThread stops.
 */
static void test_hot_unplug(void)
{
    QTestState *qts = qtest_init(
        "-M q35 -nodefaults -name debug-threads=on "
        "-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off "
        "-device pcie-root-port,id=rp0,bus=pcie.0,addr=0x2,chassis=1 "
        "-device rnic,id=r,bus=rp0");
    QPCIBus *bus = qpci_new_pc(qts, NULL);
    QPCIDevice *rp = qpci_device_find(bus, QPCI_DEVFN(2, 0));
    int lfd, outside;
    uint8_t exp, b;
    struct timeval tv = { .tv_sec = 5 };

    g_assert_nonnull(rp);
    g_assert_cmpint(qrnic_iothreads(qts, NULL), ==, 1);
    outside = handoff_connection(qts, &lfd);

    qtest_qmp_device_del_send(qts, "r");
    /* The guest's part: power the slot off. */
    exp = qpci_find_capability(rp, PCI_CAP_ID_EXP, 0);
    g_assert_cmpuint(exp, !=, 0);
    qpci_config_writew(rp, exp + PCI_EXP_SLTCTL,
                       qpci_config_readw(rp, exp + PCI_EXP_SLTCTL) |
                       PCI_EXP_SLTCTL_PWR_OFF);
    qtest_qmp_eventwait(qts, "DEVICE_DELETED");
    /* The handed-in connection died with the device. */
    setsockopt(outside, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    g_assert_cmpint(read(outside, &b, 1), ==, 0);
    close(outside);
    close(lfd);
    g_assert_cmpint(qrnic_iothreads(qts, NULL), ==, 0);
    g_free(rp);
    qpci_free_pc(bus);
    qtest_quit(qts);
}

/* Polling spells QEMU logged in @log past @from: run_poll_handlers_begin */
static int poll_spells(const char *log, size_t from)
{
    g_autofree char *text = NULL;
    size_t len;
    int n = 0;

    g_assert_true(g_file_get_contents(log, &text, &len, NULL));
    for (char *p = text + MIN(from, len);
         (p = strstr(p, "run_poll_handlers_begin")); p++) {
        n++;
    }
    return n;
}

/*
 * An IOThread named with iothread= polls as its poll-max-ns says while
 * the device's sockets are on it (rnic-poll.c): QEMU polls a context only
 * while every handler on it can be polled, and a socket registered as
 * such turned polling off for the whole IOThread.  A handed-in connection
 * waits for its peer's MPA Request, which the test sends an octet at a
 * time: each wakes the IOThread, which then polls before it sleeps again
 * (QEMU logs each spell to -D).
 */
static void test_iothread_polls(void)
{
    static const char key[] = "MPA ID Req Frame";
    g_autofree char *log = g_build_filename(g_get_tmp_dir(),
                                            "rnic-poll-XXXXXX", NULL);
    int fd = g_mkstemp(log), lfd, outside, spells = 0;
    QTestState *qts;
    struct stat st;

    g_assert_cmpint(fd, >=, 0);
    close(fd);
    qts = qtest_initf("-M q35 -nodefaults "
                      "-object iothread,id=io0,poll-max-ns=100000000 "
                      "-device rnic,id=r,iothread=io0 "
                      "-D %s -trace run_poll_handlers_begin", log);
    outside = handoff_connection(qts, &lfd);
    g_assert_cmpint(stat(log, &st), ==, 0);
    /* Until it polled a few times, or the key's octets ran out. */
    for (size_t i = 0; i < strlen(key) && spells < 4; i++) {
        g_assert_cmpint(write(outside, &key[i], 1), ==, 1);
        g_usleep(20 * 1000);
        spells = poll_spells(log, st.st_size);
    }
    g_assert_cmpint(spells, >=, 4);
    close(outside);
    close(lfd);
    qtest_quit(qts);
    unlink(log);
}

/*
 * sock-buf: 0 (the kernel's autotuning) or 4 KiB to 1 GiB; anything else
 * fails realize, so device_add says why and adds nothing.
 */
static void test_sock_buf_bounds(void)
{
    static const int64_t bad[] = { 1, 4095, 1073741825 };
    QTestState *qts = qtest_init(
        "-M q35 -nodefaults "
        "-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off "
        "-device pcie-root-port,id=rp0,bus=pcie.0,addr=0x2,chassis=1");
    QDict *rsp;

    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        rsp = qtest_qmp(qts, "{'execute': 'device_add', 'arguments': {"
                        "'driver': 'rnic', 'bus': 'rp0', 'id': 'r', "
                        "'sock-buf': %" PRId64 "}}", bad[i]);
        g_assert_true(qdict_haskey(rsp, "error"));
        g_assert_nonnull(strstr(qdict_get_str(qdict_get_qdict(rsp, "error"),
                                              "desc"), "sock-buf must be"));
        qobject_unref(rsp);
    }
    qtest_qmp_assert_success(qts, "{'execute': 'device_add', 'arguments': {"
                             "'driver': 'rnic', 'bus': 'rp0', 'id': 'r', "
                             "'sock-buf': 4096}}");
    rsp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments': {"
                    "'path': '/machine/peripheral/r', 'property': "
                    "'sock-buf'}}");
    g_assert_cmpint(qdict_get_int(rsp, "return"), ==, 4096);
    qobject_unref(rsp);
    qtest_quit(qts);
}

/* SRQs: create, share between QPs, refuse to die while used. */
static void test_srq(void)
{
    struct rnic_cmd_srq sq = { .log_size = 3 };
    struct rnic_cmd_qp q;
    struct rnic_cq_entry e;
    struct rnic_cmd cmd;
    uint32_t pdn, pdn2, cqn, srqn, qpn;
    uint64_t ring;
    QRnic t;

    qrnic_test_start(&t, NULL);
    qrnic_test_enable(&t);
    pdn = qrnic_create_pd(&t);
    pdn2 = qrnic_create_pd(&t);
    cqn = qrnic_create_cq(&t, 3, 1, &ring);
    sq.pdn = cpu_to_le32(pdn);
    sq.ring_addr = cpu_to_le64(guest_alloc(t.alloc, 4096));
    cmd = qrnic_cmd_ok(&t, RNIC_CMD_CREATE_SRQ, &sq, sizeof(sq));
    srqn = le32_to_cpu(((struct rnic_cmd_srq *)cmd.u.raw)->srqn);
    q = (struct rnic_cmd_qp) {
        .pdn = cpu_to_le32(pdn),
        .send_cqn = cpu_to_le32(cqn),
        .recv_cqn = cpu_to_le32(cqn),
        .srqn = cpu_to_le32(srqn),
        .sq_addr = cpu_to_le64(guest_alloc(t.alloc, 4096)),
        .sq_log_size = 3,
    };
    cmd = qrnic_cmd_ok(&t, RNIC_CMD_CREATE_QP, &q, sizeof(q));
    qpn = le32_to_cpu(((struct rnic_cmd_qp *)cmd.u.raw)->qpn);
    /* An SRQ of another PD is refused; so is an unknown SRQ. */
    q.pdn = cpu_to_le32(pdn2);
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_CREATE_QP, &q, sizeof(q)),
                    ==, RNIC_CMD_ERR_ACCESS);
    q.srqn = cpu_to_le32(99);
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_CREATE_QP, &q, sizeof(q)),
                    ==, RNIC_CMD_ERR_HANDLE);
    /* The QP has no RQ of its own: its RQ doorbell is ignored. */
    qrnic_wr(&t, RNIC_REG_DB_RQ, RNIC_DB_VALUE(qpn, 1));
    qrnic_settle(&t);
    g_assert_false(qrnic_read_cqe(&t, ring, 3, 0, &e));
    /* Busy while the QP uses it. */
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_DESTROY_SRQ, &sq, sizeof(sq)),
                    ==, RNIC_CMD_ERR_HANDLE);
    sq.srqn = cpu_to_le32(srqn);
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_DESTROY_SRQ, &sq, sizeof(sq)),
                    ==, RNIC_CMD_ERR_BUSY);
    q.qpn = cpu_to_le32(qpn);
    qrnic_cmd_ok(&t, RNIC_CMD_DESTROY_QP, &q, sizeof(q));
    qrnic_cmd_ok(&t, RNIC_CMD_DESTROY_SRQ, &sq, sizeof(sq));
    /* Its depth is max-srq-wrs' (4096), not max-qp-wrs' (2048). */
    sq.log_size = 12;
    sq.ring_addr = cpu_to_le64(guest_alloc(t.alloc, RNIC_RQ_WQE_SIZE << 13));
    qrnic_cmd_ok(&t, RNIC_CMD_CREATE_SRQ, &sq, sizeof(sq));
    sq.log_size = 13;
    g_assert_cmphex(qrnic_cmd_status(&t, RNIC_CMD_CREATE_SRQ, &sq, sizeof(sq)),
                    ==, RNIC_CMD_ERR_PARAM);
    qrnic_test_stop(&t);
}

/* With bus mastering off the device reaches no guest memory at all. */
static void test_bus_master_off(void)
{
    struct rnic_cmd cmd = { .opcode = RNIC_CMD_CREATE_PD };
    uint16_t pcicmd;
    QRnic t;

    qrnic_test_start(&t, NULL);
    qrnic_test_enable(&t);
    pcicmd = qpci_config_readw(t.dev, PCI_COMMAND);
    qpci_config_writew(t.dev, PCI_COMMAND, pcicmd & ~PCI_COMMAND_MASTER);
    cmd.status = cpu_to_le16(RNIC_CMD_STATUS_PENDING);
    qtest_memwrite(t.qts, t.cmdq, &cmd, sizeof(cmd));
    qrnic_wr(&t, RNIC_REG_CMDQ_PROD, 1);
    qrnic_settle(&t);
    g_assert_cmphex(qrnic_rd(&t, RNIC_REG_STATUS) & RNIC_STATUS_FATAL, ==,
                    RNIC_STATUS_FATAL);
    g_assert_cmpuint(qrnic_rd(&t, RNIC_REG_CMDQ_CONS), ==, 0);
    qtest_memread(t.qts, t.cmdq, &cmd, sizeof(cmd));
    g_assert_cmphex(le16_to_cpu(cmd.status), ==, RNIC_CMD_STATUS_PENDING);
    /* FATAL holds until a reset; then the device works again. */
    qpci_config_writew(t.dev, PCI_COMMAND, pcicmd);
    qrnic_wr(&t, RNIC_REG_CONTROL, RNIC_CONTROL_RESET);
    t.cmd_prod = 0;
    t.eq_cons = 0;
    qrnic_test_enable(&t);
    g_assert_cmpuint(qrnic_create_pd(&t), !=, 0);
    qrnic_test_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/rnic/regs/identity", test_identity);
    qtest_add_func("/rnic/regs/scratch", test_scratch);
    qtest_add_func("/rnic/regs/unknown", test_unknown_register);
    qtest_add_func("/rnic/regs/enable", test_enable_checks_rings);
    qtest_add_func("/rnic/regs/state-any-ring-regs", test_state_any_ring_regs);
    qtest_add_func("/rnic/cmd/query-device", test_query_device);
    qtest_add_func("/rnic/cmd/bad-opcode", test_bad_opcode);
    qrnic_test_add_both("/rnic/cmd/abi-version", test_abi_version);
    qrnic_test_add_both("/rnic/verbs/alloc-mr", test_alloc_mr_params);
    qtest_add_func("/rnic/cmd/unreadable-ring", test_unreadable_cmdq_is_fatal);
    qtest_add_func("/rnic/cmd/prod-far-ahead", test_cmdq_prod_far_ahead);
    qtest_add_func("/rnic/verbs/pd", test_pd);
    qtest_add_func("/rnic/verbs/mr-mw", test_mr_mw);
    qtest_add_func("/rnic/verbs/reg-mr-bad-page-list",
                   test_reg_mr_bad_page_list);
    qtest_add_func("/rnic/verbs/cq-qp", test_cq_qp_lifecycle);
    qrnic_test_add_both("/rnic/wq/flush", test_flush_to_guest_cq);
    qrnic_test_add_both("/rnic/wq/flushed-recv-links-nothing",
                        test_flushed_recv_links_nothing);
    qrnic_test_add_both("/rnic/wq/doorbell-burst", test_doorbell_burst);
    qrnic_test_add_both("/rnic/wq/doorbell-pages", test_doorbell_pages);
    qrnic_test_add_both("/rnic/wq/arm-with-waiting-completions",
                        test_arm_with_waiting_completions);
    qrnic_test_add_both("/rnic/wq/arm-with-ring-full", test_arm_with_ring_full);
    qtest_add_func("/rnic/wq/bad-wqe", test_bad_wqe);
    qtest_add_func("/rnic/hot-unplug", test_hot_unplug);
    qtest_add_func("/rnic/iothread-polls", test_iothread_polls);
    qtest_add_func("/rnic/sock-buf-bounds", test_sock_buf_bounds);
    qtest_add_func("/rnic/verbs/srq", test_srq);
    qrnic_test_add_both("/rnic/bus-master-off", test_bus_master_off);
    return g_test_run();
}
