/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>
#include <check.h>
#include "iwarp/cq.h"
#include "iwarp/qp.h"
#include "suites.h"

/* ---- fixture: one QP with its own send and receive CQs ---- */

static struct rnic_cq *scq, *rcq;
static struct rnic_qp *qp;

static struct rnic_qp_attr default_attr(void)
{
    struct rnic_qp_attr a = {
        .sq_depth = 8,
        .rq_depth = 8,
        .max_send_sge = 4,
        .max_recv_sge = 4,
        .max_ord = 4,
        .max_ird = 4,
        .atomics = true,
        .send_cq = scq,
        .recv_cq = rcq,
    };

    return a;
}

static void setup(void)
{
    struct rnic_qp_attr a;

    scq = rnic_cq_new(64, NULL, NULL);
    rcq = rnic_cq_new(64, NULL, NULL);
    a = default_attr();
    qp = rnic_qp_new(7, &a);
    ck_assert_ptr_nonnull(qp);
}

static void teardown(void)
{
    if (qp) {
        rnic_qp_free(qp);
    }
    ck_assert_int_eq(rnic_cq_destroy(scq), 0);
    ck_assert_int_eq(rnic_cq_destroy(rcq), 0);
}

static struct rnic_send_wr send_wr(uint64_t id, enum rnic_wr_opcode op,
                                   uint32_t flags)
{
    struct rnic_send_wr wr = {
        .wr_id = id,
        .opcode = op,
        .flags = flags,
    };

    if (op == RNIC_WR_READ || op == RNIC_WR_ATOMIC_FETCH_ADD ||
        op == RNIC_WR_ATOMIC_CMP_SWAP) {
        wr.num_sge = 1;
        wr.sge[0] = (struct rnic_sge){ .stag = 0x100, .length = 8 };
    }
    return wr;
}

static int post(uint64_t id, enum rnic_wr_opcode op, uint32_t flags)
{
    struct rnic_send_wr wr = send_wr(id, op, flags);

    return rnic_qp_post_send(qp, &wr);
}

static int post_recv(struct rnic_qp *q, uint64_t id)
{
    struct rnic_recv_wr wr = { .wr_id = id, .num_sge = 1 };

    wr.sge[0] = (struct rnic_sge){ .stag = 0x200, .length = 4096 };
    return rnic_qp_post_recv(q, &wr);
}

static struct rnic_cqe poll_one(struct rnic_cq *cq)
{
    struct rnic_cqe cqe;

    ck_assert_uint_eq(rnic_cq_poll(cq, &cqe, 1), 1);
    return cqe;
}

static void expect_cqe(struct rnic_cq *cq, uint64_t id,
                       enum rnic_wc_status status)
{
    struct rnic_cqe cqe = poll_one(cq);

    ck_assert_uint_eq(cqe.wr_id, id);
    ck_assert_str_eq(rnic_wc_status_str(cqe.status),
                     rnic_wc_status_str(status));
    ck_assert_uint_eq(cqe.qpn, 7);
}

static void to_rts(void)
{
    ck_assert_int_eq(rnic_qp_adopt_connection(qp, 2, 2), 0);
}

/* Brings the fixture QP into @state by legal steps only. */
static void drive_to(enum rnic_qp_state state)
{
    switch (state) {
    case RNIC_QP_IDLE:
        break;
    case RNIC_QP_RTS:
        to_rts();
        break;
    case RNIC_QP_CLOSING:
    case RNIC_QP_TERMINATE:
        to_rts();
        ck_assert_int_eq(rnic_qp_modify(qp, state), 0);
        break;
    case RNIC_QP_ERROR:
        ck_assert_int_eq(rnic_qp_modify(qp, RNIC_QP_ERROR), 0);
        break;
    default:
        ck_abort();
    }
    ck_assert_int_eq(qp->state, state);
}

/* ---- host memory ---- */

/*
 * A QP that nothing was posted to holds no shadow slots, whatever its
 * depths; each queue gets its slots with its first post, and keeps them.
 */
START_TEST(test_qp_idle_holds_no_slots)
{
    struct rnic_inbound_read req = { .length = 8 };

    ck_assert_ptr_null(qp->sq.slots);
    ck_assert_ptr_null(qp->rq.wrs);
    ck_assert_ptr_null(qp->irq.reqs);
    ck_assert_int_eq(post_recv(qp, 1), 0);
    ck_assert_ptr_nonnull(qp->rq.wrs);
    ck_assert_ptr_null(qp->sq.slots);
    to_rts();
    ck_assert_int_eq(post(2, RNIC_WR_SEND, RNIC_WR_SIGNALED), 0);
    ck_assert_ptr_nonnull(qp->sq.slots);
    ck_assert_ptr_null(qp->irq.reqs);
    ck_assert_int_eq(rnic_qp_irq_push(qp, &req), 0);
    ck_assert_ptr_nonnull(qp->irq.reqs);
    ck_assert_uint_eq(rnic_qp_irq_head(qp)->length, 8);
}
END_TEST

/* ---- state machine ---- */

