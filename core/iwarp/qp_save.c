/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QPs and SRQs to bytes and back (save.h): the WRs each queue holds, in
 * queue order from its head, so that the slots' positions need not be.
 */
#include <errno.h>
#include <string.h>
#include "qp_internal.h"
#include "save.h"

static void sge_save(struct rnic_sv *s, const struct rnic_sge *sge, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        rnic_sv_u32(s, sge[i].stag);
        rnic_sv_u64(s, sge[i].to);
        rnic_sv_u32(s, sge[i].length);
    }
}

static void sge_load(struct rnic_ld *l, struct rnic_sge *sge, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        sge[i].stag = rnic_ld_u32(l);
        sge[i].to = rnic_ld_u64(l);
        sge[i].length = rnic_ld_u32(l);
    }
}

static void recv_wr_save(struct rnic_sv *s, const struct rnic_recv_wr *wr)
{
    rnic_sv_u64(s, wr->wr_id);
    rnic_sv_u32(s, wr->num_sge);
    sge_save(s, wr->sge, wr->num_sge);
}

static bool recv_wr_load(struct rnic_ld *l, struct rnic_recv_wr *wr,
                         uint32_t max_sge)
{
    memset(wr, 0, sizeof(*wr));
    wr->wr_id = rnic_ld_u64(l);
    wr->num_sge = rnic_ld_count(l, max_sge);
    sge_load(l, wr->sge, wr->num_sge);
    return !l->failed;
}

static void recv_ring_save(struct rnic_sv *s, const struct rnic_recv_ring *r)
{
    rnic_sv_u32(s, r->count);
    for (uint32_t i = 0; i < r->count; i++) {
        recv_wr_save(s, &r->wrs[rnic_ring_slot(r->head, i, r->depth)]);
    }
}

static bool recv_ring_load(struct rnic_ld *l, struct rnic_recv_ring *r,
                           uint32_t max_sge)
{
    uint32_t n = rnic_ld_count(l, r->depth);

    if (n && !RNIC_SHADOW(r->wrs, r->depth)) {
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!recv_wr_load(l, &r->wrs[i], max_sge)) {
            return false;
        }
    }
    r->head = 0;
    r->count = n;
    return !l->failed;
}

void rnic_srq_save(struct rnic_sv *s, const struct rnic_srq *srq)
{
    recv_ring_save(s, &srq->ring);
}

int rnic_srq_load(struct rnic_ld *l, struct rnic_srq *srq)
{
    return recv_ring_load(l, &srq->ring, srq->max_sge) ? 0 : -EINVAL;
}

static void send_wr_save(struct rnic_sv *s, const struct rnic_send_wr *wr)
{
    const struct rnic_fast_reg_params *f = &wr->fast_reg;
    const struct rnic_bind_params *b = &wr->bind;

    rnic_sv_u64(s, wr->wr_id);
    rnic_sv_u8(s, wr->opcode);
    rnic_sv_u32(s, wr->flags);
    rnic_sv_u32(s, wr->num_sge);
    rnic_sv_u32(s, wr->inline_len);
    if (wr->flags & RNIC_WR_INLINE) {
        rnic_sv_bytes(s, wr->inline_data, wr->inline_len);
    } else if (wr->opcode == RNIC_WR_FAST_REG) {
        rnic_sv_u64(s, f->pbl_addr);
        rnic_sv_u64(s, f->iova);
        rnic_sv_u64(s, f->length);
        rnic_sv_u32(s, f->npages);
        rnic_sv_u32(s, f->access);
        rnic_sv_u32(s, f->stag);
        rnic_sv_u32(s, f->first_byte_offset);
        rnic_sv_u8(s, f->page_shift);
    } else {
        sge_save(s, wr->sge, wr->num_sge);
    }
    rnic_sv_u32(s, wr->remote_stag);
    rnic_sv_u64(s, wr->remote_to);
    rnic_sv_u32(s, wr->invalidate_stag);
    rnic_sv_u32(s, wr->imm_data);
    rnic_sv_u64(s, wr->atomic_add_or_compare);
    rnic_sv_u64(s, wr->atomic_swap);
    rnic_sv_u32(s, b->mw_stag);
    rnic_sv_u32(s, b->mr_stag);
    rnic_sv_u64(s, b->to);
    rnic_sv_u64(s, b->length);
    rnic_sv_u32(s, b->access);
    rnic_sv_u8(s, b->key);
}

/*
 * What the transmitter indexes with is range-checked here; the rest (STags,
 * fast-reg and bind parameters) is checked when the WR runs, as at post.
 */
static bool send_wr_load(struct rnic_ld *l, struct rnic_send_wr *wr,
                         uint32_t max_sge)
{
    struct rnic_fast_reg_params *f = &wr->fast_reg;
    struct rnic_bind_params *b = &wr->bind;

    memset(wr, 0, sizeof(*wr));
    wr->wr_id = rnic_ld_u64(l);
    wr->opcode = rnic_ld_u8(l);
    wr->flags = rnic_ld_u32(l);
    wr->num_sge = rnic_ld_count(l, max_sge);
    wr->inline_len = rnic_ld_count(l, RNIC_MAX_INLINE);
    if (wr->opcode >= RNIC_WR_OPCODE_COUNT || (wr->flags & ~RNIC_WR_FLAGS_ALL)) {
        return false;
    }
    if (wr->flags & RNIC_WR_INLINE) {
        rnic_ld_bytes(l, wr->inline_data, wr->inline_len);
    } else if (wr->opcode == RNIC_WR_FAST_REG) {
        f->pbl_addr = rnic_ld_u64(l);
        f->iova = rnic_ld_u64(l);
        f->length = rnic_ld_u64(l);
        f->npages = rnic_ld_u32(l);
        f->access = rnic_ld_u32(l);
        f->stag = rnic_ld_u32(l);
        f->first_byte_offset = rnic_ld_u32(l);
        f->page_shift = rnic_ld_u8(l);
    } else {
        sge_load(l, wr->sge, wr->num_sge);
    }
    wr->remote_stag = rnic_ld_u32(l);
    wr->remote_to = rnic_ld_u64(l);
    wr->invalidate_stag = rnic_ld_u32(l);
    wr->imm_data = rnic_ld_u32(l);
    wr->atomic_add_or_compare = rnic_ld_u64(l);
    wr->atomic_swap = rnic_ld_u64(l);
    b->mw_stag = rnic_ld_u32(l);
    b->mr_stag = rnic_ld_u32(l);
    b->to = rnic_ld_u64(l);
    b->length = rnic_ld_u64(l);
    b->access = rnic_ld_u32(l);
    b->key = rnic_ld_u8(l);
    return !l->failed;
}

