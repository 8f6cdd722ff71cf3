/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>
#include "mpa.h"

#define MPA_HDR_LEN sizeof(struct rnic_mpa_rr)
#define MPA_V2_LEN  sizeof(struct rnic_mpa_v2_pd)

static uint16_t min_u16(uint16_t a, uint16_t b)
{
    return a < b ? a : b;
}

/* Lay out key, flags, revision and private data (prefix + ULP data). */
static int mpa_build(const char *key, uint8_t flags, uint8_t rev,
                     const struct rnic_mpa_v2_pd *v2,
                     const uint8_t *pd, uint16_t pd_len,
                     uint8_t *buf, size_t size)
{
    struct rnic_mpa_rr *rr = (void *)buf;
    size_t total_pd = pd_len + (v2 ? MPA_V2_LEN : 0);

    if (total_pd > RNIC_MPA_PD_MAX) {
        return RNIC_MPA_ERR_PD_LEN;
    }
    if (size < MPA_HDR_LEN + total_pd) {
        return RNIC_MPA_ERR_PARAM;
    }
    memcpy(rr->key, key, RNIC_MPA_KEY_LEN);
    rr->flags = flags;
    rr->rev = rev;
    rnic_st_be16(&rr->pd_len, (uint16_t)total_pd);
    buf += MPA_HDR_LEN;
    if (v2) {
        memcpy(buf, v2, MPA_V2_LEN);
        buf += MPA_V2_LEN;
    }
    if (pd_len) {
        memcpy(buf, pd, pd_len);
    }
    return (int)(MPA_HDR_LEN + total_pd);
}

static void mpa_v2_encode(struct rnic_mpa_v2_pd *v2, uint16_t ird,
                          uint16_t ord, uint8_t rtr)
{
    uint16_t i = ird & RNIC_MPA_V2_IRD_ORD_MASK;
    uint16_t o = ord & RNIC_MPA_V2_IRD_ORD_MASK;

    if (rtr) {
        i |= RNIC_MPA_V2_IRD_P2P;
    }
    if (rtr & RNIC_MPA_RTR_SEND) {
        i |= RNIC_MPA_V2_IRD_RTR_SEND;
    }
    if (rtr & RNIC_MPA_RTR_WRITE) {
        o |= RNIC_MPA_V2_ORD_RTR_WRITE;
    }
    if (rtr & RNIC_MPA_RTR_READ) {
        o |= RNIC_MPA_V2_ORD_RTR_READ;
    }
    rnic_st_be16(&v2->ird, i);
    rnic_st_be16(&v2->ord, o);
}

static void mpa_v2_decode(const uint8_t *p, struct rnic_mpa_frame *f)
{
    uint16_t i = rnic_ld_be16(p);
    uint16_t o = rnic_ld_be16(p + 2);

    f->ird = i & RNIC_MPA_V2_IRD_ORD_MASK;
    f->ord = o & RNIC_MPA_V2_IRD_ORD_MASK;
    f->p2p = i & RNIC_MPA_V2_IRD_P2P;
    f->rtr = (i & RNIC_MPA_V2_IRD_RTR_SEND ? RNIC_MPA_RTR_SEND : 0) |
             (o & RNIC_MPA_V2_ORD_RTR_WRITE ? RNIC_MPA_RTR_WRITE : 0) |
             (o & RNIC_MPA_V2_ORD_RTR_READ ? RNIC_MPA_RTR_READ : 0);
}

static int mpa_check_params(const struct rnic_mpa_params *p)
{
    const unsigned rtr_all = RNIC_MPA_RTR_SEND | RNIC_MPA_RTR_WRITE |
                             RNIC_MPA_RTR_READ;

    if (p->rev != RNIC_MPA_REV1 && p->rev != RNIC_MPA_REV2) {
        return RNIC_MPA_ERR_PARAM;
    }
    if (p->ird > RNIC_MPA_V2_IRD_ORD_MASK ||
        p->ord > RNIC_MPA_V2_IRD_ORD_MASK || (p->rtr & ~rtr_all)) {
        return RNIC_MPA_ERR_PARAM;
    }
    return RNIC_MPA_OK;
}