/* Written out again here, independently of the table in qp.c. */
static const bool expected_legal[RNIC_QP_STATE_COUNT][RNIC_QP_STATE_COUNT] = {
    [RNIC_QP_IDLE] = { [RNIC_QP_RTS] = true, [RNIC_QP_ERROR] = true },
    [RNIC_QP_RTS] = { [RNIC_QP_CLOSING] = true, [RNIC_QP_TERMINATE] = true,
                      [RNIC_QP_ERROR] = true },
    [RNIC_QP_CLOSING] = { [RNIC_QP_IDLE] = true, [RNIC_QP_ERROR] = true },
    [RNIC_QP_TERMINATE] = { [RNIC_QP_ERROR] = true },
    [RNIC_QP_ERROR] = { [RNIC_QP_IDLE] = true },
};

START_TEST(test_qp_transition)
{
    enum rnic_qp_state from = _i / RNIC_QP_STATE_COUNT;
    enum rnic_qp_state to = _i % RNIC_QP_STATE_COUNT;
    int ret;

    drive_to(from);
    ck_assert_int_eq(rnic_qp_transition_legal(from, to),
                     expected_legal[from][to]);
    ret = rnic_qp_modify(qp, to);
    if (expected_legal[from][to]) {
        ck_assert_msg(ret == 0, "%s -> %s: %d", rnic_qp_state_str(from),
                      rnic_qp_state_str(to), ret);
        ck_assert_int_eq(qp->state, to);
    } else {
        ck_assert_msg(ret == -EINVAL, "%s -> %s allowed",
                      rnic_qp_state_str(from), rnic_qp_state_str(to));
        ck_assert_int_eq(qp->state, from);
    }
}
END_TEST

START_TEST(test_qp_state_names)
{
    ck_assert_str_eq(rnic_qp_state_str(RNIC_QP_TERMINATE), "TERMINATE");
    ck_assert_str_eq(rnic_qp_state_str(RNIC_QP_STATE_COUNT), "?");
    ck_assert(!rnic_qp_transition_legal(RNIC_QP_STATE_COUNT, RNIC_QP_IDLE));
}
END_TEST

START_TEST(test_qp_adopt_sets_limits_and_msns)
{
    ck_assert_int_eq(rnic_qp_adopt_connection(qp, 5, 1), -ERANGE);
    ck_assert_int_eq(rnic_qp_adopt_connection(qp, 1, 5), -ERANGE);
    ck_assert_int_eq(qp->state, RNIC_QP_IDLE);
    ck_assert_int_eq(rnic_qp_adopt_connection(qp, 3, 2), 0);
    ck_assert_uint_eq(qp->ord, 3);
    ck_assert_uint_eq(qp->ird, 2);
    for (int qn = 0; qn < RNIC_QP_QN_COUNT; qn++) {
        ck_assert_uint_eq(qp->tx_msn[qn], 1);
        ck_assert_uint_eq(qp->rx_msn[qn], 1);
    }
    ck_assert_int_eq(rnic_qp_adopt_connection(qp, 3, 2), -EINVAL);
}
END_TEST

START_TEST(test_qp_graceful_close_drained)
{
    struct rnic_send_wr *wr;

    to_rts();
    ck_assert_int_eq(post(1, RNIC_WR_SEND, RNIC_WR_SIGNALED), 0);
    wr = rnic_qp_sq_next(qp);
    ck_assert_int_eq(rnic_qp_modify(qp, RNIC_QP_CLOSING), 0);
    /* Outstanding work drains; nothing new may start. */
    ck_assert_int_eq(rnic_qp_modify(qp, RNIC_QP_IDLE), -EBUSY);
    ck_assert_int_eq(post(2, RNIC_WR_SEND, 0), -ENOTCONN);
    ck_assert_int_eq(rnic_qp_sq_done(qp, wr, RNIC_WC_SUCCESS), 0);
    expect_cqe(scq, 1, RNIC_WC_SUCCESS);
    ck_assert_int_eq(rnic_qp_connection_closed(qp), 0);
    ck_assert_int_eq(qp->state, RNIC_QP_IDLE);
}
END_TEST

START_TEST(test_qp_graceful_close_with_work_left)
{
    to_rts();
    ck_assert_int_eq(post(1, RNIC_WR_SEND, 0), 0);
    ck_assert_int_eq(rnic_qp_modify(qp, RNIC_QP_CLOSING), 0);
    ck_assert_int_eq(rnic_qp_connection_closed(qp), 0);
    ck_assert_int_eq(qp->state, RNIC_QP_ERROR);
    expect_cqe(scq, 1, RNIC_WC_WR_FLUSH_ERR);
}
END_TEST

START_TEST(test_qp_abortive_close)
{
    to_rts();
    ck_assert_int_eq(post_recv(qp, 1), 0);
    ck_assert_int_eq(rnic_qp_connection_closed(qp), 0);
    ck_assert_int_eq(qp->state, RNIC_QP_ERROR);
    expect_cqe(rcq, 1, RNIC_WC_WR_FLUSH_ERR);
    /* Nothing to do in ERROR or IDLE. */
    ck_assert_int_eq(rnic_qp_connection_closed(qp), 0);
    ck_assert_int_eq(qp->state, RNIC_QP_ERROR);
    ck_assert_int_eq(rnic_qp_modify(qp, RNIC_QP_IDLE), 0);
    ck_assert_int_eq(rnic_qp_connection_closed(qp), 0);
    ck_assert_int_eq(qp->state, RNIC_QP_IDLE);
}
END_TEST

START_TEST(test_qp_terminate_then_llp_close)
{
    to_rts();
    ck_assert_int_eq(rnic_qp_modify(qp, RNIC_QP_TERMINATE), 0);
    ck_assert_int_eq(rnic_qp_connection_closed(qp), 0);
    ck_assert_int_eq(qp->state, RNIC_QP_ERROR);
}
END_TEST

