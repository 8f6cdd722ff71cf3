/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The receiver: checks each DDP segment the deframer delivers in the
 * order a real RNIC does (DDP version, RDMAP version, opcode, then for
 * untagged segments QN, MSN and MO, then what the opcode needs), and only
 * then places it.  Tagged placement is here; untagged messages are in
 * rx_untagged.c.
 */
#include <errno.h>
#include <string.h>
#include "engine_internal.h"

int rnic_rx_refuse(struct rnic_ep *ep, const struct rnic_rx_seg *seg,
                   struct rnic_term_code code)
{
    rnic_ep_fail(ep, code, seg->raw, seg->len, RNIC_QP_TERMINATE);
    return RNIC_EP_RX_STOP;
}

/*
 * A copy per run of guest pages, through the DMA write: in the device
 * that costs one translation, where a map and unmap cost two lookups.
 */
int rnic_rx_place(struct rnic_ep *ep, const struct rnic_mem_ref *ref,
                  const uint8_t *data)
{
    return rnic_mem_place(ep->dma, ref, data) == RNIC_STAG_OK ? 0 : -EIO;
}

/* ---- tagged ---- */

static int rx_write(struct rnic_ep *ep, const struct rnic_rx_seg *seg)
{
    struct rnic_mem_ref ref;
    enum rnic_stag_status st;

    /*
     * A zero-length Write places nothing and is not checked (as Linux siw
     * does): RFC 6581's RTR may be one, naming no buffer at all.
     */
    if (!seg->plen) {
        return 0;
    }
    st = rnic_stag_resolve(ep->stags, seg->h.stag, ep->pd, ep->qp->qpn,
                           seg->h.to, seg->plen, RNIC_ACCESS_REMOTE_WRITE,
                           &ref);
    if (st != RNIC_STAG_OK) {
        return rnic_rx_refuse(ep, seg, rnic_term_stag_error(st, true));
    }
    if (rnic_rx_place(ep, &ref, seg->payload) < 0) {
        return rnic_rx_refuse(ep, seg, rnic_rx_catastrophic());
    }
    if (seg->h.last) {
        rnic_stag_message_done(ep->stags, seg->h.stag);
    }
    return 0;
}

static int rx_read_fail(struct rnic_ep *ep, const struct rnic_rx_seg *seg,
                        struct rnic_send_wr *wr, enum rnic_wc_status status,
                        struct rnic_term_code code)
{
    rnic_qp_sq_done(ep->qp, wr, status);
    return rnic_rx_refuse(ep, seg, code);
}

/* A Read Response goes where the oldest outstanding Read said, in order. */
static int rx_read_check(struct rnic_ep *ep, const struct rnic_rx_seg *seg,
                         struct rnic_send_wr *wr, const struct rnic_sge *sink)
{
    struct rnic_term_code bounds =
        rnic_term_ddp(RNIC_DDP_ETYPE_TAGGED, RNIC_DDP_T_ECODE_BASE_BOUNDS);
    uint32_t got = ep->rresp_got;

    if (seg->h.stag != sink->stag) {
        return rx_read_fail(ep, seg, wr, RNIC_WC_BAD_RESP_ERR,
                            rnic_term_ddp(RNIC_DDP_ETYPE_TAGGED,
                                          RNIC_DDP_T_ECODE_INVALID_STAG));
    }
    if (seg->h.to != sink->to + got) {
        return rx_read_fail(ep, seg, wr, RNIC_WC_BAD_RESP_ERR, bounds);
    }
    if (seg->plen > sink->length - got) {
        return rx_read_fail(ep, seg, wr, RNIC_WC_LOC_LEN_ERR, bounds);
    }
    if (seg->h.last && got + seg->plen != sink->length) {
        return rx_read_fail(ep, seg, wr, RNIC_WC_BAD_RESP_ERR, bounds);
    }
    return 0;
}

/*
 * Read with local invalidate: the sink goes before the completion, so a
 * consumer that sees it knows no later byte lands there.  An STag that
 * cannot be invalidated fails the WR like a LOCAL_INV would.
 */
