/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Endpoint lifecycle and the state changes the transmitter and receiver
 * share; see engine.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "engine_internal.h"

static bool ep_params_valid(const struct rnic_ep_params *p, uint32_t mulpdu)
{
    struct rnic_qp *qp = p->qp;

    if (!qp || !p->stags || !p->dma || !p->dma->read || !p->dma->write) {
        return false;
    }
    if (mulpdu < RNIC_EP_MULPDU_MIN || mulpdu > RNIC_MPA_ULPDU_MAX) {
        return false;
    }
    return qp->state == RNIC_QP_IDLE || qp->state == RNIC_QP_RTS;
}

static uint32_t ep_mulpdu(const struct rnic_ep_params *p)
{
    uint32_t emss = p->emss ? p->emss : RNIC_EP_EMSS_DEFAULT;

    if (p->mulpdu) {
        return p->mulpdu;
    }
    return (uint32_t)rnic_fpdu_mulpdu(emss, p->mpa.markers_tx);
}

/*
 * The limits of the MPA exchange: RFC 6581's, or without it (MPA rev 1)
 * the ones this side asked for.
 */
static int ep_adopt(struct rnic_ep *ep)
{
    struct rnic_qp *qp = ep->qp;

    if (qp->state == RNIC_QP_RTS) {
        return 0;
    }
    return rnic_qp_adopt_connection(qp, ep->mpa.ord, ep->mpa.ird);
}

static void ep_init_rtr(struct rnic_ep *ep)
{
    if (!ep->mpa.rtr) {
        return;
    }
    ep->rtr_tx = ep->initiator;
    ep->rtr_wait = !ep->initiator;
}

struct rnic_ep *rnic_ep_new(const struct rnic_ep_params *p)
{
    uint32_t mulpdu = ep_mulpdu(p);
    uint32_t nresp = p->qp && p->qp->attr.max_ird ? p->qp->attr.max_ird : 1;
    struct rnic_ep *ep;

    if (!ep_params_valid(p, mulpdu)) {
        return NULL;
    }
    ep = calloc(1, sizeof(*ep));
    if (!ep) {
        return NULL;
    }
    *ep = (struct rnic_ep) {
        .qp = p->qp, .stags = p->stags, .dma = p->dma, .pd = p->pd,
        .mpa = p->mpa, .initiator = p->initiator, .mulpdu = mulpdu,
        .ops = p->ops, .opaque = p->opaque, .rx_op_count = p->rx_op_count,
        .tx_op_count = p->tx_op_count,
    };
    ep->bounce = malloc(RNIC_MPA_ULPDU_MAX);
    ep->rx_buf = malloc(RNIC_MPA_ULPDU_MAX + 4);
    ep->resp = calloc(nresp, sizeof(*ep->resp));
    ep->snap = malloc(RNIC_EP_SNAP_MAX);
    if (!ep->bounce || !ep->rx_buf || !ep->resp || !rnic_tx_ring_new(ep) ||
        !ep->snap || ep_adopt(ep) < 0) {
        rnic_ep_free(ep);
        return NULL;
    }
    rnic_tx_inval_init(ep);
    rnic_fpdu_tx_init(&ep->ftx, ep->mpa.crc, ep->mpa.markers_tx);
    rnic_fpdu_rx_init(&ep->frx, ep->mpa.crc, ep->mpa.markers_rx, ep->rx_buf,
                      RNIC_MPA_ULPDU_MAX + 4);
    ep_init_rtr(ep);
    return ep;
}

void rnic_ep_free(struct rnic_ep *ep)
{
    if (!ep) {
        return;
    }
    if (ep->watch.gone) {
        rnic_tx_inval_fini(ep);
    }
    rnic_tx_release(ep);
    free(ep->snap);
    free(ep->bounce);
    free(ep->rx_buf);
    free(ep->resp);
    rnic_tx_ring_free(ep);
    free(ep);
}

uint32_t rnic_ep_mulpdu(const struct rnic_ep *ep)
{
    return ep->mulpdu;
}

struct rnic_qp *rnic_ep_qp(const struct rnic_ep *ep)
{
    return ep->qp;
}