/* ---- flushing ---- */

static void check_flush_into(enum rnic_qp_state to)
{
    enum { NS = 6, NR = 5 };
    struct rnic_cqe cqe;

    to_rts();
    for (uint64_t i = 0; i < NS; i++) {
        /* Every other WR unsignaled, a Read among them. */
        ck_assert_int_eq(post(100 + i, i == 2 ? RNIC_WR_READ : RNIC_WR_SEND,
                              i % 2 ? 0 : RNIC_WR_SIGNALED), 0);
    }
    for (uint64_t i = 0; i < NR; i++) {
        ck_assert_int_eq(post_recv(qp, 200 + i), 0);
    }
    /* Some already handed to tx, one inbound message in progress. */
    ck_assert_ptr_nonnull(rnic_qp_sq_next(qp));
    ck_assert_ptr_nonnull(rnic_qp_sq_next(qp));
    ck_assert_ptr_nonnull(rnic_qp_sq_next(qp));
    ck_assert_ptr_nonnull(rnic_qp_recv_begin(qp));

    ck_assert_int_eq(rnic_qp_modify(qp, to), 0);
    for (uint64_t i = 0; i < NS; i++) {
        cqe = poll_one(scq);
        ck_assert_uint_eq(cqe.wr_id, 100 + i);
        ck_assert_int_eq(cqe.status, RNIC_WC_WR_FLUSH_ERR);
        ck_assert_int_eq(cqe.opcode, i == 2 ? RNIC_WC_READ : RNIC_WC_SEND);
    }
    for (uint64_t i = 0; i < NR; i++) {
        expect_cqe(rcq, 200 + i, RNIC_WC_WR_FLUSH_ERR);
    }
    ck_assert_uint_eq(rnic_cq_count(scq), 0);
    ck_assert_uint_eq(rnic_cq_count(rcq), 0);
    ck_assert_uint_eq(qp->sq.count, 0);
    ck_assert_uint_eq(qp->rq.count, 0);
    ck_assert_uint_eq(qp->ord_used, 0);
    ck_assert_ptr_null(rnic_qp_sq_next(qp));
}

/* Flushing into a state, then leaving it: the flush happens exactly once. */
static const enum rnic_qp_state flush_path[][2] = {
    { RNIC_QP_ERROR, RNIC_QP_IDLE },
    { RNIC_QP_TERMINATE, RNIC_QP_ERROR },
};

START_TEST(test_qp_flush_exactly_once)
{
    check_flush_into(flush_path[_i][0]);
    ck_assert_int_eq(rnic_qp_modify(qp, flush_path[_i][1]), 0);
    ck_assert_uint_eq(rnic_cq_count(scq), 0);
    ck_assert_uint_eq(rnic_cq_count(rcq), 0);
}
END_TEST

START_TEST(test_qp_flush_keeps_finished_status)
{
    struct rnic_send_wr *rd, *snd;

    to_rts();
    ck_assert_int_eq(post(1, RNIC_WR_READ, RNIC_WR_SIGNALED), 0);
    ck_assert_int_eq(post(2, RNIC_WR_SEND, RNIC_WR_SIGNALED), 0);
    ck_assert_int_eq(post(3, RNIC_WR_SEND, 0), 0);
    rd = rnic_qp_sq_next(qp);
    snd = rnic_qp_sq_next(qp);
    ck_assert_ptr_nonnull(rd);
    ck_assert_int_eq(rnic_qp_sq_done(qp, snd, RNIC_WC_SUCCESS), 0);
    ck_assert_int_eq(rnic_qp_modify(qp, RNIC_QP_ERROR), 0);
    expect_cqe(scq, 1, RNIC_WC_WR_FLUSH_ERR);
    expect_cqe(scq, 2, RNIC_WC_SUCCESS);
    expect_cqe(scq, 3, RNIC_WC_WR_FLUSH_ERR);
    ck_assert_uint_eq(rnic_cq_count(scq), 0);
}
END_TEST

START_TEST(test_qp_idle_to_error_flushes_rq)
{
    ck_assert_int_eq(post_recv(qp, 1), 0);
    ck_assert_int_eq(post_recv(qp, 2), 0);
    ck_assert_int_eq(rnic_qp_modify(qp, RNIC_QP_ERROR), 0);
    expect_cqe(rcq, 1, RNIC_WC_WR_FLUSH_ERR);
    expect_cqe(rcq, 2, RNIC_WC_WR_FLUSH_ERR);
}
END_TEST

START_TEST(test_qp_post_in_error_flushes_at_once)
{
    drive_to(RNIC_QP_ERROR);
    ck_assert_int_eq(post(1, RNIC_WR_WRITE, 0), 0);
    expect_cqe(scq, 1, RNIC_WC_WR_FLUSH_ERR);
    ck_assert_int_eq(post_recv(qp, 2), 0);
    expect_cqe(rcq, 2, RNIC_WC_WR_FLUSH_ERR);
    ck_assert_uint_eq(qp->sq.count, 0);
    ck_assert_uint_eq(qp->rq.count, 0);
    /* A malformed WR is still refused, not flushed. */
    ck_assert_int_eq(post(3, RNIC_WR_OPCODE_COUNT, 0), -EOPNOTSUPP);
    ck_assert_uint_eq(rnic_cq_count(scq), 0);
}
END_TEST

