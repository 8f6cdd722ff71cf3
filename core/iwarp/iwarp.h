/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * iWARP wire formats, each layout once: MPA (RFC 5044, enhanced by
 * RFC 6581), DDP (RFC 5041), RDMAP (RFC 5040, extended by RFC 7306).
 *
 * Structs are packed and hold multi-byte fields in network byte order;
 * read and write them only through the rnic_ld_be* / rnic_st_be* helpers,
 * which also make unaligned access safe.
 */
#ifndef RNIC_IWARP_H
#define RNIC_IWARP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RNIC_PACKED __attribute__((packed))

/* Host <-> big-endian, on any alignment. */
static inline uint16_t rnic_ld_be16(const void *p)
{
    const uint8_t *b = p;

    return (uint16_t)(b[0] << 8 | b[1]);
}

static inline uint32_t rnic_ld_be32(const void *p)
{
    const uint8_t *b = p;

    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
           (uint32_t)b[2] << 8 | b[3];
}

static inline uint64_t rnic_ld_be64(const void *p)
{
    const uint8_t *b = p;

    return (uint64_t)rnic_ld_be32(b) << 32 | rnic_ld_be32(b + 4);
}

static inline void rnic_st_be16(void *p, uint16_t v)
{
    uint8_t *b = p;

    b[0] = v >> 8;
    b[1] = v;
}

static inline void rnic_st_be32(void *p, uint32_t v)
{
    uint8_t *b = p;

    b[0] = v >> 24;
    b[1] = v >> 16;
    b[2] = v >> 8;
    b[3] = v;
}

static inline void rnic_st_be64(void *p, uint64_t v)
{
    rnic_st_be32(p, v >> 32);
    rnic_st_be32((uint8_t *)p + 4, (uint32_t)v);
}

/* ---- MPA Request/Reply frames (RFC 5044 §7.1, RFC 6581 §7) ---- */

#define RNIC_MPA_KEY_REQ        "MPA ID Req Frame"
#define RNIC_MPA_KEY_REP        "MPA ID Rep Frame"
#define RNIC_MPA_KEY_LEN        16
#define RNIC_MPA_PD_MAX         512

enum rnic_mpa_flag {
    RNIC_MPA_FLAG_M         = 0x80, /* sender wants to receive Markers */
    RNIC_MPA_FLAG_C         = 0x40, /* sender wants CRC32c */
    RNIC_MPA_FLAG_R         = 0x20, /* Reply only: connection rejected */
    RNIC_MPA_FLAG_ENHANCED  = 0x10, /* RFC 6581 IRD/ORD prefix present */
    RNIC_MPA_FLAG_RES       = 0x0f,
};

enum rnic_mpa_rev {
    RNIC_MPA_REV1 = 1,
    RNIC_MPA_REV2 = 2,              /* RFC 6581 */
};

struct rnic_mpa_rr {
    uint8_t key[RNIC_MPA_KEY_LEN];
    uint8_t flags;
    uint8_t rev;
    uint16_t pd_len;
} RNIC_PACKED;

/* RFC 6581 enhanced private data prefix: two words of flags + 14 bits. */
struct rnic_mpa_v2_pd {
    uint16_t ird;
    uint16_t ord;
} RNIC_PACKED;

enum rnic_mpa_v2_bits {
    RNIC_MPA_V2_IRD_ORD_MASK    = 0x3fff,
    RNIC_MPA_V2_IRD_P2P         = 0x8000, /* peer-to-peer RTR wanted */
    RNIC_MPA_V2_IRD_RTR_SEND    = 0x4000, /* zero-length Send as RTR */
    RNIC_MPA_V2_ORD_RTR_WRITE   = 0x8000, /* zero-length RDMA Write */
    RNIC_MPA_V2_ORD_RTR_READ    = 0x4000, /* zero-length RDMA Read */
};

/* RTR message types as one mask, independent of where the bits live. */
enum rnic_mpa_rtr {
    RNIC_MPA_RTR_SEND   = 1 << 0,
    RNIC_MPA_RTR_WRITE  = 1 << 1,
    RNIC_MPA_RTR_READ   = 1 << 2,
};

/* ---- MPA FPDU (RFC 5044 §4) ---- */

#define RNIC_MPA_HDR_LEN            2   /* ULPDU_LENGTH */
#define RNIC_MPA_CRC_LEN            4
#define RNIC_MPA_MARKER_LEN         4
#define RNIC_MPA_MARKER_INTERVAL    512
#define RNIC_MPA_ULPDU_MAX          0xffff

struct rnic_mpa_marker {
    uint16_t rsvd;
    uint16_t fpduptr;   /* back to this FPDU's ULPDU_LENGTH field */
} RNIC_PACKED;

