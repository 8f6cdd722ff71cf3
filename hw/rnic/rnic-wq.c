/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Work queues: doorbells, and fetching work requests from guest rings into
 * the protocol core (core/device/abi_wr.c translates them).  Doorbells only
 * record the producer index; the fetch runs in a bottom half so that the
 * vCPU's MMIO write returns at once.  Completions reach the guest through
 * rnic-cq.c; a malformed entry of a connected QP ends its stream through
 * the connection's owner (rnic-conn.c).
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "rnic.h"
#include "device/abi_wr.h"
#include "trace.h"

static void rnic_wq_guest_error(RnicState *s, RnicQp *qp, const char *q,
                                uint32_t index, const char *why)
{
    qemu_log_mask(LOG_GUEST_ERROR, "rnic: QP %u %s entry %u: %s; QP moves "
                  "to ERROR\n", qp->qpn, q, index, why);
    trace_rnic_ub_wqe(qp->qpn, q, index, why);
}

/*
 * A WQE the device cannot accept completes with LOC_QP_OP_ERR and the QP
 * goes to ERROR, as a hardware RNIC reports a malformed descriptor.  One
 * completion per wr_id: an entry the core already queued (@queued) gets
 * its completion from the flush.  The completion names the entry's own
 * opcode when it could be read, so a refused Read reports READ.  A
 * connected QP's stream ends as for any local error (Terminate, then
 * close), through the connection's owner.
 */
static void rnic_wq_reject(RnicState *s, RnicQp *qp, RnicCq *cq,
                           uint64_t wr_id, enum rnic_wc_opcode op, bool queued)
{
    struct rnic_cqe c = {
        .wr_id = wr_id,
        .status = RNIC_WC_LOC_QP_OP_ERR,
        .opcode = op,
        .qpn = qp->qpn,
    };
    enum rnic_qp_state st = qp->core->state;

    if (!queued) {
        rnic_cq_push(cq->core, &c);
    }
    if (st == RNIC_QP_ERROR || st == RNIC_QP_TERMINATE) {
        return;
    }
    rnic_eq_post(s, RNIC_EV_QP_ERROR, qp->qpn, RNIC_CQE_LOC_QP_OP_ERR, 0);
    if (qp->conn) {
        rnic_conn_local_error(qp->conn);
    } else {
        rnic_qp_modify(qp->core, RNIC_QP_ERROR);
    }
}

/*
 * One receive entry to the core; links its STag for invalidate-on-use,
 * scoped to this receive queue (the QP's RQ or the SRQ) and its PD, unless
 * the QP flushed the entry at once (its link would outlive it).
 * *queued: the core took the WR (and will complete it) even if the link
 * then failed.
 */
static const char *rnic_post_recv_hw(RnicState *s, const struct rnic_rq_wqe *w,
                                     RnicQp *qp, RnicSrq *srq, bool *queued)
{
    struct rnic_recv_wr wr;
    uint32_t linked = le32_to_cpu(w->linked_stag);
    const char *why = rnic_abi_recv_wr(w, &wr);
    struct rnic_recv_owner owner = {
        .queue = qp ? rnic_recv_queue_qp(qp->qpn)
                    : rnic_recv_queue_srq(srq->srqn),
        .pd = qp ? qp->pdn : srq->pdn,
        .qpn = qp ? qp->qpn : 0,
    };
    bool flushed = qp && rnic_qp_flushes_posts(qp->core);
    int ret;

    *queued = false;
    if (why) {
        return why;
    }
    ret = qp ? rnic_qp_post_recv(qp->core, &wr)
             : rnic_srq_post_recv(srq->core, &wr);
    if (ret) {
        return strerror(-ret);
    }
    *queued = true;
    if (linked && !flushed &&
        rnic_stag_link_to_recv(s->stags, linked, &owner, wr.wr_id) !=
        RNIC_STAG_OK) {
        return "linked STag invalid, of another PD or QP, or already linked";
    }
    return NULL;
}

