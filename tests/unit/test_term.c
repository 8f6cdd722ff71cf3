/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Every Terminate the engine can send: a crafted offending frame is fed
 * to one endpoint (the device under test), and the Terminate it sends is
 * decoded and checked octet by octet (layer, error type, code, HdrCt,
 * copied headers), with guest memory unchanged and the QP in TERMINATE.
 * Then the other way: Terminates received and reported.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include "suites.h"
#include "support/epfix.h"

#define REGION_OFF  ((uint64_t)1 << 20)
#define REGION_LEN  65536u
#define RECV_OFF    ((uint64_t)3 << 20)
#define QPN         20u

static struct epf_side D;           /* device under test, responder */
static struct rnic_fpdu_tx peer;    /* frames what we feed it */
static struct epf_capture cap;
static uint8_t *before;             /* guest memory when the frame came */

/* STags the cases name, registered in setup */
enum {
    S_WRITE,        /* REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC */
    S_RO,           /* REMOTE_READ only */
    S_OTHER_PD,     /* all rights, other PD */
    S_NOINV,        /* not remotely invalidatable */
    S_BOGUS,        /* never registered */
    S_COUNT,
};
static uint32_t stags[S_COUNT];

static void start(bool markers, uint8_t rtr)
{
    struct epf_params p = { .atomics = true };
    struct epf_params dummy;
    unsigned all = RNIC_ACCESS_REMOTE_ALL | RNIC_ACCESS_LOCAL_WRITE;
    uint32_t pd1, pd2;

    epf_mpa_pair(true, markers, rtr, 4, &p.mpa, &dummy.mpa);
    epf_init(&D, &p, QPN);
    rnic_fpdu_tx_init(&peer, true, markers);
    epf_capture_init(&cap, true, markers);
    stags[S_WRITE] = epf_mr(&D, REGION_OFF, REGION_LEN, all,
                            RNIC_STAG_PERSISTENT, true);
    stags[S_RO] = epf_mr(&D, REGION_OFF, REGION_LEN, RNIC_ACCESS_REMOTE_READ,
                         RNIC_STAG_PERSISTENT, true);
    stags[S_NOINV] = epf_mr(&D, REGION_OFF, REGION_LEN, all,
                            RNIC_STAG_PERSISTENT, false);
    ck_assert_int_eq(rnic_pd_alloc(D.stags, &pd2), RNIC_STAG_OK);
    pd1 = D.pd;
    D.pd = pd2;
    stags[S_OTHER_PD] = epf_mr(&D, REGION_OFF, REGION_LEN, all,
                               RNIC_STAG_PERSISTENT, true);
    D.pd = pd1;
    stags[S_BOGUS] = rnic_stag_make(200, 0x77);
    for (size_t i = 0; i < EPF_SIZE; i++) {
        epf_ptr(&D, 0)[i] = (uint8_t)(i * 13 + 5);
    }
    before = malloc(EPF_SIZE);
    ck_assert_ptr_nonnull(before);
}

static void setup(void)
{
    start(false, 0);
}

static void teardown(void)
{
    free(before);
    epf_fini(&D);
}

/* ---- crafting frames ---- */

enum body {
    B_NONE,
    B_RREQ,             /* Read Request: src = stags[sel] at to, size */
    B_ATOMIC,           /* Atomic Request: opcode aop on stags[sel] at to */
};

struct seg {
    bool tagged, more;              /* more: L bit clear */
    uint8_t dv, rv;                 /* 0: the valid version */
    uint8_t opcode;
    int sel;                        /* tagged STag / body STag */
    uint64_t to;                    /* offset in the region */
    bool to_abs;                    /* to is a TO, not an offset */
    uint32_t inv, qn, msn, mo;      /* inv: index into stags[] + 1 */
    uint32_t plen;                  /* payload octets */
    enum body body;
    uint32_t size, aop;
    uint64_t add, add_mask;         /* B_ATOMIC operands */
};

static uint64_t seg_to(const struct seg *s)
{
    return s->to_abs ? s->to : epf_addr(REGION_OFF) + s->to;
}

static size_t seg_body(uint8_t *p, const struct seg *s)
{
    if (s->body == B_RREQ) {
        struct rnic_rdmap_read_req *rr = (void *)p;

        memset(rr, 0, sizeof(*rr));
        rnic_st_be32(&rr->sink_stag, 0x1234);
        rnic_st_be64(&rr->sink_to, 0x5000);
        rnic_st_be32(&rr->size, s->size);
        rnic_st_be32(&rr->src_stag, stags[s->sel]);
        rnic_st_be64(&rr->src_to, seg_to(s));
        return sizeof(*rr);
    }
    if (s->body == B_ATOMIC) {
        struct rnic_rdmap_atomic_req *ar = (void *)p;

        memset(ar, 0, sizeof(*ar));
        rnic_st_be32(&ar->opcode, s->aop);
        rnic_st_be32(&ar->stag, stags[s->sel]);
        rnic_st_be64(&ar->to, seg_to(s));
        rnic_st_be64(&ar->add_swap, s->add);
        rnic_st_be64(&ar->add_swap_mask, s->add_mask);
        return sizeof(*ar);
    }
    memset(p, 0xab, s->plen);
    return s->plen;
}

