/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include "epfix.h"

#define EPF_CQ_DEPTH    4096

void epf_mpa_pair(bool crc, bool markers, uint8_t rtr, uint16_t ord_ird,
                  struct rnic_mpa_result *init, struct rnic_mpa_result *resp)
{
    *init = (struct rnic_mpa_result) {
        .rev = 2, .crc = crc, .markers_tx = markers, .markers_rx = markers,
        .enhanced = true, .ird = ord_ird, .ord = ord_ird,
        .peer_ird = ord_ird, .peer_ord = ord_ird, .rtr = rtr,
    };
    *resp = *init;
}

/* ---- callbacks ---- */

static void epf_term_sent(void *opaque, struct rnic_term_code code)
{
    struct epf_side *s = opaque;

    s->term_sent++;
    s->sent_code = code;
}

static void epf_term_received(void *opaque, struct rnic_term_code code)
{
    struct epf_side *s = opaque;

    s->term_received++;
    s->recv_code = code;
}

static void epf_state_changed(void *opaque, enum rnic_qp_state state)
{
    struct epf_side *s = opaque;

    (void)state;
    s->state_changes++;
}

static void epf_stream_lost(void *opaque, struct rnic_term_code code)
{
    struct epf_side *s = opaque;

    (void)code;
    s->stream_lost++;
}

/* What the device does: hands over a receive it had not passed on. */
static void epf_need_recv(void *opaque)
{
    struct epf_side *s = opaque;

    s->need_recv++;
    if (s->late_recv) {
        s->late_recv = false;
        epf_post_recv(s, s->late_id, s->late_off, 64);
    }
}

static const struct rnic_ep_ops epf_ops = {
    .term_sent = epf_term_sent,
    .term_received = epf_term_received,
    .state_changed = epf_state_changed,
    .stream_lost = epf_stream_lost,
    .need_recv = epf_need_recv,
};

/* ---- one side ---- */

uint32_t epf_mr(struct epf_side *s, uint64_t off, uint64_t len,
                unsigned access, enum rnic_stag_policy policy,
                bool remote_inv)
{
    uint64_t first = off & ~(uint64_t)(EPF_PAGE - 1);
    uint32_t npages = (uint32_t)((off + len - first + EPF_PAGE - 1) /
                                 EPF_PAGE);
    uint64_t *pages = calloc(npages, sizeof(*pages));
    struct rnic_mr_attr a = {
        .pd = s->pd, .key = 0x5a, .access = access, .policy = policy,
        .remote_invalidate = remote_inv, .pages = pages, .npages = npages,
        .page_shift = 12, .first_byte_offset = (uint32_t)(off - first),
        .length = len, .base_to = epf_addr(off),
    };
    enum rnic_stag_status st;
    uint32_t stag;

    ck_assert_ptr_nonnull(pages);
    for (uint32_t i = 0; i < npages; i++) {
        pages[i] = epf_addr(first) + (uint64_t)i * EPF_PAGE;
    }
    do {
        st = rnic_mr_register(s->stags, &a, &stag);
        a.key++;
    } while (st == RNIC_STAG_ERR_KEY_REUSED);
    ck_assert_int_eq(st, RNIC_STAG_OK);
    free(pages);
    return stag;
}

void epf_new_ep(struct epf_side *s, const struct epf_params *p)
{
    struct rnic_ep_params ep = {
        .qp = s->qp, .stags = s->stags, .dma = &s->mem.dma, .pd = s->pd,
        .mpa = p->mpa, .initiator = p->initiator, .mulpdu = p->mulpdu,
        .ops = &epf_ops, .opaque = s,
    };

    s->ep = rnic_ep_new(&ep);
    ck_assert_ptr_nonnull(s->ep);
}

void epf_init(struct epf_side *s, const struct epf_params *p, uint32_t qpn)
{
    struct rnic_stag_table_params tp = {
        .max_stags = 256, .max_pds = 4, .max_recv_links = 64,
        .default_policy = p->policy,
    };
    uint32_t rd = p->max_rd ? p->max_rd : 4;
    struct rnic_qp_attr qa = {
        .sq_depth = 64, .rq_depth = 64, .max_send_sge = RNIC_MAX_SGE,
        .max_recv_sge = RNIC_MAX_SGE, .max_ord = rd, .max_ird = rd,
        .atomics = p->atomics,
    };

    memset(s, 0, sizeof(*s));
    memdma_init(&s->mem, EPF_BASE, EPF_SIZE);
    s->stags = rnic_stag_table_new(&tp);
    ck_assert_ptr_nonnull(s->stags);
    ck_assert_int_eq(rnic_pd_alloc(s->stags, &s->pd), RNIC_STAG_OK);
    s->lkey = epf_mr(s, 0, EPF_SIZE, RNIC_ACCESS_LOCAL_READ |
                     RNIC_ACCESS_LOCAL_WRITE, RNIC_STAG_PERSISTENT, false);
    s->scq = rnic_cq_new(EPF_CQ_DEPTH, NULL, NULL);
    s->rcq = rnic_cq_new(EPF_CQ_DEPTH, NULL, NULL);
    s->srq = p->srq ? rnic_srq_new(1, 64, RNIC_MAX_SGE) : NULL;
    qa.send_cq = s->scq;
    qa.recv_cq = s->rcq;
    qa.srq = s->srq;
    s->qp = rnic_qp_new(qpn, &qa);
    ck_assert_ptr_nonnull(s->qp);
    epf_new_ep(s, p);
}