/*
 * One send queue entry to the core: NULL, or why it was refused, and then
 * *@op is the opcode its completion reports.
 */
static const char *rnic_wq_take_send(RnicState *s, RnicQp *qp,
                                     uint64_t *wr_id, enum rnic_wc_opcode *op,
                                     bool *queued)
{
    struct rnic_sq_wqe w;
    struct rnic_send_wr wr;
    const char *why;
    int ret;

    QEMU_BUILD_BUG_ON(sizeof(w) != RNIC_SQ_WQE_SIZE);
    *queued = false;
    if (rnic_ring_read(s, &qp->sq, qp->sq.cons, &w)) {
        return "entry not readable by DMA";
    }
    why = rnic_abi_send_wr(&w, &wr);
    *wr_id = wr.wr_id;
    if (!why) {
        ret = rnic_qp_post_send(qp->core, &wr);
        why = ret ? strerror(-ret) : NULL;
    }
    if (why) {
        *op = rnic_wc_opcode_of(wr.opcode);
    }
    return why;
}

/* One receive queue entry to the core: NULL, or why it was refused. */
static const char *rnic_wq_take_recv(RnicState *s, RnicQp *qp,
                                     uint64_t *wr_id, bool *queued)
{
    struct rnic_rq_wqe w;

    QEMU_BUILD_BUG_ON(sizeof(w) != RNIC_RQ_WQE_SIZE);
    *queued = false;
    if (rnic_ring_read(s, &qp->rq, qp->rq.cons, &w)) {
        return "entry not readable by DMA";
    }
    *wr_id = le64_to_cpu(w.wr_id);
    return rnic_post_recv_hw(s, &w, qp, NULL, queued);
}

/* Work requests one queue gives one run of the bottom half, at most. */
#define RNIC_WQ_FETCH_BUDGET 256
/* ... and all queues together: the rest goes on in the next run. */
#define RNIC_WQ_RUN_BUDGET 1024
/*
 * Octets after which a run starts no more connections; the one it ran
 * last may add its own batch (RNIC_EP_TX_BATCH_BYTES), so a run sends at
 * most twice this, however many QPs the guest kicked.
 */
#define RNIC_WQ_RUN_TX_BUDGET RNIC_EP_TX_BATCH_BYTES

/*
 * Takes a QP's new entries up to the last doorbell, in ring order, at
 * most RNIC_WQ_FETCH_BUDGET and *@left of them (counted off *@left);
 * true when some are left for the next run.
 */
static bool rnic_wq_fetch(RnicState *s, RnicQp *qp, bool recv,
                          uint32_t *left)
{
    uint32_t budget = MIN(*left, RNIC_WQ_FETCH_BUDGET);
    RnicRing *r = recv ? &qp->rq : &qp->sq;

    for (; r->cons != r->prod && budget; r->cons++, budget--) {
        uint64_t wr_id = 0;
        enum rnic_wc_opcode op = recv ? RNIC_WC_RECV : RNIC_WC_SEND;
        bool queued;
        const char *why = recv ? rnic_wq_take_recv(s, qp, &wr_id, &queued)
                               : rnic_wq_take_send(s, qp, &wr_id, &op,
                                                   &queued);

        if (why) {
            rnic_wq_guest_error(s, qp, recv ? "RQ" : "SQ", r->cons, why);
            rnic_wq_reject(s, qp, recv ? qp->rcq : qp->scq, wr_id, op,
                           queued);
        }
        (*left)--;
    }
    return r->cons != r->prod;
}

