/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Untagged messages, once rx.c has checked their QN, MSN and MO: Sends
 * into posted receive buffers, Immediate Data, Read and Atomic Requests
 * into the inbound request queue, Atomic Responses and Terminates.
 */
#include <errno.h>
#include <string.h>
#include "engine_internal.h"

static int rx_stream_error(struct rnic_ep *ep, const struct rnic_rx_seg *seg)
{
    return rnic_rx_refuse(ep, seg, rnic_term_rdmap(
                              RNIC_RDMAP_ETYPE_REMOTE_OPERATION,
                              RNIC_RDMAP_ECODE_CATASTROPHIC_STREAM));
}

static int rx_unexpected(struct rnic_ep *ep, const struct rnic_rx_seg *seg)
{
    return rnic_rx_refuse(ep, seg, rnic_term_rdmap(
                              RNIC_RDMAP_ETYPE_REMOTE_OPERATION,
                              RNIC_RDMAP_ECODE_UNEXPECTED_OPCODE));
}

/* Control messages are one whole segment of exactly their body. */
static bool rx_single(const struct rnic_rx_seg *seg, size_t body)
{
    return seg->h.last && seg->plen == body;
}

/* ---- receive buffers ---- */

/* Linked STags go before the completion shows (consumer ordering). */
static void rx_recv_complete(struct rnic_ep *ep, struct rnic_cqe *cqe)
{
    const struct rnic_recv_wr *wr = rnic_qp_recv_current(ep->qp);

    rnic_stag_recv_consumed(ep->stags, rnic_qp_recv_queue(ep->qp), wr->wr_id,
                            NULL, 0);
    rnic_qp_recv_complete(ep->qp, cqe);
    ep->rx_send_more = false;
    ep->rx_mo[RNIC_DDP_QN_SEND] = 0;
    ep->qp->rx_msn[RNIC_DDP_QN_SEND]++;
}

static int rx_recv_fail(struct rnic_ep *ep, const struct rnic_rx_seg *seg,
                        enum rnic_wc_status status,
                        struct rnic_term_code code)
{
    struct rnic_cqe cqe = { .status = status };

    rx_recv_complete(ep, &cqe);
    return rnic_rx_refuse(ep, seg, code);
}

static int rx_no_buffer(struct rnic_ep *ep, const struct rnic_rx_seg *seg)
{
    return rnic_rx_refuse(ep, seg, rnic_term_ddp(RNIC_DDP_ETYPE_UNTAGGED,
                                         RNIC_DDP_U_ECODE_MSN_NO_BUFFER));
}

static const struct rnic_recv_wr *rx_recv_begin(struct rnic_ep *ep)
{
    const struct rnic_recv_wr *wr = rnic_qp_recv_begin(ep->qp);

    if (!wr && ep->ops && ep->ops->need_recv) {
        ep->ops->need_recv(ep->opaque);
        wr = rnic_qp_recv_begin(ep->qp);
    }
    return wr;
}

static uint64_t rx_recv_space(const struct rnic_recv_wr *wr)
{
    uint64_t cap = 0;

    for (uint32_t i = 0; i < wr->num_sge; i++) {
        cap += wr->sge[i].length;
    }
    return cap;
}

/* Resolves the receive buffer pieces [mo, mo + len) into ref[]. */
static enum rnic_stag_status rx_recv_resolve(struct rnic_ep *ep,
                                             const struct rnic_recv_wr *wr,
                                             uint32_t mo, uint32_t len,
                                             struct rnic_mem_ref *ref,
                                             size_t *n)
{
    *n = 0;
    for (uint32_t i = 0; i < wr->num_sge && len; i++) {
        const struct rnic_sge *s = &wr->sge[i];
        uint32_t take;
        enum rnic_stag_status st;

        if (mo >= s->length) {
            mo -= s->length;
            continue;
        }
        take = s->length - mo < len ? s->length - mo : len;
        st = rnic_stag_resolve(ep->stags, s->stag, ep->pd, ep->qp->qpn,
                               s->to + mo, take,
                               RNIC_ACCESS_LOCAL_WRITE | rnic_ep_priv(ep),
                               &ref[(*n)++]);
        if (st != RNIC_STAG_OK) {
            return st;
        }
        mo = 0;
        len -= take;
    }
    return RNIC_STAG_OK;
}

static bool rx_is_send_inv(uint8_t opcode)
{
    return opcode == RNIC_RDMAP_SEND_INV || opcode == RNIC_RDMAP_SEND_SE_INV;
}

static bool rx_is_solicited(uint8_t opcode)
{
    return opcode == RNIC_RDMAP_SEND_SE || opcode == RNIC_RDMAP_SEND_SE_INV ||
           opcode == RNIC_RDMAP_IMM_DATA_SE;
}

