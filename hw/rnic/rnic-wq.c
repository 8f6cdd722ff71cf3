/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Work queues: doorbells, fetching work requests from guest rings into the
 * protocol core, and writing the core's completions to guest CQ rings.
 * Doorbells only record the producer index; the fetch runs in a bottom
 * half so that the vCPU's MMIO write returns at once.
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "rnic.h"
#include "stag.h"
#include "cq.h"
#include "qp.h"
#include "trace.h"

/* ---- completions to the guest ---- */

static const uint8_t rnic_cqe_status_of_core[RNIC_WC_STATUS_COUNT] = {
    [RNIC_WC_SUCCESS] = RNIC_CQE_SUCCESS,
    [RNIC_WC_LOC_LEN_ERR] = RNIC_CQE_LOC_LEN_ERR,
    [RNIC_WC_LOC_QP_OP_ERR] = RNIC_CQE_LOC_QP_OP_ERR,
    [RNIC_WC_LOC_PROT_ERR] = RNIC_CQE_LOC_PROT_ERR,
    [RNIC_WC_WR_FLUSH_ERR] = RNIC_CQE_WR_FLUSH_ERR,
    [RNIC_WC_MW_BIND_ERR] = RNIC_CQE_MW_BIND_ERR,
    [RNIC_WC_BAD_RESP_ERR] = RNIC_CQE_BAD_RESP_ERR,
    [RNIC_WC_LOC_ACCESS_ERR] = RNIC_CQE_LOC_ACCESS_ERR,
    [RNIC_WC_REM_INV_REQ_ERR] = RNIC_CQE_REM_INV_REQ_ERR,
    [RNIC_WC_REM_ACCESS_ERR] = RNIC_CQE_REM_ACCESS_ERR,
    [RNIC_WC_REM_OP_ERR] = RNIC_CQE_REM_OP_ERR,
    [RNIC_WC_FATAL_ERR] = RNIC_CQE_FATAL_ERR,
    [RNIC_WC_GENERAL_ERR] = RNIC_CQE_GENERAL_ERR,
};

static const uint8_t rnic_cqe_opcode_of_core[RNIC_WC_OPCODE_COUNT] = {
    [RNIC_WC_SEND] = RNIC_WQE_SEND,
    [RNIC_WC_WRITE] = RNIC_WQE_WRITE,
    [RNIC_WC_READ] = RNIC_WQE_READ,
    [RNIC_WC_ATOMIC_FETCH_ADD] = RNIC_WQE_ATOMIC_FADD,
    [RNIC_WC_ATOMIC_CMP_SWAP] = RNIC_WQE_ATOMIC_CSWAP,
    [RNIC_WC_IMM_DATA] = RNIC_WQE_IMM_DATA,
    [RNIC_WC_LOCAL_INV] = RNIC_WQE_LOCAL_INV,
    [RNIC_WC_BIND_MW] = RNIC_WQE_BIND_MW,
    [RNIC_WC_RECV] = RNIC_WQE_RECV,
};

static void rnic_cqe_to_guest(const struct rnic_cqe *c, uint8_t phase,
                              struct rnic_cq_entry *e)
{
    uint8_t flags = 0;

    flags |= c->flags & RNIC_WC_WITH_INV ? RNIC_CQE_FLAG_WITH_INV : 0;
    flags |= c->flags & RNIC_WC_WITH_IMM ? RNIC_CQE_FLAG_WITH_IMM : 0;
    flags |= c->flags & RNIC_WC_SOLICITED ? RNIC_CQE_FLAG_SOLICITED : 0;
    *e = (struct rnic_cq_entry) {
        .wr_id = cpu_to_le64(c->wr_id),
        .byte_len = cpu_to_le32(c->byte_len),
        .qpn = cpu_to_le32(c->qpn),
        .imm = cpu_to_le32(c->imm_data),
        .invalidated_stag = cpu_to_le32(c->inval_stag),
        .status = rnic_cqe_status_of_core[c->status],
        .opcode = rnic_cqe_opcode_of_core[c->opcode],
        .flags = flags,
        .phase = phase,
    };
}

