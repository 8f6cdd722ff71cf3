/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The transmitter's FPDU side: frames the segments tx.c builds into the
 * ring of FPDUs in flight (ep->ring), hands them out to be written (peek)
 * and retires them as their octets are sent (advance).
 */
#include <stdlib.h>
#include <string.h>
#include "engine_internal.h"

/* ---- the FPDUs in flight ---- */

struct rnic_tx_fpdu *rnic_tx_fpdu_at(struct rnic_ep *ep, uint32_t i)
{
    return ep->ring[(ep->ring_head + i) & (ep->ring_cap - 1)];
}

static struct rnic_tx_fpdu *tx_fpdu(struct rnic_ep *ep, uint32_t i)
{
    return rnic_tx_fpdu_at(ep, i);
}

/*
 * @n new entries, at @ring[@from...].  Without markers each entry's framed
 * FPDU needs only RNIC_FPDU_OUT_UNMARKED of its 5 KiB: with a thousand
 * connections that is 100 KiB less host memory per connection.
 */
static bool tx_ring_block(struct rnic_ep *ep, struct rnic_tx_fpdu **ring,
                          uint32_t from, uint32_t n)
{
    struct rnic_tx_block *b = &ep->blocks[ep->nblocks];
    size_t osz = ep->mpa.markers_tx ? sizeof(struct rnic_fpdu_out) :
                 RNIC_FPDU_OUT_UNMARKED;

    osz = (osz + _Alignof(struct rnic_fpdu_out) - 1) &
          ~(_Alignof(struct rnic_fpdu_out) - 1);
    b->fpdus = calloc(n, sizeof(*b->fpdus));
    b->outs = calloc(n, osz);
    if (!b->fpdus || !b->outs) {
        free(b->fpdus);
        free(b->outs);
        *b = (struct rnic_tx_block) { 0 };
        return false;
    }
    ep->nblocks++;
    for (uint32_t i = 0; i < n; i++) {
        b->fpdus[i].out = (struct rnic_fpdu_out *)(b->outs + i * osz);
        ring[from + i] = &b->fpdus[i];
    }
    return true;
}

bool rnic_tx_ring_new(struct rnic_ep *ep)
{
    ep->ring = calloc(RNIC_EP_TX_RING_MIN, sizeof(*ep->ring));
    ep->ring_cap = RNIC_EP_TX_RING_MIN;
    return ep->ring && tx_ring_block(ep, ep->ring, 0, RNIC_EP_TX_RING_MIN);
}

void rnic_tx_ring_free(struct rnic_ep *ep)
{
    for (uint32_t i = 0; i < ep->nblocks; i++) {
        free(ep->blocks[i].fpdus);
        free(ep->blocks[i].outs);
    }
    free(ep->ring);
}

/*
 * Room for one more FPDU.  A full ring doubles, up to
 * RNIC_EP_TX_BATCH_FPDUS, while nothing of it has gone out: then it is
 * all one batch being put together, and a longer batch is a longer
 * write: 64 FPDUs of 1400 octets (an Ethernet MSS) are only 90 KiB
 * (measured in docs/protocol.md section 3).  A ring whose oldest FPDU is
 * partly out waits for the socket, which more entries would not hurry,
 * and with markers (5 KiB an entry) it stays as it is.
 */
bool rnic_tx_ring_room(struct rnic_ep *ep)
{
    uint32_t cap = ep->ring_cap;
    struct rnic_tx_fpdu **ring;

    if (ep->ring_count < cap) {
        return true;
    }
    if (cap == RNIC_EP_TX_BATCH_FPDUS || ep->mpa.markers_tx ||
        tx_fpdu(ep, 0)->sent) {
        return false;
    }
    ring = calloc(2 * cap, sizeof(*ring));
    if (!ring) {
        return false;
    }
    for (uint32_t i = 0; i < cap; i++) {
        ring[i] = tx_fpdu(ep, i);
    }
    if (!tx_ring_block(ep, ring, cap, cap)) {
        free(ring);
        return false;
    }
    free(ep->ring);
    ep->ring = ring;
    ep->ring_head = 0;
    ep->ring_cap = 2 * cap;
    return true;
}

void rnic_tx_unmap(struct rnic_ep *ep, struct rnic_tx_fpdu *d)
{
    if (d->nmap) {
        rnic_mem_unmap(ep->dma, d->map, d->nmap, false, 0);
        d->nmap = 0;
    }
    if (d->bounced) {
        d->bounced = false;
        ep->bounce_busy = false;
    }
}

/* Drops the FPDUs from the @keep-th oldest on, unsent, and rewinds the
 * framer's stream position (markers) to the first of them. */
void rnic_tx_drop_from(struct rnic_ep *ep, uint32_t keep)
{
    if (keep >= ep->ring_count) {
        return;
    }
    ep->ftx.pos = tx_fpdu(ep, keep)->pos;
    while (ep->ring_count > keep) {
        rnic_tx_unmap(ep, tx_fpdu(ep, --ep->ring_count));
    }
    ep->cuts++;
}

