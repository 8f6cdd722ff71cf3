/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Queue pairs and shared receive queues; see qp.h for the state machine
 * and the posting and completion rules.
 */
#include <errno.h>
#include <stdlib.h>
#include "cq.h"
#include "qp.h"
#include "qp_internal.h"
#include "stag.h"

/* What each send opcode may carry, checked once at post time. */
struct rnic_wr_rule {
    bool payload;               /* takes SGEs (else num_sge must be 0) */
    bool inline_ok;
    bool read_like;             /* expects a response: counts against ORD */
    bool atomic;
    int8_t solicited_as;        /* opcode with SE set, -1: SE not allowed */
};

static const struct rnic_wr_rule rnic_wr_rules[RNIC_WR_OPCODE_COUNT] = {
    [RNIC_WR_SEND] = { true, true, false, false, RNIC_WR_SEND_SE },
    [RNIC_WR_SEND_INV] = { true, true, false, false, RNIC_WR_SEND_SE_INV },
    [RNIC_WR_SEND_SE] = { true, true, false, false, RNIC_WR_SEND_SE },
    [RNIC_WR_SEND_SE_INV] = { true, true, false, false,
                              RNIC_WR_SEND_SE_INV },
    [RNIC_WR_WRITE] = { true, true, false, false, -1 },
    [RNIC_WR_READ] = { true, false, true, false, -1 },
    [RNIC_WR_ATOMIC_FETCH_ADD] = { true, false, true, true, -1 },
    [RNIC_WR_ATOMIC_CMP_SWAP] = { true, false, true, true, -1 },
    [RNIC_WR_IMM_DATA] = { false, false, false, false, RNIC_WR_IMM_DATA_SE },
    [RNIC_WR_IMM_DATA_SE] = { false, false, false, false,
                              RNIC_WR_IMM_DATA_SE },
    [RNIC_WR_LOCAL_INV] = { false, false, false, false, -1 },
    [RNIC_WR_BIND_MW] = { false, false, false, false, -1 },
    [RNIC_WR_FAST_REG] = { false, false, false, false, -1 },
    [RNIC_WR_READ_INV] = { true, false, true, false, -1 },
};

static bool rnic_wr_is_read_like(const struct rnic_send_wr *wr)
{
    return rnic_wr_rules[wr->opcode].read_like;
}

/* ---- state names and the transition table ---- */

const char *rnic_qp_state_str(enum rnic_qp_state state)
{
    static const char *const names[RNIC_QP_STATE_COUNT] = {
        [RNIC_QP_IDLE] = "IDLE",
        [RNIC_QP_RTS] = "RTS",
        [RNIC_QP_CLOSING] = "CLOSING",
        [RNIC_QP_TERMINATE] = "TERMINATE",
        [RNIC_QP_ERROR] = "ERROR",
    };

    return (unsigned)state < RNIC_QP_STATE_COUNT ? names[state] : "?";
}

bool rnic_qp_transition_legal(enum rnic_qp_state from, enum rnic_qp_state to)
{
#define T(s) (1u << (s))
    static const unsigned legal[RNIC_QP_STATE_COUNT] = {
        [RNIC_QP_IDLE] = T(RNIC_QP_RTS) | T(RNIC_QP_ERROR),
        [RNIC_QP_RTS] = T(RNIC_QP_CLOSING) | T(RNIC_QP_TERMINATE) |
                        T(RNIC_QP_ERROR),
        [RNIC_QP_CLOSING] = T(RNIC_QP_IDLE) | T(RNIC_QP_ERROR),
        [RNIC_QP_TERMINATE] = T(RNIC_QP_ERROR),
        [RNIC_QP_ERROR] = T(RNIC_QP_IDLE),
    };

    if ((unsigned)from >= RNIC_QP_STATE_COUNT ||
        (unsigned)to >= RNIC_QP_STATE_COUNT) {
        return false;
    }
    return legal[from] & T(to);
#undef T
}

/* ---- receive rings (RQ and SRQ) ---- */

static void rnic_recv_ring_init(struct rnic_recv_ring *r, uint32_t depth)
{
    r->wrs = NULL;
    r->depth = depth;
    r->head = 0;
    r->count = 0;
}

