/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fault injection for driver error-path testing (properties fault-*):
 * drop a connection after N bytes, send every Nth FPDU with a broken
 * CRC32c, delay what a QP sends.  The transmit side also counts FPDUs,
 * which it finds by their ULPDU_LENGTH; with markers on (mpa-markers) the
 * count and the CRC fault are not reliable.  With fault-corrupt-crc the
 * device sends one FPDU per system call, otherwise several.
 */
#include "qemu/osdep.h"
#include "qemu/timer.h"
#include "rnic.h"
#include "fpdu.h"
#include "trace.h"

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

/* Length of the FPDU starting at octet @off: 2 + ULPDU + pad + CRC. */
static size_t rnic_fpdu_len_at(const struct iovec *iov, int cnt, size_t off)
{
    uint8_t hi = 0, lo = 0;
    size_t ulpdu;

    rnic_iov_byte(iov, cnt, off, &hi);
    rnic_iov_byte(iov, cnt, off + 1, &lo);
    ulpdu = hi << 8 | lo;
    return rnic_fpdu_len(ulpdu);
}

static size_t rnic_iov_len(const struct iovec *iov, int cnt)
{
    size_t total = 0;

    for (int i = 0; i < cnt; i++) {
        total += iov[i].iov_len;
    }
    return total;
}

/*
 * fault-corrupt-crc: called with a single FPDU's unsent rest (iov[] has
 * room for one more entry).  Decides at the FPDU's start whether it is the
 * Nth, and sends the unsent octets of its CRC from an inverted copy.
 */
void rnic_fault_tx_iov(RnicConn *c, struct iovec *iov, int *cnt)
{
    RnicState *s = c->s;
    size_t left = c->tx_fpdu_left ? c->tx_fpdu_left
                                   : rnic_fpdu_len_at(iov, *cnt, 0);
    size_t crc_left = MIN(left, RNIC_MPA_CRC_LEN);
    struct iovec *last = &iov[*cnt - 1];

    if (!c->tx_fpdu_left) {
        size_t total = rnic_iov_len(iov, *cnt);

        c->tx_corrupt = !((s->stats.tx_fpdus + 1) % s->fault_corrupt_crc);
        for (int i = 0; c->tx_corrupt && i < RNIC_MPA_CRC_LEN; i++) {
            rnic_iov_byte(iov, *cnt, total - RNIC_MPA_CRC_LEN + i,
                          &c->bad_crc[i]);
            c->bad_crc[i] ^= 0xff;
        }
        if (c->tx_corrupt) {
            trace_rnic_fault("corrupt CRC", c->id, s->stats.tx_fpdus + 1);
        }
    }
    if (!c->tx_corrupt || last->iov_len < crc_left) {
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

/*
 * @sent octets of @iov went out: counts the FPDUs that began in them,
 * finding each by its ULPDU_LENGTH (the device sends no markers unless
 * mpa-markers is on, and then this count is approximate).  One pass over
 * the iovecs, however many FPDUs they hold.
 */
void rnic_fault_tx_sent(RnicConn *c, const struct iovec *iov, int cnt,
                        size_t sent)
{
    int i = 0;
    size_t in = 0;      /* offset within iov[i] */

    while (sent) {
        size_t n;

        if (!c->tx_fpdu_left) {
            /* A new FPDU starts here: its length is the next 2 octets. */
            uint8_t len[2];
            int j = i;
            size_t k = in;

            for (int b = 0; b < 2 && j < cnt; b++) {
                while (j < cnt && k >= iov[j].iov_len) {
                    k = 0;
                    j++;
                }
                len[b] = j < cnt ? ((uint8_t *)iov[j].iov_base)[k++] : 0;
            }
            c->tx_fpdu_left = rnic_fpdu_len(len[0] << 8 | len[1]);
            c->s->stats.tx_fpdus++;
        }
        n = MIN(c->tx_fpdu_left, sent);
        c->tx_fpdu_left -= n;
        sent -= n;
        if (!c->tx_fpdu_left) {
            c->tx_corrupt = false;
        }
        /* Move the cursor over the n octets. */
        while (n && i < cnt) {
            size_t step = MIN(n, iov[i].iov_len - in);

            n -= step;
            in += step;
            if (in == iov[i].iov_len) {
                in = 0;
                i++;
            }
        }
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

static void rnic_fault_delay_over(void *opaque)
{
    RnicConn *c = opaque;

    c->delay_done = true;
    rnic_dp_pump(c);
}

static void rnic_fault_delay_expired(void *opaque)
{
    rnic_guarded(((RnicConn *)opaque)->s, rnic_fault_delay_over, opaque);
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