void rnic_tx_release(struct rnic_ep *ep)
{
    if (ep->ring) {
        rnic_tx_drop_from(ep, 0);
    }
}

/*
 * Drops the FPDUs no one may be writing yet: all but those handed out
 * since the last advance and those partly or wholly sent.  Our Terminate,
 * once framed, is the newest entry and everything before it goes out.
 */
void rnic_tx_trim(struct rnic_ep *ep)
{
    uint32_t keep = ep->offered;

    if (ep->term == RNIC_TERM_SENDING) {
        return;
    }
    while (keep < ep->ring_count && tx_fpdu(ep, keep)->sent) {
        keep++;
    }
    rnic_tx_drop_from(ep, keep);
}

/* The FPDUs kept are finished regardless: the peer must see whole FPDUs,
 * even of a message that will never complete. */
void rnic_tx_abandon(struct rnic_ep *ep)
{
    ep->msg.kind = RNIC_TX_IDLE;
    rnic_tx_trim(ep);
    for (uint32_t i = 0; i < ep->ring_count; i++) {
        tx_fpdu(ep, i)->done = RNIC_TX_DONE_NONE;
    }
}

/* A Read Response in the ring has still to use up its source STag. */
bool rnic_tx_read_resp_pending(struct rnic_ep *ep)
{
    for (uint32_t i = 0; i < ep->ring_count; i++) {
        if (tx_fpdu(ep, i)->done == RNIC_TX_DONE_READ_RESP) {
            return true;
        }
    }
    return false;
}

/* ---- framing ---- */

/* The next free ring entry, made empty. */
struct rnic_tx_fpdu *rnic_tx_fpdu_new(struct rnic_ep *ep)
{
    struct rnic_tx_fpdu *d = tx_fpdu(ep, ep->ring_count);

    d->pos = ep->ftx.pos;
    d->sent = 0;
    d->done = RNIC_TX_DONE_NONE;
    d->wr = NULL;
    d->term = false;
    d->bounced = false;
    d->nmap = 0;
    d->kind = RNIC_TX_IDLE;
    d->msg_wr = NULL;
    d->nstags = 0;
    d->poisoned = false;
    return d;
}

/*
 * Frames the ULPDU (its first piece at d->hdr + RNIC_MPA_HDR_LEN) and
 * queues the FPDU.  ULPDU_LENGTH is copied in front of the DDP header so
 * that both go as one iovec, and adjacent pieces are joined (pad and CRC
 * are one already): about three iovecs per unmarked FPDU.
 */
void rnic_tx_frame(struct rnic_ep *ep, struct rnic_tx_fpdu *d,
                   struct iovec *ulpdu, int cnt)
{
    struct rnic_fpdu_out *o = d->out;
    uintptr_t lh = (uintptr_t)o->hdr;
    int n = 0;

    rnic_fpdu_tx_frame(&ep->ftx, ulpdu, cnt, o);
    memcpy(d->hdr, o->hdr, RNIC_MPA_HDR_LEN);
    for (int i = 0; i < o->iovcnt; i++) {
        struct iovec v = o->iov[i];
        uintptr_t b = (uintptr_t)v.iov_base;

        if (b >= lh && b < lh + RNIC_MPA_HDR_LEN) {
            v.iov_base = d->hdr + (b - lh);
        }
        if (n && (uint8_t *)o->iov[n - 1].iov_base + o->iov[n - 1].iov_len ==
                 (uint8_t *)v.iov_base) {
            o->iov[n - 1].iov_len += v.iov_len;
        } else {
            o->iov[n++] = v;
        }
    }
    o->iovcnt = n;
    ep->ring_count++;
}

/* ---- handing out and advancing ---- */

struct tx_peek {
    struct iovec *iov;
    int max;
    int n;
    size_t total;
    struct rnic_ep_tx_fpdu *fpdus;  /* or NULL */
};

/*
 * Appends the unsent rest of the @i-th oldest FPDU.  The oldest is cut at
 * @max iovecs as it always was; any other goes whole within the limits
 * or not at all (false).
 */
static bool tx_offer(struct rnic_ep *ep, uint32_t i, struct tx_peek *p)
{
    struct rnic_tx_fpdu *d = tx_fpdu(ep, i);
    const struct rnic_fpdu_out *out = d->out;
    size_t skip = d->sent;

    if (i && (p->n + out->iovcnt > p->max ||
              p->total + out->len > RNIC_EP_TX_BATCH_BYTES)) {
        return false;
    }
    int k;

    for (k = 0; k < out->iovcnt && p->n < p->max; k++) {
        size_t len = out->iov[k].iov_len;

        if (skip >= len) {
            skip -= len;
            continue;
        }
        p->iov[p->n].iov_base = (uint8_t *)out->iov[k].iov_base + skip;
        p->iov[p->n].iov_len = len - skip;
        p->total += len - skip;
        skip = 0;
        p->n++;
    }
    if (p->fpdus) {
        p->fpdus[i] = (struct rnic_ep_tx_fpdu) {
            .seq = ep->fpdus_sent + i, .end = p->n, .tail = k == out->iovcnt,
        };
    }
    return true;
}