static int rnic_recv_ring_push(struct rnic_recv_ring *r,
                               const struct rnic_recv_wr *wr)
{
    if (r->count == r->depth || !RNIC_SHADOW(r->wrs, r->depth)) {
        return -ENOMEM;
    }
    r->wrs[rnic_ring_slot(r->head, r->count, r->depth)] = *wr;
    r->count++;
    return 0;
}

static void rnic_recv_ring_pop(struct rnic_recv_ring *r)
{
    r->head = rnic_ring_slot(r->head, 1, r->depth);
    r->count--;
}

/* 0, or -EMSGSIZE when the SGEs add up to more than a message can carry. */
static int rnic_sge_total(const struct rnic_sge *sge, uint32_t n,
                          uint32_t *total)
{
    uint64_t sum = 0;

    for (uint32_t i = 0; i < n; i++) {
        sum += sge[i].length;
    }
    if (sum > UINT32_MAX) {
        return -EMSGSIZE;
    }
    *total = (uint32_t)sum;
    return 0;
}

static int rnic_check_recv_wr(const struct rnic_recv_wr *wr, uint32_t max_sge)
{
    uint32_t total;

    if (wr->num_sge > max_sge) {
        return -E2BIG;
    }
    return rnic_sge_total(wr->sge, wr->num_sge, &total);
}

/* ---- shared receive queues ---- */

struct rnic_srq *rnic_srq_new(uint32_t srqn, uint32_t depth, uint32_t max_sge)
{
    struct rnic_srq *srq;

    if (depth == 0 || depth > RNIC_QP_MAX_DEPTH || max_sge > RNIC_MAX_SGE) {
        return NULL;
    }
    srq = calloc(1, sizeof(*srq));
    if (!srq) {
        return NULL;
    }
    rnic_recv_ring_init(&srq->ring, depth);
    srq->srqn = srqn;
    srq->max_sge = max_sge;
    return srq;
}

uint64_t rnic_qp_recv_queue(const struct rnic_qp *qp)
{
    return qp->attr.srq ? rnic_recv_queue_srq(qp->attr.srq->srqn)
                        : rnic_recv_queue_qp(qp->qpn);
}

int rnic_srq_destroy(struct rnic_srq *srq)
{
    if (srq->refs) {
        return -EBUSY;
    }
    free(srq->ring.wrs);
    free(srq);
    return 0;
}

int rnic_srq_post_recv(struct rnic_srq *srq, const struct rnic_recv_wr *wr)
{
    int ret = rnic_check_recv_wr(wr, srq->max_sge);

    return ret < 0 ? ret : rnic_recv_ring_push(&srq->ring, wr);
}

uint32_t rnic_srq_count(const struct rnic_srq *srq)
{
    return srq->ring.count;
}

/* ---- creation ---- */

static bool rnic_qp_attr_valid(const struct rnic_qp_attr *a)
{
    return a->send_cq && a->recv_cq &&
           a->sq_depth && a->sq_depth <= RNIC_QP_MAX_DEPTH &&
           (a->srq || (a->rq_depth && a->rq_depth <= RNIC_QP_MAX_DEPTH)) &&
           a->max_send_sge <= RNIC_MAX_SGE &&
           a->max_recv_sge <= RNIC_MAX_SGE &&
           a->max_ord <= RNIC_QP_MAX_RD && a->max_ird <= RNIC_QP_MAX_RD;
}

struct rnic_qp *rnic_qp_new(uint32_t qpn, const struct rnic_qp_attr *attr)
{
    struct rnic_qp *qp;

    if (!rnic_qp_attr_valid(attr)) {
        return NULL;
    }
    qp = calloc(1, sizeof(*qp));
    if (!qp) {
        return NULL;
    }
    qp->qpn = qpn;
    qp->state = RNIC_QP_IDLE;
    qp->attr = *attr;
    qp->ord = attr->max_ord;
    qp->ird = attr->max_ird;
    rnic_recv_ring_init(&qp->rq, attr->srq ? 0 : attr->rq_depth);
    rnic_cq_ref(attr->send_cq);
    rnic_cq_ref(attr->recv_cq);
    if (attr->srq) {
        attr->srq->refs++;
    }
    return qp;
}

