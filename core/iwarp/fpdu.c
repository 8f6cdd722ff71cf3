/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>
#include "crc32c.h"
#include "fpdu.h"

#define MARKER_INTERVAL RNIC_MPA_MARKER_INTERVAL

static bool at_marker(uint32_t pos)
{
    return pos % MARKER_INTERVAL == 0;
}

static size_t to_next_marker(uint32_t pos)
{
    return MARKER_INTERVAL - pos % MARKER_INTERVAL;
}

size_t rnic_fpdu_mulpdu(uint32_t emss, bool markers)
{
    size_t overhead = 6 + emss % 4;
    size_t mulpdu;

    if (markers) {
        overhead += 4 * ((emss + MARKER_INTERVAL - 1) / MARKER_INTERVAL);
    }
    if (emss <= overhead) {
        return 0;
    }
    mulpdu = emss - overhead;
    return mulpdu > RNIC_MPA_ULPDU_MAX ? RNIC_MPA_ULPDU_MAX : mulpdu;
}

/* ---- TX ---- */

void rnic_fpdu_tx_init(struct rnic_fpdu_tx *tx, bool crc, bool markers)
{
    tx->crc = crc;
    tx->markers = markers;
    tx->pos = 0;
}

struct tx_walk {
    struct rnic_fpdu_tx *tx;
    struct rnic_fpdu_out *out;
    uint32_t hdr_pos;
};

static void tx_put(struct tx_walk *w, const void *p, size_t len)
{
    struct rnic_fpdu_out *out = w->out;

    out->iov[out->iovcnt].iov_base = (void *)p;
    out->iov[out->iovcnt].iov_len = len;
    out->iovcnt++;
    out->len += len;
    w->tx->pos += len;
}

static void tx_put_marker(struct tx_walk *w, uint16_t fpduptr)
{
    struct rnic_mpa_marker *m = &w->out->markers[w->out->nmarkers++];

    rnic_st_be16(&m->rsvd, 0);
    rnic_st_be16(&m->fpduptr, fpduptr);
    tx_put(w, m, sizeof(*m));
}

/* Append @len octets, splitting them around the markers they straddle. */
static void tx_emit(struct tx_walk *w, const uint8_t *p, size_t len)
{
    while (len) {
        size_t chunk = len;

        if (w->tx->markers) {
            if (at_marker(w->tx->pos)) {
                tx_put_marker(w, (uint16_t)(w->tx->pos - w->hdr_pos));
            }
            if (chunk > to_next_marker(w->tx->pos)) {
                chunk = to_next_marker(w->tx->pos);
            }
        }
        tx_put(w, p, chunk);
        p += chunk;
        len -= chunk;
    }
}

static uint32_t iov_crc32c(const struct iovec *iov, int cnt)
{
    uint32_t crc = 0;

    for (int i = 0; i < cnt; i++) {
        crc = rnic_crc32c(crc, iov[i].iov_base, iov[i].iov_len);
    }
    return crc;
}

int rnic_fpdu_tx_frame(struct rnic_fpdu_tx *tx, const struct iovec *ulpdu,
                       int cnt, struct rnic_fpdu_out *out)
{
    struct tx_walk w = { .tx = tx, .out = out };
    size_t ulpdu_len = 0;
    unsigned pad;

    if (cnt < 0 || cnt > RNIC_FPDU_TX_MAX_PIECES) {
        return -1;
    }
    for (int i = 0; i < cnt; i++) {
        ulpdu_len += ulpdu[i].iov_len;
    }
    if (ulpdu_len > RNIC_MPA_ULPDU_MAX) {
        return -1;
    }
    out->iovcnt = 0;
    out->len = 0;
    out->nmarkers = 0;
    /* a marker on the FPDU boundary precedes ULPDU_LENGTH, FPDUPTR 0 */
    if (tx->markers && at_marker(tx->pos)) {
        tx_put_marker(&w, 0);
    }
    w.hdr_pos = tx->pos;
    rnic_st_be16(out->hdr, (uint16_t)ulpdu_len);
    tx_emit(&w, out->hdr, sizeof(out->hdr));
    for (int i = 0; i < cnt; i++) {
        tx_emit(&w, ulpdu[i].iov_base, ulpdu[i].iov_len);
    }
    pad = rnic_mpa_pad_len(ulpdu_len);
    memset(out->trailer, 0, sizeof(out->trailer));
    tx_emit(&w, out->trailer, pad);
    tx_emit(&w, out->trailer + pad, RNIC_MPA_CRC_LEN);
    if (tx->crc) {
        /* the CRC field is 4-aligned, so it is one whole, last iov */
        rnic_crc32c_store(out->trailer + pad,
                          iov_crc32c(out->iov, out->iovcnt - 1));
    }
    return 0;
}

