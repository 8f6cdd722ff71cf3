/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Kernel consumers' memory: ALLOC_MR regions filled by rnic_mr_fast_reg(), and the
 * physical STag that only a privileged (kernel QP) local access reaches.
 * Guest memory is a plain buffer whose DMA refuses every byte outside it.
 */
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include "iwarp/stag.h"
#include "support/stag_check.h"
#include "suites.h"
#include "support/memdma.h"

#define GUEST_BASE  0x40000000ull
#define GUEST_SIZE  ((size_t)1 << 20)
#define PAGE        4096u
#define QPN         7u
#define TO          0x7000000ull
#define LOCAL_PRIV  (RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_PRIVILEGED)

static struct memdma g;
static struct rnic_stag_table *t;
static uint32_t pd1, pd2;

static void setup_limited(size_t max_page_list_bytes)
{
    struct rnic_stag_table_params p = {
        .max_stags = 64, .max_pds = 4, .max_recv_links = 8,
        .max_page_list_bytes = max_page_list_bytes,
    };

    memdma_init(&g, GUEST_BASE, GUEST_SIZE);
    t = rnic_stag_table_new(&p);
    ck_assert_ptr_nonnull(t);
    ck_assert_st(rnic_pd_alloc(t, &pd1), RNIC_STAG_OK);
    ck_assert_st(rnic_pd_alloc(t, &pd2), RNIC_STAG_OK);
}

static void setup(void)
{
    setup_limited(0);
}

static void teardown(void)
{
    rnic_stag_table_free(t);
    memdma_free(&g);
}

/* Guest pages 3, 2, 1, 0 from @first_page on: a list, not contiguous. */
static void reversed_pages(uint64_t *pages, uint32_t n, uint32_t first_page)
{
    for (uint32_t i = 0; i < n; i++) {
        pages[i] = GUEST_BASE + (uint64_t)(first_page + n - 1 - i) * PAGE;
    }
}

static struct rnic_fast_reg_attr fr_attr(uint32_t stag, const uint64_t *pages,
                                         uint32_t npages)
{
    return (struct rnic_fast_reg_attr) {
        .stag = rnic_stag_next_key(stag), .pd = pd1,
        .access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE,
        .pages = pages, .npages = npages, .page_shift = 12,
        .length = (uint64_t)npages * PAGE, .base_to = TO,
    };
}

