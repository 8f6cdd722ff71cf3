/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>
#include <check.h>
#include "iwarp/cq.h"
#include "suites.h"

struct notify_log {
    int calls;
    struct rnic_cq *last;
};

static void count_notify(void *opaque, struct rnic_cq *cq)
{
    struct notify_log *log = opaque;

    log->calls++;
    log->last = cq;
}

/* For the "notify" test case: a CQ whose notifications are counted. */
static struct notify_log nlog;
static struct rnic_cq *ncq;

static void notify_setup(void)
{
    memset(&nlog, 0, sizeof(nlog));
    ncq = rnic_cq_new(8, count_notify, &nlog);
}

static void notify_teardown(void)
{
    ck_assert_int_eq(rnic_cq_destroy(ncq), 0);
}

static struct rnic_cqe make_cqe(uint64_t wr_id, enum rnic_wc_status status,
                                uint32_t flags)
{
    struct rnic_cqe cqe = {
        .wr_id = wr_id,
        .status = status,
        .opcode = RNIC_WC_RECV,
        .flags = flags,
    };

    return cqe;
}

static int push_id(struct rnic_cq *cq, uint64_t wr_id)
{
    struct rnic_cqe cqe = make_cqe(wr_id, RNIC_WC_SUCCESS, 0);

    return rnic_cq_push(cq, &cqe);
}

START_TEST(test_cq_bad_depth)
{
    ck_assert_ptr_null(rnic_cq_new(0, NULL, NULL));
    ck_assert_ptr_null(rnic_cq_new(RNIC_CQ_MAX_DEPTH + 1, NULL, NULL));
}
END_TEST

START_TEST(test_cq_push_poll_in_order)
{
    struct rnic_cq *cq = rnic_cq_new(4, NULL, NULL);
    struct rnic_cqe out[8];

    /* Go round the ring more than once so the wrap is exercised. */
    for (uint64_t round = 0; round < 3; round++) {
        for (uint64_t i = 0; i < 3; i++) {
            ck_assert_int_eq(push_id(cq, round * 10 + i), 0);
        }
        ck_assert_uint_eq(rnic_cq_count(cq), 3);
        ck_assert_uint_eq(rnic_cq_poll(cq, out, 2), 2);
        ck_assert_uint_eq(out[0].wr_id, round * 10);
        ck_assert_uint_eq(out[1].wr_id, round * 10 + 1);
        ck_assert_uint_eq(rnic_cq_poll(cq, out, 8), 1);
        ck_assert_uint_eq(out[0].wr_id, round * 10 + 2);
    }
    ck_assert_uint_eq(rnic_cq_poll(cq, out, 8), 0);
    ck_assert_int_eq(rnic_cq_destroy(cq), 0);
}
END_TEST

START_TEST(test_cq_overflow_is_sticky)
{
    struct rnic_cq *cq = rnic_cq_new(2, NULL, NULL);
    struct rnic_cqe out[4];

    ck_assert_int_eq(push_id(cq, 1), 0);
    ck_assert_int_eq(push_id(cq, 2), 0);
    ck_assert(!rnic_cq_overflowed(cq));
    ck_assert_int_eq(push_id(cq, 3), -ENOSPC);
    ck_assert(rnic_cq_overflowed(cq));
    /* What fitted can still be reaped; nothing new gets in. */
    ck_assert_uint_eq(rnic_cq_poll(cq, out, 4), 2);
    ck_assert_uint_eq(out[1].wr_id, 2);
    ck_assert_int_eq(push_id(cq, 4), -EIO);
    ck_assert_uint_eq(rnic_cq_count(cq), 0);
    ck_assert(rnic_cq_overflowed(cq));
    rnic_cq_destroy(cq);
}
END_TEST

START_TEST(test_cq_unarmed_never_notifies)
{
    struct rnic_cq *cq = ncq;
    struct rnic_cqe cqe = make_cqe(1, RNIC_WC_GENERAL_ERR, RNIC_WC_SOLICITED);

    ck_assert_int_eq(rnic_cq_push(cq, &cqe), 0);
    ck_assert_int_eq(nlog.calls, 0);
}
END_TEST