/*
 * RFC 5040 5.3: the STag is invalidated before the receive completes;
 * the buffer pieces are resolved again after, as the table changed.
 */
static int rx_send_invalidate(struct rnic_ep *ep, const struct rnic_rx_seg *seg,
                              const struct rnic_recv_wr *wr,
                              struct rnic_mem_ref *ref, size_t *n,
                              struct rnic_cqe *cqe)
{
    enum rnic_stag_status st;

    st = rnic_stag_invalidate_remote(ep->stags, seg->h.rsvd_ulp, ep->pd,
                                     ep->qp->qpn, &cqe->inval_stag);
    if (st != RNIC_STAG_OK) {
        return rx_recv_fail(ep, seg, RNIC_WC_LOC_ACCESS_ERR,
                            rnic_term_stag_error(st, false));
    }
    cqe->flags |= RNIC_WC_WITH_INV;
    st = rx_recv_resolve(ep, wr, seg->h.mo, seg->plen, ref, n);
    if (st != RNIC_STAG_OK) {
        return rx_recv_fail(ep, seg, rnic_term_local_status(st),
                            rnic_rx_catastrophic());
    }
    return 0;
}

int rnic_rx_send(struct rnic_ep *ep, const struct rnic_rx_seg *seg)
{
    const struct rnic_recv_wr *wr;
    struct rnic_mem_ref ref[RNIC_MAX_SGE];
    struct rnic_cqe cqe = { .status = RNIC_WC_SUCCESS };
    enum rnic_stag_status st;
    size_t n;

    wr = ep->rx_send_more ? rnic_qp_recv_current(ep->qp)
                          : rx_recv_begin(ep);
    if (!wr) {
        return rx_no_buffer(ep, seg);
    }
    if ((uint64_t)seg->h.mo + seg->plen > rx_recv_space(wr)) {
        return rx_recv_fail(ep, seg, RNIC_WC_LOC_LEN_ERR,
                            rnic_term_ddp(RNIC_DDP_ETYPE_UNTAGGED,
                                          RNIC_DDP_U_ECODE_TOO_LONG));
    }
    st = rx_recv_resolve(ep, wr, seg->h.mo, seg->plen, ref, &n);
    if (st != RNIC_STAG_OK) {
        return rx_recv_fail(ep, seg, rnic_term_local_status(st),
                            rnic_rx_catastrophic());
    }
    if (seg->h.last && rx_is_send_inv(seg->h.opcode) &&
        rx_send_invalidate(ep, seg, wr, ref, &n, &cqe) < 0) {
        return RNIC_EP_RX_STOP;
    }
    for (size_t i = 0, off = 0; i < n; off += ref[i].len, i++) {
        if (rnic_rx_place(ep, &ref[i], seg->payload + off) < 0) {
            return rx_recv_fail(ep, seg, RNIC_WC_LOC_ACCESS_ERR,
                                rnic_rx_catastrophic());
        }
    }
    ep->rx_send_more = !seg->h.last;
    ep->rx_mo[RNIC_DDP_QN_SEND] += seg->plen;
    if (seg->h.last) {
        cqe.byte_len = seg->h.mo + seg->plen;
        cqe.flags |= rx_is_solicited(seg->h.opcode) ? RNIC_WC_SOLICITED : 0;
        rx_recv_complete(ep, &cqe);
    }
    return 0;
}

/* RFC 7306 Immediate Data: see engine.h for where our 32 bits sit. */
int rnic_rx_imm(struct rnic_ep *ep, const struct rnic_rx_seg *seg)
{
    struct rnic_cqe cqe = {
        .status = RNIC_WC_SUCCESS,
        .flags = RNIC_WC_WITH_IMM,
    };

    if (ep->rx_send_more) {
        return rx_unexpected(ep, seg);
    }
    if (!rx_single(seg, RNIC_RDMAP_IMM_DATA_LEN)) {
        return rx_stream_error(ep, seg);
    }
    if (!rx_recv_begin(ep)) {
        return rx_no_buffer(ep, seg);
    }
    cqe.imm_data = rnic_ld_be32(seg->payload + 4);
    cqe.flags |= rx_is_solicited(seg->h.opcode) ? RNIC_WC_SOLICITED : 0;
    rx_recv_complete(ep, &cqe);
    return 0;
}

/* ---- inbound requests ---- */

static bool rx_irq_full(const struct rnic_ep *ep)
{
    return ep->qp->irq.count >= ep->qp->ird;
}

static void rx_irq_push(struct rnic_ep *ep, const struct rnic_inbound_read *rd,
                        const struct rnic_ep_resp *resp)
{
    rnic_qp_irq_push(ep->qp, rd);
    ep->resp[rnic_ep_irq_slot(ep, ep->qp->irq.count - 1)] = *resp;
}

