/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fault injection for driver error-path testing (properties fault-*):
 * drop a connection after N bytes, send every Nth FPDU with a broken
 * CRC32c, delay what a QP sends.  The transmit side also counts FPDUs,
 * which it finds by their ULPDU_LENGTH; with markers on (mpa-markers) the
 * count and the CRC fault are not reliable.
 */
#include "qemu/osdep.h"
#include "qemu/timer.h"
#include "rnic.h"
#include "trace.h"

#define RNIC_MPA_CRC_LEN 4

static size_t rnic_iov_byte(const struct iovec *iov, int cnt, size_t off,
                            uint8_t *b)
{
    for (int i = 0; i < cnt; i++) {
        if (off < iov[i].iov_len) {
            *b = ((uint8_t *)iov[i].iov_base)[off];
            return 1;
        }
        off -= iov[i].iov_len;
    }
    return 0;
}

/* A new FPDU starts at iov[0]: its length is 2 + ULPDU + pad + CRC. */
static void rnic_fault_fpdu_start(RnicConn *c, struct iovec *iov, int cnt)
{
    RnicState *s = c->s;
    uint8_t hi = 0, lo = 0;
    size_t ulpdu;

    rnic_iov_byte(iov, cnt, 0, &hi);
    rnic_iov_byte(iov, cnt, 1, &lo);
    ulpdu = hi << 8 | lo;
    c->tx_fpdu_left = 2 + ulpdu + (-(2 + ulpdu) & 3) + RNIC_MPA_CRC_LEN;
    s->stats.tx_fpdus++;
    c->tx_corrupt = s->fault_corrupt_crc &&
                    !(s->stats.tx_fpdus % s->fault_corrupt_crc);
    if (c->tx_corrupt) {
        size_t total = 0;

        for (int i = 0; i < cnt; i++) {
            total += iov[i].iov_len;
        }
        for (int i = 0; i < RNIC_MPA_CRC_LEN; i++) {
            rnic_iov_byte(iov, cnt, total - RNIC_MPA_CRC_LEN + i,
                          &c->bad_crc[i]);
            c->bad_crc[i] ^= 0xff;
        }
        trace_rnic_fault("corrupt CRC", c->id, s->stats.tx_fpdus);
    }
}

/*
 * Called with what rnic_ep_tx_peek() returned (the unsent rest of one
 * FPDU; iov[] has room for one more entry): counts FPDUs and, for a
 * corrupted one, sends the CRC's unsent octets from the inverted copy.
 */
void rnic_fault_tx_iov(RnicConn *c, struct iovec *iov, int *cnt)
{
    struct iovec *last;
    size_t crc_left;

    if (!c->tx_fpdu_left) {
        rnic_fault_fpdu_start(c, iov, *cnt);
    }
    if (!c->tx_corrupt) {
        return;
    }
    crc_left = MIN(c->tx_fpdu_left, RNIC_MPA_CRC_LEN);
    last = &iov[*cnt - 1];
    if (last->iov_len < crc_left) {
        return;     /* not the layout this relies on: send it as it is */
    }
    last->iov_len -= crc_left;
    if (!last->iov_len) {
        (*cnt)--;
    }
    iov[(*cnt)++] = (struct iovec) {
        .iov_base = c->bad_crc + RNIC_MPA_CRC_LEN - crc_left,
        .iov_len = crc_left,
    };
}

void rnic_fault_tx_sent(RnicConn *c, size_t sent)
{
    while (sent && c->tx_fpdu_left) {
        size_t n = MIN(sent, c->tx_fpdu_left);

        c->tx_fpdu_left -= n;
        sent -= n;
    }
}

/* True when the connection must be dropped now. */
bool rnic_fault_drop(RnicConn *c, size_t bytes)
{
    uint64_t limit = c->s->fault_drop_after;

    c->bytes += bytes;
    if (limit && c->bytes >= limit) {
        trace_rnic_fault("drop connection", c->id, c->bytes);
        return true;
    }
    return false;
}

static void rnic_fault_delay_expired(void *opaque)
{
    RnicConn *c = opaque;

    c->delay_done = true;
    rnic_dp_pump(c);
}

/* True while the burst about to be sent must still wait. */
bool rnic_fault_delay(RnicConn *c)
{
    if (!c->s->fault_delay_ms) {
        return false;
    }
    if (c->delay_done) {
        c->delay_done = false;
        return false;
    }
    if (!c->delay_timer) {
        c->delay_timer = timer_new_ms(QEMU_CLOCK_REALTIME,
                                      rnic_fault_delay_expired, c);
    }
    if (!timer_pending(c->delay_timer)) {
        timer_mod(c->delay_timer, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                  c->s->fault_delay_ms);
    }
    return true;
}

void rnic_fault_fini(RnicConn *c)
{
    if (c->delay_timer) {
        timer_free(c->delay_timer);
        c->delay_timer = NULL;
    }
}