int rnic_mpa_build_request(const struct rnic_mpa_params *p,
                           uint8_t *buf, size_t size)
{
    struct rnic_mpa_v2_pd v2;
    uint8_t flags = 0;
    int err = mpa_check_params(p);

    if (err) {
        return err;
    }
    if (p->crc == RNIC_MPA_CRC_REQUIRED) {
        flags |= RNIC_MPA_FLAG_C;
    }
    if (p->markers_wanted) {
        flags |= RNIC_MPA_FLAG_M;
    }
    if (p->rev == RNIC_MPA_REV2) {
        flags |= RNIC_MPA_FLAG_ENHANCED;
        mpa_v2_encode(&v2, p->ird, p->ord, p->rtr);
    }
    return mpa_build(RNIC_MPA_KEY_REQ, flags, p->rev,
                     p->rev == RNIC_MPA_REV2 ? &v2 : NULL,
                     p->pd, p->pd_len, buf, size);
}

int rnic_mpa_build_reply(const struct rnic_mpa_params *p,
                         const struct rnic_mpa_result *res,
                         uint8_t *buf, size_t size)
{
    struct rnic_mpa_v2_pd v2;
    uint8_t flags = 0;

    if (res->crc) {
        flags |= RNIC_MPA_FLAG_C;
    }
    if (res->markers_rx) {
        flags |= RNIC_MPA_FLAG_M;
    }
    if (res->enhanced) {
        flags |= RNIC_MPA_FLAG_ENHANCED;
        mpa_v2_encode(&v2, res->ird, res->ord, res->rtr);
    }
    return mpa_build(RNIC_MPA_KEY_REP, flags, res->rev,
                     res->enhanced ? &v2 : NULL, p->pd, p->pd_len, buf, size);
}

int rnic_mpa_build_reject(uint8_t rev, const uint8_t *reason, uint16_t len,
                          uint8_t *buf, size_t size)
{
    return mpa_build(RNIC_MPA_KEY_REP, RNIC_MPA_FLAG_R, rev, NULL,
                     reason, len, buf, size);
}

/* Key and length check, possible as soon as the fixed header is in. */
static int mpa_check_header(const uint8_t *buf, bool reply)
{
    const struct rnic_mpa_rr *rr = (const void *)buf;
    uint16_t pd_len = rnic_ld_be16(&rr->pd_len);

    if (memcmp(rr->key, reply ? RNIC_MPA_KEY_REP : RNIC_MPA_KEY_REQ,
               RNIC_MPA_KEY_LEN)) {
        return RNIC_MPA_ERR_KEY;
    }
    return pd_len > RNIC_MPA_PD_MAX ? RNIC_MPA_ERR_PD_LEN : pd_len;
}

int rnic_mpa_parse(const uint8_t *buf, size_t len, bool reply,
                   struct rnic_mpa_frame *f)
{
    const struct rnic_mpa_rr *rr = (const void *)f->raw;
    int pd_len;

    if (len < MPA_HDR_LEN) {
        return 0;
    }
    pd_len = mpa_check_header(buf, reply);
    if (pd_len < 0) {
        return pd_len;
    }
    if (len < MPA_HDR_LEN + pd_len) {
        return 0;
    }
    memset(f, 0, offsetof(struct rnic_mpa_frame, raw));
    f->raw_len = MPA_HDR_LEN + pd_len;
    memcpy(f->raw, buf, f->raw_len);
    f->reply = reply;
    f->flags = rr->flags;
    f->rev = rr->rev;
    f->pd = f->raw + MPA_HDR_LEN;
    f->pd_len = pd_len;
    if (f->rev == RNIC_MPA_REV2 && (f->flags & RNIC_MPA_FLAG_ENHANCED)) {
        if (pd_len < (int)MPA_V2_LEN) {
            return RNIC_MPA_ERR_ENHANCED;
        }
        f->enhanced = true;
        mpa_v2_decode(f->pd, f);
        f->pd += MPA_V2_LEN;
        f->pd_len -= MPA_V2_LEN;
    }
    return (int)f->raw_len;
}