/* ---- RX ---- */

static void rx_start_fpdu(struct rnic_fpdu_rx *rx)
{
    rx->phase = RNIC_FPDU_RX_HDR;
    rx->got = 0;
    rx->crc_acc = 0;
    rx->fpdu_pos = rx->pos;
}

void rnic_fpdu_rx_init(struct rnic_fpdu_rx *rx, bool crc, bool markers,
                       uint8_t *buf, size_t cap)
{
    memset(rx, 0, sizeof(*rx));
    rx->crc = crc;
    rx->markers = markers;
    rx->buf = buf;
    rx->cap = cap;
    rx_start_fpdu(rx);
}

static int rx_fail(struct rnic_fpdu_rx *rx, int err)
{
    rx->err = err;
    return err;
}

static int rx_deliver(struct rnic_fpdu_rx *rx, const uint8_t *ulpdu,
                      rnic_fpdu_ulpdu_fn *fn, void *opaque)
{
    int ret;

    rx->last_pos = rx->fpdu_pos;
    rx->last_len = rx->pos - rx->fpdu_pos;
    ret = fn(opaque, ulpdu, rx->ulpdu_len);
    if (ret < 0) {
        return rx_fail(rx, ret);
    }
    return 0;
}

/* An unmarked FPDU lying whole in the input: verify and hand it out. */
static int rx_whole_fpdu(struct rnic_fpdu_rx *rx, const uint8_t *p,
                         size_t len, rnic_fpdu_ulpdu_fn *fn, void *opaque)
{
    size_t flen;

    if (len < RNIC_MPA_HDR_LEN) {
        return 0;
    }
    rx->ulpdu_len = rnic_ld_be16(p);
    flen = rnic_fpdu_len(rx->ulpdu_len);
    if (flen - RNIC_MPA_HDR_LEN - RNIC_MPA_CRC_LEN > rx->cap) {
        return rx_fail(rx, RNIC_FPDU_ERR_TOO_LONG);
    }
    if (len < flen) {
        return 0;
    }
    if (rx->crc && rnic_crc32c(0, p, flen - RNIC_MPA_CRC_LEN) !=
                   rnic_crc32c_load(p + flen - RNIC_MPA_CRC_LEN)) {
        return rx_fail(rx, RNIC_FPDU_ERR_CRC);
    }
    rx->pos += flen;
    if (rx_deliver(rx, p + RNIC_MPA_HDR_LEN, fn, opaque) < 0) {
        return rx->err;
    }
    rx_start_fpdu(rx);
    return (int)flen;
}

/* A marker octet; its FPDUPTR is checked once all four are in. */
static int rx_marker_byte(struct rnic_fpdu_rx *rx, uint8_t b)
{
    uint16_t want, got;

    if (!rx->in_marker) {
        rx->in_marker = true;
        rx->marker_got = 0;
    }
    rx->marker[rx->marker_got++] = b;
    rx->crc_acc = rnic_crc32c(rx->crc_acc, &b, 1);
    rx->pos++;
    if (rx->marker_got < RNIC_MPA_MARKER_LEN) {
        return 0;
    }
    rx->in_marker = false;
    /* leading marker: no octet of this FPDU seen yet */
    want = rx->phase == RNIC_FPDU_RX_HDR && rx->got == 0 ? 0 :
           (uint16_t)(rx->pos - RNIC_MPA_MARKER_LEN - rx->hdr_pos);
    got = rnic_ld_be16(rx->marker + 2) & ~3u;
    return got == want ? 0 : rx_fail(rx, RNIC_FPDU_ERR_MARKER);
}