START_TEST(test_cq_arm_next_fires_once)
{
    struct rnic_cq *cq = ncq;

    ck_assert_str_eq(rnic_cq_armed_str(cq), "no");
    rnic_cq_arm(cq, RNIC_CQ_ARM_NEXT);
    ck_assert_str_eq(rnic_cq_armed_str(cq), "next");
    ck_assert_int_eq(push_id(cq, 1), 0);
    ck_assert_str_eq(rnic_cq_armed_str(cq), "no");
    ck_assert_int_eq(nlog.calls, 1);
    ck_assert_ptr_eq(nlog.last, cq);
    ck_assert_int_eq(push_id(cq, 2), 0);
    ck_assert_int_eq(nlog.calls, 1);
    rnic_cq_arm(cq, RNIC_CQ_ARM_NEXT);
    ck_assert_int_eq(push_id(cq, 3), 0);
    ck_assert_int_eq(nlog.calls, 2);
}
END_TEST

START_TEST(test_cq_arm_solicited)
{
    struct rnic_cq *cq = ncq;
    struct rnic_cqe plain = make_cqe(1, RNIC_WC_SUCCESS, 0);
    struct rnic_cqe se = make_cqe(2, RNIC_WC_SUCCESS, RNIC_WC_SOLICITED);
    struct rnic_cqe err = make_cqe(3, RNIC_WC_LOC_LEN_ERR, 0);

    rnic_cq_arm(cq, RNIC_CQ_ARM_SOLICITED);
    ck_assert_int_eq(rnic_cq_push(cq, &plain), 0);
    ck_assert_int_eq(nlog.calls, 0);
    ck_assert_int_eq(rnic_cq_push(cq, &se), 0);
    ck_assert_int_eq(nlog.calls, 1);
    ck_assert_int_eq(rnic_cq_push(cq, &se), 0);
    ck_assert_int_eq(nlog.calls, 1);
    /* An error completion counts as solicited. */
    rnic_cq_arm(cq, RNIC_CQ_ARM_SOLICITED);
    ck_assert_int_eq(rnic_cq_push(cq, &err), 0);
    ck_assert_int_eq(nlog.calls, 2);
}
END_TEST

START_TEST(test_cq_arm_next_beats_solicited)
{
    struct rnic_cq *cq = ncq;

    rnic_cq_arm(cq, RNIC_CQ_ARM_NEXT);
    rnic_cq_arm(cq, RNIC_CQ_ARM_SOLICITED);
    ck_assert_int_eq(push_id(cq, 1), 0);
    ck_assert_int_eq(nlog.calls, 1);
}
END_TEST

/*
 * An arm applied after CQEs were made but before they were polled acts as
 * if it had come first: a held CQE it asks for uses it up (the caller
 * notifies), else it stays for the next push.
 */
START_TEST(test_cq_arm_held)
{
    struct rnic_cq *cq = ncq;
    struct rnic_cqe plain = make_cqe(1, RNIC_WC_SUCCESS, 0);
    struct rnic_cqe err = make_cqe(2, RNIC_WC_LOC_LEN_ERR, 0);
    struct rnic_cqe out[4];

    ck_assert(!rnic_cq_arm_held(cq, RNIC_CQ_ARM_NEXT));
    ck_assert_str_eq(rnic_cq_armed_str(cq), "next");
    ck_assert_int_eq(rnic_cq_push(cq, &plain), 0);
    ck_assert_int_eq(nlog.calls, 1);
    /* held: one plain CQE */
    ck_assert(!rnic_cq_arm_held(cq, RNIC_CQ_ARM_SOLICITED));
    ck_assert_str_eq(rnic_cq_armed_str(cq), "solicited");
    ck_assert(rnic_cq_arm_held(cq, RNIC_CQ_ARM_NEXT));
    ck_assert_str_eq(rnic_cq_armed_str(cq), "no");
    ck_assert_int_eq(rnic_cq_push(cq, &plain), 0);
    ck_assert_int_eq(rnic_cq_push(cq, &err), 0);
    ck_assert_int_eq(nlog.calls, 1);
    /* held: plain, plain, err; an error counts as solicited */
    ck_assert(rnic_cq_arm_held(cq, RNIC_CQ_ARM_SOLICITED));
    ck_assert_str_eq(rnic_cq_armed_str(cq), "no");
    ck_assert_uint_eq(rnic_cq_poll(cq, out, 4), 3);
    ck_assert_int_eq(nlog.calls, 1);     /* the callers notify, not the CQ */
}
END_TEST