/* As rnic_wq_fetch() for an SRQ. */
static bool rnic_wq_fetch_srq(RnicState *s, RnicSrq *srq, uint32_t *left)
{
    uint32_t budget = MIN(*left, RNIC_WQ_FETCH_BUDGET);
    RnicRing *r = &srq->ring;

    for (; r->cons != r->prod && budget; r->cons++, budget--) {
        struct rnic_rq_wqe w;
        bool queued;

        /* An SRQ belongs to no QP: a bad entry is dropped and logged. */
        if (rnic_ring_read(s, r, r->cons, &w) ||
            rnic_post_recv_hw(s, &w, NULL, srq, &queued)) {
            qemu_log_mask(LOG_GUEST_ERROR, "rnic: SRQ %u entry %u not "
                          "accepted (unreadable, bad SGEs or queue full); "
                          "dropped\n", srq->srqn, r->cons);
            trace_rnic_ub_srq_wqe(srq->srqn, r->cons);
        }
        (*left)--;
    }
    return r->cons != r->prod;
}

/*
 * A Send found no receive in the core, yet the guest may have posted one
 * before it arrived, whose doorbell is still in the mailbox or whose
 * fetch the budgets left to a later run: such a receive is the Send's,
 * so it is fetched now.  This runs inside the stream's receive, where
 * ending the connection would pull it from under its caller: an RQ entry
 * the fetch would refuse, or one with a linked STag (whose link can fail
 * once queued), is left to the bottom half, which refuses it as usual.
 * SRQ entries are fetched as the bottom half does, as refusing one only
 * drops and logs it.  A disabled device reads no ring.
 */
void rnic_wq_recv_now(RnicState *s, RnicQp *qp)
{
    uint32_t left = RNIC_WQ_FETCH_BUDGET;
    RnicRing *r = &qp->rq;

    if (!(s->status & RNIC_STATUS_READY)) {
        return;
    }
    if (qp->srq) {
        rnic_db_take(s, RNIC_REG_DB_SRQ, qp->srq->srqn);
        rnic_wq_fetch_srq(s, qp->srq, &left);
        return;
    }
    rnic_db_take(s, RNIC_REG_DB_RQ, qp->qpn);
    for (; r->cons != r->prod && left; r->cons++, left--) {
        struct rnic_rq_wqe w;
        bool queued;

        if (rnic_ring_read(s, r, r->cons, &w) || w.linked_stag ||
            rnic_post_recv_hw(s, &w, qp, NULL, &queued)) {
            return;
        }
    }
}

void rnic_dev_srq_kick(RnicState *s, RnicSrq *srq)
{
    if (!srq->kicked) {
        srq->kicked = true;
        QTAILQ_INSERT_TAIL(&s->kicked_srqs, srq, kick_link);
    }
}

void rnic_dev_qp_kick(RnicState *s, RnicQp *qp)
{
    if (!qp->kicked) {
        qp->kicked = true;
        QTAILQ_INSERT_TAIL(&s->kicked, qp, kick_link);
    }
}

/*
 * Takes work requests from the queues kicked so far, within the budgets
 * above; what is left goes on in the next run, after QEMU's main loop
 * had its turn.
 */
void rnic_wq_run(void *opaque)
{
    RnicState *s = opaque;
    uint32_t nsrq = 0, nqp = 0, left = RNIC_WQ_RUN_BUDGET, served = 0;
    uint64_t tx0 = s->stats.tx_bytes;
    RnicSrq *srq;
    RnicQp *qp;

    rnic_db_drain(s, true);
    if (!(s->status & RNIC_STATUS_READY)) {
        return;     /* disabled since the doorbell: leave the rings be */
    }
    /* This run serves the queues kicked so far; a re-kick waits. */
    QTAILQ_FOREACH(srq, &s->kicked_srqs, kick_link) {
        nsrq++;
    }
    QTAILQ_FOREACH(qp, &s->kicked, kick_link) {
        nqp++;
    }
    while (nsrq-- && left && (srq = QTAILQ_FIRST(&s->kicked_srqs))) {
        QTAILQ_REMOVE(&s->kicked_srqs, srq, kick_link);
        srq->kicked = false;
        if (rnic_wq_fetch_srq(s, srq, &left)) {
            rnic_dev_srq_kick(s, srq);
        }
    }
    while (nqp-- && left && s->stats.tx_bytes - tx0 < RNIC_WQ_RUN_TX_BUDGET &&
           (qp = QTAILQ_FIRST(&s->kicked))) {
        bool rq_left, sq_left;

        QTAILQ_REMOVE(&s->kicked, qp, kick_link);
        qp->kicked = false;
        rq_left = rnic_wq_fetch(s, qp, true, &left);
        sq_left = rnic_wq_fetch(s, qp, false, &left);
        if (rq_left || sq_left) {
            rnic_dev_qp_kick(s, qp);
        }
        if (qp->conn) {
            rnic_conn_run(qp->conn);
        }
        served++;
    }
    trace_rnic_wq_run(served, RNIC_WQ_RUN_BUDGET - left,
                      s->stats.tx_bytes - tx0);
    /* Queues with work left, or not served at all, go on next run. */
    if (!QTAILQ_EMPTY(&s->kicked_srqs) || !QTAILQ_EMPTY(&s->kicked)) {
        qemu_bh_schedule(s->wq_bh);
    }
    /* CQs that changed are delivered as this callback ends (rnic-cq.c). */
}