/* A phase is complete: move on, delivering the ULPDU after its CRC. */
static int rx_phase_done(struct rnic_fpdu_rx *rx, rnic_fpdu_ulpdu_fn *fn,
                         void *opaque)
{
    switch (rx->phase) {
    case RNIC_FPDU_RX_HDR:
        rx->ulpdu_len = rnic_ld_be16(rx->hdr);
        rx->body_len = rx->ulpdu_len + rnic_mpa_pad_len(rx->ulpdu_len);
        if (rx->body_len > rx->cap) {
            return rx_fail(rx, RNIC_FPDU_ERR_TOO_LONG);
        }
        rx->phase = RNIC_FPDU_RX_BODY;
        break;
    case RNIC_FPDU_RX_BODY:
        rx->phase = RNIC_FPDU_RX_CRC;
        break;
    case RNIC_FPDU_RX_CRC:
        if (rx->crc && rnic_crc32c_load(rx->crc_field) != rx->crc_acc) {
            return rx_fail(rx, RNIC_FPDU_ERR_CRC);
        }
        if (rx_deliver(rx, rx->buf, fn, opaque) < 0) {
            return rx->err;
        }
        rx_start_fpdu(rx);
        return 0;
    }
    rx->got = 0;
    return 0;
}

static uint8_t *rx_phase_dest(struct rnic_fpdu_rx *rx, size_t *left)
{
    switch (rx->phase) {
    case RNIC_FPDU_RX_HDR:
        *left = RNIC_MPA_HDR_LEN - rx->got;
        return rx->hdr + rx->got;
    case RNIC_FPDU_RX_BODY:
        *left = rx->body_len - rx->got;
        return rx->buf + rx->got;
    default:
        *left = RNIC_MPA_CRC_LEN - rx->got;
        return rx->crc_field + rx->got;
    }
}

/* Take octets of the current phase, up to the next marker; how many. */
static size_t rx_copy(struct rnic_fpdu_rx *rx, const uint8_t *p, size_t len)
{
    size_t left;
    uint8_t *dst = rx_phase_dest(rx, &left);

    if (len > left) {
        len = left;
    }
    if (rx->markers && len > to_next_marker(rx->pos)) {
        len = to_next_marker(rx->pos);
    }
    if (rx->phase == RNIC_FPDU_RX_HDR && rx->got == 0) {
        rx->hdr_pos = rx->pos;
    }
    /* With CRC on, copy and sum in one pass (the FPDU's own CRC aside). */
    if (rx->crc && rx->phase != RNIC_FPDU_RX_CRC) {
        rx->crc_acc = rnic_crc32c_copy(rx->crc_acc, dst, p, len);
    } else {
        memcpy(dst, p, len);
    }
    rx->got += len;
    rx->pos += len;
    return len;
}

int rnic_fpdu_rx_input(struct rnic_fpdu_rx *rx, const void *data, size_t len,
                       rnic_fpdu_ulpdu_fn *fn, void *opaque)
{
    const uint8_t *p = data;

    while (len && !rx->err) {
        size_t n = 0;
        int ret = 0;

        if (rx->markers && (rx->in_marker || at_marker(rx->pos))) {
            ret = rx_marker_byte(rx, *p);
            n = 1;
        } else if (!rx->markers && rx->phase == RNIC_FPDU_RX_HDR &&
                   rx->got == 0) {
            ret = rx_whole_fpdu(rx, p, len, fn, opaque);
            n = ret > 0 ? (size_t)ret : 0;
        }
        if (ret < 0) {
            return ret;
        }
        if (!n) {
            size_t left;

            n = rx_copy(rx, p, len);
            rx_phase_dest(rx, &left);
            if (!left && rx_phase_done(rx, fn, opaque) < 0) {
                return rx->err;
            }
        }
        p += n;
        len -= n;
    }
    return rx->err;
}

struct rnic_term_code rnic_fpdu_err_to_term(int err)
{
    switch (err) {
    case RNIC_FPDU_ERR_CRC:
        return rnic_term_mpa(RNIC_MPA_ECODE_CRC);
    case RNIC_FPDU_ERR_MARKER:
    case RNIC_FPDU_ERR_TOO_LONG:
        /* either way ULPDU_LENGTH cannot be trusted to find the next FPDU */
        return rnic_term_mpa(RNIC_MPA_ECODE_MARKER);
    default:
        return rnic_term_mpa(RNIC_MPA_ECODE_LOCAL_CATASTROPHIC);
    }
}