START_TEST(test_qp_post_in_terminate_flushes_at_once)
{
    drive_to(RNIC_QP_TERMINATE);
    ck_assert_int_eq(post(1, RNIC_WR_SEND, 0), 0);
    expect_cqe(scq, 1, RNIC_WC_WR_FLUSH_ERR);
}
END_TEST

START_TEST(test_qp_flush_overflowing_cq)
{
    struct rnic_cq *small = rnic_cq_new(2, NULL, NULL);
    struct rnic_qp_attr a = default_attr();
    struct rnic_qp *q;

    a.recv_cq = small;
    q = rnic_qp_new(9, &a);
    for (uint64_t i = 0; i < 3; i++) {
        ck_assert_int_eq(post_recv(q, i), 0);
    }
    ck_assert_int_eq(rnic_qp_modify(q, RNIC_QP_ERROR), -ENOSPC);
    ck_assert_int_eq(q->state, RNIC_QP_ERROR);
    ck_assert(rnic_cq_overflowed(small));
    ck_assert_uint_eq(q->rq.count, 0);
    rnic_qp_free(q);
    ck_assert_int_eq(rnic_cq_destroy(small), 0);
}
END_TEST

/* ---- posting rules ---- */

START_TEST(test_qp_post_send_needs_rts)
{
    ck_assert_int_eq(post(1, RNIC_WR_SEND, 0), -ENOTCONN);
    ck_assert_int_eq(post_recv(qp, 2), 0);
    to_rts();
    ck_assert_int_eq(post(1, RNIC_WR_SEND, 0), 0);
}
END_TEST

START_TEST(test_qp_queue_full)
{
    to_rts();
    for (uint64_t i = 0; i < 8; i++) {
        ck_assert_int_eq(post(i, RNIC_WR_SEND, 0), 0);
        ck_assert_int_eq(post_recv(qp, i), 0);
    }
    ck_assert_int_eq(post(8, RNIC_WR_SEND, 0), -ENOMEM);
    ck_assert_int_eq(post_recv(qp, 8), -ENOMEM);
    /* Completing one frees a slot. */
    ck_assert_int_eq(rnic_qp_sq_done(qp, rnic_qp_sq_next(qp),
                                     RNIC_WC_SUCCESS), 0);
    ck_assert_int_eq(post(8, RNIC_WR_SEND, 0), 0);
}
END_TEST

START_TEST(test_qp_sge_limits)
{
    struct rnic_send_wr wr = send_wr(1, RNIC_WR_SEND, 0);
    struct rnic_recv_wr rwr = { .wr_id = 2, .num_sge = 5 };

    to_rts();
    wr.num_sge = 4;
    ck_assert_int_eq(rnic_qp_post_send(qp, &wr), 0);
    wr.num_sge = 5;
    ck_assert_int_eq(rnic_qp_post_send(qp, &wr), -E2BIG);
    wr.num_sge = RNIC_MAX_SGE + 1;
    ck_assert_int_eq(rnic_qp_post_send(qp, &wr), -E2BIG);
    ck_assert_int_eq(rnic_qp_post_recv(qp, &rwr), -E2BIG);
    rwr.num_sge = 4;
    ck_assert_int_eq(rnic_qp_post_recv(qp, &rwr), 0);
    /* A Read lands in one tagged sink buffer. */
    wr = send_wr(3, RNIC_WR_READ, 0);
    wr.num_sge = 2;
    ck_assert_int_eq(rnic_qp_post_send(qp, &wr), -E2BIG);
}
END_TEST

START_TEST(test_qp_length_limits)
{
    struct rnic_send_wr wr = send_wr(1, RNIC_WR_WRITE, 0);

    to_rts();
    wr.num_sge = 2;
    wr.sge[0].length = UINT32_MAX;
    wr.sge[1].length = 1;
    ck_assert_int_eq(rnic_qp_post_send(qp, &wr), -EMSGSIZE);
    /* Zero-length messages are legal (RFC 5040). */
    wr.num_sge = 0;
    ck_assert_int_eq(rnic_qp_post_send(qp, &wr), 0);
    wr = send_wr(2, RNIC_WR_READ, 0);
    wr.num_sge = 0;
    ck_assert_int_eq(rnic_qp_post_send(qp, &wr), 0);
    ck_assert_int_eq(post(3, RNIC_WR_SEND, 0), 0);
}
END_TEST

START_TEST(test_qp_inline)
{
    struct rnic_send_wr wr = send_wr(1, RNIC_WR_SEND,
                                     RNIC_WR_INLINE | RNIC_WR_SIGNALED);

    to_rts();
    wr.inline_len = RNIC_MAX_INLINE + 1;
    ck_assert_int_eq(rnic_qp_post_send(qp, &wr), -E2BIG);
    wr.inline_len = 3;
    wr.num_sge = 1;
    ck_assert_int_eq(rnic_qp_post_send(qp, &wr), -EINVAL);
    wr.num_sge = 0;
    ck_assert_int_eq(rnic_qp_post_send(qp, &wr), 0);
    wr = send_wr(2, RNIC_WR_READ, RNIC_WR_INLINE);
    wr.num_sge = 0;
    ck_assert_int_eq(rnic_qp_post_send(qp, &wr), -EINVAL);
    ck_assert_int_eq(rnic_qp_sq_done(qp, rnic_qp_sq_next(qp),
                                     RNIC_WC_SUCCESS), 0);
    ck_assert_uint_eq(poll_one(scq).byte_len, 3);
}
END_TEST

