/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The transmitter: picks the next outbound message, cuts it into DDP
 * segments of at most MULPDU octets and frames each as one FPDU whose
 * payload iovecs point straight into guest memory where it can be mapped.
 *
 * Framed FPDUs wait in a ring (ep->ring) until their last octet is
 * advanced past; a batch peek frames ahead of the socket.  Framing ahead
 * must not change what happens, only when: behind FPDUs in the ring
 * nothing fails (a payload that cannot be gathered waits until the ring
 * is empty, and is failed then), no local operation runs and nothing
 * completes.
 *
 * This file builds the messages and their segments; tx_frame.c frames
 * them into the ring, hands them out and retires them; tx_inval.c keeps
 * an invalidated STag's memory from leaving through FPDUs framed ahead.
 */
#include <errno.h>
#include <string.h>
#include "engine_internal.h"

static uint32_t min_u32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

static bool wr_is_read_like(const struct rnic_send_wr *wr)
{
    return rnic_wr_is_read(wr->opcode) ||
           wr->opcode == RNIC_WR_ATOMIC_FETCH_ADD ||
           wr->opcode == RNIC_WR_ATOMIC_CMP_SWAP;
}

/* ---- payload ---- */

struct tx_gather {
    struct rnic_ep *ep;
    struct rnic_tx_fpdu *d;
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
                               s->to + off, take,
                               m->access | rnic_ep_priv(ep), &ref);
        if (st == RNIC_STAG_OK && g->d->nstags < RNIC_MAX_SGE) {
            /* what tx_inval.c watches: the FPDU reads through this STag */
            g->d->stags[g->d->nstags++] = rnic_stag_index(ref.stag);
        }
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
    struct rnic_tx_fpdu *d = g->d;
    enum rnic_stag_status st;
    uint64_t got;
    size_t k;

    st = rnic_mem_map_prefix(g->ep->dma, ref, false, d->map + d->nmap,
                             RNIC_EP_TX_MAPS - d->nmap, &k, &got);
    d->nmap += k;
    g->pos += got;
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

/*
 * Payload [m->off, m->off + *n) of FPDU @d as iovecs: mapped if it can be,
 * else copied into the bounce buffer.  Memory in more pieces than an FPDU
 * has iovecs (pages apart in guest memory) shortens the FPDU to the pieces
 * that fit, which keeps it zero copy and leaves the one bounce buffer to
 * memory that cannot be mapped.  Returns the iovec count, or 0 with the
 * reason in *st (RNIC_STAG_OK: another FPDU holds the bounce buffer).
 */
static int tx_gather(struct rnic_ep *ep, struct rnic_tx_fpdu *d, uint32_t *n,
                     struct iovec *iov, enum rnic_stag_status *st)
{
    struct rnic_tx_msg *m = &ep->msg;
    struct tx_gather g = { .ep = ep, .d = d };
    enum rnic_stag_status mst;

    if (m->inline_data) {
        iov[0] = (struct iovec) { (void *)(m->inline_data + m->off), *n };
        return 1;
    }
    mst = tx_walk(ep, m->off, *n, tx_map_piece, &g);
    if (mst == RNIC_STAG_OK ||
        (mst == RNIC_STAG_ERR_IOV_FULL && g.pos)) {
        *n = g.pos;
        for (size_t i = 0; i < d->nmap; i++) {
            iov[i] = (struct iovec) { d->map[i].base, d->map[i].len };
        }
        return (int)d->nmap;
    }
    rnic_tx_unmap(ep, d);
    d->nstags = 0;
    g.pos = 0;
    *st = RNIC_STAG_OK;
    if (ep->bounce_busy) {
        return 0;
    }
    *st = tx_walk(ep, m->off, *n, tx_copy_piece, &g);
    if (*st != RNIC_STAG_OK) {
        return 0;
    }
    d->bounced = true;
    ep->bounce_busy = true;
    iov[0] = (struct iovec) { ep->bounce, *n };
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
                               sge[i].to, sge[i].length,
                               access | rnic_ep_priv(ep), &ref);
        if (st != RNIC_STAG_OK) {
            return st;
        }
    }
    return RNIC_STAG_OK;
}

