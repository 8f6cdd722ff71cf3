/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The protection tables.  "Guest memory" is a plain buffer whose DMA
 * callbacks refuse every byte outside it, so a placement computed wrongly
 * fails or shows up in a byte-exact comparison instead of landing quietly
 * somewhere else.
 */
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include "iwarp/stag.h"
#include "support/stag_check.h"
#include "suites.h"
#include "support/memdma.h"

#define GUEST_BASE  0x40000000ull           /* 2 MiB aligned */
#define GUEST_SIZE  ((size_t)8 << 20)
#define PAGE        4096u
#define QPN         7u

static struct memdma g;
static struct rnic_dma dma;
static struct rnic_stag_table *t;
static uint32_t pd1, pd2;

/* ---- guest memory ---- */

static uint64_t gaddr(size_t off)
{
    return GUEST_BASE + off;
}

static void guest_fill(void)
{
    for (size_t i = 0; i < GUEST_SIZE; i++) {
        g.mem[i] = (uint8_t)(i * 7 + 3);
    }
}

/* Compares all of guest memory with @want and names the first difference. */
static void guest_expect(const uint8_t *want)
{
    size_t i = 0;

    if (memcmp(g.mem, want, GUEST_SIZE) == 0) {
        return;
    }
    while (g.mem[i] == want[i]) {
        i++;
    }
    ck_abort_msg("guest byte 0x%zx is 0x%02x, want 0x%02x",
                 i, g.mem[i], want[i]);
}

static uint8_t *guest_snapshot(void)
{
    uint8_t *copy = malloc(GUEST_SIZE);

    ck_assert_ptr_nonnull(copy);
    memcpy(copy, g.mem, GUEST_SIZE);
    return copy;
}

static void setup(void)
{
    struct rnic_stag_table_params p = {
        .max_stags = 1024, .max_pds = 16, .max_recv_links = 64,
    };

    memdma_init(&g, GUEST_BASE, GUEST_SIZE);
    guest_fill();
    dma = g.dma;
    t = rnic_stag_table_new(&p);
    ck_assert_ptr_nonnull(t);
    ck_assert_st(rnic_pd_alloc(t, &pd1), RNIC_STAG_OK);
    ck_assert_st(rnic_pd_alloc(t, &pd2), RNIC_STAG_OK);
    ck_assert_uint_ne(pd1, pd2);
}

static void teardown(void)
{
    rnic_stag_table_free(t);
    memdma_free(&g);
}

/* ---- helpers ---- */

/* A persistent, remotely invalidatable region over @npages 4 KiB pages. */
static struct rnic_mr_attr mr_attr(uint32_t pd, const uint64_t *pages,
                                   uint32_t npages, uint64_t base_to)
{
    return (struct rnic_mr_attr){
        .pd = pd, .key = 0x10,
        .access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ |
                  RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_MW_BIND,
        .policy = RNIC_STAG_PERSISTENT, .remote_invalidate = true,
        .pages = pages, .npages = npages, .page_shift = 12,
        .length = (uint64_t)npages * PAGE, .base_to = base_to,
    };
}

static uint32_t must_register(const struct rnic_mr_attr *a)
{
    uint32_t stag = 0;

    ck_assert_st(rnic_mr_register(t, a, &stag), RNIC_STAG_OK);
    ck_assert_uint_eq(rnic_stag_key(stag), a->key);
    return stag;
}

static const uint64_t first_page = GUEST_BASE;

/* The usual test region: guest page 0 at TO 0x1000. */
static struct rnic_mr_attr page_attr(uint8_t key)
{
    struct rnic_mr_attr a = mr_attr(pd1, &first_page, 1, 0x1000);

    a.key = key;
    return a;
}

static uint32_t page_mr(uint8_t key)
{
    struct rnic_mr_attr a = page_attr(key);

    return must_register(&a);
}

static enum rnic_stag_status resolve(uint32_t stag, uint32_t pd, uint32_t qpn,
                                     uint64_t to, uint64_t len, unsigned acc)
{
    struct rnic_mem_ref ref;

    return rnic_stag_resolve(t, stag, pd, qpn, to, len, acc, &ref);
}

/* What the receive path does with one tagged DDP segment. */
static enum rnic_stag_status rdma_write(uint32_t stag, uint32_t pd,
                                        uint64_t to, const void *buf,
                                        size_t len, bool last)
{
    struct rnic_mem_ref ref;
    enum rnic_stag_status st;

    st = rnic_stag_resolve(t, stag, pd, QPN, to, len,
                           RNIC_ACCESS_REMOTE_WRITE, &ref);
    if (st == RNIC_STAG_OK) {
        st = rnic_mem_place(&dma, &ref, buf);
    }
    if (st == RNIC_STAG_OK && last) {
        rnic_stag_message_done(t, stag);
    }
    return st;
}

static struct rnic_mw_bind_attr bind_attr(uint32_t mr_stag, uint8_t key,
                                          uint64_t to, uint64_t len)
{
    return (struct rnic_mw_bind_attr){
        .mr_stag = mr_stag, .pd = pd1, .qpn = QPN, .key = key,
        .access = RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_WRITE,
        .policy = RNIC_STAG_PERSISTENT, .remote_invalidate = true,
        .to = to, .length = len,
    };
}

static uint32_t must_bind(uint32_t mw, const struct rnic_mw_bind_attr *a)
{
    uint32_t stag = 0;

    ck_assert_st(rnic_mw_bind(t, mw, a, &stag), RNIC_STAG_OK);
    ck_assert_uint_eq(rnic_stag_index(stag), rnic_stag_index(mw));
    ck_assert_uint_eq(rnic_stag_key(stag), a->key);
    return stag;
}

/* Receive links on QP QPN's own receive queue, in pd1. */
static const struct rnic_recv_owner *qpn_queue(void)
{
    static struct rnic_recv_owner o;

    o = (struct rnic_recv_owner) { rnic_recv_queue_qp(QPN), pd1, QPN };
    return &o;
}

static enum rnic_stag_status link_recv(uint32_t stag, uint64_t recv_id)
{
    return rnic_stag_link_to_recv(t, stag, qpn_queue(), recv_id);
}

static size_t recv_consumed(uint64_t recv_id, uint32_t *stags, size_t max)
{
    return rnic_stag_recv_consumed(t, qpn_queue()->queue, recv_id, stags,
                                   max);
}

static void recv_forget(uint64_t recv_id)
{
    rnic_stag_recv_forget(t, qpn_queue()->queue, recv_id);
}

static uint32_t must_alloc_mw(enum rnic_stag_kind kind)
{
    uint32_t stag = 0;

    ck_assert_st(rnic_mw_alloc(t, pd1, kind, 0x40, &stag), RNIC_STAG_OK);
    return stag;
}

/* ---- protection domains and the table ---- */

START_TEST(test_table_params)
{
    struct rnic_stag_table_params p = { .max_stags = 0, .max_pds = 1 };

    ck_assert_ptr_null(rnic_stag_table_new(&p));
    p.max_stags = RNIC_STAG_MAX_INDEX + 1;
    ck_assert_ptr_null(rnic_stag_table_new(&p));
    p.max_stags = 4;
    p.max_pds = 0;
    ck_assert_ptr_null(rnic_stag_table_new(&p));
}
END_TEST

START_TEST(test_pd_lifecycle)
{
    struct rnic_stag_table_params p = { .max_stags = 8, .max_pds = 2 };
    struct rnic_stag_table *small = rnic_stag_table_new(&p);
    uint32_t a, b, c;

    ck_assert_st(rnic_pd_alloc(small, &a), RNIC_STAG_OK);
    ck_assert_st(rnic_pd_alloc(small, &b), RNIC_STAG_OK);
    ck_assert_st(rnic_pd_alloc(small, &c), RNIC_STAG_ERR_NO_RESOURCES);
    ck_assert_st(rnic_pd_get(small, a), RNIC_STAG_OK);   /* a QP */
    ck_assert_st(rnic_pd_free(small, a), RNIC_STAG_ERR_BUSY);
    rnic_pd_put(small, a);
    ck_assert_st(rnic_pd_free(small, a), RNIC_STAG_OK);
    ck_assert_st(rnic_pd_free(small, a), RNIC_STAG_ERR_INVALID_ARG);
    ck_assert_st(rnic_pd_get(small, a), RNIC_STAG_ERR_INVALID_ARG);
    ck_assert_st(rnic_pd_free(small, 0), RNIC_STAG_ERR_INVALID_ARG);
    ck_assert_st(rnic_pd_free(small, 3), RNIC_STAG_ERR_INVALID_ARG);
    ck_assert_st(rnic_pd_alloc(small, &c), RNIC_STAG_OK);
    ck_assert_uint_eq(c, a);
    rnic_stag_table_free(small);
}
END_TEST

START_TEST(test_pd_free_refused_while_used)
{
    uint32_t mr = page_mr(0x10);
    uint32_t mw;

    ck_assert_st(rnic_pd_free(t, pd1), RNIC_STAG_ERR_BUSY);
    ck_assert_st(rnic_mr_deregister(t, mr), RNIC_STAG_OK);
    ck_assert_st(rnic_mw_alloc(t, pd1, RNIC_STAG_MW_TYPE2, 1, &mw),
                 RNIC_STAG_OK);
    ck_assert_st(rnic_pd_free(t, pd1), RNIC_STAG_ERR_BUSY);
    ck_assert_st(rnic_mw_dealloc(t, mw), RNIC_STAG_OK);
    ck_assert_st(rnic_pd_free(t, pd1), RNIC_STAG_OK);
}
END_TEST

/* ---- registration ---- */

START_TEST(test_mr_register_rejects_bad_attrs)
{
    uint64_t pages[2] = { gaddr(0), gaddr(PAGE * 4) };
    struct rnic_mr_attr good = mr_attr(pd1, pages, 2, 0x10000);
    struct rnic_mr_attr a;
    uint32_t stag;

#define EXPECT_BAD(field_change) do { \
        a = good; \
        field_change; \
        ck_assert_st(rnic_mr_register(t, &a, &stag), \
                     RNIC_STAG_ERR_INVALID_ARG); \
    } while (0)

    EXPECT_BAD(a.pd = 0);
    EXPECT_BAD(a.pd = 15);                      /* never allocated */
    EXPECT_BAD(a.page_shift = 11);
    EXPECT_BAD(a.page_shift = 22);
    EXPECT_BAD(a.first_byte_offset = PAGE);
    EXPECT_BAD(a.length = 0);
    EXPECT_BAD(a.length = 2 * PAGE + 1);        /* needs a third page */
    EXPECT_BAD(a.npages = 1);
    EXPECT_BAD(a.length = PAGE);                /* one page too many */
    EXPECT_BAD(a.pages = NULL);
    EXPECT_BAD(a.access = RNIC_ACCESS_REMOTE_WRITE);
    EXPECT_BAD(a.access = RNIC_ACCESS_REMOTE_ATOMIC);
    EXPECT_BAD(a.access |= 1u << 7);
    EXPECT_BAD(a.base_to = UINT64_MAX - 2 * PAGE + 2);  /* TO range wraps */