START_TEST(test_qp_opcode_rules)
{
    struct rnic_send_wr wr;

    to_rts();
    ck_assert_int_eq(post(1, RNIC_WR_OPCODE_COUNT, 0), -EOPNOTSUPP);
    ck_assert_int_eq(post(1, RNIC_WR_SEND, 1u << 7), -EINVAL);
    ck_assert_int_eq(post(1, RNIC_WR_WRITE, RNIC_WR_SOLICITED), -EINVAL);
    ck_assert_int_eq(post(1, RNIC_WR_ATOMIC_CMP_SWAP, 0), 0);
    wr = send_wr(2, RNIC_WR_ATOMIC_FETCH_ADD, 0);
    wr.sge[0].length = 4;
    ck_assert_int_eq(rnic_qp_post_send(qp, &wr), -EINVAL);
    wr = send_wr(3, RNIC_WR_LOCAL_INV, 0);
    wr.num_sge = 1;
    ck_assert_int_eq(rnic_qp_post_send(qp, &wr), -EINVAL);
    ck_assert_int_eq(post(4, RNIC_WR_LOCAL_INV, 0), 0);
    ck_assert_int_eq(post(5, RNIC_WR_BIND_MW, 0), 0);
    ck_assert_int_eq(post(6, RNIC_WR_IMM_DATA, RNIC_WR_SOLICITED), 0);
}
END_TEST

START_TEST(test_qp_atomics_and_reads_need_enabling)
{
    struct rnic_qp_attr a = default_attr();
    struct rnic_qp *q;
    struct rnic_send_wr wr = send_wr(1, RNIC_WR_ATOMIC_FETCH_ADD, 0);

    a.atomics = false;
    q = rnic_qp_new(8, &a);
    ck_assert_int_eq(rnic_qp_adopt_connection(q, 0, 0), 0);
    ck_assert_int_eq(rnic_qp_post_send(q, &wr), -EOPNOTSUPP);
    /* ORD 0 was negotiated: no Read could ever be sent. */
    wr = send_wr(2, RNIC_WR_READ, 0);
    ck_assert_int_eq(rnic_qp_post_send(q, &wr), -EOPNOTSUPP);
    rnic_qp_free(q);
}
END_TEST

START_TEST(test_qp_solicited_flag_selects_se_opcode)
{
    struct rnic_send_wr *wr;

    to_rts();
    ck_assert_int_eq(post(1, RNIC_WR_SEND, RNIC_WR_SOLICITED), 0);
    ck_assert_int_eq(post(2, RNIC_WR_SEND_INV, RNIC_WR_SOLICITED), 0);
    ck_assert_int_eq(post(3, RNIC_WR_SEND, 0), 0);
    wr = rnic_qp_sq_next(qp);
    ck_assert_int_eq(wr->opcode, RNIC_WR_SEND_SE);
    wr = rnic_qp_sq_next(qp);
    ck_assert_int_eq(wr->opcode, RNIC_WR_SEND_SE_INV);
    wr = rnic_qp_sq_next(qp);
    ck_assert_int_eq(wr->opcode, RNIC_WR_SEND);
}
END_TEST

START_TEST(test_qp_bad_attrs)
{
    struct rnic_qp_attr a = default_attr();

    a.max_send_sge = RNIC_MAX_SGE + 1;
    ck_assert_ptr_null(rnic_qp_new(1, &a));
    a = default_attr();
    a.sq_depth = 0;
    ck_assert_ptr_null(rnic_qp_new(1, &a));
    a = default_attr();
    a.max_ord = RNIC_QP_MAX_RD + 1;
    ck_assert_ptr_null(rnic_qp_new(1, &a));
    a = default_attr();
    a.recv_cq = NULL;
    ck_assert_ptr_null(rnic_qp_new(1, &a));
    ck_assert_uint_eq(rnic_cq_refcount(scq), 1);
}
END_TEST

START_TEST(test_qp_holds_cq_references)
{
    ck_assert_int_eq(rnic_cq_destroy(scq), -EBUSY);
    ck_assert_int_eq(rnic_cq_destroy(rcq), -EBUSY);
    rnic_qp_free(qp);
    qp = NULL;
    ck_assert_uint_eq(rnic_cq_refcount(scq), 0);
}
END_TEST

/* ---- send queue: ordering, ORD, fences ---- */

START_TEST(test_qp_in_order_completion)
{
    struct rnic_send_wr *rd, *s1, *s2;

    to_rts();
    ck_assert_int_eq(post(1, RNIC_WR_READ, RNIC_WR_SIGNALED), 0);
    ck_assert_int_eq(post(2, RNIC_WR_SEND, RNIC_WR_SIGNALED), 0);
    ck_assert_int_eq(post(3, RNIC_WR_SEND, 0), 0);
    rd = rnic_qp_sq_next(qp);
    s1 = rnic_qp_sq_next(qp);   /* Sends do not wait for the Read */
    s2 = rnic_qp_sq_next(qp);
    ck_assert_ptr_nonnull(s2);
    ck_assert_int_eq(rnic_qp_sq_done(qp, s2, RNIC_WC_SUCCESS), 0);
    ck_assert_int_eq(rnic_qp_sq_done(qp, s1, RNIC_WC_SUCCESS), 0);
    ck_assert_uint_eq(rnic_cq_count(scq), 0);
    ck_assert_ptr_eq(rnic_qp_sq_oldest_read(qp), rd);
    ck_assert_int_eq(rnic_qp_sq_done(qp, rd, RNIC_WC_SUCCESS), 0);
    expect_cqe(scq, 1, RNIC_WC_SUCCESS);
    expect_cqe(scq, 2, RNIC_WC_SUCCESS);
    ck_assert_uint_eq(rnic_cq_count(scq), 0);
    ck_assert_uint_eq(qp->sq.count, 0);
}
END_TEST

