/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An endpoint's stream state to bytes and back (engine.h), for moving a
 * live connection with its socket.  Only a quiet transmitter is saved:
 * every FPDU framed has been handed to the socket, so what is in flight
 * travels in the socket's own queues, and the transmitter is its stream
 * position alone.  The receiver is saved as it stands, a partly received
 * FPDU included.  What the endpoint is to pick next (posted WRs, inbound
 * Read Requests, an RTR message) is in the QP (save.h).
 */
#include <errno.h>
#include <string.h>
#include "engine_internal.h"
#include "save.h"

bool rnic_ep_tx_quiet(const struct rnic_ep *ep)
{
    return ep->ring_count == 0 && ep->msg.kind == RNIC_TX_IDLE &&
           ep->term == RNIC_TERM_NONE && !ep->rx_stopped && !ep->frx.err;
}

static void read_save(struct rnic_sv *s, const struct rnic_inbound_read *r)
{
    rnic_sv_u32(s, r->sink_stag);
    rnic_sv_u64(s, r->sink_to);
    rnic_sv_u32(s, r->length);
    rnic_sv_u32(s, r->src_stag);
    rnic_sv_u64(s, r->src_to);
}

static void read_load(struct rnic_ld *l, struct rnic_inbound_read *r)
{
    r->sink_stag = rnic_ld_u32(l);
    r->sink_to = rnic_ld_u64(l);
    r->length = rnic_ld_u32(l);
    r->src_stag = rnic_ld_u32(l);
    r->src_to = rnic_ld_u64(l);
}

/* The octets of the current FPDU the deframer holds in its buffer. */
static size_t frx_held(const struct rnic_fpdu_rx *rx)
{
    switch (rx->phase) {
    case RNIC_FPDU_RX_BODY:
        return rx->got;
    case RNIC_FPDU_RX_CRC:
        return rx->body_len;
    default:
        return 0;
    }
}

static void frx_save(struct rnic_sv *s, const struct rnic_fpdu_rx *rx)
{
    rnic_sv_u32(s, rx->pos);
    rnic_sv_u8(s, rx->phase);
    rnic_sv_u32(s, rx->fpdu_pos);
    rnic_sv_u32(s, rx->got);
    rnic_sv_u32(s, rx->body_len);
    rnic_sv_u16(s, rx->ulpdu_len);
    rnic_sv_u32(s, rx->crc_acc);
    rnic_sv_u32(s, rx->hdr_pos);
    rnic_sv_bytes(s, rx->hdr, sizeof(rx->hdr));
    rnic_sv_bytes(s, rx->crc_field, sizeof(rx->crc_field));
    rnic_sv_bytes(s, rx->marker, sizeof(rx->marker));
    rnic_sv_u32(s, rx->marker_got);
    rnic_sv_u8(s, rx->in_marker);
    rnic_sv_u32(s, rx->last_pos);
    rnic_sv_u32(s, rx->last_len);
    rnic_sv_bytes(s, rx->buf, frx_held(rx));
}

/*
 * Every count against the phase it belongs to and the buffer's room; a
 * marker being received is not yet whole (its next octet goes to
 * marker[marker_got]).
 */
