/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic device state shared by the files of hw/rnic/.
 *
 * rnic-pci.c is the QEMU citizen (PCI, BARs, MSI-X, properties, reset);
 * rnic-regs.c decodes BAR 0 and the doorbell pages of BAR 4, and with an
 * IOThread rnic-db.c carries work-queue and CQ doorbells to it without
 * the device lock; rnic-cmdq.c runs the command queue; rnic-verbs.c and
 * rnic-cm.c carry out commands (rnic-addr.c maps the guest's addresses
 * for rnic-cm.c); rnic-wq.c fetches work requests.  rnic-conn.c owns
 * every connection (socket, handlers, timers, state, freeing); rnic-dp.c
 * is its data-path pump and rnic-fault.c the filter the pump consults.
 * rnic-state.c, rnic-stats.c and rnic-capture.c show the device to the
 * user (the "state" and "stat-*" properties, pcapng captures).
 *
 * Leaves, which call nothing above them: rnic-tables.c (handle lookups),
 * rnic-eq.c (events), rnic-bus.c (DMA and interrupts), rnic-ring.c
 * (every guest ring: one type, one validator), and rnic-stats.c, whose
 * getters only enter and leave the device.  rnic-cq.c (completions to
 * the guest) is one but for rnic_wq_schedule(): from a vCPU's register
 * write it leaves delivery to the work-queue bottom half.
 *
 * rnic-entry.c is every way in (rnic_enter/leave); rnic-thread.c says
 * where all of it runs: the main loop, or an IOThread (-device
 * rnic,iothread=ID) with the device lock taken by rnic_enter().
 */
#ifndef HW_RNIC_H
#define HW_RNIC_H

#include "hw/pci/pci_device.h"
#include "qemu/queue.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "block/aio.h"
#include "qom/object.h"
#include "net/net.h"
#include "qemu/notify.h"
#include "system/runstate.h"
#include "rnic/rnic-abi.h"
#include "device/addr_policy.h"
#include "device/addr_map.h"
#include "iwarp/engine.h"

#define TYPE_RNIC "rnic"
OBJECT_DECLARE_SIMPLE_TYPE(RnicState, RNIC)

typedef struct RnicConn RnicConn;

/* The largest MR QUERY_DEVICE reports and REG_MR accepts: a WR's length. */
#define RNIC_DEV_MAX_MR_SIZE    UINT32_MAX

/* Read-only statistics, QOM properties "stat-*". */
typedef struct RnicStats {
    uint64_t tx_bytes, rx_bytes;
    uint64_t terms_sent, terms_received;
    uint64_t crc_errors;
    uint64_t streams_lost;      /* CRC, marker or length errors */
    uint64_t tx_fpdus;
    uint64_t tx_op[16], rx_op[16];  /* FPDUs by RDMAP opcode */
    uint64_t tx_crc_corrupted;      /* by fault-corrupt-crc */
    uint64_t cqe[16];           /* by enum rnic_cqe_status */
    /* Terminates by code: key RNIC_STAT_TERM_KEY(), value a count */
    GHashTable *terms;
} RnicStats;

#define RNIC_STAT_TERM_KEY(sent, layer, etype, ecode) \
    GUINT_TO_POINTER((uint32_t)(sent) << 24 | (layer) << 16 | \
                     (etype) << 8 | (ecode))

/*
 * A ring in guest memory, the one type of every guest ring (rnic-ring.c):
 * the command and event queues, CQs, SQs, RQs and SRQs.
 */
typedef struct RnicRing {
    uint64_t base;          /* 4 KiB aligned */
    uint32_t log_size;      /* 2^log_size entries */
    uint32_t entry_size;    /* bytes */
    uint32_t prod;          /* free-running */
    uint32_t cons;          /* free-running */
} RnicRing;

/*
 * Ring sizes (log2 entries): the command and event queues at most 2^12
 * (ABI), CQs and work queues 2^15 (their doorbell indices are 16 bits,
 * and a ring of 65536 could not tell full from empty).
 */