static size_t mkseg(uint8_t *buf, const struct seg *s)
{
    struct rnic_ddp_hdr h = {
        .tagged = s->tagged, .last = !s->more,
        .ddp_version = s->dv ? s->dv : RNIC_DDP_VERSION,
        .rdmap_version = s->rv ? s->rv : RNIC_RDMAP_VERSION,
        .opcode = s->opcode, .qn = s->qn, .msn = s->msn, .mo = s->mo,
        .rsvd_ulp = s->inv ? stags[s->inv - 1] : 0,
    };
    size_t len;

    if (s->tagged) {
        h.stag = stags[s->sel];
        h.to = seg_to(s);
    }
    len = rnic_ddp_hdr_encode(&h, buf);
    return len + seg_body(buf + len, s);
}

static void feed_raw(const uint8_t *ulpdu, size_t len, int corrupt_at)
{
    static uint8_t wire[RNIC_MPA_ULPDU_MAX + 4096];
    struct iovec iov = { (void *)ulpdu, len };
    struct rnic_fpdu_out out;
    size_t n = 0;

    ck_assert_int_eq(rnic_fpdu_tx_frame(&peer, &iov, 1, &out), 0);
    for (int i = 0; i < out.iovcnt; i++) {
        memcpy(wire + n, out.iov[i].iov_base, out.iov[i].iov_len);
        n += out.iov[i].iov_len;
    }
    if (corrupt_at >= 0) {
        wire[corrupt_at < 0 ? 0 : (size_t)corrupt_at % n] ^= 0x40;
    }
    rnic_ep_rx(D.ep, wire, n);
}

static void feed(const struct seg *s)
{
    static uint8_t buf[RNIC_MPA_ULPDU_MAX];

    feed_raw(buf, mkseg(buf, s), -1);
}

/* ---- checking the Terminate ---- */

struct expect {
    struct rnic_term_code code;
    uint8_t hdrct;
    enum rnic_qp_state state;
};

static void expect_term(const struct expect *e, const uint8_t *seg,
                        size_t seg_len)
{
    struct rnic_ddp_hdr h = { 0 };
    struct rnic_term_info info;
    const uint8_t *t;
    size_t hlen;
    int i;

    epf_capture(&D, &cap);
    i = epf_find(&cap, RNIC_RDMAP_TERMINATE);
    ck_assert_int_ge(i, 0);
    ck_assert_int_eq(i, cap.count - 1);     /* nothing after it */
    t = cap.ulpdu[i];
    hlen = rnic_ddp_hdr_decode(&h, t, cap.len[i]);
    ck_assert_uint_eq(hlen, sizeof(struct rnic_ddp_untagged_hdr));
    ck_assert(!h.tagged && h.last && h.qn == RNIC_DDP_QN_TERMINATE);
    ck_assert_uint_eq(h.msn, 1);
    ck_assert_uint_eq(h.mo, 0);
    ck_assert_int_eq(rnic_term_parse(t + hlen, cap.len[i] - hlen, &info), 0);
    ck_assert_msg(rnic_term_code_eq(info.code, e->code),
                  "sent %s (%u/%u/0x%02x), want %s",
                  rnic_term_code_str(info.code), info.code.layer,
                  info.code.etype, info.code.ecode,
                  rnic_term_code_str(e->code));
    ck_assert_uint_eq(info.hdrct, e->hdrct);
    t += hlen + sizeof(struct rnic_rdmap_terminate);
    if (e->hdrct & RNIC_TERM_HDRCT_M) {
        ck_assert_uint_eq(info.seg_len, seg_len);
        t += 2;
    }
    if (e->hdrct & RNIC_TERM_HDRCT_D) {
        size_t dlen = rnic_ddp_hdr_len(seg[0] & RNIC_DDP_FLAG_T);

        ck_assert_int_eq(memcmp(t, seg, dlen), 0);
        t += dlen;
        if (e->hdrct & RNIC_TERM_HDRCT_R) {
            ck_assert_int_eq(memcmp(t, seg + dlen,
                                    sizeof(struct rnic_rdmap_read_req)), 0);
        }
    }
    ck_assert_uint_eq(D.term_sent, 1);
    ck_assert(rnic_term_code_eq(D.sent_code, e->code));
    ck_assert_int_eq(D.qp->state, e->state);
    ck_assert_int_eq(memcmp(epf_ptr(&D, 0), before, EPF_SIZE), 0);
    /* later input is ignored */
    ck_assert_int_eq(rnic_ep_rx(D.ep, "x", 1), -EPROTO);
}