/* CRC: either side's C bit turns it on (RFC 5044 §7.1). */
static int mpa_negotiate_crc(enum rnic_mpa_crc_policy policy, bool peer_asks,
                             bool *crc)
{
    if (policy == RNIC_MPA_CRC_OFF && peer_asks) {
        return RNIC_MPA_ERR_CRC;
    }
    *crc = peer_asks || policy == RNIC_MPA_CRC_REQUIRED;
    return RNIC_MPA_OK;
}

/* RFC 6581 IRD/ORD: never send more Read Requests than the peer takes. */
static int mpa_negotiate_ird_ord(const struct rnic_mpa_params *local,
                                 const struct rnic_mpa_frame *peer,
                                 struct rnic_mpa_result *res)
{
    res->peer_ird = peer->ird;
    res->peer_ord = peer->ord;
    res->ird = local->ird;
    res->ord = min_u16(local->ord, peer->ird);
    if (local->strict_ird && peer->ord > local->ird) {
        return RNIC_MPA_ERR_IRD;
    }
    return RNIC_MPA_OK;
}

/* Markers: each side's M bit asks the other to insert them. */
static int mpa_negotiate_markers(const struct rnic_mpa_params *local,
                                 const struct rnic_mpa_frame *peer,
                                 struct rnic_mpa_result *res)
{
    res->markers_tx = peer->flags & RNIC_MPA_FLAG_M;
    res->markers_rx = local->markers_wanted;
    return res->markers_tx && !local->markers_allowed ?
           RNIC_MPA_ERR_MARKERS : RNIC_MPA_OK;
}

/* Markers, CRC and IRD/ORD are decided alike by both sides. */
static int mpa_negotiate_common(const struct rnic_mpa_params *local,
                                const struct rnic_mpa_frame *peer,
                                struct rnic_mpa_result *res)
{
    int err = mpa_negotiate_markers(local, peer, res);

    if (!err) {
        err = mpa_negotiate_crc(local->crc, peer->flags & RNIC_MPA_FLAG_C,
                                &res->crc);
    }
    if (!err && res->enhanced) {
        err = mpa_negotiate_ird_ord(local, peer, res);
    } else if (!err) {
        /* Nothing exchanged: each side keeps the limits it asked for. */
        res->ird = local->ird;
        res->ord = local->ord;
    }
    return err;
}

/*
 * RFC 6581 peer-to-peer mode, responder side: the Reply names exactly one
 * of the RTR types the Request offered.  Preference goes to the one that
 * costs least: a zero-length Write (nothing to answer, no receive used),
 * then a Read (one empty Read Response), then a Send (as siw prefers
 * Write to Read).  A peer-to-peer Request none of whose types we take is
 * refused: a Reply without peer-to-peer mode would leave an initiator
 * that needs it to Terminate anyway.  One that offers no type at all
 * (siw built with peer_to_peer and rtr_type MPA_V2_RDMA_NO_RTR) will not
 * send an RTR whatever we answer, so it gets client-server mode.
 */
static int mpa_choose_rtr(uint8_t ours, const struct rnic_mpa_frame *req,
                          uint8_t *rtr)
{
    static const uint8_t pref[] = {
        RNIC_MPA_RTR_WRITE, RNIC_MPA_RTR_READ, RNIC_MPA_RTR_SEND,
    };

    *rtr = 0;
    if (!req->p2p || !req->rtr) {
        return RNIC_MPA_OK;
    }
    for (size_t i = 0; i < sizeof(pref); i++) {
        if (ours & req->rtr & pref[i]) {
            *rtr = pref[i];
            return RNIC_MPA_OK;
        }
    }
    return RNIC_MPA_ERR_RTR;
}

