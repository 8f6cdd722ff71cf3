/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * No byte of an invalidated STag leaves after the invalidation.
 *
 * FPDUs are framed ahead of the socket with iovecs into guest memory
 * (zero copy) or its copy in the bounce buffer.  The endpoint watches the
 * STag table: when an STag that FPDUs in the ring were read through goes
 * (DEREG_MR, DEALLOC_MW, INVALIDATE, LOCAL_INV, Send with Invalidate, a
 * one-shot or receive-linked invalidation, a re-registration), before
 * that call returns
 *  - an FPDU not yet begun is unmapped and poisoned: it is never sent;
 *  - the one FPDU partly written to the socket is finished from a copy
 *    of its unsent rest, taken now: MPA cannot cut an FPDU, and the copy
 *    is of the region as it was while still registered.
 * At the next transmit step the poisoned FPDU and all after it are
 * dropped, and the message it belonged to fails: a send WR completes with
 * LOC_PROT_ERR, a Read Response is answered with a Terminate; either way
 * the peer gets a Terminate and the QP leaves RTS.  The FPDUs before it
 * go out as they are.
 */
#include <stddef.h>
#include <string.h>
#include "engine_internal.h"

static bool tx_fpdu_uses(const struct rnic_tx_fpdu *d, uint32_t index)
{
    for (uint32_t i = 0; i < d->nstags; i++) {
        if (d->stags[i] == index) {
            return true;
        }
    }
    return false;
}

/* The unsent rest of the partly sent FPDU @d into ep->snap. */
static void tx_snapshot(struct rnic_ep *ep, struct rnic_tx_fpdu *d)
{
    struct rnic_fpdu_out *o = d->out;
    size_t skip = d->sent, rest = o->len - d->sent, n = 0;

    for (int k = 0; k < o->iovcnt; k++) {
        size_t len = o->iov[k].iov_len;

        if (skip >= len) {
            skip -= len;
            continue;
        }
        memcpy(ep->snap + n, (uint8_t *)o->iov[k].iov_base + skip,
               len - skip);
        n += len - skip;
        skip = 0;
    }
    /* What was sent stays counted; the rest now comes from the copy. */
    o->iov[0] = (struct iovec) { d->hdr, d->sent };
    o->iov[1] = (struct iovec) { ep->snap, rest };
    o->iovcnt = 2;
    if (!d->bounced) {
        rnic_tx_unmap(ep, d);
    }
    d->nstags = 0;
}

static void tx_stag_gone(struct rnic_stag_watcher *w, uint32_t index)
{
    struct rnic_ep *ep = (struct rnic_ep *)((char *)w -
                                            offsetof(struct rnic_ep, watch));

    for (uint32_t i = 0; i < ep->ring_count; i++) {
        struct rnic_tx_fpdu *d = rnic_tx_fpdu_at(ep, i);

        if (!tx_fpdu_uses(d, index)) {
            continue;
        }
        if (d->sent) {
            tx_snapshot(ep, d);         /* only the oldest can be */
            continue;
        }
        rnic_tx_unmap(ep, d);
        d->nstags = 0;
        d->poisoned = true;
        ep->tx_poisoned = true;
    }
}

void rnic_tx_inval_init(struct rnic_ep *ep)
{
    ep->watch.gone = tx_stag_gone;
    rnic_stag_watch(ep->stags, &ep->watch);
}

void rnic_tx_inval_fini(struct rnic_ep *ep)
{
    rnic_stag_unwatch(ep->stags, &ep->watch);
}

void rnic_tx_cut_poisoned(struct rnic_ep *ep)
{
    struct rnic_tx_fpdu *d;
    enum rnic_tx_kind kind;
    struct rnic_send_wr *wr;
    uint32_t k = 0;

    ep->tx_poisoned = false;
    while (k < ep->ring_count && !rnic_tx_fpdu_at(ep, k)->poisoned) {
        k++;
    }
    if (k == ep->ring_count) {
        return;
    }
    d = rnic_tx_fpdu_at(ep, k);
    kind = d->kind;
    wr = d->msg_wr;
    rnic_tx_drop_from(ep, k);
    /* The message being framed cannot go on after the gap either. */
    ep->msg.kind = RNIC_TX_IDLE;
    if (kind == RNIC_TX_SQ && wr) {
        rnic_tx_wr_failed(ep, wr, RNIC_WC_LOC_PROT_ERR);
        return;
    }
    rnic_ep_fail(ep, rnic_term_stag_error(RNIC_STAG_ERR_INVALID_STAG, false),
                 NULL, 0, RNIC_QP_TERMINATE);
}