/*
 * Moves completions from the core's staging ring to the guest's while the
 * guest ring has room; what does not fit waits in the core ring, which
 * reports an overflow when it is full too.
 */
void rnic_cq_flush_to_guest(RnicState *s, RnicCq *cq)
{
    uint32_t n = 1u << cq->log_size;
    struct rnic_cqe c;

    while ((uint16_t)(cq->prod - cq->cons) < n &&
           rnic_cq_poll(cq->core, &c, 1)) {
        struct rnic_cq_entry e;
        uint64_t addr = cq->ring + (uint64_t)(cq->prod & (n - 1)) *
                        RNIC_CQE_SIZE;

        rnic_cqe_to_guest(&c, ((cq->prod >> cq->log_size) & 1) ^ 1, &e);
        if (rnic_pci_write(s, addr, &e, sizeof(e))) {
            qemu_log_mask(LOG_GUEST_ERROR, "rnic: CQ %u ring at 0x%" PRIx64
                          " not writable; completion of wr_id 0x%" PRIx64
                          " lost\n", cq->cqn, addr, c.wr_id);
            continue;
        }
        trace_rnic_cqe(cq->cqn, c.qpn, rnic_wc_status_str(c.status),
                       rnic_wc_opcode_str(c.opcode), c.byte_len);
        s->stats.cqe[e.status & 15]++;
        cq->prod++;
    }
    if (rnic_cq_overflowed(cq->core) && !cq->overflow_reported) {
        cq->overflow_reported = true;
        rnic_eq_post(s, RNIC_EV_CQ_OVERFLOW, cq->cqn, 0, 0);
    }
    if (cq->irq_pending) {
        cq->irq_pending = false;
        rnic_irq(s, cq->vector);
    }
}

/* A CQ the next run of the work-queue bottom half must flush. */
void rnic_cq_kick(RnicState *s, RnicCq *cq)
{
    if (!cq->kicked) {
        cq->kicked = true;
        QTAILQ_INSERT_TAIL(&s->kicked_cqs, cq, kick_link);
    }
}

/* Every CQ: for the rare paths (state changes, errors) that touch many. */
void rnic_cqs_flush_to_guest(RnicState *s)
{
    for (uint32_t i = 0; i < s->limits.max_cq; i++) {
        if (s->cqs[i]) {
            rnic_cq_flush_to_guest(s, s->cqs[i]);
        }
    }
}

/* ---- work requests from the guest ---- */

static const int8_t rnic_wr_opcode_of_hw[] = {
    [RNIC_WQE_SEND] = RNIC_WR_SEND,
    [RNIC_WQE_SEND_INV] = RNIC_WR_SEND_INV,
    [RNIC_WQE_WRITE] = RNIC_WR_WRITE,
    [RNIC_WQE_READ] = RNIC_WR_READ,
    [RNIC_WQE_ATOMIC_FADD] = RNIC_WR_ATOMIC_FETCH_ADD,
    [RNIC_WQE_ATOMIC_CSWAP] = RNIC_WR_ATOMIC_CMP_SWAP,
    [RNIC_WQE_IMM_DATA] = RNIC_WR_IMM_DATA,
    [RNIC_WQE_LOCAL_INV] = RNIC_WR_LOCAL_INV,
    [RNIC_WQE_BIND_MW] = RNIC_WR_BIND_MW,
};

static void rnic_sges_from_hw(const struct rnic_wqe_sge *in, uint32_t n,
                              struct rnic_sge *out)
{
    for (uint32_t i = 0; i < n; i++) {
        out[i] = (struct rnic_sge) {
            .stag = le32_to_cpu(in[i].stag),
            .to = le64_to_cpu(in[i].addr),
            .length = le32_to_cpu(in[i].length),
        };
    }
}

/* False when the entry is malformed beyond what the core checks. */
static bool rnic_send_wr_from_hw(const struct rnic_sq_wqe *w,
                                 struct rnic_send_wr *wr)
{
    uint8_t flags = w->flags;