static int rx_read_invalidate(struct rnic_ep *ep, struct rnic_send_wr *wr)
{
    enum rnic_stag_status st;

    st = rnic_stag_invalidate_local(ep->stags, wr->invalidate_stag, ep->pd);
    if (st != RNIC_STAG_OK) {
        rnic_tx_wr_failed(ep, wr, rnic_term_local_status(st));
        return RNIC_EP_RX_STOP;
    }
    rnic_qp_sq_done(ep->qp, wr, RNIC_WC_SUCCESS);
    return 0;
}

static int rx_read_resp(struct rnic_ep *ep, const struct rnic_rx_seg *seg)
{
    struct rnic_send_wr *wr = rnic_qp_sq_oldest_read(ep->qp);
    struct rnic_sge sink = { 0 };
    struct rnic_mem_ref ref;
    enum rnic_stag_status st;
    int ret;

    if (ep->rtr_read_pending && seg->h.last && !seg->plen) {
        ep->rtr_read_pending = false;
        return 0;
    }
    if (!wr || !rnic_wr_is_read(wr->opcode) || ep->rtr_read_pending) {
        return rnic_rx_refuse(ep, seg, rnic_term_rdmap(
                                  RNIC_RDMAP_ETYPE_REMOTE_OPERATION,
                                  RNIC_RDMAP_ECODE_UNEXPECTED_OPCODE));
    }
    if (wr->num_sge) {
        sink = wr->sge[0];
    }
    ret = rx_read_check(ep, seg, wr, &sink);
    if (ret < 0) {
        return ret;
    }
    st = rnic_stag_resolve(ep->stags, sink.stag, ep->pd, ep->qp->qpn,
                           seg->h.to, seg->plen,
                           RNIC_ACCESS_LOCAL_WRITE | rnic_ep_priv(ep), &ref);
    if (seg->plen && st != RNIC_STAG_OK) {
        return rx_read_fail(ep, seg, wr, rnic_term_local_status(st),
                            rnic_term_stag_error(st, true));
    }
    if (seg->plen && rnic_rx_place(ep, &ref, seg->payload) < 0) {
        return rx_read_fail(ep, seg, wr, RNIC_WC_LOC_ACCESS_ERR,
                            rnic_rx_catastrophic());
    }
    ep->rresp_got += seg->plen;
    if (seg->h.last) {
        ep->rresp_got = 0;
        if (sink.length) {
            rnic_stag_message_done(ep->stags, sink.stag);
        }
        if (wr->opcode == RNIC_WR_READ_INV) {
            return rx_read_invalidate(ep, wr);
        }
        rnic_qp_sq_done(ep->qp, wr, RNIC_WC_SUCCESS);
    }
    return 0;
}

/* ---- header checks ---- */

/* The untagged queue each untagged opcode travels on; -1 if tagged. */
static int rx_opcode_qn(uint8_t opcode)
{
    static const int8_t qn[RNIC_RDMAP_OPCODE_COUNT] = {
        [RNIC_RDMAP_WRITE] = -1,
        [RNIC_RDMAP_READ_REQ] = RNIC_DDP_QN_READ_REQ,
        [RNIC_RDMAP_READ_RESP] = -1,
        [RNIC_RDMAP_SEND] = RNIC_DDP_QN_SEND,
        [RNIC_RDMAP_SEND_INV] = RNIC_DDP_QN_SEND,
        [RNIC_RDMAP_SEND_SE] = RNIC_DDP_QN_SEND,
        [RNIC_RDMAP_SEND_SE_INV] = RNIC_DDP_QN_SEND,
        [RNIC_RDMAP_TERMINATE] = RNIC_DDP_QN_TERMINATE,
        [RNIC_RDMAP_IMM_DATA] = RNIC_DDP_QN_SEND,
        [RNIC_RDMAP_IMM_DATA_SE] = RNIC_DDP_QN_SEND,
        [RNIC_RDMAP_ATOMIC_REQ] = RNIC_DDP_QN_ATOMIC,
        [RNIC_RDMAP_ATOMIC_RESP] = RNIC_DDP_QN_ATOMIC,
    };

    return qn[opcode];
}

