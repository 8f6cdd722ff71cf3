/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libqos helpers for the rnic device (see rnic.h).
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "standard-headers/linux/pci_regs.h"
#include "rnic.h"


typedef struct RnicFind {
    int want, seen;
    QPCIDevice *dev;
} RnicFind;

/* Keeps the @want'th rnic on the bus. */
static void rnic_find(QPCIDevice *dev, int devfn, void *data)
{
    RnicFind *f = data;

    if (f->seen++ == f->want) {
        f->dev = dev;
    } else {
        g_free(dev);
    }
}

uint32_t rnic_rd(RnicTest *t, uint32_t reg)
{
    return qpci_io_readl(t->dev, t->regs, reg);
}

void rnic_wr(RnicTest *t, uint32_t reg, uint32_t val)
{
    qpci_io_writel(t->dev, t->regs, reg, val);
}

static uint64_t rnic_udb_off(RnicTest *t, uint32_t page, uint32_t reg)
{
    if (!t->udb_size) {
        t->udb_bar = qpci_iomap(t->dev, RNIC_BAR_UDB, &t->udb_size);
    }
    return (uint64_t)page * RNIC_UDB_PAGE_SIZE + reg;
}

void rnic_udb_wr(RnicTest *t, uint32_t page, uint32_t reg, uint32_t val)
{
    uint64_t off = rnic_udb_off(t, page, reg);

    qpci_io_writel(t->dev, t->udb_bar, off, val);
}

uint32_t rnic_udb_rd(RnicTest *t, uint32_t page, uint32_t reg)
{
    uint64_t off = rnic_udb_off(t, page, reg);

    return qpci_io_readl(t->dev, t->udb_bar, off);
}

/*
 * Unmask every MSI-X vector and point it at a word of guest memory, so that
 * an interrupt shows up as RNIC_TEST_MSI_MAGIC | vector written there.
 */
