/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic: a software iWARP RDMA NIC as a PCI Express device.
 *
 * This file is the QEMU citizen only: PCI identity, BARs, MSI-X,
 * properties, reset.  The programming model is include/rnic/rnic-abi.h and
 * docs/spec.md; the wire protocol lives in the protocol core (core/).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/units.h"
#include "hw/pci/msix.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "monitor/monitor.h"
#include "system/iothread.h"
#include "rnic.h"
#include "trace.h"

#define RNIC_PCIE_CAP_OFFSET 0xe0

/*
 * The documented reset state (docs/spec.md "Reset").  Asked for from inside
 * a device callback (a DMA write that resets the root port, say), it waits
 * until that callback returns: the callback still holds what reset frees.
 */
void rnic_soft_reset(RnicState *s)
{
    if (rnic_defer(s, &s->reset_deferred, "reset")) {
        return;
    }
    rnic_run_on_ctx(s, rnic_reset_now);
}

/* The reset itself, on the device's context (rnic-thread.c). */
void rnic_reset_now(RnicState *s)
{
    rnic_db_drain(s, false);    /* a doorbell before the reset is void */
    rnic_cm_reset(s);
    rnic_verbs_reset(s);
    s->scratch = 0;
    s->status = 0;
    s->control = 0;
    rnic_ring_init(&s->cmdq, 0, 0, RNIC_CMD_SIZE);
    rnic_ring_init(&s->eq, 0, 0, RNIC_EVENT_SIZE);
    s->eq_dropped = 0;
    trace_rnic_reset();
}

static void rnic_reset_hold(Object *obj, ResetType type)
{
    rnic_soft_reset(RNIC(obj));
}

/* mpa-rtr: "none", or a comma-separated list of send, write and read. */
static bool rnic_parse_rtr(RnicState *s, Error **errp)
{
    static const struct {
        const char *name;
        uint8_t bit;
    } types[] = {
        { "send", RNIC_RTR_SEND }, { "write", RNIC_RTR_WRITE },
        { "read", RNIC_RTR_READ }, { "none", 0 },
    };
    g_auto(GStrv) names = NULL;

    s->params.mpa_rtr = RNIC_RTR_WRITE | RNIC_RTR_READ;
    if (!s->params.mpa_rtr_str) {
        return true;
    }
    s->params.mpa_rtr = 0;
    names = g_strsplit(s->params.mpa_rtr_str, ",", -1);
    for (char **n = names; *n; n++) {
        size_t i = 0;

        while (i < ARRAY_SIZE(types) && strcmp(*n, types[i].name)) {
            i++;
        }
        if (i == ARRAY_SIZE(types)) {
            error_setg(errp, "rnic: mpa-rtr takes none, or send, write "
                       "and read separated by commas");
            return false;
        }
        s->params.mpa_rtr |= types[i].bit;
    }
    if (s->params.mpa_p2p && !s->params.mpa_rtr) {
        error_setg(errp, "rnic: mpa-p2p needs an RTR type in mpa-rtr");
        return false;
    }
    return true;
}

static bool rnic_parse_properties(RnicState *s, Error **errp)
{
    if (s->params.mpa_rev != 1 && s->params.mpa_rev != 2) {
        error_setg(errp, "rnic: mpa-rev must be 1 or 2");
        return false;
    }
    /* A BAR's size is a power of two; 0: no BAR 4, no direct posting. */
    if (s->params.udb_pages > RNIC_UDB_PAGES_MAX ||
        (s->params.udb_pages & (s->params.udb_pages - 1))) {
        error_setg(errp, "rnic: udb-pages must be 0 or a power of two up "
                   "to %u", RNIC_UDB_PAGES_MAX);
        return false;
    }
    if (s->params.sock_buf &&
        (s->params.sock_buf < RNIC_SOCK_BUF_MIN ||
         s->params.sock_buf > RNIC_SOCK_BUF_MAX)) {
        error_setg(errp, "rnic: sock-buf must be 0 (the kernel's autotuning) "
                   "or %u to %u", RNIC_SOCK_BUF_MIN, RNIC_SOCK_BUF_MAX);
        return false;
    }
    if (!s->params.mpa_crc_str || !strcmp(s->params.mpa_crc_str, "accept")) {
        s->params.mpa_crc = RNIC_MPA_CRC_ACCEPT;
    } else if (!strcmp(s->params.mpa_crc_str, "off")) {
        s->params.mpa_crc = RNIC_MPA_CRC_OFF;
    } else if (!strcmp(s->params.mpa_crc_str, "required")) {
        s->params.mpa_crc = RNIC_MPA_CRC_REQUIRED;
    } else {
        error_setg(errp, "rnic: mpa-crc must be off, accept or required");
        return false;
    }
    if (!s->params.mig_conns_str ||
        !strcmp(s->params.mig_conns_str, "repair")) {
        s->params.mig_repair = true;
    } else if (!strcmp(s->params.mig_conns_str, "reset")) {
        s->params.mig_repair = false;
    } else {
        error_setg(errp, "rnic: migrate-connections must be repair or reset");
        return false;
    }
    return rnic_parse_rtr(s, errp) && rnic_addr_map_init(s, errp);
}

