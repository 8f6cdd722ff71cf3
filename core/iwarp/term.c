/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Terminate messages (RFC 5040 sections 4.8 and 7): laying out and
 * decoding the body, and mapping every error the engine meets to the
 * layer / error type / error code a Terminate reports.
 */
#include <errno.h>
#include <string.h>
#include "engine_internal.h"

/* Errors whose offending segment cannot be decoded as a DDP header. */
static bool term_layout_unknown(struct rnic_term_code code)
{
    if (code.layer == RNIC_TERM_LAYER_LLP) {
        return true;        /* the framing itself is lost */
    }
    if (code.layer == RNIC_TERM_LAYER_RDMAP) {
        return code.etype == RNIC_RDMAP_ETYPE_LOCAL_CATASTROPHIC;
    }
    return (code.etype == RNIC_DDP_ETYPE_TAGGED &&
            code.ecode == RNIC_DDP_T_ECODE_INVALID_VERSION) ||
           (code.etype == RNIC_DDP_ETYPE_UNTAGGED &&
            code.ecode == RNIC_DDP_U_ECODE_INVALID_VERSION);
}

/*
 * RFC 5040 section 7.1: the DDP header (and segment length) of the
 * offending segment whenever it can be trusted; the RDMAP header too when
 * the segment is an RDMA Read Request.
 */
size_t rnic_term_build(uint8_t *body, struct rnic_term_code code,
                       const uint8_t *seg, size_t avail, size_t seg_len)
{
    struct rnic_rdmap_terminate *t = (void *)body;
    struct rnic_ddp_hdr h;
    size_t hlen = 0;
    size_t len = sizeof(*t);

    t->layer_etype = (uint8_t)(code.layer << 4 | (code.etype & 0xf));
    t->ecode = code.ecode;
    t->hdrct = 0;
    t->rsvd = 0;
    if (seg && !term_layout_unknown(code)) {
        hlen = rnic_ddp_hdr_decode(&h, seg, avail);
    }
    if (!hlen) {
        return len;
    }
    t->hdrct = RNIC_TERM_HDRCT_M | RNIC_TERM_HDRCT_D;
    rnic_st_be16(body + len, (uint16_t)seg_len);
    len += 2;
    memcpy(body + len, seg, hlen);
    len += hlen;
    if (!h.tagged && h.opcode == RNIC_RDMAP_READ_REQ &&
        avail >= hlen + sizeof(struct rnic_rdmap_read_req)) {
        t->hdrct |= RNIC_TERM_HDRCT_R;
        memcpy(body + len, seg + hlen, sizeof(struct rnic_rdmap_read_req));
        len += sizeof(struct rnic_rdmap_read_req);
    }
    return len;
}

int rnic_term_parse(const uint8_t *body, size_t len,
                    struct rnic_term_info *info)
{
    const struct rnic_rdmap_terminate *t = (const void *)body;
    size_t off = sizeof(*t);

    memset(info, 0, sizeof(*info));
    if (len < off) {
        return -EINVAL;
    }
    info->code.layer = t->layer_etype >> 4;
    info->code.etype = t->layer_etype & 0xf;
    info->code.ecode = t->ecode;
    info->hdrct = t->hdrct & (RNIC_TERM_HDRCT_M | RNIC_TERM_HDRCT_D |
                              RNIC_TERM_HDRCT_R);
    if (info->hdrct & RNIC_TERM_HDRCT_M) {
        if (len < off + 2) {
            return -EINVAL;
        }
        info->seg_len = rnic_ld_be16(body + off);
        off += 2;
    }
    if (info->hdrct & RNIC_TERM_HDRCT_D) {
        size_t hlen = rnic_ddp_hdr_decode(&info->ddp, body + off, len - off);

        if (!hlen) {
            return -EINVAL;
        }
        off += hlen;
    }
    if (info->hdrct & RNIC_TERM_HDRCT_R) {
        if (len < off + sizeof(info->rreq)) {
            return -EINVAL;
        }
        memcpy(&info->rreq, body + off, sizeof(info->rreq));
    }
    return 0;
}

static enum rnic_wc_status term_rdmap_status(uint8_t etype, uint8_t ecode)
{
    if (etype == RNIC_RDMAP_ETYPE_REMOTE_PROTECTION) {
        return RNIC_WC_REM_ACCESS_ERR;
    }
    if (etype == RNIC_RDMAP_ETYPE_REMOTE_OPERATION &&
        (ecode == RNIC_RDMAP_ECODE_INVALID_VERSION ||
         ecode == RNIC_RDMAP_ECODE_UNEXPECTED_OPCODE ||
         ecode == RNIC_RDMAP_ECODE_CANNOT_INVALIDATE)) {
        return RNIC_WC_REM_INV_REQ_ERR;
    }
    return RNIC_WC_REM_OP_ERR;
}