#define RNIC_RING_LOG_MIN   1
#define RNIC_ADMIN_LOG_MAX  12
#define RNIC_WQ_LOG_MAX     15

typedef struct RnicLimits {
    uint32_t max_pd;
    uint32_t max_mr;
    uint32_t max_mw;
    uint32_t max_cq;
    uint32_t max_cqe;
    uint32_t max_qp;
    uint32_t max_qp_wr;
    uint32_t max_srq_wr;
    uint32_t max_srq;
    uint32_t max_ird;
    uint32_t max_ord;
    uint64_t max_page_list_bytes;   /* heap for non-contiguous MRs */
} RnicLimits;

/* A completion queue: the core's staging ring plus the guest's ring. */
typedef struct RnicCq {
    RnicState *s;
    struct rnic_cq *core;
    uint32_t cqn;
    RnicRing ring;          /* prod: entries written; cons: DB_CQ */
    uint8_t vector;
    uint16_t udb;           /* doorbell page + 1 that may ring it; 0: none */
    bool irq_pending;       /* the core's arm fired: signal after writing */
    bool overflow_reported;
    bool kicked;            /* on RnicState.kicked_cqs */
    QTAILQ_ENTRY(RnicCq) kick_link;
} RnicCq;

typedef struct RnicSrq {
    struct rnic_srq *core;
    uint32_t srqn;
    uint32_t pdn;
    RnicRing ring;          /* cons: WQEs taken; prod: the last doorbell */
    uint16_t udb;           /* as RnicCq's */
    uint32_t limit;         /* MODIFY_SRQ's; 0: not armed */
    bool kicked;            /* on RnicState.kicked_srqs */
    QTAILQ_ENTRY(RnicSrq) kick_link;
} RnicSrq;

typedef struct RnicQp {
    struct rnic_qp *core;
    uint32_t qpn;
    uint32_t pdn;
    RnicCq *scq, *rcq;
    RnicSrq *srq;
    /* cons: WQEs taken from the guest rings; prod: the last doorbells */
    RnicRing sq, rq;
    uint16_t udb;                       /* as RnicCq's */
    RnicConn *conn;                     /* the adopted connection */
    /* The peer's Reject of this QP's last CONNECT, for QUERY_CONN */
    struct rnic_conn_info *rejected;
    uint32_t rejected_conn;
    uint8_t term;                       /* last Terminate: RNIC_QP_TERM_* */
    uint8_t term_layer, term_etype, term_ecode;
    bool kicked;                        /* on RnicState.kicked */
    QTAILQ_ENTRY(RnicQp) kick_link;
} RnicQp;

#define RNIC_MAX_LISTENERS  16

/*
 * siw-compat-hold-ms: longer than siw's accept window under TCG, measured
 * in docs/driver-guide.md ("siw's accept window").
 */
#define RNIC_SIW_HOLD_MS_DEFAULT    50

/* sock-buf: SO_SNDBUF and SO_RCVBUF of every connection (rnic-conn.c) */
#define RNIC_SOCK_BUF_DEFAULT   (4u << 20)
#define RNIC_SOCK_BUF_MIN       4096u
#define RNIC_SOCK_BUF_MAX       (1u << 30)

#define RNIC_MAX_BACKLOG    128

typedef struct RnicListener {
    RnicState *s;
    uint32_t id;            /* 0: free slot */
    int fd;                 /* -1: the port is to be bound again (retry) */
    struct rnic_sockaddr local;
    uint32_t backlog;       /* connections not yet accepted, at most */
    uint32_t waiting;       /* connections not yet accepted, now */
    bool watched;           /* its socket's handler is on: it has room */
    QEMUTimer *retry;       /* accept() failed for want of resources */
} RnicListener;

