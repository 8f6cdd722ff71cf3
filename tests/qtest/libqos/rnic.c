/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libqos helpers for the rnic device (see rnic.h).
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "standard-headers/linux/pci_regs.h"
#include "qemu/module.h"
#include "rnic.h"

typedef struct QRnicFind {
    int want, seen;
    QPCIDevice *dev;
} QRnicFind;

/* Keeps the @want'th rnic on the bus. */
static void qrnic_find(QPCIDevice *dev, int devfn, void *data)
{
    QRnicFind *f = data;

    if (f->seen++ == f->want) {
        f->dev = dev;
    } else {
        g_free(dev);
    }
}

uint32_t qrnic_rd(QRnic *t, uint32_t reg)
{
    return qpci_io_readl(t->dev, t->regs, reg);
}

void qrnic_wr(QRnic *t, uint32_t reg, uint32_t val)
{
    qpci_io_writel(t->dev, t->regs, reg, val);
}

static uint64_t qrnic_udb_off(QRnic *t, uint32_t page, uint32_t reg)
{
    if (!t->udb_size) {
        t->udb_bar = qpci_iomap(t->dev, RNIC_BAR_UDB, &t->udb_size);
    }
    return (uint64_t)page * RNIC_UDB_PAGE_SIZE + reg;
}

void qrnic_udb_wr(QRnic *t, uint32_t page, uint32_t reg, uint32_t val)
{
    uint64_t off = qrnic_udb_off(t, page, reg);

    qpci_io_writel(t->dev, t->udb_bar, off, val);
}

uint32_t qrnic_udb_rd(QRnic *t, uint32_t page, uint32_t reg)
{
    uint64_t off = qrnic_udb_off(t, page, reg);

    return qpci_io_readl(t->dev, t->udb_bar, off);
}

/*
 * Unmask every MSI-X vector and point it at a word of guest memory, so that
 * an interrupt shows up as QRNIC_MSI_MAGIC | vector written there.
 */
void qrnic_msix_setup(QRnic *t)
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
                       e + PCI_MSIX_ENTRY_DATA, QRNIC_MSI_MAGIC | v);
        qpci_io_writel(t->dev, t->dev->msix_table_bar,
                       e + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
    }
}

/* True once vector @v has fired since the last call; re-arms the word. */
bool qrnic_msix_fired(QRnic *t, int v)
{
    uint32_t word = qtest_readl(t->qts, t->msi_mem + 4 * v);

    if (word == (QRNIC_MSI_MAGIC | v)) {
        qtest_writel(t->qts, t->msi_mem + 4 * v, 0);
        return true;
    }
    g_assert_cmphex(word, ==, 0);
    return false;
}

/*
 * What the qgraph node and the q35 helpers share: @dev, on t->bus,
 * enabled and its registers mapped.
 */
static void qrnic_attach(QRnic *t, QPCIDevice *dev)
{
    g_assert_nonnull(dev);
    t->dev = dev;
    qpci_device_enable(t->dev);
    t->regs = qpci_iomap(t->dev, RNIC_BAR_REGS, NULL);
}

/* Unmaps what qrnic_attach() and qrnic_udb_wr() mapped; frees the device. */
static void qrnic_detach(QRnic *t)
{
    qpci_iounmap(t->dev, t->regs);
    if (t->udb_size) {
        qpci_iounmap(t->dev, t->udb_bar);
    }
    g_free(t->dev);
    g_free(t->port);
}

/* ---- the qgraph node "rnic", for qos-test ---- */

static void *qrnic_get_driver(void *obj, const char *interface)
{
    QRnic *t = obj;

    if (!g_strcmp0(interface, "pci-device")) {
        return t->dev;
    }
    fprintf(stderr, "%s not present in rnic\n", interface);
    g_assert_not_reached();
}

static void qrnic_destructor(QOSGraphObject *obj)
{
    qrnic_detach((QRnic *)obj);
}

static void *qrnic_create(void *pci_bus, QGuestAllocator *alloc, void *addr)
{
    QRnic *t = g_new0(QRnic, 1);
    QPCIDevice *dev = g_new0(QPCIDevice, 1);

    t->bus = pci_bus;
    t->qts = t->bus->qts;
    t->alloc = alloc;
    qpci_device_init(dev, t->bus, addr);
    qrnic_attach(t, dev);
    t->obj.get_driver = qrnic_get_driver;
    t->obj.destructor = qrnic_destructor;
    t->obj.free = g_free;
    return &t->obj;
}