static bool frx_load(struct rnic_ld *l, struct rnic_fpdu_rx *rx)
{
    size_t limit;

    rx->pos = rnic_ld_u32(l);
    rx->phase = rnic_ld_u8(l);
    rx->fpdu_pos = rnic_ld_u32(l);
    rx->got = rnic_ld_u32(l);
    rx->body_len = rnic_ld_u32(l);
    rx->ulpdu_len = rnic_ld_u16(l);
    rx->crc_acc = rnic_ld_u32(l);
    rx->hdr_pos = rnic_ld_u32(l);
    rnic_ld_bytes(l, rx->hdr, sizeof(rx->hdr));
    rnic_ld_bytes(l, rx->crc_field, sizeof(rx->crc_field));
    rnic_ld_bytes(l, rx->marker, sizeof(rx->marker));
    rx->marker_got = rnic_ld_u32(l);
    rx->in_marker = rnic_ld_u8(l);
    rx->last_pos = rnic_ld_u32(l);
    rx->last_len = rnic_ld_u32(l);
    switch (rx->phase) {
    case RNIC_FPDU_RX_HDR:
        limit = sizeof(rx->hdr);
        break;
    case RNIC_FPDU_RX_BODY:
        limit = rx->body_len;
        break;
    case RNIC_FPDU_RX_CRC:
        limit = sizeof(rx->crc_field);
        break;
    default:
        return false;
    }
    if (l->failed || rx->body_len > rx->cap || rx->got > limit ||
        rx->marker_got > sizeof(rx->marker) ||
        (rx->in_marker && rx->marker_got == sizeof(rx->marker)) ||
        (rx->marker_got && !rx->markers)) {
        return false;
    }
    return rnic_ld_bytes(l, rx->buf, frx_held(rx));
}

void rnic_ep_save(struct rnic_sv *s, const struct rnic_ep *ep)
{
    rnic_sv_u32(s, ep->mulpdu);
    rnic_sv_u8(s, ep->rtr_tx);
    rnic_sv_u8(s, ep->rtr_wait);
    rnic_sv_u8(s, ep->rtr_read_pending);
    rnic_sv_u8(s, ep->rtr_resp_due);
    read_save(s, &ep->rtr_read);
    rnic_sv_u32(s, ep->ftx.pos);
    rnic_sv_u64(s, ep->fpdus_sent);
    rnic_sv_u32(s, ep->atomic_tx_id);
    frx_save(s, &ep->frx);
    for (int qn = 0; qn < RNIC_QP_QN_COUNT; qn++) {
        rnic_sv_u32(s, ep->rx_mo[qn]);
    }
    rnic_sv_u8(s, ep->rx_send_more);
    rnic_sv_u32(s, ep->rresp_got);
    rnic_sv_u32(s, ep->atomic_rx_id);
    for (uint32_t i = 0; i < ep->qp->irq.count; i++) {
        const struct rnic_ep_resp *r = &ep->resp[rnic_ep_irq_slot(ep, i)];

        rnic_sv_u8(s, r->atomic);
        rnic_sv_u32(s, r->msn);
        rnic_sv_u32(s, r->req_id);
        rnic_sv_u64(s, r->orig);
    }
}

int rnic_ep_load(struct rnic_ld *l, struct rnic_ep *ep)
{
    if (rnic_ld_u32(l) != ep->mulpdu) {
        return -EINVAL;
    }
    ep->rtr_tx = rnic_ld_u8(l);
    ep->rtr_wait = rnic_ld_u8(l);
    ep->rtr_read_pending = rnic_ld_u8(l);
    ep->rtr_resp_due = rnic_ld_u8(l);
    read_load(l, &ep->rtr_read);
    ep->ftx.pos = rnic_ld_u32(l);
    ep->fpdus_sent = rnic_ld_u64(l);
    ep->atomic_tx_id = rnic_ld_u32(l);
    if (!frx_load(l, &ep->frx)) {
        return -EINVAL;
    }
    for (int qn = 0; qn < RNIC_QP_QN_COUNT; qn++) {
        ep->rx_mo[qn] = rnic_ld_u32(l);
    }
    ep->rx_send_more = rnic_ld_u8(l);
    ep->rresp_got = rnic_ld_u32(l);
    ep->atomic_rx_id = rnic_ld_u32(l);
    for (uint32_t i = 0; i < ep->qp->irq.count; i++) {
        struct rnic_ep_resp *r = &ep->resp[rnic_ep_irq_slot(ep, i)];

        r->atomic = rnic_ld_u8(l);
        r->msn = rnic_ld_u32(l);
        r->req_id = rnic_ld_u32(l);
        r->orig = rnic_ld_u64(l);
    }
    return l->failed ? -EINVAL : 0;
}