void rnic_msix_setup(RnicTest *t)
{
    qpci_msix_enable(t->dev);
    t->msi_mem = guest_alloc(t->alloc, 4 * RNIC_MSIX_VECTORS);
    for (int v = 0; v < RNIC_MSIX_VECTORS; v++) {
        uint64_t e = t->dev->msix_table_off + v * PCI_MSIX_ENTRY_SIZE;

        qtest_writel(t->qts, t->msi_mem + 4 * v, 0);
        qpci_io_writel(t->dev, t->dev->msix_table_bar,
                       e + PCI_MSIX_ENTRY_LOWER_ADDR, t->msi_mem + 4 * v);
        qpci_io_writel(t->dev, t->dev->msix_table_bar,
                       e + PCI_MSIX_ENTRY_UPPER_ADDR, 0);
        qpci_io_writel(t->dev, t->dev->msix_table_bar,
                       e + PCI_MSIX_ENTRY_DATA, RNIC_TEST_MSI_MAGIC | v);
        qpci_io_writel(t->dev, t->dev->msix_table_bar,
                       e + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
    }
}

/* True once vector @v has fired since the last call; re-arms the word. */
bool rnic_msix_fired(RnicTest *t, int v)
{
    uint32_t word = qtest_readl(t->qts, t->msi_mem + 4 * v);

    if (word == (RNIC_TEST_MSI_MAGIC | v)) {
        qtest_writel(t->qts, t->msi_mem + 4 * v, 0);
        return true;
    }
    g_assert_cmphex(word, ==, 0);
    return false;
}

static void rnic_test_use(RnicTest *t, QPCIDevice *dev)
{
    g_assert_nonnull(dev);
    t->dev = dev;
    qpci_device_enable(t->dev);
    t->regs = qpci_iomap(t->dev, RNIC_BAR_REGS, NULL);
}

static void rnic_test_open(RnicTest *t, int index)
{
    RnicFind f = { .want = index };

    qpci_device_foreach(t->bus, RNIC_PCI_VENDOR_ID, RNIC_PCI_DEVICE_ID,
                        rnic_find, &f);
    rnic_test_use(t, f.dev);
}

bool rnic_test_iothread;

/* With rnic_test_iothread: one IOThread, every rnic device on it. */
static char *rnic_test_args(const char *args)
{
    g_auto(GStrv) parts = NULL;
    g_autofree char *joined = NULL;

    if (!rnic_test_iothread) {
        return g_strdup(args);
    }
    parts = g_strsplit(args, "-device rnic", -1);
    joined = g_strjoinv("-device rnic,iothread=rnicio", parts);
    return g_strdup_printf("-object iothread,id=rnicio %s", joined);
}

static void rnic_test_init(RnicTest *t, const char *args)
{
    g_autofree char *full = rnic_test_args(args);

    memset(t, 0, sizeof(*t));
    t->owner = true;
    t->qts = qtest_initf("-M q35 -nodefaults %s", full);
    t->alloc = g_new0(QGuestAllocator, 1);
    pc_alloc_init(t->alloc, t->qts, ALLOC_NO_FLAGS);
    t->bus = qpci_new_pc(t->qts, t->alloc);
}

/* glib 2.68 has it: QEMU's minimum is older, Debian 12 has 2.74. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static const char *rnic_test_path(void)
{
    return g_test_get_path();
}
#pragma GCC diagnostic pop

/* "DIR/x86_64-rnic-dp-send-a" for test /x86_64/rnic/dp/send, device a. */
static char *rnic_capture_base(const char *id)
{
    g_autofree char *name = g_strdup(rnic_test_path() + 1);

    g_strdelimit(name, "/", '-');
    return g_strdup_printf("%s/%s-%s", getenv("RNIC_QTEST_CAPTURE"), name,
                           id);
}

/*
 * The capture property for a device with these -device options, and its
 * id (one is added when the options name none); "" without
 * RNIC_QTEST_CAPTURE.
 */
static char *rnic_capture_opts(char **cap_id, const char *extra,
                               const char *fixed_id)
{
    const char *idp = extra ? strstr(extra, "id=") : NULL;
    g_autofree char *base = NULL;

    if (!getenv("RNIC_QTEST_CAPTURE")) {
        return g_strdup("");
    }
    *cap_id = fixed_id ? g_strdup(fixed_id) :
              idp ? g_strndup(idp + 3, strcspn(idp + 3, ",")) : NULL;
    base = rnic_capture_base(*cap_id ? *cap_id : "cap");
    if (!*cap_id) {
        *cap_id = g_strdup("cap");
        return g_strdup_printf(",id=cap,capture=%s.pcapng", base);
    }
    return g_strdup_printf(",capture=%s.pcapng", base);
}

/* Stops the capture (the file is complete) and writes the counters. */
static void rnic_capture_finish(RnicTest *t)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/%s",
                                            t->cap_id);
    g_autofree char *base = rnic_capture_base(t->cap_id);
    g_autofree char *file = g_strdup_printf("%s.stats", base);
    GString *out = g_string_new(NULL);
    QDict *r;
    QList *props;
    const QListEntry *e;

    qobject_unref(qtest_qmp(t->qts, "{'execute': 'qom-set', 'arguments': {"
                            "'path': %s, 'property': 'capture', "
                            "'value': ''}}", path));
    r = qtest_qmp(t->qts, "{'execute': 'qom-list', 'arguments': {"
                  "'path': %s}}", path);
    props = qdict_haskey(r, "return") ? qdict_get_qlist(r, "return") : NULL;
    for (e = props ? qlist_first(props) : NULL; e; e = qlist_next(e)) {
        QDict *p = qobject_to(QDict, qlist_entry_obj(e));
        const char *name = qdict_get_str(p, "name");

        if (g_str_has_prefix(name, "stat-") &&
            !strcmp(qdict_get_str(p, "type"), "uint64")) {
            g_string_append_printf(out, "%s %" PRIu64 "\n", name,
                                   rnic_qom_int(t, t->cap_id, name));
        }
    }
    qobject_unref(r);
    g_assert_true(g_file_set_contents(file, out->str, out->len, NULL));
    g_string_free(out, true);
    g_free(t->cap_id);
    t->cap_id = NULL;
}

void rnic_test_start(RnicTest *t, const char *extra)
{
    g_autofree char *cap_id = NULL;
    g_autofree char *cap = rnic_capture_opts(&cap_id, extra, NULL);
    g_autofree char *args = g_strdup_printf("-device rnic%s%s",
                                            extra ? extra : "", cap);

    rnic_test_init(t, args);
    t->cap_id = g_steal_pointer(&cap_id);
    rnic_test_open(t, 0);
}

/*
 * Without firmware nobody numbers the root port's bus or opens its memory
 * window: do it as firmware would, so the device behind it is reachable
 * (bus 1; libqos puts BARs at 0xe0000000 and up), and turn on ECAM.
 */