START_TEST(test_qp_unsignaled_error_completes)
{
    struct rnic_send_wr *wr;

    to_rts();
    ck_assert_int_eq(post(1, RNIC_WR_WRITE, 0), 0);
    wr = rnic_qp_sq_next(qp);
    ck_assert_int_eq(rnic_qp_sq_done(qp, wr, RNIC_WC_LOC_PROT_ERR), 0);
    expect_cqe(scq, 1, RNIC_WC_LOC_PROT_ERR);
}
END_TEST

START_TEST(test_qp_sq_done_rejects_bad_wr)
{
    struct rnic_send_wr stray = send_wr(9, RNIC_WR_SEND, 0);
    struct rnic_send_wr *wr;

    to_rts();
    ck_assert_int_eq(post(1, RNIC_WR_READ, 0), 0);
    ck_assert_int_eq(post(2, RNIC_WR_READ, 0), 0);
    wr = rnic_qp_sq_next(qp);
    ck_assert_int_eq(rnic_qp_sq_done(qp, &stray, RNIC_WC_SUCCESS), -EINVAL);
    /* Posted but not started: not the tx path's to finish. */
    ck_assert_int_eq(rnic_qp_sq_done(qp, &qp->sq.slots[1].wr,
                                     RNIC_WC_SUCCESS), -EINVAL);
    ck_assert_int_eq(rnic_qp_sq_done(qp, wr, RNIC_WC_SUCCESS), 0);
    ck_assert_int_eq(rnic_qp_sq_done(qp, wr, RNIC_WC_SUCCESS), -EINVAL);
    ck_assert_uint_eq(qp->ord_used, 0);
    ck_assert_uint_eq(qp->sq.count, 1);
}
END_TEST

START_TEST(test_qp_ord_limit)
{
    struct rnic_send_wr *r1, *r2, *r3;

    ck_assert_int_eq(rnic_qp_adopt_connection(qp, 2, 2), 0);
    ck_assert_int_eq(post(1, RNIC_WR_READ, RNIC_WR_SIGNALED), 0);
    ck_assert_int_eq(post(2, RNIC_WR_ATOMIC_FETCH_ADD, RNIC_WR_SIGNALED), 0);
    ck_assert_int_eq(post(3, RNIC_WR_READ, RNIC_WR_SIGNALED), 0);
    ck_assert_int_eq(post(4, RNIC_WR_SEND, RNIC_WR_SIGNALED), 0);
    r1 = rnic_qp_sq_next(qp);
    r2 = rnic_qp_sq_next(qp);
    ck_assert_uint_eq(r1->wr_id, 1);
    ck_assert_uint_eq(r2->wr_id, 2);
    /* Third Read would exceed ORD; the Send behind it waits too. */
    ck_assert_ptr_null(rnic_qp_sq_next(qp));
    ck_assert_uint_eq(qp->ord_used, 2);
    ck_assert_ptr_eq(rnic_qp_sq_oldest_read(qp), r1);
    ck_assert_int_eq(rnic_qp_sq_done(qp, r1, RNIC_WC_SUCCESS), 0);
    r3 = rnic_qp_sq_next(qp);
    ck_assert_ptr_nonnull(r3);
    ck_assert_uint_eq(r3->wr_id, 3);
    ck_assert_ptr_eq(rnic_qp_sq_oldest_read(qp), r2);
    ck_assert_uint_eq(rnic_qp_sq_next(qp)->wr_id, 4);
    expect_cqe(scq, 1, RNIC_WC_SUCCESS);
}
END_TEST

START_TEST(test_qp_read_fence)
{
    struct rnic_send_wr *rd, *wr;

    to_rts();
    ck_assert_int_eq(post(1, RNIC_WR_READ, 0), 0);
    ck_assert_int_eq(post(2, RNIC_WR_WRITE, 0), 0);
    ck_assert_int_eq(post(3, RNIC_WR_SEND, RNIC_WR_FENCE), 0);
    rd = rnic_qp_sq_next(qp);
    wr = rnic_qp_sq_next(qp);
    ck_assert_uint_eq(wr->wr_id, 2);
    ck_assert_ptr_null(rnic_qp_sq_next(qp));
    ck_assert_int_eq(rnic_qp_sq_done(qp, wr, RNIC_WC_SUCCESS), 0);
    ck_assert_ptr_null(rnic_qp_sq_next(qp));
    ck_assert_int_eq(rnic_qp_sq_done(qp, rd, RNIC_WC_SUCCESS), 0);
    wr = rnic_qp_sq_next(qp);
    ck_assert_ptr_nonnull(wr);
    ck_assert_uint_eq(wr->wr_id, 3);
}
END_TEST

START_TEST(test_qp_fence_without_reads_passes)
{
    to_rts();
    ck_assert_int_eq(post(1, RNIC_WR_SEND, RNIC_WR_FENCE), 0);
    ck_assert_ptr_nonnull(rnic_qp_sq_next(qp));
}
END_TEST

