/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * MPA connection setup (RFC 5044 §7.1, enhanced by RFC 6581): building,
 * parsing and negotiating the Request/Reply frames.  No socket here: the
 * caller feeds received bytes and sends what is built.
 */
#ifndef RNIC_MPA_H
#define RNIC_MPA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "iwarp.h"

#define RNIC_MPA_FRAME_MAX  (sizeof(struct rnic_mpa_rr) + RNIC_MPA_PD_MAX)

enum rnic_mpa_err {
    RNIC_MPA_OK = 0,
    RNIC_MPA_ERR_KEY = -1,          /* not "MPA ID Req/Rep Frame" */
    RNIC_MPA_ERR_REVISION = -2,     /* revision we cannot speak */
    RNIC_MPA_ERR_PD_LEN = -3,       /* private data longer than 512 */
    RNIC_MPA_ERR_MARKERS = -4,      /* markers asked for, not supported */
    RNIC_MPA_ERR_CRC = -5,          /* CRC asked for and refused, or missing */
    RNIC_MPA_ERR_ENHANCED = -6,     /* rev 2 frame lacks RFC 6581 data */
    RNIC_MPA_ERR_IRD = -7,          /* RFC 6581: insufficient IRD */
    RNIC_MPA_ERR_RTR = -8,          /* RFC 6581: no matching RTR type */
    RNIC_MPA_ERR_REJECTED = -9,     /* the peer's Reply has the R bit */
    RNIC_MPA_ERR_PARAM = -10,       /* our own parameters are invalid */
};

enum rnic_mpa_crc_policy {
    RNIC_MPA_CRC_OFF,       /* never: refuse a peer that asks */
    RNIC_MPA_CRC_ACCEPT,    /* do not ask, use it when the peer asks */
    RNIC_MPA_CRC_REQUIRED,  /* always ask */
};

/* What one endpoint wants and allows. */
struct rnic_mpa_params {
    uint8_t rev;                    /* highest revision spoken: 1 or 2 */
    enum rnic_mpa_crc_policy crc;
    bool markers_wanted;            /* ask the peer to send us markers */
    bool markers_allowed;           /* we insert markers if asked */
    /* RFC 6581, rev 2 only */
    uint16_t ird, ord;              /* 14 bits each */
    /*
     * RNIC_MPA_RTR_* types.  Initiator: offered in a peer-to-peer Request
     * (0: client-server).  Responder: taken when a Request asks for
     * peer-to-peer mode (0: such a Request is refused).
     */
    uint8_t rtr;
    bool strict_ird;                /* refuse a peer ORD above our IRD */
    /* ULP private data, after the RFC 6581 prefix */
    const uint8_t *pd;
    uint16_t pd_len;
};

/* A Request or Reply as received. */
struct rnic_mpa_frame {
    bool reply;
    uint8_t flags;
    uint8_t rev;
    bool enhanced;                  /* RFC 6581 prefix decoded below */
    uint16_t ird, ord;              /* without the flag bits */
    bool p2p;
    uint8_t rtr;                    /* RNIC_MPA_RTR_* mask */
    const uint8_t *pd;              /* ULP private data, into raw[] */
    uint16_t pd_len;
    size_t raw_len;
    uint8_t raw[RNIC_MPA_FRAME_MAX];
};

/* What both ends agreed. */
struct rnic_mpa_result {
    uint8_t rev;
    bool crc;
    bool markers_tx;                /* we insert markers */
    bool markers_rx;                /* the peer inserts markers */
    bool enhanced;
    uint16_t ird, ord;              /* ours, after negotiation */
    uint16_t peer_ird, peer_ord;
    uint8_t rtr;                    /* the one RTR type chosen, or 0 */
};

/* Build a frame; the length written, or a negative enum rnic_mpa_err. */
int rnic_mpa_build_request(const struct rnic_mpa_params *p,
                           uint8_t *buf, size_t size);
int rnic_mpa_build_reply(const struct rnic_mpa_params *p,
                         const struct rnic_mpa_result *res,
                         uint8_t *buf, size_t size);
/* A Reply with the R bit; @reason goes out as private data. */
int rnic_mpa_build_reject(uint8_t rev, const uint8_t *reason, uint16_t len,
                          uint8_t *buf, size_t size);

/*
 * Parse a whole frame (@reply selects the key); the frame's length,
 * 0 if @len is too short yet, or a negative enum rnic_mpa_err.
 */
int rnic_mpa_parse(const uint8_t *buf, size_t len, bool reply,
                   struct rnic_mpa_frame *f);

/* Responder: decide about a Request. */
int rnic_mpa_negotiate_request(const struct rnic_mpa_params *local,
                               const struct rnic_mpa_frame *req,
                               struct rnic_mpa_result *res);
/* Initiator: check the Reply against what we asked for. */
int rnic_mpa_negotiate_reply(const struct rnic_mpa_params *local,
                             const struct rnic_mpa_frame *rep,
                             struct rnic_mpa_result *res);

/* What a Terminate would report for a setup error. */
struct rnic_term_code rnic_mpa_err_to_term(int err);
/* Setup errors an initiator reports with a Terminate (RFC 6581). */
bool rnic_mpa_err_is_term(int err);
/*
 * That Terminate as the connection's first FPDU, framed as @res agreed
 * (mpa_term.c); its length, or a negative enum rnic_mpa_err.
 */
int rnic_mpa_build_term(const struct rnic_mpa_result *res, int err,
                        uint8_t *buf, size_t size);
const char *rnic_mpa_strerror(int err);

/*
 * The setup exchange as a state machine fed arbitrary chunks of the TCP
 * stream.  The initiator sends out[] at start; the responder sends out[]
 * (a Reply or a Reject) once the Request is in.
 */
enum rnic_mpa_state {
    RNIC_MPA_WAIT_FRAME,
    RNIC_MPA_DONE,                  /* result valid; FPDUs follow */
    RNIC_MPA_FAILED,
};

struct rnic_mpa_conn {
    bool initiator;
    enum rnic_mpa_state state;
    int err;
    struct rnic_mpa_params local;
    struct rnic_mpa_frame peer;
    struct rnic_mpa_result result;
    uint8_t out[RNIC_MPA_FRAME_MAX];
    size_t out_len;
    uint8_t in[RNIC_MPA_FRAME_MAX];     /* the peer's frame so far */
    size_t in_len;
};

int rnic_mpa_conn_init(struct rnic_mpa_conn *c, bool initiator,
                       const struct rnic_mpa_params *local);
/*
 * Consume bytes up to the end of the peer's frame, never beyond (FPDUs may
 * follow in the same chunk); *used says how many.  Returns the new state,
 * or a negative enum rnic_mpa_err (state FAILED; out[] then holds what to
 * send before closing, if anything: for a responder a Reject, for an
 * initiator refusing the Reply the RFC 6581 Terminate,
 * rnic_mpa_build_term()).
 */
int rnic_mpa_conn_input(struct rnic_mpa_conn *c, const void *data,
                        size_t len, size_t *used);

#endif /* RNIC_MPA_H */
