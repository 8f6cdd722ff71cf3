/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The transmitter: picks the next outbound message, cuts it into DDP
 * segments of at most MULPDU octets and frames each as one FPDU whose
 * payload iovecs point straight into guest memory where it can be mapped.
 */
#include <errno.h>
#include <string.h>
#include "engine-internal.h"

static uint32_t min_u32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

static bool wr_is_read_like(const struct rnic_send_wr *wr)
{
    return wr->opcode == RNIC_WR_READ ||
           wr->opcode == RNIC_WR_ATOMIC_FETCH_ADD ||
           wr->opcode == RNIC_WR_ATOMIC_CMP_SWAP;
}

/* ---- the FPDU in flight ---- */

static void tx_unmap(struct rnic_ep *ep)
{
    if (ep->fp.nmap) {
        rnic_mem_unmap(ep->dma, ep->fp.map, ep->fp.nmap, false, 0);
        ep->fp.nmap = 0;
    }
}

void rnic_tx_release(struct rnic_ep *ep)
{
    tx_unmap(ep);
    ep->fp.active = false;
}

/* The FPDU in flight is finished regardless: the peer must see whole
 * FPDUs, even of a message that will never complete. */
void rnic_tx_abandon(struct rnic_ep *ep)
{
    ep->msg.kind = RNIC_TX_IDLE;
}

/* ---- payload ---- */

struct tx_gather {
    struct rnic_ep *ep;
    size_t pos;                 /* octets gathered so far */
};

typedef enum rnic_stag_status tx_piece_fn(struct tx_gather *g,
                                          const struct rnic_mem_ref *ref);

/* Resolves each SGE piece of payload [off, off + n) and hands it to @fn. */
static enum rnic_stag_status tx_walk(struct rnic_ep *ep, uint32_t off,
                                     uint32_t n, tx_piece_fn *fn,
                                     struct tx_gather *g)
{
    const struct rnic_tx_msg *m = &ep->msg;

    for (uint32_t i = 0; i < m->nsge && n; i++) {
        const struct rnic_sge *s = &m->sge[i];
        struct rnic_mem_ref ref;
        enum rnic_stag_status st;
        uint32_t take;

        if (off >= s->length) {
            off -= s->length;
            continue;
        }
        take = min_u32(s->length - off, n);
        st = rnic_stag_resolve(ep->stags, s->stag, ep->pd, ep->qp->qpn,
                               s->to + off, take, m->access, &ref);
        if (st == RNIC_STAG_OK) {
            st = fn(g, &ref);
        }
        if (st != RNIC_STAG_OK) {
            return st;
        }
        off = 0;
        n -= take;
    }
    return RNIC_STAG_OK;
}

static enum rnic_stag_status tx_map_piece(struct tx_gather *g,
                                          const struct rnic_mem_ref *ref)
{
    struct rnic_tx_fpdu *fp = &g->ep->fp;
    enum rnic_stag_status st;
    size_t k;

    st = rnic_mem_map(g->ep->dma, ref, false, fp->map + fp->nmap,
                      RNIC_EP_TX_MAPS - fp->nmap, &k);
    fp->nmap += k;
    return st;
}

static enum rnic_stag_status tx_copy_piece(struct tx_gather *g,
                                           const struct rnic_mem_ref *ref)
{
    enum rnic_stag_status st;

    st = rnic_mem_fetch(g->ep->dma, ref, g->ep->bounce + g->pos);
    g->pos += ref->len;
    return st;
}

/* Payload [m->off, m->off + n) as iovecs: mapped if it can be, else
 * copied into the bounce buffer.  Returns the iovec count, or -status. */
static int tx_gather(struct rnic_ep *ep, uint32_t n, struct iovec *iov)
{
    struct rnic_tx_msg *m = &ep->msg;
    struct tx_gather g = { .ep = ep };
    enum rnic_stag_status st;

    if (m->inline_data) {
        iov[0] = (struct iovec) { (void *)(m->inline_data + m->off), n };
        return 1;
    }
    if (tx_walk(ep, m->off, n, tx_map_piece, &g) == RNIC_STAG_OK) {
        for (size_t i = 0; i < ep->fp.nmap; i++) {
            iov[i] = (struct iovec) { ep->fp.map[i].base, ep->fp.map[i].len };
        }
        return (int)ep->fp.nmap;
    }
    tx_unmap(ep);
    st = tx_walk(ep, m->off, n, tx_copy_piece, &g);
    if (st != RNIC_STAG_OK) {
        return -(int)st;
    }
    iov[0] = (struct iovec) { ep->bounce, n };
    return 1;
}

