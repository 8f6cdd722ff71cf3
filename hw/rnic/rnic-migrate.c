/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Snapshots and migration (docs/spec.md "Migration").
 *
 * While the VM is stopped the device is frozen: no socket handler, timer
 * or bottom half of it runs, so nothing reaches guest memory or the
 * interrupt controller after the device's state is saved; the host's
 * socket buffers hold what the peers send meanwhile.
 *
 * The stream holds the registers and the admin rings as fields, and the
 * objects (the protection table, QP numbers, CQs, SRQs, QPs, listeners and
 * connections) as one buffer the core's save.h and this file write.  A
 * load rebuilds each object through its create command's own checks, so
 * a damaged stream is refused as a bad command would be, then fills in
 * what the object holds.  Nothing is sent to the guest during the load:
 * what the move changed (connections cut, CQEs waiting, doorbells not yet
 * served) reaches it when the VM runs again.
 *
 * Connections do not move: on the destination each is reported as a link
 * failure gives it (CONN_CLOSED with the QP flushed to ERROR, or
 * CONN_ERROR during the MPA exchange), so ULPs that reconnect do.
 * Listeners bind their host address and port again; while the source on
 * the same host still holds the port, they retry until it gives it up
 * when its migration completes.
 */
#include "qemu/osdep.h"
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include "qemu/error-report.h"
#include "hw/pci/msix.h"
#include "qapi/qapi-types-migration.h"
#include "migration/client-options.h"
#include "migration/cpr.h"
#include "migration/misc.h"
#include "migration/vmstate.h"
#include "device/tcp_repair.h"
#include "rnic.h"
#include "trace.h"

/* The objects buffer's own format; the section's version is the VMState's. */
#define RNIC_MIG_OBJECTS_VERSION   1

/* Unacknowledged bytes waited for before a socket is closed for a move. */
#define RNIC_MIG_ACK_WAIT_STEPS    20
#define RNIC_MIG_ACK_WAIT_US       (5 * 1000)

/* A connection the migration cut, reported when the VM runs. */
typedef struct RnicCut {
    uint32_t id;
    uint32_t qpn;           /* the guest's QP; 0: a pending request */
    uint8_t state;          /* RnicConnState */
} RnicCut;

/* ---- freezing ---- */

static void rnic_freeze(RnicState *s)
{
    rnic_enter(s);
    rnic_db_drain(s, true);     /* doorbells rung before the stop count */
    qemu_bh_cancel(s->cmdq_bh);
    qemu_bh_cancel(s->wq_bh);
    for (uint32_t i = 0; i < s->max_conns; i++) {
        if (s->conns[i] && s->params.mig_repair) {
            rnic_conn_quiesce(s->conns[i]);
        }
    }
    s->frozen = true;
    for (uint32_t i = 0; i < s->max_conns; i++) {
        if (s->conns[i]) {
            rnic_conn_freeze(s->conns[i]);
        }
    }
    for (int i = 0; i < RNIC_MAX_LISTENERS; i++) {
        RnicListener *l = &s->listeners[i];

        if (l->id && l->fd >= 0) {
            rnic_set_fd_handler(s, l->fd, NULL, NULL, NULL);
            timer_del(l->retry);
        }
    }
    trace_rnic_freeze(true);
    rnic_leave(s);
}

/* The connections a load cut, as a link failure reports them. */
static void rnic_cuts_report(RnicState *s)
{
    for (guint i = 0; s->mig_cut && i < s->mig_cut->len; i++) {
        RnicCut *c = &g_array_index(s->mig_cut, RnicCut, i);
        RnicQp *qp = c->qpn ? rnic_dev_qp_get(s, c->qpn) : NULL;

        if (c->state >= RNIC_CONN_RTS && qp) {
            rnic_qp_modify(qp->core, RNIC_QP_ERROR);
            rnic_cqs_deliver(s);
            rnic_eq_post(s, RNIC_EV_CONN_CLOSED, qp->qpn, 1, 0);
        } else if (qp || c->state == RNIC_CONN_PENDING) {
            rnic_cqs_deliver(s);
            rnic_eq_post(s, RNIC_EV_CONN_ERROR, qp ? qp->qpn : c->id,
                         ECONNRESET, 0);
        }
        trace_rnic_mig_cut(c->id, c->qpn, c->state);
    }
    if (s->mig_cut) {
        g_array_set_size(s->mig_cut, 0);
    }
}

/*
 * After a load: what waited in the rings and the core's CQs is served,
 * and each vector fires once, since an interrupt raised on the source
 * after its state was saved is not in the stream (a spurious interrupt
 * costs a look at an empty queue; a lost one, a hang).
 */