    if (w->opcode >= ARRAY_SIZE(rnic_wr_opcode_of_hw) ||
        (w->opcode != RNIC_WQE_SEND && !rnic_wr_opcode_of_hw[w->opcode]) ||
        (flags & ~0x0f)) {
        return false;
    }
    memset(wr, 0, sizeof(*wr));
    wr->wr_id = le64_to_cpu(w->wr_id);
    wr->opcode = rnic_wr_opcode_of_hw[w->opcode];
    wr->flags = (flags & RNIC_WQE_FLAG_SIGNALED ? RNIC_WR_SIGNALED : 0) |
                (flags & RNIC_WQE_FLAG_SOLICITED ? RNIC_WR_SOLICITED : 0) |
                (flags & RNIC_WQE_FLAG_FENCE ? RNIC_WR_FENCE : 0) |
                (flags & RNIC_WQE_FLAG_INLINE ? RNIC_WR_INLINE : 0);
    if (flags & RNIC_WQE_FLAG_INLINE) {
        if (w->num_sge > RNIC_WQE_INLINE_MAX) {
            return false;
        }
        wr->inline_len = w->num_sge;
        memcpy(wr->inline_data, w->sge, w->num_sge);
    } else {
        if (w->num_sge > RNIC_WQE_MAX_SGE) {
            return false;
        }
        wr->num_sge = w->num_sge;
        rnic_sges_from_hw(w->sge, w->num_sge, wr->sge);
    }
    wr->remote_stag = le32_to_cpu(w->remote_stag);
    wr->remote_to = le64_to_cpu(w->remote_addr);
    wr->invalidate_stag = le32_to_cpu(w->imm_or_stag);
    wr->imm_data = le32_to_cpu(w->imm_or_stag);
    wr->atomic_add_or_compare = le64_to_cpu(w->atomic_arg0);
    wr->atomic_swap = le64_to_cpu(w->atomic_arg1);
    if (wr->opcode == RNIC_WR_BIND_MW) {
        wr->bind = (struct rnic_bind_params) {
            .mw_stag = wr->remote_stag,
            .mr_stag = le32_to_cpu(w->sge[0].stag),
            .to = le64_to_cpu(w->sge[0].addr),
            .length = le32_to_cpu(w->sge[0].length),
            .access = le32_to_cpu(w->bind_access) & 0xffffff,
        };
        wr->num_sge = 0;
    }
    return true;
}

static void rnic_wq_guest_error(RnicState *s, RnicQp *qp, const char *q,
                                uint32_t index, const char *why)
{
    qemu_log_mask(LOG_GUEST_ERROR, "rnic: QP %u %s entry %u: %s; QP moves "
                  "to ERROR\n", qp->qpn, q, index, why);
    trace_rnic_err_wqe(qp->qpn, q, index, why);
}

/*
 * A WQE the device cannot accept completes with LOC_QP_OP_ERR and the QP
 * goes to ERROR, as a hardware RNIC reports a malformed descriptor.
 */
static void rnic_wq_reject(RnicState *s, RnicQp *qp, RnicCq *cq,
                           uint64_t wr_id, bool recv)
{
    struct rnic_cqe c = {
        .wr_id = wr_id,
        .status = RNIC_WC_LOC_QP_OP_ERR,
        .opcode = recv ? RNIC_WC_RECV : RNIC_WC_SEND,
        .qpn = qp->qpn,
    };

    rnic_cq_push(cq->core, &c);
    if (qp->core->state != RNIC_QP_ERROR) {
        rnic_qp_modify(qp->core, RNIC_QP_ERROR);
        rnic_eq_post(s, RNIC_EV_QP_ERROR, qp->qpn, RNIC_CQE_LOC_QP_OP_ERR, 0);
    }
}

/* One receive entry to the core; links its STag for invalidate-on-use. */
static int rnic_post_recv_hw(RnicState *s, const struct rnic_rq_wqe *w,
                             struct rnic_qp *core, struct rnic_srq *srq)
{
    struct rnic_recv_wr wr = { .wr_id = le64_to_cpu(w->wr_id) };
    uint32_t linked = le32_to_cpu(w->linked_stag);
    int ret;