/* ---- message set-up ---- */

static void tx_msg_init(struct rnic_ep *ep, enum rnic_tx_kind kind,
                        uint8_t opcode)
{
    struct rnic_tx_msg *m = &ep->msg;

    memset(m, 0, sizeof(*m));
    m->kind = kind;
    m->hdr.ddp_version = RNIC_DDP_VERSION;
    m->hdr.rdmap_version = RNIC_RDMAP_VERSION;
    m->hdr.opcode = opcode;
}

static void tx_untagged(struct rnic_ep *ep, enum rnic_tx_kind kind,
                        uint8_t opcode, uint32_t qn)
{
    tx_msg_init(ep, kind, opcode);
    ep->msg.hdr.qn = qn;
    ep->msg.hdr.msn = ep->qp->tx_msn[qn]++;
}

static void tx_tagged(struct rnic_ep *ep, enum rnic_tx_kind kind,
                      uint8_t opcode, uint32_t stag, uint64_t to)
{
    tx_msg_init(ep, kind, opcode);
    ep->msg.hdr.tagged = true;
    ep->msg.hdr.stag = stag;
    ep->msg.hdr.to = to;
}

/* Checks every local SGE once, so that a bad one fails the WR before
 * any of its octets goes on the wire. */
static enum rnic_stag_status tx_check_sges(struct rnic_ep *ep,
                                           const struct rnic_sge *sge,
                                           uint32_t n, unsigned access)
{
    for (uint32_t i = 0; i < n; i++) {
        struct rnic_mem_ref ref;
        enum rnic_stag_status st;

        if (!sge[i].length) {
            continue;
        }
        st = rnic_stag_resolve(ep->stags, sge[i].stag, ep->pd, ep->qp->qpn,
                               sge[i].to, sge[i].length, access, &ref);
        if (st != RNIC_STAG_OK) {
            return st;
        }
    }
    return RNIC_STAG_OK;
}

/* The payload of a Send or Write: inline data or local SGEs. */
static enum rnic_stag_status tx_payload(struct rnic_ep *ep,
                                        struct rnic_send_wr *wr)
{
    struct rnic_tx_msg *m = &ep->msg;

    m->wr = wr;
    if (wr->flags & RNIC_WR_INLINE) {
        m->inline_data = wr->inline_data;
        m->len = wr->inline_len;
        return RNIC_STAG_OK;
    }
    m->sge = wr->sge;
    m->nsge = wr->num_sge;
    m->access = RNIC_ACCESS_LOCAL_READ;
    for (uint32_t i = 0; i < wr->num_sge; i++) {
        m->len += wr->sge[i].length;
    }
    return tx_check_sges(ep, wr->sge, wr->num_sge, m->access);
}

static enum rnic_stag_status tx_start_send(struct rnic_ep *ep,
                                           struct rnic_send_wr *wr)
{
    static const uint8_t opcode[RNIC_WR_OPCODE_COUNT] = {
        [RNIC_WR_SEND] = RNIC_RDMAP_SEND,
        [RNIC_WR_SEND_INV] = RNIC_RDMAP_SEND_INV,
        [RNIC_WR_SEND_SE] = RNIC_RDMAP_SEND_SE,
        [RNIC_WR_SEND_SE_INV] = RNIC_RDMAP_SEND_SE_INV,
    };

    tx_untagged(ep, RNIC_TX_SQ, opcode[wr->opcode], RNIC_DDP_QN_SEND);
    if (wr->opcode == RNIC_WR_SEND_INV || wr->opcode == RNIC_WR_SEND_SE_INV) {
        ep->msg.hdr.rsvd_ulp = wr->invalidate_stag;
    }
    return tx_payload(ep, wr);
}

static enum rnic_stag_status tx_start_imm(struct rnic_ep *ep,
                                          struct rnic_send_wr *wr)
{
    uint8_t op = wr->opcode == RNIC_WR_IMM_DATA_SE ? RNIC_RDMAP_IMM_DATA_SE
                                                   : RNIC_RDMAP_IMM_DATA;

