/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * save.h: the tables and queues a migration carries.  Each test builds
 * state through the objects' own calls, saves it, loads it into fresh
 * objects made with the same parameters, and checks that the copy saves
 * to the same bytes and behaves as the original (the next STag and QP
 * number handed out, what a lookup says, the CQEs polled).  Damaged
 * streams must fail the load, never crash (run under sanitizers too).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include "iwarp/engine.h"
#include "suites.h"

#define PAGE 4096u

static struct rnic_stag_table *table_new(void)
{
    struct rnic_stag_table_params p = {
        .max_stags = 64, .max_pds = 8, .max_mrs = 40, .max_mws = 24,
        .max_recv_links = 16, .max_page_list_bytes = 1 << 20,
        .default_policy = RNIC_STAG_PERSISTENT,
    };

    return rnic_stag_table_new(&p);
}

/* PDs, a contiguous and a paged region, a fast-reg slot, windows, a link. */
static void table_fill(struct rnic_stag_table *t)
{
    uint64_t pages[3] = { 0x10000, 0x30000, 0x11000 };
    struct rnic_mr_attr mr = {
        .key = 0x11, .access = RNIC_ACCESS_LOCAL_WRITE |
                               RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_MW_BIND,
        .pages = pages, .npages = 1, .page_shift = 12, .length = PAGE,
        .base_to = 0x1000,
    };
    struct rnic_mw_bind_attr bind = {
        .key = 0x77, .access = RNIC_ACCESS_REMOTE_WRITE, .to = 0x1000,
        .length = 512,
    };
    struct rnic_recv_owner o = { .queue = rnic_recv_queue_qp(3) };
    uint32_t pd, pd2, a, b, c, mw, mw2, fast, bound;

    ck_assert_int_eq(rnic_pd_alloc(t, &pd), RNIC_STAG_OK);
    ck_assert_int_eq(rnic_pd_alloc(t, &pd2), RNIC_STAG_OK);
    mr.pd = pd;
    ck_assert_int_eq(rnic_mr_register(t, &mr, &a), RNIC_STAG_OK);
    mr.key = 0x22;
    mr.npages = 3;
    mr.first_byte_offset = 100;
    mr.length = 3 * PAGE - 200;
    mr.access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ;
    ck_assert_int_eq(rnic_mr_register(t, &mr, &b), RNIC_STAG_OK);
    mr.key = 0x33;
    mr.npages = 1;
    mr.first_byte_offset = 0;
    mr.length = PAGE;
    ck_assert_int_eq(rnic_mr_register(t, &mr, &c), RNIC_STAG_OK);
    ck_assert_int_eq(rnic_mr_alloc(t, pd2, 16, 0x44, &fast), RNIC_STAG_OK);
    ck_assert_int_eq(rnic_mw_alloc(t, pd, RNIC_STAG_MW_TYPE1, 0x55, &mw),
                     RNIC_STAG_OK);
    ck_assert_int_eq(rnic_mw_alloc(t, pd, RNIC_STAG_MW_TYPE2, 0x66, &mw2),
                     RNIC_STAG_OK);
    bind.mr_stag = a;
    bind.pd = pd;
    ck_assert_int_eq(rnic_mw_bind(t, mw, &bind, &bound), RNIC_STAG_OK);
    /* a freed index in the middle: the free list is part of the state */
    ck_assert_int_eq(rnic_mr_deregister(t, c), RNIC_STAG_OK);
    o.pd = pd;
    ck_assert_int_eq(rnic_stag_link_to_recv(t, b, &o, 99), RNIC_STAG_OK);
}

static void save_table(const struct rnic_stag_table *t, struct rnic_sv *s)
{
    *s = (struct rnic_sv) { 0 };
    rnic_stag_table_save(s, t);
    ck_assert(!s->failed);
}

/*
 * The copy answers as the original, STag by STag: lookup (the tag array),
 * query and resolve (the entry, with its own copy of key and state).
 */