/* Frees what rnic_realize() set up, in reverse order; no DMA after it. */
void rnic_teardown(RnicState *s)
{
    s->unplugged = true;
    if (s->wq_bh) {
        qemu_bh_delete(s->wq_bh);
        qemu_bh_delete(s->cmdq_bh);
        s->wq_bh = s->cmdq_bh = NULL;
    }
    rnic_cm_fini(s);
    rnic_poll_stop(s);
    rnic_verbs_fini(s);
    g_free(s->rx_buf);
    s->rx_buf = NULL;
    rnic_db_fini(s);
}

static void rnic_cmdq_bh(void *opaque)
{
    rnic_guarded_bh(opaque, rnic_cmdq_run, opaque);
}

static void rnic_wq_bh(void *opaque)
{
    rnic_guarded_bh(opaque, rnic_wq_run, opaque);
}

static void rnic_realize(PCIDevice *pdev, Error **errp)
{
    RnicState *s = RNIC(pdev);

    /* A failure from here on leaves the thread to finalize. */
    if (!rnic_parse_properties(s, errp) || !rnic_thread_init(s, errp) ||
        !rnic_capture_realize(s, errp) || !rnic_verbs_init(s, errp)) {
        return;
    }
    if (!rnic_cm_init(s, errp)) {
        rnic_verbs_fini(s);
        return;
    }
    /* QEMU's scheme for NICs without one: 52:54:00:12:34:56 onwards. */
    qemu_macaddr_default_if_unset(&s->params.mac);
    rnic_dma_init(s);
    rnic_dp_init(s);
    rnic_db_init(s);
    memory_region_init_io(&s->regs, OBJECT(s), &rnic_reg_ops, s,
                          "rnic-regs", RNIC_BAR_REGS_SIZE);
    pci_register_bar(pdev, RNIC_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->regs);
    if (s->params.udb_pages) {
        memory_region_init_io(&s->udb, OBJECT(s), &rnic_udb_ops, s,
                              "rnic-udb",
                              (uint64_t)s->params.udb_pages *
                              RNIC_UDB_PAGE_SIZE);
        pci_register_bar(pdev, RNIC_BAR_UDB, PCI_BASE_ADDRESS_SPACE_MEMORY,
                         &s->udb);
    }
    if (msix_init_exclusive_bar(pdev, RNIC_MSIX_VECTORS, RNIC_BAR_MSIX,
                                errp)) {
        rnic_teardown(s);
        return;
    }
    for (unsigned v = 0; v < RNIC_MSIX_VECTORS; v++) {
        msix_vector_use(pdev, v);
    }
    if (pcie_endpoint_cap_init(pdev, RNIC_PCIE_CAP_OFFSET) < 0) {
        error_setg(errp, "rnic: cannot add the PCI Express capability");
        msix_unuse_all_vectors(pdev);
        msix_uninit_exclusive_bar(pdev);
        rnic_teardown(s);
        return;
    }
    s->cmdq_bh = rnic_bh_new(s, rnic_cmdq_bh, s);
    s->wq_bh = rnic_bh_new(s, rnic_wq_bh, s);
    rnic_migrate_init(s);
    trace_rnic_realize(RNIC_ABI_MAJOR, RNIC_ABI_MINOR);
}