void rnic_qp_free(struct rnic_qp *qp)
{
    rnic_cq_unref(qp->attr.send_cq);
    rnic_cq_unref(qp->attr.recv_cq);
    if (qp->attr.srq) {
        qp->attr.srq->refs--;
    }
    free(qp->sq.slots);
    free(qp->rq.wrs);
    free(qp->irq.reqs);
    free(qp);
}

/* ---- completions ---- */

static uint32_t rnic_send_wr_length(const struct rnic_send_wr *wr)
{
    uint32_t total = 0;

    if (wr->flags & RNIC_WR_INLINE) {
        return wr->inline_len;
    }
    if (rnic_wr_rules[wr->opcode].payload) {
        rnic_sge_total(wr->sge, wr->num_sge, &total);
    }
    return total;
}

/* Keeps the first error: later pushes to an overflowed CQ only say -EIO. */
static int rnic_first_error(int sofar, int ret)
{
    return sofar < 0 ? sofar : ret;
}

static int rnic_qp_send_cqe(struct rnic_qp *qp, const struct rnic_send_wr *wr,
                            enum rnic_wc_status status)
{
    struct rnic_cqe cqe = {
        .wr_id = wr->wr_id,
        .status = status,
        .opcode = rnic_wc_opcode_of(wr->opcode),
        .qpn = qp->qpn,
    };

    if (status == RNIC_WC_SUCCESS) {
        if (!(wr->flags & RNIC_WR_SIGNALED)) {
            return 0;
        }
        cqe.byte_len = rnic_send_wr_length(wr);
        if (wr->opcode == RNIC_WR_READ_INV) {
            /* rx.c invalidated the sink before completing the Read */
            cqe.flags = RNIC_WC_WITH_INV;
            cqe.inval_stag = wr->invalidate_stag;
        }
    }
    return rnic_cq_push(qp->attr.send_cq, &cqe);
}

static int rnic_qp_recv_cqe(struct rnic_qp *qp, const struct rnic_recv_wr *wr,
                            struct rnic_cqe *cqe)
{
    cqe->wr_id = wr->wr_id;
    cqe->opcode = RNIC_WC_RECV;
    cqe->qpn = qp->qpn;
    return rnic_cq_push(qp->attr.recv_cq, cqe);
}

static struct rnic_sq_slot *rnic_qp_sq_slot(struct rnic_qp *qp, uint32_t off)
{
    return &qp->sq.slots[rnic_ring_slot(qp->sq.head, off, qp->attr.sq_depth)];
}

/* Writes the CQEs of the finished WRs at the head, oldest first. */
static int rnic_qp_sq_retire(struct rnic_qp *qp)
{
    int ret = 0;

    while (qp->sq.count && qp->sq.slots[qp->sq.head].done) {
        struct rnic_sq_slot *s = &qp->sq.slots[qp->sq.head];

        ret = rnic_first_error(ret, rnic_qp_send_cqe(qp, &s->wr, s->status));
        qp->sq.head = rnic_ring_slot(qp->sq.head, 1, qp->attr.sq_depth);
        qp->sq.count--;
        if (qp->sq.started) {
            qp->sq.started--;
        }
    }
    return ret;
}

/*
 * A WR that already finished keeps its own status: it did complete, only
 * its CQE was waiting for an older Read.  Everything else is flushed.
 */
static int rnic_qp_flush_sq(struct rnic_qp *qp)
{
    for (uint32_t i = 0; i < qp->sq.count; i++) {
        struct rnic_sq_slot *s = rnic_qp_sq_slot(qp, i);

        if (!s->done) {
            s->done = true;
            s->status = RNIC_WC_WR_FLUSH_ERR;
        }
    }
    qp->ord_used = 0;
    return rnic_qp_sq_retire(qp);
}