int rnic_rx_read_req(struct rnic_ep *ep, const struct rnic_rx_seg *seg)
{
    const struct rnic_rdmap_read_req *rr = (const void *)seg->payload;
    struct rnic_inbound_read rd;
    struct rnic_mem_ref ref;
    enum rnic_stag_status st;

    if (!rx_single(seg, sizeof(*rr))) {
        return rx_stream_error(ep, seg);
    }
    if (rx_irq_full(ep)) {
        return rx_stream_error(ep, seg);     /* IRD exceeded, as siw */
    }
    rd = (struct rnic_inbound_read) {
        .sink_stag = rnic_ld_be32(&rr->sink_stag),
        .sink_to = rnic_ld_be64(&rr->sink_to),
        .length = rnic_ld_be32(&rr->size),
        .src_stag = rnic_ld_be32(&rr->src_stag),
        .src_to = rnic_ld_be64(&rr->src_to),
    };
    if (rd.length) {
        st = rnic_stag_resolve(ep->stags, rd.src_stag, ep->pd, ep->qp->qpn,
                               rd.src_to, rd.length, RNIC_ACCESS_REMOTE_READ,
                               &ref);
        if (st != RNIC_STAG_OK) {
            return rnic_rx_refuse(ep, seg, rnic_term_stag_error(st, false));
        }
    }
    rx_irq_push(ep, &rd, &(struct rnic_ep_resp) { .msn = seg->h.msn });
    ep->qp->rx_msn[RNIC_DDP_QN_READ_REQ]++;
    return 0;
}

/* RFC 7306 fetch-and-add: a carry never crosses a set bit of @mask. */
static uint64_t rx_masked_add(uint64_t a, uint64_t b, uint64_t mask)
{
    uint64_t sum = 0, carry = 0;

    for (int i = 0; i < 64; i++) {
        uint64_t x = a >> i & 1, y = b >> i & 1;

        sum |= (x ^ y ^ carry) << i;
        carry = (x & y) | (carry & (x ^ y));
        if (mask >> i & 1) {
            carry = 0;
        }
    }
    return sum;
}

static uint64_t rx_atomic_apply(const struct rnic_rdmap_atomic_req *ar,
                                uint32_t op, uint64_t orig)
{
    uint64_t add_swap = rnic_ld_be64(&ar->add_swap);
    uint64_t as_mask = rnic_ld_be64(&ar->add_swap_mask);
    uint64_t cmp = rnic_ld_be64(&ar->compare);
    uint64_t cmp_mask = rnic_ld_be64(&ar->compare_mask);

    if (op == RNIC_ATOMIC_FETCH_ADD) {
        return rx_masked_add(orig, add_swap, as_mask);
    }
    if ((orig ^ cmp) & cmp_mask) {
        return orig;
    }
    return (orig & ~as_mask) | (add_swap & as_mask);
}

static void rx_store_le64(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint64_t rx_load_le64(const uint8_t *b)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--) {
        v = v << 8 | b[i];
    }
    return v;
}

/* Executed on arrival, so later requests see its result (RFC 7306 5). */
static int rx_atomic_execute(struct rnic_ep *ep, const struct rnic_rx_seg *seg,
                             uint32_t op, uint64_t *orig)
{
    const struct rnic_rdmap_atomic_req *ar = (const void *)seg->payload;
    uint64_t to = rnic_ld_be64(&ar->to);
    uint8_t buf[RNIC_ATOMIC_LEN];
    struct rnic_mem_ref ref;
    enum rnic_stag_status st;

    st = rnic_stag_resolve(ep->stags, rnic_ld_be32(&ar->stag), ep->pd,
                           ep->qp->qpn, to, RNIC_ATOMIC_LEN,
                           RNIC_ACCESS_REMOTE_ATOMIC, &ref);
    if (st == RNIC_STAG_OK && (to & (RNIC_ATOMIC_LEN - 1))) {
        st = RNIC_STAG_ERR_BASE_BOUNDS;
    }
    if (st != RNIC_STAG_OK) {
        return rnic_rx_refuse(ep, seg, rnic_term_stag_error(st, false));
    }
    if (rnic_mem_fetch(ep->dma, &ref, buf) != RNIC_STAG_OK) {
        return rnic_rx_refuse(ep, seg, rnic_rx_catastrophic());
    }
    *orig = rx_load_le64(buf);
    rx_store_le64(buf, rx_atomic_apply(ar, op, *orig));
    if (rnic_mem_place(ep->dma, &ref, buf) != RNIC_STAG_OK) {
        return rnic_rx_refuse(ep, seg, rnic_rx_catastrophic());
    }
    /* An atomic writes through the STag: it is one message to it. */
    rnic_stag_message_done(ep->stags, ref.stag);
    return 0;
}