/*
 * Hot-unplug and device_del: connections are reset, objects freed.  When
 * a device callback unplugged the device (a DMA write that powers off the
 * slot), the callback still holds connections and QPs: they are freed when
 * it returns, and until then the device stays off the bus.
 */
static void rnic_exit(PCIDevice *pdev)
{
    RnicState *s = RNIC(pdev);

    trace_rnic_unrealize();
    rnic_migrate_fini(s);
    /*
     * With an IOThread, unplugged is set by the teardown there: set here,
     * it would fail the DMA of the IOThread's run in progress (a
     * Terminate to the peer) instead of letting that run finish.
     */
    if (!s->ctx) {
        s->unplugged = true;
    }
    if (!rnic_defer(s, &s->teardown_deferred, "unplug")) {
        /* With an IOThread: it stops touching the device before this. */
        rnic_run_on_ctx(s, rnic_teardown);
    }
    pcie_cap_exit(pdev);
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
}

/*
 * Each property beside its description, which -device rnic,help prints
 * with the type and the default.  QEMU shows no default for strings and
 * links: their descriptions say what unset means.
 */
typedef struct RnicProp {
    Property prop;
    const char *desc;       /* NULL: the type's own */
} RnicProp;

static const RnicProp rnic_props[] = {
    { DEFINE_PROP_UINT32("max-pds", RnicState, params.limits.max_pd, 256),
      "protection domains" },
    { DEFINE_PROP_UINT32("max-mrs", RnicState, params.limits.max_mr, 4096),
      "memory regions at once" },
    { DEFINE_PROP_UINT32("max-mws", RnicState, params.limits.max_mw, 1024),
      "memory windows" },
    { DEFINE_PROP_UINT32("max-cqs", RnicState, params.limits.max_cq, 16384),
      "completion queues" },
    { DEFINE_PROP_UINT32("max-cqes", RnicState, params.limits.max_cqe, 4096),
      "entries per completion queue" },
    { DEFINE_PROP_UINT32("max-qps", RnicState, params.limits.max_qp, 16384),
      "queue pairs" },
    { DEFINE_PROP_UINT32("max-qp-wrs", RnicState, params.limits.max_qp_wr,
                         2048),
      "entries per send or receive queue" },
    { DEFINE_PROP_UINT32("max-srq-wrs", RnicState, params.limits.max_srq_wr,
                         4096),
      "entries per shared receive queue" },
    { DEFINE_PROP_UINT32("max-srqs", RnicState, params.limits.max_srq, 64),
      "shared receive queues" },
    { DEFINE_PROP_UINT32("max-ird", RnicState, params.limits.max_ird, 16),
      "inbound RDMA Reads per QP (IRD)" },
    { DEFINE_PROP_UINT32("max-ord", RnicState, params.limits.max_ord, 16),
      "outbound RDMA Reads per QP (ORD)" },
    { DEFINE_PROP_UINT32("udb-pages", RnicState, params.udb_pages, 64),
      "doorbell pages in BAR 4: 0, or a power of two up to 4096" },
    { DEFINE_PROP_UINT64("max-page-list-bytes", RnicState,
                         params.limits.max_page_list_bytes, 64 * MiB),
      "host memory all MR page lists may hold (regions whose pages are "
      "not contiguous)" },
    { DEFINE_PROP_UINT32("mpa-rev", RnicState, params.mpa_rev, 2),
      "MPA revision to offer: 1 or 2 (RFC 6581)" },
    { DEFINE_PROP_UINT32("timewait-ms", RnicState, params.timewait_ms, 1000),
      "a destroyed QP's number is not reused for this long (virtual clock)" },
    { DEFINE_PROP_UINT32("mpa-timeout-ms", RnicState, params.mpa_timeout_ms,
                         5000),
      "a connection still in its MPA exchange after this long (real time) "
      "is reset" },
    { DEFINE_PROP_UINT32("close-timeout-ms", RnicState,
                         params.close_timeout_ms, 5000),
      "a graceful close not finished after this long (real time) becomes "
      "a reset" },
    { DEFINE_PROP_UINT32("sock-buf", RnicState, params.sock_buf,
                         RNIC_SOCK_BUF_DEFAULT),
      "SO_SNDBUF and SO_RCVBUF of every connection in bytes, 4096 to 2^30; "
      "0: the kernel's autotuning" },
    { DEFINE_PROP_STRING("stag-default", RnicState, params.stag_default),
      "invalidation policy of STags that do not choose: persistent "
      "(default) or one-shot" },
    { DEFINE_PROP_UINT64("fault-drop-after", RnicState,
                         params.fault_drop_after, 0),
      "fault injection: reset a QP's connection after this many bytes "
      "(both ways); 0 = never" },
    { DEFINE_PROP_UINT32("fault-corrupt-crc", RnicState,
                         params.fault_corrupt_crc, 0),
      "fault injection: send every Nth FPDU with an inverted CRC32c (needs "
      "CRC negotiated); 0 = never" },
    { DEFINE_PROP_UINT32("fault-delay-ms", RnicState, params.fault_delay_ms,
                         0),
      "fault injection: hold each FPDU a QP sends this long (real time); "
      "0 = no delay" },
    { DEFINE_PROP_UINT32("siw-compat-hold-ms", RnicState, params.siw_hold_ms,
                         RNIC_SIW_HOLD_MS_DEFAULT),
      "as initiator, send no FPDU until this long after the peer's MPA "
      "Reply (real time): Linux siw misses data that arrives while it "
      "accepts; 0 = off" },
    { DEFINE_PROP_STRING("mpa-crc", RnicState, params.mpa_crc_str),
      "MPA CRC32c policy: off (refuse peers that ask), accept (use it when "
      "the peer asks; default) or required" },
    { DEFINE_PROP_BOOL("mpa-markers", RnicState, params.mpa_markers, false),
      "ask the peer for MPA markers and insert them when asked (siw never "
      "uses them)" },
    { DEFINE_PROP_MACADDR("mac", RnicState, params.mac), NULL },
    { DEFINE_PROP_BOOL("mpa-p2p", RnicState, params.mpa_p2p, false),
      "as initiator, ask for RFC 6581 peer-to-peer mode offering the "
      "mpa-rtr types" },
    { DEFINE_PROP_STRING("mpa-rtr", RnicState, params.mpa_rtr_str),
      "RFC 6581 RTR types offered (mpa-p2p) and taken from a peer that "
      "asks: none, or send, write, read separated by commas (default "
      "write,read)" },
    { DEFINE_PROP_STRING("listen-allow", RnicState, params.listen_allow_str),
      "comma-separated ADDR[/BITS][:PORT[-PORT]] list the guest may LISTEN "
      "on ([v6]:PORT for IPv6); default: none" },
    { DEFINE_PROP_STRING("peer-allow", RnicState, params.peer_allow_str),
      "comma-separated ADDR[/BITS][:PORT[-PORT]] list the guest may CONNECT "
      "to ([v6]:PORT for IPv6); default: none" },
    { DEFINE_PROP_LINK("iothread", RnicState, params.iothread, TYPE_IOTHREAD,
                       IOThread *),
      "run sockets, MPA, placement and completions in this IOThread "
      "(-object iothread,id=ID); default: an IOThread of the device's own" },
    { DEFINE_PROP_BOOL("main-loop", RnicState, params.main_loop, false),
      "no IOThread: run them in QEMU's main loop, as the device's other "
      "work (slower; for debugging, record/replay, fuzzing)" },
    { DEFINE_PROP_STRING("migrate-connections", RnicState,
                         params.mig_conns_str),
      "what a live migration does with a connected QP: repair (move its "
      "socket with TCP repair, where the process has CAP_NET_ADMIN; the "
      "default) or reset (cut it, as a link failure)" },
    { DEFINE_PROP_STRING("addr-map", RnicState, params.addr_map_str),
      "guest addresses to host ones at LISTEN and CONNECT: comma-separated "
      "GUEST/BITS=HOST rules, first match wins, others unchanged (default "
      RNIC_ADDR_MAP_DEFAULT ")" },
};