static void tables_agree(const struct rnic_stag_table *t,
                         const struct rnic_stag_table *u)
{
    unsigned rights = RNIC_ACCESS_LOCAL_READ | RNIC_ACCESS_LOCAL_WRITE |
                      RNIC_ACCESS_REMOTE_ALL;
    uint32_t it = 0, iu = 0, stag;

    while ((stag = rnic_stag_next_used(t, &it)) != 0) {
        struct rnic_stag_info a, b;
        struct rnic_mem_ref ra, rb;
        enum rnic_stag_status sa, sb;

        ck_assert_uint_eq(rnic_stag_next_used(u, &iu), stag);
        ck_assert_int_eq(rnic_stag_query(t, stag, &a), RNIC_STAG_OK);
        ck_assert_int_eq(rnic_stag_query(u, stag, &b), RNIC_STAG_OK);
        ck_assert_int_eq(a.valid, b.valid);
        ck_assert_int_eq(rnic_stag_lookup(u, stag), b.valid);
        sa = rnic_stag_resolve(t, stag, a.pd, a.qpn, a.base_to, a.length,
                               a.access & rights, &ra);
        sb = rnic_stag_resolve(u, stag, b.pd, b.qpn, b.base_to, b.length,
                               b.access & rights, &rb);
        ck_assert_int_eq(sa, sb);
        ck_assert_int_eq(sb, b.valid ? RNIC_STAG_OK
                                     : RNIC_STAG_ERR_INVALID_STAG);
        if (sb == RNIC_STAG_OK) {
            ck_assert_uint_eq(ra.to, rb.to);
            ck_assert_uint_eq(ra.len, rb.len);
        }
    }
    ck_assert_uint_eq(rnic_stag_next_used(u, &iu), 0);
}

START_TEST(test_save_stag_table)
{
    struct rnic_stag_table *t = table_new(), *u = table_new();
    struct rnic_sv s1, s2;
    struct rnic_ld l;
    uint32_t x, y, pd = 1;
    struct rnic_mr_attr mr = {
        .pd = pd, .key = 0x33, .pages = (uint64_t[]){ 0x20000 },
        .npages = 1, .page_shift = 12, .length = PAGE,
    };

    table_fill(t);
    save_table(t, &s1);
    rnic_ld_init(&l, s1.buf, s1.len);
    ck_assert_int_eq(rnic_stag_table_load(&l, u), 0);
    ck_assert_uint_eq(l.off, s1.len);
    save_table(u, &s2);
    ck_assert_uint_eq(s1.len, s2.len);
    ck_assert_mem_eq(s1.buf, s2.buf, s1.len);
    ck_assert_uint_eq(rnic_stag_page_list_bytes(t),
                      rnic_stag_page_list_bytes(u));
    tables_agree(t, u);
    /* the same key on the freed index is refused, as before */
    ck_assert_int_eq(rnic_mr_register(t, &mr, &x), RNIC_STAG_OK);
    ck_assert_int_eq(rnic_mr_register(u, &mr, &y), RNIC_STAG_OK);
    ck_assert_uint_eq(x, y);
    /* the window still pins its region; the link still blocks */
    ck_assert_int_eq(rnic_mr_deregister(u, rnic_stag_make(1, 0x11)),
                     RNIC_STAG_ERR_BUSY);
    ck_assert_uint_eq(rnic_stag_recv_consumed(u, rnic_recv_queue_qp(3), 99,
                                              &x, 1), 1);
    rnic_sv_free(&s1);
    rnic_sv_free(&s2);
    rnic_stag_table_free(t);
    rnic_stag_table_free(u);
}
END_TEST

/* Every truncation, and every byte flipped, loads or fails cleanly. */
START_TEST(test_save_stag_damaged)
{
    struct rnic_stag_table *t = table_new();
    struct rnic_sv s;
    struct rnic_ld l;

    table_fill(t);
    save_table(t, &s);
    for (size_t n = 0; n < s.len; n++) {
        struct rnic_stag_table *u = table_new();

        rnic_ld_init(&l, s.buf, n);
        ck_assert_int_eq(rnic_stag_table_load(&l, u), -EINVAL);
        rnic_stag_table_free(u);
    }
    for (size_t n = 0; n < s.len; n++) {
        struct rnic_stag_table *u = table_new();

        s.buf[n] ^= 0xa5;
        rnic_ld_init(&l, s.buf, s.len);
        rnic_stag_table_load(&l, u);
        s.buf[n] ^= 0xa5;
        rnic_stag_table_free(u);
    }
    rnic_sv_free(&s);
    rnic_stag_table_free(t);
}
END_TEST

static uint64_t clock_now;

static uint64_t fake_clock(void *opaque __attribute__((unused)))
{
    return clock_now;
}