static void snapshot(void)
{
    memcpy(before, epf_ptr(&D, 0), EPF_SIZE);
}

/* Feeds @s and expects the Terminate @e about it. */
static void refused(const struct seg *s, const struct expect *e)
{
    static uint8_t buf[RNIC_MPA_ULPDU_MAX];
    size_t len = mkseg(buf, s);

    snapshot();
    feed_raw(buf, len, -1);
    expect_term(e, buf, len);
}

#define MD (RNIC_TERM_HDRCT_M | RNIC_TERM_HDRCT_D)
#define MDR (MD | RNIC_TERM_HDRCT_R)
#define TERM_STATE RNIC_QP_TERMINATE

#define DDP_T(code) { { 1, RNIC_DDP_ETYPE_TAGGED, code }, MD, TERM_STATE }
#define DDP_U(code) { { 1, RNIC_DDP_ETYPE_UNTAGGED, code }, MD, TERM_STATE }
#define RDMAP(et, code, hc) { { 0, et, code }, hc, TERM_STATE }
#define PROT RNIC_RDMAP_ETYPE_REMOTE_PROTECTION
#define OPER RNIC_RDMAP_ETYPE_REMOTE_OPERATION

/* ---- one offending segment each, with a receive posted ---- */

static const struct {
    struct seg seg;
    struct expect e;
} cases[] = {
    /* DDP and RDMAP versions: no header can be trusted after DDP's */
    { { .tagged = true, .dv = 2, .opcode = RNIC_RDMAP_WRITE, .plen = 8 },
      { { 1, RNIC_DDP_ETYPE_TAGGED, RNIC_DDP_T_ECODE_INVALID_VERSION }, 0,
        TERM_STATE } },
    { { .dv = 3, .opcode = RNIC_RDMAP_SEND, .msn = 1, .plen = 8 },
      { { 1, RNIC_DDP_ETYPE_UNTAGGED, RNIC_DDP_U_ECODE_INVALID_VERSION }, 0,
        TERM_STATE } },
    { { .rv = 2, .opcode = RNIC_RDMAP_SEND, .msn = 1, .plen = 8 },
      RDMAP(OPER, RNIC_RDMAP_ECODE_INVALID_VERSION, MD) },
    /* opcodes */
    { { .opcode = 0xc, .msn = 1 },
      RDMAP(OPER, RNIC_RDMAP_ECODE_UNEXPECTED_OPCODE, MD) },
    { { .tagged = true, .opcode = RNIC_RDMAP_SEND, .plen = 4 },
      RDMAP(OPER, RNIC_RDMAP_ECODE_UNEXPECTED_OPCODE, MD) },
    { { .opcode = RNIC_RDMAP_WRITE, .msn = 1, .plen = 4 },
      RDMAP(OPER, RNIC_RDMAP_ECODE_UNEXPECTED_OPCODE, MD) },
    { { .tagged = true, .opcode = RNIC_RDMAP_READ_RESP, .plen = 4 },
      RDMAP(OPER, RNIC_RDMAP_ECODE_UNEXPECTED_OPCODE, MD) },
    { { .opcode = RNIC_RDMAP_ATOMIC_RESP, .qn = 3, .msn = 1, .plen = 12 },
      RDMAP(OPER, RNIC_RDMAP_ECODE_UNEXPECTED_OPCODE, MD) },
    { { .opcode = RNIC_RDMAP_ATOMIC_REQ, .qn = 3, .msn = 1,
        .body = B_ATOMIC, .aop = 1 },
      RDMAP(OPER, RNIC_RDMAP_ECODE_UNEXPECTED_OPCODE, MD) },
    /* DDP untagged queue rules */
    { { .opcode = RNIC_RDMAP_SEND, .qn = 5, .msn = 1, .plen = 8 },
      DDP_U(RNIC_DDP_U_ECODE_INVALID_QN) },
    { { .opcode = RNIC_RDMAP_SEND, .qn = 1, .msn = 1, .plen = 8 },
      DDP_U(RNIC_DDP_U_ECODE_INVALID_QN) },
    { { .opcode = RNIC_RDMAP_SEND, .msn = 2, .plen = 8 },
      DDP_U(RNIC_DDP_U_ECODE_MSN_RANGE) },
    { { .opcode = RNIC_RDMAP_READ_REQ, .qn = 1, .msn = 0, .body = B_RREQ },
      { { 1, RNIC_DDP_ETYPE_UNTAGGED, RNIC_DDP_U_ECODE_MSN_RANGE }, MDR,
        TERM_STATE } },
    { { .opcode = RNIC_RDMAP_SEND, .msn = 1, .mo = 4, .plen = 8 },
      DDP_U(RNIC_DDP_U_ECODE_INVALID_MO) },
    { { .opcode = RNIC_RDMAP_SEND, .msn = 1, .plen = 65 },
      DDP_U(RNIC_DDP_U_ECODE_TOO_LONG) },
    /* DDP tagged buffers */
    { { .tagged = true, .opcode = RNIC_RDMAP_WRITE, .sel = S_BOGUS,
        .plen = 8 }, DDP_T(RNIC_DDP_T_ECODE_INVALID_STAG) },
    { { .tagged = true, .opcode = RNIC_RDMAP_WRITE, .sel = S_WRITE,
        .to = REGION_LEN - 4, .plen = 8 },
      DDP_T(RNIC_DDP_T_ECODE_BASE_BOUNDS) },
    { { .tagged = true, .opcode = RNIC_RDMAP_WRITE, .sel = S_OTHER_PD,
        .plen = 8 }, DDP_T(RNIC_DDP_T_ECODE_STAG_NOT_ASSOC) },
    { { .tagged = true, .opcode = RNIC_RDMAP_WRITE, .sel = S_WRITE,
        .to = UINT64_MAX - 3, .to_abs = true, .plen = 8 },
      DDP_T(RNIC_DDP_T_ECODE_TO_WRAP) },
    { { .tagged = true, .opcode = RNIC_RDMAP_WRITE, .sel = S_RO, .plen = 8 },
      RDMAP(PROT, RNIC_RDMAP_ECODE_ACCESS_RIGHTS, MD) },
    /* the source STag of a Read Request is RDMAP's: header R included */
    { { .opcode = RNIC_RDMAP_READ_REQ, .qn = 1, .msn = 1, .body = B_RREQ,
        .sel = S_BOGUS, .size = 8 },
      RDMAP(PROT, RNIC_RDMAP_ECODE_INVALID_STAG, MDR) },
    { { .opcode = RNIC_RDMAP_READ_REQ, .qn = 1, .msn = 1, .body = B_RREQ,
        .sel = S_WRITE, .to = REGION_LEN - 4, .size = 8 },
      RDMAP(PROT, RNIC_RDMAP_ECODE_BASE_BOUNDS, MDR) },
    { { .opcode = RNIC_RDMAP_READ_REQ, .qn = 1, .msn = 1, .body = B_RREQ,
        .sel = S_OTHER_PD, .size = 8 },
      RDMAP(PROT, RNIC_RDMAP_ECODE_STAG_NOT_ASSOC, MDR) },
    { { .opcode = RNIC_RDMAP_READ_REQ, .qn = 1, .msn = 1, .body = B_RREQ,
        .sel = S_WRITE, .to = UINT64_MAX - 3, .to_abs = true, .size = 8 },
      RDMAP(PROT, RNIC_RDMAP_ECODE_TO_WRAP, MDR) },
    { { .opcode = RNIC_RDMAP_READ_REQ, .qn = 1, .msn = 1, .plen = 20 },
      RDMAP(OPER, RNIC_RDMAP_ECODE_CATASTROPHIC_STREAM, MD) },
    /* atomics */
    { { .opcode = RNIC_RDMAP_ATOMIC_REQ, .qn = 3, .msn = 1,
        .body = B_ATOMIC, .sel = S_WRITE, .to = 4 },
      RDMAP(PROT, RNIC_RDMAP_ECODE_BASE_BOUNDS, MD) },
    { { .opcode = RNIC_RDMAP_ATOMIC_REQ, .qn = 3, .msn = 1,
        .body = B_ATOMIC, .sel = S_RO },
      RDMAP(PROT, RNIC_RDMAP_ECODE_ACCESS_RIGHTS, MD) },
    /* Send with Invalidate */
    { { .opcode = RNIC_RDMAP_SEND_INV, .msn = 1, .inv = S_NOINV + 1,
        .plen = 8 }, RDMAP(OPER, RNIC_RDMAP_ECODE_CANNOT_INVALIDATE, MD) },
    { { .opcode = RNIC_RDMAP_SEND_SE_INV, .msn = 1, .inv = S_BOGUS + 1,
        .plen = 8 }, RDMAP(PROT, RNIC_RDMAP_ECODE_INVALID_STAG, MD) },
    { { .opcode = RNIC_RDMAP_SEND_INV, .msn = 1, .inv = S_OTHER_PD + 1,
        .plen = 8 }, RDMAP(PROT, RNIC_RDMAP_ECODE_STAG_NOT_ASSOC, MD) },
    /* Immediate Data carries exactly 8 octets */
    { { .opcode = RNIC_RDMAP_IMM_DATA, .msn = 1, .plen = 4 },
      RDMAP(OPER, RNIC_RDMAP_ECODE_CATASTROPHIC_STREAM, MD) },
    /* a Terminate in pieces */
    { { .opcode = RNIC_RDMAP_TERMINATE, .qn = 2, .msn = 1, .more = true,
        .plen = 4 }, RDMAP(OPER, RNIC_RDMAP_ECODE_CATASTROPHIC_STREAM, MD) },
};