/* Both sides first check their own parameters and the peer's revision. */
static int mpa_negotiate_start(const struct rnic_mpa_params *local,
                               uint8_t peer_rev, uint8_t max_rev,
                               struct rnic_mpa_result *res)
{
    int err = mpa_check_params(local);

    memset(res, 0, sizeof(*res));
    if (err) {
        return err;
    }
    if (peer_rev < RNIC_MPA_REV1 || peer_rev > max_rev) {
        return RNIC_MPA_ERR_REVISION;
    }
    return RNIC_MPA_OK;
}

int rnic_mpa_negotiate_request(const struct rnic_mpa_params *local,
                               const struct rnic_mpa_frame *req,
                               struct rnic_mpa_result *res)
{
    int err = mpa_negotiate_start(local, req->rev, RNIC_MPA_REV2, res);

    if (err) {
        return err;
    }
    res->rev = req->rev < local->rev ? req->rev : local->rev;
    res->enhanced = res->rev == RNIC_MPA_REV2 && req->enhanced;
    err = mpa_negotiate_common(local, req, res);
    return err ? err : mpa_choose_rtr(local->rtr, req, &res->rtr);
}

static int mpa_check_reply_rtr(const struct rnic_mpa_params *local,
                               const struct rnic_mpa_frame *rep,
                               struct rnic_mpa_result *res)
{
    res->rtr = 0;
    if (!rep->p2p) {
        return RNIC_MPA_OK;
    }
    /* exactly one type, and one we offered */
    if ((rep->rtr & (rep->rtr - 1)) || !(rep->rtr & local->rtr)) {
        return RNIC_MPA_ERR_RTR;
    }
    res->rtr = rep->rtr;
    return RNIC_MPA_OK;
}

int rnic_mpa_negotiate_reply(const struct rnic_mpa_params *local,
                             const struct rnic_mpa_frame *rep,
                             struct rnic_mpa_result *res)
{
    int err = mpa_negotiate_start(local, rep->rev, local->rev, res);

    if (rep->flags & RNIC_MPA_FLAG_R) {
        return RNIC_MPA_ERR_REJECTED;
    }
    if (err) {
        return err;
    }
    res->rev = rep->rev;
    /* as siw: a rev 2 Reply to our enhanced Request must be enhanced too */
    if (rep->rev == RNIC_MPA_REV2 && !rep->enhanced) {
        return RNIC_MPA_ERR_ENHANCED;
    }
    res->enhanced = rep->enhanced;
    err = mpa_negotiate_common(local, rep, res);
    return err ? err : mpa_check_reply_rtr(local, rep, res);
}

struct rnic_term_code rnic_mpa_err_to_term(int err)
{
    switch (err) {
    case RNIC_MPA_ERR_IRD:
        return rnic_term_mpa(RNIC_MPA_ECODE_INSUFFICIENT_IRD);
    case RNIC_MPA_ERR_RTR:
        return rnic_term_mpa(RNIC_MPA_ECODE_NO_MATCHING_RTR);
    case RNIC_MPA_ERR_PARAM:
        return rnic_term_mpa(RNIC_MPA_ECODE_LOCAL_CATASTROPHIC);
    default:
        return rnic_term_mpa(RNIC_MPA_ECODE_INVALID_REQ_REP);
    }
}

const char *rnic_mpa_strerror(int err)
{
    static const char *const msg[] = {
        [-RNIC_MPA_OK] = "ok",
        [-RNIC_MPA_ERR_KEY] = "bad MPA key",
        [-RNIC_MPA_ERR_REVISION] = "unsupported MPA revision",
        [-RNIC_MPA_ERR_PD_LEN] = "private data longer than 512",
        [-RNIC_MPA_ERR_MARKERS] = "markers not supported",
        [-RNIC_MPA_ERR_CRC] = "CRC policy mismatch",
        [-RNIC_MPA_ERR_ENHANCED] = "rev 2 frame without RFC 6581 data",
        [-RNIC_MPA_ERR_IRD] = "insufficient IRD",
        [-RNIC_MPA_ERR_RTR] = "no matching RTR type",
        [-RNIC_MPA_ERR_REJECTED] = "connection rejected by peer",
        [-RNIC_MPA_ERR_PARAM] = "invalid local MPA parameters",
    };

    if (err > 0 || -err >= (int)(sizeof(msg) / sizeof(msg[0]))) {
        return "unknown MPA error";
    }
    return msg[-err];
}