/* Pad so that ULPDU_LENGTH + ULPDU + pad is a multiple of 4. */
static inline unsigned rnic_mpa_pad_len(size_t ulpdu_len)
{
    return (unsigned)(-(ulpdu_len + RNIC_MPA_HDR_LEN) & 3);
}

/* ---- DDP (RFC 5041 §4) ---- */

#define RNIC_DDP_VERSION    1
#define RNIC_RDMAP_VERSION  1

enum rnic_ddp_ctrl_bits {
    RNIC_DDP_FLAG_T     = 0x80,     /* tagged buffer model */
    RNIC_DDP_FLAG_L     = 0x40,     /* last segment of the message */
    RNIC_DDP_RSVD_MASK  = 0x3c,
    RNIC_DDP_DV_MASK    = 0x03,
};

enum rnic_rdmap_ctrl_bits {
    RNIC_RDMAP_RV_SHIFT     = 6,
    RNIC_RDMAP_RSVD_MASK    = 0x30,
    RNIC_RDMAP_OPCODE_MASK  = 0x0f,
};

struct rnic_ddp_tagged_hdr {
    uint8_t ddp_ctrl;
    uint8_t rdmap_ctrl;
    uint32_t stag;
    uint64_t to;
} RNIC_PACKED;

struct rnic_ddp_untagged_hdr {
    uint8_t ddp_ctrl;
    uint8_t rdmap_ctrl;
    uint32_t rsvd_ulp;          /* RDMAP: reserved, or Invalidate STag */
    uint32_t qn;
    uint32_t msn;
    uint32_t mo;
} RNIC_PACKED;

/* Untagged queues (RFC 5040 §5.1, RFC 7306 §5) */
enum rnic_ddp_qn {
    RNIC_DDP_QN_SEND        = 0,
    RNIC_DDP_QN_READ_REQ    = 1,
    RNIC_DDP_QN_TERMINATE   = 2,
    RNIC_DDP_QN_ATOMIC      = 3,
};

/* ---- RDMAP (RFC 5040 §4, RFC 7306 §8) ---- */

enum rnic_rdmap_opcode {
    RNIC_RDMAP_WRITE            = 0x0,
    RNIC_RDMAP_READ_REQ         = 0x1,
    RNIC_RDMAP_READ_RESP        = 0x2,
    RNIC_RDMAP_SEND             = 0x3,
    RNIC_RDMAP_SEND_INV         = 0x4,
    RNIC_RDMAP_SEND_SE          = 0x5,
    RNIC_RDMAP_SEND_SE_INV      = 0x6,
    RNIC_RDMAP_TERMINATE        = 0x7,
    RNIC_RDMAP_IMM_DATA         = 0x8,
    RNIC_RDMAP_IMM_DATA_SE      = 0x9,
    RNIC_RDMAP_ATOMIC_REQ       = 0xa,
    RNIC_RDMAP_ATOMIC_RESP      = 0xb,
    RNIC_RDMAP_OPCODE_COUNT
};

/* Read Request body, after the untagged header on QN 1 (RFC 5040 §4.4) */
struct rnic_rdmap_read_req {
    uint32_t sink_stag;
    uint64_t sink_to;
    uint32_t size;
    uint32_t src_stag;
    uint64_t src_to;
} RNIC_PACKED;

/* Immediate Data message payload (RFC 7306 §7) */
#define RNIC_RDMAP_IMM_DATA_LEN 8

enum rnic_atomic_opcode {
    RNIC_ATOMIC_FETCH_ADD   = 0x0,
    RNIC_ATOMIC_CMP_SWAP    = 0x2,
};

/* Atomic Request body (RFC 7306 §6.2) */
struct rnic_rdmap_atomic_req {
    uint32_t opcode;            /* 28 reserved bits, 4-bit atomic opcode */
    uint32_t req_id;
    uint32_t stag;
    uint64_t to;
    uint64_t add_swap;
    uint64_t add_swap_mask;
    uint64_t compare;
    uint64_t compare_mask;
} RNIC_PACKED;

/* Atomic Response body (RFC 7306 §6.3) */
struct rnic_rdmap_atomic_resp {
    uint32_t req_id;
    uint64_t orig_value;
} RNIC_PACKED;

/*
 * Terminate (RFC 5040 §4.8): this control word, then the DDP Segment
 * Length (be16, when M) of the offending segment, then a copy of its DDP
 * header (when D) and of its RDMAP Read Request header (when R).
 */
struct rnic_rdmap_terminate {
    uint8_t layer_etype;        /* layer << 4 | etype */
    uint8_t ecode;
    uint8_t hdrct;
    uint8_t rsvd;
} RNIC_PACKED;

enum rnic_term_hdrct {
    RNIC_TERM_HDRCT_M = 0x80,   /* DDP Segment Length valid */
    RNIC_TERM_HDRCT_D = 0x40,   /* DDP header included */
    RNIC_TERM_HDRCT_R = 0x20,   /* RDMAP header included */
};