START_TEST(test_refused)
{
    epf_post_recv(&D, 1, RECV_OFF, 64);
    refused(&cases[_i].seg, &cases[_i].e);
}
END_TEST

/* The receive that a refused Send had taken completes with the reason. */
START_TEST(test_refused_recv_status)
{
    static const struct {
        uint8_t opcode;
        uint32_t plen, inv;
        enum rnic_wc_status status;
    } c[] = {
        { RNIC_RDMAP_SEND, 65, 0, RNIC_WC_LOC_LEN_ERR },
        { RNIC_RDMAP_SEND_INV, 8, S_NOINV + 1, RNIC_WC_LOC_ACCESS_ERR },
    };
    struct seg s = { .opcode = c[_i].opcode, .msn = 1, .plen = c[_i].plen,
                     .inv = c[_i].inv };
    static uint8_t buf[256];
    struct rnic_cqe cqe;

    epf_post_recv(&D, 9, RECV_OFF, 64);
    feed_raw(buf, mkseg(buf, &s), -1);
    cqe = epf_cqe(D.rcq);
    ck_assert_uint_eq(cqe.wr_id, 9);
    ck_assert_int_eq(cqe.status, c[_i].status);
    ck_assert(!(cqe.flags & RNIC_WC_WITH_INV));
    ck_assert(rnic_stag_lookup(D.stags, stags[S_NOINV]));
}
END_TEST