static void rnic_loaded_kick(RnicState *s)
{
    void *p;

    for (uint32_t n = 1; n <= s->params.limits.max_qp; n++) {
        if (rnic_qpn_lookup(s->qpns, n, &p) == RNIC_QPN_LIVE) {
            rnic_dev_qp_kick(s, p);
        }
    }
    for (uint32_t i = 0; i < s->params.limits.max_srq; i++) {
        if (s->srqs[i]) {
            rnic_dev_srq_kick(s, s->srqs[i]);
        }
    }
    for (uint32_t i = 0; i < s->params.limits.max_cq; i++) {
        if (s->cqs[i]) {
            rnic_dev_cq_kick(s, s->cqs[i]);
        }
    }
    for (unsigned v = 0; v < RNIC_MSIX_VECTORS; v++) {
        rnic_irq(s, v);
    }
}

static void rnic_thaw(RnicState *s)
{
    rnic_enter(s);
    if (s->frozen) {
        s->frozen = false;
        for (uint32_t i = 0; i < s->max_conns; i++) {
            RnicConn *c = s->conns[i];

            if (c && c->moved && !rnic_conn_reattach(c)) {
                rnic_conn_abort(c);
            } else if (c) {
                rnic_conn_thaw(c);
            }
        }
        rnic_listeners_thaw(s);
        rnic_cuts_report(s);
        if (s->mig_loaded) {
            s->mig_loaded = false;
            rnic_loaded_kick(s);
        }
        qemu_bh_schedule(s->cmdq_bh);
        qemu_bh_schedule(s->wq_bh);
        trace_rnic_freeze(false);
    }
    rnic_leave(s);
}

static void rnic_vm_state(void *opaque, bool running, RunState state)
{
    RnicState *s = opaque;

    rnic_run_on_ctx(s, running ? rnic_thaw : rnic_freeze);
}

/*
 * The source's migration completed: the ports its listeners hold go to
 * the destination (on the same host, it retries until they are free).
 * Should this VM run again, thaw binds them again.
 */
static int rnic_mig_event(NotifierWithReturn *n, MigrationEvent *e,
                          Error **errp)
{
    RnicState *s = container_of(n, RnicState, mig_notifier);

    if (e->type == MIG_EVENT_PRECOPY_DONE) {
        rnic_enter(s);
        rnic_listeners_unbind(s);
        rnic_leave(s);
    }
    return 0;
}

void rnic_cpr_keep(const char *name, uint32_t id, int fd)
{
    cpr_save_fd(name, id, fd);
}

void rnic_cpr_drop(const char *name, uint32_t id)
{
    cpr_delete_fd(name, id);
}

int rnic_cpr_take(const char *name, uint32_t id)
{
    int fd = cpr_find_fd(name, id);

    if (fd >= 0) {
        cpr_delete_fd(name, id);
    }
    return fd;
}

void rnic_migrate_init(RnicState *s)
{
    g_autofree char *path = object_get_canonical_path(OBJECT(s));

    s->cpr_conns = g_strdup_printf("rnic-conn:%s", path);
    s->cpr_listeners = g_strdup_printf("rnic-listener:%s", path);
    s->frozen = !runstate_is_running();
    s->mig_cut = g_array_new(false, true, sizeof(RnicCut));
    s->vmse = qemu_add_vm_change_state_handler(rnic_vm_state, s);
    migration_add_notifier(&s->mig_notifier, rnic_mig_event);
}

void rnic_migrate_fini(RnicState *s)
{
    if (s->vmse) {
        migration_remove_notifier(&s->mig_notifier);
        qemu_del_vm_change_state_handler(s->vmse);
        s->vmse = NULL;
    }
    g_free(s->mig_objects);
    s->mig_objects = NULL;
    if (s->mig_cut) {
        g_array_free(s->mig_cut, true);
        s->mig_cut = NULL;
    }
}

/* ---- saving ---- */

static void rnic_ring_save(struct rnic_sv *b, const RnicRing *r)
{
    rnic_sv_u64(b, r->base);
    rnic_sv_u8(b, r->log_size);
    rnic_sv_u32(b, r->prod);
    rnic_sv_u32(b, r->cons);
}

static void rnic_cqs_save(struct rnic_sv *b, RnicState *s)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < s->params.limits.max_cq; i++) {
        n += !!s->cqs[i];
    }
    rnic_sv_u32(b, n);
    for (uint32_t i = 0; i < s->params.limits.max_cq; i++) {
        RnicCq *cq = s->cqs[i];

        if (cq) {
            rnic_sv_u32(b, cq->cqn);
            rnic_ring_save(b, &cq->ring);
            rnic_sv_u8(b, cq->vector);
            rnic_sv_u16(b, cq->udb);
            rnic_sv_u8(b, cq->irq_pending);
            rnic_sv_u8(b, cq->overflow_reported);
            rnic_cq_save(b, cq->core);
        }
    }
}