    tx_untagged(ep, RNIC_TX_SQ, op, RNIC_DDP_QN_SEND);
    ep->msg.wr = wr;
    memset(ep->msg.ctl, 0, RNIC_RDMAP_IMM_DATA_LEN);
    rnic_st_be32(ep->msg.ctl + 4, wr->imm_data);
    ep->msg.ctl_len = RNIC_RDMAP_IMM_DATA_LEN;
    return RNIC_STAG_OK;
}

static enum rnic_stag_status tx_start_read(struct rnic_ep *ep,
                                           struct rnic_send_wr *wr)
{
    struct rnic_rdmap_read_req *rr = (void *)ep->msg.ctl;
    struct rnic_sge sink = wr->num_sge ? wr->sge[0] : (struct rnic_sge){ 0 };

    tx_untagged(ep, RNIC_TX_SQ, RNIC_RDMAP_READ_REQ, RNIC_DDP_QN_READ_REQ);
    ep->msg.wr = wr;
    rnic_st_be32(&rr->sink_stag, sink.stag);
    rnic_st_be64(&rr->sink_to, sink.to);
    rnic_st_be32(&rr->size, sink.length);
    rnic_st_be32(&rr->src_stag, wr->remote_stag);
    rnic_st_be64(&rr->src_to, wr->remote_to);
    ep->msg.ctl_len = sizeof(*rr);
    return tx_check_sges(ep, wr->sge, wr->num_sge, RNIC_ACCESS_LOCAL_WRITE);
}

static enum rnic_stag_status tx_start_atomic(struct rnic_ep *ep,
                                             struct rnic_send_wr *wr)
{
    struct rnic_rdmap_atomic_req *ar = (void *)ep->msg.ctl;
    bool cas = wr->opcode == RNIC_WR_ATOMIC_CMP_SWAP;

    tx_untagged(ep, RNIC_TX_SQ, RNIC_RDMAP_ATOMIC_REQ, RNIC_DDP_QN_ATOMIC);
    ep->msg.wr = wr;
    rnic_st_be32(&ar->opcode, cas ? RNIC_ATOMIC_CMP_SWAP
                                  : RNIC_ATOMIC_FETCH_ADD);
    rnic_st_be32(&ar->req_id, ep->atomic_tx_id++);
    rnic_st_be32(&ar->stag, wr->remote_stag);
    rnic_st_be64(&ar->to, wr->remote_to);
    rnic_st_be64(&ar->add_swap, cas ? wr->atomic_swap
                                    : wr->atomic_add_or_compare);
    rnic_st_be64(&ar->add_swap_mask, cas ? UINT64_MAX : 0);
    rnic_st_be64(&ar->compare, cas ? wr->atomic_add_or_compare : 0);
    rnic_st_be64(&ar->compare_mask, cas ? UINT64_MAX : 0);
    ep->msg.ctl_len = sizeof(*ar);
    return tx_check_sges(ep, wr->sge, wr->num_sge, RNIC_ACCESS_LOCAL_WRITE);
}

static enum rnic_stag_status tx_start_wr(struct rnic_ep *ep,
                                         struct rnic_send_wr *wr)
{
    switch (wr->opcode) {
    case RNIC_WR_WRITE:
        tx_tagged(ep, RNIC_TX_SQ, RNIC_RDMAP_WRITE, wr->remote_stag,
                  wr->remote_to);
        return tx_payload(ep, wr);
    case RNIC_WR_READ:
        return tx_start_read(ep, wr);
    case RNIC_WR_ATOMIC_FETCH_ADD:
    case RNIC_WR_ATOMIC_CMP_SWAP:
        return tx_start_atomic(ep, wr);
    case RNIC_WR_IMM_DATA:
    case RNIC_WR_IMM_DATA_SE:
        return tx_start_imm(ep, wr);
    default:
        return tx_start_send(ep, wr);
    }
}

/* ---- local operations, in SQ order ---- */