#undef EXPECT_BAD
    pages[1] = gaddr(PAGE * 4 + 8);             /* unaligned page */
    ck_assert_st(rnic_mr_register(t, &good, &stag),
                 RNIC_STAG_ERR_INVALID_ARG);
    pages[1] = gaddr(PAGE * 4);
    ck_assert_st(rnic_mr_register(t, &good, &stag), RNIC_STAG_OK);
}
END_TEST

/*
 * With two released indices, a key the first one last carried takes the
 * second: the driver sees no refusal, the first stays at the head.
 */
START_TEST(test_key_reuse_takes_next_index)
{
    struct rnic_stag_table_params p = { .max_stags = 3, .max_pds = 1 };
    struct rnic_stag_table *small = rnic_stag_table_new(&p);
    uint64_t page = gaddr(0);
    struct rnic_mr_attr a;
    uint32_t pd, stag[3], again, other;

    ck_assert_st(rnic_pd_alloc(small, &pd), RNIC_STAG_OK);
    a = mr_attr(pd, &page, 1, 0);
    for (int i = 0; i < 3; i++) {
        a.key = 0x20 + i;
        ck_assert_st(rnic_mr_register(small, &a, &stag[i]), RNIC_STAG_OK);
    }
    ck_assert_st(rnic_mr_deregister(small, stag[0]), RNIC_STAG_OK);
    ck_assert_st(rnic_mr_deregister(small, stag[2]), RNIC_STAG_OK);
    a.key = 0x20;
    ck_assert_st(rnic_mr_register(small, &a, &again), RNIC_STAG_OK);
    ck_assert_uint_eq(rnic_stag_index(again), rnic_stag_index(stag[2]));
    a.key = 0x30;
    ck_assert_st(rnic_mr_register(small, &a, &other), RNIC_STAG_OK);
    ck_assert_uint_eq(rnic_stag_index(other), rnic_stag_index(stag[0]));
    ck_assert_st(rnic_mr_register(small, &a, &stag[0]),
                 RNIC_STAG_ERR_NO_RESOURCES);
    ck_assert_st(rnic_mr_deregister(small, again), RNIC_STAG_OK);
    ck_assert_st(rnic_mr_deregister(small, other), RNIC_STAG_OK);
    ck_assert_st(rnic_mr_deregister(small, stag[1]), RNIC_STAG_OK);
    ck_assert_st(rnic_pd_free(small, pd), RNIC_STAG_OK);
    rnic_stag_table_free(small);
}
END_TEST

START_TEST(test_mr_table_full)
{
    struct rnic_stag_table_params p = { .max_stags = 3, .max_pds = 1 };
    struct rnic_stag_table *small = rnic_stag_table_new(&p);
    uint64_t page = gaddr(0);
    struct rnic_mr_attr a;
    uint32_t pd, stag[4];

    ck_assert_st(rnic_pd_alloc(small, &pd), RNIC_STAG_OK);
    a = mr_attr(pd, &page, 1, 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_st(rnic_mr_register(small, &a, &stag[i]), RNIC_STAG_OK);
        ck_assert_uint_ne(rnic_stag_index(stag[i]), 0);
    }
    ck_assert_st(rnic_mr_register(small, &a, &stag[3]),
                 RNIC_STAG_ERR_NO_RESOURCES);
    ck_assert_st(rnic_mr_deregister(small, stag[1]), RNIC_STAG_OK);
    /* The only free index last carried key 0x10: not again right away. */
    ck_assert_st(rnic_mr_register(small, &a, &stag[3]),
                 RNIC_STAG_ERR_KEY_REUSED);
    ck_assert_st(rnic_mw_alloc(small, pd, RNIC_STAG_MW_TYPE1, a.key,
                               &stag[3]), RNIC_STAG_ERR_KEY_REUSED);
    a.key = 0x11;
    ck_assert_st(rnic_mr_register(small, &a, &stag[3]), RNIC_STAG_OK);
    ck_assert_uint_eq(rnic_stag_index(stag[3]), rnic_stag_index(stag[1]));
    ck_assert(!rnic_stag_lookup(small, stag[1]));
    ck_assert(rnic_stag_lookup(small, stag[3]));
    /* The refused allocations kept no PD reference. */
    for (int i = 0; i < 4; i++) {
        ck_assert_st(rnic_mr_deregister(small, stag[i]),
                     i == 1 ? RNIC_STAG_ERR_INVALID_STAG : RNIC_STAG_OK);
    }
    ck_assert_st(rnic_pd_free(small, pd), RNIC_STAG_OK);
    rnic_stag_table_free(small);
}
END_TEST

START_TEST(test_released_index_comes_back_last)
{
    uint32_t first = page_mr(0x10);
    uint32_t second;

    ck_assert_st(rnic_mr_deregister(t, first), RNIC_STAG_OK);
    second = page_mr(0x10);
    ck_assert_uint_ne(rnic_stag_index(second), rnic_stag_index(first));
    ck_assert_st(resolve(first, pd1, QPN, 0x1000, 1, RNIC_ACCESS_REMOTE_READ),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_mr_deregister(t, first), RNIC_STAG_ERR_INVALID_STAG);
}
END_TEST

/* ---- resolve: every status ---- */