static void qrnic_register_nodes(void)
{
    QPCIAddress addr = {
        .devfn = QPCI_DEVFN(4, 0),
        .vendor_id = RNIC_PCI_VENDOR_ID,
        .device_id = RNIC_PCI_DEVICE_ID,
    };
    QOSGraphEdgeOptions opts = {
        .extra_device_opts = "addr=04.0",
    };

    add_qpci_address(&opts, &addr);
    qos_node_create_driver("rnic", qrnic_create);
    qos_node_consumes("rnic", "pci-bus", &opts);
    qos_node_produces("rnic", "pci-device");
}

libqos_init(qrnic_register_nodes);

/* ---- the q35 helpers: QEMU started here, one QRnic per device ---- */

static void qrnic_test_open(QRnic *t, int index)
{
    QRnicFind f = { .want = index };

    t->index = index;
    qpci_device_foreach(t->bus, RNIC_PCI_VENDOR_ID, RNIC_PCI_DEVICE_ID,
                        qrnic_find, &f);
    qrnic_attach(t, f.dev);
}

bool qrnic_test_iothread;
bool qrnic_test_main_loop;

bool qrnic_test_threaded(void)
{
    return !qrnic_test_main_loop;
}

/*
 * With qrnic_test_iothread: one IOThread, every rnic device on it; with
 * qrnic_test_main_loop, every rnic device on the main loop; else each
 * device on an IOThread of its own (the default).
 */
static char *qrnic_test_args(const char *args)
{
    g_auto(GStrv) parts = NULL;
    g_autofree char *joined = NULL;

    if (!qrnic_test_iothread && !qrnic_test_main_loop) {
        return g_strdup(args);
    }
    parts = g_strsplit(args, "-device rnic", -1);
    if (qrnic_test_main_loop) {
        return g_strjoinv("-device rnic,main-loop=on", parts);
    }
    joined = g_strjoinv("-device rnic,iothread=rnicio", parts);
    return g_strdup_printf("-object iothread,id=rnicio %s", joined);
}

static void qrnic_test_init(QRnic *t, const char *args)
{
    g_autofree char *full = qrnic_test_args(args);

    memset(t, 0, sizeof(*t));
    t->owner = true;
    /* Threads named ("IO rnic0"), for tests that look for an IOThread. */
    t->args = g_strdup_printf("-M q35 -nodefaults -name debug-threads=on %s",
                              full);
    t->qts = qtest_init(t->args);
    t->alloc = g_new0(QGuestAllocator, 1);
    pc_alloc_init(t->alloc, t->qts, ALLOC_NO_FLAGS);
    t->bus = qpci_new_pc(t->qts, t->alloc);
}

int qrnic_iothreads(QTestState *qts, int64_t *tid)
{
    g_autofree char *dir = g_strdup_printf("/proc/%d/task",
                                           (int)qtest_pid(qts));
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    int n = 0;

    g_assert_nonnull(d);
    while ((name = g_dir_read_name(d))) {
        g_autofree char *path = g_strdup_printf("%s/%s/comm", dir, name);
        g_autofree char *comm = NULL;

        if (g_file_get_contents(path, &comm, NULL, NULL) &&
            g_str_has_prefix(comm, "IO rnic") && !n++ && tid) {
            *tid = g_ascii_strtoll(name, NULL, 10);
        }
    }
    return n;
}

/* glib 2.68 has it: QEMU's minimum is older, Debian 12 has 2.74. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static const char *qrnic_test_path(void)
{
    return g_test_get_path();
}
#pragma GCC diagnostic pop

/* "DIR/x86_64-rnic-dp-send-a" for test /x86_64/rnic/dp/send, device a. */
static char *qrnic_capture_base(const char *id)
{
    g_autofree char *name = g_strdup(qrnic_test_path() + 1);

    g_strdelimit(name, "/", '-');
    return g_strdup_printf("%s/%s-%s", getenv("RNIC_QTEST_CAPTURE"), name,
                           id);
}

/*
 * The capture property for a device with these -device options, and its
 * id (one is added when the options name none); "" without
 * RNIC_QTEST_CAPTURE.
 */
static char *qrnic_capture_opts(char **cap_id, const char *extra,
                                const char *fixed_id)
{
    const char *idp = extra ? strstr(extra, "id=") : NULL;
    g_autofree char *base = NULL;

    if (!getenv("RNIC_QTEST_CAPTURE")) {
        return g_strdup("");
    }
    *cap_id = fixed_id ? g_strdup(fixed_id) :
              idp ? g_strndup(idp + 3, strcspn(idp + 3, ",")) : NULL;
    base = qrnic_capture_base(*cap_id ? *cap_id : "cap");
    if (!*cap_id) {
        *cap_id = g_strdup("cap");
        return g_strdup_printf(",id=cap,capture=%s.pcapng", base);
    }
    return g_strdup_printf(",capture=%s.pcapng", base);
}