START_TEST(test_qp_sq_next_only_in_rts)
{
    to_rts();
    ck_assert_int_eq(post(1, RNIC_WR_SEND, 0), 0);
    ck_assert_int_eq(post(2, RNIC_WR_SEND, 0), 0);
    ck_assert_ptr_nonnull(rnic_qp_sq_next(qp));
    ck_assert_int_eq(rnic_qp_modify(qp, RNIC_QP_CLOSING), 0);
    ck_assert_ptr_null(rnic_qp_sq_next(qp));
}
END_TEST

/* ---- inbound Reads ---- */

START_TEST(test_qp_ird_exceeded)
{
    struct rnic_inbound_read req = { .length = 16 };

    ck_assert_int_eq(rnic_qp_adopt_connection(qp, 1, 2), 0);
    ck_assert_ptr_null(rnic_qp_irq_head(qp));
    req.sink_to = 1;
    ck_assert_int_eq(rnic_qp_irq_push(qp, &req), 0);
    req.sink_to = 2;
    ck_assert_int_eq(rnic_qp_irq_push(qp, &req), 0);
    req.sink_to = 3;
    ck_assert_int_eq(rnic_qp_irq_push(qp, &req), -EPROTO);
    ck_assert_uint_eq(rnic_qp_irq_head(qp)->sink_to, 1);
    rnic_qp_irq_pop(qp);
    ck_assert_int_eq(rnic_qp_irq_push(qp, &req), 0);
    ck_assert_uint_eq(rnic_qp_irq_head(qp)->sink_to, 2);
    rnic_qp_irq_pop(qp);
    ck_assert_uint_eq(rnic_qp_irq_head(qp)->sink_to, 3);
    rnic_qp_irq_pop(qp);
    ck_assert_ptr_null(rnic_qp_irq_head(qp));
    rnic_qp_irq_pop(qp);
    ck_assert_uint_eq(qp->irq.count, 0);
}
END_TEST

START_TEST(test_qp_inbound_read_blocks_graceful_idle)
{
    struct rnic_inbound_read req = { .length = 1 };

    to_rts();
    ck_assert_int_eq(rnic_qp_irq_push(qp, &req), 0);
    ck_assert_int_eq(rnic_qp_modify(qp, RNIC_QP_CLOSING), 0);
    ck_assert_int_eq(rnic_qp_modify(qp, RNIC_QP_IDLE), -EBUSY);
    rnic_qp_irq_pop(qp);
    ck_assert_int_eq(rnic_qp_modify(qp, RNIC_QP_IDLE), 0);
}
END_TEST

/* ---- receive side ---- */

START_TEST(test_qp_recv_complete)
{
    struct rnic_cqe cqe = {
        .status = RNIC_WC_SUCCESS,
        .byte_len = 42,
        .flags = RNIC_WC_WITH_INV | RNIC_WC_SOLICITED,
        .inval_stag = 0xabcd,
    };
    struct rnic_cqe got;

    ck_assert_int_eq(post_recv(qp, 1), 0);
    ck_assert_ptr_null(rnic_qp_recv_begin(qp));     /* not connected */
    to_rts();
    ck_assert_int_eq(rnic_qp_recv_complete(qp, &cqe), -EINVAL);
    ck_assert_uint_eq(rnic_qp_recv_begin(qp)->wr_id, 1);
    ck_assert_ptr_null(rnic_qp_recv_begin(qp));     /* one at a time */
    ck_assert_uint_eq(rnic_qp_recv_current(qp)->wr_id, 1);
    ck_assert_int_eq(rnic_qp_recv_complete(qp, &cqe), 0);
    got = poll_one(rcq);
    ck_assert_uint_eq(got.wr_id, 1);
    ck_assert_int_eq(got.opcode, RNIC_WC_RECV);
    ck_assert_uint_eq(got.byte_len, 42);
    ck_assert_uint_eq(got.flags, RNIC_WC_WITH_INV | RNIC_WC_SOLICITED);
    ck_assert_uint_eq(got.inval_stag, 0xabcd);
    ck_assert_uint_eq(got.qpn, 7);
    /* Nothing posted: the rx path will Terminate. */
    ck_assert_ptr_null(rnic_qp_recv_begin(qp));
}
END_TEST