static bool rx_opcode_ok(const struct rnic_ep *ep, const struct rnic_ddp_hdr *h)
{
    bool atomic = h->opcode == RNIC_RDMAP_ATOMIC_REQ ||
                  h->opcode == RNIC_RDMAP_ATOMIC_RESP;

    if (h->opcode >= RNIC_RDMAP_OPCODE_COUNT) {
        return false;
    }
    if (atomic && !ep->qp->attr.atomics) {
        return false;
    }
    return h->tagged == (rx_opcode_qn(h->opcode) < 0);
}

static int rx_check_untagged(struct rnic_ep *ep, const struct rnic_rx_seg *seg)
{
    const struct rnic_ddp_hdr *h = &seg->h;

    if (h->qn >= RNIC_QP_QN_COUNT || (int)h->qn != rx_opcode_qn(h->opcode)) {
        return rnic_rx_refuse(ep, seg, rnic_term_ddp(RNIC_DDP_ETYPE_UNTAGGED,
                                             RNIC_DDP_U_ECODE_INVALID_QN));
    }
    if (h->msn != ep->qp->rx_msn[h->qn]) {
        return rnic_rx_refuse(ep, seg, rnic_term_ddp(RNIC_DDP_ETYPE_UNTAGGED,
                                             RNIC_DDP_U_ECODE_MSN_RANGE));
    }
    if (h->mo != ep->rx_mo[h->qn]) {
        return rnic_rx_refuse(ep, seg, rnic_term_ddp(RNIC_DDP_ETYPE_UNTAGGED,
                                             RNIC_DDP_U_ECODE_INVALID_MO));
    }
    return 0;
}

static int rx_check(struct rnic_ep *ep, struct rnic_rx_seg *seg)
{
    struct rnic_ddp_hdr *h = &seg->h;
    size_t hlen = rnic_ddp_hdr_decode(h, seg->raw, seg->len);

    if (!hlen) {
        return rnic_rx_refuse(ep, seg, rnic_term_rdmap(
                                  RNIC_RDMAP_ETYPE_REMOTE_OPERATION,
                                  RNIC_RDMAP_ECODE_CATASTROPHIC_STREAM));
    }
    seg->payload = seg->raw + hlen;
    seg->plen = (uint32_t)(seg->len - hlen);
    if (h->ddp_version != RNIC_DDP_VERSION) {
        return rnic_rx_refuse(ep, seg, h->tagged ?
            rnic_term_ddp(RNIC_DDP_ETYPE_TAGGED,
                          RNIC_DDP_T_ECODE_INVALID_VERSION) :
            rnic_term_ddp(RNIC_DDP_ETYPE_UNTAGGED,
                          RNIC_DDP_U_ECODE_INVALID_VERSION));
    }
    if (h->rdmap_version != RNIC_RDMAP_VERSION) {
        return rnic_rx_refuse(ep, seg, rnic_term_rdmap(
                                  RNIC_RDMAP_ETYPE_REMOTE_OPERATION,
                                  RNIC_RDMAP_ECODE_INVALID_VERSION));
    }
    if (!rx_opcode_ok(ep, h)) {
        return rnic_rx_refuse(ep, seg, rnic_term_rdmap(
                                  RNIC_RDMAP_ETYPE_REMOTE_OPERATION,
                                  RNIC_RDMAP_ECODE_UNEXPECTED_OPCODE));
    }
    return h->tagged ? 0 : rx_check_untagged(ep, seg);
}