static int rnic_qp_flush_rq(struct rnic_qp *qp)
{
    int ret = 0;

    if (qp->recv_active && qp->attr.srq) {
        struct rnic_cqe cqe = { .status = RNIC_WC_WR_FLUSH_ERR };

        ret = rnic_qp_recv_cqe(qp, &qp->srq_wr, &cqe);
    }
    qp->recv_active = false;
    while (qp->rq.count) {
        struct rnic_cqe cqe = { .status = RNIC_WC_WR_FLUSH_ERR };

        ret = rnic_first_error(ret, rnic_qp_recv_cqe(qp,
                                   &qp->rq.wrs[qp->rq.head], &cqe));
        rnic_recv_ring_pop(&qp->rq);
    }
    return ret;
}

static int rnic_qp_flush(struct rnic_qp *qp)
{
    int ret = rnic_qp_flush_sq(qp);

    ret = rnic_first_error(ret, rnic_qp_flush_rq(qp));
    qp->irq.head = 0;
    qp->irq.count = 0;
    return ret;
}

/* ---- state changes ---- */

static void rnic_qp_reset_connection(struct rnic_qp *qp)
{
    for (int qn = 0; qn < RNIC_QP_QN_COUNT; qn++) {
        qp->tx_msn[qn] = 1;
        qp->rx_msn[qn] = 1;
    }
    qp->ord_used = 0;
    qp->irq.head = 0;
    qp->irq.count = 0;
}

/* Graceful close may end in IDLE only with nothing left to send. */
static bool rnic_qp_drained(const struct rnic_qp *qp)
{
    return qp->sq.count == 0 && qp->irq.count == 0 && !qp->recv_active;
}

int rnic_qp_modify(struct rnic_qp *qp, enum rnic_qp_state to)
{
    if (!rnic_qp_transition_legal(qp->state, to)) {
        return -EINVAL;
    }
    if (qp->state == RNIC_QP_CLOSING && to == RNIC_QP_IDLE &&
        !rnic_qp_drained(qp)) {
        return -EBUSY;
    }
    qp->state = to;
    switch (to) {
    case RNIC_QP_RTS:
        rnic_qp_reset_connection(qp);
        return 0;
    case RNIC_QP_TERMINATE:
    case RNIC_QP_ERROR:
        return rnic_qp_flush(qp);
    default:
        return 0;
    }
}

int rnic_qp_adopt_connection(struct rnic_qp *qp, uint32_t ord, uint32_t ird)
{
    if (qp->state != RNIC_QP_IDLE) {
        return -EINVAL;
    }
    if (ord > qp->attr.max_ord || ird > qp->attr.max_ird) {
        return -ERANGE;
    }
    qp->ord = ord;
    qp->ird = ird;
    return rnic_qp_modify(qp, RNIC_QP_RTS);
}

bool rnic_qp_close_flushes(const struct rnic_qp *qp)
{
    return qp->state == RNIC_QP_RTS || qp->state == RNIC_QP_TERMINATE ||
           (qp->state == RNIC_QP_CLOSING && !rnic_qp_drained(qp));
}

int rnic_qp_connection_closed(struct rnic_qp *qp)
{
    switch (qp->state) {
    case RNIC_QP_CLOSING:
        return rnic_qp_modify(qp, rnic_qp_drained(qp) ? RNIC_QP_IDLE
                                                      : RNIC_QP_ERROR);
    case RNIC_QP_RTS:
    case RNIC_QP_TERMINATE:
        return rnic_qp_modify(qp, RNIC_QP_ERROR);
    default:
        return 0;
    }
}

/* ---- posting ---- */

bool rnic_qp_flushes_posts(const struct rnic_qp *qp)
{
    return qp->state == RNIC_QP_TERMINATE || qp->state == RNIC_QP_ERROR;
}

static int rnic_check_send_payload(const struct rnic_qp *qp,
                                   const struct rnic_send_wr *wr)
{
    const struct rnic_wr_rule *rule = &rnic_wr_rules[wr->opcode];
    uint32_t total;

    if (wr->flags & RNIC_WR_INLINE) {
        if (!rule->inline_ok || wr->num_sge) {
            return -EINVAL;
        }
        return wr->inline_len > RNIC_MAX_INLINE ? -E2BIG : 0;
    }
    if (!rule->payload) {
        return wr->num_sge ? -EINVAL : 0;
    }
    if (wr->num_sge > qp->attr.max_send_sge ||
        (rnic_wr_is_read(wr->opcode) && wr->num_sge > RNIC_MAX_READ_SGE)) {
        return -E2BIG;
    }
    if (rule->atomic &&
        (wr->num_sge != 1 || wr->sge[0].length != RNIC_ATOMIC_LEN)) {
        return -EINVAL;
    }
    return rnic_sge_total(wr->sge, wr->num_sge, &total);
}