START_TEST(test_qp_srq_shared_by_two_qps)
{
    struct rnic_srq *srq = rnic_srq_new(1, 4, 2);
    struct rnic_qp_attr a = default_attr();
    struct rnic_recv_wr wr = { .num_sge = 1 };
    struct rnic_cqe done = { .status = RNIC_WC_SUCCESS }, got;
    struct rnic_qp *qa, *qb;

    a.srq = srq;
    qa = rnic_qp_new(10, &a);
    qb = rnic_qp_new(11, &a);
    ck_assert_int_eq(rnic_srq_destroy(srq), -EBUSY);
    for (wr.wr_id = 1; wr.wr_id <= 4; wr.wr_id++) {
        ck_assert_int_eq(rnic_srq_post_recv(srq, &wr), 0);
    }
    ck_assert_int_eq(rnic_srq_post_recv(srq, &wr), -ENOMEM);
    ck_assert_int_eq(post_recv(qa, 99), -EINVAL);
    ck_assert_int_eq(rnic_qp_adopt_connection(qa, 1, 1), 0);
    ck_assert_int_eq(rnic_qp_adopt_connection(qb, 1, 1), 0);

    /* Taken in posting order, whichever QP asks. */
    ck_assert_uint_eq(rnic_qp_recv_begin(qb)->wr_id, 1);
    ck_assert_uint_eq(rnic_qp_recv_begin(qa)->wr_id, 2);
    ck_assert_int_eq(rnic_qp_recv_complete(qa, &done), 0);
    ck_assert_uint_eq(rnic_qp_recv_begin(qa)->wr_id, 3);
    ck_assert_uint_eq(rnic_srq_count(srq), 1);

    /* qa's flush takes its own WR only; the SRQ keeps the rest. */
    ck_assert_int_eq(rnic_qp_modify(qa, RNIC_QP_ERROR), 0);
    ck_assert_uint_eq(rnic_srq_count(srq), 1);
    ck_assert_int_eq(rnic_qp_recv_complete(qb, &done), 0);
    got = poll_one(rcq);
    ck_assert(got.wr_id == 2 && got.qpn == 10 && !got.status);
    got = poll_one(rcq);
    ck_assert(got.wr_id == 3 && got.qpn == 10 &&
              got.status == RNIC_WC_WR_FLUSH_ERR);
    got = poll_one(rcq);
    ck_assert(got.wr_id == 1 && got.qpn == 11 && !got.status);
    ck_assert_uint_eq(rnic_qp_recv_begin(qb)->wr_id, 4);

    rnic_qp_free(qa);
    ck_assert_int_eq(rnic_srq_destroy(srq), -EBUSY);
    rnic_qp_free(qb);
    ck_assert_int_eq(rnic_srq_destroy(srq), 0);
}
END_TEST

START_TEST(test_qp_srq_limits)
{
    struct rnic_srq *srq = rnic_srq_new(1, 4, 2);
    struct rnic_recv_wr wr = { .num_sge = 3 };

    ck_assert_ptr_null(rnic_srq_new(1, 0, 1));
    ck_assert_ptr_null(rnic_srq_new(1, 4, RNIC_MAX_SGE + 1));
    ck_assert_int_eq(rnic_srq_post_recv(srq, &wr), -E2BIG);
    wr.num_sge = 2;
    wr.sge[0].length = UINT32_MAX;
    wr.sge[1].length = UINT32_MAX;
    ck_assert_int_eq(rnic_srq_post_recv(srq, &wr), -EMSGSIZE);
    ck_assert_uint_eq(rnic_srq_count(srq), 0);
    ck_assert_int_eq(rnic_srq_destroy(srq), 0);
}
END_TEST

Suite *qp_suite(void)
{
    Suite *s = suite_create("qp");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_qp_transition, 0,
                        RNIC_QP_STATE_COUNT * RNIC_QP_STATE_COUNT);
    tcase_add_test(tc, test_qp_state_names);
    tcase_add_test(tc, test_qp_idle_holds_no_slots);
    tcase_add_test(tc, test_qp_adopt_sets_limits_and_msns);
    tcase_add_test(tc, test_qp_graceful_close_drained);
    tcase_add_test(tc, test_qp_graceful_close_with_work_left);
    tcase_add_test(tc, test_qp_abortive_close);
    tcase_add_test(tc, test_qp_terminate_then_llp_close);
    tcase_add_loop_test(tc, test_qp_flush_exactly_once, 0,
                        sizeof(flush_path) / sizeof(flush_path[0]));
    tcase_add_test(tc, test_qp_flush_keeps_finished_status);
    tcase_add_test(tc, test_qp_idle_to_error_flushes_rq);
    tcase_add_test(tc, test_qp_post_in_error_flushes_at_once);
    tcase_add_test(tc, test_qp_post_in_terminate_flushes_at_once);
    tcase_add_test(tc, test_qp_flush_overflowing_cq);
    tcase_add_test(tc, test_qp_post_send_needs_rts);
    tcase_add_test(tc, test_qp_queue_full);
    tcase_add_test(tc, test_qp_sge_limits);
    tcase_add_test(tc, test_qp_length_limits);
    tcase_add_test(tc, test_qp_inline);
    tcase_add_test(tc, test_qp_opcode_rules);
    tcase_add_test(tc, test_qp_atomics_and_reads_need_enabling);
    tcase_add_test(tc, test_qp_solicited_flag_selects_se_opcode);
    tcase_add_test(tc, test_qp_bad_attrs);
    tcase_add_test(tc, test_qp_holds_cq_references);
    tcase_add_test(tc, test_qp_in_order_completion);
    tcase_add_test(tc, test_qp_unsignaled_error_completes);
    tcase_add_test(tc, test_qp_sq_done_rejects_bad_wr);
    tcase_add_test(tc, test_qp_ord_limit);
    tcase_add_test(tc, test_qp_read_fence);
    tcase_add_test(tc, test_qp_fence_without_reads_passes);
    tcase_add_test(tc, test_qp_sq_next_only_in_rts);
    tcase_add_test(tc, test_qp_ird_exceeded);
    tcase_add_test(tc, test_qp_inbound_read_blocks_graceful_idle);
    tcase_add_test(tc, test_qp_recv_complete);
    tcase_add_test(tc, test_qp_srq_shared_by_two_qps);
    tcase_add_test(tc, test_qp_srq_limits);
    suite_add_tcase(s, tc);
    return s;
}