/* What fails a (non-local) WR before it starts: its local SGEs. */
static enum rnic_stag_status tx_wr_check(struct rnic_ep *ep,
                                         const struct rnic_send_wr *wr)
{
    if (wr->opcode == RNIC_WR_IMM_DATA || wr->opcode == RNIC_WR_IMM_DATA_SE) {
        return RNIC_STAG_OK;
    }
    if (wr_is_read_like(wr)) {
        return tx_check_sges(ep, wr->sge, wr->num_sge,
                             RNIC_ACCESS_LOCAL_WRITE);
    }
    if (wr->flags & RNIC_WR_INLINE) {
        return RNIC_STAG_OK;
    }
    return tx_check_sges(ep, wr->sge, wr->num_sge, RNIC_ACCESS_LOCAL_READ);
}

/* The payload of a Send or Write: inline data or local SGEs. */
static void tx_payload(struct rnic_ep *ep, struct rnic_send_wr *wr)
{
    struct rnic_tx_msg *m = &ep->msg;

    m->wr = wr;
    if (wr->flags & RNIC_WR_INLINE) {
        m->inline_data = wr->inline_data;
        m->len = wr->inline_len;
        return;
    }
    m->sge = wr->sge;
    m->nsge = wr->num_sge;
    m->access = RNIC_ACCESS_LOCAL_READ;
    for (uint32_t i = 0; i < wr->num_sge; i++) {
        m->len += wr->sge[i].length;
    }
}

static void tx_start_send(struct rnic_ep *ep, struct rnic_send_wr *wr)
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
    tx_payload(ep, wr);
}

static void tx_start_imm(struct rnic_ep *ep, struct rnic_send_wr *wr)
{
    uint8_t op = wr->opcode == RNIC_WR_IMM_DATA_SE ? RNIC_RDMAP_IMM_DATA_SE
                                                   : RNIC_RDMAP_IMM_DATA;

    tx_untagged(ep, RNIC_TX_SQ, op, RNIC_DDP_QN_SEND);
    ep->msg.wr = wr;
    memset(ep->msg.ctl, 0, RNIC_RDMAP_IMM_DATA_LEN);
    rnic_st_be32(ep->msg.ctl + 4, wr->imm_data);
    ep->msg.ctl_len = RNIC_RDMAP_IMM_DATA_LEN;
}

static void tx_start_read(struct rnic_ep *ep, struct rnic_send_wr *wr)
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
}

static void tx_start_atomic(struct rnic_ep *ep, struct rnic_send_wr *wr)
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
}

/* Sets up a WR that passed tx_wr_check(). */
static void tx_start_wr(struct rnic_ep *ep, struct rnic_send_wr *wr)
{
    switch (wr->opcode) {
    case RNIC_WR_WRITE:
        tx_tagged(ep, RNIC_TX_SQ, RNIC_RDMAP_WRITE, wr->remote_stag,
                  wr->remote_to);
        tx_payload(ep, wr);
        break;
    case RNIC_WR_READ:
    case RNIC_WR_READ_INV:
        tx_start_read(ep, wr);
        break;
    case RNIC_WR_ATOMIC_FETCH_ADD:
    case RNIC_WR_ATOMIC_CMP_SWAP:
        tx_start_atomic(ep, wr);
        break;
    case RNIC_WR_IMM_DATA:
    case RNIC_WR_IMM_DATA_SE:
        tx_start_imm(ep, wr);
        break;
    default:
        tx_start_send(ep, wr);
        break;
    }
}

/* ---- local operations, in SQ order ---- */