/* Stops the capture (the file is complete) and writes the counters. */
static void qrnic_capture_finish(QRnic *t)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/%s",
                                            t->cap_id);
    g_autofree char *base = qrnic_capture_base(t->cap_id);
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
                                   qrnic_qom_int(t, t->cap_id, name));
        }
    }
    qobject_unref(r);
    g_assert_true(g_file_set_contents(file, out->str, out->len, NULL));
    g_string_free(out, true);
    g_free(t->cap_id);
    t->cap_id = NULL;
}

void qrnic_test_start(QRnic *t, const char *extra)
{
    g_autofree char *cap_id = NULL;
    g_autofree char *cap = qrnic_capture_opts(&cap_id, extra, NULL);
    g_autofree char *args = g_strdup_printf("-device rnic%s%s",
                                            extra ? extra : "", cap);

    qrnic_test_init(t, args);
    t->cap_id = g_steal_pointer(&cap_id);
    qrnic_test_open(t, 0);
}

/*
 * Without firmware nobody numbers the root port's bus or opens its memory
 * window: do it as firmware would, so the device behind it is reachable
 * (bus 1; libqos puts BARs at 0xe0000000 and up), and turn on ECAM.
 */
void qrnic_test_start_in_slot(QRnic *t, const char *extra)
{
    g_autofree char *args = g_strdup_printf(
        "-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off "
        "-device pcie-root-port,id=rp0,bus=pcie.0,addr=0x%x,chassis=1 "
        "-device rnic,bus=rp0%s", QRNIC_PORT_SLOT, extra ? extra : "");
    QPCIDevice *mch;

    qrnic_test_init(t, args);
    t->port = qpci_device_find(t->bus, QPCI_DEVFN(QRNIC_PORT_SLOT, 0));
    g_assert_nonnull(t->port);
    qpci_config_writeb(t->port, PCI_PRIMARY_BUS, 0);
    qpci_config_writeb(t->port, PCI_SECONDARY_BUS, 1);
    qpci_config_writeb(t->port, PCI_SUBORDINATE_BUS, 1);
    qpci_config_writew(t->port, PCI_MEMORY_BASE, 0xe000);
    qpci_config_writew(t->port, PCI_MEMORY_LIMIT, 0xfff0);
    qpci_config_writew(t->port, PCI_COMMAND,
                       PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
    mch = qpci_device_find(t->bus, QPCI_DEVFN(0, 0));
    qpci_config_writel(mch, QRNIC_MCH_PCIEXBAR, QRNIC_ECAM | 1);
    qpci_config_writel(mch, QRNIC_MCH_PCIEXBAR + 4, 0);
    g_free(mch);
    /* Bus 1 in libqos's devfn: the bus number sits above the 8 bits. */
    qrnic_attach(t, qpci_device_find(t->bus, 1 << 8 | QPCI_DEVFN(0, 0)));
}

uint64_t qrnic_test_port_ecam(QRnic *t)
{
    return QRNIC_ECAM + ((uint64_t)QPCI_DEVFN(QRNIC_PORT_SLOT, 0)
                         << 12);
}

/* The device's own, on bus 1 below the port. */
uint64_t qrnic_test_dev_ecam(QRnic *t)
{
    return QRNIC_ECAM + (1ull << 20);
}

void qrnic_test_start_pair(QRnic *a, QRnic *b, const char *extra_a,
                           const char *extra_b)
{
    qrnic_test_start_pair_on(a, b, "", extra_a, extra_b);
}

void qrnic_test_start_pair_on(QRnic *a, QRnic *b, const char *machine,
                              const char *extra_a, const char *extra_b)
{
    g_autofree char *id_a = NULL, *id_b = NULL;
    g_autofree char *cap_a = qrnic_capture_opts(&id_a, NULL, "a");
    g_autofree char *cap_b = qrnic_capture_opts(&id_b, NULL, "b");
    g_autofree char *args = g_strdup_printf(
        "%s -device rnic,id=a%s%s -device rnic,id=b%s%s", machine,
        extra_a ? extra_a : "", cap_a, extra_b ? extra_b : "", cap_b);

    qrnic_test_init(a, args);
    memset(b, 0, sizeof(*b));
    a->cap_id = g_steal_pointer(&id_a);
    b->cap_id = g_steal_pointer(&id_b);
    b->qts = a->qts;
    b->alloc = a->alloc;
    b->bus = a->bus;
    qrnic_test_open(a, 0);
    qrnic_test_open(b, 1);
}

/* After a system reset: BARs and MSI-X are gone, map them again. */
void qrnic_test_after_reset(QRnic *t)
{
    qpci_device_enable(t->dev);
    t->regs = qpci_iomap(t->dev, RNIC_BAR_REGS, NULL);
    t->dev->msix_enabled = false;
    t->cmd_prod = 0;
    t->eq_cons = 0;
}

/* Program both rings and enable the device, as a driver's probe does. */
void qrnic_test_enable(QRnic *t)
{
    size_t eq_bytes;

    t->eq_log = t->eq_log ?: QRNIC_EQ_LOG;
    eq_bytes = MAX(4096, (size_t)RNIC_EVENT_SIZE << t->eq_log);
    qrnic_msix_setup(t);
    t->cmdq = guest_alloc(t->alloc, 4096);
    t->eq = guest_alloc(t->alloc, eq_bytes);
    g_assert_cmphex(t->cmdq & 0xfff, ==, 0);
    g_assert_cmphex(t->eq & 0xfff, ==, 0);
    qtest_memset(t->qts, t->eq, 0, eq_bytes);
    qrnic_wr(t, RNIC_REG_CMDQ_BASE_LO, t->cmdq);
    qrnic_wr(t, RNIC_REG_CMDQ_BASE_HI, t->cmdq >> 32);
    qrnic_wr(t, RNIC_REG_CMDQ_LOG_SIZE, QRNIC_CMDQ_LOG);
    qrnic_wr(t, RNIC_REG_EQ_BASE_LO, t->eq);
    qrnic_wr(t, RNIC_REG_EQ_BASE_HI, t->eq >> 32);
    qrnic_wr(t, RNIC_REG_EQ_LOG_SIZE, t->eq_log);
    qrnic_wr(t, RNIC_REG_CONTROL, RNIC_CONTROL_ENABLE);
    g_assert_cmphex(qrnic_rd(t, RNIC_REG_STATUS) & RNIC_STATUS_READY, ==,
                    RNIC_STATUS_READY);
}

void qrnic_test_stop(QRnic *t)
{
    if (t->cap_id) {
        qrnic_capture_finish(t);
    }
    qrnic_detach(t);
    if (t->owner) {
        qpci_free_pc(t->bus);
        alloc_destroy(t->alloc);
        g_free(t->alloc);
        qtest_quit(t->qts);
        g_free(t->args);
    }
}

/* Until query-@cmd's "status" is @want; asserts it never says "failed". */
static void qrnic_wait_status(QTestState *qts, const char *cmd,
                              const char *want)
{
    gint64 end = g_get_monotonic_time() + 6 * QRNIC_TIMEOUT_US;

    for (;;) {
        QDict *rsp = qtest_qmp(qts, "{'execute': %s}", cmd);
        QDict *ret = qdict_get_qdict(rsp, "return");
        const char *st = ret ? qdict_get_try_str(ret, "status") : NULL;
        bool done = !g_strcmp0(st, want);

        g_assert_cmpstr(st, !=, "failed");
        qobject_unref(rsp);
        if (done) {
            return;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(10 * 1000);
    }
}

/* The same device in process @qts: BARs mapped again, MSI-X as it was. */
static void qrnic_reopen(QRnic *t, QTestState *qts, QPCIBus *bus)
{
    t->qts = qts;
    t->bus = bus;
    t->port = NULL;
    t->udb_size = 0;
    qrnic_test_open(t, t->index);
    qpci_msix_enable(t->dev);
}

void qrnic_test_migrate(QRnic *t, QRnic *b)
{
    g_autofree char *path = g_strdup_printf("%s/rnic-migrate-%d.vm",
                                            g_get_tmp_dir(), getpid());
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    QTestState *dst;
    QPCIBus *bus;

    g_assert(t->owner);
    qtest_qmp_assert_success(t->qts, "{'execute': 'migrate',"
                             " 'arguments': {'uri': %s}}", uri);
    qrnic_wait_status(t->qts, "query-migrate", "completed");
    dst = qtest_initf("%s -incoming %s", t->args, uri);
    qrnic_wait_status(dst, "query-status", "running");
    unlink(path);
    qrnic_detach(t);
    if (b) {
        qrnic_detach(b);
    }
    qpci_free_pc(t->bus);
    qtest_quit(t->qts);
    bus = qpci_new_pc(dst, t->alloc);
    qrnic_reopen(t, dst, bus);
    if (b) {
        qrnic_reopen(b, dst, bus);
    }
}

/* Posts one command, waits for its status and returns the slot. */
struct rnic_cmd qrnic_cmd(QRnic *t, uint8_t opcode,
                          const void *payload, size_t len)
{
    uint64_t slot = t->cmdq + (t->cmd_prod & ((1u << QRNIC_CMDQ_LOG) - 1)) *
                    RNIC_CMD_SIZE;
    struct rnic_cmd cmd = {
        .opcode = opcode,
        .flags = RNIC_CMD_FLAG_IRQ,
        .status = cpu_to_le16(RNIC_CMD_STATUS_PENDING),
        .cookie = cpu_to_le32(0xc0ffee00 | t->cmd_prod),
    };
    gint64 end = g_get_monotonic_time() + QRNIC_TIMEOUT_US;
    bool fired = false;

    g_assert_cmpuint(len, <=, sizeof(cmd.u));
    if (len) {
        memcpy(cmd.u.raw, payload, len);
    }
    qtest_memwrite(t->qts, slot, &cmd, sizeof(cmd));
    qrnic_wr(t, RNIC_REG_CMDQ_PROD, ++t->cmd_prod);
    /*
     * Done when the status is written and the interrupt came.  On an
     * IOThread the main loop sends the interrupt after the status is in
     * memory, so an event's interrupt may also land after its event was
     * read, and be seen here: the status decides, not the interrupt.
     */
    for (;;) {
        fired |= qrnic_msix_fired(t, RNIC_MSIX_VEC_ADMIN);
        qtest_memread(t->qts, slot, &cmd, sizeof(cmd));
        if (fired && le16_to_cpu(cmd.status) != RNIC_CMD_STATUS_PENDING) {
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(t->qts, 10000);
    }
    g_assert_cmpuint(qrnic_rd(t, RNIC_REG_CMDQ_CONS), ==, t->cmd_prod);
    g_assert_cmphex(le32_to_cpu(cmd.cookie), ==,
                    0xc0ffee00 | (t->cmd_prod - 1));
    return cmd;
}

/* Writes a command into the next slot without ringing the doorbell. */
void qrnic_cmd_queue(QRnic *t, uint8_t opcode, const void *payload,
                     size_t len)
{
    uint64_t slot = t->cmdq + (t->cmd_prod & ((1u << QRNIC_CMDQ_LOG) - 1)) *
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
struct rnic_cmd qrnic_cmd_ok(QRnic *t, uint8_t opcode,
                             const void *payload, size_t len)
{
    struct rnic_cmd cmd = qrnic_cmd(t, opcode, payload, len);

    g_assert_cmphex(le16_to_cpu(cmd.status), ==, RNIC_CMD_OK);
    return cmd;
}

uint16_t qrnic_cmd_status(QRnic *t, uint8_t opcode,
                          const void *payload, size_t len)
{
    return le16_to_cpu(qrnic_cmd(t, opcode, payload, len).status);
}

uint32_t qrnic_create_pd(QRnic *t)
{
    struct rnic_cmd cmd = qrnic_cmd_ok(t, RNIC_CMD_CREATE_PD, NULL, 0);

    return le32_to_cpu(((struct rnic_cmd_pd *)cmd.u.raw)->pdn);
}

/* A CQ of 2^log entries on @vector; returns the cqn, the ring in *ring. */
uint32_t qrnic_create_cq(QRnic *t, uint8_t log, uint8_t vector,
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
    cmd = qrnic_cmd_ok(t, RNIC_CMD_CREATE_CQ, &p, sizeof(p));
    return le32_to_cpu(((struct rnic_cmd_cq *)cmd.u.raw)->cqn);
}

static uint16_t qrnic_create_qp_rings(QRnic *t, uint32_t pdn, uint32_t scq,
                                      uint32_t rcq, uint32_t srqn, uint8_t log,
                                      uint16_t flags, uint64_t sq, uint64_t rq,
                                      QRnicQp *qp)
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
    cmd = qrnic_cmd(t, RNIC_CMD_CREATE_QP, &p, sizeof(p));
    qp->qpn = le32_to_cpu(((struct rnic_cmd_qp *)cmd.u.raw)->qpn);
    return le16_to_cpu(cmd.status);
}

uint16_t qrnic_create_qp_at(QRnic *t, uint32_t pdn, uint32_t scq,
                            uint32_t rcq, uint8_t log, uint64_t sq,
                            uint64_t rq, QRnicQp *qp)
{
    return qrnic_create_qp_rings(t, pdn, scq, rcq, RNIC_NO_SRQ, log, 0, sq,
                                 rq, qp);
}

uint16_t qrnic_try_create_qp(QRnic *t, uint32_t pdn, uint32_t scq,
                             uint32_t rcq, uint8_t log, QRnicQp *qp)
{
    return qrnic_try_create_qp_srq(t, pdn, scq, rcq, RNIC_NO_SRQ, log, qp);
}

uint16_t qrnic_try_create_qp_srq(QRnic *t, uint32_t pdn, uint32_t scq,
                                 uint32_t rcq, uint32_t srqn, uint8_t log,
                                 QRnicQp *qp)
{
    return qrnic_try_create_qp_flags(t, pdn, scq, rcq, srqn, log, 0, qp);
}

uint16_t qrnic_try_create_qp_flags(QRnic *t, uint32_t pdn, uint32_t scq,
                                   uint32_t rcq, uint32_t srqn, uint8_t log,
                                   uint16_t flags, QRnicQp *qp)
{
    uint64_t sq = guest_alloc(t->alloc, MAX(4096, RNIC_SQ_WQE_SIZE << log));
    uint64_t rq = guest_alloc(t->alloc, MAX(4096, RNIC_RQ_WQE_SIZE << log));

    return qrnic_create_qp_rings(t, pdn, scq, rcq, srqn, log, flags, sq, rq,
                                 qp);
}

struct rnic_wqe_sge qrnic_sge(uint32_t stag, uint64_t addr, uint32_t len)
{
    return (struct rnic_wqe_sge) {
        .addr = cpu_to_le64(addr),
        .length = cpu_to_le32(len),
        .stag = cpu_to_le32(stag),
    };
}

void qrnic_fill(QTestState *qts, uint64_t gpa, uint32_t len, uint8_t seed)
{
    g_autofree uint8_t *p = g_malloc(len);

    for (uint32_t i = 0; i < len; i++) {
        p[i] = seed + i * 7;
    }
    qtest_memwrite(qts, gpa, p, len);
}

void qrnic_post_recv(QRnic *t, QRnicQp *qp,
                     const struct rnic_rq_wqe *w)
{
    uint64_t slot = qp->rq + (qp->rq_prod & ((1u << qp->log) - 1)) *
                    RNIC_RQ_WQE_SIZE;

    qtest_memwrite(t->qts, slot, w, sizeof(*w));
    qrnic_wr(t, RNIC_REG_DB_RQ, RNIC_DB_VALUE(qp->qpn, ++qp->rq_prod));
}

void qrnic_post_send(QRnic *t, QRnicQp *qp,
                     const struct rnic_sq_wqe *w)
{
    qrnic_post_sends(t, qp, w, 1);
}

void qrnic_modify_qp_state(QRnic *t, uint32_t qpn, uint8_t state,
                           uint16_t expect)
{
    struct rnic_cmd_modify_qp m = {
        .qpn = cpu_to_le32(qpn),
        .mask = cpu_to_le32(RNIC_MODIFY_STATE),
        .state = state,
    };

    g_assert_cmphex(qrnic_cmd_status(t, RNIC_CMD_MODIFY_QP, &m, sizeof(m)),
                    ==, expect);
}

uint8_t qrnic_query_qp_state(QRnic *t, uint32_t qpn)
{
    struct rnic_cmd_query_qp q = { .qpn = cpu_to_le32(qpn) };
    struct rnic_cmd cmd = qrnic_cmd_ok(t, RNIC_CMD_QUERY_QP, &q, sizeof(q));

    return ((struct rnic_cmd_query_qp *)cmd.u.raw)->state;
}

/*
 * @n send WQEs at once: one memwrite per contiguous run of ring slots and
 * one doorbell, as a driver posting a batch would (fewer qtest round
 * trips for the benches).
 */
void qrnic_post_sends(QRnic *t, QRnicQp *qp,
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
    qrnic_wr(t, RNIC_REG_DB_SQ, RNIC_DB_VALUE(qp->qpn, qp->sq_prod));
}

/* Reads CQ entry @index if the device has written it (phase check). */
bool qrnic_read_cqe(QRnic *t, uint64_t ring, uint8_t log,
                    uint32_t index, struct rnic_cq_entry *e)
{
    uint64_t addr = ring + (index & ((1u << log) - 1)) * RNIC_CQE_SIZE;

    qtest_memread(t->qts, addr, e, sizeof(*e));
    return e->phase == (((index >> log) & 1) ^ 1);
}

void qrnic_wait_cqe(QRnic *t, uint64_t ring, uint8_t log, uint32_t cqn,
                    uint32_t *cons, struct rnic_cq_entry *e)
{
    gint64 end = g_get_monotonic_time() + QRNIC_TIMEOUT_US;

    while (!qrnic_read_cqe(t, ring, log, *cons, e)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(500);
        qrnic_settle(t);
    }
    ++*cons;
    qrnic_wr(t, RNIC_REG_DB_CQ, RNIC_DB_VALUE(cqn, *cons));
}

/*
 * Lets the device's bottom halves run.  On an IOThread they run beside
 * qtest, in real time: give it a moment (tests that need a result for
 * sure poll for it).
 */
void qrnic_settle(QRnic *t)
{
    qtest_clock_step(t->qts, 1000);
    if (qrnic_test_threaded()) {
        g_usleep(20 * 1000);
    }
}

/* Reads the next event if the device has written one. */
bool qrnic_next_event(QRnic *t, struct rnic_event *ev)
{
    uint64_t addr = t->eq + (t->eq_cons & ((1u << t->eq_log) - 1)) *
                    RNIC_EVENT_SIZE;
    uint8_t phase = ((t->eq_cons >> t->eq_log) & 1) ^ 1;

    qtest_memread(t->qts, addr, ev, sizeof(*ev));
    if (ev->phase != phase) {
        return false;
    }
    qrnic_wr(t, RNIC_REG_EQ_CONS, ++t->eq_cons);
    return true;
}

uint16_t qrnic_reg_mr(QRnic *t, uint32_t pdn, uint64_t buf,
                      uint32_t len, uint32_t access, uint8_t key,
                            uint32_t *stag)
{
    uint32_t npages = (len + 4095) / 4096;
    uint64_t pbl = guest_alloc(t->alloc, npages * 8);
    struct rnic_cmd_reg_mr p = {
        .pdn = cpu_to_le32(pdn),
        .access = cpu_to_le32(access),
        .iova = cpu_to_le64(QRNIC_MR_IOVA),
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
    cmd = qrnic_cmd(t, RNIC_CMD_REG_MR, &p, sizeof(p));
    *stag = le32_to_cpu(((struct rnic_cmd_reg_mr *)cmd.u.raw)->stag);
    return le16_to_cpu(cmd.status);
}

void qrnic_wait_event(QRnic *t, struct rnic_event *ev)
{
    gint64 end = g_get_monotonic_time() + QRNIC_TIMEOUT_US;

    while (!qrnic_next_event(t, ev)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
        qrnic_settle(t);
    }
}

static QDict *qrnic_qom_get(QRnic *t, const char *id, const char *prop)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/%s", id);
    QDict *r = qtest_qmp(t->qts, "{'execute': 'qom-get', 'arguments': {"
                         "'path': %s, 'property': %s}}", path, prop);

    g_assert_true(qdict_haskey(r, "return"));
    return r;
}

uint64_t qrnic_qom_int(QRnic *t, const char *id, const char *prop)
{
    QDict *r = qrnic_qom_get(t, id, prop);
    uint64_t v = qdict_get_int(r, "return");

    qobject_unref(r);
    return v;
}

char *qrnic_qom_str(QRnic *t, const char *id, const char *prop)
{
    QDict *r = qrnic_qom_get(t, id, prop);
    char *v = g_strdup(qdict_get_str(r, "return"));

    qobject_unref(r);
    return v;
}

/* ---- TCP on 127.0.0.1, for tests that play the network peer ---- */

int qrnic_tcp_connect(uint16_t port, int rcvbuf)
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

int qrnic_tcp_listen(uint16_t *port)
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

int qrnic_tcp_accept(int lfd)
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
void qrnic_read_full(int fd, void *buf, size_t len)
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

void qrnic_write_full(int fd, const void *buf, size_t len)
{
    g_assert_cmpint(write(fd, buf, len), ==, len);
}

void qrnic_expect_event(QRnic *t, uint8_t type, struct rnic_event *ev)
{
    qrnic_wait_event(t, ev);
    g_assert_cmpuint(ev->type, ==, type);
}

uint32_t qrnic_create_srq(QRnic *t, uint32_t pdn, QRnicQp *ring)
{
    struct rnic_cmd_srq p = { .pdn = cpu_to_le32(pdn), .log_size = 3 };
    struct rnic_cmd cmd;

    memset(ring, 0, sizeof(*ring));
    ring->log = 3;
    ring->rq = guest_alloc(t->alloc, 4096);
    p.ring_addr = cpu_to_le64(ring->rq);
    cmd = qrnic_cmd_ok(t, RNIC_CMD_CREATE_SRQ, &p, sizeof(p));
    ring->qpn = le32_to_cpu(((struct rnic_cmd_srq *)cmd.u.raw)->srqn);
    return ring->qpn;
}

void qrnic_post_srq(QRnic *t, QRnicQp *srq, const struct rnic_rq_wqe *w)
{
    uint64_t slot = srq->rq + (srq->rq_prod & ((1u << srq->log) - 1)) *
                    RNIC_RQ_WQE_SIZE;

    qtest_memwrite(t->qts, slot, w, sizeof(*w));
    qrnic_wr(t, RNIC_REG_DB_SRQ, RNIC_DB_VALUE(srq->qpn, ++srq->rq_prod));
}

struct rnic_sockaddr qrnic_loopback(uint16_t port)
{
    return (struct rnic_sockaddr) {
        .family = RNIC_AF_INET,
        .port = cpu_to_le16(port),
        .addr = { 127, 0, 0, 1 },
    };
}

void qrnic_connect_qps(QRnic *a, uint32_t qpa, QRnic *b, uint32_t qpb,
                       uint8_t ird_ord)
{
    struct rnic_cmd_listen l = { .local = qrnic_loopback(0), .backlog = 1 };
    struct rnic_conn_param param = {
        .ird = cpu_to_le16(ird_ord), .ord = cpu_to_le16(ird_ord),
    };
    struct rnic_cmd_connect k = { .param = param };
    struct rnic_cmd_accept acc = { .param = param };
    struct rnic_event ev;
    struct rnic_cmd cmd;

    cmd = qrnic_cmd_ok(a, RNIC_CMD_LISTEN, &l, sizeof(l));
    k.peer = ((struct rnic_cmd_listen *)cmd.u.raw)->local;
    k.qpn = cpu_to_le32(qpb);
    qrnic_cmd_ok(b, RNIC_CMD_CONNECT, &k, sizeof(k));
    qrnic_expect_event(a, RNIC_EV_CONN_REQUEST, &ev);
    acc.conn_id = ev.id;
    acc.qpn = cpu_to_le32(qpa);
    qrnic_cmd_ok(a, RNIC_CMD_ACCEPT, &acc, sizeof(acc));
    qrnic_expect_event(a, RNIC_EV_CONN_ESTABLISHED, &ev);
    qrnic_expect_event(b, RNIC_EV_CONN_ESTABLISHED, &ev);
}

typedef struct QRnicCase {
    void (*fn)(void);
    bool iothread;
    bool main_loop;
} QRnicCase;

static void qrnic_test_run_case(const void *data)
{
    const QRnicCase *c = data;

    qrnic_test_iothread = c->iothread;
    qrnic_test_main_loop = c->main_loop;
    c->fn();
    qrnic_test_iothread = qrnic_test_main_loop = false;
}

/* @fn as DIR/@variant/LEAF of @path, or as @path itself (NULL). */
static void qrnic_test_add_case(const char *path, const char *variant,
                                void (*fn)(void), bool iothread,
                                bool main_loop)
{
    const char *leaf = strrchr(path, '/');
    QRnicCase *c = g_new0(QRnicCase, 1);
    g_autofree char *name = variant ?
        g_strdup_printf("%.*s/%s%s", (int)(leaf - path), path, variant,
                        leaf) : g_strdup(path);

    c->fn = fn;
    c->iothread = iothread;
    c->main_loop = main_loop;
    qtest_add_data_func(name, c, qrnic_test_run_case);
}

void qrnic_test_add_both(const char *path, void (*fn)(void))
{
    qrnic_test_add_case(path, NULL, fn, false, false);
    qrnic_test_add_case(path, "iothread", fn, true, false);
    qrnic_test_add_case(path, "main-loop", fn, false, true);
}

uint16_t qrnic_alloc_mr(QRnic *t, uint32_t pdn, uint32_t max_pages,
                        uint8_t key, uint8_t flags, uint32_t *stag)
{
    struct rnic_cmd_alloc_mr p = {
        .pdn = cpu_to_le32(pdn),
        .max_pages = cpu_to_le32(max_pages),
        .key = key,
        .flags = flags,
    };
    struct rnic_cmd cmd = qrnic_cmd(t, RNIC_CMD_ALLOC_MR, &p, sizeof(p));

    *stag = le32_to_cpu(((struct rnic_cmd_alloc_mr *)cmd.u.raw)->stag);
    return le16_to_cpu(cmd.status);
}