void rnic_test_start_in_slot(RnicTest *t, const char *extra)
{
    g_autofree char *args = g_strdup_printf(
        "-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off "
        "-device pcie-root-port,id=rp0,bus=pcie.0,addr=0x%x,chassis=1 "
        "-device rnic,bus=rp0%s", RNIC_TEST_PORT_SLOT, extra ? extra : "");
    QPCIDevice *mch;

    rnic_test_init(t, args);
    t->port = qpci_device_find(t->bus, QPCI_DEVFN(RNIC_TEST_PORT_SLOT, 0));
    g_assert_nonnull(t->port);
    qpci_config_writeb(t->port, PCI_PRIMARY_BUS, 0);
    qpci_config_writeb(t->port, PCI_SECONDARY_BUS, 1);
    qpci_config_writeb(t->port, PCI_SUBORDINATE_BUS, 1);
    qpci_config_writew(t->port, PCI_MEMORY_BASE, 0xe000);
    qpci_config_writew(t->port, PCI_MEMORY_LIMIT, 0xfff0);
    qpci_config_writew(t->port, PCI_COMMAND,
                       PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
    mch = qpci_device_find(t->bus, QPCI_DEVFN(0, 0));
    qpci_config_writel(mch, RNIC_TEST_MCH_PCIEXBAR, RNIC_TEST_ECAM | 1);
    qpci_config_writel(mch, RNIC_TEST_MCH_PCIEXBAR + 4, 0);
    g_free(mch);
    /* Bus 1 in libqos's devfn: the bus number sits above the 8 bits. */
    rnic_test_use(t, qpci_device_find(t->bus, 1 << 8 | QPCI_DEVFN(0, 0)));
}

uint64_t rnic_test_port_ecam(RnicTest *t)
{
    return RNIC_TEST_ECAM + ((uint64_t)QPCI_DEVFN(RNIC_TEST_PORT_SLOT, 0)
                             << 12);
}

/* The device's own, on bus 1 below the port. */
uint64_t rnic_test_dev_ecam(RnicTest *t)
{
    return RNIC_TEST_ECAM + (1ull << 20);
}

void rnic_test_start_pair(RnicTest *a, RnicTest *b, const char *extra_a,
                          const char *extra_b)
{
    rnic_test_start_pair_on(a, b, "", extra_a, extra_b);
}

void rnic_test_start_pair_on(RnicTest *a, RnicTest *b, const char *machine,
                             const char *extra_a, const char *extra_b)
{
    g_autofree char *id_a = NULL, *id_b = NULL;
    g_autofree char *cap_a = rnic_capture_opts(&id_a, NULL, "a");
    g_autofree char *cap_b = rnic_capture_opts(&id_b, NULL, "b");
    g_autofree char *args = g_strdup_printf(
        "%s -device rnic,id=a%s%s -device rnic,id=b%s%s", machine,
        extra_a ? extra_a : "", cap_a, extra_b ? extra_b : "", cap_b);

    rnic_test_init(a, args);
    memset(b, 0, sizeof(*b));
    a->cap_id = g_steal_pointer(&id_a);
    b->cap_id = g_steal_pointer(&id_b);
    b->qts = a->qts;
    b->alloc = a->alloc;
    b->bus = a->bus;
    rnic_test_open(a, 0);
    rnic_test_open(b, 1);
}

/* After a system reset: BARs and MSI-X are gone, map them again. */
void rnic_test_after_reset(RnicTest *t)
{
    qpci_device_enable(t->dev);
    t->regs = qpci_iomap(t->dev, RNIC_BAR_REGS, NULL);
    t->dev->msix_enabled = false;
    t->cmd_prod = 0;
    t->eq_cons = 0;
}

/* Program both rings and enable the device, as a driver's probe does. */
void rnic_test_enable(RnicTest *t)
{
    size_t eq_bytes;

    t->eq_log = t->eq_log ?: RNIC_TEST_EQ_LOG;
    eq_bytes = MAX(4096, (size_t)RNIC_EVENT_SIZE << t->eq_log);
    rnic_msix_setup(t);
    t->cmdq = guest_alloc(t->alloc, 4096);
    t->eq = guest_alloc(t->alloc, eq_bytes);
    g_assert_cmphex(t->cmdq & 0xfff, ==, 0);
    g_assert_cmphex(t->eq & 0xfff, ==, 0);
    qtest_memset(t->qts, t->eq, 0, eq_bytes);
    rnic_wr(t, RNIC_REG_CMDQ_BASE_LO, t->cmdq);
    rnic_wr(t, RNIC_REG_CMDQ_BASE_HI, t->cmdq >> 32);
    rnic_wr(t, RNIC_REG_CMDQ_LOG_SIZE, RNIC_TEST_CMDQ_LOG);
    rnic_wr(t, RNIC_REG_EQ_BASE_LO, t->eq);
    rnic_wr(t, RNIC_REG_EQ_BASE_HI, t->eq >> 32);
    rnic_wr(t, RNIC_REG_EQ_LOG_SIZE, t->eq_log);
    rnic_wr(t, RNIC_REG_CONTROL, RNIC_CONTROL_ENABLE);
    g_assert_cmphex(rnic_rd(t, RNIC_REG_STATUS) & RNIC_STATUS_READY, ==,
                    RNIC_STATUS_READY);
}

void rnic_test_stop(RnicTest *t)
{
    if (t->cap_id) {
        rnic_capture_finish(t);
    }
    qpci_iounmap(t->dev, t->regs);
    if (t->udb_size) {
        qpci_iounmap(t->dev, t->udb_bar);
    }
    g_free(t->dev);
    g_free(t->port);
    if (t->owner) {
        qpci_free_pc(t->bus);
        alloc_destroy(t->alloc);
        g_free(t->alloc);
        qtest_quit(t->qts);
    }
}

/* Posts one command, waits for its status and returns the slot. */
struct rnic_cmd rnic_cmd(RnicTest *t, uint8_t opcode,
                         const void *payload, size_t len)
{
    uint64_t slot = t->cmdq + (t->cmd_prod & ((1u << RNIC_TEST_CMDQ_LOG) - 1)) *
                    RNIC_CMD_SIZE;
    struct rnic_cmd cmd = {
        .opcode = opcode,
        .flags = RNIC_CMD_FLAG_IRQ,
        .status = cpu_to_le16(RNIC_CMD_STATUS_PENDING),
        .cookie = cpu_to_le32(0xc0ffee00 | t->cmd_prod),
    };
    gint64 end = g_get_monotonic_time() + RNIC_TEST_TIMEOUT_US;
    bool fired = false;

    g_assert_cmpuint(len, <=, sizeof(cmd.u));
    if (len) {
        memcpy(cmd.u.raw, payload, len);
    }
    qtest_memwrite(t->qts, slot, &cmd, sizeof(cmd));
    rnic_wr(t, RNIC_REG_CMDQ_PROD, ++t->cmd_prod);
    /*
     * Done when the status is written and the interrupt came.  On an
     * IOThread the main loop sends the interrupt after the status is in
     * memory, so an event's interrupt may also land after its event was
     * read, and be seen here: the status decides, not the interrupt.
     */
    for (;;) {
        fired |= rnic_msix_fired(t, RNIC_MSIX_VEC_ADMIN);
        qtest_memread(t->qts, slot, &cmd, sizeof(cmd));
        if (fired && le16_to_cpu(cmd.status) != RNIC_CMD_STATUS_PENDING) {
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(t->qts, 10000);
    }
    g_assert_cmpuint(rnic_rd(t, RNIC_REG_CMDQ_CONS), ==, t->cmd_prod);
    g_assert_cmphex(le32_to_cpu(cmd.cookie), ==,
                    0xc0ffee00 | (t->cmd_prod - 1));
    return cmd;
}

/* Writes a command into the next slot without ringing the doorbell. */
void rnic_cmd_queue(RnicTest *t, uint8_t opcode, const void *payload,
                    size_t len)
{
    uint64_t slot = t->cmdq + (t->cmd_prod & ((1u << RNIC_TEST_CMDQ_LOG) - 1)) *
                    RNIC_CMD_SIZE;
    struct rnic_cmd cmd = {
        .opcode = opcode,
        .status = cpu_to_le16(RNIC_CMD_STATUS_PENDING),
    };

    g_assert_cmpuint(len, <=, sizeof(cmd.u));
    memcpy(cmd.u.raw, payload, len);
    qtest_memwrite(t->qts, slot, &cmd, sizeof(cmd));
    t->cmd_prod++;
}

/* Runs a command that must succeed. */
struct rnic_cmd rnic_cmd_ok(RnicTest *t, uint8_t opcode,
                            const void *payload, size_t len)
{
    struct rnic_cmd cmd = rnic_cmd(t, opcode, payload, len);

    g_assert_cmphex(le16_to_cpu(cmd.status), ==, RNIC_CMD_OK);
    return cmd;
}

uint16_t rnic_cmd_status(RnicTest *t, uint8_t opcode,
                         const void *payload, size_t len)
{
    return le16_to_cpu(rnic_cmd(t, opcode, payload, len).status);
}

uint32_t rnic_create_pd(RnicTest *t)
{
    struct rnic_cmd cmd = rnic_cmd_ok(t, RNIC_CMD_CREATE_PD, NULL, 0);

    return le32_to_cpu(((struct rnic_cmd_pd *)cmd.u.raw)->pdn);
}

/* A CQ of 2^log entries on @vector; returns the cqn, the ring in *ring. */
uint32_t rnic_create_cq(RnicTest *t, uint8_t log, uint8_t vector,
                        uint64_t *ring)
{
    struct rnic_cmd_cq p = {
        .log_size = log,
        .msix_vector = vector,
        .udb = cpu_to_le32(t->udb),
    };
    struct rnic_cmd cmd;

    *ring = guest_alloc(t->alloc, MAX(4096, RNIC_CQE_SIZE << log));
    qtest_memset(t->qts, *ring, 0, RNIC_CQE_SIZE << log);
    p.ring_addr = cpu_to_le64(*ring);
    cmd = rnic_cmd_ok(t, RNIC_CMD_CREATE_CQ, &p, sizeof(p));
    return le32_to_cpu(((struct rnic_cmd_cq *)cmd.u.raw)->cqn);
}


static uint16_t rnic_create_qp_rings(RnicTest *t, uint32_t pdn, uint32_t scq,
                                     uint32_t rcq, uint32_t srqn, uint8_t log,
                                     uint16_t flags, uint64_t sq, uint64_t rq,
                                     RnicTestQp *qp)
{
    struct rnic_cmd_qp p = {
        .flags = cpu_to_le16(flags),
        .pdn = cpu_to_le32(pdn),
        .send_cqn = cpu_to_le32(scq),
        .recv_cqn = cpu_to_le32(rcq),
        .srqn = cpu_to_le32(srqn),
        .sq_log_size = log,
        .rq_log_size = log,
        .sq_addr = cpu_to_le64(sq),
        .rq_addr = cpu_to_le64(rq),
        .udb = cpu_to_le32(t->udb),
    };
    struct rnic_cmd cmd;

    memset(qp, 0, sizeof(*qp));
    qp->log = log;
    qp->sq = sq;
    qp->rq = rq;
    cmd = rnic_cmd(t, RNIC_CMD_CREATE_QP, &p, sizeof(p));
    qp->qpn = le32_to_cpu(((struct rnic_cmd_qp *)cmd.u.raw)->qpn);
    return le16_to_cpu(cmd.status);
}

uint16_t rnic_create_qp_at(RnicTest *t, uint32_t pdn, uint32_t scq,
                           uint32_t rcq, uint8_t log, uint64_t sq,
                           uint64_t rq, RnicTestQp *qp)
{
    return rnic_create_qp_rings(t, pdn, scq, rcq, RNIC_NO_SRQ, log, 0, sq,
                                rq, qp);
}

uint16_t rnic_try_create_qp(RnicTest *t, uint32_t pdn, uint32_t scq,
                            uint32_t rcq, uint8_t log, RnicTestQp *qp)
{
    return rnic_try_create_qp_srq(t, pdn, scq, rcq, RNIC_NO_SRQ, log, qp);
}

uint16_t rnic_try_create_qp_srq(RnicTest *t, uint32_t pdn, uint32_t scq,
                                uint32_t rcq, uint32_t srqn, uint8_t log,
                                RnicTestQp *qp)
{
    return rnic_try_create_qp_flags(t, pdn, scq, rcq, srqn, log, 0, qp);
}

uint16_t rnic_try_create_qp_flags(RnicTest *t, uint32_t pdn, uint32_t scq,
                                  uint32_t rcq, uint32_t srqn, uint8_t log,
                                  uint16_t flags, RnicTestQp *qp)
{
    uint64_t sq = guest_alloc(t->alloc, MAX(4096, RNIC_SQ_WQE_SIZE << log));
    uint64_t rq = guest_alloc(t->alloc, MAX(4096, RNIC_RQ_WQE_SIZE << log));

    return rnic_create_qp_rings(t, pdn, scq, rcq, srqn, log, flags, sq, rq,
                                qp);
}

void rnic_post_recv(RnicTest *t, RnicTestQp *qp,
                    const struct rnic_rq_wqe *w)
{
    uint64_t slot = qp->rq + (qp->rq_prod & ((1u << qp->log) - 1)) *
                    RNIC_RQ_WQE_SIZE;

    qtest_memwrite(t->qts, slot, w, sizeof(*w));
    rnic_wr(t, RNIC_REG_DB_RQ, RNIC_DB_VALUE(qp->qpn, ++qp->rq_prod));
}

void rnic_post_send(RnicTest *t, RnicTestQp *qp,
                    const struct rnic_sq_wqe *w)
{
    rnic_post_sends(t, qp, w, 1);
}

void rnic_modify_qp_state(RnicTest *t, uint32_t qpn, uint8_t state,
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

uint8_t rnic_query_qp_state(RnicTest *t, uint32_t qpn)
{
    struct rnic_cmd_query_qp q = { .qpn = cpu_to_le32(qpn) };
    struct rnic_cmd cmd = rnic_cmd_ok(t, RNIC_CMD_QUERY_QP, &q, sizeof(q));

    return ((struct rnic_cmd_query_qp *)cmd.u.raw)->state;
}

/*
 * @n send WQEs at once: one memwrite per contiguous run of ring slots and
 * one doorbell, as a driver posting a batch would (fewer qtest round
 * trips for the benches).
 */
void rnic_post_sends(RnicTest *t, RnicTestQp *qp,
                     const struct rnic_sq_wqe *w, uint32_t n)
{
    uint32_t size = 1u << qp->log;

    for (uint32_t done = 0; done < n;) {
        uint32_t first = (qp->sq_prod + done) & (size - 1);
        uint32_t run = MIN(n - done, size - first);

        qtest_memwrite(t->qts, qp->sq + first * RNIC_SQ_WQE_SIZE, w + done,
                       run * sizeof(*w));
        done += run;
    }
    qp->sq_prod += n;
    rnic_wr(t, RNIC_REG_DB_SQ, RNIC_DB_VALUE(qp->qpn, qp->sq_prod));
}

/* Reads CQ entry @index if the device has written it (phase check). */
bool rnic_read_cqe(RnicTest *t, uint64_t ring, uint8_t log,
                   uint32_t index, struct rnic_cq_entry *e)
{
    uint64_t addr = ring + (index & ((1u << log) - 1)) * RNIC_CQE_SIZE;

    qtest_memread(t->qts, addr, e, sizeof(*e));
    return e->phase == (((index >> log) & 1) ^ 1);
}

void rnic_wait_cqe(RnicTest *t, uint64_t ring, uint8_t log, uint32_t cqn,
                   uint32_t *cons, struct rnic_cq_entry *e)
{
    gint64 end = g_get_monotonic_time() + RNIC_TEST_TIMEOUT_US;

    while (!rnic_read_cqe(t, ring, log, *cons, e)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(500);
        rnic_settle(t);
    }
    ++*cons;
    rnic_wr(t, RNIC_REG_DB_CQ, RNIC_DB_VALUE(cqn, *cons));
}

/*
 * Lets the device's bottom halves run.  On an IOThread they run beside
 * qtest, in real time: give it a moment (tests that need a result for
 * sure poll for it).
 */
void rnic_settle(RnicTest *t)
{
    qtest_clock_step(t->qts, 1000);
    if (rnic_test_iothread) {
        g_usleep(20 * 1000);
    }
}

/* Reads the next event if the device has written one. */
bool rnic_next_event(RnicTest *t, struct rnic_event *ev)
{
    uint64_t addr = t->eq + (t->eq_cons & ((1u << t->eq_log) - 1)) *
                    RNIC_EVENT_SIZE;
    uint8_t phase = ((t->eq_cons >> t->eq_log) & 1) ^ 1;

    qtest_memread(t->qts, addr, ev, sizeof(*ev));
    if (ev->phase != phase) {
        return false;
    }
    rnic_wr(t, RNIC_REG_EQ_CONS, ++t->eq_cons);
    return true;
}

uint16_t rnic_reg_mr(RnicTest *t, uint32_t pdn, uint64_t buf,
                     uint32_t len, uint32_t access, uint8_t key,
                            uint32_t *stag)
{
    uint32_t npages = (len + 4095) / 4096;
    uint64_t pbl = guest_alloc(t->alloc, npages * 8);
    struct rnic_cmd_reg_mr p = {
        .pdn = cpu_to_le32(pdn),
        .access = cpu_to_le32(access),
        .iova = cpu_to_le64(RNIC_TEST_MR_IOVA),
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


void rnic_wait_event(RnicTest *t, struct rnic_event *ev)
{
    gint64 end = g_get_monotonic_time() + RNIC_TEST_TIMEOUT_US;

    while (!rnic_next_event(t, ev)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
        rnic_settle(t);
    }
}

static QDict *rnic_qom_get(RnicTest *t, const char *id, const char *prop)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/%s", id);
    QDict *r = qtest_qmp(t->qts, "{'execute': 'qom-get', 'arguments': {"
                         "'path': %s, 'property': %s}}", path, prop);

    g_assert_true(qdict_haskey(r, "return"));
    return r;
}

uint64_t rnic_qom_int(RnicTest *t, const char *id, const char *prop)
{
    QDict *r = rnic_qom_get(t, id, prop);
    uint64_t v = qdict_get_int(r, "return");

    qobject_unref(r);
    return v;
}

char *rnic_qom_str(RnicTest *t, const char *id, const char *prop)
{
    QDict *r = rnic_qom_get(t, id, prop);
    char *v = g_strdup(qdict_get_str(r, "return"));

    qobject_unref(r);
    return v;
}

/* ---- TCP on 127.0.0.1, for tests that play the network peer ---- */

int rnic_tcp_connect(uint16_t port, int rcvbuf)
{
    struct sockaddr_in in = {
        .sin_family = AF_INET,
        .sin_port = htons(port),
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    g_assert_cmpint(fd, >=, 0);
    /* Set before connect: it bounds the window TCP advertises. */
    if (rcvbuf) {
        g_assert_cmpint(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
                                   sizeof(rcvbuf)), ==, 0);
    }
    g_assert_cmpint(connect(fd, (struct sockaddr *)&in, sizeof(in)), ==, 0);
    return fd;
}

int rnic_tcp_listen(uint16_t *port)
{
    struct sockaddr_in in = {
        .sin_family = AF_INET,
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };
    socklen_t len = sizeof(in);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    g_assert_cmpint(bind(fd, (struct sockaddr *)&in, sizeof(in)), ==, 0);
    g_assert_cmpint(listen(fd, 4), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&in, &len), ==, 0);
    *port = ntohs(in.sin_port);
    return fd;
}

int rnic_tcp_accept(int lfd)
{
    struct timeval tv = { .tv_sec = 5 };
    fd_set set;
    int fd;

    FD_ZERO(&set);
    FD_SET(lfd, &set);
    g_assert_cmpint(select(lfd + 1, &set, NULL, NULL, &tv), ==, 1);
    fd = accept(lfd, NULL, NULL);
    g_assert_cmpint(fd, >=, 0);
    return fd;
}

/* Reads exactly @len bytes within the test timeout. */
void rnic_read_full(int fd, void *buf, size_t len)
{
    struct timeval tv = { .tv_sec = 5 };
    size_t got = 0;

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    while (got < len) {
        ssize_t n = read(fd, (uint8_t *)buf + got, len - got);

        g_assert_cmpint(n, >, 0);
        got += n;
    }
}

void rnic_write_full(int fd, const void *buf, size_t len)
{
    g_assert_cmpint(write(fd, buf, len), ==, len);
}

static void rnic_raw_expect(RnicTest *t, uint8_t type, bool strict,
                            struct rnic_event *ev)
{
    do {
        rnic_wait_event(t, ev);
    } while (!strict && ev->type != type);
    g_assert_cmpuint(ev->type, ==, type);
}

void rnic_raw_peer_accept(RnicTest *t, int fd, uint32_t qpn, bool crc,
                          bool strict)
{
    uint8_t req[24] = "MPA ID Req Frame", rep[24];
    struct rnic_cmd_accept a = {
        .param = { .ird = cpu_to_le16(1), .ord = cpu_to_le16(1) },
    };
    struct rnic_event ev;

    req[16] = 0x10 | (crc ? 0x40 : 0);          /* M=0, C, R=0, rev 2 */
    req[17] = 2;
    stw_be_p(req + 18, 4);                      /* PD_Length */
    stw_be_p(req + 20, 1);                      /* IRD 1 */
    stw_be_p(req + 22, 1);                      /* ORD 1 */
    rnic_write_full(fd, req, sizeof(req));
    rnic_raw_expect(t, RNIC_EV_CONN_REQUEST, strict, &ev);
    a.conn_id = ev.id;
    a.qpn = cpu_to_le32(qpn);
    rnic_cmd_ok(t, RNIC_CMD_ACCEPT, &a, sizeof(a));
    rnic_read_full(fd, rep, sizeof(rep));
    g_assert_cmpmem(rep, 16, "MPA ID Rep Frame", 16);
    g_assert_cmphex(rep[16] & 0x40, ==, crc ? 0x40 : 0);
    rnic_raw_expect(t, RNIC_EV_CONN_ESTABLISHED, strict, &ev);
}

uint32_t rnic_create_srq(RnicTest *t, uint32_t pdn, RnicTestQp *ring)
{
    struct rnic_cmd_srq p = { .pdn = cpu_to_le32(pdn), .log_size = 3 };
    struct rnic_cmd cmd;

    memset(ring, 0, sizeof(*ring));
    ring->log = 3;
    ring->rq = guest_alloc(t->alloc, 4096);
    p.ring_addr = cpu_to_le64(ring->rq);
    cmd = rnic_cmd_ok(t, RNIC_CMD_CREATE_SRQ, &p, sizeof(p));
    ring->qpn = le32_to_cpu(((struct rnic_cmd_srq *)cmd.u.raw)->srqn);
    return ring->qpn;
}

void rnic_post_srq(RnicTest *t, RnicTestQp *srq, const struct rnic_rq_wqe *w)
{
    uint64_t slot = srq->rq + (srq->rq_prod & ((1u << srq->log) - 1)) *
                    RNIC_RQ_WQE_SIZE;

    qtest_memwrite(t->qts, slot, w, sizeof(*w));
    rnic_wr(t, RNIC_REG_DB_SRQ, RNIC_DB_VALUE(srq->qpn, ++srq->rq_prod));
}

void rnic_connect_qps(RnicTest *a, uint32_t qpa, RnicTest *b, uint32_t qpb,
                      uint8_t ird_ord)
{
    struct rnic_cmd_listen l = {
        .local = { .family = RNIC_AF_INET, .addr = { 127, 0, 0, 1 } },
        .backlog = 1,
    };
    struct rnic_conn_param param = {
        .ird = cpu_to_le16(ird_ord), .ord = cpu_to_le16(ird_ord),
    };
    struct rnic_cmd_connect k = { .param = param };
    struct rnic_cmd_accept acc = { .param = param };
    struct rnic_event ev;
    struct rnic_cmd cmd;

    cmd = rnic_cmd_ok(a, RNIC_CMD_LISTEN, &l, sizeof(l));
    k.peer = ((struct rnic_cmd_listen *)cmd.u.raw)->local;
    k.qpn = cpu_to_le32(qpb);
    rnic_cmd_ok(b, RNIC_CMD_CONNECT, &k, sizeof(k));
    rnic_wait_event(a, &ev);
    g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_REQUEST);
    acc.conn_id = ev.id;
    acc.qpn = cpu_to_le32(qpa);
    rnic_cmd_ok(a, RNIC_CMD_ACCEPT, &acc, sizeof(acc));
    rnic_wait_event(a, &ev);
    g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_ESTABLISHED);
    rnic_wait_event(b, &ev);
    g_assert_cmpuint(ev.type, ==, RNIC_EV_CONN_ESTABLISHED);
}

typedef struct RnicTestCase {
    void (*fn)(void);
    bool iothread;
} RnicTestCase;

static void rnic_test_run_case(const void *data)
{
    const RnicTestCase *c = data;

    rnic_test_iothread = c->iothread;
    c->fn();
    rnic_test_iothread = false;
}

void rnic_test_add_both(const char *path, void (*fn)(void))
{
    g_autofree char *io = NULL;
    const char *leaf = strrchr(path, '/');
    RnicTestCase *plain = g_new0(RnicTestCase, 1);
    RnicTestCase *threaded = g_new0(RnicTestCase, 1);

    plain->fn = threaded->fn = fn;
    threaded->iothread = true;
    io = g_strdup_printf("%.*s/iothread%s", (int)(leaf - path), path, leaf);
    qtest_add_data_func(path, plain, rnic_test_run_case);
    qtest_add_data_func(io, threaded, rnic_test_run_case);
}

uint16_t rnic_alloc_mr(RnicTest *t, uint32_t pdn, uint32_t max_pages,
                       uint8_t key, uint8_t flags, uint32_t *stag)
{
    struct rnic_cmd_alloc_mr p = {
        .pdn = cpu_to_le32(pdn),
        .max_pages = cpu_to_le32(max_pages),
        .key = key,
        .flags = flags,
    };
    struct rnic_cmd cmd = rnic_cmd(t, RNIC_CMD_ALLOC_MR, &p, sizeof(p));

    *stag = le32_to_cpu(((struct rnic_cmd_alloc_mr *)cmd.u.raw)->stag);
    return le16_to_cpu(cmd.status);
}