START_TEST(test_resolve_every_status)
{
    uint64_t pages[2] = { gaddr(0), gaddr(PAGE) };
    struct rnic_mr_attr a = mr_attr(pd1, pages, 2, 0x7f0000000000ull);
    uint64_t base = a.base_to;
    unsigned rw = RNIC_ACCESS_REMOTE_WRITE;
    uint32_t stag = must_register(&a);
    struct rnic_mem_ref ref;

    ck_assert_st(rnic_stag_resolve(t, stag, pd1, QPN, base + 10, 100, rw,
                                   &ref), RNIC_STAG_OK);
    ck_assert_uint_eq(ref.to, base + 10);
    ck_assert_uint_eq(ref.len, 100);
    ck_assert_uint_eq(ref.stag, stag);
    /* invalid STag: index 0, out of the table, unused, wrong key */
    ck_assert_st(resolve(rnic_stag_make(0, 0x10), pd1, QPN, base, 1, rw),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(resolve(rnic_stag_make(1025, 0x10), pd1, QPN, base, 1, rw),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(resolve(rnic_stag_make(RNIC_STAG_MAX_INDEX, 0), pd1, QPN,
                         base, 1, rw), RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(resolve(rnic_stag_make(rnic_stag_index(stag) + 1, 0x10),
                         pd1, QPN, base, 1, rw), RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(resolve(rnic_stag_next_key(stag), pd1, QPN, base, 1, rw),
                 RNIC_STAG_ERR_INVALID_STAG);
    /* other PD */
    ck_assert_st(resolve(stag, pd2, QPN, base, 1, rw),
                 RNIC_STAG_ERR_NOT_ASSOCIATED);
    /* rights */
    ck_assert_st(resolve(stag, pd1, QPN, base, 1, RNIC_ACCESS_REMOTE_ATOMIC),
                 RNIC_STAG_ERR_ACCESS);
    ck_assert_st(resolve(stag, pd1, QPN, base, 1, rw | RNIC_ACCESS_LOCAL_READ),
                 RNIC_STAG_OK);
    /* bounds */
    ck_assert_st(resolve(stag, pd1, QPN, base - 1, 1, rw),
                 RNIC_STAG_ERR_BASE_BOUNDS);
    ck_assert_st(resolve(stag, pd1, QPN, base, 2 * PAGE, rw), RNIC_STAG_OK);
    ck_assert_st(resolve(stag, pd1, QPN, base, 2 * PAGE + 1, rw),
                 RNIC_STAG_ERR_BASE_BOUNDS);
    ck_assert_st(resolve(stag, pd1, QPN, base + 2 * PAGE - 1, 2, rw),
                 RNIC_STAG_ERR_BASE_BOUNDS);
    ck_assert_st(resolve(stag, pd1, QPN, base + 2 * PAGE, 0, rw),
                 RNIC_STAG_OK);
    ck_assert_st(resolve(stag, pd1, QPN, base + 2 * PAGE + 1, 0, rw),
                 RNIC_STAG_ERR_BASE_BOUNDS);
    ck_assert_st(resolve(stag, pd1, QPN, base, UINT64_MAX - base, rw),
                 RNIC_STAG_ERR_BASE_BOUNDS);
    /* TO wrap */
    ck_assert_st(resolve(stag, pd1, QPN, UINT64_MAX - 3, 5, rw),
                 RNIC_STAG_ERR_TO_WRAP);
    ck_assert_st(resolve(stag, pd1, QPN, base, UINT64_MAX, rw),
                 RNIC_STAG_ERR_TO_WRAP);
    /* invalidated */
    ck_assert_st(rnic_stag_invalidate_local(t, stag, pd1), RNIC_STAG_OK);
    ck_assert_st(resolve(stag, pd1, QPN, base, 1, rw),
                 RNIC_STAG_ERR_INVALID_STAG);
}
END_TEST

START_TEST(test_resolve_checks_in_order)
{
    uint32_t stag = page_mr(0x10);

    /* Everything wrong at once: the STag is reported first, then the PD. */
    ck_assert_st(resolve(rnic_stag_next_key(stag), pd2, QPN, UINT64_MAX, 9,
                         RNIC_ACCESS_REMOTE_ATOMIC),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(resolve(stag, pd2, QPN, UINT64_MAX, 9,
                         RNIC_ACCESS_REMOTE_ATOMIC),
                 RNIC_STAG_ERR_NOT_ASSOCIATED);
    ck_assert_st(resolve(stag, pd1, QPN, UINT64_MAX, 9,
                         RNIC_ACCESS_REMOTE_ATOMIC), RNIC_STAG_ERR_ACCESS);
    ck_assert_st(resolve(stag, pd1, QPN, UINT64_MAX, 9,
                         RNIC_ACCESS_REMOTE_READ), RNIC_STAG_ERR_TO_WRAP);
}
END_TEST

START_TEST(test_to_near_top_of_space)
{
    uint64_t page = gaddr(0);
    struct rnic_mr_attr a = mr_attr(pd1, &page, 1, UINT64_MAX - (PAGE - 1));
    unsigned rd = RNIC_ACCESS_REMOTE_READ;
    uint32_t top = must_register(&a);
    uint32_t low;
    struct rnic_mem_ref ref;
    uint8_t buf[5];

    ck_assert_st(resolve(top, pd1, QPN, UINT64_MAX - 3, 4, rd), RNIC_STAG_OK);
    ck_assert_st(resolve(top, pd1, QPN, UINT64_MAX - 3, 5, rd),
                 RNIC_STAG_ERR_TO_WRAP);
    ck_assert_st(resolve(top, pd1, QPN, UINT64_MAX, 1, rd), RNIC_STAG_OK);
    ck_assert_st(resolve(top, pd1, QPN, UINT64_MAX, 2, rd),
                 RNIC_STAG_ERR_TO_WRAP);
    ck_assert_st(resolve(top, pd1, QPN, UINT64_MAX, 0, rd), RNIC_STAG_OK);
    ck_assert_st(resolve(top, pd1, QPN, a.base_to, PAGE, rd), RNIC_STAG_OK);
    ck_assert_st(resolve(top, pd1, QPN, a.base_to, PAGE + 1, rd),
                 RNIC_STAG_ERR_TO_WRAP);
    ck_assert_st(resolve(top, pd1, QPN, a.base_to - 1, 1, rd),
                 RNIC_STAG_ERR_BASE_BOUNDS);
    /* The last four bytes of the TO space are the last four of the page. */
    ck_assert_st(rnic_stag_resolve(t, top, pd1, QPN, UINT64_MAX - 3, 4, rd,
                                   &ref), RNIC_STAG_OK);
    ck_assert_st(rnic_mem_fetch(&dma, &ref, buf), RNIC_STAG_OK);
    ck_assert_int_eq(memcmp(buf, g.mem + PAGE - 4, 4), 0);

    /* A region far below: the wrap is still seen, not a bounds error. */
    a.base_to = 0x1000;
    a.key = 0x20;
    low = must_register(&a);
    ck_assert_st(resolve(low, pd1, QPN, UINT64_MAX - 3, 5, rd),
                 RNIC_STAG_ERR_TO_WRAP);
    ck_assert_st(resolve(low, pd1, QPN, UINT64_MAX - 3, 4, rd),
                 RNIC_STAG_ERR_BASE_BOUNDS);
}
END_TEST

START_TEST(test_error_codes_match_rfc)
{
    static const struct {
        enum rnic_stag_status st;
        int ddp;
        uint8_t etype, ecode;
    } want[] = {
        { RNIC_STAG_ERR_INVALID_STAG, 0x00, 0x1, 0x00 },
        { RNIC_STAG_ERR_BASE_BOUNDS, 0x01, 0x1, 0x01 },
        { RNIC_STAG_ERR_ACCESS, -1, 0x1, 0x02 },
        { RNIC_STAG_ERR_NOT_ASSOCIATED, 0x02, 0x1, 0x03 },
        { RNIC_STAG_ERR_TO_WRAP, 0x03, 0x1, 0x04 },
        { RNIC_STAG_ERR_CANNOT_INVALIDATE, -1, 0x2, 0x09 },
    };
    uint8_t etype, ecode;

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        ck_assert_int_eq(rnic_stag_ddp_ecode(want[i].st), want[i].ddp);
        ck_assert(rnic_stag_rdmap_error(want[i].st, &etype, &ecode));
        ck_assert_uint_eq(etype, want[i].etype);
        ck_assert_uint_eq(ecode, want[i].ecode);
    }
    for (int st = RNIC_STAG_ERR_INVALID_ARG; st <= RNIC_STAG_ERR_IOV_FULL;
         st++) {
        ck_assert(!rnic_stag_rdmap_error(st, &etype, &ecode));
        ck_assert_int_eq(rnic_stag_ddp_ecode(st), -1);
        ck_assert_str_ne(rnic_stag_status_name(st), "unknown");
    }
    ck_assert(!rnic_stag_rdmap_error(RNIC_STAG_OK, &etype, &ecode));
    ck_assert_str_eq(rnic_stag_status_name(99), "unknown");
}
END_TEST

START_TEST(test_local_access)
{
    struct rnic_mr_attr a = page_attr(0x10);
    uint32_t rw, ro, mw;

    rw = must_register(&a);
    a.access = RNIC_ACCESS_REMOTE_READ;
    a.key = 0x20;
    ro = must_register(&a);
    /* Local read is implied; local write only when registered. */
    ck_assert_st(resolve(ro, pd1, 0, 0x1000, 8, RNIC_ACCESS_LOCAL_READ),
                 RNIC_STAG_OK);
    ck_assert_st(resolve(ro, pd1, 0, 0x1000, 8, RNIC_ACCESS_LOCAL_WRITE),
                 RNIC_STAG_ERR_ACCESS);
    ck_assert_st(resolve(ro, pd1, 0, 0x1000, 8, RNIC_ACCESS_REMOTE_WRITE),
                 RNIC_STAG_ERR_ACCESS);
    ck_assert_st(resolve(rw, pd1, 0, 0x1000, 8, RNIC_ACCESS_LOCAL_WRITE),
                 RNIC_STAG_OK);
    ck_assert_st(resolve(rw, pd1, 0, 0x1000 + PAGE, 1,
                         RNIC_ACCESS_LOCAL_WRITE), RNIC_STAG_ERR_BASE_BOUNDS);
    /* A window is for the peer only. */
    mw = must_alloc_mw(RNIC_STAG_MW_TYPE1);
    struct rnic_mw_bind_attr b = bind_attr(rw, 0x41, 0x1000, 64);
    mw = must_bind(mw, &b);
    ck_assert_st(resolve(mw, pd1, 0, 0x1000, 8, RNIC_ACCESS_LOCAL_READ),
                 RNIC_STAG_ERR_ACCESS);
}
END_TEST

/* ---- keys ---- */

START_TEST(test_stale_key_after_reregistration)
{
    uint64_t pages[2] = { gaddr(0), gaddr(PAGE) };
    struct rnic_mr_attr a = mr_attr(pd1, pages, 1, 0x1000);
    uint32_t old = must_register(&a);
    uint32_t fresh = 0;
    struct rnic_stag_info info;

    ck_assert_st(rnic_mr_reregister(t, old, &a, &fresh),
                 RNIC_STAG_ERR_KEY_REUSED);
    ck_assert_st(resolve(old, pd1, QPN, 0x1000, 1, RNIC_ACCESS_REMOTE_READ),
                 RNIC_STAG_OK);
    a.key = rnic_stag_key(rnic_stag_next_key(old));
    a.pages = &pages[1];
    a.pd = pd2;
    ck_assert_st(rnic_mr_reregister(t, old, &a, &fresh), RNIC_STAG_OK);
    ck_assert_uint_eq(fresh, rnic_stag_next_key(old));
    ck_assert_st(resolve(old, pd2, QPN, 0x1000, 1, RNIC_ACCESS_REMOTE_READ),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(resolve(fresh, pd2, QPN, 0x1000, 1, RNIC_ACCESS_REMOTE_READ),
                 RNIC_STAG_OK);
    ck_assert_st(rnic_mr_reregister(t, old, &a, &fresh),
                 RNIC_STAG_ERR_INVALID_STAG);
    /* The PD reference moved with the region. */
    ck_assert_st(rnic_stag_query(t, fresh, &info), RNIC_STAG_OK);
    ck_assert_uint_eq(info.pd, pd2);
    ck_assert_st(rnic_pd_free(t, pd1), RNIC_STAG_OK);
    ck_assert_st(rnic_pd_free(t, pd2), RNIC_STAG_ERR_BUSY);
    /* The key byte wraps. */
    ck_assert_uint_eq(rnic_stag_next_key(rnic_stag_make(5, 0xff)),
                      rnic_stag_make(5, 0x00));
}
END_TEST

START_TEST(test_reregister_after_invalidation)
{
    struct rnic_mr_attr a = page_attr(0x10);
    uint32_t stag = must_register(&a);
    uint32_t next;

    ck_assert_st(rnic_stag_invalidate_local(t, stag, pd1), RNIC_STAG_OK);
    a.key = rnic_stag_key(rnic_stag_next_key(stag));
    ck_assert_st(rnic_mr_reregister(t, stag, &a, &next), RNIC_STAG_OK);
    ck_assert(rnic_stag_lookup(t, next));
    ck_assert(!rnic_stag_lookup(t, stag));
}
END_TEST

/*
 * rnic_stag_lookup answers from the tag array alone: it must agree with
 * rnic_stag_query (which reads the entry) at every step of a slot's life,
 * a freed slot that still holds its old key included.
 */
static void lookup_agrees(uint32_t stag)
{
    struct rnic_stag_info info;
    bool valid = rnic_stag_query(t, stag, &info) == RNIC_STAG_OK &&
                 info.valid;

    ck_assert_int_eq(rnic_stag_lookup(t, stag), valid);
}

START_TEST(test_lookup_agrees_with_entry)
{
    struct rnic_mr_attr a = page_attr(0x10);
    uint32_t stag = must_register(&a);
    uint32_t other_key = rnic_stag_next_key(stag);

    lookup_agrees(stag);
    ck_assert(rnic_stag_lookup(t, stag));
    ck_assert(!rnic_stag_lookup(t, other_key));
    ck_assert(!rnic_stag_lookup(t, rnic_stag_make(0, rnic_stag_key(stag))));
    ck_assert(!rnic_stag_lookup(t, rnic_stag_make(1024 + 1, 0)));
    ck_assert_st(rnic_stag_invalidate_local(t, stag, pd1), RNIC_STAG_OK);
    lookup_agrees(stag);
    ck_assert(!rnic_stag_lookup(t, stag));
    ck_assert_st(rnic_mr_deregister(t, stag), RNIC_STAG_OK);
    /* Free, with its old key still in the tag: refused all the same. */
    lookup_agrees(stag);
    ck_assert(!rnic_stag_lookup(t, stag));
    ck_assert_st(resolve(stag, pd1, QPN, 0x1000, 1, RNIC_ACCESS_REMOTE_READ),
                 RNIC_STAG_ERR_INVALID_STAG);
}
END_TEST

/*
 * Resolve reads a slot's key and state from the entry's own copy, lookup
 * from the tag array: every call that changes them must change both.
 * Windows bound, re-bound, invalidated and freed, a fast-registration
 * region filled and emptied, the physical STag, a one-shot STag used up, a
 * receive-linked one consumed, a region deregistered and its index given
 * out again.
 */
START_TEST(test_lookup_agrees_after_every_change)
{
    uint32_t mr = page_mr(0x10);
    uint32_t mw1 = must_alloc_mw(RNIC_STAG_MW_TYPE1);
    uint32_t mw2 = must_alloc_mw(RNIC_STAG_MW_TYPE2);
    struct rnic_mw_bind_attr b = bind_attr(mr, 0x41, 0x1000, 256);
    struct rnic_mr_attr a = page_attr(0x20);
    uint64_t page = first_page;
    struct rnic_fast_reg_attr f = {
        .pd = pd1, .access = RNIC_ACCESS_LOCAL_WRITE |
        RNIC_ACCESS_REMOTE_WRITE, .pages = &page, .npages = 1,
        .page_shift = 12, .length = PAGE, .base_to = 0x9000,
    };
    uint32_t w1, w1b, w2, fast, phys, one, linked, again, inv;

    lookup_agrees(mw1);
    lookup_agrees(mw2);
    w1 = must_bind(mw1, &b);
    lookup_agrees(mw1);
    lookup_agrees(w1);
    b.key = 0x42;
    w1b = must_bind(w1, &b);
    lookup_agrees(w1);
    lookup_agrees(w1b);
    ck_assert_st(resolve(w1b, pd1, QPN, 0x1000, 256, RNIC_ACCESS_REMOTE_READ),
                 RNIC_STAG_OK);
    b.key = 0x43;
    w2 = must_bind(mw2, &b);
    lookup_agrees(w2);
    ck_assert_st(rnic_stag_invalidate_remote(t, w2, pd1, QPN, &inv),
                 RNIC_STAG_OK);
    lookup_agrees(w2);
    ck_assert_st(resolve(w2, pd1, QPN, 0x1000, 1, RNIC_ACCESS_REMOTE_READ),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_mw_dealloc(t, w1b), RNIC_STAG_OK);
    lookup_agrees(w1b);

    ck_assert_st(rnic_mr_alloc(t, pd1, 4, 0x50, &fast), RNIC_STAG_OK);
    lookup_agrees(fast);
    f.stag = rnic_stag_next_key(fast);
    ck_assert_st(rnic_mr_fast_reg(t, &f), RNIC_STAG_OK);
    lookup_agrees(fast);
    lookup_agrees(f.stag);
    ck_assert_st(resolve(f.stag, pd1, QPN, 0x9000, PAGE,
                         RNIC_ACCESS_REMOTE_WRITE), RNIC_STAG_OK);
    ck_assert_st(rnic_stag_invalidate_local(t, f.stag, pd1), RNIC_STAG_OK);
    lookup_agrees(f.stag);
    ck_assert_st(resolve(f.stag, pd1, QPN, 0x9000, 1,
                         RNIC_ACCESS_REMOTE_WRITE),
                 RNIC_STAG_ERR_INVALID_STAG);

    ck_assert_st(rnic_mr_alloc_phys(t, pd1, 0x60, &phys), RNIC_STAG_OK);
    lookup_agrees(phys);
    ck_assert_st(resolve(phys, pd1, QPN, gaddr(0), 8,
                         RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_PRIVILEGED),
                 RNIC_STAG_OK);

    a.policy = RNIC_STAG_ONE_SHOT;
    one = must_register(&a);
    ck_assert(rnic_stag_message_done(t, one));
    lookup_agrees(one);
    a = page_attr(0x21);
    linked = must_register(&a);
    ck_assert_st(link_recv(linked, 7), RNIC_STAG_OK);
    ck_assert_uint_eq(recv_consumed(7, NULL, 0), 1);
    lookup_agrees(linked);

    ck_assert_st(rnic_mr_deregister(t, mr), RNIC_STAG_OK);
    lookup_agrees(mr);
    a = page_attr(0x22);
    again = must_register(&a);
    lookup_agrees(again);
    ck_assert_st(resolve(again, pd1, QPN, 0x1000, PAGE,
                         RNIC_ACCESS_REMOTE_READ), RNIC_STAG_OK);
}
END_TEST

START_TEST(test_stale_key_after_rebind)
{
    uint32_t mr = page_mr(0x10);
    uint32_t mw = must_alloc_mw(RNIC_STAG_MW_TYPE1);
    struct rnic_mw_bind_attr b = bind_attr(mr, 0x41, 0x1000, 256);
    uint32_t first = must_bind(mw, &b);
    uint32_t second, dummy;

    ck_assert_st(resolve(first, pd1, 99, 0x1000, 256,
                         RNIC_ACCESS_REMOTE_WRITE), RNIC_STAG_OK);
    ck_assert_st(rnic_mw_bind(t, first, &b, &dummy),
                 RNIC_STAG_ERR_KEY_REUSED);
    b.key = rnic_stag_key(rnic_stag_next_key(first));
    b.to = 0x1100;
    second = must_bind(first, &b);
    ck_assert_st(resolve(first, pd1, QPN, 0x1100, 1, RNIC_ACCESS_REMOTE_READ),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(resolve(second, pd1, QPN, 0x1100, 256,
                         RNIC_ACCESS_REMOTE_READ), RNIC_STAG_OK);
    ck_assert_st(resolve(second, pd1, QPN, 0x1000, 1,
                         RNIC_ACCESS_REMOTE_READ), RNIC_STAG_ERR_BASE_BOUNDS);
    ck_assert_st(rnic_mw_bind(t, first, &b, &dummy),
                 RNIC_STAG_ERR_INVALID_STAG);
    /* Freed by the STag it was allocated with; never a region that way. */
    ck_assert_st(rnic_mw_dealloc(t, mr), RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_mw_dealloc(t, mw), RNIC_STAG_OK);
    ck_assert_st(resolve(second, pd1, QPN, 0x1100, 1,
                         RNIC_ACCESS_REMOTE_READ), RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_mw_dealloc(t, second), RNIC_STAG_ERR_INVALID_STAG);
}
END_TEST

/* ---- windows ---- */

START_TEST(test_type2_window_wrong_qp)
{
    uint32_t mr = page_mr(0x10);
    uint32_t mw = must_alloc_mw(RNIC_STAG_MW_TYPE2);
    struct rnic_mw_bind_attr b = bind_attr(mr, 0x41, 0x1000, 128);
    struct rnic_stag_info info;
    uint32_t bound, dummy;

    ck_assert_st(resolve(mw, pd1, QPN, 0x1000, 1, RNIC_ACCESS_REMOTE_READ),
                 RNIC_STAG_ERR_INVALID_STAG);   /* not bound yet */
    bound = must_bind(mw, &b);
    ck_assert_st(rnic_stag_query(t, bound, &info), RNIC_STAG_OK);
    ck_assert_uint_eq(info.kind, RNIC_STAG_MW_TYPE2);
    ck_assert_uint_eq(info.qpn, QPN);
    ck_assert_st(resolve(bound, pd1, QPN, 0x1000, 128,
                         RNIC_ACCESS_REMOTE_WRITE), RNIC_STAG_OK);
    ck_assert_st(resolve(bound, pd1, QPN + 1, 0x1000, 128,
                         RNIC_ACCESS_REMOTE_WRITE),
                 RNIC_STAG_ERR_NOT_ASSOCIATED);
    ck_assert_st(resolve(bound, pd2, QPN, 0x1000, 128,
                         RNIC_ACCESS_REMOTE_WRITE),
                 RNIC_STAG_ERR_NOT_ASSOCIATED);
    /* A bound type 2 window is invalidated before it is bound again. */
    b.key = 0x42;
    ck_assert_st(rnic_mw_bind(t, bound, &b, &dummy), RNIC_STAG_ERR_BUSY);
    ck_assert_st(rnic_stag_invalidate_local(t, bound, pd1), RNIC_STAG_OK);
    b.qpn = QPN + 1;
    bound = must_bind(bound, &b);
    ck_assert_st(resolve(bound, pd1, QPN, 0x1000, 1, RNIC_ACCESS_REMOTE_READ),
                 RNIC_STAG_ERR_NOT_ASSOCIATED);
    ck_assert_st(resolve(bound, pd1, QPN + 1, 0x1000, 1,
                         RNIC_ACCESS_REMOTE_READ), RNIC_STAG_OK);
}
END_TEST

START_TEST(test_type1_window_serves_whole_pd)
{
    uint32_t mr = page_mr(0x10);
    uint32_t mw = must_alloc_mw(RNIC_STAG_MW_TYPE1);
    struct rnic_mw_bind_attr b = bind_attr(mr, 0x41, 0x1000, 128);

    mw = must_bind(mw, &b);
    ck_assert_st(resolve(mw, pd1, 1, 0x1000, 1, RNIC_ACCESS_REMOTE_READ),
                 RNIC_STAG_OK);
    ck_assert_st(resolve(mw, pd1, 2, 0x1000, 1, RNIC_ACCESS_REMOTE_READ),
                 RNIC_STAG_OK);
    ck_assert_st(resolve(mw, pd2, 1, 0x1000, 1, RNIC_ACCESS_REMOTE_READ),
                 RNIC_STAG_ERR_NOT_ASSOCIATED);
}
END_TEST

START_TEST(test_bind_checks)
{
    struct rnic_mr_attr a = page_attr(0x10);
    uint32_t mr = must_register(&a);
    uint32_t no_bind, read_only, one_shot, other_pd, mw, out;
    struct rnic_mw_bind_attr b;

    a.key = 0x20;
    a.access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ;
    no_bind = must_register(&a);
    a.key = 0x21;
    a.access = RNIC_ACCESS_MW_BIND;
    read_only = must_register(&a);
    a.key = 0x22;
    a.access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_MW_BIND;
    a.policy = RNIC_STAG_ONE_SHOT;
    one_shot = must_register(&a);
    a.key = 0x23;
    a.policy = RNIC_STAG_PERSISTENT;
    a.pd = pd2;
    other_pd = must_register(&a);
    mw = must_alloc_mw(RNIC_STAG_MW_TYPE1);

#define EXPECT_BIND(change, want) do { \
        b = bind_attr(mr, 0x41, 0x1000, 64); \
        change; \
        ck_assert_st(rnic_mw_bind(t, mw, &b, &out), want); \
    } while (0)

    EXPECT_BIND(b.mr_stag = no_bind, RNIC_STAG_ERR_ACCESS);
    EXPECT_BIND(b.mr_stag = read_only, RNIC_STAG_ERR_ACCESS);
    EXPECT_BIND((b.mr_stag = read_only, b.access = RNIC_ACCESS_REMOTE_ATOMIC),
                RNIC_STAG_ERR_ACCESS);
    EXPECT_BIND(b.mr_stag = one_shot, RNIC_STAG_ERR_BUSY);
    EXPECT_BIND(b.mr_stag = other_pd, RNIC_STAG_ERR_NOT_ASSOCIATED);
    EXPECT_BIND(b.pd = pd2, RNIC_STAG_ERR_NOT_ASSOCIATED);
    EXPECT_BIND(b.mr_stag = rnic_stag_next_key(mr),
                RNIC_STAG_ERR_INVALID_STAG);
    EXPECT_BIND(b.mr_stag = mw, RNIC_STAG_ERR_INVALID_STAG);
    EXPECT_BIND(b.access |= RNIC_ACCESS_LOCAL_WRITE,
                RNIC_STAG_ERR_INVALID_ARG);
    EXPECT_BIND(b.access |= RNIC_ACCESS_MW_BIND, RNIC_STAG_ERR_INVALID_ARG);
    EXPECT_BIND(b.to = 0xfff, RNIC_STAG_ERR_BASE_BOUNDS);
    EXPECT_BIND(b.length = PAGE + 1, RNIC_STAG_ERR_BASE_BOUNDS);
    EXPECT_BIND((b.to = 0x1000 + PAGE - 8, b.length = 9),
                RNIC_STAG_ERR_BASE_BOUNDS);
    EXPECT_BIND(b.to = UINT64_MAX, RNIC_STAG_ERR_TO_WRAP);
    /* Read-only windows on a region without local write are fine. */
    EXPECT_BIND((b.mr_stag = read_only, b.access = RNIC_ACCESS_REMOTE_READ),
                RNIC_STAG_OK);
    ck_assert_st(resolve(out, pd1, QPN, 0x1000, 64, RNIC_ACCESS_REMOTE_WRITE),
                 RNIC_STAG_ERR_ACCESS);
#undef EXPECT_BIND
    /* An MR STag is not a window, and nothing binds a freed window. */
    b = bind_attr(mr, 0x50, 0x1000, 64);
    ck_assert_st(rnic_mw_bind(t, mr, &b, &out), RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_mw_alloc(t, pd1, RNIC_STAG_MR, 0, &out),
                 RNIC_STAG_ERR_INVALID_ARG);
    ck_assert_st(rnic_mw_alloc(t, 0, RNIC_STAG_MW_TYPE1, 0, &out),
                 RNIC_STAG_ERR_INVALID_ARG);
}
END_TEST

START_TEST(test_window_places_through_its_region)
{
    uint64_t pages[2] = { gaddr(8 * PAGE), gaddr(2 * PAGE) };
    struct rnic_mr_attr a = mr_attr(pd1, pages, 2, 0x500000);
    uint32_t mr = must_register(&a);
    uint32_t mw = must_alloc_mw(RNIC_STAG_MW_TYPE2);
    struct rnic_mw_bind_attr b = bind_attr(mr, 0x41, 0x500000 + PAGE - 16,
                                           64);
    uint8_t *want = guest_snapshot();
    uint8_t data[32];

    mw = must_bind(mw, &b);
    for (size_t i = 0; i < sizeof(data); i++) {
        data[i] = (uint8_t)(0xa0 + i);
    }
    ck_assert_st(rdma_write(mw, pd1, 0x500000 + PAGE - 16, data, 32, false),
                 RNIC_STAG_OK);
    memcpy(want + 9 * PAGE - 16, data, 16);
    memcpy(want + 2 * PAGE, data + 16, 16);
    guest_expect(want);
    free(want);
}
END_TEST

START_TEST(test_region_with_windows_is_pinned)
{
    struct rnic_mr_attr a = page_attr(0x10);
    uint32_t mr = must_register(&a);
    uint32_t mw1 = must_alloc_mw(RNIC_STAG_MW_TYPE1);
    uint32_t mw2 = must_alloc_mw(RNIC_STAG_MW_TYPE2);
    struct rnic_mw_bind_attr b = bind_attr(mr, 0x41, 0x1000, 64);
    struct rnic_stag_info info;
    uint32_t dummy;

    mw1 = must_bind(mw1, &b);
    mw2 = must_bind(mw2, &b);
    ck_assert_st(rnic_stag_query(t, mr, &info), RNIC_STAG_OK);
    ck_assert_uint_eq(info.bound_windows, 2);
    ck_assert_st(rnic_mr_deregister(t, mr), RNIC_STAG_ERR_BUSY);
    ck_assert_st(rnic_stag_invalidate_local(t, mr, pd1),
                 RNIC_STAG_ERR_CANNOT_INVALIDATE);
    ck_assert_st(rnic_stag_invalidate_remote(t, mr, pd1, QPN, &dummy),
                 RNIC_STAG_ERR_CANNOT_INVALIDATE);
    ck_assert_st(link_recv(mr, 1), RNIC_STAG_ERR_BUSY);
    a.key = 0x11;
    ck_assert_st(rnic_mr_reregister(t, mr, &a, &dummy), RNIC_STAG_ERR_BUSY);
    ck_assert(rnic_stag_lookup(t, mr));
    /* Invalidating the type 2 window and freeing the type 1 one unpin it. */
    ck_assert_st(rnic_stag_invalidate_remote(t, mw2, pd1, QPN, &dummy),
                 RNIC_STAG_OK);
    ck_assert_st(rnic_mr_deregister(t, mr), RNIC_STAG_ERR_BUSY);
    ck_assert_st(rnic_mw_dealloc(t, mw1), RNIC_STAG_OK);
    ck_assert_st(resolve(mw1, pd1, QPN, 0x1000, 1, RNIC_ACCESS_REMOTE_READ),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_mw_dealloc(t, mw1), RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_stag_query(t, mr, &info), RNIC_STAG_OK);
    ck_assert_uint_eq(info.bound_windows, 0);
    ck_assert_st(rnic_mr_deregister(t, mr), RNIC_STAG_OK);
    ck_assert_st(rnic_mw_dealloc(t, mw2), RNIC_STAG_OK);
    ck_assert_st(rnic_pd_free(t, pd1), RNIC_STAG_OK);
}
END_TEST

/* ---- moving bytes ---- */

/* Guest offset of byte @k of a placement at region offset @off. */
static size_t expected_offset(const uint64_t *pages, unsigned shift,
                              uint32_t fbo, uint64_t off, size_t k)
{
    uint64_t pos = fbo + off + k;
    uint64_t mask = (1ull << shift) - 1;

    return pages[pos >> shift] + (pos & mask) - GUEST_BASE;
}

/* Places @len bytes at region offset @off and checks every guest byte. */
static void place_and_check(uint32_t stag, const struct rnic_mr_attr *a,
                            uint64_t off, size_t len)
{
    uint8_t *src = malloc(len), *back = malloc(len);
    uint8_t *want = guest_snapshot();
    struct rnic_mem_ref ref;

    for (size_t k = 0; k < len; k++) {
        src[k] = (uint8_t)(k * 13 + 1);
        want[expected_offset(a->pages, a->page_shift, a->first_byte_offset,
                             off, k)] = src[k];
    }
    ck_assert_st(rnic_stag_resolve(t, stag, a->pd, QPN, a->base_to + off,
                                   len, RNIC_ACCESS_REMOTE_WRITE |
                                   RNIC_ACCESS_REMOTE_READ, &ref),
                 RNIC_STAG_OK);
    ck_assert_st(rnic_mem_place(&dma, &ref, src), RNIC_STAG_OK);
    guest_expect(want);
    ck_assert_st(rnic_mem_fetch(&dma, &ref, back), RNIC_STAG_OK);
    ck_assert_int_eq(memcmp(src, back, len), 0);
    ck_assert_uint_eq(g.faults, 0);
    ck_assert_int_eq(g.mapped, 0);
    free(want);
    free(back);
    free(src);
}

START_TEST(test_place_across_pages)
{
    /* Out of order, with a hole: a wrong page index shows up. */
    uint64_t pages[3] = { gaddr(5 * PAGE), gaddr(1 * PAGE), gaddr(9 * PAGE) };
    struct rnic_mr_attr a = mr_attr(pd1, pages, 3, 0x7f0000001064ull);
    uint32_t stag;

    a.first_byte_offset = 100;
    a.length = 3 * PAGE - 100 - 50;
    stag = must_register(&a);
    guest_fill();
    place_and_check(stag, &a, 3900, PAGE + 500);    /* pages 0, 1, 2 */
    place_and_check(stag, &a, 0, 1);
    place_and_check(stag, &a, a.length - 7, 7);
    place_and_check(stag, &a, 0, a.length);
    /*
     * Placing and fetching copy (one translation per run of pages); maps
     * are for what a socket call reads or fills in place.
     */
    ck_assert_uint_eq(g.maps, 0);
}
END_TEST

START_TEST(test_place_contiguous_pages)
{
    uint64_t pages[3] = { gaddr(4 * PAGE), gaddr(5 * PAGE), gaddr(6 * PAGE) };
    struct rnic_mr_attr a = mr_attr(pd1, pages, 3, 0x2000);
    uint32_t stag;

    a.first_byte_offset = 17;
    a.length = 3 * PAGE - 17;
    stag = must_register(&a);
    place_and_check(stag, &a, 4000, 5000);
}
END_TEST

START_TEST(test_map_merges_adjacent_pages)
{
    /* Two runs: pages 4 and 5, then page 9 after a gap. */
    uint64_t pages[3] = { gaddr(4 * PAGE), gaddr(5 * PAGE), gaddr(9 * PAGE) };
    struct rnic_mr_attr a = mr_attr(pd1, pages, 3, 0x30000);
    uint32_t stag = must_register(&a);
    struct rnic_mem_iov iov[4];
    struct rnic_mem_ref ref;
    size_t n;

    ck_assert_st(rnic_stag_resolve(t, stag, pd1, QPN, 0x30000 + 100,
                                   3 * PAGE - 200, RNIC_ACCESS_REMOTE_READ,
                                   &ref),
                 RNIC_STAG_OK);
    ck_assert_st(rnic_mem_map(&dma, &ref, false, iov, 4, &n), RNIC_STAG_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_ptr_eq(iov[0].base, g.mem + 4 * PAGE + 100);
    ck_assert_uint_eq(iov[0].len, 2 * PAGE - 100);
    ck_assert_ptr_eq(iov[1].base, g.mem + 9 * PAGE);
    ck_assert_uint_eq(iov[1].len, PAGE - 100);
    rnic_mem_unmap(&dma, iov, n, false, 0);
    ck_assert_int_eq(g.mapped, 0);
    /* Within the first run only: one piece. */
    ref.len = PAGE;
    ck_assert_st(rnic_mem_map(&dma, &ref, false, iov, 4, &n), RNIC_STAG_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(iov[0].len, PAGE);
    rnic_mem_unmap(&dma, iov, n, false, 0);
    ck_assert_int_eq(g.mapped, 0);
}
END_TEST

START_TEST(test_place_huge_pages)
{
    const uint64_t huge = 2u << 20;
    uint64_t pages[2] = { gaddr(4u << 20), gaddr(0) };
    struct rnic_mr_attr a = mr_attr(pd1, pages, 2, 0x40000000000ull + 0x1234);
    uint32_t stag;

    a.page_shift = 21;
    a.first_byte_offset = 0x1234;
    a.length = 2 * huge - 0x1234 - 16;
    stag = must_register(&a);
    place_and_check(stag, &a, huge - 0x1234 - 10, 30);
    place_and_check(stag, &a, huge - 0x1234 - 3000, 6000);
}
END_TEST

START_TEST(test_pages_outside_guest_memory)
{
    uint64_t half[2] = { gaddr(GUEST_SIZE - PAGE), gaddr(GUEST_SIZE + PAGE) };
    uint64_t far = 0x7000000000ull;
    uint64_t top = UINT64_MAX - (PAGE - 1);
    struct rnic_mr_attr a = mr_attr(pd1, half, 2, 0x1000);
    uint32_t split, away, last;
    uint8_t *buf = calloc(1, 2 * PAGE);
    uint8_t *want;
    struct rnic_mem_iov iov[8];
    struct rnic_mem_ref ref;
    size_t n;

    split = must_register(&a);
    a = mr_attr(pd1, &far, 1, 0x1000);
    a.key = 0x20;
    away = must_register(&a);
    a = mr_attr(pd1, &top, 1, 0x1000);
    a.key = 0x21;
    last = must_register(&a);
    want = guest_snapshot();

    ck_assert_st(rnic_stag_resolve(t, split, pd1, QPN, 0x1000, 2 * PAGE,
                                   RNIC_ACCESS_REMOTE_WRITE, &ref),
                 RNIC_STAG_OK);
    ck_assert_st(rnic_mem_place(&dma, &ref, buf), RNIC_STAG_ERR_DMA);
    ck_assert_st(rnic_mem_fetch(&dma, &ref, buf), RNIC_STAG_ERR_DMA);
    ck_assert_st(rnic_mem_map(&dma, &ref, true, iov, 8, &n),
                 RNIC_STAG_ERR_DMA);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(g.mapped, 0);
    for (int i = 0; i < 2; i++) {
        uint32_t stag = i ? last : away;

        ck_assert_st(rnic_stag_resolve(t, stag, pd1, QPN, 0x1000, PAGE,
                                       RNIC_ACCESS_REMOTE_WRITE, &ref),
                     RNIC_STAG_OK);
        ck_assert_st(rnic_mem_place(&dma, &ref, buf), RNIC_STAG_ERR_DMA);
        ck_assert_st(rnic_mem_fetch(&dma, &ref, buf), RNIC_STAG_ERR_DMA);
        ck_assert_st(rnic_mem_map(&dma, &ref, false, iov, 8, &n),
                     RNIC_STAG_ERR_DMA);
    }
    ck_assert_uint_gt(g.faults, 0);
    ck_assert_int_eq(g.mapped, 0);
    /* Only the in-range first page of the split region may have changed. */
    memset(want + GUEST_SIZE - PAGE, 0, PAGE);
    guest_expect(want);
    free(want);
    free(buf);
}
END_TEST

START_TEST(test_map_iov)
{
    uint64_t pages[3] = { gaddr(3 * PAGE), gaddr(PAGE), gaddr(7 * PAGE) };
    struct rnic_mr_attr a = mr_attr(pd1, pages, 3, 0x10000);
    uint32_t stag = must_register(&a);
    struct rnic_mem_iov iov[16];
    struct rnic_mem_ref ref;
    uint8_t *want = guest_snapshot();
    size_t n, total = 0;
    uint8_t v = 0;

    g.map_limit = 1500;
    ck_assert_st(rnic_stag_resolve(t, stag, pd1, QPN, 0x10000 + 100,
                                   2 * PAGE, RNIC_ACCESS_REMOTE_WRITE, &ref),
                 RNIC_STAG_OK);
    /* 3996 + 4096 + 100 bytes in pieces of at most 1500: 3 + 3 + 1. */
    ck_assert_st(rnic_mem_map(&dma, &ref, true, iov, 6, &n),
                 RNIC_STAG_ERR_IOV_FULL);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(g.mapped, 0);
    ck_assert_st(rnic_mem_map(&dma, &ref, true, iov, 16, &n), RNIC_STAG_OK);
    ck_assert_uint_eq(n, 7);
    ck_assert_int_eq(g.mapped, 7);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < iov[i].len; k++) {
            ((uint8_t *)iov[i].base)[k] = v;
            want[expected_offset(pages, 12, 0, 100, total + k)] = v++;
        }
        total += iov[i].len;
    }
    ck_assert_uint_eq(total, 2 * PAGE);
    rnic_mem_unmap(&dma, iov, n, true, total);
    ck_assert_int_eq(g.mapped, 0);
    guest_expect(want);
    /* Without a map callback there is no zero copy. */
    dma.map = NULL;
    ck_assert_st(rnic_mem_map(&dma, &ref, true, iov, 16, &n),
                 RNIC_STAG_ERR_DMA);
    free(want);
}
END_TEST

START_TEST(test_zero_length_places_nothing)
{
    uint32_t stag = page_mr(0x10);
    struct rnic_mem_ref ref;

    ck_assert_st(rnic_stag_resolve(t, stag, pd1, QPN, 0x1000 + PAGE, 0,
                                   RNIC_ACCESS_REMOTE_WRITE, &ref),
                 RNIC_STAG_OK);
    dma.read = NULL;                /* any DMA call would crash */
    dma.write = NULL;
    dma.map = NULL;
    ck_assert_st(rnic_mem_place(&dma, &ref, NULL), RNIC_STAG_OK);
    ck_assert_st(rnic_mem_fetch(&dma, &ref, NULL), RNIC_STAG_OK);
}
END_TEST

/* ---- invalidation ---- */

START_TEST(test_local_invalidate)
{
    uint32_t stag = page_mr(0x10);
    struct rnic_stag_info info;

    ck_assert_st(rnic_stag_invalidate_local(t, rnic_stag_next_key(stag), pd1),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_stag_invalidate_local(t, stag, pd2),
                 RNIC_STAG_ERR_NOT_ASSOCIATED);
    ck_assert(rnic_stag_lookup(t, stag));
    ck_assert_st(rnic_stag_invalidate_local(t, stag, pd1), RNIC_STAG_OK);
    ck_assert(!rnic_stag_lookup(t, stag));
    ck_assert_st(rnic_stag_query(t, stag, &info), RNIC_STAG_OK);
    ck_assert(!info.valid);
    ck_assert_st(rnic_stag_invalidate_local(t, stag, pd1), RNIC_STAG_OK);
    ck_assert_st(rnic_mr_deregister(t, stag), RNIC_STAG_OK);
    ck_assert_st(rnic_stag_invalidate_local(t, stag, pd1),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_stag_query(t, stag, &info), RNIC_STAG_ERR_INVALID_STAG);
}
END_TEST

START_TEST(test_send_with_invalidate_then_write_refused)
{
    uint32_t stag = page_mr(0x10);
    uint32_t inv = 0;
    uint8_t data[16] = { 1, 2, 3 };
    uint8_t *want;

    ck_assert_st(rdma_write(stag, pd1, 0x1000, data, 16, true), RNIC_STAG_OK);
    ck_assert_st(rdma_write(stag, pd1, 0x1000, data, 16, true), RNIC_STAG_OK);
    ck_assert_st(rnic_stag_invalidate_remote(t, stag, pd1, QPN, &inv),
                 RNIC_STAG_OK);
    ck_assert_uint_eq(inv, stag);
    want = guest_snapshot();
    data[0] = 0xee;
    ck_assert_st(rdma_write(stag, pd1, 0x1000, data, 16, true),
                 RNIC_STAG_ERR_INVALID_STAG);
    guest_expect(want);
    /* A second Send with Invalidate names an STag that is no longer valid. */
    ck_assert_st(rnic_stag_invalidate_remote(t, stag, pd1, QPN, &inv),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_uint_eq(inv, 0);
    free(want);
}
END_TEST

START_TEST(test_send_with_invalidate_errors)
{
    struct rnic_mr_attr a = page_attr(0x10);
    uint32_t mr = must_register(&a);
    uint32_t pinned, keep, mw1, mw2, inv;
    struct rnic_mw_bind_attr b;
    uint8_t etype, ecode;

    a.key = 0x20;
    a.remote_invalidate = false;
    keep = must_register(&a);
    a.key = 0x21;
    a.remote_invalidate = true;
    pinned = must_register(&a);
    mw1 = must_alloc_mw(RNIC_STAG_MW_TYPE1);
    mw2 = must_alloc_mw(RNIC_STAG_MW_TYPE2);
    b = bind_attr(pinned, 0x41, 0x1000, 64);
    mw1 = must_bind(mw1, &b);
    mw2 = must_bind(mw2, &b);

    ck_assert_st(rnic_stag_invalidate_remote(t, rnic_stag_make(999, 1), pd1,
                                             QPN, &inv),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_stag_invalidate_remote(t, rnic_stag_next_key(mr), pd1,
                                             QPN, &inv),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_stag_invalidate_remote(t, mr, pd2, QPN, &inv),
                 RNIC_STAG_ERR_NOT_ASSOCIATED);
    ck_assert_st(rnic_stag_invalidate_remote(t, mw2, pd1, QPN + 1, &inv),
                 RNIC_STAG_ERR_NOT_ASSOCIATED);
    /* The STag that must not be invalidated remotely. */
    ck_assert_st(rnic_stag_invalidate_remote(t, keep, pd1, QPN, &inv),
                 RNIC_STAG_ERR_CANNOT_INVALIDATE);
    ck_assert(rnic_stag_rdmap_error(RNIC_STAG_ERR_CANNOT_INVALIDATE, &etype,
                                    &ecode));
    ck_assert_uint_eq(ecode, 0x09);
    ck_assert_st(rnic_stag_invalidate_remote(t, mw1, pd1, QPN, &inv),
                 RNIC_STAG_ERR_CANNOT_INVALIDATE);
    ck_assert_st(rnic_stag_invalidate_remote(t, pinned, pd1, QPN, &inv),
                 RNIC_STAG_ERR_CANNOT_INVALIDATE);
    ck_assert(rnic_stag_lookup(t, keep));
    ck_assert(rnic_stag_lookup(t, mw1));
    ck_assert(rnic_stag_lookup(t, pinned));
    /* The consumer itself may still invalidate the protected one. */
    ck_assert_st(rnic_stag_invalidate_local(t, keep, pd1), RNIC_STAG_OK);
    ck_assert_st(rnic_stag_invalidate_remote(t, mw2, pd1, QPN, &inv),
                 RNIC_STAG_OK);
    ck_assert_uint_eq(inv, mw2);
}
END_TEST

START_TEST(test_one_shot_written_twice)
{
    uint64_t pages[2] = { gaddr(2 * PAGE), gaddr(6 * PAGE) };
    struct rnic_mr_attr a = mr_attr(pd1, pages, 2, 0x9000);
    uint8_t first[PAGE + 100], second[64];
    uint32_t stag;
    uint8_t *want;
    struct rnic_stag_info info;

    a.policy = RNIC_STAG_POLICY_DEFAULT;        /* table default: one-shot */
    stag = must_register(&a);
    ck_assert_st(rnic_stag_query(t, stag, &info), RNIC_STAG_OK);
    ck_assert(info.one_shot);
    memset(first, 0x5a, sizeof(first));
    memset(second, 0xc3, sizeof(second));
    /* A message of three segments: only the last one invalidates. */
    ck_assert_st(rdma_write(stag, pd1, 0x9000, first, 1000, false),
                 RNIC_STAG_OK);
    ck_assert(rnic_stag_lookup(t, stag));
    ck_assert_st(rdma_write(stag, pd1, 0x9000 + 1000, first + 1000, 1000,
                            false), RNIC_STAG_OK);
    ck_assert(rnic_stag_lookup(t, stag));
    ck_assert_st(rdma_write(stag, pd1, 0x9000 + 2000, first + 2000,
                            sizeof(first) - 2000, true), RNIC_STAG_OK);
    ck_assert(!rnic_stag_lookup(t, stag));
    ck_assert_int_eq(memcmp(g.mem + 2 * PAGE, first, PAGE), 0);
    ck_assert_int_eq(memcmp(g.mem + 6 * PAGE, first + PAGE, 100), 0);
    /* The second message is refused and places nothing. */
    want = guest_snapshot();
    ck_assert_st(rdma_write(stag, pd1, 0x9000, second, sizeof(second), true),
                 RNIC_STAG_ERR_INVALID_STAG);
    guest_expect(want);
    ck_assert(!rnic_stag_message_done(t, stag));
    free(want);
}
END_TEST

START_TEST(test_policy_default_and_override)
{
    struct rnic_stag_table_params p = {
        .max_stags = 8, .max_pds = 1, .default_policy = RNIC_STAG_PERSISTENT,
    };
    struct rnic_stag_table *pt = rnic_stag_table_new(&p);
    uint64_t page = gaddr(0);
    struct rnic_mr_attr a;
    uint32_t pd, persistent, one_shot, local_mr;

    ck_assert_st(rnic_pd_alloc(pt, &pd), RNIC_STAG_OK);
    a = mr_attr(pd, &page, 1, 0);
    a.policy = RNIC_STAG_POLICY_DEFAULT;
    ck_assert_st(rnic_mr_register(pt, &a, &persistent), RNIC_STAG_OK);
    a.policy = RNIC_STAG_ONE_SHOT;
    ck_assert_st(rnic_mr_register(pt, &a, &one_shot), RNIC_STAG_OK);
    for (int msg = 0; msg < 3; msg++) {
        ck_assert(!rnic_stag_message_done(pt, persistent));
        ck_assert(rnic_stag_lookup(pt, persistent));
    }
    ck_assert(rnic_stag_message_done(pt, one_shot));
    ck_assert(!rnic_stag_lookup(pt, one_shot));
    rnic_stag_table_free(pt);

    /* And a persistent override on the fixture's one-shot table. */
    a = mr_attr(pd1, &page, 1, 0);
    local_mr = must_register(&a);
    ck_assert(!rnic_stag_message_done(t, local_mr));
    ck_assert(rnic_stag_lookup(t, local_mr));
    ck_assert(!rnic_stag_message_done(t, rnic_stag_make(77, 0)));
}
END_TEST

START_TEST(test_one_shot_window)
{
    uint32_t mr = page_mr(0x10);
    uint32_t mw = must_alloc_mw(RNIC_STAG_MW_TYPE2);
    struct rnic_mw_bind_attr b = bind_attr(mr, 0x41, 0x1000, 64);
    struct rnic_stag_info info;
    uint8_t data[8] = { 9 };

    b.policy = RNIC_STAG_ONE_SHOT;
    mw = must_bind(mw, &b);
    ck_assert_st(rdma_write(mw, pd1, 0x1000, data, 8, true), RNIC_STAG_OK);
    ck_assert_st(rdma_write(mw, pd1, 0x1000, data, 8, true),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert(rnic_stag_lookup(t, mr));
    ck_assert_st(rnic_stag_query(t, mr, &info), RNIC_STAG_OK);
    ck_assert_uint_eq(info.bound_windows, 0);
    ck_assert_st(rnic_mr_deregister(t, mr), RNIC_STAG_OK);
}
END_TEST

/* Listing the table (the device's state dump): every used entry, once. */
START_TEST(test_list_table)
{
    struct rnic_mr_attr a = page_attr(0x10);
    struct rnic_stag_info info;
    struct rnic_mw_bind_attr b;
    uint32_t s1, s2, mw, idx = 0, seen[4], n = 0, st;

    s1 = must_register(&a);
    a.key = 0x20;
    s2 = must_register(&a);
    ck_assert_st(rnic_mr_deregister(t, s1), RNIC_STAG_OK);
    mw = must_alloc_mw(RNIC_STAG_MW_TYPE2);
    b = bind_attr(s2, 0x41, 0x1000, 64);
    mw = must_bind(mw, &b);
    ck_assert_st(link_recv(mw, 42), RNIC_STAG_OK);
    while ((st = rnic_stag_next_used(t, &idx)) && n < 4) {
        seen[n++] = st;
    }
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(seen[0], rnic_stag_index(s2) < rnic_stag_index(mw) ?
                               s2 : mw);
    ck_assert_uint_eq(seen[0] ^ seen[1], s2 ^ mw);
    ck_assert_st(rnic_stag_query(t, mw, &info), RNIC_STAG_OK);
    ck_assert_uint_eq(info.mr_stag, s2);
    ck_assert(info.recv_linked);
    ck_assert_st(rnic_stag_query(t, s2, &info), RNIC_STAG_OK);
    ck_assert(!info.recv_linked);
    ck_assert_uint_eq(info.bound_windows, 1);
}
END_TEST

START_TEST(test_recv_linked_stags)
{
    struct rnic_mr_attr a = page_attr(0x10);
    uint32_t s1, s2, s3, mw, got[4] = { 0 };
    struct rnic_mw_bind_attr b;
    uint8_t data[4] = { 1 };
    uint8_t *want;

    s1 = must_register(&a);
    a.key = 0x20;
    s2 = must_register(&a);
    a.key = 0x21;
    s3 = must_register(&a);
    mw = must_alloc_mw(RNIC_STAG_MW_TYPE2);
    b = bind_attr(s3, 0x41, 0x1000, 64);
    mw = must_bind(mw, &b);

    ck_assert_st(link_recv(s1, 42), RNIC_STAG_OK);
    ck_assert_st(link_recv(mw, 42), RNIC_STAG_OK);
    ck_assert_st(link_recv(s2, 43), RNIC_STAG_OK);
    ck_assert_st(link_recv(s2, 44), RNIC_STAG_ERR_BUSY);
    ck_assert_st(link_recv(rnic_stag_next_key(s1), 44),
                 RNIC_STAG_ERR_INVALID_STAG);
    /* Writes before the buffer is consumed go through. */
    ck_assert_st(rdma_write(s1, pd1, 0x1000, data, 4, true), RNIC_STAG_OK);
    ck_assert_st(rdma_write(mw, pd1, 0x1000, data, 4, true), RNIC_STAG_OK);

    ck_assert_uint_eq(recv_consumed(42, got, 4), 2);
    ck_assert((got[0] == s1 && got[1] == mw) || (got[0] == mw && got[1] == s1));
    want = guest_snapshot();
    data[0] = 0x77;
    ck_assert_st(rdma_write(s1, pd1, 0x1000, data, 4, true),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rdma_write(mw, pd1, 0x1000, data, 4, true),
                 RNIC_STAG_ERR_INVALID_STAG);
    guest_expect(want);
    ck_assert(rnic_stag_lookup(t, s2));
    ck_assert(rnic_stag_lookup(t, s3));             /* the window's region */
    ck_assert_uint_eq(recv_consumed(42, got, 4), 0);
    /* A flushed buffer drops its links without invalidating. */
    recv_forget(43);
    ck_assert_uint_eq(recv_consumed(43, NULL, 0), 0);
    ck_assert(rnic_stag_lookup(t, s2));
    ck_assert_st(link_recv(s2, 44), RNIC_STAG_OK);
    free(want);
}
END_TEST

/*
 * Links are scoped to a receive queue and its PD: equal WR ids on two
 * queues do not collide, a queue cannot link another PD's STag (nor a
 * type 2 window of another QP), and a queue that goes takes its links.
 */
START_TEST(test_recv_link_scoped)
{
    struct rnic_mr_attr a = page_attr(0x10);
    struct rnic_recv_owner q2 = { rnic_recv_queue_qp(QPN + 1), pd1, QPN + 1 };
    struct rnic_recv_owner srq = { rnic_recv_queue_srq(QPN), pd1, 0 };
    struct rnic_recv_owner other_pd = { rnic_recv_queue_qp(QPN + 2), pd2,
                                        QPN + 2 };
    struct rnic_mw_bind_attr b;
    uint32_t s1, s2, s3, s4, mw, got[2] = { 0 };

    s1 = must_register(&a);
    a.key = 0x20;
    s2 = must_register(&a);
    a.key = 0x21;
    s3 = must_register(&a);
    a.key = 0x22;
    s4 = must_register(&a);
    mw = must_alloc_mw(RNIC_STAG_MW_TYPE2);
    b = bind_attr(s3, 0x41, 0x1000, 64);
    mw = must_bind(mw, &b);             /* serves QP QPN only */

    ck_assert_st(rnic_stag_link_to_recv(t, s1, &other_pd, 42),
                 RNIC_STAG_ERR_NOT_ASSOCIATED);
    ck_assert_st(rnic_stag_link_to_recv(t, mw, &q2, 42),
                 RNIC_STAG_ERR_NOT_ASSOCIATED);
    ck_assert_st(rnic_stag_link_to_recv(t, mw, &srq, 42),
                 RNIC_STAG_ERR_NOT_ASSOCIATED);
    ck_assert_st(link_recv(s1, 42), RNIC_STAG_OK);
    ck_assert_st(rnic_stag_link_to_recv(t, s2, &q2, 42), RNIC_STAG_OK);
    ck_assert_st(rnic_stag_link_to_recv(t, s4, &srq, 42), RNIC_STAG_OK);

    /* QP QPN's buffer 42 takes its own STag only. */
    ck_assert_uint_eq(recv_consumed(42, got, 2), 1);
    ck_assert_uint_eq(got[0], s1);
    ck_assert(!rnic_stag_lookup(t, s1));
    ck_assert(rnic_stag_lookup(t, s2));
    ck_assert(rnic_stag_lookup(t, s4));
    /* The SRQ with the same number is another queue still. */
    ck_assert_uint_eq(rnic_stag_recv_consumed(t, srq.queue, 42, got, 2), 1);
    ck_assert_uint_eq(got[0], s4);
    ck_assert(rnic_stag_lookup(t, s2));
    /* A destroyed queue drops its links; the STag stays and links again. */
    rnic_stag_recv_forget_queue(t, q2.queue);
    ck_assert_uint_eq(rnic_stag_recv_consumed(t, q2.queue, 42, NULL, 0), 0);
    ck_assert(rnic_stag_lookup(t, s2));
    ck_assert_st(link_recv(s2, 7), RNIC_STAG_OK);
}
END_TEST

START_TEST(test_recv_link_released_with_stag)
{
    struct rnic_mr_attr a = page_attr(0x10);
    uint32_t stag[70], next;

    /* The fixture's pool has 64 links. */
    for (int i = 0; i < 64; i++) {
        a.key = (uint8_t)i;
        stag[i] = must_register(&a);
        ck_assert_st(link_recv(stag[i], 1000 + i % 5),
                     RNIC_STAG_OK);
    }
    a.key = 0xf0;
    stag[64] = must_register(&a);
    ck_assert_st(link_recv(stag[64], 1),
                 RNIC_STAG_ERR_NO_RESOURCES);
    /* Deregistration, invalidation and re-registration free their link. */
    ck_assert_st(rnic_mr_deregister(t, stag[0]), RNIC_STAG_OK);
    ck_assert_st(rnic_stag_invalidate_local(t, stag[1], pd1), RNIC_STAG_OK);
    a.key = 0xf1;
    ck_assert_st(rnic_mr_reregister(t, stag[2], &a, &next), RNIC_STAG_OK);
    ck_assert(rnic_stag_message_done(t, stag[3]) == false);
    for (int i = 0; i < 3; i++) {
        a.key = (uint8_t)(0xe0 + i);
        stag[65 + i] = must_register(&a);
        ck_assert_st(link_recv(stag[65 + i], 2000),
                     RNIC_STAG_OK);
    }
    ck_assert(rnic_stag_lookup(t, next));
    /* recv 1000 held stag 0 and 5, 10, ... 60: 0 is gone. */
    ck_assert_uint_eq(recv_consumed(1000, NULL, 0), 12);
    ck_assert_uint_eq(recv_consumed(1001, NULL, 0), 12);
    ck_assert_uint_eq(recv_consumed(1002, NULL, 0), 12);
    ck_assert_uint_eq(recv_consumed(1003, NULL, 0), 13);
    ck_assert_uint_eq(recv_consumed(1004, NULL, 0), 12);
    ck_assert_uint_eq(recv_consumed(2000, NULL, 0), 3);
    for (int i = 3; i < 64; i++) {
        ck_assert(!rnic_stag_lookup(t, stag[i]));
    }
    ck_assert(rnic_stag_lookup(t, next));
    ck_assert(rnic_stag_lookup(t, stag[64]));
    /* Every link is back in the pool. */
    for (int i = 0; i < 64; i++) {
        uint32_t s;

        a.key = (uint8_t)(0x80 + i);
        ck_assert_st(rnic_mr_register(t, &a, &s), RNIC_STAG_OK);
        ck_assert_st(link_recv(s, 3000), RNIC_STAG_OK);
    }
}
END_TEST

/* ---- caps: regions, windows and page-list memory, each on its own ---- */

/* A table of 16 STags: at most 3 regions, 2 windows, @list_bytes of lists. */
static struct rnic_stag_table *capped_table(size_t list_bytes, uint32_t *pd)
{
    struct rnic_stag_table_params p = {
        .max_stags = 16, .max_pds = 2, .max_mrs = 3, .max_mws = 2,
        .max_page_list_bytes = list_bytes,
    };
    struct rnic_stag_table *c = rnic_stag_table_new(&p);

    ck_assert_ptr_nonnull(c);
    ck_assert_st(rnic_pd_alloc(c, pd), RNIC_STAG_OK);
    return c;
}

START_TEST(test_mr_mw_caps_separate)
{
    uint32_t pd, stag[4], mw[3];
    struct rnic_stag_table *c = capped_table(0, &pd);
    struct rnic_mr_attr a = mr_attr(pd, &first_page, 1, 0x1000);

    for (int i = 0; i < 3; i++) {
        a.key = (uint8_t)i;
        ck_assert_st(rnic_mr_register(c, &a, &stag[i]), RNIC_STAG_OK);
    }
    a.key = 9;
    ck_assert_st(rnic_mr_admit(c, 1), RNIC_STAG_ERR_NO_RESOURCES);
    ck_assert_st(rnic_mr_register(c, &a, &stag[3]),
                 RNIC_STAG_ERR_NO_RESOURCES);
    /* Windows have their own count: regions do not eat it, nor back. */
    ck_assert_st(rnic_mw_alloc(c, pd, RNIC_STAG_MW_TYPE1, 1, &mw[0]),
                 RNIC_STAG_OK);
    ck_assert_st(rnic_mw_alloc(c, pd, RNIC_STAG_MW_TYPE2, 1, &mw[1]),
                 RNIC_STAG_OK);
    ck_assert_st(rnic_mw_alloc(c, pd, RNIC_STAG_MW_TYPE1, 2, &mw[2]),
                 RNIC_STAG_ERR_NO_RESOURCES);
    ck_assert_st(rnic_mw_dealloc(c, mw[0]), RNIC_STAG_OK);
    ck_assert_st(rnic_mw_alloc(c, pd, RNIC_STAG_MW_TYPE1, 2, &mw[2]),
                 RNIC_STAG_OK);
    ck_assert_st(rnic_mr_register(c, &a, &stag[3]),
                 RNIC_STAG_ERR_NO_RESOURCES);
    ck_assert_st(rnic_mr_deregister(c, stag[0]), RNIC_STAG_OK);
    ck_assert_st(rnic_mr_admit(c, 1), RNIC_STAG_OK);
    ck_assert_st(rnic_mr_register(c, &a, &stag[3]), RNIC_STAG_OK);
    rnic_stag_table_free(c);
}
END_TEST

START_TEST(test_page_list_bytes_capped)
{
    const uint64_t apart[2] = { gaddr(0), gaddr(2 * PAGE) };
    const uint64_t together[2] = { gaddr(0), gaddr(PAGE) };
    uint32_t pd, stag, next;
    struct rnic_stag_table *c;
    struct rnic_mr_attr a;
    size_t one;

    /* Measure one two-page list, then cap at exactly two of them. */
    c = capped_table(0, &pd);
    a = mr_attr(pd, apart, 2, 0x1000);
    ck_assert_st(rnic_mr_register(c, &a, &stag), RNIC_STAG_OK);
    one = rnic_stag_page_list_bytes(c);
    ck_assert_uint_gt(one, 0);
    rnic_stag_table_free(c);

    c = capped_table(2 * one, &pd);
    a = mr_attr(pd, apart, 2, 0x1000);
    ck_assert_st(rnic_mr_register(c, &a, &stag), RNIC_STAG_OK);
    a.key = 0x11;
    ck_assert_st(rnic_mr_register(c, &a, &stag), RNIC_STAG_OK);
    ck_assert_uint_eq(rnic_stag_page_list_bytes(c), 2 * one);
    /* A third list is refused before anything is allocated... */
    ck_assert_st(rnic_mr_admit(c, 2), RNIC_STAG_ERR_NO_RESOURCES);
    ck_assert_st(rnic_mr_admit(c, 1u << 20), RNIC_STAG_ERR_NO_RESOURCES);
    a.key = 0x12;
    ck_assert_st(rnic_mr_register(c, &a, &next), RNIC_STAG_ERR_NO_RESOURCES);
    ck_assert_uint_eq(rnic_stag_page_list_bytes(c), 2 * one);
    /* ...while a single page or contiguous pages store no list. */
    ck_assert_st(rnic_mr_admit(c, 1), RNIC_STAG_OK);
    a = mr_attr(pd, together, 2, 0x1000);
    ck_assert_st(rnic_mr_register(c, &a, &next), RNIC_STAG_OK);
    ck_assert_uint_eq(rnic_stag_page_list_bytes(c), 2 * one);
    /* Re-registering a list in place swaps its bytes: it fits. */
    a = mr_attr(pd, apart, 2, 0x1000);
    a.key = 0x13;
    ck_assert_st(rnic_mr_reregister(c, stag, &a, &next), RNIC_STAG_OK);
    ck_assert_uint_eq(rnic_stag_page_list_bytes(c), 2 * one);
    ck_assert_st(rnic_mr_deregister(c, next), RNIC_STAG_OK);
    ck_assert_uint_eq(rnic_stag_page_list_bytes(c), one);
    ck_assert_st(rnic_mr_admit(c, 2), RNIC_STAG_OK);
    rnic_stag_table_free(c);
}
END_TEST

/* ---- scale ---- */

START_TEST(test_million_stags)
{
    const uint32_t count = 1u << 20;
    struct rnic_stag_table_params p = { .max_stags = count, .max_pds = 4 };
    struct rnic_stag_table *big = rnic_stag_table_new(&p);
    uint64_t page = gaddr(0);
    struct rnic_mr_attr a;
    uint32_t pd, extra, *stags = malloc(count * sizeof(*stags));
    struct rnic_mem_ref ref;
    size_t footprint;
    uint32_t bad = 0;

    ck_assert_ptr_nonnull(big);
    ck_assert_ptr_nonnull(stags);
    ck_assert_st(rnic_pd_alloc(big, &pd), RNIC_STAG_OK);
    a = mr_attr(pd, &page, 1, 0);
    /* Failures are counted, not asserted: Check logs every assertion. */
    for (uint32_t i = 0; i < count; i++) {
        a.key = (uint8_t)(i * 37);
        a.base_to = (uint64_t)i << 12;
        bad += rnic_mr_register(big, &a, &stags[i]) != RNIC_STAG_OK;
    }
    ck_assert_uint_eq(bad, 0);
    ck_assert_st(rnic_mr_register(big, &a, &extra),
                 RNIC_STAG_ERR_NO_RESOURCES);
    for (uint32_t i = 0; i < count; i++) {
        bad += !rnic_stag_lookup(big, stags[i]);
        bad += rnic_stag_lookup(big, rnic_stag_next_key(stags[i]));
        bad += rnic_stag_resolve(big, stags[i], pd, 0,
                                 ((uint64_t)i << 12) + 8, 8,
                                 RNIC_ACCESS_REMOTE_READ, &ref) !=
               RNIC_STAG_OK || ref.to != ((uint64_t)i << 12) + 8;
    }
    ck_assert_uint_eq(bad, 0);
    /*
     * Modest: 42 octets a slot (tag 2, entry 32, windows and link 8) and
     * the receive-link pool, no per-region allocation.
     */
    footprint = rnic_stag_table_footprint(big);
    ck_assert_uint_le(footprint, (size_t)count * 46);
    ck_assert_uint_ge(footprint, (size_t)count * 32);
    rnic_stag_table_free(big);
    free(stags);
}
END_TEST

START_TEST(test_footprint_counts_page_lists)
{
    uint64_t pages[4] = { gaddr(0), gaddr(2 * PAGE), gaddr(PAGE),
                          gaddr(3 * PAGE) };
    struct rnic_mr_attr a = mr_attr(pd1, pages, 4, 0);
    size_t before = rnic_stag_table_footprint(t);
    uint32_t stag = must_register(&a);

    ck_assert_uint_ge(rnic_stag_table_footprint(t), before + 4 * 8);
    ck_assert_st(rnic_mr_deregister(t, stag), RNIC_STAG_OK);
    ck_assert_uint_eq(rnic_stag_table_footprint(t), before);
}
END_TEST

Suite *stag_suite(void)
{
    Suite *s = suite_create("stag");
    TCase *tc = tcase_create("tables");
    TCase *place = tcase_create("placement");
    TCase *inval = tcase_create("invalidation");
    TCase *scale = tcase_create("scale");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_table_params);
    tcase_add_test(tc, test_pd_lifecycle);
    tcase_add_test(tc, test_pd_free_refused_while_used);
    tcase_add_test(tc, test_mr_register_rejects_bad_attrs);
    tcase_add_test(tc, test_mr_table_full);
    tcase_add_test(tc, test_key_reuse_takes_next_index);
    tcase_add_test(tc, test_released_index_comes_back_last);
    tcase_add_test(tc, test_resolve_every_status);
    tcase_add_test(tc, test_resolve_checks_in_order);
    tcase_add_test(tc, test_to_near_top_of_space);
    tcase_add_test(tc, test_error_codes_match_rfc);
    tcase_add_test(tc, test_local_access);
    tcase_add_test(tc, test_stale_key_after_reregistration);
    tcase_add_test(tc, test_reregister_after_invalidation);
    tcase_add_test(tc, test_lookup_agrees_with_entry);
    tcase_add_test(tc, test_lookup_agrees_after_every_change);
    tcase_add_test(tc, test_stale_key_after_rebind);
    tcase_add_test(tc, test_type2_window_wrong_qp);
    tcase_add_test(tc, test_type1_window_serves_whole_pd);
    tcase_add_test(tc, test_bind_checks);
    tcase_add_test(tc, test_region_with_windows_is_pinned);
    tcase_add_test(tc, test_footprint_counts_page_lists);
    tcase_add_test(tc, test_mr_mw_caps_separate);
    tcase_add_test(tc, test_page_list_bytes_capped);
    suite_add_tcase(s, tc);

    tcase_add_checked_fixture(place, setup, teardown);
    tcase_add_test(place, test_window_places_through_its_region);
    tcase_add_test(place, test_place_across_pages);
    tcase_add_test(place, test_place_contiguous_pages);
    tcase_add_test(place, test_place_huge_pages);
    tcase_add_test(place, test_pages_outside_guest_memory);
    tcase_add_test(place, test_map_iov);
    tcase_add_test(place, test_map_merges_adjacent_pages);
    tcase_add_test(place, test_zero_length_places_nothing);
    tcase_set_timeout(place, 60);
    suite_add_tcase(s, place);

    tcase_add_checked_fixture(inval, setup, teardown);
    tcase_add_test(inval, test_local_invalidate);
    tcase_add_test(inval, test_send_with_invalidate_then_write_refused);
    tcase_add_test(inval, test_send_with_invalidate_errors);
    tcase_add_test(inval, test_one_shot_written_twice);
    tcase_add_test(inval, test_policy_default_and_override);
    tcase_add_test(inval, test_one_shot_window);
    tcase_add_test(inval, test_recv_linked_stags);
    tcase_add_test(inval, test_recv_link_scoped);
    tcase_add_test(inval, test_list_table);
    tcase_add_test(inval, test_recv_link_released_with_stag);
    suite_add_tcase(s, inval);

    tcase_add_checked_fixture(scale, setup, teardown);
    tcase_add_test(scale, test_million_stags);
    tcase_set_timeout(scale, 300);
    suite_add_tcase(s, scale);
    return s;
}