/* RFC 6581: the responder's first FPDU must be the agreed RTR message. */
static int rx_rtr(struct rnic_ep *ep, const struct rnic_rx_seg *seg)
{
    const struct rnic_ddp_hdr *h = &seg->h;
    const struct rnic_rdmap_read_req *rr = (const void *)seg->payload;
    bool ok = h->last;

    switch (ep->mpa.rtr) {
    case RNIC_MPA_RTR_WRITE:
        ok = ok && h->opcode == RNIC_RDMAP_WRITE && !seg->plen;
        break;
    case RNIC_MPA_RTR_READ:
        ok = ok && h->opcode == RNIC_RDMAP_READ_REQ &&
             seg->plen == sizeof(*rr) && !rnic_ld_be32(&rr->size);
        if (ok) {
            ep->rtr_read = (struct rnic_inbound_read) {
                .sink_stag = rnic_ld_be32(&rr->sink_stag),
                .sink_to = rnic_ld_be64(&rr->sink_to),
            };
            ep->rtr_resp_due = true;
        }
        break;
    default:
        ok = ok && h->opcode == RNIC_RDMAP_SEND && !seg->plen;
        break;
    }
    if (!ok) {
        return rnic_rx_refuse(ep, seg,
                              rnic_term_mpa(RNIC_MPA_ECODE_NO_MATCHING_RTR));
    }
    if (!h->tagged) {
        ep->qp->rx_msn[h->qn]++;
    }
    ep->rtr_wait = false;
    return 0;
}

static int rx_dispatch(struct rnic_ep *ep, const struct rnic_rx_seg *seg)
{
    switch (seg->h.opcode) {
    case RNIC_RDMAP_WRITE:
        return rx_write(ep, seg);
    case RNIC_RDMAP_READ_RESP:
        return rx_read_resp(ep, seg);
    case RNIC_RDMAP_READ_REQ:
        return rnic_rx_read_req(ep, seg);
    case RNIC_RDMAP_TERMINATE:
        return rnic_rx_terminate(ep, seg);
    case RNIC_RDMAP_IMM_DATA:
    case RNIC_RDMAP_IMM_DATA_SE:
        return rnic_rx_imm(ep, seg);
    case RNIC_RDMAP_ATOMIC_REQ:
        return rnic_rx_atomic_req(ep, seg);
    case RNIC_RDMAP_ATOMIC_RESP:
        return rnic_rx_atomic_resp(ep, seg);
    default:
        return rnic_rx_send(ep, seg);
    }
}

static int rx_ulpdu(void *opaque, const uint8_t *ulpdu, size_t len)
{
    struct rnic_ep *ep = opaque;
    struct rnic_rx_seg seg = { .raw = ulpdu, .len = len };
    int ret;

    if (ep->rx_stopped) {
        return RNIC_EP_RX_STOP;
    }
    if (ep->rx_op_count && len >= 2) {
        ep->rx_op_count[ulpdu[1] & RNIC_RDMAP_OPCODE_MASK]++;
    }
    ret = rx_check(ep, &seg);
    if (ret < 0) {
        return ret;
    }
    if (ep->rtr_wait && seg.h.opcode != RNIC_RDMAP_TERMINATE) {
        return rx_rtr(ep, &seg);
    }
    return rx_dispatch(ep, &seg);
}

static void rx_stream_lost(struct rnic_ep *ep, int err)
{
    struct rnic_term_code code = rnic_fpdu_err_to_term(err);

    rnic_ep_fail(ep, code, NULL, 0, RNIC_QP_TERMINATE);
    if (ep->ops && ep->ops->stream_lost) {
        ep->ops->stream_lost(ep->opaque, code);
    }
}

int rnic_ep_rx(struct rnic_ep *ep, const void *data, size_t len)
{
    enum rnic_qp_state s = ep->qp->state;
    int ret;

    if (s != RNIC_QP_RTS && s != RNIC_QP_CLOSING) {
        ep->rx_stopped = true;
    }
    if (ep->rx_stopped) {
        return -EPROTO;
    }
    ret = rnic_fpdu_rx_input(&ep->frx, data, len, rx_ulpdu, ep);
    if (ret == 0) {
        return 0;
    }
    if (ret != RNIC_EP_RX_STOP) {
        rx_stream_lost(ep, ret);
    }
    return -EPROTO;
}