/* From a register access: after it (rnic-regs.c); else at once. */
void rnic_wq_schedule(RnicState *s)
{
    if (s->in_mmio) {
        qatomic_set(&s->wq_kick, true);
    } else {
        qemu_bh_schedule(s->wq_bh);
    }
}

static void rnic_db_error(hwaddr reg, uint32_t val, const char *why)
{
    qemu_log_mask(LOG_GUEST_ERROR, "rnic: doorbell 0x%03" HWADDR_PRIx
                  " value 0x%08x ignored: %s\n", reg, val, why);
    trace_rnic_ub_doorbell(reg, val, why);
}

/* BAR 0 (udb 0) rings every queue; page n only those made with udb n + 1. */
static bool rnic_db_page_ok(hwaddr reg, uint32_t val, uint16_t udb,
                            uint16_t owner)
{
    if (udb && owner != udb) {
        rnic_db_error(reg, val, "queue of another doorbell page");
        return false;
    }
    return true;
}

/* An arm @val may ask for. */
#define RNIC_WQ_ARM_BITS (RNIC_DB_ARM_NEXT | RNIC_DB_ARM_SOLICITED)

/*
 * Under the lock: the arm bits of @val on @cq.  Completions already made
 * but not yet in the guest's ring reach it after this arm: the guest sees
 * them as new, so the first of them that the arm asks for interrupts, or
 * a guest that armed and then found its ring empty sleeps forever.
 */
static void rnic_wq_cq_arm(RnicCq *cq, uint32_t val)
{
    if ((val & RNIC_WQ_ARM_BITS) &&
        rnic_cq_arm_held(cq->core, val & RNIC_DB_ARM_NEXT ?
                         RNIC_CQ_ARM_NEXT : RNIC_CQ_ARM_SOLICITED)) {
        cq->irq_pending = true;
    }
}

/* Under the lock: @cq's arm bits waiting in the mailbox (rnic-db.c), or 0. */
static uint32_t rnic_wq_cq_arm_mailed(RnicState *s, RnicCq *cq)
{
    const hwaddr reg = RNIC_REG_DB_CQ_ARM;
    uint32_t val;
    uint16_t udb;

    if (!rnic_db_take_value(s, reg, cq->cqn, &val, &udb) ||
        !rnic_db_page_ok(reg, val, udb, cq->udb)) {
        return 0;
    }
    return val & RNIC_WQ_ARM_BITS;
}

/*
 * Under the lock: from the register write, or from the mailbox (rnic-db.c).
 * udb: the doorbell page + 1 it came through, 0 for BAR 0 (the kernel's).
 */