static void rnic_srqs_save(struct rnic_sv *b, RnicState *s)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < s->params.limits.max_srq; i++) {
        n += !!s->srqs[i];
    }
    rnic_sv_u32(b, n);
    for (uint32_t i = 0; i < s->params.limits.max_srq; i++) {
        RnicSrq *srq = s->srqs[i];

        if (srq) {
            rnic_sv_u32(b, srq->srqn);
            rnic_sv_u32(b, srq->pdn);
            rnic_ring_save(b, &srq->ring);
            rnic_sv_u16(b, srq->udb);
            rnic_sv_u32(b, srq->limit);
            rnic_srq_save(b, srq->core);
        }
    }
}

static void rnic_qp_save_one(struct rnic_sv *b, RnicQp *qp)
{
    rnic_sv_u32(b, qp->qpn);
    rnic_sv_u32(b, qp->pdn);
    rnic_sv_u32(b, qp->scq->cqn);
    rnic_sv_u32(b, qp->rcq->cqn);
    rnic_sv_u32(b, qp->srq ? qp->srq->srqn : RNIC_NO_SRQ);
    rnic_sv_u8(b, qp->core->attr.privileged);
    rnic_ring_save(b, &qp->sq);
    rnic_ring_save(b, &qp->rq);
    rnic_sv_u16(b, qp->udb);
    rnic_sv_u8(b, qp->term);
    rnic_sv_u8(b, qp->term_layer);
    rnic_sv_u8(b, qp->term_etype);
    rnic_sv_u8(b, qp->term_ecode);
    rnic_sv_u32(b, qp->rejected ? qp->rejected_conn : 0);
    if (qp->rejected) {
        rnic_sv_bytes(b, qp->rejected, sizeof(*qp->rejected));
    }
    rnic_qp_save(b, qp->core);
}

static void rnic_qps_save(struct rnic_sv *b, RnicState *s)
{
    uint32_t n = 0;
    void *qp;

    for (uint32_t q = 1; q <= s->params.limits.max_qp; q++) {
        n += rnic_qpn_lookup(s->qpns, q, &qp) == RNIC_QPN_LIVE;
    }
    rnic_sv_u32(b, n);
    for (uint32_t q = 1; q <= s->params.limits.max_qp; q++) {
        if (rnic_qpn_lookup(s->qpns, q, &qp) == RNIC_QPN_LIVE) {
            rnic_qp_save_one(b, qp);
        }
    }
}


/* ---- connections that move with their sockets ---- */

static void rnic_addr_save(struct rnic_sv *b, const struct rnic_sockaddr *a)
{
    rnic_sv_bytes(b, a, sizeof(*a));
}


static void rnic_mpa_save(struct rnic_sv *b, const struct rnic_mpa_conn *m)
{
    const struct rnic_mpa_result *r = &m->result;
    const struct rnic_mpa_frame *f = &m->peer;

    rnic_sv_u8(b, r->rev);
    rnic_sv_u8(b, r->crc);
    rnic_sv_u8(b, r->markers_tx);
    rnic_sv_u8(b, r->markers_rx);
    rnic_sv_u8(b, r->enhanced);
    rnic_sv_u16(b, r->ird);
    rnic_sv_u16(b, r->ord);
    rnic_sv_u16(b, r->peer_ird);
    rnic_sv_u16(b, r->peer_ord);
    rnic_sv_u8(b, r->rtr);
    rnic_sv_u8(b, f->reply);
    rnic_sv_u8(b, f->flags);
    rnic_sv_u8(b, f->rev);
    rnic_sv_u8(b, f->enhanced);
    rnic_sv_u16(b, f->ird);
    rnic_sv_u16(b, f->ord);
    rnic_sv_u8(b, f->p2p);
    rnic_sv_u8(b, f->rtr);
    rnic_sv_u16(b, f->pd_len ? f->pd - f->raw : 0);
    rnic_sv_u16(b, f->pd_len);
    rnic_sv_u16(b, f->raw_len);
    rnic_sv_bytes(b, f->raw, f->raw_len);
}