/* ---- Terminate error codes (RFC 5040 §7, RFC 5041 §7, RFC 5044 §8) ---- */

enum rnic_term_layer {
    RNIC_TERM_LAYER_RDMAP   = 0x0,
    RNIC_TERM_LAYER_DDP     = 0x1,
    RNIC_TERM_LAYER_LLP     = 0x2,
};

enum rnic_rdmap_etype {
    RNIC_RDMAP_ETYPE_LOCAL_CATASTROPHIC = 0x0,
    RNIC_RDMAP_ETYPE_REMOTE_PROTECTION  = 0x1,
    RNIC_RDMAP_ETYPE_REMOTE_OPERATION   = 0x2,
};

enum rnic_rdmap_ecode {
    RNIC_RDMAP_ECODE_INVALID_STAG       = 0x00,
    RNIC_RDMAP_ECODE_BASE_BOUNDS        = 0x01,
    RNIC_RDMAP_ECODE_ACCESS_RIGHTS      = 0x02,
    RNIC_RDMAP_ECODE_STAG_NOT_ASSOC     = 0x03,
    RNIC_RDMAP_ECODE_TO_WRAP            = 0x04,
    RNIC_RDMAP_ECODE_INVALID_VERSION    = 0x05,
    RNIC_RDMAP_ECODE_UNEXPECTED_OPCODE  = 0x06,
    RNIC_RDMAP_ECODE_CATASTROPHIC_STREAM = 0x07,
    RNIC_RDMAP_ECODE_CATASTROPHIC_GLOBAL = 0x08,
    RNIC_RDMAP_ECODE_CANNOT_INVALIDATE  = 0x09,
    RNIC_RDMAP_ECODE_UNSPECIFIED        = 0xff,
};

enum rnic_ddp_etype {
    RNIC_DDP_ETYPE_LOCAL_CATASTROPHIC   = 0x0,
    RNIC_DDP_ETYPE_TAGGED               = 0x1,
    RNIC_DDP_ETYPE_UNTAGGED             = 0x2,
    RNIC_DDP_ETYPE_RSVD_LLP             = 0x3,
};

enum rnic_ddp_tagged_ecode {
    RNIC_DDP_T_ECODE_INVALID_STAG       = 0x00,
    RNIC_DDP_T_ECODE_BASE_BOUNDS        = 0x01,
    RNIC_DDP_T_ECODE_STAG_NOT_ASSOC     = 0x02,
    RNIC_DDP_T_ECODE_TO_WRAP            = 0x03,
    RNIC_DDP_T_ECODE_INVALID_VERSION    = 0x04,
};

enum rnic_ddp_untagged_ecode {
    RNIC_DDP_U_ECODE_INVALID_QN         = 0x01,
    RNIC_DDP_U_ECODE_MSN_NO_BUFFER      = 0x02,
    RNIC_DDP_U_ECODE_MSN_RANGE          = 0x03,
    RNIC_DDP_U_ECODE_INVALID_MO         = 0x04,
    RNIC_DDP_U_ECODE_TOO_LONG           = 0x05,
    RNIC_DDP_U_ECODE_INVALID_VERSION    = 0x06,
};

enum rnic_llp_etype {
    RNIC_LLP_ETYPE_MPA = 0x0,
};

enum rnic_mpa_ecode {
    RNIC_MPA_ECODE_TCP_LOST             = 0x01,
    RNIC_MPA_ECODE_CRC                  = 0x02,
    RNIC_MPA_ECODE_MARKER               = 0x03, /* vs. ULPDU_LENGTH */
    RNIC_MPA_ECODE_INVALID_REQ_REP      = 0x04,
    RNIC_MPA_ECODE_LOCAL_CATASTROPHIC   = 0x05, /* RFC 6581 */
    RNIC_MPA_ECODE_INSUFFICIENT_IRD     = 0x06, /* RFC 6581 */
    RNIC_MPA_ECODE_NO_MATCHING_RTR      = 0x07, /* RFC 6581 */
};

/* What a Terminate reports, before it is laid out on the wire. */
struct rnic_term_code {
    uint8_t layer;
    uint8_t etype;
    uint8_t ecode;
};

static inline struct rnic_term_code rnic_term_mpa(enum rnic_mpa_ecode ecode)
{
    return (struct rnic_term_code) {
        RNIC_TERM_LAYER_LLP, RNIC_LLP_ETYPE_MPA, ecode,
    };
}

/* ---- DDP/RDMAP header as fields ---- */

/*
 * Every field of a DDP segment's header, reserved bits included, so that
 * decoding and encoding again reproduces the wire bytes exactly.
 */
