/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * MPA FPDU framing (RFC 5044 §4-§6) for the full operation phase.
 *
 * An FPDU is ULPDU_LENGTH (be16), the ULPDU (DDP segment), zero pad to a
 * multiple of 4, and CRC32c (zero when CRC was not negotiated).
 * With markers, a 4-byte marker sits at every 512th octet of the stream,
 * counted from the first octet of the first FPDU; the CRC covers every
 * octet of the FPDU before it, markers and pad included.  A marker that
 * falls on an FPDU boundary belongs to the FPDU that follows (FPDUPTR 0);
 * any other marker points back to its FPDU's ULPDU_LENGTH field.
 *
 * Neither direction allocates or copies payload per FPDU: TX describes
 * the FPDU as an iovec around the caller's ULPDU pieces; RX hands out the
 * ULPDU from the caller's buffer, or straight from the input chunk when an
 * unmarked FPDU lies in it whole.
 */
#ifndef RNIC_FPDU_H
#define RNIC_FPDU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "iwarp.h"

/* FPDU length without markers, for a ULPDU of @ulpdu_len. */
static inline size_t rnic_fpdu_len(size_t ulpdu_len)
{
    return RNIC_MPA_HDR_LEN + ulpdu_len + rnic_mpa_pad_len(ulpdu_len) +
           RNIC_MPA_CRC_LEN;
}

/* Largest ULPDU whose FPDU fits one segment of @emss (RFC 5044 §5.2). */
size_t rnic_fpdu_mulpdu(uint32_t emss, bool markers);

/* ---- TX ---- */

#define RNIC_FPDU_TX_MAX_PIECES 8       /* ULPDU pieces per FPDU */
#define RNIC_FPDU_MAX_MARKERS \
    ((RNIC_MPA_ULPDU_MAX + 16) / \
     (RNIC_MPA_MARKER_INTERVAL - RNIC_MPA_MARKER_LEN) + 2)
#define RNIC_FPDU_TX_MAX_IOV \
    (RNIC_FPDU_TX_MAX_PIECES + 3 + 2 * RNIC_FPDU_MAX_MARKERS)

struct rnic_fpdu_tx {
    bool crc;
    bool markers;
    uint32_t pos;           /* stream octets sent since the first FPDU */
};

/*
 * One framed FPDU; iov[] may point into this struct and the ULPDU.  The
 * arrays sized for markers come last: framing without markers touches
 * only the first RNIC_FPDU_OUT_UNMARKED octets (ULPDU_LENGTH, at most
 * RNIC_FPDU_TX_MAX_PIECES pieces, pad and CRC), and an endpoint's
 * transmit ring keeps no more than that per FPDU when markers are off.
 */
struct rnic_fpdu_out {
    int iovcnt;
    size_t len;
    uint8_t hdr[RNIC_MPA_HDR_LEN];
    uint8_t trailer[3 + RNIC_MPA_CRC_LEN];      /* pad, then CRC */
    unsigned nmarkers;
    struct iovec iov[RNIC_FPDU_TX_MAX_IOV];
    struct rnic_mpa_marker markers[RNIC_FPDU_MAX_MARKERS];
};

#define RNIC_FPDU_OUT_UNMARKED \
    offsetof(struct rnic_fpdu_out, iov[RNIC_FPDU_TX_MAX_PIECES + 3])

void rnic_fpdu_tx_init(struct rnic_fpdu_tx *tx, bool crc, bool markers);
/*
 * Frame the ULPDU made of @ulpdu[0..cnt) and advance the stream position;
 * 0, or -1 if the ULPDU is longer than 65535 or in too many pieces.
 */
int rnic_fpdu_tx_frame(struct rnic_fpdu_tx *tx, const struct iovec *ulpdu,
                       int cnt, struct rnic_fpdu_out *out);

/* ---- RX ---- */

enum rnic_fpdu_err {
    RNIC_FPDU_ERR_CRC = -1,         /* received CRC differs */
    RNIC_FPDU_ERR_TOO_LONG = -2,    /* ULPDU_LENGTH beyond the buffer */
    RNIC_FPDU_ERR_MARKER = -3,      /* FPDUPTR not pointing at the FPDU */
};

/*
 * Called once per complete, verified ULPDU.  A negative return stops the
 * deframer and is passed back by rnic_fpdu_rx_input().
 */
typedef int rnic_fpdu_ulpdu_fn(void *opaque, const uint8_t *ulpdu,
                               size_t len);

enum rnic_fpdu_rx_phase {
    RNIC_FPDU_RX_HDR,
    RNIC_FPDU_RX_BODY,              /* ULPDU and pad */
    RNIC_FPDU_RX_CRC,
};

struct rnic_fpdu_rx {
    bool crc;
    bool markers;
    int err;                        /* sticky: the stream is lost */
    uint32_t pos;                   /* stream octets since the first FPDU */
    uint8_t *buf;                   /* ULPDU + pad of the current FPDU */
    size_t cap;
    /* current FPDU */
    enum rnic_fpdu_rx_phase phase;
    uint32_t fpdu_pos;              /* stream position of its first octet */
    size_t got;                     /* octets of this phase so far */
    size_t body_len;                /* ULPDU + pad */
    uint16_t ulpdu_len;
    uint32_t crc_acc;
    uint32_t hdr_pos;               /* stream position of ULPDU_LENGTH */
    uint8_t hdr[RNIC_MPA_HDR_LEN];
    uint8_t crc_field[RNIC_MPA_CRC_LEN];
    uint8_t marker[RNIC_MPA_MARKER_LEN];
    unsigned marker_got;
    bool in_marker;
    /* the FPDU last delivered, for diagnostics and tests */
    uint32_t last_pos;
    size_t last_len;
};

/* @buf holds one ULPDU plus pad: size it for the largest ULPDU accepted. */
void rnic_fpdu_rx_init(struct rnic_fpdu_rx *rx, bool crc, bool markers,
                       uint8_t *buf, size_t cap);
/* Consume all of @data; 0, or the first error (sticky). */
int rnic_fpdu_rx_input(struct rnic_fpdu_rx *rx, const void *data, size_t len,
                       rnic_fpdu_ulpdu_fn *fn, void *opaque);

struct rnic_term_code rnic_fpdu_err_to_term(int err);

#endif /* RNIC_FPDU_H */