static bool rnic_mpa_load(struct rnic_ld *l, struct rnic_mpa_conn *m)
{
    struct rnic_mpa_result *r = &m->result;
    struct rnic_mpa_frame *f = &m->peer;
    uint16_t pd_off;

    memset(m, 0, sizeof(*m));
    r->rev = rnic_ld_u8(l);
    r->crc = rnic_ld_u8(l);
    r->markers_tx = rnic_ld_u8(l);
    r->markers_rx = rnic_ld_u8(l);
    r->enhanced = rnic_ld_u8(l);
    r->ird = rnic_ld_u16(l);
    r->ord = rnic_ld_u16(l);
    r->peer_ird = rnic_ld_u16(l);
    r->peer_ord = rnic_ld_u16(l);
    r->rtr = rnic_ld_u8(l);
    f->reply = rnic_ld_u8(l);
    f->flags = rnic_ld_u8(l);
    f->rev = rnic_ld_u8(l);
    f->enhanced = rnic_ld_u8(l);
    f->ird = rnic_ld_u16(l);
    f->ord = rnic_ld_u16(l);
    f->p2p = rnic_ld_u8(l);
    f->rtr = rnic_ld_u8(l);
    pd_off = rnic_ld_u16(l);
    f->pd_len = rnic_ld_u16(l);
    f->raw_len = rnic_ld_u16(l);
    if (l->failed || f->raw_len > sizeof(f->raw) ||
        pd_off > f->raw_len || f->pd_len > f->raw_len - pd_off ||
        (r->rev != 1 && r->rev != 2)) {
        return false;
    }
    f->pd = f->pd_len ? f->raw + pd_off : NULL;
    m->state = RNIC_MPA_DONE;
    m->initiator = !f->reply;
    return rnic_ld_bytes(l, f->raw, f->raw_len);
}

/* How a connection's socket goes with a migration (its record's mark). */
enum {
    RNIC_MOVE_NONE,         /* cut: reported as a link failure */
    RNIC_MOVE_REPAIR,       /* its TCP state in the stream (TCP repair) */
    RNIC_MOVE_CPR,          /* the socket itself, handed over (cpr-transfer) */
};

/* Whether @c's stream may go with this migration, and how. */
static int rnic_conn_move_kind(RnicConn *c)
{
    if (!c->s->params.mig_repair || !migration_is_running() ||
        c->state != RNIC_CONN_RTS || !c->ep || c->fd < 0 ||
        c->close_pending || c->peer_fin || !rnic_ep_tx_quiet(c->ep)) {
        return RNIC_MOVE_NONE;
    }
    return migrate_mode() == MIG_MODE_CPR_TRANSFER ? RNIC_MOVE_CPR
                                                   : RNIC_MOVE_REPAIR;
}

/*
 * A connected QP's stream goes with a live migration when the freeze left
 * it quiet and migrate-connections=repair: its endpoint is written, and
 * either the socket's TCP state, the socket then closed in repair mode
 * (no FIN, no RST: the peer sees a pause), or with cpr-transfer nothing:
 * the new QEMU gets the socket itself.  A snapshot (savevm) leaves the
 * connection alone.
 */
static void rnic_conn_move_out(struct rnic_sv *b, RnicConn *c)
{
    int kind = rnic_conn_move_kind(c);
    struct rnic_sv ep = { 0 };
    uint8_t *blob = NULL;
    size_t len = 0;
    int ret;

    if (kind == RNIC_MOVE_REPAIR) {
        ret = rnic_tcp_repair_save(c->fd, &blob, &len);
        if (ret < 0) {
            trace_rnic_conn_error(c->id, -ret, "TCP repair: cut instead");
            kind = RNIC_MOVE_NONE;
        }
    }
    rnic_sv_u8(b, kind);
    if (kind == RNIC_MOVE_NONE) {
        return;
    }
    rnic_ep_save(&ep, c->ep);
    rnic_sv_u8(b, c->initiator);
    rnic_sv_u8(b, c->passive);
    rnic_sv_u32(b, c->listener_id);
    rnic_addr_save(b, &c->local);
    rnic_addr_save(b, &c->peer);
    rnic_sv_u64(b, c->bytes);
    rnic_mpa_save(b, &c->mpa);
    rnic_sv_u32(b, rnic_ep_mulpdu(c->ep));
    rnic_sv_u32(b, ep.len);
    rnic_sv_bytes(b, ep.buf, ep.len);
    rnic_sv_u32(b, len);
    rnic_sv_bytes(b, blob, len);
    b->failed |= ep.failed;
    trace_rnic_mig_move_out(c->id, c->qp->qpn, kind, ep.len, len);
    rnic_sv_free(&ep);
    if (kind == RNIC_MOVE_REPAIR) {
        rnic_conn_detach(c, blob, len);
    }
}

/*
 * Bytes we sent and the peers have not acknowledged: they acknowledge
 * them soon, and on one host an acknowledgement would meet no socket (and
 * draw a reset) once the socket is closed for the move.  Waited for, a
 * little, in the migration's downtime: RNIC_MIG_ACK_WAIT_STEPS steps in
 * all, however many connections move.
 */
static void rnic_conns_await_acks(RnicState *s)
{
    for (int step = 0; step < RNIC_MIG_ACK_WAIT_STEPS; step++) {
        bool unacked = false;

        for (uint32_t i = 0; i < s->max_conns && !unacked; i++) {
            RnicConn *c = s->conns[i];
            int n = 0;

            unacked = c && rnic_conn_move_kind(c) == RNIC_MOVE_REPAIR &&
                      !ioctl(c->fd, SIOCOUTQ, &n) && n > 0;
        }
        if (!unacked) {
            return;
        }
        g_usleep(RNIC_MIG_ACK_WAIT_US);
    }
}