START_TEST(test_no_buffer)
{
    struct seg s = { .opcode = RNIC_RDMAP_SEND, .msn = 1, .plen = 8 };
    struct expect e = DDP_U(RNIC_DDP_U_ECODE_MSN_NO_BUFFER);

    refused(&s, &e);
}
END_TEST

/* The second segment of a message breaks a rule: the first stays placed. */
START_TEST(test_second_segment)
{
    struct seg first = { .opcode = RNIC_RDMAP_SEND, .msn = 1, .more = true,
                         .plen = 40 };
    struct seg s = first;
    struct expect e = DDP_U(RNIC_DDP_U_ECODE_INVALID_MO);

    epf_post_recv(&D, 1, RECV_OFF, 64);
    feed(&first);
    ck_assert_uint_eq(*epf_ptr(&D, RECV_OFF), 0xab);
    s.mo = 41;
    refused(&s, &e);
}
END_TEST

START_TEST(test_ird_exceeded)
{
    struct seg s = { .opcode = RNIC_RDMAP_READ_REQ, .qn = 1, .body = B_RREQ,
                     .sel = S_WRITE, .size = 8 };
    struct expect e = RDMAP(OPER, RNIC_RDMAP_ECODE_CATASTROPHIC_STREAM, MDR);

    for (s.msn = 1; s.msn <= 4; s.msn++) {
        feed(&s);
    }
    ck_assert_uint_eq(D.term_sent, 0);
    refused(&s, &e);
}
END_TEST

START_TEST(test_short_ulpdu)
{
    static const uint8_t tiny[5] = { 0x41, 0x43, 0, 0, 0 };
    struct expect e = RDMAP(OPER, RNIC_RDMAP_ECODE_CATASTROPHIC_STREAM, 0);

    snapshot();
    feed_raw(tiny, sizeof(tiny), -1);
    expect_term(&e, tiny, sizeof(tiny));
}
END_TEST

START_TEST(test_bad_recv_buffer)
{
    struct seg s = { .opcode = RNIC_RDMAP_SEND, .msn = 1, .plen = 8 };
    struct rnic_recv_wr wr = { .wr_id = 3, .num_sge = 1 };
    struct expect e = { rnic_term_ddp(RNIC_DDP_ETYPE_LOCAL_CATASTROPHIC, 0),
                        MD, TERM_STATE };

    wr.sge[0] = (struct rnic_sge) { rnic_stag_next_key(D.lkey),
                                    epf_addr(RECV_OFF), 64 };
    ck_assert_int_eq(rnic_qp_post_recv(D.qp, &wr), 0);
    refused(&s, &e);
    ck_assert_int_eq(epf_cqe(D.rcq).status, RNIC_WC_LOC_PROT_ERR);
}
END_TEST