static enum rnic_wc_status tx_bind_mw(struct rnic_ep *ep,
                                      const struct rnic_send_wr *wr)
{
    const struct rnic_bind_params *b = &wr->bind;
    struct rnic_mw_bind_attr a = {
        .mr_stag = b->mr_stag, .pd = ep->pd, .qpn = ep->qp->qpn,
        .key = rnic_stag_key(rnic_stag_next_key(b->mw_stag)),
        .access = b->access, .policy = RNIC_STAG_POLICY_DEFAULT,
        .remote_invalidate = true, .to = b->to, .length = b->length,
    };
    uint32_t stag;

    return rnic_mw_bind(ep->stags, b->mw_stag, &a, &stag) == RNIC_STAG_OK ?
           RNIC_WC_SUCCESS : RNIC_WC_MW_BIND_ERR;
}

static enum rnic_wc_status tx_local_op(struct rnic_ep *ep,
                                       const struct rnic_send_wr *wr)
{
    enum rnic_stag_status st;

    if (wr->opcode == RNIC_WR_BIND_MW) {
        return tx_bind_mw(ep, wr);
    }
    st = rnic_stag_invalidate_local(ep->stags, wr->invalidate_stag, ep->pd);
    return st == RNIC_STAG_OK ? RNIC_WC_SUCCESS : rnic_term_local_status(st);
}

/* A WR failed locally: verbs put the QP in ERROR; the peer hears why. */
static void tx_wr_failed(struct rnic_ep *ep, struct rnic_send_wr *wr,
                         enum rnic_wc_status status)
{
    rnic_qp_sq_done(ep->qp, wr, status);
    rnic_ep_fail(ep, rnic_term_rdmap(RNIC_RDMAP_ETYPE_LOCAL_CATASTROPHIC,
                                     RNIC_RDMAP_ECODE_UNSPECIFIED),
                 NULL, 0, RNIC_QP_ERROR);
}

static bool tx_start_sq(struct rnic_ep *ep)
{
    struct rnic_send_wr *wr;

    while ((wr = rnic_qp_sq_next(ep->qp))) {
        enum rnic_wc_status status;
        enum rnic_stag_status st;

        if (wr->opcode == RNIC_WR_LOCAL_INV || wr->opcode == RNIC_WR_BIND_MW) {
            status = tx_local_op(ep, wr);
            if (status != RNIC_WC_SUCCESS) {
                tx_wr_failed(ep, wr, status);
                return false;
            }
            rnic_qp_sq_done(ep->qp, wr, RNIC_WC_SUCCESS);
            continue;
        }
        st = tx_start_wr(ep, wr);
        if (st == RNIC_STAG_OK) {
            return true;
        }
        tx_wr_failed(ep, wr, rnic_term_local_status(st));
        return false;
    }
    return false;
}

/* ---- responses and RTR ---- */

static void tx_start_read_resp(struct rnic_ep *ep,
                               const struct rnic_inbound_read *rd,
                               uint32_t msn)
{
    struct rnic_tx_msg *m = &ep->msg;

    tx_tagged(ep, RNIC_TX_READ_RESP, RNIC_RDMAP_READ_RESP, rd->sink_stag,
              rd->sink_to);
    m->rd = *rd;
    m->rd_msn = msn;
    m->src = (struct rnic_sge) { rd->src_stag, rd->src_to, rd->length };
    m->sge = &m->src;
    m->nsge = 1;
    m->access = RNIC_ACCESS_REMOTE_READ;
    m->len = rd->length;
}

static void tx_start_atomic_resp(struct rnic_ep *ep,
                                 const struct rnic_ep_resp *r)
{
    struct rnic_rdmap_atomic_resp *ar = (void *)ep->msg.ctl;

    tx_untagged(ep, RNIC_TX_CTL, RNIC_RDMAP_ATOMIC_RESP, RNIC_DDP_QN_ATOMIC);
    rnic_st_be32(&ar->req_id, r->req_id);
    rnic_st_be64(&ar->orig_value, r->orig);
    ep->msg.ctl_len = sizeof(*ar);
}

/* Responses go out in the order their requests arrived (RFC 5040 5.5). */
static void tx_start_resp(struct rnic_ep *ep)
{
    const struct rnic_ep_resp *r = &ep->resp[ep->qp->irq.head];

    if (r->atomic) {
        tx_start_atomic_resp(ep, r);
    } else {
        tx_start_read_resp(ep, rnic_qp_irq_head(ep->qp), r->msn);
    }
    rnic_qp_irq_pop(ep->qp);
}