static void sq_save(struct rnic_sv *s, const struct rnic_qp *qp)
{
    rnic_sv_u32(s, qp->sq.count);
    rnic_sv_u32(s, qp->sq.started);
    for (uint32_t i = 0; i < qp->sq.count; i++) {
        const struct rnic_sq_slot *slot =
            &qp->sq.slots[rnic_ring_slot(qp->sq.head, i, qp->attr.sq_depth)];

        send_wr_save(s, &slot->wr);
        rnic_sv_u8(s, slot->done);
        rnic_sv_u8(s, slot->status);
    }
}

static bool sq_load(struct rnic_ld *l, struct rnic_qp *qp)
{
    uint32_t n = rnic_ld_count(l, qp->attr.sq_depth);

    qp->sq.started = rnic_ld_count(l, n);
    if (n && !RNIC_SHADOW(qp->sq.slots, qp->attr.sq_depth)) {
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        struct rnic_sq_slot *slot = &qp->sq.slots[i];

        if (!send_wr_load(l, &slot->wr, qp->attr.max_send_sge)) {
            return false;
        }
        slot->done = rnic_ld_u8(l);
        slot->status = rnic_ld_u8(l);
        if (slot->status >= RNIC_WC_STATUS_COUNT ||
            (slot->done && i >= qp->sq.started)) {
            return false;
        }
    }
    qp->sq.head = 0;
    qp->sq.count = n;
    return !l->failed;
}

static void irq_save(struct rnic_sv *s, const struct rnic_qp *qp)
{
    rnic_sv_u32(s, qp->irq.count);
    for (uint32_t i = 0; i < qp->irq.count; i++) {
        const struct rnic_inbound_read *r =
            &qp->irq.reqs[rnic_ring_slot(qp->irq.head, i, qp->attr.max_ird)];

        rnic_sv_u32(s, r->sink_stag);
        rnic_sv_u64(s, r->sink_to);
        rnic_sv_u32(s, r->length);
        rnic_sv_u32(s, r->src_stag);
        rnic_sv_u64(s, r->src_to);
    }
}

static bool irq_load(struct rnic_ld *l, struct rnic_qp *qp)
{
    uint32_t n = rnic_ld_count(l, qp->ird);

    if (n && !RNIC_SHADOW(qp->irq.reqs, qp->attr.max_ird)) {
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        struct rnic_inbound_read *r = &qp->irq.reqs[i];

        r->sink_stag = rnic_ld_u32(l);
        r->sink_to = rnic_ld_u64(l);
        r->length = rnic_ld_u32(l);
        r->src_stag = rnic_ld_u32(l);
        r->src_to = rnic_ld_u64(l);
    }
    qp->irq.head = 0;
    qp->irq.count = n;
    return !l->failed;
}

void rnic_qp_save(struct rnic_sv *s, const struct rnic_qp *qp)
{
    rnic_sv_u8(s, qp->state);
    rnic_sv_u32(s, qp->ord);
    rnic_sv_u32(s, qp->ird);
    rnic_sv_u32(s, qp->ord_used);
    sq_save(s, qp);
    if (!qp->attr.srq) {
        recv_ring_save(s, &qp->rq);
    }
    rnic_sv_u8(s, qp->recv_active);
    recv_wr_save(s, &qp->srq_wr);
    irq_save(s, qp);
    for (int qn = 0; qn < RNIC_QP_QN_COUNT; qn++) {
        rnic_sv_u32(s, qp->tx_msn[qn]);
        rnic_sv_u32(s, qp->rx_msn[qn]);
    }
}

int rnic_qp_load(struct rnic_ld *l, struct rnic_qp *qp)
{
    qp->state = rnic_ld_u8(l);
    qp->ord = rnic_ld_u32(l);
    qp->ird = rnic_ld_u32(l);
    qp->ord_used = rnic_ld_u32(l);
    if (l->failed || qp->state >= RNIC_QP_STATE_COUNT ||
        qp->ord > qp->attr.max_ord || qp->ird > qp->attr.max_ird ||
        qp->ord_used > qp->ord || !sq_load(l, qp) ||
        (!qp->attr.srq && !recv_ring_load(l, &qp->rq,
                                          qp->attr.max_recv_sge))) {
        return -EINVAL;
    }
    qp->recv_active = rnic_ld_u8(l);
    if (!recv_wr_load(l, &qp->srq_wr, qp->attr.max_recv_sge) ||
        (qp->recv_active && !qp->attr.srq && !qp->rq.count) ||
        !irq_load(l, qp)) {
        return -EINVAL;
    }
    for (int qn = 0; qn < RNIC_QP_QN_COUNT; qn++) {
        qp->tx_msn[qn] = rnic_ld_u32(l);
        qp->rx_msn[qn] = rnic_ld_u32(l);
    }
    return l->failed ? -EINVAL : 0;
}