enum rnic_wc_status rnic_term_wc_status(struct rnic_term_code code)
{
    switch (code.layer) {
    case RNIC_TERM_LAYER_RDMAP:
        return term_rdmap_status(code.etype, code.ecode);
    case RNIC_TERM_LAYER_DDP:
        if (code.etype == RNIC_DDP_ETYPE_TAGGED) {
            return RNIC_WC_REM_ACCESS_ERR;
        }
        if (code.etype == RNIC_DDP_ETYPE_UNTAGGED) {
            return code.ecode == RNIC_DDP_U_ECODE_MSN_NO_BUFFER ?
                   RNIC_WC_REM_OP_ERR : RNIC_WC_REM_INV_REQ_ERR;
        }
        return RNIC_WC_REM_OP_ERR;
    default:
        return RNIC_WC_REM_OP_ERR;
    }
}

enum rnic_wc_status rnic_term_local_status(enum rnic_stag_status st)
{
    switch (st) {
    case RNIC_STAG_ERR_INVALID_STAG:
    case RNIC_STAG_ERR_NOT_ASSOCIATED:
        return RNIC_WC_LOC_PROT_ERR;
    case RNIC_STAG_ERR_ACCESS:
        return RNIC_WC_LOC_ACCESS_ERR;
    case RNIC_STAG_ERR_BASE_BOUNDS:
    case RNIC_STAG_ERR_TO_WRAP:
        return RNIC_WC_LOC_LEN_ERR;
    case RNIC_STAG_ERR_CANNOT_INVALIDATE:
        return RNIC_WC_LOC_QP_OP_ERR;
    case RNIC_STAG_ERR_DMA:
        return RNIC_WC_LOC_ACCESS_ERR;
    default:
        return RNIC_WC_GENERAL_ERR;
    }
}

struct rnic_term_code rnic_term_stag_error(enum rnic_stag_status st,
                                           bool ddp)
{
    int ecode = ddp ? rnic_stag_ddp_ecode(st) : -1;
    uint8_t etype, rcode;

    if (ecode >= 0) {
        return rnic_term_ddp(RNIC_DDP_ETYPE_TAGGED, (uint8_t)ecode);
    }
    if (rnic_stag_rdmap_error(st, &etype, &rcode)) {
        return rnic_term_rdmap(etype, rcode);
    }
    /* Guest memory we cannot reach is our failure, not the peer's. */
    return rnic_term_rdmap(RNIC_RDMAP_ETYPE_LOCAL_CATASTROPHIC,
                           RNIC_RDMAP_ECODE_UNSPECIFIED);
}

static const struct {
    struct rnic_term_code code;
    const char *name;
} term_names[] = {
    { { 0, 0, 0xff }, "RDMAP local catastrophic" },
    { { 0, 1, 0x00 }, "RDMAP invalid STag" },
    { { 0, 1, 0x01 }, "RDMAP base or bounds violation" },
    { { 0, 1, 0x02 }, "RDMAP access rights violation" },
    { { 0, 1, 0x03 }, "RDMAP STag not associated" },
    { { 0, 1, 0x04 }, "RDMAP TO wrap" },
    { { 0, 2, 0x05 }, "RDMAP invalid version" },
    { { 0, 2, 0x06 }, "RDMAP unexpected opcode" },
    { { 0, 2, 0x07 }, "RDMAP catastrophic, stream" },
    { { 0, 2, 0x08 }, "RDMAP catastrophic, global" },
    { { 0, 2, 0x09 }, "RDMAP STag cannot be invalidated" },
    { { 0, 2, 0xff }, "RDMAP unspecified" },
    { { 1, 0, 0x00 }, "DDP local catastrophic" },
    { { 1, 1, 0x00 }, "DDP tagged invalid STag" },
    { { 1, 1, 0x01 }, "DDP tagged base or bounds" },
    { { 1, 1, 0x02 }, "DDP tagged STag not associated" },
    { { 1, 1, 0x03 }, "DDP tagged TO wrap" },
    { { 1, 1, 0x04 }, "DDP tagged invalid version" },
    { { 1, 2, 0x01 }, "DDP untagged invalid QN" },
    { { 1, 2, 0x02 }, "DDP untagged no buffer" },
    { { 1, 2, 0x03 }, "DDP untagged invalid MSN" },
    { { 1, 2, 0x04 }, "DDP untagged invalid MO" },
    { { 1, 2, 0x05 }, "DDP untagged message too long" },
    { { 1, 2, 0x06 }, "DDP untagged invalid version" },
    { { 2, 0, 0x01 }, "MPA TCP connection lost" },
    { { 2, 0, 0x02 }, "MPA CRC error" },
    { { 2, 0, 0x03 }, "MPA marker error" },
    { { 2, 0, 0x04 }, "MPA invalid request/reply" },
    { { 2, 0, 0x05 }, "MPA local catastrophic" },
    { { 2, 0, 0x06 }, "MPA insufficient IRD" },
    { { 2, 0, 0x07 }, "MPA no matching RTR" },
};

const char *rnic_term_code_str(struct rnic_term_code code)
{
    for (size_t i = 0; i < sizeof(term_names) / sizeof(term_names[0]); i++) {
        if (rnic_term_code_eq(term_names[i].code, code)) {
            return term_names[i].name;
        }
    }
    return "unknown Terminate code";
}