int rnic_rx_atomic_req(struct rnic_ep *ep, const struct rnic_rx_seg *seg)
{
    const struct rnic_rdmap_atomic_req *ar = (const void *)seg->payload;
    struct rnic_ep_resp resp = { .atomic = true, .msn = seg->h.msn };
    uint32_t op;

    if (!rx_single(seg, sizeof(*ar))) {
        return rx_stream_error(ep, seg);
    }
    op = rnic_ld_be32(&ar->opcode) & 0xf;
    if (op != RNIC_ATOMIC_FETCH_ADD && op != RNIC_ATOMIC_CMP_SWAP) {
        return rx_unexpected(ep, seg);
    }
    if (rx_irq_full(ep)) {
        return rx_stream_error(ep, seg);
    }
    if (rx_atomic_execute(ep, seg, op, &resp.orig) < 0) {
        return RNIC_EP_RX_STOP;
    }
    resp.req_id = rnic_ld_be32(&ar->req_id);
    rx_irq_push(ep, &(struct rnic_inbound_read) { 0 }, &resp);
    ep->qp->rx_msn[RNIC_DDP_QN_ATOMIC]++;
    return 0;
}

int rnic_rx_atomic_resp(struct rnic_ep *ep, const struct rnic_rx_seg *seg)
{
    const struct rnic_rdmap_atomic_resp *ar = (const void *)seg->payload;
    struct rnic_send_wr *wr = rnic_qp_sq_oldest_read(ep->qp);
    uint8_t buf[RNIC_ATOMIC_LEN];
    struct rnic_mem_ref ref;
    enum rnic_stag_status st;

    if (!rx_single(seg, sizeof(*ar))) {
        return rx_stream_error(ep, seg);
    }
    if (!wr || rnic_wr_is_read(wr->opcode) ||
        rnic_ld_be32(&ar->req_id) != ep->atomic_rx_id) {
        return rx_unexpected(ep, seg);
    }
    rx_store_le64(buf, rnic_ld_be64(&ar->orig_value));
    st = rnic_stag_resolve(ep->stags, wr->sge[0].stag, ep->pd, ep->qp->qpn,
                           wr->sge[0].to, RNIC_ATOMIC_LEN,
                           RNIC_ACCESS_LOCAL_WRITE | rnic_ep_priv(ep), &ref);
    if (st == RNIC_STAG_OK && rnic_rx_place(ep, &ref, buf) < 0) {
        st = RNIC_STAG_ERR_DMA;
    }
    if (st != RNIC_STAG_OK) {
        rnic_qp_sq_done(ep->qp, wr, rnic_term_local_status(st));
        return rnic_rx_refuse(ep, seg, rnic_rx_catastrophic());
    }
    ep->atomic_rx_id++;
    ep->qp->rx_msn[RNIC_DDP_QN_ATOMIC]++;
    rnic_qp_sq_done(ep->qp, wr, RNIC_WC_SUCCESS);
    return 0;
}

/* ---- the peer's Terminate ---- */

/*
 * Whether the Terminate quotes our oldest outstanding Read or Atomic @wr,
 * which then gets the real reason: a Read Request is quoted with its
 * RDMAP header (HdrCt R), an Atomic Request by its DDP header alone (RFC
 * 7306 gives HdrCt no bit of its own). The target answers requests in
 * order, so the one it refuses is the oldest we have not had answered.
 */
static bool term_names_request(const struct rnic_term_info *info,
                               const struct rnic_send_wr *wr)
{
    if (!wr) {
        return false;
    }
    if (info->hdrct & RNIC_TERM_HDRCT_R) {
        return rnic_wr_is_read(wr->opcode);
    }
    return (info->hdrct & RNIC_TERM_HDRCT_D) && !info->ddp.tagged &&
           info->ddp.opcode == RNIC_RDMAP_ATOMIC_REQ &&
           !rnic_wr_is_read(wr->opcode);
}

int rnic_rx_terminate(struct rnic_ep *ep, const struct rnic_rx_seg *seg)
{
    struct rnic_term_info info;
    struct rnic_send_wr *wr;

    if (!seg->h.last) {
        return rx_stream_error(ep, seg);
    }
    rnic_term_parse(seg->payload, seg->plen, &info);
    ep->rx_stopped = true;
    if (ep->term == RNIC_TERM_NONE) {
        ep->term = RNIC_TERM_RECEIVED;
        ep->term_code = info.code;
    }
    if (ep->ops && ep->ops->term_received) {
        ep->ops->term_received(ep->opaque, info.code);
    }
    wr = rnic_qp_sq_oldest_read(ep->qp);
    if (term_names_request(&info, wr)) {
        rnic_qp_sq_done(ep->qp, wr, rnic_term_wc_status(info.code));
    }
    rnic_ep_set_state(ep, RNIC_QP_TERMINATE);
    return RNIC_EP_RX_STOP;
}