typedef enum RnicConnState {
    RNIC_CONN_CONNECTING,   /* TCP connect in progress (CONNECT) */
    RNIC_CONN_WAIT_REPLY,   /* our MPA Request sent */
    RNIC_CONN_WAIT_REQUEST, /* accepted by the host, MPA Request expected */
    RNIC_CONN_PENDING,      /* reported to the guest: ACCEPT or REJECT */
    RNIC_CONN_REJECTING,    /* sending an MPA Reject, then close */
    RNIC_CONN_RTS,          /* adopted by a QP: the stream is the QP's */
    RNIC_CONN_DRAINING,     /* QP CLOSING: sending what is left */
    RNIC_CONN_FIN_WAIT,     /* our FIN sent: waiting for the peer's */
} RnicConnState;

/* What the data-path pump (rnic-dp.c) tells the connection's owner. */
typedef enum RnicVerdict {
    RNIC_DP_OK,             /* nothing to send now: wait for the peer */
    RNIC_DP_BLOCKED,        /* the socket pushed back: wait until writable */
    RNIC_DP_MORE,           /* the budget of this run is spent: run again */
    RNIC_DP_DELAYED,        /* fault-delay-ms holds the next burst */
    RNIC_DP_ABORT,          /* reset the connection */
} RnicVerdict;

struct RnicConn {
    RnicState *s;
    uint32_t id;            /* RNIC_CONN_ID_MIN.., unique (rnic-conn.c) */
    uint32_t slot;          /* in RnicState.conns */
    int fd;
    RnicConnState state;
    bool initiator;         /* we send the MPA Request */
    bool passive;           /* not the guest's CONNECT: no reserved slot */
    bool waiting;           /* counted in its listener's waiting */
    uint32_t listener_id;   /* RNIC_LISTENER_HANDED_IN for handed-in fds */
    struct RnicQp *qp;
    struct rnic_mpa_conn mpa;
    struct rnic_sockaddr local, peer;
    /* MPA frame (or Reject) still to be written */
    uint8_t out[RNIC_MPA_FRAME_MAX];
    size_t out_len, out_off;
    /* bytes read past the peer's MPA frame: the first FPDUs */
    uint8_t early[2048];
    size_t early_len;
    QEMUTimer *deadline;    /* MPA exchange or graceful close too slow */
    QEMUBH *bh;             /* the pump again: main loop, and thaw */
    /* the handlers registered on fd: changed only when they differ */
    IOHandler *watch_rd, *watch_wr;
    /* RTS: the QP's iWARP stream (rnic-dp.c) */
    struct rnic_ep *ep;
    bool rx_stopped;        /* Terminate sent or stream lost */
    bool close_pending;     /* close once the transmit side is flushed */
    bool peer_fin;          /* the peer closed its side */
    /* fault injection (rnic-fault.c) */
    uint8_t bad_crc[RNIC_EP_TX_BATCH_FPDUS][4];
    uint64_t bytes;         /* both directions, for fault-drop-after */
    uint64_t corrupted;     /* 1 + seq of the FPDU last corrupted */
    QEMUTimer *delay_timer;
    bool delay_done;        /* the delay before this burst has passed */
    int64_t hold_until;     /* siw-compat-hold-ms: no FPDU before (ms) */
    /* frozen (the VM stopped): ms left on each timer, -1 if unarmed */
    int64_t deadline_left, delay_left;
    /*
     * A migration's TCP repair state: the socket left (fd -1), or came in
     * and waits in repair mode; either way it goes live at thaw.
     */
    uint8_t *moved;
    size_t moved_len;
};

/*
 * The device's parameters: its properties (rnic_props in rnic-pci.c,
 * where each is described) and what realize makes of the string ones.
 * Fixed from realize on.
 */