/* A Read Response that does not match our outstanding Read. */
START_TEST(test_read_response_mismatch)
{
    struct rnic_send_wr wr = epf_wr(5, RNIC_WR_READ, D.lkey, RECV_OFF, 16);
    struct seg s = { .tagged = true, .opcode = RNIC_RDMAP_READ_RESP,
                     .plen = 16 };
    struct expect e[] = {
        DDP_T(RNIC_DDP_T_ECODE_INVALID_STAG),
        DDP_T(RNIC_DDP_T_ECODE_BASE_BOUNDS),
        DDP_T(RNIC_DDP_T_ECODE_BASE_BOUNDS),
    };
    enum rnic_wc_status status[] = {
        RNIC_WC_BAD_RESP_ERR, RNIC_WC_BAD_RESP_ERR, RNIC_WC_LOC_LEN_ERR,
    };
    static uint8_t buf[256];
    size_t len;
    struct rnic_cqe cqe;

    epf_post(&D, &wr);
    epf_capture(&D, &cap);      /* the Read Request leaves */
    cap.count = 0;
    stags[S_WRITE] = _i == 0 ? D.lkey + 1 : D.lkey;
    s.to = RECV_OFF - REGION_OFF + (_i == 1 ? 8 : 0);
    s.plen = _i == 2 ? 17 : 16;
    len = mkseg(buf, &s);
    snapshot();
    feed_raw(buf, len, -1);
    expect_term(&e[_i], buf, len);
    cqe = epf_cqe(D.scq);
    ck_assert_uint_eq(cqe.wr_id, 5);
    ck_assert_int_eq(cqe.status, status[_i]);
}
END_TEST

START_TEST(test_crc_error)
{
    struct seg s = { .opcode = RNIC_RDMAP_SEND, .msn = 1, .plen = 8 };
    static uint8_t buf[64];
    struct expect e = { rnic_term_mpa(RNIC_MPA_ECODE_CRC), 0, TERM_STATE };

    epf_post_recv(&D, 1, RECV_OFF, 64);
    snapshot();
    feed_raw(buf, mkseg(buf, &s), 30);
    ck_assert_uint_eq(D.stream_lost, 1);
    expect_term(&e, NULL, 0);
}
END_TEST

START_TEST(test_marker_error)
{
    struct seg s = { .opcode = RNIC_RDMAP_SEND, .msn = 1, .plen = 600 };
    static uint8_t buf[1024];
    struct expect e = { rnic_term_mpa(RNIC_MPA_ECODE_MARKER), 0, TERM_STATE };

    teardown();
    start(true, 0);
    epf_post_recv(&D, 1, RECV_OFF, 1024);
    snapshot();
    /* octet 515 of the stream is FPDUPTR's low octet of the 2nd marker */
    feed_raw(buf, mkseg(buf, &s), 515);
    ck_assert_uint_eq(D.stream_lost, 1);
    expect_term(&e, NULL, 0);
}
END_TEST

START_TEST(test_wrong_rtr)
{
    static const uint8_t rtrs[] = {
        RNIC_MPA_RTR_SEND, RNIC_MPA_RTR_WRITE, RNIC_MPA_RTR_READ,
    };
    struct seg s = { .tagged = true, .opcode = RNIC_RDMAP_WRITE };
    struct expect e = { rnic_term_mpa(RNIC_MPA_ECODE_NO_MATCHING_RTR), 0,
                        TERM_STATE };
    struct rnic_send_wr wr = epf_wr(1, RNIC_WR_SEND, 0, 0, 0);

    teardown();
    start(false, rtrs[_i]);
    if (rtrs[_i] == RNIC_MPA_RTR_WRITE) {
        s = (struct seg) { .opcode = RNIC_RDMAP_SEND, .msn = 1 };
    }
    /* the responder sends nothing before the RTR, not even a Send */
    wr.num_sge = 0;
    epf_post(&D, &wr);
    ck_assert_uint_eq(epf_capture(&D, &cap), 0);
    refused(&s, &e);
    ck_assert_int_eq(epf_cqe(D.scq).status, RNIC_WC_WR_FLUSH_ERR);
}
END_TEST