static void rnic_cm_save(struct rnic_sv *b, RnicState *s)
{
    uint32_t n = 0;

    for (int i = 0; i < RNIC_MAX_LISTENERS; i++) {
        n += !!s->listeners[i].id;
    }
    rnic_sv_u32(b, n);
    for (int i = 0; i < RNIC_MAX_LISTENERS; i++) {
        RnicListener *l = &s->listeners[i];

        if (l->id) {
            rnic_sv_u32(b, l->id);
            rnic_addr_save(b, &l->local);
            rnic_sv_u32(b, l->backlog);
        }
    }
    n = 0;
    for (uint32_t i = 0; i < s->max_conns; i++) {
        n += !!s->conns[i];
    }
    rnic_sv_u32(b, n);
    rnic_conns_await_acks(s);
    for (uint32_t i = 0; i < s->max_conns; i++) {
        RnicConn *c = s->conns[i];

        if (c) {
            rnic_sv_u32(b, c->id);
            rnic_sv_u32(b, c->qp ? c->qp->qpn : 0);
            rnic_sv_u8(b, c->state);
            rnic_conn_move_out(b, c);
        }
    }
}

static int rnic_pre_save(void *opaque)
{
    RnicState *s = opaque;
    struct rnic_sv b = { 0 };
    const RnicLimits *l = &s->params.limits;

    rnic_enter(s);
    rnic_sv_u32(&b, RNIC_MIG_OBJECTS_VERSION);
    rnic_sv_u32(&b, l->max_qp);
    rnic_sv_u32(&b, l->max_cq);
    rnic_sv_u32(&b, l->max_srq);
    rnic_stag_table_save(&b, s->stags);
    rnic_qpn_table_save(&b, s->qpns);
    rnic_cqs_save(&b, s);
    rnic_srqs_save(&b, s);
    rnic_qps_save(&b, s);
    rnic_cm_save(&b, s);
    rnic_leave(s);
    if (b.failed || b.len > UINT32_MAX) {
        rnic_sv_free(&b);
        error_report("rnic: no memory for the device's state");
        return -ENOMEM;
    }
    g_free(s->mig_objects);
    s->mig_objects = g_memdup2(b.buf, b.len);
    s->mig_objects_len = b.len;
    rnic_sv_free(&b);
    trace_rnic_mig_save(s->mig_objects_len);
    return 0;
}

static int rnic_post_save(void *opaque)
{
    RnicState *s = opaque;

    g_free(s->mig_objects);
    s->mig_objects = NULL;
    s->mig_objects_len = 0;
    return 0;
}

/* ---- loading ---- */

/* A ring's geometry for its create command, and its indices. */
static void rnic_ring_load(struct rnic_ld *l, uint64_t *base, uint8_t *log,
                           RnicRing *idx)
{
    *base = rnic_ld_u64(l);
    *log = rnic_ld_u8(l);
    idx->prod = rnic_ld_u32(l);
    idx->cons = rnic_ld_u32(l);
}

/* Indices a ring of its size can have, as its doorbells keep them. */
static bool rnic_ring_idx_ok(const RnicRing *r)
{
    return rnic_ring_used(r) <= rnic_ring_entries(r);
}

static bool rnic_cqs_load(struct rnic_ld *l, RnicState *s)
{
    uint32_t n = rnic_ld_count(l, s->params.limits.max_cq);

    for (uint32_t k = 0; k < n && !l->failed; k++) {
        struct rnic_cmd_cq p = { 0 };
        uint32_t cqn = rnic_ld_u32(l);
        uint64_t base;
        RnicRing idx;
        RnicCq *cq;

        rnic_ring_load(l, &base, &p.log_size, &idx);
        p.ring_addr = cpu_to_le64(base);
        p.msix_vector = rnic_ld_u8(l);
        p.udb = cpu_to_le32(rnic_ld_u16(l));
        if (l->failed || cqn == 0 || cqn > s->params.limits.max_cq ||
            s->cqs[cqn - 1] ||
            rnic_dev_cq_make(s, &p, cqn - 1) != RNIC_CMD_OK) {
            return false;
        }
        cq = s->cqs[cqn - 1];
        cq->ring.prod = idx.prod;
        cq->ring.cons = idx.cons;
        cq->irq_pending = rnic_ld_u8(l);
        cq->overflow_reported = rnic_ld_u8(l);
        if (!rnic_ring_idx_ok(&cq->ring) || rnic_cq_load(l, cq->core)) {
            return false;
        }
    }
    return !l->failed;
}

