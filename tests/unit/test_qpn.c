/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <check.h>
#include "iwarp/qpn.h"
#include "suites.h"

struct fake_clock {
    uint64_t now;
};

static uint64_t fake_now(void *opaque)
{
    return ((struct fake_clock *)opaque)->now;
}

/* The table under test and the clock it reads; freed by the fixture. */
static struct fake_clock clk;
static struct rnic_qpn_table *t;

static void make_table(uint32_t max, uint32_t timewait_ms, uint64_t now)
{
    clk.now = now;
    t = rnic_qpn_table_new(max, timewait_ms, fake_now, &clk);
    ck_assert_ptr_nonnull(t);
}

static void teardown(void)
{
    rnic_qpn_table_free(t);
    t = NULL;
}

static uint32_t must_alloc(void *qp)
{
    uint32_t qpn = 0;

    ck_assert_int_eq(rnic_qpn_alloc(t, qp, &qpn), 0);
    ck_assert_uint_ne(qpn, 0);
    return qpn;
}

START_TEST(test_qpn_bad_params)
{
    ck_assert_ptr_null(rnic_qpn_table_new(1, 10, fake_now, &clk));
    ck_assert_ptr_null(rnic_qpn_table_new(8, 10, NULL, &clk));
    ck_assert_int_eq(RNIC_QPN_TIMEWAIT_MS_DEFAULT, 1000);
}
END_TEST

START_TEST(test_qpn_exhaustion)
{
    uint32_t seen = 0, qpn;

    make_table(4, 100, 0);
    for (int i = 0; i < 3; i++) {
        qpn = must_alloc(NULL);
        ck_assert_uint_lt(qpn, 4);
        ck_assert(!(seen & (1u << qpn)));
        seen |= 1u << qpn;
    }
    ck_assert_int_eq(rnic_qpn_alloc(t, NULL, &qpn), -ENOSPC);
}
END_TEST

START_TEST(test_qpn_not_reused_during_timewait)
{
    uint32_t a, b, qpn;

    make_table(3, 1000, 5000);
    a = must_alloc(NULL);
    b = must_alloc(NULL);
    ck_assert_int_eq(rnic_qpn_free(t, a), 0);
    clk.now += 999;
    ck_assert_int_eq(rnic_qpn_alloc(t, NULL, &qpn), -EAGAIN);
    clk.now += 1;
    ck_assert_int_eq(rnic_qpn_alloc(t, NULL, &qpn), 0);
    ck_assert_uint_eq(qpn, a);
    ck_assert_int_eq(rnic_qpn_free(t, b), 0);
    ck_assert_int_eq(rnic_qpn_alloc(t, NULL, &qpn), -EAGAIN);
}
END_TEST

START_TEST(test_qpn_timewait_skips_to_other_numbers)
{
    uint32_t a, b, c;

    make_table(4, 1000, 0);
    a = must_alloc(NULL);
    b = must_alloc(NULL);
    ck_assert_int_eq(rnic_qpn_free(t, a), 0);
    ck_assert_int_eq(rnic_qpn_free(t, b), 0);
    clk.now = 1000;
    c = must_alloc(NULL);
    ck_assert_uint_ne(c, a);
    ck_assert_uint_ne(c, b);
    /* Both freed numbers are now past timewait and come back in order. */
    ck_assert_uint_eq(must_alloc(NULL), a);
    ck_assert_uint_eq(must_alloc(NULL), b);
}
END_TEST

START_TEST(test_qpn_lookup)
{
    int dummy;
    void *qp = &dummy;
    uint32_t a;

    make_table(16, 1000, 0);
    a = must_alloc(&dummy);

    ck_assert_int_eq(rnic_qpn_lookup(t, a, &qp), RNIC_QPN_LIVE);
    ck_assert_ptr_eq(qp, &dummy);
    ck_assert_int_eq(rnic_qpn_free(t, a), 0);
    ck_assert_int_eq(rnic_qpn_lookup(t, a, &qp), RNIC_QPN_TIMEWAIT);
    ck_assert_ptr_null(qp);
    clk.now = 999;
    ck_assert_int_eq(rnic_qpn_lookup(t, a, &qp), RNIC_QPN_TIMEWAIT);
    clk.now = 1000;
    ck_assert_int_eq(rnic_qpn_lookup(t, a, &qp), RNIC_QPN_FREE);
    ck_assert_int_eq(rnic_qpn_lookup(t, 0, &qp), RNIC_QPN_FREE);
    ck_assert_int_eq(rnic_qpn_lookup(t, 16, &qp), RNIC_QPN_FREE);
    ck_assert_int_eq(rnic_qpn_lookup(t, a + 1, &qp), RNIC_QPN_FREE);
    ck_assert_str_eq(rnic_qpn_lookup_str(RNIC_QPN_TIMEWAIT), "TIMEWAIT");
}
END_TEST