/* rnic_props' properties alone, as device_class_set_props_n takes them */
static Property rnic_properties[ARRAY_SIZE(rnic_props)];

/*
 * qom-set DEV handoff-fd NAME[:initiator]: offer a TCP connection made
 * outside QEMU (passed with QMP getfd) to the guest as a pending
 * connection.  The host chose the peer, so no listen-allow or peer-allow
 * rule applies (docs/spec.md "Handed-in connections").
 */
static void rnic_set_handoff_fd(Object *obj, const char *value, Error **errp)
{
    RnicState *s = RNIC(obj);
    g_auto(GStrv) parts = g_strsplit(value, ":", 2);
    bool initiator = parts[0] && parts[1] && !strcmp(parts[1], "initiator");
    int fd;

    if (!DEVICE(obj)->realized) {
        error_setg(errp, "rnic: handoff-fd needs a realized device");
        return;
    }
    if (!parts[0] || (parts[1] && !initiator &&
                      strcmp(parts[1], "responder"))) {
        error_setg(errp, "rnic: handoff-fd takes NAME[:initiator|:responder]");
        return;
    }
    /*
     * Only a descriptor passed for the purpose (QMP getfd): it leaves the
     * monitor's list and is the device's to adopt or close.  Never a bare
     * number, which would name one of QEMU's own descriptors.
     */
    if (!monitor_cur()) {
        error_setg(errp, "rnic: handoff-fd is set from the monitor (getfd)");
        return;
    }
    fd = monitor_get_fd(monitor_cur(), parts[0], errp);
    if (fd < 0) {
        return;
    }
    rnic_enter(s);
    if (!rnic_cm_hand_in_fd(s, fd, initiator, errp)) {
        close(fd);
    }
    rnic_leave(s);
}