static bool rnic_srqs_load(struct rnic_ld *l, RnicState *s)
{
    uint32_t n = rnic_ld_count(l, s->params.limits.max_srq);

    for (uint32_t k = 0; k < n && !l->failed; k++) {
        struct rnic_cmd_srq p = { 0 };
        uint32_t srqn = rnic_ld_u32(l);
        uint64_t base;
        RnicRing idx;
        RnicSrq *srq;

        p.pdn = cpu_to_le32(rnic_ld_u32(l));
        rnic_ring_load(l, &base, &p.log_size, &idx);
        p.ring_addr = cpu_to_le64(base);
        p.udb = cpu_to_le32(rnic_ld_u16(l));
        if (l->failed || srqn == 0 || srqn > s->params.limits.max_srq ||
            s->srqs[srqn - 1]) {
            return false;
        }
        /* the saved PD count holds the SRQ's own reference: made anew */
        rnic_pd_put(s->stags, le32_to_cpu(p.pdn));
        if (rnic_dev_srq_make(s, &p, srqn - 1) != RNIC_CMD_OK) {
            return false;
        }
        srq = s->srqs[srqn - 1];
        srq->ring.prod = idx.prod;
        srq->ring.cons = idx.cons;
        srq->limit = rnic_ld_u32(l);
        if (!rnic_ring_idx_ok(&srq->ring) ||
            srq->limit > rnic_ring_entries(&srq->ring) ||
            rnic_srq_load(l, srq->core)) {
            return false;
        }
    }
    return !l->failed;
}

static bool rnic_qp_load_one(struct rnic_ld *l, RnicState *s)
{
    struct rnic_cmd_qp p = { 0 };
    uint32_t qpn = rnic_ld_u32(l), conn;
    uint64_t sq, rq;
    RnicRing sqi, rqi;
    RnicQp *qp;

    p.pdn = cpu_to_le32(rnic_ld_u32(l));
    p.send_cqn = cpu_to_le32(rnic_ld_u32(l));
    p.recv_cqn = cpu_to_le32(rnic_ld_u32(l));
    p.srqn = cpu_to_le32(rnic_ld_u32(l));
    p.flags = cpu_to_le16(rnic_ld_u8(l) ? RNIC_QP_FLAG_KERNEL : 0);
    rnic_ring_load(l, &sq, &p.sq_log_size, &sqi);
    rnic_ring_load(l, &rq, &p.rq_log_size, &rqi);
    p.sq_addr = cpu_to_le64(sq);
    p.rq_addr = cpu_to_le64(rq);
    p.udb = cpu_to_le32(rnic_ld_u16(l));
    if (l->failed) {
        return false;
    }
    rnic_pd_put(s->stags, le32_to_cpu(p.pdn));
    if (rnic_dev_qp_make(s, &p, qpn) != RNIC_CMD_OK) {
        return false;
    }
    qp = rnic_dev_qp_get(s, qpn);
    qp->sq.prod = sqi.prod;
    qp->sq.cons = sqi.cons;
    qp->rq.prod = rqi.prod;
    qp->rq.cons = rqi.cons;
    qp->term = rnic_ld_u8(l);
    qp->term_layer = rnic_ld_u8(l);
    qp->term_etype = rnic_ld_u8(l);
    qp->term_ecode = rnic_ld_u8(l);
    conn = rnic_ld_u32(l);
    if (conn) {
        qp->rejected_conn = conn;
        qp->rejected = g_new0(struct rnic_conn_info, 1);
        rnic_ld_bytes(l, qp->rejected, sizeof(*qp->rejected));
    }
    return !l->failed && qp->term <= RNIC_QP_TERM_SENT &&
           rnic_ring_idx_ok(&qp->sq) && rnic_ring_idx_ok(&qp->rq) &&
           rnic_qp_load(l, qp->core) == 0;
}

static bool rnic_qps_load(struct rnic_ld *l, RnicState *s)
{
    uint32_t n = rnic_ld_count(l, s->params.limits.max_qp);
    void *qp;

    for (uint32_t k = 0; k < n && !l->failed; k++) {
        if (!rnic_qp_load_one(l, s)) {
            return false;
        }
    }
    /* every number the table holds live has its QP */
    for (uint32_t q = 1; q <= s->params.limits.max_qp; q++) {
        if (rnic_qpn_lookup(s->qpns, q, &qp) == RNIC_QPN_LIVE && !qp) {
            return false;
        }
    }
    return !l->failed;
}

/*
 * A connection that moved with its socket: the socket rebuilt from its
 * TCP state, the endpoint where it was.  If the socket cannot be rebuilt
 * here (its address is not this host's, the source still holds it), the
 * connection is cut as without repair: c->qpn stays set.  false: the
 * record itself is damaged.
 */