    if (w->num_sge > RNIC_WQE_MAX_SGE) {
        return -E2BIG;
    }
    wr.num_sge = w->num_sge;
    rnic_sges_from_hw(w->sge, w->num_sge, wr.sge);
    ret = core ? rnic_qp_post_recv(core, &wr) : rnic_srq_post_recv(srq, &wr);
    if (!ret && linked &&
        rnic_stag_link_to_recv(s->stags, linked, wr.wr_id) != RNIC_STAG_OK) {
        return -EINVAL;
    }
    return ret;
}

/* One send queue entry to the core: NULL, or why it was refused. */
static const char *rnic_wq_take_send(RnicState *s, RnicQp *qp, uint64_t addr,
                                     uint64_t *wr_id)
{
    struct rnic_sq_wqe w;
    struct rnic_send_wr wr;
    int ret;

    if (rnic_pci_read(s, addr, &w, sizeof(w))) {
        return "entry not readable by DMA";
    }
    *wr_id = le64_to_cpu(w.wr_id);
    if (!rnic_send_wr_from_hw(&w, &wr)) {
        return "bad opcode, flags or SGE count";
    }
    ret = rnic_qp_post_send(qp->core, &wr);
    return ret ? strerror(-ret) : NULL;
}

/* One receive queue entry to the core: NULL, or why it was refused. */
static const char *rnic_wq_take_recv(RnicState *s, RnicQp *qp, uint64_t addr,
                                     uint64_t *wr_id)
{
    struct rnic_rq_wqe w;
    int ret;

    if (rnic_pci_read(s, addr, &w, sizeof(w))) {
        return "entry not readable by DMA";
    }
    *wr_id = le64_to_cpu(w.wr_id);
    ret = rnic_post_recv_hw(s, &w, qp->core, NULL);
    return ret ? strerror(-ret) : NULL;
}

/* Takes a QP's new entries up to the last doorbell, in ring order. */
static void rnic_wq_fetch(RnicState *s, RnicQp *qp, bool recv)
{
    uint16_t *fetched = recv ? &qp->rq_fetched : &qp->sq_fetched;
    uint16_t prod = recv ? qp->rq_prod : qp->sq_prod;
    uint32_t mask = (1u << (recv ? qp->rq_log : qp->sq_log)) - 1;
    uint64_t ring = recv ? qp->rq_ring : qp->sq_ring;

    for (; *fetched != prod; (*fetched)++) {
        uint64_t addr = ring + (uint64_t)(*fetched & mask) *
                        (recv ? RNIC_RQ_WQE_SIZE : RNIC_SQ_WQE_SIZE);
        uint64_t wr_id = 0;
        const char *why = recv ? rnic_wq_take_recv(s, qp, addr, &wr_id)
                               : rnic_wq_take_send(s, qp, addr, &wr_id);

        if (why) {
            rnic_wq_guest_error(s, qp, recv ? "RQ" : "SQ", *fetched, why);
            rnic_wq_reject(s, qp, recv ? qp->rcq : qp->scq, wr_id, recv);
        }
    }
}

static void rnic_wq_fetch_srq(RnicState *s, RnicSrq *srq)
{
    uint32_t n = 1u << srq->log_size;

    while (srq->fetched != srq->prod) {
        uint64_t addr = srq->ring + (uint64_t)(srq->fetched & (n - 1)) *
                        RNIC_RQ_WQE_SIZE;
        struct rnic_rq_wqe w;

        /* An SRQ belongs to no QP: a bad entry is dropped and logged. */
        if (rnic_pci_read(s, addr, &w, sizeof(w)) ||
            rnic_post_recv_hw(s, &w, NULL, srq->core)) {
            qemu_log_mask(LOG_GUEST_ERROR, "rnic: SRQ %u entry %u not "
                          "accepted (unreadable, bad SGEs or queue full); "
                          "dropped\n", srq->srqn, srq->fetched);
        }
        srq->fetched++;
    }
}