/* RFC 6581: a zero-length message of the type the handshake chose. */
static void tx_start_rtr(struct rnic_ep *ep)
{
    ep->rtr_tx = false;
    switch (ep->mpa.rtr) {
    case RNIC_MPA_RTR_WRITE:
        tx_tagged(ep, RNIC_TX_CTL, RNIC_RDMAP_WRITE, 0, 0);
        break;
    case RNIC_MPA_RTR_READ:
        tx_untagged(ep, RNIC_TX_CTL, RNIC_RDMAP_READ_REQ,
                    RNIC_DDP_QN_READ_REQ);
        ep->msg.ctl_len = sizeof(struct rnic_rdmap_read_req);
        ep->rtr_read_pending = true;
        break;
    default:
        tx_untagged(ep, RNIC_TX_CTL, RNIC_RDMAP_SEND, RNIC_DDP_QN_SEND);
        break;
    }
}

static bool tx_pick(struct rnic_ep *ep)
{
    if (!rnic_ep_sending_allowed(ep)) {
        return false;
    }
    if (ep->rtr_tx) {
        tx_start_rtr(ep);
        return true;
    }
    if (ep->rtr_resp_due) {
        ep->rtr_resp_due = false;
        tx_start_read_resp(ep, &ep->rtr_read, 0);
        ep->msg.kind = RNIC_TX_CTL;
        return true;
    }
    if (rnic_qp_irq_head(ep->qp)) {
        tx_start_resp(ep);
        return true;
    }
    return tx_start_sq(ep);
}

/* ---- framing ---- */

static void tx_frame(struct rnic_ep *ep, struct iovec *ulpdu, int cnt)
{
    rnic_fpdu_tx_frame(&ep->ftx, ulpdu, cnt, &ep->fp.out);
    ep->fp.active = true;
    ep->fp.sent = 0;
}

/* The Read Request a failing Read Response answers, for the Terminate. */
static size_t tx_rebuild_read_req(const struct rnic_tx_msg *m, uint8_t *seg)
{
    struct rnic_ddp_hdr h = {
        .last = true, .ddp_version = RNIC_DDP_VERSION,
        .rdmap_version = RNIC_RDMAP_VERSION,
        .opcode = RNIC_RDMAP_READ_REQ, .qn = RNIC_DDP_QN_READ_REQ,
        .msn = m->rd_msn,
    };
    size_t hlen = rnic_ddp_hdr_encode(&h, seg);
    struct rnic_rdmap_read_req *rr = (void *)(seg + hlen);

    rnic_st_be32(&rr->sink_stag, m->rd.sink_stag);
    rnic_st_be64(&rr->sink_to, m->rd.sink_to);
    rnic_st_be32(&rr->size, m->rd.length);
    rnic_st_be32(&rr->src_stag, m->rd.src_stag);
    rnic_st_be64(&rr->src_to, m->rd.src_to);
    return hlen + sizeof(*rr);
}

/* The payload became unreachable mid-message (the table changed). */
static void tx_payload_failed(struct rnic_ep *ep, enum rnic_stag_status st)
{
    struct rnic_tx_msg *m = &ep->msg;
    uint8_t seg[RNIC_EP_CTL_MAX];
    size_t len;

    if (m->kind == RNIC_TX_SQ) {
        tx_wr_failed(ep, m->wr, rnic_term_local_status(st));
        return;
    }
    len = tx_rebuild_read_req(m, seg);
    rnic_ep_fail(ep, rnic_term_stag_error(st, false), seg, len,
                 RNIC_QP_TERMINATE);
}

static bool tx_build_segment(struct rnic_ep *ep)
{
    struct rnic_tx_msg *m = &ep->msg;
    struct rnic_tx_fpdu *fp = &ep->fp;
    struct iovec ulpdu[RNIC_FPDU_TX_MAX_PIECES];
    size_t hlen = rnic_ddp_hdr_len(m->hdr.tagged);
    uint32_t n = min_u32(m->len - m->off,
                         ep->mulpdu - (uint32_t)(hlen + m->ctl_len));
    int cnt = 0;

    if (n) {
        cnt = tx_gather(ep, n, ulpdu + 1);
        if (cnt < 0) {
            tx_payload_failed(ep, (enum rnic_stag_status)-cnt);
            return false;
        }
    }
    m->hdr.last = m->off + n == m->len;
    rnic_ddp_hdr_encode(&m->hdr, fp->hdr);
    memcpy(fp->hdr + hlen, m->ctl, m->ctl_len);
    ulpdu[0] = (struct iovec) { fp->hdr, hlen + m->ctl_len };
    tx_frame(ep, ulpdu, cnt + 1);
    fp->last = m->hdr.last;
    m->off += n;
    m->hdr.to += n;
    m->hdr.mo += n;
    return true;
}