START_TEST(test_cq_overflow_does_not_notify)
{
    struct rnic_cq *cq = ncq;

    for (uint64_t i = 0; i < rnic_cq_depth(cq); i++) {
        ck_assert_int_eq(push_id(cq, i), 0);
    }
    rnic_cq_arm(cq, RNIC_CQ_ARM_NEXT);
    ck_assert_int_eq(push_id(cq, 99), -ENOSPC);
    ck_assert_int_eq(nlog.calls, 0);
}
END_TEST

START_TEST(test_cq_destroy_refused_while_referenced)
{
    struct rnic_cq *cq = rnic_cq_new(4, NULL, NULL);

    rnic_cq_ref(cq);
    rnic_cq_ref(cq);
    ck_assert_uint_eq(rnic_cq_refcount(cq), 2);
    ck_assert_int_eq(rnic_cq_destroy(cq), -EBUSY);
    rnic_cq_unref(cq);
    ck_assert_int_eq(rnic_cq_destroy(cq), -EBUSY);
    rnic_cq_unref(cq);
    ck_assert_int_eq(rnic_cq_destroy(cq), 0);
}
END_TEST

START_TEST(test_code_names)
{
    for (int i = 0; i < RNIC_WC_STATUS_COUNT; i++) {
        ck_assert_str_ne(rnic_wc_status_str(i), "?");
    }
    for (int i = 0; i < RNIC_WR_OPCODE_COUNT; i++) {
        ck_assert_str_ne(rnic_wr_opcode_str(i), "?");
    }
    for (int i = 0; i < RNIC_WC_OPCODE_COUNT; i++) {
        ck_assert_str_ne(rnic_wc_opcode_str(i), "?");
    }
    ck_assert_str_eq(rnic_wc_status_str(RNIC_WC_WR_FLUSH_ERR),
                     "WR_FLUSH_ERR");
    ck_assert_str_eq(rnic_wr_opcode_str(RNIC_WR_SEND_SE_INV), "SEND_SE_INV");
    ck_assert_str_eq(rnic_wc_status_str(RNIC_WC_STATUS_COUNT), "?");
    ck_assert_str_eq(rnic_wr_opcode_str(RNIC_WR_OPCODE_COUNT), "?");
    ck_assert_int_eq(rnic_wc_opcode_of(RNIC_WR_SEND_SE_INV), RNIC_WC_SEND);
    ck_assert_int_eq(rnic_wc_opcode_of(RNIC_WR_READ), RNIC_WC_READ);
}
END_TEST

Suite *cq_suite(void)
{
    Suite *s = suite_create("cq");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_cq_bad_depth);
    tcase_add_test(tc, test_cq_push_poll_in_order);
    tcase_add_test(tc, test_cq_overflow_is_sticky);
    tcase_add_test(tc, test_cq_destroy_refused_while_referenced);
    tcase_add_test(tc, test_code_names);
    suite_add_tcase(s, tc);

    tc = tcase_create("notify");
    tcase_add_checked_fixture(tc, notify_setup, notify_teardown);
    tcase_add_test(tc, test_cq_unarmed_never_notifies);
    tcase_add_test(tc, test_cq_arm_next_fires_once);
    tcase_add_test(tc, test_cq_arm_solicited);
    tcase_add_test(tc, test_cq_arm_next_beats_solicited);
    tcase_add_test(tc, test_cq_arm_held);
    tcase_add_test(tc, test_cq_overflow_does_not_notify);
    suite_add_tcase(s, tc);
    return s;
}