void rnic_wq_db_apply(RnicState *s, hwaddr reg, uint32_t val, uint16_t udb)
{
    uint32_t id = RNIC_DB_ID(val);
    uint16_t idx = RNIC_DB_INDEX(val);
    RnicQp *qp;
    RnicCq *cq;
    RnicSrq *srq;

    if (!(s->status & RNIC_STATUS_READY)) {
        rnic_db_error(reg, val, "device disabled");
        return;
    }
    switch (reg) {
    case RNIC_REG_DB_SQ:
    case RNIC_REG_DB_RQ:
        qp = rnic_dev_qp_get(s, id);
        if (!qp || (reg == RNIC_REG_DB_RQ && qp->srq)) {
            rnic_db_error(reg, val, qp ? "QP uses an SRQ" : "no such QP");
            return;
        }
        if (!rnic_db_page_ok(reg, val, udb, qp->udb)) {
            return;
        }
        if (!rnic_ring_db_prod(reg == RNIC_REG_DB_SQ ? &qp->sq : &qp->rq,
                               idx)) {
            rnic_db_error(reg, val, "producer more than a ring ahead");
            return;
        }
        rnic_dev_qp_kick(s, qp);
        rnic_wq_schedule(s);
        return;
    case RNIC_REG_DB_SRQ:
        srq = rnic_dev_srq_get(s, id);
        if (!srq) {
            rnic_db_error(reg, val, "no such SRQ");
            return;
        }
        if (!rnic_db_page_ok(reg, val, udb, srq->udb)) {
            return;
        }
        if (!rnic_ring_db_prod(&srq->ring, idx)) {
            rnic_db_error(reg, val, "producer more than a ring ahead");
            return;
        }
        rnic_dev_srq_kick(s, srq);
        rnic_wq_schedule(s);
        return;
    case RNIC_REG_DB_CQ:
    case RNIC_REG_DB_CQ_ARM:
        cq = rnic_dev_cq_get(s, id);
        if (!cq) {
            rnic_db_error(reg, val, "no such CQ");
            return;
        }
        if (!rnic_db_page_ok(reg, val, udb, cq->udb)) {
            return;
        }
        if (reg == RNIC_REG_DB_CQ) {
            rnic_ring_db_cons(&cq->ring, idx);
        } else {
            rnic_wq_cq_arm(cq, val);
        }
        /* Only completions waiting for room need the bottom half. */
        if (rnic_cq_count(cq->core)) {
            rnic_dev_cq_kick(s, cq);
            rnic_wq_schedule(s);
        }
        return;
    }
}

/*
 * Under the lock, before completions go into @cq's ring: an arm the guest
 * mailed before them (rnic-db.c) is applied first, as it would have been
 * had it taken the lock.
 */
void rnic_wq_cq_arm_early(RnicState *s, RnicCq *cq)
{
    rnic_wq_cq_arm(cq, rnic_wq_cq_arm_mailed(s, cq));
}

/*
 * Under the lock, after completions went into @cq's ring: an arm mailed
 * while they were written.  The guest may have found the ring empty, armed
 * and gone to sleep before they were there, so if one of them is what the
 * arm asks for (any completion, or a @solicited one) it interrupts now.
 * The guest may as well have seen them before it armed: then that
 * interrupt brings it nothing new (a driver checks its ring, as
 * rnic_ib_cq_vector does), so the arm is also applied as usual and stays
 * for the next completion.  Only an arm that reached the mailbox within
 * those few writes is taken here.  The barrier pairs with the vCPU's swap
 * into the mailbox: either that swap is seen here, or the guest's look at
 * its ring after the arm finds the completions.
 */
void rnic_wq_cq_arm_late(RnicState *s, RnicCq *cq, bool solicited)
{
    uint32_t arm;

    smp_mb();   /* the completions before the mailbox: see above */
    arm = rnic_wq_cq_arm_mailed(s, cq);
    rnic_wq_cq_arm(cq, arm);
    if ((arm & RNIC_DB_ARM_NEXT) ||
        (solicited && (arm & RNIC_DB_ARM_SOLICITED))) {
        cq->irq_pending = true;
    }
}

void rnic_wq_doorbell(RnicState *s, hwaddr reg, uint32_t val, uint16_t udb)
{
    trace_rnic_doorbell(reg, RNIC_DB_ID(val), RNIC_DB_INDEX(val));
    rnic_wq_db_apply(s, reg, val, udb);
}