static enum rnic_wc_status tx_bind_mw(struct rnic_ep *ep,
                                      const struct rnic_send_wr *wr)
{
    const struct rnic_bind_params *b = &wr->bind;
    struct rnic_mw_bind_attr a = {
        .mr_stag = b->mr_stag, .pd = ep->pd, .qpn = ep->qp->qpn,
        .key = b->key,
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
    if (wr->opcode == RNIC_WR_FAST_REG) {
        return rnic_tx_fast_reg(ep, &wr->fast_reg);
    }
    st = rnic_stag_invalidate_local(ep->stags, wr->invalidate_stag, ep->pd);
    return st == RNIC_STAG_OK ? RNIC_WC_SUCCESS : rnic_term_local_status(st);
}

/* A WR failed locally: verbs put the QP in ERROR; the peer hears why. */
void rnic_tx_wr_failed(struct rnic_ep *ep, struct rnic_send_wr *wr,
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

        if (rnic_wr_is_local(wr->opcode)) {
            status = tx_local_op(ep, wr);
            if (status != RNIC_WC_SUCCESS) {
                rnic_tx_wr_failed(ep, wr, status);
                return false;
            }
            rnic_qp_sq_done(ep->qp, wr, RNIC_WC_SUCCESS);
            continue;
        }
        st = tx_wr_check(ep, wr);
        if (st == RNIC_STAG_OK) {
            tx_start_wr(ep, wr);
            return true;
        }
        rnic_tx_wr_failed(ep, wr, rnic_term_local_status(st));
        return false;
    }
    return false;
}

/*
 * Behind FPDUs not yet sent, the next SQ WR may start only if that can
 * neither fail nor complete anything: no local operation, no bad SGE.
 * (rnic_qp_sq_next() may still hold it back for fence or ORD.)
 */
static bool tx_sq_ready_ahead(struct rnic_ep *ep)
{
    struct rnic_qp *qp = ep->qp;
    const struct rnic_send_wr *wr;

    if (qp->sq.started == qp->sq.count) {
        return false;
    }
    wr = &qp->sq.slots[rnic_ring_slot(qp->sq.head, qp->sq.started,
                                      qp->attr.sq_depth)].wr;
    if (rnic_wr_is_local(wr->opcode)) {
        return false;
    }
    return tx_wr_check(ep, wr) == RNIC_STAG_OK;
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

/* @ahead: FPDUs not yet sent are in the ring. */
static bool tx_pick(struct rnic_ep *ep, bool ahead)
{
    if (!rnic_ep_sending_allowed(ep) ||
        (ahead && rnic_tx_read_resp_pending(ep))) {
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
    return (!ahead || tx_sq_ready_ahead(ep)) && tx_start_sq(ep);
}

/* ---- framing ---- */

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
        rnic_tx_wr_failed(ep, m->wr, rnic_term_local_status(st));
        return;
    }
    len = tx_rebuild_read_req(m, seg);
    rnic_ep_fail(ep, rnic_term_stag_error(st, false), seg, len,
                 RNIC_QP_TERMINATE);
}

/* The last segment of the message is framed: what its FPDU completes. */
static void tx_msg_framed(struct rnic_ep *ep, struct rnic_tx_fpdu *d)
{
    struct rnic_tx_msg *m = &ep->msg;

    if (m->kind == RNIC_TX_SQ && !wr_is_read_like(m->wr)) {
        d->done = RNIC_TX_DONE_WR;
        d->wr = m->wr;
    } else if (m->kind == RNIC_TX_READ_RESP && m->len &&
               rnic_stag_one_shot(ep->stags, m->src.stag)) {
        /*
         * A zero-length Read was never resolved (no PD, QP or access
         * check), so it must not use up the STag it names.
         */
        d->done = RNIC_TX_DONE_READ_RESP;
        d->src_stag = m->src.stag;
    }
    m->kind = RNIC_TX_IDLE;
}

enum tx_build {
    TX_BUILT,
    TX_WAIT,                    /* not now: FPDUs ahead must go first */
    TX_FAILED,                  /* the message failed */
};