typedef struct RnicParams {
    RnicLimits limits;
    uint32_t udb_pages;
    uint32_t mpa_rev;
    uint32_t timewait_ms;
    uint32_t mpa_timeout_ms;
    uint32_t close_timeout_ms;
    uint32_t sock_buf;              /* SO_SNDBUF and SO_RCVBUF; 0: kernel's */
    uint64_t fault_drop_after;      /* bytes per connection; 0: off */
    uint32_t fault_corrupt_crc;     /* every Nth FPDU sent; 0: off */
    uint32_t fault_delay_ms;        /* before each burst sent; 0: off */
    uint32_t siw_hold_ms;           /* siw-compat-hold-ms (rnic-dp.c) */
    bool mpa_markers;
    bool mpa_p2p;                   /* initiator offers RFC 6581 p2p */
    char *mig_conns_str;            /* migrate-connections */
    bool mig_repair;                /* repair (else reset) */
    MACAddr mac;                    /* QUERY_DEVICE reports it */
    struct IOThread *iothread;      /* NULL: the device's own */
    bool main_loop;                 /* main-loop=on: no IOThread at all */
    /* given as strings; parsed at realize into the field below each */
    char *mpa_crc_str;
    enum rnic_mpa_crc_policy mpa_crc;
    char *mpa_rtr_str;
    uint8_t mpa_rtr;                /* RNIC_RTR_* offered and taken */
    char *stag_default;
    bool stag_one_shot;
    char *listen_allow_str;
    struct rnic_addr_policy listen_allow;
    char *peer_allow_str;
    struct rnic_addr_policy peer_allow;
    char *addr_map_str;
    struct rnic_addr_map addr_map;  /* rnic-addr.c */
} RnicParams;

struct RnicState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion udb;       /* BAR 4: doorbell pages (rnic-regs.c) */
    QEMUBH *cmdq_bh;

    /* rnic-thread.c: NULL (main-loop=on), or an IOThread's context */
    AioContext *ctx;
    struct IOThread *own_iothread;  /* without params.iothread: ours */
    struct RnicPoller *poller;  /* rnic-poll.c: the sockets, polled */
    QemuRecMutex lock;      /* with an IOThread: held inside rnic_enter */
    int owner_tid;          /* the thread inside rnic_enter, or 0 */
    QEMUBH *irq_bh;         /* main loop: sends the vectors in irq_mask */
    uint32_t irq_mask;      /* vectors the IOThread asked for (atomic) */

    /* rnic-entry.c: how deep in device callbacks, and what waits for them */
    unsigned entry_depth;
    bool guard_saved;       /* the re-entrancy guard before the first entry */
    bool running_deferred;
    bool reset_deferred;
    bool teardown_deferred;
    bool unplugged;         /* unrealized: no more DMA or MSI-X */
    bool in_mmio;           /* CQs are delivered by the bottom half */
    bool wq_kick;           /* run it once the MMIO access is over */
    uint32_t *db_mail;      /* with an IOThread: rnic-db.c */
    uint16_t *db_owner;     /* udb of each slot's queue, read without lock */
    unsigned long *db_pending;
    unsigned long *db_summary;  /* a bit per word of db_pending in use */
    uint64_t db_slots;

    uint32_t scratch;
    uint32_t status;
    uint32_t control;
    RnicRing cmdq;
    uint64_t cmdq_cost;     /* of this command-queue run: page-list bytes */
    RnicRing eq;
    uint64_t eq_dropped;

    /* objects, created by commands (rnic-verbs.c) */
    struct rnic_dma dma;
    AddressSpace *dma_as;   /* bus-master space: all DMA (rnic-bus.c) */
    MemoryRegionCache ram;  /* RAM copies within one entry (rnic-bus.c) */
    uint64_t ram_base;      /* the guest address of ram.ptr */
    bool ram_live;          /* ram holds references until rnic_ram_drop */
    struct rnic_stag_table *stags;
    struct rnic_qpn_table *qpns;
    RnicCq **cqs;           /* [max_cq], cqn = index + 1 */
    RnicSrq **srqs;         /* [max_srq], srqn = index + 1 */
    QEMUBH *wq_bh;
    QTAILQ_HEAD(, RnicQp) kicked;
    QTAILQ_HEAD(, RnicCq) kicked_cqs;
    QTAILQ_HEAD(, RnicSrq) kicked_srqs;

    RnicStats stats;
    uint8_t *rx_buf;        /* one receive buffer: one thread reads */

    /* connections (rnic-conn.c, rnic-cm.c) */
    RnicListener listeners[RNIC_MAX_LISTENERS];
    RnicConn **conns;       /* [max_conns] */
    uint32_t max_conns;
    uint32_t passive_conns; /* listeners' and handed in: max_conns - max_qp */
    GHashTable *conn_ids;   /* id -> RnicConn */
    uint32_t conn_last_id;  /* the id given last; kept across resets */

    RnicParams params;

    /* rnic-migrate.c */
    bool frozen;            /* the VM is stopped: no host I/O, no DMA */
    VMChangeStateEntry *vmse;
    NotifierWithReturn mig_notifier;
    uint8_t *mig_objects;   /* the objects' bytes while saving or loading */
    uint32_t mig_objects_len;
    bool mig_loaded;        /* thaw serves what a load brought */
    /* cpr-transfer: the names this device's sockets are kept under */
    char *cpr_conns, *cpr_listeners;
    GArray *mig_cut;        /* RnicCut: connections a migration cut */

    /* capture (rnic-capture.c): the writer, NULL while off */
    struct rnic_cap *capture;
    struct RnicCapture *capture_cfg;
};