START_TEST(test_save_qpn_table)
{
    struct rnic_qpn_table *t = rnic_qpn_table_new(8, 100, fake_clock, NULL);
    struct rnic_qpn_table *u = rnic_qpn_table_new(8, 100, fake_clock, NULL);
    uint32_t q[4], x, y;
    struct rnic_sv s = { 0 };
    struct rnic_ld l;
    void *qp;

    clock_now = 1000;
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(rnic_qpn_alloc(t, &q[i], &q[i]), 0);
    }
    ck_assert_int_eq(rnic_qpn_free(t, q[1]), 0);
    rnic_qpn_table_save(&s, t);
    rnic_ld_init(&l, s.buf, s.len);
    ck_assert_int_eq(rnic_qpn_table_load(&l, u), 0);
    ck_assert_int_eq(rnic_qpn_lookup(u, q[0], &qp), RNIC_QPN_LIVE);
    ck_assert_ptr_null(qp);
    ck_assert_int_eq(rnic_qpn_attach(u, q[0], &x), 0);
    ck_assert_int_eq(rnic_qpn_attach(u, q[0], &x), -EINVAL);
    ck_assert_int_eq(rnic_qpn_attach(u, q[1], &x), -EINVAL);
    ck_assert_int_eq(rnic_qpn_lookup(u, q[1], &qp), RNIC_QPN_TIMEWAIT);
    ck_assert_int_eq(rnic_qpn_alloc(t, NULL, &x), 0);
    ck_assert_int_eq(rnic_qpn_alloc(u, NULL, &y), 0);
    ck_assert_uint_eq(x, y);
    clock_now += 100;
    ck_assert_int_eq(rnic_qpn_lookup(u, q[1], &qp), RNIC_QPN_FREE);
    for (size_t n = 0; n < s.len; n++) {
        struct rnic_qpn_table *v = rnic_qpn_table_new(8, 100, fake_clock,
                                                      NULL);

        rnic_ld_init(&l, s.buf, n);
        ck_assert_int_eq(rnic_qpn_table_load(&l, v), -EINVAL);
        rnic_qpn_table_free(v);
    }
    rnic_sv_free(&s);
    rnic_qpn_table_free(t);
    rnic_qpn_table_free(u);
}
END_TEST

struct pair {
    struct rnic_cq *cq;
    struct rnic_srq *srq;
    struct rnic_qp *qp;
};

static struct pair pair_new(void)
{
    struct pair p = {
        .cq = rnic_cq_new(16, NULL, NULL),
        .srq = rnic_srq_new(1, 8, 2),
    };
    struct rnic_qp_attr a = {
        .sq_depth = 8, .rq_depth = 8, .max_send_sge = 2, .max_recv_sge = 2,
        .max_ord = 4, .max_ird = 4, .atomics = true, .send_cq = p.cq,
        .recv_cq = p.cq,
    };

    p.qp = rnic_qp_new(5, &a);
    ck_assert_ptr_nonnull(p.qp);
    return p;
}

static void pair_free(struct pair *p)
{
    rnic_qp_free(p->qp);
    rnic_srq_destroy(p->srq);
    rnic_cq_destroy(p->cq);
}

static void pair_save(const struct pair *p, struct rnic_sv *s)
{
    *s = (struct rnic_sv) { 0 };
    rnic_cq_save(s, p->cq);
    rnic_srq_save(s, p->srq);
    rnic_qp_save(s, p->qp);
    ck_assert(!s->failed);
}

static int pair_load(struct pair *p, const void *buf, size_t len)
{
    struct rnic_ld l;

    rnic_ld_init(&l, buf, len);
    if (rnic_cq_load(&l, p->cq) || rnic_srq_load(&l, p->srq) ||
        rnic_qp_load(&l, p->qp)) {
        return -EINVAL;
    }
    return l.off == len ? 0 : -EINVAL;
}