static int rnic_check_send_wr(const struct rnic_qp *qp,
                              const struct rnic_send_wr *wr)
{
    const struct rnic_wr_rule *rule;

    if ((unsigned)wr->opcode >= RNIC_WR_OPCODE_COUNT) {
        return -EOPNOTSUPP;
    }
    rule = &rnic_wr_rules[wr->opcode];
    if ((rule->atomic && !qp->attr.atomics) ||
        (rule->read_like && qp->ord == 0)) {
        return -EOPNOTSUPP;
    }
    if ((wr->flags & ~RNIC_WR_FLAGS_ALL) ||
        ((wr->flags & RNIC_WR_SOLICITED) && rule->solicited_as < 0)) {
        return -EINVAL;
    }
    return rnic_check_send_payload(qp, wr);
}

int rnic_qp_post_send(struct rnic_qp *qp, const struct rnic_send_wr *wr)
{
    struct rnic_sq_slot *slot;
    int ret = rnic_check_send_wr(qp, wr);

    if (ret < 0) {
        return ret;
    }
    if (rnic_qp_flushes_posts(qp)) {
        return rnic_qp_send_cqe(qp, wr, RNIC_WC_WR_FLUSH_ERR);
    }
    if (qp->state != RNIC_QP_RTS) {
        return -ENOTCONN;
    }
    if (qp->sq.count == qp->attr.sq_depth ||
        !RNIC_SHADOW(qp->sq.slots, qp->attr.sq_depth)) {
        return -ENOMEM;
    }
    slot = rnic_qp_sq_slot(qp, qp->sq.count);
    slot->wr = *wr;
    slot->done = false;
    slot->status = RNIC_WC_SUCCESS;
    /* The tx path then looks at the opcode alone to set the SE bit. */
    if (wr->flags & RNIC_WR_SOLICITED) {
        slot->wr.opcode = rnic_wr_rules[wr->opcode].solicited_as;
    }
    qp->sq.count++;
    return 0;
}

int rnic_qp_post_recv(struct rnic_qp *qp, const struct rnic_recv_wr *wr)
{
    int ret;

    if (qp->attr.srq) {
        return -EINVAL;
    }
    ret = rnic_check_recv_wr(wr, qp->attr.max_recv_sge);
    if (ret < 0) {
        return ret;
    }
    if (rnic_qp_flushes_posts(qp)) {
        struct rnic_cqe cqe = { .status = RNIC_WC_WR_FLUSH_ERR };

        return rnic_qp_recv_cqe(qp, wr, &cqe);
    }
    return rnic_recv_ring_push(&qp->rq, wr);
}

/* ---- the send queue on the data path ---- */

struct rnic_send_wr *rnic_qp_sq_next(struct rnic_qp *qp)
{
    struct rnic_sq_slot *slot;

    if (qp->state != RNIC_QP_RTS || qp->sq.started == qp->sq.count) {
        return NULL;
    }
    slot = rnic_qp_sq_slot(qp, qp->sq.started);
    if ((slot->wr.flags & RNIC_WR_FENCE) && qp->ord_used) {
        return NULL;
    }
    if (rnic_wr_is_read_like(&slot->wr)) {
        if (qp->ord_used >= qp->ord) {
            return NULL;
        }
        qp->ord_used++;
    }
    qp->sq.started++;
    return &slot->wr;
}

/* A linear walk is fine: it covers at most the started WRs, and none at
 * all when no Read is pending. */
struct rnic_send_wr *rnic_qp_sq_oldest_read(struct rnic_qp *qp)
{
    for (uint32_t i = 0; qp->ord_used && i < qp->sq.started; i++) {
        struct rnic_sq_slot *s = rnic_qp_sq_slot(qp, i);

        if (!s->done && rnic_wr_is_read_like(&s->wr)) {
            return &s->wr;
        }
    }
    return NULL;
}