static void rnic_instance_init(Object *obj)
{
    rnic_stats_init(RNIC(obj));
    rnic_capture_init(RNIC(obj));
    rnic_state_init(RNIC(obj));
    object_property_add_str(obj, "handoff-fd", NULL, rnic_set_handoff_fd);
    object_property_set_description(obj, "handoff-fd",
        "write-only: NAME[:initiator|:responder] of a connected TCP socket "
        "passed with QMP getfd; the guest sees it as a pending connection");
}

static void rnic_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = rnic_realize;
    k->exit = rnic_exit;
    k->vendor_id = RNIC_PCI_VENDOR_ID;
    k->device_id = RNIC_PCI_DEVICE_ID;
    k->subsystem_vendor_id = RNIC_PCI_VENDOR_ID;
    k->subsystem_id = RNIC_PCI_SUBSYS_ID;
    k->revision = RNIC_PCI_REVISION;
    k->class_id = RNIC_PCI_CLASS;
    dc->desc = "Software iWARP RDMA NIC";
    dc->vmsd = &rnic_vmstate;
    for (size_t i = 0; i < ARRAY_SIZE(rnic_props); i++) {
        rnic_properties[i] = rnic_props[i].prop;
    }
    device_class_set_props_n(dc, rnic_properties, ARRAY_SIZE(rnic_props));
    for (size_t i = 0; i < ARRAY_SIZE(rnic_props); i++) {
        if (rnic_props[i].desc) {
            object_class_property_set_description(klass,
                                                  rnic_props[i].prop.name,
                                                  rnic_props[i].desc);
        }
    }
    rc->phases.hold = rnic_reset_hold;
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static void rnic_instance_finalize(Object *obj)
{
    /* the sockets kept for cpr-transfer are closed by now */
    g_free(RNIC(obj)->cpr_conns);
    g_free(RNIC(obj)->cpr_listeners);
    rnic_capture_fini(RNIC(obj));
    rnic_thread_fini(RNIC(obj));
    rnic_stats_fini(RNIC(obj));
}

static const TypeInfo rnic_info = {
    .name = TYPE_RNIC,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(RnicState),
    .instance_init = rnic_instance_init,
    .instance_finalize = rnic_instance_finalize,
    .class_init = rnic_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void rnic_register_types(void)
{
    type_register_static(&rnic_info);
}

type_init(rnic_register_types)