/* The longest FPDU this endpoint frames, markers included. */
static size_t tx_fpdu_len_max(const struct rnic_ep *ep)
{
    size_t len = rnic_fpdu_len(ep->mulpdu);

    if (ep->mpa.markers_tx) {
        len += RNIC_MPA_MARKER_LEN *
               (len / (RNIC_MPA_MARKER_INTERVAL - RNIC_MPA_MARKER_LEN) + 2);
    }
    return len;
}

size_t rnic_ep_tx_peek_fpdus(struct rnic_ep *ep, struct iovec *iov, int max,
                             int *cnt, int max_fpdus,
                             struct rnic_ep_tx_fpdu *fpdus, int *nfpdus)
{
    uint32_t limit = max_fpdus < 1 ? 1 : (uint32_t)max_fpdus;
    struct tx_peek p;
    unsigned cuts;
    uint32_t i;

    if (limit > RNIC_EP_TX_BATCH_FPDUS) {
        limit = RNIC_EP_TX_BATCH_FPDUS;
    }
    if (ep->tx_poisoned) {
        rnic_tx_cut_poisoned(ep);
    }
restart:
    p = (struct tx_peek) { .iov = iov, .max = max, .fpdus = fpdus };
    cuts = ep->cuts;
    for (i = 0; i < limit; i++) {
        if (i == ep->ring_count) {
            bool built;

            /* frame no FPDU that could not be added */
            if (i && (p.n >= max || p.total + tx_fpdu_len_max(ep) >
                                    RNIC_EP_TX_BATCH_BYTES)) {
                break;
            }
            built = rnic_tx_build_next(ep);
            if (ep->cuts != cuts) {
                goto restart;   /* FPDUs offered above were dropped */
            }
            if (!built) {
                break;
            }
        }
        if (!tx_offer(ep, i, &p)) {
            break;
        }
    }
    if (i > ep->offered) {
        ep->offered = i;
    }
    *cnt = p.n;
    if (nfpdus) {
        *nfpdus = p.n ? (int)i : 0;
    }
    return p.total;
}

size_t rnic_ep_tx_peek_batch(struct rnic_ep *ep, struct iovec *iov, int max,
                             int *cnt, int max_fpdus)
{
    return rnic_ep_tx_peek_fpdus(ep, iov, max, cnt, max_fpdus, NULL, NULL);
}

uint64_t rnic_ep_tx_fpdus_sent(const struct rnic_ep *ep)
{
    return ep->fpdus_sent;
}

size_t rnic_ep_tx_peek(struct rnic_ep *ep, struct iovec *iov, int max,
                       int *cnt)
{
    return rnic_ep_tx_peek_batch(ep, iov, max, cnt, 1);
}

/* The oldest FPDU is sent whole: unmap it and finish what it finishes.
 * False after our Terminate (the device may close at once). */
static bool tx_retire(struct rnic_ep *ep)
{
    struct rnic_tx_fpdu *d = tx_fpdu(ep, 0);
    enum rnic_tx_done done = d->done;
    struct rnic_send_wr *wr = d->wr;
    uint32_t src_stag = d->src_stag;
    bool term = d->term;

    if (ep->tx_op_count) {
        /* ULPDU_LENGTH, DDP control, then RDMAP control */
        ep->tx_op_count[d->hdr[3] & RNIC_RDMAP_OPCODE_MASK]++;
    }
    rnic_tx_unmap(ep, d);
    ep->ring_head = (ep->ring_head + 1) & (ep->ring_cap - 1);
    ep->ring_count--;
    ep->fpdus_sent++;
    if (term) {
        ep->term = RNIC_TERM_SENT;
        if (ep->ops && ep->ops->term_sent) {
            ep->ops->term_sent(ep->opaque, ep->term_code);
        }
        return false;
    }
    if (done == RNIC_TX_DONE_WR) {
        rnic_qp_sq_done(ep->qp, wr, RNIC_WC_SUCCESS);
    } else if (done == RNIC_TX_DONE_READ_RESP) {
        rnic_stag_message_done(ep->stags, src_stag);
    }
    return true;
}

void rnic_ep_tx_advance(struct rnic_ep *ep, size_t sent)
{
    /* Every octet written is counted before anything completes: a
     * completion may lead to a trim, which keeps what was begun. */
    for (uint32_t i = 0; sent && i < ep->ring_count; i++) {
        struct rnic_tx_fpdu *d = tx_fpdu(ep, i);
        size_t take = d->out->len - d->sent;

        take = take < sent ? take : sent;
        d->sent += take;
        sent -= take;
    }
    ep->offered = 0;
    while (ep->ring_count && tx_fpdu(ep, 0)->sent == tx_fpdu(ep, 0)->out->len) {
        if (!tx_retire(ep)) {
            return;
        }
    }
}