void epf_fini(struct epf_side *s)
{
    rnic_ep_free(s->ep);
    rnic_qp_free(s->qp);
    if (s->srq) {
        ck_assert_int_eq(rnic_srq_destroy(s->srq), 0);
    }
    ck_assert_int_eq(rnic_cq_destroy(s->scq), 0);
    ck_assert_int_eq(rnic_cq_destroy(s->rcq), 0);
    rnic_stag_table_free(s->stags);
    ck_assert_int_eq(s->mem.mapped, 0);
    memdma_free(&s->mem);
}

/* ---- work ---- */

struct rnic_send_wr epf_wr(uint64_t id, enum rnic_wr_opcode op,
                           uint32_t lkey, uint64_t off, uint32_t len)
{
    struct rnic_send_wr wr = {
        .wr_id = id, .opcode = op, .flags = RNIC_WR_SIGNALED,
        .num_sge = 1,
    };

    wr.sge[0] = (struct rnic_sge) { lkey, epf_addr(off), len };
    return wr;
}

void epf_post(struct epf_side *s, const struct rnic_send_wr *wr)
{
    ck_assert_int_eq(rnic_qp_post_send(s->qp, wr), 0);
}

void epf_post_recv(struct epf_side *s, uint64_t id, uint64_t off,
                   uint32_t len)
{
    struct rnic_recv_wr wr = { .wr_id = id, .num_sge = 1 };

    wr.sge[0] = (struct rnic_sge) { s->lkey, epf_addr(off), len };
    if (s->srq) {
        ck_assert_int_eq(rnic_srq_post_recv(s->srq, &wr), 0);
    } else {
        ck_assert_int_eq(rnic_qp_post_recv(s->qp, &wr), 0);
    }
}

struct rnic_cqe epf_cqe(struct rnic_cq *cq)
{
    struct rnic_cqe cqe;

    ck_assert_msg(rnic_cq_poll(cq, &cqe, 1) == 1, "no CQE");
    return cqe;
}

void epf_no_cqe(struct rnic_cq *cq)
{
    ck_assert_uint_eq(rnic_cq_count(cq), 0);
}

/* ---- random pipe ---- */

uint32_t epf_rand(struct epf_rng *r, uint32_t bound)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return (uint32_t)((r->s * 0x2545f4914f6cdd1dull) >> 32) % bound;
}

void epf_fill(uint8_t *p, size_t len, struct epf_rng *r)
{
    for (size_t i = 0; i < len; i++) {
        p[i] = (uint8_t)epf_rand(r, 256);
    }
}

/* Copies up to @max of what tx_peek offers into @buf. */
static size_t epf_take(struct rnic_ep *ep, uint8_t *buf, size_t max)
{
    struct iovec iov[64];
    size_t got = 0;
    int cnt;

    rnic_ep_tx_peek(ep, iov, 64, &cnt);
    for (int i = 0; i < cnt && got < max; i++) {
        size_t n = iov[i].iov_len < max - got ? iov[i].iov_len : max - got;

        memcpy(buf + got, iov[i].iov_base, n);
        got += n;
    }
    rnic_ep_tx_advance(ep, got);
    return got;
}

size_t epf_pump(struct epf_side *from, struct epf_side *to,
                struct epf_rng *rng, size_t max_chunk)
{
    static uint8_t buf[1 << 16];
    size_t total = 0, n;

    if (max_chunk > sizeof(buf)) {
        max_chunk = sizeof(buf);
    }
    while ((n = epf_take(from->ep, buf, 1 + epf_rand(rng, max_chunk)))) {
        for (size_t off = 0; off < n;) {
            size_t piece = 1 + epf_rand(rng, (uint32_t)max_chunk);

            piece = piece < n - off ? piece : n - off;
            rnic_ep_rx(to->ep, buf + off, piece);
            off += piece;
        }
        total += n;
    }
    return total;
}

size_t epf_run(struct epf_side *a, struct epf_side *b, struct epf_rng *rng,
               size_t max_chunk)
{
    size_t total = 0, n;

    do {
        n = epf_pump(a, b, rng, max_chunk) + epf_pump(b, a, rng, max_chunk);
        total += n;
    } while (n);
    return total;
}

/* ---- decoding what a side sends ---- */

static int epf_capture_ulpdu(void *opaque, const uint8_t *ulpdu, size_t len)
{
    struct epf_capture *c = opaque;
    size_t keep = len < sizeof(c->ulpdu[0]) ? len : sizeof(c->ulpdu[0]);

    ck_assert_int_lt(c->count, EPF_MAX_ULPDUS);
    c->len[c->count] = len;
    memcpy(c->ulpdu[c->count++], ulpdu, keep);
    return 0;
}

void epf_capture_init(struct epf_capture *c, bool crc, bool markers)
{
    memset(c, 0, sizeof(*c));
    rnic_fpdu_rx_init(&c->rx, crc, markers, c->buf, sizeof(c->buf));
}

size_t epf_capture(struct epf_side *s, struct epf_capture *c)
{
    static uint8_t buf[1 << 16];
    size_t total = 0, n;

    while ((n = epf_take(s->ep, buf, sizeof(buf)))) {
        int err = rnic_fpdu_rx_input(&c->rx, buf, n, epf_capture_ulpdu, c);

        c->err = c->err ? c->err : err;
        total += n;
    }
    return total;
}

int epf_find(const struct epf_capture *c, uint8_t opcode)
{
    for (int i = 0; i < c->count; i++) {
        if ((c->ulpdu[i][1] & RNIC_RDMAP_OPCODE_MASK) == opcode) {
            return i;
        }
    }
    return -1;
}
