/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fault injection for driver error-path testing (properties fault-*):
 * drop a connection after N bytes, send every Nth FPDU with a broken
 * CRC32c, delay what a QP sends.  A filter the data-path pump consults:
 * it owns no timer and frees nothing (rnic-conn.c does), and it learns
 * where FPDUs begin and end from the core (rnic_ep_tx_peek_fpdus), never
 * by parsing the stream, so markers and batching make no difference.
 */
#include "qemu/osdep.h"
#include "rnic.h"
#include "trace.h"

/*
 * fault-corrupt-crc: the FPDU with sequence number seq (counting from 0)
 * is corrupted when (seq + 1) is a multiple of N, whether it goes out in
 * one write or several: its CRC octets still unsent are sent from an
 * inverted copy.  @iov has room for @max entries; returns the new count.
 */
int rnic_fault_tx_filter(RnicConn *c, struct iovec *iov, int cnt, int max,
                         const struct rnic_ep_tx_fpdu *fpdus, int nfpdus)
{
    uint32_t every = c->s->params.fault_corrupt_crc;
    int shift = 0;

    for (int i = 0; i < nfpdus && cnt < max; i++) {
        const struct rnic_ep_tx_fpdu *f = &fpdus[i];
        struct iovec *last = &iov[f->end - 1 + shift];
        size_t n = MIN(last->iov_len, RNIC_MPA_CRC_LEN);
        uint8_t *bad = c->bad_crc[i];
        const uint8_t *crc;

        if (!f->tail || (f->seq + 1) % every) {
            continue;
        }
        trace_rnic_fault("corrupt CRC", c->id, f->seq + 1);
        if (c->corrupted != f->seq + 1) {   /* once, if sent in parts */
            c->corrupted = f->seq + 1;
            c->s->stats.tx_crc_corrupted++;
        }
        crc = (const uint8_t *)last->iov_base + last->iov_len - n;
        for (size_t k = 0; k < n; k++) {
            bad[k] = crc[k] ^ 0xff;
        }
        last->iov_len -= n;
        /* the inverted octets go right after what is left of @last */
        memmove(last + 2, last + 1, (cnt - (last + 1 - iov)) * sizeof(*iov));
        last[1] = (struct iovec) { .iov_base = bad, .iov_len = n };
        cnt++;
        shift++;
    }
    return cnt;
}

/* True when the connection must be dropped now (fault-drop-after). */
bool rnic_fault_drop(RnicConn *c, size_t bytes)
{
    uint64_t limit = c->s->params.fault_drop_after;

    c->bytes += bytes;
    if (limit && c->bytes >= limit) {
        trace_rnic_fault("drop connection", c->id, c->bytes);
        return true;
    }
    return false;
}

/*
 * fault-delay-ms: true while the burst about to be sent must wait; the
 * connection's owner then arms its timer and sets delay_done when it
 * fires.
 */
bool rnic_fault_delay(RnicConn *c)
{
    if (!c->s->params.fault_delay_ms) {
        return false;
    }
    if (c->delay_done) {
        c->delay_done = false;
        return false;
    }
    return true;
}