int rnic_mpa_conn_init(struct rnic_mpa_conn *c, bool initiator,
                       const struct rnic_mpa_params *local)
{
    int len = 0;

    memset(c, 0, sizeof(*c));
    c->initiator = initiator;
    c->local = *local;
    c->state = RNIC_MPA_WAIT_FRAME;
    len = initiator ? rnic_mpa_build_request(local, c->out, sizeof(c->out))
                    : mpa_check_params(local);
    if (len < 0) {
        c->state = RNIC_MPA_FAILED;
        c->err = len;
        return len;
    }
    c->out_len = len;
    return RNIC_MPA_OK;
}

static int mpa_conn_fail(struct rnic_mpa_conn *c, int err)
{
    c->state = RNIC_MPA_FAILED;
    c->err = err;
    c->out_len = 0;
    if (c->initiator && rnic_mpa_err_is_term(err)) {
        int len = rnic_mpa_build_term(&c->result, err, c->out,
                                      sizeof(c->out));

        c->out_len = len > 0 ? (size_t)len : 0;
    }
    /* a stream that is not MPA at all gets no Reply */
    if (!c->initiator && err != RNIC_MPA_ERR_KEY) {
        const char *why = rnic_mpa_strerror(err);
        int len = rnic_mpa_build_reject(c->result.rev ? c->result.rev
                                                      : c->local.rev,
                                        (const uint8_t *)why,
                                        (uint16_t)strlen(why),
                                        c->out, sizeof(c->out));

        c->out_len = len > 0 ? (size_t)len : 0;
    }
    return err;
}

/* The peer's frame is complete in c->in: decide, and answer if responder. */
static int mpa_conn_frame_done(struct rnic_mpa_conn *c)
{
    int ret = rnic_mpa_parse(c->in, c->in_len, c->initiator, &c->peer);

    if (ret < 0) {
        return mpa_conn_fail(c, ret);
    }
    if (c->initiator) {
        ret = rnic_mpa_negotiate_reply(&c->local, &c->peer, &c->result);
        c->out_len = 0;
    } else {
        ret = rnic_mpa_negotiate_request(&c->local, &c->peer, &c->result);
        if (!ret) {
            ret = rnic_mpa_build_reply(&c->local, &c->result, c->out,
                                       sizeof(c->out));
        }
        if (ret > 0) {
            c->out_len = ret;
            ret = RNIC_MPA_OK;
        }
    }
    if (ret < 0) {
        return mpa_conn_fail(c, ret);
    }
    c->state = RNIC_MPA_DONE;
    return c->state;
}

int rnic_mpa_conn_input(struct rnic_mpa_conn *c, const void *data,
                        size_t len, size_t *used)
{
    const uint8_t *p = data;
    size_t need = MPA_HDR_LEN;

    *used = 0;
    if (c->state != RNIC_MPA_WAIT_FRAME) {
        return c->state == RNIC_MPA_FAILED ? c->err : (int)c->state;
    }
    for (;;) {
        size_t take;

        if (c->in_len >= MPA_HDR_LEN) {
            int pd_len = mpa_check_header(c->in, c->initiator);

            if (pd_len < 0) {
                return mpa_conn_fail(c, pd_len);
            }
            need = MPA_HDR_LEN + pd_len;
        }
        if (c->in_len == need) {
            return mpa_conn_frame_done(c);
        }
        take = need - c->in_len;
        if (take > len - *used) {
            take = len - *used;
        }
        if (!take) {
            return c->state;
        }
        memcpy(c->in + c->in_len, p + *used, take);
        c->in_len += take;
        *used += take;
    }
}