/* rnic-regs.c */
extern const MemoryRegionOps rnic_reg_ops;
extern const MemoryRegionOps rnic_udb_ops;

/* rnic-cmdq.c */
void rnic_cmdq_kick(RnicState *s);
void rnic_cmdq_run(void *opaque);
const char *rnic_cmd_name(uint8_t opcode);
/*
 * Logs why the command of @opcode (RNIC_CMD_*) failed, a guest error
 * naming the field, under the command table's name, and traces it:
 * rnic_err_cmd when the host's limits, policy or sockets refused it
 * (ERR_RESOURCE, ERR_DENIED, ERR_ADDRINUSE), rnic_ub_cmd otherwise.
 * Returns @status.
 */
uint16_t rnic_cmd_fail(uint8_t opcode, uint16_t status, const char *why);

/* rnic-verbs.c */
typedef uint16_t RnicCmdFn(RnicState *s, struct rnic_cmd *cmd);
RnicCmdFn rnic_cmd_create_pd, rnic_cmd_destroy_pd, rnic_cmd_reg_mr,
    rnic_cmd_dereg_mr, rnic_cmd_alloc_mw, rnic_cmd_bind_mw,
    rnic_cmd_dealloc_mw, rnic_cmd_create_cq, rnic_cmd_destroy_cq,
    rnic_cmd_create_qp, rnic_cmd_modify_qp, rnic_cmd_query_qp,
    rnic_cmd_destroy_qp, rnic_cmd_create_srq, rnic_cmd_destroy_srq,
    rnic_cmd_modify_srq,
    rnic_cmd_invalidate, rnic_cmd_alloc_mr;
/* The create commands' checks and work with the object's number given. */
uint16_t rnic_dev_cq_make(RnicState *s, struct rnic_cmd_cq *p, uint32_t i);
uint16_t rnic_dev_srq_make(RnicState *s, struct rnic_cmd_srq *p, uint32_t i);
uint16_t rnic_dev_qp_make(RnicState *s, struct rnic_cmd_qp *p, uint32_t qpn);
bool rnic_verbs_init(RnicState *s, Error **errp);
void rnic_verbs_reset(RnicState *s);
void rnic_verbs_fini(RnicState *s);
/* The data path's: MODIFY_SRQ's limit, checked as receives complete. */
void rnic_dev_srq_check_limit(RnicState *s, RnicSrq *srq);
/* The QP's last Terminate, for QUERY_QP. */
void rnic_dev_qp_note_term(RnicQp *qp, bool sent, uint8_t layer, uint8_t etype,
                           uint8_t ecode);