/* Receives, sends (one with inline data), a CQE waiting, the CQ armed. */
static void pair_fill(struct pair *p)
{
    struct rnic_recv_wr r = { .wr_id = 1, .num_sge = 1,
                              .sge = { { .stag = 0x100, .length = 64 } } };
    struct rnic_send_wr w = { .wr_id = 10, .opcode = RNIC_WR_WRITE,
                              .flags = RNIC_WR_SIGNALED, .num_sge = 1,
                              .sge = { { .stag = 0x200, .length = 8 } },
                              .remote_stag = 0x300, .remote_to = 0x40 };
    struct rnic_cqe e = { .wr_id = 77, .opcode = RNIC_WC_RECV,
                          .byte_len = 5, .qpn = 5 };

    ck_assert_int_eq(rnic_qp_post_recv(p->qp, &r), 0);
    r.wr_id = 2;
    ck_assert_int_eq(rnic_qp_post_recv(p->qp, &r), 0);
    ck_assert_int_eq(rnic_srq_post_recv(p->srq, &r), 0);
    ck_assert_int_eq(rnic_qp_adopt_connection(p->qp, 2, 3), 0);
    ck_assert_int_eq(rnic_qp_post_send(p->qp, &w), 0);
    w.wr_id = 11;
    w.flags |= RNIC_WR_INLINE;
    w.num_sge = 0;
    w.inline_len = 5;
    memcpy(w.inline_data, "hello", 5);
    ck_assert_int_eq(rnic_qp_post_send(p->qp, &w), 0);
    ck_assert_ptr_nonnull(rnic_qp_sq_next(p->qp));
    ck_assert_int_eq(rnic_cq_push(p->cq, &e), 0);
    rnic_cq_arm(p->cq, RNIC_CQ_ARM_SOLICITED);
}

START_TEST(test_save_queues)
{
    struct pair p = pair_new(), q = pair_new();
    struct rnic_sv s1, s2;
    struct rnic_cqe e;

    pair_fill(&p);
    pair_save(&p, &s1);
    ck_assert_int_eq(pair_load(&q, s1.buf, s1.len), 0);
    pair_save(&q, &s2);
    ck_assert_uint_eq(s1.len, s2.len);
    ck_assert_mem_eq(s1.buf, s2.buf, s1.len);
    ck_assert_int_eq(q.qp->state, RNIC_QP_RTS);
    ck_assert_uint_eq(q.qp->ord, 2);
    ck_assert_uint_eq(q.qp->ird, 3);
    ck_assert_str_eq(rnic_cq_armed_str(q.cq), "solicited");
    ck_assert_uint_eq(rnic_cq_poll(q.cq, &e, 1), 1);
    ck_assert_uint_eq(e.wr_id, 77);
    /* the started Write is the next to complete; the inline one follows */
    ck_assert_int_eq(rnic_qp_sq_done(q.qp, &q.qp->sq.slots[0].wr,
                                     RNIC_WC_SUCCESS), 0);
    ck_assert_uint_eq(rnic_cq_poll(q.cq, &e, 1), 1);
    ck_assert_uint_eq(e.wr_id, 10);
    ck_assert_mem_eq(rnic_qp_sq_next(q.qp)->inline_data, "hello", 5);
    ck_assert_uint_eq(rnic_srq_count(q.srq), 1);
    /* the queue goes on past the slots the load filled */
    for (int i = 0; i < 8; i++) {
        struct rnic_recv_wr r = { .wr_id = 100 + i };

        ck_assert_int_eq(rnic_qp_post_recv(q.qp, &r), i < 6 ? 0 : -ENOMEM);
    }
    rnic_sv_free(&s1);
    rnic_sv_free(&s2);
    pair_free(&p);
    pair_free(&q);
}
END_TEST

START_TEST(test_save_queues_damaged)
{
    struct pair p = pair_new();
    struct rnic_sv s;

    pair_fill(&p);
    pair_save(&p, &s);
    for (size_t n = 0; n < s.len; n++) {
        struct pair q = pair_new();

        ck_assert_int_eq(pair_load(&q, s.buf, n), -EINVAL);
        pair_free(&q);
    }
    for (size_t n = 0; n < s.len; n++) {
        struct pair q = pair_new();

        s.buf[n] ^= 0xff;
        pair_load(&q, s.buf, s.len);
        s.buf[n] ^= 0xff;
        pair_free(&q);
    }
    rnic_sv_free(&s);
    pair_free(&p);
}
END_TEST

Suite *save_suite(void)
{
    Suite *s = suite_create("save");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_save_stag_table);
    tcase_add_test(tc, test_save_stag_damaged);
    tcase_add_test(tc, test_save_qpn_table);
    tcase_add_test(tc, test_save_queues);
    tcase_add_test(tc, test_save_queues_damaged);
    suite_add_tcase(s, tc);
    return s;
}