static bool rnic_conn_move_in(struct rnic_ld *l, RnicState *s, RnicCut *cut,
                              int kind)
{
    RnicQp *qp = rnic_dev_qp_get(s, cut->qpn);
    bool initiator = rnic_ld_u8(l), passive = rnic_ld_u8(l);
    uint32_t listener_id = rnic_ld_u32(l), mulpdu, len;
    struct rnic_sockaddr local, peer;
    struct rnic_mpa_conn mpa;
    struct rnic_ld epl;
    const uint8_t *blob;
    uint64_t bytes;
    RnicConn *c;
    int fd;

    rnic_ld_bytes(l, &local, sizeof(local));
    rnic_ld_bytes(l, &peer, sizeof(peer));
    bytes = rnic_ld_u64(l);
    if (!rnic_mpa_load(l, &mpa) || !qp || qp->conn ||
        qp->core->state != RNIC_QP_RTS || cut->state != RNIC_CONN_RTS ||
        rnic_conn_get(s, cut->id)) {
        return false;
    }
    mulpdu = rnic_ld_u32(l);
    len = rnic_ld_count(l, l->len - l->off);
    rnic_ld_init(&epl, l->buf + l->off, len);
    l->off += len;
    len = rnic_ld_count(l, MIN(l->len - l->off, RNIC_TCP_REPAIR_BLOB_MAX));
    blob = l->buf + l->off;
    l->off += len;
    if (l->failed) {
        return false;
    }
    if (kind == RNIC_MOVE_CPR) {
        fd = rnic_cpr_take(s->cpr_conns, cut->id);
        blob = NULL;
    } else {
        fd = rnic_tcp_repair_rebuild(blob, len);
    }
    if (fd < 0) {
        trace_rnic_conn_error(cut->id, -fd, "socket not moved: cut instead");
        return true;
    }
    c = rnic_conn_moved_in(s, fd, blob, len, cut->id, initiator, passive, qp,
                           &mpa, mulpdu);
    if (!c) {
        return true;
    }
    c->listener_id = listener_id;
    c->local = local;
    c->peer = peer;
    c->bytes = bytes;
    if (rnic_ep_load(&epl, c->ep) || epl.off != epl.len) {
        rnic_conn_drop(c);
        return false;
    }
    trace_rnic_mig_move_in(c->id, qp->qpn);
    cut->qpn = 0;
    return true;
}

static bool rnic_cm_load(struct rnic_ld *l, RnicState *s)
{
    uint32_t n = rnic_ld_count(l, RNIC_MAX_LISTENERS);

    for (uint32_t k = 0; k < n && !l->failed; k++) {
        uint32_t id = rnic_ld_u32(l);
        struct rnic_sockaddr local;
        uint32_t backlog;

        rnic_ld_bytes(l, &local, sizeof(local));
        backlog = rnic_ld_u32(l);
        if (l->failed || id == 0 || id > RNIC_MAX_LISTENERS ||
            s->listeners[id - 1].id ||
            (local.family != RNIC_AF_INET && local.family != RNIC_AF_INET6)) {
            return false;
        }
        rnic_listener_restore(s, id, &local, backlog);
    }
    n = rnic_ld_count(l, s->max_conns);
    for (uint32_t k = 0; k < n && !l->failed; k++) {
        RnicCut c = { .id = rnic_ld_u32(l) };
        int kind, fd;

        c.qpn = rnic_ld_u32(l);
        c.state = rnic_ld_u8(l);
        kind = rnic_ld_u8(l);
        if (c.state > RNIC_CONN_FIN_WAIT || c.id < RNIC_CONN_ID_MIN ||
            kind > RNIC_MOVE_CPR) {
            return false;
        }
        if (kind != RNIC_MOVE_NONE && !rnic_conn_move_in(l, s, &c, kind)) {
            return false;
        }
        if (kind != RNIC_MOVE_NONE && !c.qpn) {
            continue;       /* moved in */
        }
        /* a cut one's socket cpr-transfer handed over: reset when let go */
        fd = rnic_cpr_take(s->cpr_conns, c.id);
        if (fd >= 0) {
            setsockopt(fd, SOL_SOCKET, SO_LINGER,
                       &(struct linger) { .l_onoff = 1 },
                       sizeof(struct linger));
            close(fd);
        }
        g_array_append_val(s->mig_cut, c);
    }
    return !l->failed;
}