/* Finds the offset from the SQ head of @wr if it is a started WR. */
static bool rnic_qp_sq_find(const struct rnic_qp *qp,
                            const struct rnic_send_wr *wr, uint32_t *off)
{
    uintptr_t base = (uintptr_t)qp->sq.slots;
    uintptr_t p = (uintptr_t)wr;
    uintptr_t idx;

    if (!base || p < base || (p - base) % sizeof(struct rnic_sq_slot)) {
        return false;
    }
    idx = (p - base) / sizeof(struct rnic_sq_slot);
    if (idx >= qp->attr.sq_depth) {
        return false;
    }
    *off = idx >= qp->sq.head ? idx - qp->sq.head
                              : idx + qp->attr.sq_depth - qp->sq.head;
    return *off < qp->sq.started;
}

int rnic_qp_sq_done(struct rnic_qp *qp, struct rnic_send_wr *wr,
                    enum rnic_wc_status status)
{
    struct rnic_sq_slot *slot;
    uint32_t off;

    if (!rnic_qp_sq_find(qp, wr, &off)) {
        return -EINVAL;
    }
    slot = rnic_qp_sq_slot(qp, off);
    if (slot->done) {
        return -EINVAL;
    }
    slot->done = true;
    slot->status = status;
    if (rnic_wr_is_read_like(wr)) {
        qp->ord_used--;
    }
    return rnic_qp_sq_retire(qp);
}

/* ---- the receive side ---- */

const struct rnic_recv_wr *rnic_qp_recv_current(const struct rnic_qp *qp)
{
    if (!qp->recv_active) {
        return NULL;
    }
    return qp->attr.srq ? &qp->srq_wr : &qp->rq.wrs[qp->rq.head];
}

const struct rnic_recv_wr *rnic_qp_recv_begin(struct rnic_qp *qp)
{
    struct rnic_srq *srq = qp->attr.srq;

    if ((qp->state != RNIC_QP_RTS && qp->state != RNIC_QP_CLOSING) ||
        qp->recv_active) {
        return NULL;
    }
    if (srq) {
        if (!srq->ring.count) {
            return NULL;
        }
        /* Copied out: other QPs go on taking from the SRQ meanwhile. */
        qp->srq_wr = srq->ring.wrs[srq->ring.head];
        rnic_recv_ring_pop(&srq->ring);
    } else if (!qp->rq.count) {
        return NULL;
    }
    qp->recv_active = true;
    return rnic_qp_recv_current(qp);
}

int rnic_qp_recv_complete(struct rnic_qp *qp, struct rnic_cqe *cqe)
{
    int ret;

    if (!qp->recv_active) {
        return -EINVAL;
    }
    ret = rnic_qp_recv_cqe(qp, rnic_qp_recv_current(qp), cqe);
    if (!qp->attr.srq) {
        rnic_recv_ring_pop(&qp->rq);
    }
    qp->recv_active = false;
    return ret;
}

/* ---- inbound Reads ---- */

int rnic_qp_irq_push(struct rnic_qp *qp, const struct rnic_inbound_read *req)
{
    if (qp->irq.count >= qp->ird) {
        return -EPROTO;
    }
    if (!RNIC_SHADOW(qp->irq.reqs, qp->attr.max_ird)) {
        return -ENOMEM;
    }
    qp->irq.reqs[rnic_ring_slot(qp->irq.head, qp->irq.count,
                                qp->attr.max_ird)] = *req;
    qp->irq.count++;
    return 0;
}

const struct rnic_inbound_read *rnic_qp_irq_head(const struct rnic_qp *qp)
{
    return qp->irq.count ? &qp->irq.reqs[qp->irq.head] : NULL;
}

void rnic_qp_irq_pop(struct rnic_qp *qp)
{
    if (qp->irq.count) {
        qp->irq.head = rnic_ring_slot(qp->irq.head, 1, qp->attr.max_ird);
        qp->irq.count--;
    }
}