static void tx_build_term(struct rnic_ep *ep)
{
    struct rnic_ddp_hdr h = {
        .last = true, .ddp_version = RNIC_DDP_VERSION,
        .rdmap_version = RNIC_RDMAP_VERSION, .opcode = RNIC_RDMAP_TERMINATE,
        .qn = RNIC_DDP_QN_TERMINATE,
        .msn = ep->qp->tx_msn[RNIC_DDP_QN_TERMINATE]++,
    };
    size_t len = rnic_ddp_hdr_encode(&h, ep->fp.hdr);
    struct iovec iov;

    len += rnic_term_build(ep->fp.hdr + len, ep->term_code,
                           ep->term_seg_len ? ep->term_seg : NULL,
                           ep->term_seg_len, ep->term_ulpdu_len);
    iov = (struct iovec) { ep->fp.hdr, len };
    tx_frame(ep, &iov, 1);
    ep->fp.last = true;
    ep->term = RNIC_TERM_SENDING;
}

static bool tx_build_next(struct rnic_ep *ep)
{
    if (ep->term == RNIC_TERM_QUEUED) {
        tx_build_term(ep);
        return true;
    }
    if (ep->term != RNIC_TERM_NONE) {
        return false;
    }
    if (ep->msg.kind == RNIC_TX_IDLE && !tx_pick(ep)) {
        /* a failed pick may have queued a Terminate */
        return ep->term == RNIC_TERM_QUEUED && tx_build_next(ep);
    }
    return tx_build_segment(ep) ||
           (ep->term == RNIC_TERM_QUEUED && tx_build_next(ep));
}

size_t rnic_ep_tx_peek(struct rnic_ep *ep, struct iovec *iov, int max,
                       int *cnt)
{
    const struct rnic_fpdu_out *out = &ep->fp.out;
    size_t skip, total = 0;
    int n = 0;

    *cnt = 0;
    if (!ep->fp.active && !tx_build_next(ep)) {
        return 0;
    }
    skip = ep->fp.sent;
    for (int i = 0; i < out->iovcnt && n < max; i++) {
        size_t len = out->iov[i].iov_len;

        if (skip >= len) {
            skip -= len;
            continue;
        }
        iov[n].iov_base = (uint8_t *)out->iov[i].iov_base + skip;
        iov[n].iov_len = len - skip;
        total += len - skip;
        skip = 0;
        n++;
    }
    *cnt = n;
    return total;
}

/* The last FPDU of the current message has gone to the socket. */
static void tx_msg_done(struct rnic_ep *ep)
{
    struct rnic_tx_msg *m = &ep->msg;

    if (m->kind == RNIC_TX_SQ && !wr_is_read_like(m->wr)) {
        rnic_qp_sq_done(ep->qp, m->wr, RNIC_WC_SUCCESS);
    } else if (m->kind == RNIC_TX_READ_RESP) {
        rnic_stag_message_done(ep->stags, m->src.stag);
    }
    m->kind = RNIC_TX_IDLE;
}

void rnic_ep_tx_advance(struct rnic_ep *ep, size_t sent)
{
    struct rnic_tx_fpdu *fp = &ep->fp;

    if (!fp->active) {
        return;
    }
    fp->sent += sent;
    if (fp->sent < fp->out.len) {
        return;
    }
    rnic_tx_release(ep);
    if (ep->term == RNIC_TERM_SENDING) {
        ep->term = RNIC_TERM_SENT;
        if (ep->ops && ep->ops->term_sent) {
            ep->ops->term_sent(ep->opaque, ep->term_code);
        }
    } else if (fp->last && ep->msg.kind != RNIC_TX_IDLE) {
        tx_msg_done(ep);
    }
}