START_TEST(test_local_catastrophic)
{
    struct rnic_send_wr wr = epf_wr(1, RNIC_WR_WRITE, D.lkey + 1, 0, 10);
    struct expect e = { rnic_term_rdmap(RNIC_RDMAP_ETYPE_LOCAL_CATASTROPHIC,
                                        RNIC_RDMAP_ECODE_UNSPECIFIED),
                        0, RNIC_QP_ERROR };

    epf_post(&D, &wr);
    snapshot();
    expect_term(&e, NULL, 0);
    ck_assert_int_eq(epf_cqe(D.scq).status, RNIC_WC_LOC_PROT_ERR);
}
END_TEST

/* The source STag of a queued Read went away before its response. */
START_TEST(test_read_source_gone)
{
    struct seg s = { .opcode = RNIC_RDMAP_READ_REQ, .qn = 1, .msn = 1,
                     .body = B_RREQ, .sel = S_WRITE, .size = 8 };
    struct expect e = RDMAP(PROT, RNIC_RDMAP_ECODE_INVALID_STAG, MDR);
    static uint8_t buf[64];
    size_t len = mkseg(buf, &s);

    feed_raw(buf, len, -1);
    ck_assert_int_eq(rnic_mr_deregister(D.stags, stags[S_WRITE]),
                     RNIC_STAG_OK);
    snapshot();
    expect_term(&e, buf, len);
}
END_TEST

/* A crafted fetch-and-add with an add mask: carries stop at set bits. */
START_TEST(test_atomic_masked_add)
{
    struct seg s = { .opcode = RNIC_RDMAP_ATOMIC_REQ, .qn = 3, .msn = 1,
                     .body = B_ATOMIC, .sel = S_WRITE, .to = 8,
                     .add = 0x0000000100000001ull,
                     .add_mask = 0x0000000080000000ull };
    uint8_t *target = epf_ptr(&D, REGION_OFF + 8);
    const uint8_t *resp;
    struct rnic_ddp_hdr h;

    memset(target, 0xff, 8);        /* two lanes of all ones */
    feed(&s);
    epf_capture(&D, &cap);
    ck_assert_int_eq(cap.count, 1);
    resp = cap.ulpdu[0] + rnic_ddp_hdr_decode(&h, cap.ulpdu[0], cap.len[0]);
    ck_assert_uint_eq(h.opcode, RNIC_RDMAP_ATOMIC_RESP);
    ck_assert_uint_eq(h.qn, RNIC_DDP_QN_ATOMIC);
    ck_assert_uint_eq(rnic_ld_be64(resp + 4), UINT64_MAX);
    /* low lane wraps to 0 without carrying into the high lane */
    for (int i = 0; i < 8; i++) {
        ck_assert_uint_eq(target[i], 0);
    }
}
END_TEST

/* ---- Terminates received ---- */

static size_t term_frame(uint8_t *buf, struct rnic_term_code code,
                         const uint8_t *seg, size_t seg_len)
{
    struct rnic_ddp_hdr h = {
        .last = true, .ddp_version = 1, .rdmap_version = 1,
        .opcode = RNIC_RDMAP_TERMINATE, .qn = 2, .msn = 1,
    };
    size_t len = rnic_ddp_hdr_encode(&h, buf);

    return len + rnic_term_build(buf + len, code, seg, seg_len, seg_len);
}

/*
 * The peer terminates quoting one of our messages: a Read Request (HdrCt
 * R), an Atomic Request (its DDP header alone), or a Send behind an
 * outstanding Read. A quoted request completes with the Terminate's
 * reason, everything else by the flush.
 */
static const struct {
    enum rnic_wr_opcode first, quoted;
    enum rnic_wc_status first_status;
} term_rx_cases[] = {
    { RNIC_WR_READ, RNIC_WR_READ, RNIC_WC_REM_ACCESS_ERR },
    { RNIC_WR_ATOMIC_FETCH_ADD, RNIC_WR_ATOMIC_FETCH_ADD,
      RNIC_WC_REM_ACCESS_ERR },
    { RNIC_WR_READ, RNIC_WR_SEND, RNIC_WC_WR_FLUSH_ERR },
};