/* rnic-tables.c (leaf): handle lookups; NULL for no live object */
RnicQp *rnic_dev_qp_get(RnicState *s, uint32_t qpn);
RnicCq *rnic_dev_cq_get(RnicState *s, uint32_t cqn);
RnicSrq *rnic_dev_srq_get(RnicState *s, uint32_t srqn);
RnicConn *rnic_conn_get(RnicState *s, uint32_t id);

/* rnic-wq.c */
void rnic_wq_doorbell(RnicState *s, hwaddr reg, uint32_t val, uint16_t udb);
void rnic_wq_run(void *opaque);
void rnic_wq_schedule(RnicState *s);
void rnic_wq_db_apply(RnicState *s, hwaddr reg, uint32_t val, uint16_t udb);
void rnic_wq_recv_now(RnicState *s, RnicQp *qp);
void rnic_wq_cq_arm_early(RnicState *s, RnicCq *cq);
void rnic_wq_cq_arm_late(RnicState *s, RnicCq *cq, bool solicited);
/* Their rings are fetched from at the next run. */
void rnic_dev_qp_kick(RnicState *s, RnicQp *qp);
void rnic_dev_srq_kick(RnicState *s, RnicSrq *srq);

/* rnic-db.c */
void rnic_db_init(RnicState *s);
void rnic_db_fini(RnicState *s);
bool rnic_db_post(RnicState *s, hwaddr reg, uint32_t val, uint16_t udb);
void rnic_db_own(RnicState *s, hwaddr reg, uint32_t id, uint16_t udb);
void rnic_db_drain(RnicState *s, bool apply);
void rnic_db_take(RnicState *s, hwaddr reg, uint32_t id);
bool rnic_db_take_value(RnicState *s, hwaddr reg, uint32_t id,
                        uint32_t *val, uint16_t *udb);

/*
 * rnic-cq.c (a leaf but for rnic_wq_schedule()): the core tells which CQs
 * changed (rnic_dev_cq_changed); they are written to the guest's rings when
 * the device callback ends, or earlier by rnic_cqs_deliver() where an
 * event must follow them.
 */
void rnic_dev_cq_changed(void *opaque, struct rnic_cq *core);
void rnic_dev_cq_kick(RnicState *s, RnicCq *cq);
void rnic_dev_cq_deliver(RnicState *s, RnicCq *cq);
void rnic_cqs_deliver(RnicState *s);

/* rnic-addr.c: the addr-map property, guest addresses to host ones */
bool rnic_addr_map_init(RnicState *s, Error **errp);
struct rnic_sockaddr rnic_addr_to_host(RnicState *s,
                                       const struct rnic_sockaddr *guest);

/* rnic-cm.c: connection commands, listeners, address policy */
void rnic_conn_info_fill(const RnicConn *c, struct rnic_conn_info *info);
RnicCmdFn rnic_cmd_listen, rnic_cmd_unlisten, rnic_cmd_connect,
    rnic_cmd_accept, rnic_cmd_reject, rnic_cmd_disconnect,
    rnic_cmd_query_conn;
bool rnic_cm_init(RnicState *s, Error **errp);
void rnic_cm_reset(RnicState *s);
void rnic_cm_fini(RnicState *s);
bool rnic_cm_hand_in_fd(RnicState *s, int fd, bool initiator, Error **errp);
void rnic_listeners_watch(RnicState *s);
void rnic_listener_restore(RnicState *s, uint32_t id,
                           const struct rnic_sockaddr *local,
                           uint32_t backlog);
void rnic_listeners_unbind(RnicState *s);
void rnic_listeners_thaw(RnicState *s);
void rnic_sockaddr_from_host(const struct sockaddr_storage *ss,
                             struct rnic_sockaddr *a);