static enum tx_build tx_build_segment(struct rnic_ep *ep, bool ahead)
{
    struct rnic_tx_msg *m = &ep->msg;
    struct rnic_tx_fpdu *d = rnic_tx_fpdu_new(ep);
    struct iovec ulpdu[RNIC_FPDU_TX_MAX_PIECES];
    size_t hlen = rnic_ddp_hdr_len(m->hdr.tagged);
    uint8_t *h = d->hdr + RNIC_MPA_HDR_LEN;
    uint32_t n = min_u32(m->len - m->off,
                         ep->mulpdu - (uint32_t)(hlen + m->ctl_len));
    enum rnic_stag_status st = RNIC_STAG_OK;
    int cnt = 0;

    if (n) {
        cnt = tx_gather(ep, d, &n, ulpdu + 1, &st);
        if (!cnt && (ahead || st == RNIC_STAG_OK)) {
            return TX_WAIT;
        }
        if (!cnt) {
            tx_payload_failed(ep, st);
            return TX_FAILED;
        }
    }
    m->hdr.last = m->off + n == m->len;
    d->kind = m->kind;
    d->msg_wr = m->kind == RNIC_TX_SQ ? m->wr : NULL;
    rnic_ddp_hdr_encode(&m->hdr, h);
    memcpy(h + hlen, m->ctl, m->ctl_len);
    ulpdu[0] = (struct iovec) { h, hlen + m->ctl_len };
    rnic_tx_frame(ep, d, ulpdu, cnt + 1);
    m->off += n;
    m->hdr.to += n;
    m->hdr.mo += n;
    if (m->hdr.last) {
        tx_msg_framed(ep, d);
    }
    return TX_BUILT;
}

static void tx_build_term(struct rnic_ep *ep)
{
    struct rnic_ddp_hdr h = {
        .last = true, .ddp_version = RNIC_DDP_VERSION,
        .rdmap_version = RNIC_RDMAP_VERSION, .opcode = RNIC_RDMAP_TERMINATE,
        .qn = RNIC_DDP_QN_TERMINATE,
        .msn = ep->qp->tx_msn[RNIC_DDP_QN_TERMINATE]++,
    };
    struct rnic_tx_fpdu *d = rnic_tx_fpdu_new(ep);
    uint8_t *p = d->hdr + RNIC_MPA_HDR_LEN;
    size_t len = rnic_ddp_hdr_encode(&h, p);
    struct iovec iov;

    len += rnic_term_build(p + len, ep->term_code,
                           ep->term_seg_len ? ep->term_seg : NULL,
                           ep->term_seg_len, ep->term_ulpdu_len);
    iov = (struct iovec) { p, len };
    d->term = true;
    rnic_tx_frame(ep, d, &iov, 1);
    ep->term = RNIC_TERM_SENDING;
}

/* Frames one more FPDU into the ring; false if there is none to send now. */
bool rnic_tx_build_next(struct rnic_ep *ep)
{
    bool ahead = ep->ring_count > 0;

    if (ep->term == RNIC_TERM_QUEUED) {
        /* it goes right after what may already be on its way */
        rnic_tx_trim(ep);
        if (!rnic_tx_ring_room(ep)) {
            return false;
        }
        tx_build_term(ep);
        return true;
    }
    if (ep->term != RNIC_TERM_NONE || !rnic_tx_ring_room(ep)) {
        return false;
    }
    if (ep->msg.kind == RNIC_TX_IDLE && !tx_pick(ep, ahead)) {
        /* a failed pick may have queued a Terminate */
        return ep->term == RNIC_TERM_QUEUED && rnic_tx_build_next(ep);
    }
    switch (tx_build_segment(ep, ahead)) {
    case TX_BUILT:
        return true;
    case TX_WAIT:
        return false;
    default:
        return ep->term == RNIC_TERM_QUEUED && rnic_tx_build_next(ep);
    }
}