START_TEST(test_qpn_new_qp_never_sees_old_traffic)
{
    int old_qp, new_qp;
    void *qp;
    uint32_t a, b;

    make_table(2, 1000, 0);
    a = must_alloc(&old_qp);
    /* One number only: the replacement must wait out the timewait. */
    ck_assert_int_eq(rnic_qpn_free(t, a), 0);
    ck_assert_int_eq(rnic_qpn_alloc(t, &new_qp, &b), -EAGAIN);
    ck_assert_int_eq(rnic_qpn_lookup(t, a, &qp), RNIC_QPN_TIMEWAIT);
    clk.now = 1000;
    b = must_alloc(&new_qp);
    ck_assert_uint_eq(b, a);
    ck_assert_int_eq(rnic_qpn_lookup(t, b, &qp), RNIC_QPN_LIVE);
    ck_assert_ptr_eq(qp, &new_qp);
}
END_TEST

START_TEST(test_qpn_rotation)
{
    enum { MAX = 64 };
    bool seen[MAX] = { false };
    uint32_t first, qpn;

    make_table(MAX, 0, 0);
    first = must_alloc(NULL);
    /* Even with no timewait at all, alloc-free-alloc is not LIFO... */
    ck_assert_int_eq(rnic_qpn_free(t, first), 0);
    qpn = must_alloc(NULL);
    ck_assert_uint_ne(qpn, first);
    ck_assert_int_eq(rnic_qpn_free(t, qpn), 0);
    seen[first] = seen[qpn] = true;
    /* ...and every number is used once before any comes back. */
    for (int i = 2; i < MAX - 1; i++) {
        qpn = must_alloc(NULL);
        ck_assert(!seen[qpn]);
        seen[qpn] = true;
        ck_assert_int_eq(rnic_qpn_free(t, qpn), 0);
    }
    ck_assert_uint_eq(must_alloc(NULL), first);
}
END_TEST

START_TEST(test_qpn_free_errors)
{
    uint32_t a;

    make_table(8, 10, 0);
    a = must_alloc(NULL);

    ck_assert_int_eq(rnic_qpn_free(t, 0), -EINVAL);
    ck_assert_int_eq(rnic_qpn_free(t, 8), -EINVAL);
    ck_assert_int_eq(rnic_qpn_free(t, a + 1), -EINVAL);
    ck_assert_int_eq(rnic_qpn_free(t, a), 0);
    ck_assert_int_eq(rnic_qpn_free(t, a), -EINVAL);
}
END_TEST

START_TEST(test_qpn_churn_stays_bounded)
{
    uint32_t live[8];

    make_table(32, 10, 0);
    /* Many cycles through a small space: never a number twice at once. */
    for (int i = 0; i < 8; i++) {
        live[i] = must_alloc(NULL);
    }
    for (int round = 0; round < 1000; round++) {
        int slot = round % 8;
        void *qp;

        ck_assert_int_eq(rnic_qpn_free(t, live[slot]), 0);
        ck_assert_int_eq(rnic_qpn_lookup(t, live[slot], &qp),
                         RNIC_QPN_TIMEWAIT);
        clk.now++;
        live[slot] = must_alloc(NULL);
        for (int j = 0; j < 8; j++) {
            ck_assert(j == slot || live[j] != live[slot]);
        }
    }
}
END_TEST

Suite *qpn_suite(void)
{
    Suite *s = suite_create("qpn");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_qpn_bad_params);
    tcase_add_test(tc, test_qpn_exhaustion);
    tcase_add_test(tc, test_qpn_not_reused_during_timewait);
    tcase_add_test(tc, test_qpn_timewait_skips_to_other_numbers);
    tcase_add_test(tc, test_qpn_lookup);
    tcase_add_test(tc, test_qpn_new_qp_never_sees_old_traffic);
    tcase_add_test(tc, test_qpn_rotation);
    tcase_add_test(tc, test_qpn_free_errors);
    tcase_add_test(tc, test_qpn_churn_stays_bounded);
    suite_add_tcase(s, tc);
    return s;
}