void rnic_mpa_params_for(RnicState *s, uint16_t ird, uint16_t ord,
                         const uint8_t *pd, uint16_t pd_len, uint8_t rtr,
                         struct rnic_mpa_params *p);

/* rnic-conn.c: the one owner of every connection */
RnicConn *rnic_conn_new(RnicState *s, int fd, bool initiator, bool passive);
void rnic_conn_set_state(RnicConn *c, RnicConnState state);
void rnic_conn_send_mpa(RnicConn *c, const void *buf, size_t len);
void rnic_conn_adopt(RnicConn *c);
void rnic_conn_drop(RnicConn *c);
void rnic_conn_abort(RnicConn *c);
void rnic_conn_disconnect(RnicConn *c);
void rnic_conn_local_error(RnicConn *c);
void rnic_conn_run(RnicConn *c);
void rnic_conns_close_all(RnicState *s);
void rnic_conn_qp_gone(RnicQp *qp);
void rnic_conn_freeze(RnicConn *c);
void rnic_conn_thaw(RnicConn *c);
/* Pump runs (of RNIC_EP_TX_BATCH_BYTES) to get a stream quiet to move. */
#define RNIC_DP_QUIESCE_RUNS    16
bool rnic_conn_quiesce(RnicConn *c);
void rnic_conn_detach(RnicConn *c, uint8_t *blob, size_t len);
bool rnic_conn_reattach(RnicConn *c);
RnicConn *rnic_conn_moved_in(RnicState *s, int fd, const uint8_t *blob,
                             size_t len, uint32_t id, bool initiator,
                             bool passive, RnicQp *qp,
                             const struct rnic_mpa_conn *mpa, uint32_t mulpdu);

/* rnic-dp.c: the data-path pump; frees only the endpoint (rnic_dp_stop) */
void rnic_dp_init(RnicState *s);
/* @mulpdu: a moved stream's; 0: from the socket's MSS */
bool rnic_dp_start(RnicConn *c, uint32_t mulpdu);
int64_t rnic_dp_delay_end(RnicConn *c);
void rnic_dp_stop(RnicConn *c);
RnicVerdict rnic_dp_rx(RnicConn *c);
RnicVerdict rnic_dp_tx(RnicConn *c);

/* rnic-fault.c: the filter the pump consults */
int rnic_fault_tx_filter(RnicConn *c, struct iovec *iov, int cnt, int max,
                         const struct rnic_ep_tx_fpdu *fpdus, int nfpdus);
bool rnic_fault_drop(RnicConn *c, size_t bytes);
bool rnic_fault_delay(RnicConn *c);

/* rnic-stats.c */
void rnic_stats_init(RnicState *s);
void rnic_stats_fini(RnicState *s);
void rnic_stats_term(RnicState *s, bool sent, uint8_t layer, uint8_t etype,
                     uint8_t ecode);

/* rnic-capture.c (hooks: rnic-capture.h) */
void rnic_capture_init(RnicState *s);
bool rnic_capture_realize(RnicState *s, Error **errp);
void rnic_capture_fini(RnicState *s);

/* rnic-migrate.c */
extern const VMStateDescription rnic_vmstate;
void rnic_migrate_init(RnicState *s);
void rnic_migrate_fini(RnicState *s);
/*
 * cpr-transfer hands every socket the device holds to the new QEMU: each
 * is kept under (@name, @id) from its making to its closing; a new QEMU
 * takes the one it finds (-1: none).
 */
void rnic_cpr_keep(const char *name, uint32_t id, int fd);
void rnic_cpr_drop(const char *name, uint32_t id);
int rnic_cpr_take(const char *name, uint32_t id);

/* rnic-state.c */
void rnic_state_init(RnicState *s);

/* rnic-eq.c */
void rnic_eq_post(RnicState *s, uint8_t type, uint32_t id, uint32_t arg0,
                  uint32_t arg1);

/* rnic-pci.c */
void rnic_soft_reset(RnicState *s);
void rnic_reset_now(RnicState *s);
void rnic_teardown(RnicState *s);