struct rnic_ddp_hdr {
    bool tagged;
    bool last;
    uint8_t ddp_rsvd;       /* the 4 reserved control bits */
    uint8_t ddp_version;
    uint8_t rdmap_version;
    uint8_t rdmap_rsvd;     /* the 2 reserved control bits */
    uint8_t opcode;
    uint32_t stag;          /* tagged */
    uint64_t to;
    uint32_t rsvd_ulp;      /* untagged: Invalidate STag or reserved */
    uint32_t qn;
    uint32_t msn;
    uint32_t mo;
};

static inline size_t rnic_ddp_hdr_len(bool tagged)
{
    return tagged ? sizeof(struct rnic_ddp_tagged_hdr)
                  : sizeof(struct rnic_ddp_untagged_hdr);
}

/* Decode the header at the start of a ULPDU; its length, or 0 if short. */
static inline size_t rnic_ddp_hdr_decode(struct rnic_ddp_hdr *h,
                                         const uint8_t *buf, size_t len)
{
    size_t hlen;

    if (len < 2) {
        return 0;
    }
    h->tagged = buf[0] & RNIC_DDP_FLAG_T;
    h->last = buf[0] & RNIC_DDP_FLAG_L;
    h->ddp_rsvd = (buf[0] & RNIC_DDP_RSVD_MASK) >> 2;
    h->ddp_version = buf[0] & RNIC_DDP_DV_MASK;
    h->rdmap_version = buf[1] >> RNIC_RDMAP_RV_SHIFT;
    h->rdmap_rsvd = (buf[1] & RNIC_RDMAP_RSVD_MASK) >> 4;
    h->opcode = buf[1] & RNIC_RDMAP_OPCODE_MASK;
    hlen = rnic_ddp_hdr_len(h->tagged);
    if (len < hlen) {
        return 0;
    }
    if (h->tagged) {
        const struct rnic_ddp_tagged_hdr *t = (const void *)buf;

        h->stag = rnic_ld_be32(&t->stag);
        h->to = rnic_ld_be64(&t->to);
    } else {
        const struct rnic_ddp_untagged_hdr *u = (const void *)buf;

        h->rsvd_ulp = rnic_ld_be32(&u->rsvd_ulp);
        h->qn = rnic_ld_be32(&u->qn);
        h->msn = rnic_ld_be32(&u->msn);
        h->mo = rnic_ld_be32(&u->mo);
    }
    return hlen;
}

/* Encode into @buf (room for the untagged header); the length written. */
static inline size_t rnic_ddp_hdr_encode(const struct rnic_ddp_hdr *h,
                                         uint8_t *buf)
{
    buf[0] = (h->tagged ? RNIC_DDP_FLAG_T : 0) |
             (h->last ? RNIC_DDP_FLAG_L : 0) |
             ((h->ddp_rsvd << 2) & RNIC_DDP_RSVD_MASK) |
             (h->ddp_version & RNIC_DDP_DV_MASK);
    buf[1] = (uint8_t)(h->rdmap_version << RNIC_RDMAP_RV_SHIFT) |
             ((h->rdmap_rsvd << 4) & RNIC_RDMAP_RSVD_MASK) |
             (h->opcode & RNIC_RDMAP_OPCODE_MASK);
    if (h->tagged) {
        struct rnic_ddp_tagged_hdr *t = (void *)buf;

        rnic_st_be32(&t->stag, h->stag);
        rnic_st_be64(&t->to, h->to);
    } else {
        struct rnic_ddp_untagged_hdr *u = (void *)buf;

        rnic_st_be32(&u->rsvd_ulp, h->rsvd_ulp);
        rnic_st_be32(&u->qn, h->qn);
        rnic_st_be32(&u->msn, h->msn);
        rnic_st_be32(&u->mo, h->mo);
    }
    return rnic_ddp_hdr_len(h->tagged);
}

_Static_assert(sizeof(struct rnic_mpa_rr) == 20, "MPA frame header");
_Static_assert(sizeof(struct rnic_mpa_v2_pd) == 4, "RFC 6581 prefix");
_Static_assert(sizeof(struct rnic_mpa_marker) == 4, "MPA marker");
_Static_assert(sizeof(struct rnic_ddp_tagged_hdr) == 14, "DDP tagged");
_Static_assert(sizeof(struct rnic_ddp_untagged_hdr) == 18, "DDP untagged");
_Static_assert(sizeof(struct rnic_rdmap_read_req) == 28, "Read Request");
_Static_assert(sizeof(struct rnic_rdmap_atomic_req) == 52, "Atomic Request");
_Static_assert(sizeof(struct rnic_rdmap_atomic_resp) == 12, "Atomic Response");
_Static_assert(sizeof(struct rnic_rdmap_terminate) == 4, "Terminate");

#endif /* RNIC_IWARP_H */