void rnic_wq_run(void *opaque)
{
    RnicState *s = opaque;
    RnicSrq *srq;
    RnicQp *qp;
    RnicCq *cq;

    while ((srq = QTAILQ_FIRST(&s->kicked_srqs))) {
        QTAILQ_REMOVE(&s->kicked_srqs, srq, kick_link);
        srq->kicked = false;
        rnic_wq_fetch_srq(s, srq);
    }
    while ((qp = QTAILQ_FIRST(&s->kicked))) {
        QTAILQ_REMOVE(&s->kicked, qp, kick_link);
        qp->kicked = false;
        rnic_wq_fetch(s, qp, true);
        rnic_wq_fetch(s, qp, false);
        rnic_cq_kick(s, qp->scq);
        rnic_cq_kick(s, qp->rcq);
        if (qp->conn && qp->conn->ep) {
            rnic_dp_pump(qp->conn);
        }
    }
    /* Only the CQs this run could have touched: no scan of every CQ. */
    while ((cq = QTAILQ_FIRST(&s->kicked_cqs))) {
        QTAILQ_REMOVE(&s->kicked_cqs, cq, kick_link);
        cq->kicked = false;
        rnic_cq_flush_to_guest(s, cq);
    }
}

static void rnic_db_error(hwaddr reg, uint32_t val, const char *why)
{
    qemu_log_mask(LOG_GUEST_ERROR, "rnic: doorbell 0x%03" HWADDR_PRIx
                  " value 0x%08x ignored: %s\n", reg, val, why);
    trace_rnic_err_doorbell(reg, val, why);
}

void rnic_wq_doorbell(RnicState *s, hwaddr reg, uint32_t val)
{
    uint32_t id = RNIC_DB_ID(val);
    uint16_t idx = RNIC_DB_INDEX(val);
    RnicQp *qp;
    RnicCq *cq;
    RnicSrq *srq;

    trace_rnic_doorbell(reg, id, idx);
    switch (reg) {
    case RNIC_REG_DB_SQ:
    case RNIC_REG_DB_RQ:
        qp = rnic_qp_get(s, id);
        if (!qp || (reg == RNIC_REG_DB_RQ && qp->srq)) {
            rnic_db_error(reg, val, qp ? "QP uses an SRQ" : "no such QP");
            return;
        }
        if ((uint16_t)(idx - (reg == RNIC_REG_DB_SQ ? qp->sq_fetched :
                              qp->rq_fetched)) >
            1u << (reg == RNIC_REG_DB_SQ ? qp->sq_log : qp->rq_log)) {
            rnic_db_error(reg, val, "producer more than a ring ahead");
            return;
        }
        *(reg == RNIC_REG_DB_SQ ? &qp->sq_prod : &qp->rq_prod) = idx;
        if (!qp->kicked) {
            qp->kicked = true;
            QTAILQ_INSERT_TAIL(&s->kicked, qp, kick_link);
        }
        qemu_bh_schedule(s->wq_bh);
        return;
    case RNIC_REG_DB_SRQ:
        srq = rnic_srq_get(s, id);
        if (!srq) {
            rnic_db_error(reg, val, "no such SRQ");
            return;
        }
        srq->prod = idx;
        if (!srq->kicked) {
            srq->kicked = true;
            QTAILQ_INSERT_TAIL(&s->kicked_srqs, srq, kick_link);
        }
        qemu_bh_schedule(s->wq_bh);
        return;
    case RNIC_REG_DB_CQ:
    case RNIC_REG_DB_CQ_ARM:
        cq = rnic_cq_get(s, id);
        if (!cq) {
            rnic_db_error(reg, val, "no such CQ");
            return;
        }
        if (reg == RNIC_REG_DB_CQ) {
            cq->cons = idx;
        } else if (val & RNIC_DB_ARM_NEXT) {
            rnic_cq_arm(cq->core, RNIC_CQ_ARM_NEXT);
        } else if (val & RNIC_DB_ARM_SOLICITED) {
            rnic_cq_arm(cq->core, RNIC_CQ_ARM_SOLICITED);
        }
        rnic_cq_kick(s, cq);
        qemu_bh_schedule(s->wq_bh);
        return;
    }
}