/*
 * Flushed receive WRs are not consumed: their linked STags stay valid.
 * With an SRQ only the WR this QP took is flushed; the rest stay queued.
 */
static void ep_forget_recv_links(struct rnic_ep *ep)
{
    struct rnic_qp *qp = ep->qp;
    uint64_t queue = rnic_qp_recv_queue(qp);

    if (qp->recv_active && qp->attr.srq) {
        rnic_stag_recv_forget(ep->stags, queue, qp->srq_wr.wr_id);
    }
    for (uint32_t i = 0; i < qp->rq.count; i++) {
        uint32_t slot = rnic_ring_slot(qp->rq.head, i, qp->rq.depth);

        rnic_stag_recv_forget(ep->stags, queue, qp->rq.wrs[slot].wr_id);
    }
}

static int ep_modify(struct rnic_ep *ep, enum rnic_qp_state to, bool closed)
{
    enum rnic_qp_state from = ep->qp->state;
    int ret;

    /* Links of receives that are about to be flushed, and only those: a
     * clean close leaves posted receives (and their links) in place. */
    if (closed ? rnic_qp_close_flushes(ep->qp)
               : to == RNIC_QP_TERMINATE || to == RNIC_QP_ERROR) {
        ep_forget_recv_links(ep);
    }
    ret = closed ? rnic_qp_connection_closed(ep->qp)
                 : rnic_qp_modify(ep->qp, to);
    if (ep->qp->state == from) {
        return ret;
    }
    if (ep->qp->state != RNIC_QP_RTS && ep->qp->state != RNIC_QP_CLOSING) {
        rnic_tx_abandon(ep);
    }
    if (ep->ops && ep->ops->state_changed) {
        ep->ops->state_changed(ep->opaque, ep->qp->state);
    }
    return ret;
}

int rnic_ep_modify(struct rnic_ep *ep, enum rnic_qp_state to)
{
    return ep_modify(ep, to, false);
}

int rnic_ep_connection_closed(struct rnic_ep *ep)
{
    ep->rx_stopped = true;
    return ep_modify(ep, ep->qp->state, true);
}

void rnic_ep_local_error(struct rnic_ep *ep)
{
    /* RFC 5040 section 7.2: local catastrophic errors carry code 0 */
    rnic_ep_fail(ep, rnic_term_rdmap(RNIC_RDMAP_ETYPE_LOCAL_CATASTROPHIC, 0),
                 NULL, 0, RNIC_QP_TERMINATE);
}

/* TERMINATE is reachable from RTS only; elsewhere the QP goes to ERROR. */
void rnic_ep_set_state(struct rnic_ep *ep, enum rnic_qp_state to)
{
    enum rnic_qp_state s = ep->qp->state;

    if (to == RNIC_QP_TERMINATE && s != RNIC_QP_RTS) {
        to = RNIC_QP_ERROR;
    }
    if (s == to || s == RNIC_QP_ERROR || s == RNIC_QP_IDLE) {
        return;
    }
    ep_modify(ep, to, false);
}

void rnic_ep_fail(struct rnic_ep *ep, struct rnic_term_code code,
                  const uint8_t *seg, size_t seg_len,
                  enum rnic_qp_state state)
{
    ep->rx_stopped = true;
    if (ep->term == RNIC_TERM_NONE) {
        size_t avail = seg_len < sizeof(ep->term_seg) ? seg_len
                                                      : sizeof(ep->term_seg);

        ep->term = RNIC_TERM_QUEUED;
        ep->term_code = code;
        ep->term_seg_len = seg ? avail : 0;
        ep->term_ulpdu_len = (uint16_t)seg_len;
        if (seg) {
            memcpy(ep->term_seg, seg, avail);
        }
    }
    rnic_ep_set_state(ep, state);
}

/* RFC 6581: the responder sends nothing before the initiator's RTR. */
bool rnic_ep_sending_allowed(const struct rnic_ep *ep)
{
    enum rnic_qp_state s = ep->qp->state;

    return !ep->rtr_wait && (s == RNIC_QP_RTS || s == RNIC_QP_CLOSING);
}