/* rnic-bus.c: all DMA and MSI-X; -1 (logged as a guest error) on failure */
int rnic_pci_read(RnicState *s, uint64_t addr, void *buf, size_t len);
int rnic_pci_write(RnicState *s, uint64_t addr, const void *buf, size_t len);
void rnic_dma_init(RnicState *s);
void rnic_ram_drop(RnicState *s);
void rnic_irq(RnicState *s, unsigned vector);
void rnic_irq_bh(void *opaque);

/*
 * rnic-entry.c: every callback from QEMU runs inside rnic_enter/leave (or
 * through rnic_guarded).  rnic_inside(): this thread is in one.
 * rnic_defer() returns true, having set *flag, when the caller is inside
 * a callback and must leave @what to its end.
 */
void rnic_enter(RnicState *s);
void rnic_leave(RnicState *s);
void rnic_guarded(RnicState *s, void (*fn)(void *), void *opaque);
void rnic_guarded_bh(RnicState *s, void (*fn)(void *), void *opaque);
bool rnic_inside(RnicState *s);
bool rnic_defer(RnicState *s, bool *flag, const char *what);

/* rnic-thread.c: handlers, timers and BHs on the device's context */
bool rnic_in_iothread(RnicState *s);
void rnic_set_fd_handler(RnicState *s, int fd, IOHandler *rd, IOHandler *wr,
                         void *opaque);
QEMUTimer *rnic_timer_new_ms(RnicState *s, QEMUTimerCB *cb, void *opaque);
QEMUBH *rnic_bh_new(RnicState *s, QEMUBHFunc *cb, void *opaque);
bool rnic_thread_init(RnicState *s, Error **errp);
void rnic_thread_fini(RnicState *s);
void rnic_run_on_ctx(RnicState *s, void (*fn)(RnicState *s));

/* rnic-poll.c: the sockets of a device on an IOThread, as one handler */
void rnic_poll_init(RnicState *s);
void rnic_poll_set(RnicState *s, int fd, IOHandler *rd, IOHandler *wr,
                   void *opaque);
void rnic_poll_stop(RnicState *s);
void rnic_poll_fini(RnicState *s);
void rnic_poll_turn(RnicState *s);

/* rnic-ring.c */
/* Base 4 KiB aligned, RNIC_RING_LOG_MIN <= log_size <= @max_log. */
bool rnic_ring_ok(uint64_t base, uint32_t log_size, uint32_t max_log);
void rnic_ring_init(RnicRing *r, uint64_t base, uint32_t log_size,
                    uint32_t entry_size);
uint64_t rnic_ring_addr(const RnicRing *r, uint32_t index);
/* The phase bit the device writes into entry @index (CQ, event queue). */
uint8_t rnic_ring_phase(const RnicRing *r, uint32_t index);
/* Entry @index, entry_size bytes; nonzero on a DMA error. */
int rnic_ring_read(RnicState *s, const RnicRing *r, uint32_t index,
                   void *buf);
/*
 * The first @len bytes (at most entry_size) of entry @index of a ring the
 * driver polls by phase (CQ, event queue): the @phase_len bytes at
 * @phase_off, which hold the phase, go last.
 */
int rnic_ring_write(RnicState *s, const RnicRing *r, uint32_t index,
                    const void *buf, size_t len, size_t phase_off,
                    size_t phase_len);
/* A doorbell's 16-bit producer index; false if more than a ring ahead. */
bool rnic_ring_db_prod(RnicRing *r, uint16_t idx);
/* A doorbell's 16-bit consumer index (a CQ's), never past prod. */
void rnic_ring_db_cons(RnicRing *r, uint16_t idx);

static inline uint32_t rnic_ring_entries(const RnicRing *r)
{
    return 1u << r->log_size;
}

static inline uint32_t rnic_ring_used(const RnicRing *r)
{
    return r->prod - r->cons;
}

#endif /* HW_RNIC_H */