START_TEST(test_alloc_is_invalid_until_fast_reg)
{
    struct rnic_stag_info info;
    struct rnic_mem_ref ref;
    uint64_t pages[4];
    struct rnic_fast_reg_attr a;
    uint32_t stag;
    uint8_t byte = 0x5a;

    ck_assert_st(rnic_mr_alloc(t, pd1, 4, 0x10, &stag), RNIC_STAG_OK);
    ck_assert_st(rnic_stag_query(t, stag, &info), RNIC_STAG_OK);
    ck_assert(!info.valid);
    ck_assert_st(rnic_stag_resolve(t, stag, pd1, QPN, 0, 0,
                                   RNIC_ACCESS_LOCAL_READ, &ref),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_uint_gt(rnic_stag_page_list_bytes(t), 4 * sizeof(uint64_t));

    reversed_pages(pages, 4, 10);
    a = fr_attr(stag, pages, 4);
    ck_assert_st(rnic_mr_fast_reg(t, &a), RNIC_STAG_OK);
    /* The old key is gone, the new one places into the listed pages. */
    ck_assert_st(rnic_stag_resolve(t, stag, pd1, QPN, TO, 1,
                                   RNIC_ACCESS_LOCAL_READ, &ref),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_stag_resolve(t, a.stag, pd1, QPN, TO + PAGE, 1,
                                   RNIC_ACCESS_REMOTE_WRITE, &ref),
                 RNIC_STAG_OK);
    ck_assert_st(rnic_mem_place(&g.dma, &ref, &byte), RNIC_STAG_OK);
    ck_assert_uint_eq(g.mem[12 * PAGE], 0x5a);
    /* Valid: a second FAST_REG waits for an invalidation. */
    ck_assert_st(rnic_mr_fast_reg(t, &a), RNIC_STAG_ERR_BUSY);
    ck_assert_st(rnic_stag_invalidate_local(t, a.stag, pd1), RNIC_STAG_OK);
    a.npages = 2;
    a.length = 2 * PAGE - 100;
    a.first_byte_offset = 50;
    ck_assert_st(rnic_mr_fast_reg(t, &a), RNIC_STAG_OK);
    ck_assert_st(rnic_stag_resolve(t, a.stag, pd1, QPN, TO, 2 * PAGE - 100,
                                   RNIC_ACCESS_LOCAL_READ, &ref),
                 RNIC_STAG_OK);
    ck_assert_st(rnic_stag_resolve(t, a.stag, pd1, QPN, TO, 2 * PAGE,
                                   RNIC_ACCESS_LOCAL_READ, &ref),
                 RNIC_STAG_ERR_BASE_BOUNDS);
    /* A peer's Send with Invalidate may name it. */
    {
        uint32_t inv;

        ck_assert_st(rnic_stag_invalidate_remote(t, a.stag, pd1, QPN, &inv),
                     RNIC_STAG_OK);
        ck_assert_uint_eq(inv, a.stag);
    }
    /* DEREG_MR takes the region by index: the key it was allocated with
     * is long gone, and a driver may not know the last one. */
    ck_assert_uint_ne(rnic_stag_key(stag), rnic_stag_key(a.stag));
    ck_assert_st(rnic_mr_deregister(t, stag), RNIC_STAG_OK);
    ck_assert_st(rnic_mr_deregister(t, a.stag), RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_uint_eq(rnic_stag_page_list_bytes(t), 0);
    ck_assert_st(rnic_pd_free(t, pd1), RNIC_STAG_OK);
}
END_TEST

START_TEST(test_fast_reg_refusals)
{
    uint64_t pages[5];
    struct rnic_fast_reg_attr a;
    struct rnic_mr_attr m = { 0 };
    uint32_t stag, mr;

    ck_assert_st(rnic_mr_alloc(t, pd1, 0, 1, &stag),
                 RNIC_STAG_ERR_INVALID_ARG);
    ck_assert_st(rnic_mr_alloc(t, pd1, RNIC_MR_FAST_MAX_PAGES + 1, 1, &stag),
                 RNIC_STAG_ERR_INVALID_ARG);
    ck_assert_st(rnic_mr_alloc(t, 3, 4, 1, &stag), RNIC_STAG_ERR_INVALID_ARG);
    ck_assert_st(rnic_mr_alloc(t, pd1, 4, 1, &stag), RNIC_STAG_OK);
    reversed_pages(pages, 5, 0);

    a = fr_attr(stag, pages, 5);                    /* more than the slot */
    ck_assert_st(rnic_mr_fast_reg(t, &a), RNIC_STAG_ERR_INVALID_ARG);
    a = fr_attr(stag, pages, 4);
    a.page_shift = 11;
    ck_assert_st(rnic_mr_fast_reg(t, &a), RNIC_STAG_ERR_INVALID_ARG);
    a.page_shift = 22;
    ck_assert_st(rnic_mr_fast_reg(t, &a), RNIC_STAG_ERR_INVALID_ARG);
    a = fr_attr(stag, pages, 4);
    a.length += 1;                                  /* pages do not cover */
    ck_assert_st(rnic_mr_fast_reg(t, &a), RNIC_STAG_ERR_INVALID_ARG);
    a = fr_attr(stag, pages, 4);
    a.length = PAGE;                                /* more pages than bytes */
    ck_assert_st(rnic_mr_fast_reg(t, &a), RNIC_STAG_ERR_INVALID_ARG);
    a = fr_attr(stag, pages, 4);
    a.first_byte_offset = PAGE;
    ck_assert_st(rnic_mr_fast_reg(t, &a), RNIC_STAG_ERR_INVALID_ARG);
    a = fr_attr(stag, pages, 4);
    a.access |= RNIC_ACCESS_MW_BIND;
    ck_assert_st(rnic_mr_fast_reg(t, &a), RNIC_STAG_ERR_INVALID_ARG);
    a = fr_attr(stag, pages, 4);
    a.access = RNIC_ACCESS_REMOTE_WRITE;            /* without local write */
    ck_assert_st(rnic_mr_fast_reg(t, &a), RNIC_STAG_ERR_INVALID_ARG);
    a = fr_attr(stag, pages, 4);
    a.base_to = UINT64_MAX - 10;                    /* TO wraps */
    ck_assert_st(rnic_mr_fast_reg(t, &a), RNIC_STAG_ERR_INVALID_ARG);
    pages[1] += 8;                                  /* not page aligned */
    a = fr_attr(stag, pages, 4);
    ck_assert_st(rnic_mr_fast_reg(t, &a), RNIC_STAG_ERR_INVALID_ARG);
    reversed_pages(pages, 4, 0);
    a = fr_attr(stag, pages, 4);
    a.pd = pd2;
    ck_assert_st(rnic_mr_fast_reg(t, &a), RNIC_STAG_ERR_NOT_ASSOCIATED);

    /* A REG_MR region is no ALLOC_MR one. */
    m = (struct rnic_mr_attr) {
        .pd = pd1, .key = 1, .access = RNIC_ACCESS_LOCAL_WRITE,
        .pages = pages, .npages = 1, .page_shift = 12, .length = PAGE,
    };
    ck_assert_st(rnic_mr_register(t, &m, &mr), RNIC_STAG_OK);
    a = fr_attr(mr, pages, 1);
    ck_assert_st(rnic_mr_fast_reg(t, &a), RNIC_STAG_ERR_INVALID_STAG);
    /* Nor can an ALLOC_MR region be re-registered as a REG_MR one. */
    m.key = 2;
    ck_assert_st(rnic_mr_reregister(t, stag, &m, &mr),
                 RNIC_STAG_ERR_INVALID_ARG);
}
END_TEST

/* The slot counts against max-page-list-bytes from ALLOC_MR on. */
START_TEST(test_alloc_page_list_limit)
{
    uint32_t a, b;

    teardown();
    setup_limited(4096);
    ck_assert_st(rnic_mr_alloc(t, pd1, 256, 1, &a), RNIC_STAG_OK);
    ck_assert_st(rnic_mr_alloc(t, pd1, 256, 2, &b),
                 RNIC_STAG_ERR_NO_RESOURCES);
    ck_assert_st(rnic_mr_deregister(t, a), RNIC_STAG_OK);
    ck_assert_st(rnic_mr_alloc(t, pd1, 256, 2, &b), RNIC_STAG_OK);
}
END_TEST

START_TEST(test_phys_stag)
{
    static const uint8_t bytes[3] = { 1, 2, 3 };
    struct rnic_recv_owner o = {
        .queue = rnic_recv_queue_qp(QPN), .pd = pd1, .qpn = QPN,
    };
    struct rnic_mem_ref ref;
    uint32_t phys, inv;

    ck_assert_st(rnic_mr_alloc_phys(t, pd1, 0x20, &phys), RNIC_STAG_OK);
    ck_assert_st(rnic_stag_resolve(t, phys, pd1, QPN, GUEST_BASE + 100, 3,
                                   LOCAL_PRIV, &ref), RNIC_STAG_OK);
    ck_assert_st(rnic_mem_place(&g.dma, &ref, bytes), RNIC_STAG_OK);
    ck_assert_mem_eq(g.mem + 100, bytes, 3);
    ck_assert_st(rnic_stag_resolve(t, phys, pd1, QPN, UINT64_MAX - 1, 1,
                                   LOCAL_PRIV, &ref), RNIC_STAG_OK);
    /* A user QP, the wire, another PD. */
    ck_assert_st(rnic_stag_resolve(t, phys, pd1, QPN, GUEST_BASE, 3,
                                   RNIC_ACCESS_LOCAL_WRITE, &ref),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_stag_resolve(t, phys, pd1, QPN, GUEST_BASE, 3,
                                   RNIC_ACCESS_REMOTE_WRITE, &ref),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_stag_resolve(t, phys, pd1, QPN, GUEST_BASE, 3,
                                   RNIC_ACCESS_REMOTE_READ |
                                   RNIC_ACCESS_PRIVILEGED, &ref),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_stag_resolve(t, phys, pd2, QPN, GUEST_BASE, 3,
                                   LOCAL_PRIV, &ref),
                 RNIC_STAG_ERR_NOT_ASSOCIATED);
    /* Nothing invalidates it, nor links it to a receive. */
    ck_assert_st(rnic_stag_invalidate_local(t, phys, pd1),
                 RNIC_STAG_ERR_CANNOT_INVALIDATE);
    ck_assert_st(rnic_stag_invalidate_remote(t, phys, pd1, QPN, &inv),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert_st(rnic_stag_link_to_recv(t, phys, &o, 1),
                 RNIC_STAG_ERR_INVALID_STAG);
    ck_assert(!rnic_stag_message_done(t, phys));
    ck_assert_st(rnic_stag_resolve(t, phys, pd1, QPN, GUEST_BASE, 3,
                                   LOCAL_PRIV, &ref), RNIC_STAG_OK);
    ck_assert_st(rnic_pd_free(t, pd1), RNIC_STAG_ERR_BUSY);
    ck_assert_st(rnic_mr_deregister(t, phys), RNIC_STAG_OK);
    ck_assert_st(rnic_pd_free(t, pd1), RNIC_STAG_OK);
}
END_TEST

Suite *mr_fast_suite(void)
{
    Suite *s = suite_create("mr_fast");
    TCase *tc = tcase_create("mr_fast");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_alloc_is_invalid_until_fast_reg);
    tcase_add_test(tc, test_fast_reg_refusals);
    tcase_add_test(tc, test_alloc_page_list_limit);
    tcase_add_test(tc, test_phys_stag);
    suite_add_tcase(s, tc);
    return s;
}