static bool rnic_objects_load(RnicState *s, struct rnic_ld *l)
{
    const RnicLimits *lim = &s->params.limits;

    if (rnic_ld_u32(l) != RNIC_MIG_OBJECTS_VERSION ||
        rnic_ld_u32(l) != lim->max_qp || rnic_ld_u32(l) != lim->max_cq ||
        rnic_ld_u32(l) != lim->max_srq) {
        error_report("rnic: the migration stream's device has other "
                     "properties (max-qps, max-cqs, max-srqs) than this one");
        return false;
    }
    return rnic_stag_table_load(l, s->stags) == 0 &&
           rnic_qpn_table_load(l, s->qpns) == 0 &&
           rnic_cqs_load(l, s) && rnic_srqs_load(l, s) &&
           rnic_qps_load(l, s) && rnic_cm_load(l, s) &&
           l->off == l->len;
}

/* The command and event queues a READY device works on. */
static bool rnic_admin_rings_ok(RnicState *s)
{
    if (!(s->status & RNIC_STATUS_READY)) {
        return true;
    }
    return rnic_ring_ok(s->cmdq.base, s->cmdq.log_size, RNIC_ADMIN_LOG_MAX) &&
           rnic_ring_ok(s->eq.base, s->eq.log_size, RNIC_ADMIN_LOG_MAX) &&
           rnic_ring_idx_ok(&s->cmdq) && rnic_ring_idx_ok(&s->eq);
}

/* Objects only: the registers were just loaded as fields. */
static void rnic_objects_reset(RnicState *s)
{
    rnic_cm_reset(s);
    rnic_verbs_reset(s);
    g_array_set_size(s->mig_cut, 0);
}

static int rnic_post_load(void *opaque, int version_id)
{
    RnicState *s = opaque;
    struct rnic_ld l;
    bool ok;

    rnic_enter(s);
    s->frozen = !runstate_is_running();
    rnic_objects_reset(s);
    rnic_ld_init(&l, s->mig_objects, s->mig_objects_len);
    ok = rnic_admin_rings_ok(s) && rnic_objects_load(s, &l);
    if (!ok) {
        rnic_objects_reset(s);
        error_report("rnic: the device's state in the migration stream is "
                     "damaged (at byte %zu of %u)", l.off,
                     s->mig_objects_len);
    }
    g_free(s->mig_objects);
    s->mig_objects = NULL;
    s->mig_objects_len = 0;
    s->mig_loaded = ok;
    rnic_leave(s);
    trace_rnic_mig_load(l.off, ok);
    return ok ? 0 : -EINVAL;
}

static const VMStateDescription rnic_vmstate_ring = {
    .name = "rnic/ring",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(base, RnicRing),
        VMSTATE_UINT32(log_size, RnicRing),
        VMSTATE_UINT32(prod, RnicRing),
        VMSTATE_UINT32(cons, RnicRing),
        VMSTATE_END_OF_LIST()
    },
};

/* The stat-* counters, but the Terminates by code (a hash table). */
static bool rnic_stats_needed(void *opaque)
{
    RnicState *s = opaque;

    return s->stats.tx_bytes || s->stats.rx_bytes;
}

static const VMStateDescription rnic_vmstate_stats = {
    .name = "rnic/stats",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rnic_stats_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(stats.tx_bytes, RnicState),
        VMSTATE_UINT64(stats.rx_bytes, RnicState),
        VMSTATE_UINT64(stats.terms_sent, RnicState),
        VMSTATE_UINT64(stats.terms_received, RnicState),
        VMSTATE_UINT64(stats.crc_errors, RnicState),
        VMSTATE_UINT64(stats.streams_lost, RnicState),
        VMSTATE_UINT64(stats.tx_fpdus, RnicState),
        VMSTATE_UINT64_ARRAY(stats.tx_op, RnicState, 16),
        VMSTATE_UINT64_ARRAY(stats.rx_op, RnicState, 16),
        VMSTATE_UINT64(stats.tx_crc_corrupted, RnicState),
        VMSTATE_UINT64_ARRAY(stats.cqe, RnicState, 16),
        VMSTATE_END_OF_LIST()
    },
};

const VMStateDescription rnic_vmstate = {
    .name = "rnic",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = rnic_pre_save,
    .post_save = rnic_post_save,
    .post_load = rnic_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, RnicState),
        VMSTATE_MSIX(parent_obj, RnicState),
        VMSTATE_UINT32(scratch, RnicState),
        VMSTATE_UINT32(status, RnicState),
        VMSTATE_UINT32(control, RnicState),
        VMSTATE_STRUCT(cmdq, RnicState, 1, rnic_vmstate_ring, RnicRing),
        VMSTATE_STRUCT(eq, RnicState, 1, rnic_vmstate_ring, RnicRing),
        VMSTATE_UINT64(eq_dropped, RnicState),
        VMSTATE_UINT32(conn_last_id, RnicState),
        VMSTATE_UINT32(mig_objects_len, RnicState),
        VMSTATE_VBUFFER_ALLOC_UINT32(mig_objects, RnicState, 1, NULL,
                                     mig_objects_len),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &rnic_vmstate_stats,
        NULL
    },
};