START_TEST(test_term_received)
{
    struct rnic_send_wr first = epf_wr(1, term_rx_cases[_i].first, D.lkey,
                                       RECV_OFF, 8);
    struct rnic_send_wr send = epf_wr(2, RNIC_WR_SEND, D.lkey, 0, 16);
    struct rnic_term_code code = rnic_term_rdmap(PROT,
                                                 RNIC_RDMAP_ECODE_INVALID_STAG);
    unsigned quoted = term_rx_cases[_i].quoted == RNIC_WR_SEND;
    static uint8_t buf[256];
    size_t len;

    first.remote_stag = 0x1234;
    epf_post(&D, &first);
    epf_post(&D, &send);
    epf_capture(&D, &cap);
    ck_assert_int_eq(cap.count, 2);
    epf_post_recv(&D, 3, RECV_OFF, 64);
    len = term_frame(buf, code, cap.ulpdu[quoted], cap.len[quoted]);
    snapshot();
    feed_raw(buf, len, -1);
    ck_assert_uint_eq(D.term_received, 1);
    ck_assert(rnic_term_code_eq(D.recv_code, code));
    ck_assert_int_eq(D.qp->state, RNIC_QP_TERMINATE);
    ck_assert_int_eq(epf_cqe(D.scq).status, term_rx_cases[_i].first_status);
    /* the Send was sent whole: it completes, after the WR before it */
    ck_assert_int_eq(epf_cqe(D.scq).status, RNIC_WC_SUCCESS);
    ck_assert_int_eq(epf_cqe(D.rcq).status, RNIC_WC_WR_FLUSH_ERR);
    epf_no_cqe(D.scq);
    /* we answer a Terminate with nothing, and close */
    ck_assert_uint_eq(epf_capture(&D, &cap), 0);
    ck_assert_uint_eq(D.term_sent, 0);
    rnic_ep_connection_closed(D.ep);
    ck_assert_int_eq(D.qp->state, RNIC_QP_ERROR);
    ck_assert_int_eq(memcmp(epf_ptr(&D, 0), before, EPF_SIZE), 0);
}
END_TEST

START_TEST(test_term_parse)
{
    uint8_t seg[64], body[RNIC_TERM_BODY_MAX];
    struct rnic_ddp_hdr h = {
        .ddp_version = 1, .rdmap_version = 1, .opcode = RNIC_RDMAP_READ_REQ,
        .qn = 1, .msn = 7, .last = true,
    };
    struct rnic_term_info info;
    size_t hlen = rnic_ddp_hdr_encode(&h, seg), len;

    memset(seg + hlen, 0x5c, sizeof(struct rnic_rdmap_read_req));
    len = rnic_term_build(body, rnic_term_ddp(2, 3), seg, hlen + 28, 46);
    ck_assert_uint_eq(len, RNIC_TERM_BODY_MAX);
    ck_assert_int_eq(rnic_term_parse(body, len, &info), 0);
    ck_assert_uint_eq(info.hdrct, MDR);
    ck_assert_uint_eq(info.seg_len, 46);
    ck_assert_uint_eq(info.ddp.msn, 7);
    ck_assert_uint_eq(((uint8_t *)&info.rreq)[27], 0x5c);
    for (size_t cut = 0; cut < len; cut++) {
        ck_assert_int_eq(rnic_term_parse(body, cut, &info), -EINVAL);
    }
    /* LLP errors carry no headers: the framing is not to be trusted */
    ck_assert_uint_eq(rnic_term_build(body, rnic_term_mpa(2), seg, 46, 46),
                      4);
    ck_assert_str_eq(rnic_term_code_str(rnic_term_mpa(7)),
                     "MPA no matching RTR");
    ck_assert_int_eq(rnic_term_wc_status(rnic_term_ddp(1, 0)),
                     RNIC_WC_REM_ACCESS_ERR);
    ck_assert_int_eq(rnic_term_wc_status(rnic_term_ddp(2, 2)),
                     RNIC_WC_REM_OP_ERR);
    ck_assert_int_eq(rnic_term_wc_status(rnic_term_rdmap(2, 6)),
                     RNIC_WC_REM_INV_REQ_ERR);
}
END_TEST

Suite *term_suite(void)
{
    Suite *s = suite_create("term");
    TCase *tc = tcase_create("term");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_refused, 0,
                        sizeof(cases) / sizeof(cases[0]));
    tcase_add_loop_test(tc, test_refused_recv_status, 0, 2);
    tcase_add_test(tc, test_no_buffer);
    tcase_add_test(tc, test_second_segment);
    tcase_add_test(tc, test_ird_exceeded);
    tcase_add_test(tc, test_short_ulpdu);
    tcase_add_test(tc, test_bad_recv_buffer);
    tcase_add_loop_test(tc, test_read_response_mismatch, 0, 3);
    tcase_add_test(tc, test_crc_error);
    tcase_add_test(tc, test_marker_error);
    tcase_add_loop_test(tc, test_wrong_rtr, 0, 3);
    tcase_add_test(tc, test_local_catastrophic);
    tcase_add_test(tc, test_read_source_gone);
    tcase_add_test(tc, test_atomic_masked_add);
    tcase_add_loop_test(tc, test_term_received, 0,
                        sizeof(term_rx_cases) / sizeof(term_rx_cases[0]));
    tcase_add_test(tc, test_term_parse);
    suite_add_tcase(s, tc);
    return s;
}
