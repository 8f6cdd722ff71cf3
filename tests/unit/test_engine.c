/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The engine end to end: two endpoints joined by an in-memory byte pipe
 * that cuts the stream into seeded random pieces, every byte checked in
 * the receiver's guest memory.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <endian.h>
#include <string.h>
#include <check.h>
#include "suites.h"
#include "support/epfix.h"

#define SRC_OFF     0ull                    /* data to send */
#define DST_OFF     ((uint64_t)4 << 20)     /* where it lands */
#define MISC_OFF    ((uint64_t)7 << 20)
#define MIB         ((uint32_t)1 << 20)
#define CHUNK       3000

static struct epf_side A, B;        /* A initiates */
static struct epf_rng rng;

struct pair_cfg {
    bool crc, markers;
    uint8_t rtr;
    uint32_t mulpdu;
    uint16_t ord_ird;
    uint32_t max_rd;
    bool srq;
};

static void pair_up(const struct pair_cfg *c)
{
    struct epf_params pa = {
        .initiator = true, .mulpdu = c->mulpdu, .atomics = true,
        .max_rd = c->max_rd,
    };
    struct epf_params pb = pa;

    epf_mpa_pair(c->crc, c->markers, c->rtr, c->ord_ird ? c->ord_ird : 4,
                 &pa.mpa, &pb.mpa);
    pb.initiator = false;
    pb.srq = c->srq;
    epf_init(&A, &pa, 10);
    epf_init(&B, &pb, 20);
    rng.s = 0x1234567890abcdefull;
    epf_fill(epf_ptr(&A, SRC_OFF), 2 * MIB, &rng);
    epf_fill(epf_ptr(&B, SRC_OFF), 2 * MIB, &rng);
    memset(epf_ptr(&A, DST_OFF), 0xee, 2 * MIB);
    memset(epf_ptr(&B, DST_OFF), 0xee, 2 * MIB);
}

static void setup(void)
{
    pair_up(&(struct pair_cfg) { .crc = true, .rtr = RNIC_MPA_RTR_WRITE });
}

static void teardown(void)
{
    epf_fini(&A);
    epf_fini(&B);
}

static void run(void)
{
    epf_run(&A, &B, &rng, CHUNK);
}

static void expect_cqe(struct rnic_cq *cq, uint64_t id,
                       enum rnic_wc_status status, enum rnic_wc_opcode op,
                       uint32_t len)
{
    struct rnic_cqe c = epf_cqe(cq);

    ck_assert_msg(c.wr_id == id && c.status == status && c.opcode == op,
                  "CQE id %lu %s %s, want id %lu %s %s", (unsigned long)c.wr_id,
                  rnic_wc_status_str(c.status), rnic_wc_opcode_str(c.opcode),
                  (unsigned long)id, rnic_wc_status_str(status),
                  rnic_wc_opcode_str(op));
    if (status == RNIC_WC_SUCCESS) {
        ck_assert_uint_eq(c.byte_len, len);
    }
}

/* @n bytes at @dst of @to equal those at @src of @from; after: untouched */
static void expect_data(struct epf_side *to, uint64_t dst,
                        struct epf_side *from, uint64_t src, uint32_t n)
{
    ck_assert_int_eq(memcmp(epf_ptr(to, dst), epf_ptr(from, src), n), 0);
    ck_assert_uint_eq(*epf_ptr(to, dst + n), 0xee);
}

static uint32_t remote_mr(struct epf_side *s, uint64_t off, uint64_t len,
                          unsigned access, enum rnic_stag_policy policy)
{
    return epf_mr(s, off, len, access | RNIC_ACCESS_LOCAL_WRITE, policy,
                  true);
}

/* Receive links on @s's QP's receive queue, as the device makes them. */
static enum rnic_stag_status link_recv(struct epf_side *s, uint32_t stag,
                                       uint64_t recv_id)
{
    struct rnic_recv_owner o = {
        rnic_qp_recv_queue(s->qp), s->pd, s->qp->qpn,
    };

    return rnic_stag_link_to_recv(s->stags, stag, &o, recv_id);
}

static size_t recv_consumed(struct epf_side *s, uint64_t recv_id,
                            uint32_t *stags, size_t max)
{
    return rnic_stag_recv_consumed(s->stags, rnic_qp_recv_queue(s->qp),
                                   recv_id, stags, max);
}

/* ---- every data operation at the sizes around MULPDU ---- */

static void do_send(uint32_t n, enum rnic_wr_opcode op, uint64_t id)
{
    struct rnic_send_wr wr = epf_wr(id, op, A.lkey, SRC_OFF, n);
    uint32_t flags = op == RNIC_WR_SEND_SE ? RNIC_WC_SOLICITED : 0;
    struct rnic_cqe c;

    memset(epf_ptr(&B, DST_OFF), 0xee, n + 1);
    epf_post_recv(&B, id, DST_OFF, n);
    epf_post(&A, &wr);
    run();
    expect_cqe(A.scq, id, RNIC_WC_SUCCESS, RNIC_WC_SEND, n);
    c = epf_cqe(B.rcq);
    ck_assert_int_eq(c.status, RNIC_WC_SUCCESS);
    ck_assert_uint_eq(c.byte_len, n);
    ck_assert_uint_eq(c.flags, flags);
    expect_data(&B, DST_OFF, &A, SRC_OFF, n);
}

static void do_write(uint32_t n, uint64_t id)
{
    uint32_t stag = remote_mr(&B, DST_OFF, 2 * MIB, RNIC_ACCESS_REMOTE_WRITE,
                              RNIC_STAG_PERSISTENT);
    struct rnic_send_wr wr = epf_wr(id, RNIC_WR_WRITE, A.lkey, SRC_OFF, n);

    memset(epf_ptr(&B, DST_OFF), 0xee, n + 1);
    wr.remote_stag = stag;
    wr.remote_to = epf_addr(DST_OFF);
    epf_post(&A, &wr);
    run();
    expect_cqe(A.scq, id, RNIC_WC_SUCCESS, RNIC_WC_WRITE, n);
    epf_no_cqe(B.rcq);
    expect_data(&B, DST_OFF, &A, SRC_OFF, n);
    ck_assert_int_eq(rnic_mr_deregister(B.stags, stag), RNIC_STAG_OK);
}

static void do_read(uint32_t n, uint64_t id)
{
    uint32_t stag = remote_mr(&B, SRC_OFF, 2 * MIB, RNIC_ACCESS_REMOTE_READ,
                              RNIC_STAG_PERSISTENT);
    struct rnic_send_wr wr = epf_wr(id, RNIC_WR_READ, A.lkey, DST_OFF, n);

    memset(epf_ptr(&A, DST_OFF), 0xee, n + 1);
    wr.remote_stag = stag;
    wr.remote_to = epf_addr(SRC_OFF);
    epf_post(&A, &wr);
    run();
    expect_cqe(A.scq, id, RNIC_WC_SUCCESS, RNIC_WC_READ, n);
    expect_data(&A, DST_OFF, &B, SRC_OFF, n);
    ck_assert_int_eq(rnic_mr_deregister(B.stags, stag), RNIC_STAG_OK);
}

static const struct pair_cfg wire_cfgs[] = {
    { .crc = true, .markers = false, .rtr = RNIC_MPA_RTR_WRITE },
    { .crc = false, .markers = false, .rtr = RNIC_MPA_RTR_SEND },
    { .crc = true, .markers = true, .rtr = RNIC_MPA_RTR_READ },
    { .crc = false, .markers = true, .rtr = 0 },
};

START_TEST(test_ops_sizes)
{
    uint32_t m, sizes[10];
    uint64_t id = 1;

    teardown();
    pair_up(&wire_cfgs[_i]);
    m = rnic_ep_mulpdu(A.ep);
    sizes[0] = 0;
    sizes[1] = 1;
    sizes[2] = m - 1;
    sizes[3] = m;
    sizes[4] = m + 1;
    sizes[5] = m - 18 - 1;      /* one untagged segment's payload, -1 */
    sizes[6] = m - 18;
    sizes[7] = m - 14 + 1;      /* one tagged segment's payload, +1 */
    sizes[8] = 3 * m + 7;
    sizes[9] = MIB;
    for (int i = 0; i < 10; i++) {
        do_send(sizes[i], i & 1 ? RNIC_WR_SEND_SE : RNIC_WR_SEND, id++);
        do_write(sizes[i], id++);
        do_read(sizes[i], id++);
    }
    ck_assert_int_eq(A.qp->state, RNIC_QP_RTS);
    ck_assert_int_eq(B.qp->state, RNIC_QP_RTS);
    ck_assert_uint_eq(A.term_sent + B.term_sent, 0);
}
END_TEST

/* Without zero-copy maps, and with maps cut in small pieces. */
START_TEST(test_ops_without_maps)
{
    A.mem.can_map = _i == 0;
    B.mem.can_map = _i == 0;
    A.mem.map_limit = 700;
    B.mem.map_limit = 700;
    do_send(100000, RNIC_WR_SEND, 1);
    do_write(70000, 2);
    do_read(50001, 3);
}
END_TEST

START_TEST(test_segmentation)
{
    static struct epf_capture cap;
    uint32_t m = rnic_ep_mulpdu(A.ep);
    struct rnic_send_wr wr = epf_wr(1, RNIC_WR_SEND, A.lkey, SRC_OFF,
                                    2 * (m - 18) + 1);
    struct rnic_ddp_hdr h[3];

    epf_capture_init(&cap, true, false);
    epf_post(&A, &wr);
    epf_capture(&A, &cap);
    /* the RTR Write, then three segments of one Send */
    ck_assert_int_eq(cap.count, 4);
    ck_assert_uint_eq(cap.len[0], 14);
    for (int i = 0; i < 3; i++) {
        ck_assert_uint_ne(rnic_ddp_hdr_decode(&h[i], cap.ulpdu[i + 1], 18), 0);
        ck_assert_uint_eq(h[i].msn, 1);
        ck_assert_uint_eq(h[i].qn, 0);
        ck_assert_uint_eq(h[i].mo, i * (m - 18));
        ck_assert(h[i].last == (i == 2));
    }
    ck_assert_uint_eq(cap.len[1], m);
    ck_assert_uint_eq(cap.len[2], m);
    ck_assert_uint_eq(cap.len[3], 19);
    expect_cqe(A.scq, 1, RNIC_WC_SUCCESS, RNIC_WC_SEND, 2 * (m - 18) + 1);
}
END_TEST

/*
 * A Write from 16 pages that lie apart in guest memory, with a MULPDU of
 * 60000: more pieces than an FPDU has iovecs.  The FPDUs end where the
 * iovecs run out (zero copy) instead of going through the bounce buffer
 * at full size; every octet arrives in order.
 */
START_TEST(test_write_from_scattered_pages)
{
    enum { NP = 16 };
    static struct epf_capture cap;
    uint64_t pages[NP];
    struct rnic_mr_attr a = {
        .key = 0x51, .access = RNIC_ACCESS_LOCAL_WRITE,
        .policy = RNIC_STAG_PERSISTENT, .pages = pages, .npages = NP,
        .page_shift = 12, .length = NP * EPF_PAGE, .base_to = 0x100000,
    };
    uint32_t src, dst;
    struct rnic_send_wr w;
    int n = 0;

    teardown();
    pair_up(&(struct pair_cfg) { .crc = true, .rtr = RNIC_MPA_RTR_WRITE,
                                 .mulpdu = 60000 });
    for (int i = 0; i < NP; i++) {
        pages[i] = epf_addr(SRC_OFF + (uint64_t)(NP - 1 - i) * 2 * EPF_PAGE);
    }
    a.pd = A.pd;
    ck_assert_int_eq(rnic_mr_register(A.stags, &a, &src), RNIC_STAG_OK);
    dst = epf_mr(&B, DST_OFF, NP * EPF_PAGE, RNIC_ACCESS_LOCAL_WRITE |
                 RNIC_ACCESS_REMOTE_WRITE, RNIC_STAG_PERSISTENT, false);
    w = epf_wr(1, RNIC_WR_WRITE, src, 0, NP * EPF_PAGE);
    w.sge[0].to = a.base_to;
    w.remote_stag = dst;
    w.remote_to = epf_addr(DST_OFF);
    epf_post(&A, &w);
    run();
    expect_cqe(A.scq, 1, RNIC_WC_SUCCESS, RNIC_WC_WRITE, NP * EPF_PAGE);
    for (int i = 0; i < NP; i++) {
        ck_assert_mem_eq(epf_ptr(&B, DST_OFF + (uint64_t)i * EPF_PAGE),
                         epf_ptr(&A, pages[i] - epf_addr(0)), EPF_PAGE);
    }

    epf_capture_init(&cap, true, false);
    w.wr_id = 2;
    epf_post(&A, &w);
    epf_capture(&A, &cap);
    for (int i = 0; i < cap.count; i++) {
        /* an FPDU's pieces: the header, then its payload's */
        ck_assert_uint_le(cap.len[i], rnic_ddp_hdr_len(true) +
                          (RNIC_FPDU_TX_MAX_PIECES - 1) * EPF_PAGE);
        n += cap.len[i] > rnic_ddp_hdr_len(true) ? 1 : 0;
    }
    ck_assert_int_ge(n, NP / (RNIC_FPDU_TX_MAX_PIECES - 1) + 1);
}
END_TEST

/* A multi-SGE Send scattered over a multi-SGE receive. */
START_TEST(test_scatter_gather)
{
    struct rnic_send_wr wr = epf_wr(1, RNIC_WR_SEND, A.lkey, SRC_OFF, 3000);
    struct rnic_recv_wr rw = { .wr_id = 9, .num_sge = 3 };
    uint32_t lens[3] = { 1000, 1, 2999 };

    wr.num_sge = 3;
    wr.sge[1] = (struct rnic_sge) { A.lkey, epf_addr(SRC_OFF + 5000), 10 };
    wr.sge[2] = (struct rnic_sge) { A.lkey, epf_addr(SRC_OFF + 9000), 990 };
    for (int i = 0; i < 3; i++) {
        rw.sge[i] = (struct rnic_sge) { B.lkey,
                                        epf_addr(DST_OFF + i * 8192),
                                        lens[i] };
    }
    ck_assert_int_eq(rnic_qp_post_recv(B.qp, &rw), 0);
    epf_post(&A, &wr);
    run();
    expect_cqe(B.rcq, 9, RNIC_WC_SUCCESS, RNIC_WC_RECV, 4000);
    ck_assert_int_eq(memcmp(epf_ptr(&B, DST_OFF), epf_ptr(&A, SRC_OFF),
                            1000), 0);
    ck_assert_int_eq(*epf_ptr(&B, DST_OFF + 8192), *epf_ptr(&A, 1000));
    ck_assert_int_eq(memcmp(epf_ptr(&B, DST_OFF + 16384),
                            epf_ptr(&A, 1001), 1999), 0);
    ck_assert_int_eq(memcmp(epf_ptr(&B, DST_OFF + 16384 + 1999),
                            epf_ptr(&A, 5000), 10), 0);
    ck_assert_int_eq(memcmp(epf_ptr(&B, DST_OFF + 16384 + 2009),
                            epf_ptr(&A, 9000), 990), 0);
}
END_TEST

START_TEST(test_inline_send)
{
    struct rnic_send_wr wr = { .wr_id = 4, .opcode = RNIC_WR_SEND,
                               .flags = RNIC_WR_SIGNALED | RNIC_WR_INLINE,
                               .inline_len = 50 };

    for (int i = 0; i < 50; i++) {
        wr.inline_data[i] = (uint8_t)(i * 5 + 1);
    }
    epf_post_recv(&B, 1, DST_OFF, 64);
    epf_post(&A, &wr);
    run();
    expect_cqe(A.scq, 4, RNIC_WC_SUCCESS, RNIC_WC_SEND, 50);
    expect_cqe(B.rcq, 1, RNIC_WC_SUCCESS, RNIC_WC_RECV, 50);
    ck_assert_int_eq(memcmp(epf_ptr(&B, DST_OFF), wr.inline_data, 50), 0);
}
END_TEST

START_TEST(test_srq)
{
    teardown();
    pair_up(&(struct pair_cfg) { .crc = true, .srq = true });
    for (int i = 0; i < 3; i++) {
        epf_post_recv(&B, 100 + i, DST_OFF + i * 4096, 4096);
    }
    for (int i = 0; i < 3; i++) {
        struct rnic_send_wr wr = epf_wr(i, RNIC_WR_SEND, A.lkey,
                                        SRC_OFF + i, 1000 + i);

        epf_post(&A, &wr);
    }
    run();
    for (int i = 0; i < 3; i++) {
        expect_cqe(B.rcq, 100 + i, RNIC_WC_SUCCESS, RNIC_WC_RECV, 1000 + i);
        ck_assert_int_eq(memcmp(epf_ptr(&B, DST_OFF + i * 4096),
                                epf_ptr(&A, SRC_OFF + i), 1000 + i), 0);
    }
    ck_assert_uint_eq(rnic_srq_count(B.srq), 0);
}
END_TEST

/* ---- Immediate Data and atomics (RFC 7306) ---- */

START_TEST(test_imm_data)
{
    struct rnic_send_wr wr = { .wr_id = 7, .opcode = RNIC_WR_IMM_DATA,
                               .flags = RNIC_WR_SIGNALED,
                               .imm_data = 0xdeadbeef };
    struct rnic_cqe c;

    epf_post_recv(&B, 1, DST_OFF, 16);
    epf_post_recv(&B, 2, DST_OFF, 16);
    epf_post(&A, &wr);
    wr.wr_id = 8;
    wr.imm_data = 0x01020304;
    wr.flags |= RNIC_WR_SOLICITED;
    epf_post(&A, &wr);
    run();
    expect_cqe(A.scq, 7, RNIC_WC_SUCCESS, RNIC_WC_IMM_DATA, 0);
    expect_cqe(A.scq, 8, RNIC_WC_SUCCESS, RNIC_WC_IMM_DATA, 0);
    c = epf_cqe(B.rcq);
    ck_assert_uint_eq(c.flags, RNIC_WC_WITH_IMM);
    ck_assert_uint_eq(c.imm_data, 0xdeadbeef);
    ck_assert_uint_eq(c.byte_len, 0);
    c = epf_cqe(B.rcq);
    ck_assert_uint_eq(c.flags, RNIC_WC_WITH_IMM | RNIC_WC_SOLICITED);
    ck_assert_uint_eq(c.imm_data, 0x01020304);
    ck_assert_uint_eq(*epf_ptr(&B, DST_OFF), 0xee);     /* nothing placed */
}
END_TEST

static uint64_t ld_le64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

static void st_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static void do_atomic(enum rnic_wr_opcode op, uint32_t stag, uint64_t a,
                      uint64_t b, uint64_t id)
{
    struct rnic_send_wr wr = epf_wr(id, op, A.lkey, DST_OFF + 8 * id, 8);

    wr.remote_stag = stag;
    wr.remote_to = epf_addr(MISC_OFF);
    wr.atomic_add_or_compare = a;
    wr.atomic_swap = b;
    epf_post(&A, &wr);
}

START_TEST(test_atomics)
{
    uint32_t stag = remote_mr(&B, MISC_OFF, 64, RNIC_ACCESS_REMOTE_ATOMIC,
                              RNIC_STAG_PERSISTENT);
    uint8_t *target = epf_ptr(&B, MISC_OFF);

    st_le64(target, 1000);
    do_atomic(RNIC_WR_ATOMIC_FETCH_ADD, stag, 5, 0, 1);     /* 1000 -> 1005 */
    do_atomic(RNIC_WR_ATOMIC_CMP_SWAP, stag, 1005, 77, 2);  /* -> 77 */
    do_atomic(RNIC_WR_ATOMIC_CMP_SWAP, stag, 1005, 99, 3);  /* no swap */
    do_atomic(RNIC_WR_ATOMIC_FETCH_ADD, stag, UINT64_MAX, 0, 4);    /* -> 76 */
    run();
    expect_cqe(A.scq, 1, RNIC_WC_SUCCESS, RNIC_WC_ATOMIC_FETCH_ADD, 8);
    expect_cqe(A.scq, 2, RNIC_WC_SUCCESS, RNIC_WC_ATOMIC_CMP_SWAP, 8);
    expect_cqe(A.scq, 3, RNIC_WC_SUCCESS, RNIC_WC_ATOMIC_CMP_SWAP, 8);
    expect_cqe(A.scq, 4, RNIC_WC_SUCCESS, RNIC_WC_ATOMIC_FETCH_ADD, 8);
    ck_assert_uint_eq(ld_le64(epf_ptr(&A, DST_OFF + 8)), 1000);
    ck_assert_uint_eq(ld_le64(epf_ptr(&A, DST_OFF + 16)), 1005);
    ck_assert_uint_eq(ld_le64(epf_ptr(&A, DST_OFF + 24)), 77);
    ck_assert_uint_eq(ld_le64(epf_ptr(&A, DST_OFF + 32)), 77);
    ck_assert_uint_eq(ld_le64(target), 76);
}
END_TEST

/* ---- invalidation ---- */

static void write_to(uint32_t stag, uint64_t off, uint32_t n, uint64_t id)
{
    struct rnic_send_wr wr = epf_wr(id, RNIC_WR_WRITE, A.lkey, SRC_OFF, n);

    wr.remote_stag = stag;
    wr.remote_to = epf_addr(off);
    epf_post(&A, &wr);
    run();
}

static void expect_refused(struct rnic_term_code code)
{
    ck_assert_uint_eq(B.term_sent, 1);
    ck_assert_uint_eq(A.term_received, 1);
    ck_assert_msg(rnic_term_code_eq(A.recv_code, code), "got %s, want %s",
                  rnic_term_code_str(A.recv_code), rnic_term_code_str(code));
    ck_assert_int_eq(B.qp->state, RNIC_QP_TERMINATE);
    ck_assert_int_eq(A.qp->state, RNIC_QP_TERMINATE);
}

/*
 * A receive the consumer posted but the device had not passed on when the
 * Send arrived is asked for, and taken; with none, the Send is refused.
 */
START_TEST(test_send_takes_late_recv)
{
    struct rnic_send_wr wr = epf_wr(3, RNIC_WR_SEND, A.lkey, SRC_OFF, 10);
    struct rnic_cqe c;

    B.late_recv = true;
    B.late_id = 9;
    B.late_off = DST_OFF;
    epf_post(&A, &wr);
    run();
    ck_assert_uint_eq(B.need_recv, 1);
    ck_assert_uint_eq(B.term_sent, 0);
    expect_cqe(A.scq, 3, RNIC_WC_SUCCESS, RNIC_WC_SEND, 10);
    c = epf_cqe(B.rcq);
    ck_assert_uint_eq(c.wr_id, 9);
    ck_assert_int_eq(c.status, RNIC_WC_SUCCESS);
    ck_assert_uint_eq(c.byte_len, 10);
    ck_assert_mem_eq(epf_ptr(&B, DST_OFF), epf_ptr(&A, SRC_OFF), 10);
    wr.wr_id = 4;
    epf_post(&A, &wr);
    run();
    ck_assert_uint_eq(B.need_recv, 2);
    expect_refused(rnic_term_ddp(RNIC_DDP_ETYPE_UNTAGGED,
                                 RNIC_DDP_U_ECODE_MSN_NO_BUFFER));
}
END_TEST

static const struct rnic_term_code invalid_stag = {
    RNIC_TERM_LAYER_DDP, RNIC_DDP_ETYPE_TAGGED, RNIC_DDP_T_ECODE_INVALID_STAG,
};

START_TEST(test_send_inv_then_write_refused)
{
    uint32_t stag = remote_mr(&B, DST_OFF, 4096, RNIC_ACCESS_REMOTE_WRITE,
                              RNIC_STAG_PERSISTENT);
    struct rnic_send_wr wr = epf_wr(1, RNIC_WR_SEND_INV, A.lkey, SRC_OFF, 10);
    struct rnic_cqe c;

    write_to(stag, DST_OFF, 100, 5);        /* valid before */
    expect_cqe(A.scq, 5, RNIC_WC_SUCCESS, RNIC_WC_WRITE, 100);
    wr.invalidate_stag = stag;
    epf_post_recv(&B, 1, MISC_OFF, 64);
    epf_post(&A, &wr);
    run();
    c = epf_cqe(B.rcq);
    ck_assert_int_eq(c.status, RNIC_WC_SUCCESS);
    ck_assert_uint_eq(c.flags, RNIC_WC_WITH_INV);
    ck_assert_uint_eq(c.inval_stag, stag);
    ck_assert(!rnic_stag_lookup(B.stags, stag));
    memset(epf_ptr(&B, DST_OFF), 0xee, 4096);
    write_to(stag, DST_OFF, 100, 6);
    expect_refused(invalid_stag);
    ck_assert_uint_eq(*epf_ptr(&B, DST_OFF), 0xee);
}
END_TEST

START_TEST(test_one_shot_written_twice)
{
    uint32_t stag = remote_mr(&B, DST_OFF, 8192, RNIC_ACCESS_REMOTE_WRITE,
                              RNIC_STAG_ONE_SHOT);

    /* several segments: only the last one ends the STag */
    write_to(stag, DST_OFF, 5000, 1);
    expect_cqe(A.scq, 1, RNIC_WC_SUCCESS, RNIC_WC_WRITE, 5000);
    expect_data(&B, DST_OFF, &A, SRC_OFF, 5000);
    ck_assert(!rnic_stag_lookup(B.stags, stag));
    memset(epf_ptr(&A, SRC_OFF), 0x11, 100);
    write_to(stag, DST_OFF, 100, 2);
    expect_refused(invalid_stag);
    ck_assert_int_ne(*epf_ptr(&B, DST_OFF), 0x11);
}
END_TEST

/*
 * An atomic is one message through its STag: a one-shot STag is used up
 * by it, and a second atomic (_i 0) or a Write (_i 1) is refused.
 */
START_TEST(test_one_shot_atomic_used_up)
{
    uint32_t stag = remote_mr(&B, MISC_OFF, 64, RNIC_ACCESS_REMOTE_ATOMIC |
                              RNIC_ACCESS_REMOTE_WRITE, RNIC_STAG_ONE_SHOT);
    uint8_t *target = epf_ptr(&B, MISC_OFF);

    st_le64(target, 1000);
    do_atomic(RNIC_WR_ATOMIC_FETCH_ADD, stag, 5, 0, 1);     /* -> 1005 */
    run();
    expect_cqe(A.scq, 1, RNIC_WC_SUCCESS, RNIC_WC_ATOMIC_FETCH_ADD, 8);
    ck_assert_uint_eq(ld_le64(epf_ptr(&A, DST_OFF + 8)), 1000);
    ck_assert_uint_eq(ld_le64(target), 1005);
    ck_assert(!rnic_stag_lookup(B.stags, stag));
    if (_i == 0) {
        do_atomic(RNIC_WR_ATOMIC_FETCH_ADD, stag, 5, 0, 2);
        run();
        expect_refused(rnic_term_rdmap(RNIC_RDMAP_ETYPE_REMOTE_PROTECTION,
                                       RNIC_RDMAP_ECODE_INVALID_STAG));
    } else {
        write_to(stag, MISC_OFF, 8, 2);
        expect_refused(invalid_stag);
    }
    ck_assert_uint_eq(ld_le64(target), 1005);
}
END_TEST

START_TEST(test_recv_linked_stag)
{
    uint32_t stag = remote_mr(&B, DST_OFF, 4096, RNIC_ACCESS_REMOTE_WRITE,
                              RNIC_STAG_PERSISTENT);
    struct rnic_send_wr wr = epf_wr(1, RNIC_WR_SEND, A.lkey, SRC_OFF, 8);

    ck_assert_int_eq(link_recv(&B, stag, 42), RNIC_STAG_OK);
    epf_post_recv(&B, 41, MISC_OFF, 64);
    epf_post_recv(&B, 42, MISC_OFF, 64);
    epf_post(&A, &wr);
    run();
    expect_cqe(B.rcq, 41, RNIC_WC_SUCCESS, RNIC_WC_RECV, 8);
    ck_assert(rnic_stag_lookup(B.stags, stag));     /* not this buffer */
    epf_post(&A, &wr);
    run();
    expect_cqe(B.rcq, 42, RNIC_WC_SUCCESS, RNIC_WC_RECV, 8);
    ck_assert(!rnic_stag_lookup(B.stags, stag));
    write_to(stag, DST_OFF, 8, 3);
    expect_refused(invalid_stag);
}
END_TEST

/*
 * Links are scoped to one receive queue: a Send consuming B's buffer 42
 * leaves alone the STag another QP linked to its own buffer 42.
 */
START_TEST(test_recv_link_scoped_to_queue)
{
    uint32_t mine = remote_mr(&B, DST_OFF, 4096, RNIC_ACCESS_REMOTE_WRITE,
                              RNIC_STAG_PERSISTENT);
    uint32_t other = remote_mr(&B, DST_OFF, 4096, RNIC_ACCESS_REMOTE_WRITE,
                               RNIC_STAG_PERSISTENT);
    struct rnic_recv_owner qp2 = {
        rnic_recv_queue_qp(B.qp->qpn + 1), B.pd, B.qp->qpn + 1,
    };
    struct rnic_send_wr wr = epf_wr(1, RNIC_WR_SEND, A.lkey, SRC_OFF, 8);

    ck_assert_int_eq(link_recv(&B, mine, 42), RNIC_STAG_OK);
    ck_assert_int_eq(rnic_stag_link_to_recv(B.stags, other, &qp2, 42),
                     RNIC_STAG_OK);
    epf_post_recv(&B, 42, MISC_OFF, 64);
    epf_post(&A, &wr);
    run();
    expect_cqe(B.rcq, 42, RNIC_WC_SUCCESS, RNIC_WC_RECV, 8);
    ck_assert(!rnic_stag_lookup(B.stags, mine));
    ck_assert(rnic_stag_lookup(B.stags, other));    /* the other QP's */
}
END_TEST

/* Flushed receive buffers are not consumed: their STags stay. */
START_TEST(test_recv_link_forgotten_on_flush)
{
    uint32_t stag = remote_mr(&B, DST_OFF, 4096, RNIC_ACCESS_REMOTE_WRITE,
                              RNIC_STAG_PERSISTENT);

    ck_assert_int_eq(link_recv(&B, stag, 42), RNIC_STAG_OK);
    epf_post_recv(&B, 42, MISC_OFF, 64);
    ck_assert_int_eq(rnic_ep_modify(B.ep, RNIC_QP_ERROR), 0);
    expect_cqe(B.rcq, 42, RNIC_WC_WR_FLUSH_ERR, RNIC_WC_RECV, 0);
    ck_assert(rnic_stag_lookup(B.stags, stag));
    /* the link is gone: the STag can be linked again */
    ck_assert_int_eq(link_recv(&B, stag, 43), RNIC_STAG_OK);
}
END_TEST

/*
 * A clean close (CLOSING, then the connection ends with nothing left)
 * flushes nothing: the posted receive and its link stay, so consuming
 * the receive later still invalidates the STag.  An abortive close
 * flushes the receive and forgets its link; the STag stays valid.
 */
START_TEST(test_recv_link_survives_graceful_close)
{
    uint32_t stag = remote_mr(&B, DST_OFF, 4096, RNIC_ACCESS_REMOTE_WRITE,
                              RNIC_STAG_PERSISTENT);
    uint32_t astag = remote_mr(&A, DST_OFF, 4096, RNIC_ACCESS_REMOTE_WRITE,
                               RNIC_STAG_PERSISTENT);
    uint32_t got = 0;

    ck_assert_int_eq(link_recv(&B, stag, 42), RNIC_STAG_OK);
    epf_post_recv(&B, 42, MISC_OFF, 64);
    ck_assert_int_eq(rnic_ep_modify(B.ep, RNIC_QP_CLOSING), 0);
    ck_assert_int_eq(B.qp->state, RNIC_QP_CLOSING);
    ck_assert_int_eq(rnic_ep_connection_closed(B.ep), 0);
    ck_assert_int_eq(B.qp->state, RNIC_QP_IDLE);
    epf_no_cqe(B.rcq);
    ck_assert_uint_eq(B.qp->rq.count, 1);       /* still posted */
    ck_assert(rnic_stag_lookup(B.stags, stag));
    ck_assert_uint_eq(recv_consumed(&B, 42, &got, 1), 1);
    ck_assert_uint_eq(got, stag);
    ck_assert(!rnic_stag_lookup(B.stags, stag));

    /* contrast: RTS -> ERROR flushes the receive and forgets the link */
    ck_assert_int_eq(link_recv(&A, astag, 7), RNIC_STAG_OK);
    epf_post_recv(&A, 7, MISC_OFF, 64);
    ck_assert_int_eq(rnic_ep_modify(A.ep, RNIC_QP_ERROR), 0);
    expect_cqe(A.rcq, 7, RNIC_WC_WR_FLUSH_ERR, RNIC_WC_RECV, 0);
    ck_assert_uint_eq(A.qp->rq.count, 0);
    ck_assert_uint_eq(recv_consumed(&A, 7, NULL, 0), 0);
    ck_assert(rnic_stag_lookup(A.stags, astag));
}
END_TEST

START_TEST(test_persistent_many_writes)
{
    uint32_t stag = remote_mr(&B, DST_OFF, 65536, RNIC_ACCESS_REMOTE_WRITE,
                              RNIC_STAG_PERSISTENT);

    for (int i = 0; i < 40; i++) {
        write_to(stag, DST_OFF + 1000 * i, 1000 + i, i);
        expect_cqe(A.scq, i, RNIC_WC_SUCCESS, RNIC_WC_WRITE, 1000 + i);
        ck_assert_int_eq(memcmp(epf_ptr(&B, DST_OFF + 1000 * i),
                                epf_ptr(&A, SRC_OFF), 1000 + i), 0);
    }
    ck_assert(rnic_stag_lookup(B.stags, stag));
    ck_assert_uint_eq(B.term_sent, 0);
}
END_TEST

/*
 * A zero-length Write places nothing and is not checked (RFC 6581's RTR
 * may be one): naming an invalid STag it causes no Terminate, and the
 * valid Write after it is placed.
 */
START_TEST(test_zero_length_write_unchecked)
{
    uint32_t stag = remote_mr(&B, DST_OFF, 4096, RNIC_ACCESS_REMOTE_WRITE,
                              RNIC_STAG_PERSISTENT);
    struct rnic_send_wr zero = epf_wr(1, RNIC_WR_WRITE, A.lkey, SRC_OFF, 0);
    struct rnic_send_wr wr = epf_wr(2, RNIC_WR_WRITE, A.lkey, SRC_OFF, 100);

    zero.remote_stag = rnic_stag_next_key(stag);    /* stale key */
    zero.remote_to = epf_addr(DST_OFF);
    wr.remote_stag = stag;
    wr.remote_to = epf_addr(DST_OFF);
    epf_post(&A, &zero);
    epf_post(&A, &wr);
    run();
    ck_assert_uint_eq(B.term_sent, 0);
    ck_assert_uint_eq(A.term_received, 0);
    ck_assert_int_eq(A.qp->state, RNIC_QP_RTS);
    ck_assert_int_eq(B.qp->state, RNIC_QP_RTS);
    expect_cqe(A.scq, 1, RNIC_WC_SUCCESS, RNIC_WC_WRITE, 0);
    expect_cqe(A.scq, 2, RNIC_WC_SUCCESS, RNIC_WC_WRITE, 100);
    epf_no_cqe(B.rcq);
    expect_data(&B, DST_OFF, &A, SRC_OFF, 100);
    ck_assert(rnic_stag_lookup(B.stags, stag));
}
END_TEST

/* ---- ORD, fence, IRD ---- */

static void post_read(uint32_t stag, uint64_t id, uint32_t n, uint32_t flags)
{
    struct rnic_send_wr wr = epf_wr(id, RNIC_WR_READ, A.lkey,
                                    DST_OFF + id * 4096, n);

    wr.remote_stag = stag;
    wr.remote_to = epf_addr(SRC_OFF);
    wr.flags |= flags;
    epf_post(&A, &wr);
}

static int count_opcode(const struct epf_capture *c, uint8_t opcode)
{
    int n = 0;

    for (int i = 0; i < c->count; i++) {
        n += (c->ulpdu[i][1] & RNIC_RDMAP_OPCODE_MASK) == opcode;
    }
    return n;
}

START_TEST(test_ord_limit)
{
    static struct epf_capture cap;
    uint32_t stag;

    teardown();
    pair_up(&(struct pair_cfg) { .crc = true, .ord_ird = 2, .max_rd = 8 });
    stag = remote_mr(&B, SRC_OFF, 65536, RNIC_ACCESS_REMOTE_READ,
                     RNIC_STAG_PERSISTENT);
    for (int i = 1; i <= 5; i++) {
        post_read(stag, i, 100 * i, 0);
    }
    epf_capture_init(&cap, true, false);
    epf_capture(&A, &cap);
    ck_assert_int_eq(count_opcode(&cap, RNIC_RDMAP_READ_REQ), 2);
    ck_assert_uint_eq(A.qp->ord_used, 2);
    epf_no_cqe(A.scq);
    /* the captured bytes are gone: again, this time delivered */
    teardown();
    pair_up(&(struct pair_cfg) { .crc = true, .ord_ird = 2, .max_rd = 8 });
    stag = remote_mr(&B, SRC_OFF, 65536, RNIC_ACCESS_REMOTE_READ,
                     RNIC_STAG_PERSISTENT);
    for (int i = 1; i <= 5; i++) {
        post_read(stag, i, 100 * i, 0);
    }
    run();
    for (int i = 1; i <= 5; i++) {
        expect_cqe(A.scq, i, RNIC_WC_SUCCESS, RNIC_WC_READ, 100 * i);
        ck_assert_int_eq(memcmp(epf_ptr(&A, DST_OFF + i * 4096),
                                epf_ptr(&B, SRC_OFF), 100 * i), 0);
    }
    ck_assert_uint_eq(B.term_sent, 0);
}
END_TEST

START_TEST(test_fence)
{
    static struct epf_capture cap;
    uint32_t stag = remote_mr(&B, SRC_OFF, 65536, RNIC_ACCESS_REMOTE_READ,
                              RNIC_STAG_PERSISTENT);
    struct rnic_send_wr wr = epf_wr(2, RNIC_WR_SEND, A.lkey, SRC_OFF, 10);

    post_read(stag, 1, 1000, 0);
    wr.flags |= RNIC_WR_FENCE;
    epf_post(&A, &wr);
    epf_post_recv(&B, 1, MISC_OFF, 64);
    epf_capture_init(&cap, true, false);
    epf_capture(&A, &cap);
    /* the fenced Send waits for the Read's response */
    ck_assert_int_eq(count_opcode(&cap, RNIC_RDMAP_READ_REQ), 1);
    ck_assert_int_eq(count_opcode(&cap, RNIC_RDMAP_SEND), 0);
    epf_no_cqe(A.scq);
    teardown();
    setup();
    stag = remote_mr(&B, SRC_OFF, 65536, RNIC_ACCESS_REMOTE_READ,
                     RNIC_STAG_PERSISTENT);
    post_read(stag, 1, 1000, 0);
    epf_post(&A, &wr);
    epf_post_recv(&B, 1, MISC_OFF, 64);
    run();
    expect_cqe(A.scq, 1, RNIC_WC_SUCCESS, RNIC_WC_READ, 1000);
    expect_cqe(A.scq, 2, RNIC_WC_SUCCESS, RNIC_WC_SEND, 10);
    expect_cqe(B.rcq, 1, RNIC_WC_SUCCESS, RNIC_WC_RECV, 10);
}
END_TEST

/* RFC 5040 §5.4 / RFC 7306: the fence waits for prior Atomics too. */
START_TEST(test_fence_waits_for_atomic)
{
    static struct epf_capture cap;
    uint32_t stag = remote_mr(&B, MISC_OFF, 64, RNIC_ACCESS_REMOTE_ATOMIC,
                              RNIC_STAG_PERSISTENT);
    struct rnic_send_wr wr = epf_wr(2, RNIC_WR_SEND, A.lkey, SRC_OFF, 10);

    st_le64(epf_ptr(&B, MISC_OFF), 1000);
    do_atomic(RNIC_WR_ATOMIC_FETCH_ADD, stag, 5, 0, 1);
    wr.flags |= RNIC_WR_FENCE;
    epf_post(&A, &wr);
    epf_post_recv(&B, 1, MISC_OFF + 16, 32);
    epf_capture_init(&cap, true, false);
    epf_capture(&A, &cap);
    ck_assert_int_eq(count_opcode(&cap, RNIC_RDMAP_ATOMIC_REQ), 1);
    ck_assert_int_eq(count_opcode(&cap, RNIC_RDMAP_SEND), 0);
    epf_no_cqe(A.scq);
}
END_TEST

/* ---- no byte of an invalidated STag leaves (tx_inval.c) ---- */

/* Octets the last move_some() saw framed: several FPDUs ahead. */
static size_t last_peek;

/* Moves at most @limit octets of one batch peek @from -> @to. */
static size_t move_some(struct epf_side *from, struct epf_side *to,
                        size_t limit)
{
    static uint8_t buf[2 * RNIC_EP_TX_BATCH_BYTES];
    struct iovec iov[64];
    size_t got = 0;
    int cnt;

    last_peek = rnic_ep_tx_peek_batch(from->ep, iov, 64, &cnt,
                                      RNIC_EP_TX_BATCH_FPDUS);
    for (int i = 0; i < cnt && got < limit; i++) {
        size_t take = iov[i].iov_len < limit - got ? iov[i].iov_len
                                                    : limit - got;

        memcpy(buf + got, iov[i].iov_base, take);
        got += take;
    }
    rnic_ep_rx(to->ep, buf, got);
    rnic_ep_tx_advance(from->ep, got);
    return got;
}

/* Without CRC, so that a leaked byte would be placed, not refused. */
static void pair_up_no_crc(void)
{
    teardown();
    pair_up(&(struct pair_cfg) { .crc = false, .rtr = RNIC_MPA_RTR_WRITE });
}

static size_t count_byte(const uint8_t *p, size_t len, uint8_t b)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        n += p[i] == b;
    }
    return n;
}

/*
 * A 64 KiB RDMA Write is framed ahead, zero copy, and its first FPDU is
 * partly on the wire when the source region is deregistered and its
 * memory reused.  The FPDU begun goes out whole with the bytes of before;
 * nothing framed after it does: the Write fails with LOC_PROT_ERR and the
 * peer gets a Terminate.  The peer never sees a byte of the new content.
 */
START_TEST(test_dereg_cuts_framed_write)
{
    const uint32_t len = 65536;
    uint32_t src, dst;
    struct rnic_send_wr wr;
    struct rnic_cqe c;

    pair_up_no_crc();
    src = epf_mr(&A, SRC_OFF, len, RNIC_ACCESS_LOCAL_READ,
                 RNIC_STAG_PERSISTENT, false);
    dst = remote_mr(&B, DST_OFF, len, RNIC_ACCESS_REMOTE_WRITE,
                    RNIC_STAG_PERSISTENT);
    wr = epf_wr(1, RNIC_WR_WRITE, src, SRC_OFF, len);
    memset(epf_ptr(&A, SRC_OFF), 0x11, len);
    memset(epf_ptr(&B, DST_OFF), 0xee, len);
    wr.remote_stag = dst;
    wr.remote_to = epf_addr(DST_OFF);
    epf_post(&A, &wr);
    ck_assert_uint_eq(move_some(&A, &B, 100), 100);
    ck_assert_uint_gt(last_peek, 3 * 1500);         /* framed ahead */
    ck_assert_int_eq(rnic_mr_deregister(A.stags, src), RNIC_STAG_OK);
    memset(epf_ptr(&A, SRC_OFF), 0xab, len);        /* the guest reuses it */
    run();
    ck_assert_uint_eq(count_byte(epf_ptr(&B, DST_OFF), len, 0xab), 0);
    ck_assert_uint_gt(count_byte(epf_ptr(&B, DST_OFF), len, 0x11), 0);
    ck_assert_uint_lt(count_byte(epf_ptr(&B, DST_OFF), len, 0x11), len);
    c = epf_cqe(A.scq);
    ck_assert_uint_eq(c.wr_id, 1);
    ck_assert_int_eq(c.status, RNIC_WC_LOC_PROT_ERR);
    ck_assert_uint_eq(B.term_received, 1);
    ck_assert_int_eq(A.qp->state, RNIC_QP_ERROR);
}
END_TEST

/*
 * The same for a Read Response: the responder invalidates the source
 * STag while its response is framed ahead; the requester gets no byte
 * written after that, and a Terminate instead of the rest.
 */
START_TEST(test_invalidate_cuts_read_response)
{
    const uint32_t len = 65536;
    struct rnic_cqe c;
    uint32_t stag;
    uint8_t *sink;

    pair_up_no_crc();
    sink = epf_ptr(&A, DST_OFF + 4096);
    stag = remote_mr(&B, SRC_OFF, len, RNIC_ACCESS_REMOTE_READ,
                     RNIC_STAG_PERSISTENT);
    memset(epf_ptr(&B, SRC_OFF), 0x22, len);
    memset(sink, 0xee, len);
    post_read(stag, 1, len, 0);
    while (move_some(&A, &B, SIZE_MAX)) {
        continue;                       /* the Read Request to B */
    }
    ck_assert_uint_eq(move_some(&B, &A, 100), 100);
    ck_assert_uint_gt(last_peek, 3 * 1500);
    ck_assert_int_eq(rnic_stag_invalidate_local(B.stags, stag, B.pd),
                     RNIC_STAG_OK);
    memset(epf_ptr(&B, SRC_OFF), 0xab, len);
    run();
    ck_assert_uint_eq(count_byte(sink, len, 0xab), 0);
    ck_assert_uint_gt(count_byte(sink, len, 0x22), 0);
    c = epf_cqe(A.scq);
    ck_assert_uint_eq(c.wr_id, 1);
    ck_assert_int_ne(c.status, RNIC_WC_SUCCESS);
    ck_assert_uint_eq(A.term_received, 1);
}
END_TEST

START_TEST(test_ird_exceeded)
{
    struct epf_params pa = { .initiator = true, .max_rd = 4 };
    struct epf_params pb = { .max_rd = 4 };
    uint32_t stag;

    teardown();
    /* A believes it may have 3 Reads out, B grants IRD 1 */
    epf_mpa_pair(true, false, 0, 3, &pa.mpa, &pb.mpa);
    pb.mpa.ird = 1;
    epf_init(&A, &pa, 10);
    epf_init(&B, &pb, 20);
    memset(epf_ptr(&A, DST_OFF), 0xee, MIB);
    stag = remote_mr(&B, SRC_OFF, 65536, RNIC_ACCESS_REMOTE_READ,
                     RNIC_STAG_PERSISTENT);
    post_read(stag, 1, 100, 0);
    post_read(stag, 2, 100, 0);
    /* both requests arrive before B can answer */
    epf_pump(&A, &B, &rng, CHUNK);
    run();
    expect_refused(rnic_term_rdmap(RNIC_RDMAP_ETYPE_REMOTE_OPERATION,
                                   RNIC_RDMAP_ECODE_CATASTROPHIC_STREAM));
}
END_TEST

/* ---- errors ---- */

START_TEST(test_flush_once)
{
    unsigned seen[8] = { 0 };
    struct rnic_cqe c;

    epf_post_recv(&A, 6, MISC_OFF, 64);
    epf_post_recv(&A, 7, MISC_OFF, 64);
    for (int i = 0; i < 4; i++) {
        struct rnic_send_wr wr = epf_wr(i, RNIC_WR_SEND, A.lkey, SRC_OFF, 10);

        epf_post(&A, &wr);
    }
    /* B has no receive posted: the first Send is refused */
    run();
    expect_refused(rnic_term_ddp(RNIC_DDP_ETYPE_UNTAGGED,
                                 RNIC_DDP_U_ECODE_MSN_NO_BUFFER));
    rnic_ep_connection_closed(A.ep);
    rnic_ep_connection_closed(B.ep);
    ck_assert_int_eq(A.qp->state, RNIC_QP_ERROR);
    while (rnic_cq_poll(A.scq, &c, 1) || rnic_cq_poll(A.rcq, &c, 1)) {
        ck_assert_uint_lt(c.wr_id, 8);
        seen[c.wr_id]++;
    }
    for (int i = 0; i < 8; i++) {
        ck_assert_uint_eq(seen[i], i < 4 || i >= 6 ? 1 : 0);
    }
    /* a post now flushes at once, still exactly one CQE */
    epf_post_recv(&A, 1, MISC_OFF, 64);
    expect_cqe(A.rcq, 1, RNIC_WC_WR_FLUSH_ERR, RNIC_WC_RECV, 0);
    epf_no_cqe(A.rcq);
    epf_no_cqe(A.scq);
}
END_TEST

START_TEST(test_bad_local_sge)
{
    struct rnic_send_wr wr = epf_wr(1, RNIC_WR_SEND, A.lkey, SRC_OFF, 10);
    enum rnic_wc_status want[] = {
        RNIC_WC_LOC_PROT_ERR, RNIC_WC_LOC_LEN_ERR, RNIC_WC_LOC_ACCESS_ERR,
    };

    if (_i == 0) {
        wr.sge[0].stag = rnic_stag_next_key(A.lkey);
    } else if (_i == 1) {
        wr.sge[0].to = epf_addr(EPF_SIZE - 4);
    } else {
        wr.opcode = RNIC_WR_READ;
        wr.sge[0].stag = epf_mr(&A, DST_OFF, 4096, 0, RNIC_STAG_PERSISTENT,
                                false);
    }
    epf_post_recv(&B, 1, MISC_OFF, 64);
    epf_post(&A, &wr);
    wr.wr_id = 2;
    epf_post(&A, &wr);
    run();
    expect_cqe(A.scq, 1, want[_i], rnic_wc_opcode_of(wr.opcode), 0);
    expect_cqe(A.scq, 2, RNIC_WC_WR_FLUSH_ERR, rnic_wc_opcode_of(wr.opcode),
               0);
    ck_assert_int_eq(A.qp->state, RNIC_QP_ERROR);
    ck_assert_uint_eq(B.term_received, 1);
    ck_assert(rnic_term_code_eq(B.recv_code, rnic_term_rdmap(
        RNIC_RDMAP_ETYPE_LOCAL_CATASTROPHIC, RNIC_RDMAP_ECODE_UNSPECIFIED)));
    /* nothing reached B's buffer: it is flushed, not completed */
    expect_cqe(B.rcq, 1, RNIC_WC_WR_FLUSH_ERR, RNIC_WC_RECV, 0);
}
END_TEST

START_TEST(test_local_inv_and_bind_in_order)
{
    uint32_t mr = epf_mr(&B, DST_OFF, 8192, RNIC_ACCESS_LOCAL_WRITE |
                         RNIC_ACCESS_MW_BIND, RNIC_STAG_PERSISTENT, false);
    uint32_t mw, bound;
    struct rnic_send_wr bind = { .wr_id = 1, .opcode = RNIC_WR_BIND_MW,
                                 .flags = RNIC_WR_SIGNALED };
    struct rnic_send_wr inv = { .wr_id = 3, .opcode = RNIC_WR_LOCAL_INV,
                                .flags = RNIC_WR_SIGNALED };
    struct rnic_send_wr send = epf_wr(2, RNIC_WR_SEND, B.lkey, SRC_OFF, 4);

    ck_assert_int_eq(rnic_mw_alloc(B.stags, B.pd, RNIC_STAG_MW_TYPE2, 7, &mw),
                     RNIC_STAG_OK);
    bound = rnic_stag_next_key(mw);
    bind.bind = (struct rnic_bind_params) {
        .mw_stag = mw, .mr_stag = mr, .to = epf_addr(DST_OFF + 4096),
        .length = 4096, .access = RNIC_ACCESS_REMOTE_WRITE,
        .key = rnic_stag_key(bound),
    };
    inv.invalidate_stag = bound;
    epf_post_recv(&A, 1, MISC_OFF, 64);
    epf_post(&B, &bind);
    epf_post(&B, &send);
    epf_post(&B, &inv);
    ck_assert(!rnic_stag_lookup(B.stags, bound));    /* not before tx runs */
    epf_pump(&B, &A, &rng, CHUNK);      /* B must wait for the RTR */
    ck_assert(!rnic_stag_lookup(B.stags, bound));
    run();
    expect_cqe(B.scq, 1, RNIC_WC_SUCCESS, RNIC_WC_BIND_MW, 0);
    expect_cqe(B.scq, 2, RNIC_WC_SUCCESS, RNIC_WC_SEND, 4);
    expect_cqe(B.scq, 3, RNIC_WC_SUCCESS, RNIC_WC_LOCAL_INV, 0);
    ck_assert(!rnic_stag_lookup(B.stags, bound));
    /* a bind onto a stale region STag: MW_BIND_ERR, QP in ERROR */
    bind.wr_id = 4;
    bind.bind.mw_stag = bound;
    bind.bind.mr_stag = rnic_stag_next_key(mr);
    epf_post(&B, &bind);
    run();
    expect_cqe(B.scq, 4, RNIC_WC_MW_BIND_ERR, RNIC_WC_BIND_MW, 0);
    ck_assert_int_eq(B.qp->state, RNIC_QP_ERROR);
}
END_TEST

/*
 * Through the engine: a kernel QP's FAST_REG (page list read from
 * guest memory when it runs) maps a Read-with-Invalidate sink; the Read's
 * completion comes after the sink is invalid and says so.  A user QP's
 * FAST_REG fails.
 */
START_TEST(test_fast_reg_read_inv)
{
    uint32_t src = epf_mr(&A, SRC_OFF, 8192, RNIC_ACCESS_LOCAL_WRITE |
                          RNIC_ACCESS_REMOTE_READ, RNIC_STAG_PERSISTENT,
                          false);
    uint64_t *pbl = (uint64_t *)epf_ptr(&B, MISC_OFF);
    struct rnic_send_wr fr = { .wr_id = 1, .opcode = RNIC_WR_FAST_REG };
    struct rnic_send_wr rd;
    struct rnic_cqe c;
    uint32_t mr;

    B.qp->attr.privileged = true;
    ck_assert_int_eq(rnic_mr_alloc(B.stags, B.pd, 2, 0x40, &mr),
                     RNIC_STAG_OK);
    pbl[0] = htole64(epf_addr(DST_OFF + EPF_PAGE));
    pbl[1] = htole64(epf_addr(DST_OFF));
    fr.fast_reg = (struct rnic_fast_reg_params) {
        .pbl_addr = epf_addr(MISC_OFF), .iova = 0x9000000, .length = 8192,
        .npages = 2, .stag = rnic_stag_next_key(mr), .page_shift = 12,
        .access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE,
    };
    rd = epf_wr(2, RNIC_WR_READ_INV, fr.fast_reg.stag, 0, 8192);
    rd.sge[0].to = 0x9000000;
    rd.remote_stag = src;
    rd.remote_to = epf_addr(SRC_OFF);
    rd.invalidate_stag = fr.fast_reg.stag;
    epf_post(&B, &fr);
    epf_post(&B, &rd);
    run();
    c = epf_cqe(B.scq);
    ck_assert_uint_eq(c.wr_id, 2);
    ck_assert_int_eq(c.status, RNIC_WC_SUCCESS);
    ck_assert_int_eq(c.opcode, RNIC_WC_READ);
    ck_assert_uint_eq(c.flags, RNIC_WC_WITH_INV);
    ck_assert_uint_eq(c.inval_stag, fr.fast_reg.stag);
    ck_assert(!rnic_stag_lookup(B.stags, fr.fast_reg.stag));
    ck_assert_mem_eq(epf_ptr(&B, DST_OFF + EPF_PAGE), epf_ptr(&A, SRC_OFF),
                     EPF_PAGE);
    ck_assert_mem_eq(epf_ptr(&B, DST_OFF), epf_ptr(&A, SRC_OFF + EPF_PAGE),
                     EPF_PAGE);

    ck_assert_int_eq(rnic_mr_alloc(A.stags, A.pd, 2, 0x40, &mr),
                     RNIC_STAG_OK);
    fr.fast_reg.stag = rnic_stag_next_key(mr);
    fr.flags = RNIC_WR_SIGNALED;
    epf_post(&A, &fr);
    run();
    expect_cqe(A.scq, 1, RNIC_WC_LOC_QP_OP_ERR, RNIC_WC_FAST_REG, 0);
    ck_assert(!rnic_stag_lookup(A.stags, fr.fast_reg.stag));
}
END_TEST

/* Type 2 window bound through the SQ, then written by the peer. */
START_TEST(test_bound_window_written)
{
    uint32_t mr = epf_mr(&B, DST_OFF, 8192, RNIC_ACCESS_LOCAL_WRITE |
                         RNIC_ACCESS_MW_BIND, RNIC_STAG_PERSISTENT, false);
    struct rnic_send_wr bind = { .wr_id = 1, .opcode = RNIC_WR_BIND_MW };
    uint32_t mw;

    ck_assert_int_eq(rnic_mw_alloc(B.stags, B.pd, RNIC_STAG_MW_TYPE2, 7, &mw),
                     RNIC_STAG_OK);
    bind.bind = (struct rnic_bind_params) {
        .mw_stag = mw, .mr_stag = mr, .to = epf_addr(DST_OFF + 4096),
        .length = 4096, .access = RNIC_ACCESS_REMOTE_WRITE,
        .key = rnic_stag_key(rnic_stag_next_key(mw)),
    };
    epf_post(&B, &bind);
    run();
    write_to(rnic_stag_next_key(mw), DST_OFF + 4096, 4096, 2);
    expect_cqe(A.scq, 2, RNIC_WC_SUCCESS, RNIC_WC_WRITE, 4096);
    expect_data(&B, DST_OFF + 4096, &A, SRC_OFF, 4096);
}
END_TEST

START_TEST(test_recv_too_long)
{
    struct rnic_send_wr wr = epf_wr(1, RNIC_WR_SEND, A.lkey, SRC_OFF, 3000);

    epf_post_recv(&B, 5, DST_OFF, 2999);
    epf_post(&A, &wr);
    run();
    expect_cqe(B.rcq, 5, RNIC_WC_LOC_LEN_ERR, RNIC_WC_RECV, 0);
    expect_refused(rnic_term_ddp(RNIC_DDP_ETYPE_UNTAGGED,
                                 RNIC_DDP_U_ECODE_TOO_LONG));
}
END_TEST

/* ---- batched transmission (rnic_ep_tx_peek_batch) ---- */

#define REC_MAX     ((size_t)8 << 20)

/* Every octet one side wrote, in order. */
struct tx_rec {
    uint8_t *buf;
    size_t len;
};

static struct tx_rec rec[2][2];     /* [batch][side: A, B] */

/*
 * Drains @from into @to: one-FPDU or batch peeks with a random iovec
 * limit, each followed by an advance of a random amount (0 sometimes,
 * often across FPDU boundaries), fed to @to in random pieces.
 */
/*
 * The FPDU marks of a peek (rnic_ep_tx_peek_fpdus) describe it: numbered
 * on from the FPDUs sent, each ending after the one before, all but the
 * first whole; *ends gets the octet offset where each ends.
 */
static void check_marks(struct epf_side *from, const struct iovec *iov,
                        int cnt, const struct rnic_ep_tx_fpdu *f, int nf,
                        size_t *ends)
{
    size_t off = 0;
    int k = 0;

    ck_assert_int_ge(nf, cnt ? 1 : 0);
    for (int i = 0; i < nf; i++) {
        ck_assert_uint_eq(f[i].seq, rnic_ep_tx_fpdus_sent(from->ep) + i);
        ck_assert_int_gt(f[i].end, i ? f[i - 1].end : 0);
        ck_assert(i == 0 || f[i].tail);
        for (; k < f[i].end; k++) {
            off += iov[k].iov_len;
        }
        ends[i] = off;
    }
    ck_assert_int_eq(nf ? f[nf - 1].end : 0, cnt);
}

/* FPDUs that @n octets of the peek finished, by its marks. */
static uint64_t marks_finished(const struct rnic_ep_tx_fpdu *f, int nf,
                               const size_t *ends, size_t n)
{
    uint64_t done = 0;

    for (int i = 0; i < nf && f[i].tail && ends[i] <= n; i++) {
        done++;
    }
    return done;
}

static size_t drain(struct epf_side *from, struct epf_side *to, bool batch,
                    struct tx_rec *r)
{
    struct iovec iov[64];
    struct rnic_ep_tx_fpdu f[RNIC_EP_TX_BATCH_FPDUS];
    size_t moved = 0, total, ends[RNIC_EP_TX_BATCH_FPDUS];
    int cnt, nf = 0;

    for (;;) {
        int max = 1 + (int)epf_rand(&rng, 64);
        size_t n, off = 0;
        uint64_t sent0;

        total = batch ? rnic_ep_tx_peek_fpdus(from->ep, iov, max, &cnt,
                                              1 + (int)epf_rand(&rng,
                                                  RNIC_EP_TX_BATCH_FPDUS + 8),
                                              f, &nf)
                      : rnic_ep_tx_peek(from->ep, iov, max, &cnt);
        if (!total) {
            break;
        }
        if (batch) {
            check_marks(from, iov, cnt, f, nf, ends);
        }
        ck_assert_int_le(cnt, max);
        n = epf_rand(&rng, 8) ? 1 + epf_rand(&rng, (uint32_t)total) : 0;
        if (epf_rand(&rng, 2)) {
            n = total;
        }
        ck_assert_uint_le(r->len + n, REC_MAX);
        for (int i = 0; i < cnt && off < n; i++) {
            size_t k = iov[i].iov_len < n - off ? iov[i].iov_len : n - off;

            memcpy(r->buf + r->len + off, iov[i].iov_base, k);
            off += k;
        }
        ck_assert_uint_eq(off, n);
        sent0 = rnic_ep_tx_fpdus_sent(from->ep);
        rnic_ep_tx_advance(from->ep, n);
        if (batch) {
            ck_assert_uint_eq(rnic_ep_tx_fpdus_sent(from->ep) - sent0,
                              marks_finished(f, nf, ends, n));
        }
        for (size_t fed = 0; fed < n;) {
            size_t piece = 1 + epf_rand(&rng, CHUNK);

            piece = piece < n - fed ? piece : n - fed;
            rnic_ep_rx(to->ep, r->buf + r->len + fed, piece);
            fed += piece;
        }
        r->len += n;
        moved += n;
    }
    return moved;
}

/* Drains A, then B, until neither sends: what each sends depends only on
 * what it had been sent before, not on how its bytes were cut. */
static void drain_both(bool batch)
{
    size_t n;

    do {
        n = drain(&A, &B, batch, &rec[batch][0]);
        n += drain(&B, &A, false, &rec[batch][1]);
    } while (n);
}

static void batch_write(struct epf_side *s, uint64_t id, uint64_t src,
                       uint32_t stag, uint64_t dst, uint32_t n)
{
    struct rnic_send_wr wr = epf_wr(id, RNIC_WR_WRITE, s->lkey, src, n);

    wr.remote_stag = stag;
    wr.remote_to = epf_addr(dst);
    epf_post(s, &wr);
}

static void batch_read(struct epf_side *s, uint64_t id, uint64_t sink,
                      uint32_t stag, uint64_t src, uint32_t n)
{
    struct rnic_send_wr wr = epf_wr(id, RNIC_WR_READ, s->lkey, sink, n);

    wr.remote_stag = stag;
    wr.remote_to = epf_addr(src);
    epf_post(s, &wr);
}

/*
 * Every kind of message, back to back from both sides: Writes and Sends
 * over many FPDUs, several SGEs, inline, zero-length, Immediate Data, a
 * Local Invalidate between them, Reads both ways (so that A sends Read
 * Responses) and an Atomic that A answers.
 */
static void batch_workload(void)
{
    uint32_t wstag = remote_mr(&B, DST_OFF, 2 * MIB, RNIC_ACCESS_REMOTE_WRITE,
                               RNIC_STAG_PERSISTENT);
    uint32_t bsrc = remote_mr(&B, SRC_OFF, MIB, RNIC_ACCESS_REMOTE_READ,
                              RNIC_STAG_PERSISTENT);
    uint32_t asrc = remote_mr(&A, SRC_OFF + MIB, MIB, RNIC_ACCESS_REMOTE_READ,
                              RNIC_STAG_PERSISTENT);
    uint32_t atom = remote_mr(&A, MISC_OFF, 64, RNIC_ACCESS_REMOTE_ATOMIC,
                              RNIC_STAG_PERSISTENT);
    uint32_t inv = epf_mr(&A, MISC_OFF + 4096, 4096, RNIC_ACCESS_LOCAL_READ,
                          RNIC_STAG_PERSISTENT, false);
    struct rnic_send_wr wr;

    for (int i = 0; i < 4; i++) {
        epf_post_recv(&B, 1 + i, DST_OFF + MIB + i * 8192u, 8192);
    }
    batch_write(&A, 1, SRC_OFF, wstag, DST_OFF, 200000);
    wr = epf_wr(2, RNIC_WR_SEND, A.lkey, SRC_OFF + 300000, 5000);
    epf_post(&A, &wr);
    wr = (struct rnic_send_wr) { .wr_id = 3, .opcode = RNIC_WR_SEND,
                                 .flags = RNIC_WR_SIGNALED | RNIC_WR_INLINE,
                                 .inline_len = 40 };
    memcpy(wr.inline_data, epf_ptr(&A, SRC_OFF + 350000), 40);
    epf_post(&A, &wr);
    wr = epf_wr(4, RNIC_WR_WRITE, A.lkey, SRC_OFF + 400000, 1000);
    wr.num_sge = 3;
    wr.sge[1] = (struct rnic_sge) { A.lkey, epf_addr(SRC_OFF + 410000), 1 };
    wr.sge[2] = (struct rnic_sge) { A.lkey, epf_addr(SRC_OFF + 420000), 3000 };
    wr.remote_stag = wstag;
    wr.remote_to = epf_addr(DST_OFF + 1536 * 1024);
    epf_post(&A, &wr);
    wr = (struct rnic_send_wr) { .wr_id = 5, .opcode = RNIC_WR_LOCAL_INV,
                                 .flags = RNIC_WR_SIGNALED,
                                 .invalidate_stag = inv };
    epf_post(&A, &wr);
    wr = (struct rnic_send_wr) { .wr_id = 6, .opcode = RNIC_WR_IMM_DATA,
                                 .flags = RNIC_WR_SIGNALED, .imm_data = 42 };
    epf_post(&A, &wr);
    batch_read(&A, 7, DST_OFF, bsrc, SRC_OFF + 1000, 30000);
    wr = epf_wr(8, RNIC_WR_SEND, A.lkey, SRC_OFF, 0);
    wr.num_sge = 0;
    epf_post(&A, &wr);
    batch_write(&A, 9, SRC_OFF + 500000, wstag, DST_OFF + 600000, 100000);

    batch_read(&B, 1, MISC_OFF, asrc, SRC_OFF + MIB, 60000);
    batch_read(&B, 2, MISC_OFF + 65536, asrc, SRC_OFF + MIB + 77, 70000);
    wr = epf_wr(3, RNIC_WR_ATOMIC_FETCH_ADD, B.lkey, MISC_OFF + 196608, 8);
    wr.remote_stag = atom;
    wr.remote_to = epf_addr(MISC_OFF);
    wr.atomic_add_or_compare = 5;
    epf_post(&B, &wr);
}

static void batch_workload_check(void)
{
    static const enum rnic_wc_opcode aop[] = {
        RNIC_WC_WRITE, RNIC_WC_SEND, RNIC_WC_SEND, RNIC_WC_WRITE,
        RNIC_WC_LOCAL_INV, RNIC_WC_IMM_DATA, RNIC_WC_READ, RNIC_WC_SEND,
        RNIC_WC_WRITE,
    };
    static const uint32_t alen[] = {
        200000, 5000, 40, 4001, 0, 0, 30000, 0, 100000,
    };

    for (int i = 0; i < 9; i++) {
        expect_cqe(A.scq, 1 + i, RNIC_WC_SUCCESS, aop[i], alen[i]);
    }
    epf_no_cqe(A.scq);
    expect_cqe(B.scq, 1, RNIC_WC_SUCCESS, RNIC_WC_READ, 60000);
    expect_cqe(B.scq, 2, RNIC_WC_SUCCESS, RNIC_WC_READ, 70000);
    expect_cqe(B.scq, 3, RNIC_WC_SUCCESS, RNIC_WC_ATOMIC_FETCH_ADD, 8);
    epf_no_cqe(B.scq);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(epf_cqe(B.rcq).status, RNIC_WC_SUCCESS);
    }
    epf_no_cqe(B.rcq);
    expect_data(&B, DST_OFF, &A, SRC_OFF, 200000);
    expect_data(&B, DST_OFF + 600000, &A, SRC_OFF + 500000, 100000);
    expect_data(&B, DST_OFF + MIB, &A, SRC_OFF + 300000, 5000);
    ck_assert_int_eq(memcmp(epf_ptr(&B, DST_OFF + MIB + 8192),
                            epf_ptr(&A, SRC_OFF + 350000), 40), 0);
    ck_assert_int_eq(memcmp(epf_ptr(&B, DST_OFF + 1536 * 1024 + 1001),
                            epf_ptr(&A, SRC_OFF + 420000), 3000), 0);
    expect_data(&A, DST_OFF, &B, SRC_OFF + 1000, 30000);
    ck_assert_int_eq(memcmp(epf_ptr(&B, MISC_OFF), epf_ptr(&A, SRC_OFF + MIB),
                            60000), 0);
    ck_assert_int_eq(memcmp(epf_ptr(&B, MISC_OFF + 65536),
                            epf_ptr(&A, SRC_OFF + MIB + 77), 70000), 0);
    ck_assert_uint_eq(A.term_sent + B.term_sent, 0);
    ck_assert_int_eq(A.qp->state, RNIC_QP_RTS);
    ck_assert_int_eq(B.qp->state, RNIC_QP_RTS);
}

static void rec_reset(void)
{
    for (int m = 0; m < 2; m++) {
        for (int side = 0; side < 2; side++) {
            if (!rec[m][side].buf) {
                rec[m][side].buf = malloc(REC_MAX);
                ck_assert_ptr_nonnull(rec[m][side].buf);
            }
            rec[m][side].len = 0;
        }
    }
}

static void maps_mode(int mode)
{
    A.mem.can_map = B.mem.can_map = mode != 2;
    A.mem.map_limit = B.mem.map_limit = mode == 1 ? 700 : 0;
}

static void expect_same_streams_side(int side)
{
    ck_assert_uint_eq(rec[0][side].len, rec[1][side].len);
    ck_assert_int_eq(memcmp(rec[0][side].buf, rec[1][side].buf,
                            rec[0][side].len), 0);
}

static void expect_same_streams(void)
{
    expect_same_streams_side(0);
    expect_same_streams_side(1);
}

/*
 * The same work drained through one-FPDU peeks and through batch peeks
 * with random partial advances: byte-identical streams both ways, every
 * completion in order and once.  CRC and markers on and off; payload
 * mapped, mapped in small pieces (several iovecs) and bounced.
 */
START_TEST(test_batch_same_stream)
{
    rec_reset();
    for (int batch = 0; batch < 2; batch++) {
        teardown();
        pair_up(&wire_cfgs[_i % 4]);
        maps_mode(_i / 4);
        batch_workload();
        drain_both(batch);
        batch_workload_check();
    }
    ck_assert_uint_gt(rec[1][0].len, 400000);
    expect_same_streams();
}
END_TEST

/* A Read Response uses up a one-shot source STag before the next Read
 * Response is framed, in a batch as one FPDU at a time. */
START_TEST(test_batch_one_shot_source)
{
    rec_reset();
    for (int batch = 0; batch < 2; batch++) {
        uint32_t src;

        teardown();
        pair_up(&(struct pair_cfg) { .crc = true,
                                     .rtr = RNIC_MPA_RTR_WRITE });
        src = remote_mr(&A, SRC_OFF, MIB, RNIC_ACCESS_REMOTE_READ,
                        RNIC_STAG_ONE_SHOT);
        batch_read(&B, 1, DST_OFF, src, SRC_OFF, 3000);
        batch_read(&B, 2, DST_OFF + 8192, src, SRC_OFF, 3000);
        drain_both(batch);
        expect_cqe(B.scq, 1, RNIC_WC_SUCCESS, RNIC_WC_READ, 3000);
        ck_assert_int_ne(epf_cqe(B.scq).status, RNIC_WC_SUCCESS);
        ck_assert_uint_eq(A.term_sent, 1);
    }
    expect_same_streams();
}
END_TEST

/*
 * A zero-length Read is answered without resolving its STag, so it must
 * not use up a one-shot STag: not even one of another PD, which a Read of
 * any length may not touch.
 */
START_TEST(test_zero_read_keeps_one_shot)
{
    uint32_t pd = A.pd, src;
    struct rnic_stag_info info;

    rec_reset();
    ck_assert_int_eq(rnic_pd_alloc(A.stags, &A.pd), RNIC_STAG_OK);
    src = remote_mr(&A, SRC_OFF, MIB, RNIC_ACCESS_REMOTE_READ,
                    RNIC_STAG_ONE_SHOT);
    A.pd = pd;
    batch_read(&B, 1, DST_OFF, src, SRC_OFF, 0);
    drain_both(false);
    expect_cqe(B.scq, 1, RNIC_WC_SUCCESS, RNIC_WC_READ, 0);
    ck_assert_int_eq(rnic_stag_query(A.stags, src, &info), RNIC_STAG_OK);
    ck_assert(info.valid);
}
END_TEST

/* Read Responses from a persistent source go out together: all three are
 * in A's first batch, not one per batch. */
START_TEST(test_batch_read_responses)
{
    struct iovec iov[64];
    struct rnic_ep_tx_fpdu f[RNIC_EP_TX_BATCH_FPDUS];
    size_t len = rnic_fpdu_len(rnic_ddp_hdr_len(true) + 1000);
    uint32_t src = remote_mr(&A, SRC_OFF, MIB, RNIC_ACCESS_REMOTE_READ,
                             RNIC_STAG_PERSISTENT);
    int cnt, nf;

    rec_reset();
    drain_both(false);
    for (int i = 0; i < 3; i++) {
        batch_read(&B, 1 + i, DST_OFF + i * 4096, src, SRC_OFF + i * 1000,
                   1000);
    }
    while (move_some(&B, &A, SIZE_MAX)) {
    }
    ck_assert_uint_eq(rnic_ep_tx_peek_fpdus(A.ep, iov, 64, &cnt,
                                            RNIC_EP_TX_BATCH_FPDUS, f, &nf),
                      3 * len);
    ck_assert_int_eq(nf, 3);
    drain_both(false);
    for (int i = 0; i < 3; i++) {
        expect_cqe(B.scq, 1 + i, RNIC_WC_SUCCESS, RNIC_WC_READ, 1000);
        expect_data(&B, DST_OFF + i * 4096, &A, SRC_OFF + i * 1000, 1000);
    }
}
END_TEST

/* The first @n octets of @iov from A to B, as a socket that took them. */
static void pass_to_b(const struct iovec *iov, int cnt, size_t n)
{
    static uint8_t buf[RNIC_EP_TX_BATCH_BYTES];
    size_t off = 0;

    for (int i = 0; i < cnt && off < n; i++) {
        size_t k = iov[i].iov_len < n - off ? iov[i].iov_len : n - off;

        memcpy(buf + off, iov[i].iov_base, k);
        off += k;
    }
    ck_assert_uint_eq(off, n);
    ck_assert_int_ge(rnic_ep_rx(B.ep, buf, n), 0);
    rnic_ep_tx_advance(A.ep, n);
}

/*
 * Small FPDUs go out up to RNIC_EP_TX_BATCH_FPDUS at a time: the ring,
 * RNIC_EP_TX_RING_MIN entries at first, grows while none of it is out,
 * and waits instead while its oldest FPDU is partly out.  With markers
 * (_i) it never grows.
 */
START_TEST(test_tx_ring_grows_for_a_batch)
{
    static struct iovec iov[RNIC_EP_TX_BATCH_IOV];
    struct rnic_ep_tx_fpdu f[RNIC_EP_TX_BATCH_FPDUS];
    const uint32_t len = 300 * 256;
    struct rnic_send_wr w = epf_wr(1, RNIC_WR_WRITE, A.lkey, SRC_OFF, len);
    size_t total;
    int cnt, nf, most = 0;

    teardown();
    pair_up(&(struct pair_cfg) { .crc = true, .markers = _i,
                                 .rtr = RNIC_MPA_RTR_WRITE, .mulpdu = 256 });
    rec_reset();
    drain_both(false);
    w.remote_stag = remote_mr(&B, DST_OFF, MIB, RNIC_ACCESS_REMOTE_WRITE,
                              RNIC_STAG_PERSISTENT);
    w.remote_to = epf_addr(DST_OFF);
    epf_post(&A, &w);
    total = rnic_ep_tx_peek_fpdus(A.ep, iov, RNIC_EP_TX_BATCH_IOV, &cnt,
                                  RNIC_EP_TX_RING_MIN, f, &nf);
    ck_assert_int_eq(nf, RNIC_EP_TX_RING_MIN);
    pass_to_b(iov, cnt, 10);
    rnic_ep_tx_peek_fpdus(A.ep, iov, RNIC_EP_TX_BATCH_IOV, &cnt,
                          RNIC_EP_TX_BATCH_FPDUS, f, &nf);
    ck_assert_int_eq(nf, RNIC_EP_TX_RING_MIN);
    pass_to_b(iov, cnt, total - 10);
    while ((total = rnic_ep_tx_peek_fpdus(A.ep, iov, RNIC_EP_TX_BATCH_IOV,
                                          &cnt, RNIC_EP_TX_BATCH_FPDUS, f,
                                          &nf)) > 0) {
        most = nf > most ? nf : most;
        pass_to_b(iov, cnt, total);
    }
    if (_i) {
        ck_assert_int_eq(most, RNIC_EP_TX_RING_MIN);
    } else {
        /* two doublings; the batch's iovecs run out a little before 256 */
        ck_assert_int_gt(most, 2 * RNIC_EP_TX_RING_MIN);
    }
    drain_both(false);
    expect_cqe(A.scq, 1, RNIC_WC_SUCCESS, RNIC_WC_WRITE, len);
    expect_data(&B, DST_OFF, &A, SRC_OFF, len);
}
END_TEST

/* A WR whose SGE is bad fails when it is reached, as one FPDU at a time:
 * the Write framed before it completes, nothing of it is sent. */
START_TEST(test_batch_bad_sge_waits)
{
    rec_reset();
    for (int batch = 0; batch < 2; batch++) {
        struct rnic_send_wr wr;
        uint32_t stag;

        teardown();
        setup();
        stag = remote_mr(&B, DST_OFF, MIB, RNIC_ACCESS_REMOTE_WRITE,
                         RNIC_STAG_PERSISTENT);
        epf_post_recv(&B, 1, MISC_OFF, 64);
        batch_write(&A, 1, SRC_OFF, stag, DST_OFF, 20000);
        wr = epf_wr(2, RNIC_WR_SEND, rnic_stag_next_key(A.lkey), SRC_OFF, 10);
        epf_post(&A, &wr);
        drain_both(batch);
        expect_cqe(A.scq, 1, RNIC_WC_SUCCESS, RNIC_WC_WRITE, 20000);
        expect_cqe(A.scq, 2, RNIC_WC_LOC_PROT_ERR, RNIC_WC_SEND, 0);
        expect_data(&B, DST_OFF, &A, SRC_OFF, 20000);
        ck_assert_uint_eq(B.term_received, 1);
    }
    expect_same_streams();
}
END_TEST

/* A send WR completes when the last octet of its message is advanced
 * past, not when it is framed or handed out. */
START_TEST(test_batch_completion_at_last_octet)
{
    struct iovec iov[64];
    size_t l0 = rnic_fpdu_len(14), l = rnic_fpdu_len(18 + 100);
    int cnt;

    for (int i = 0; i < 3; i++) {
        struct rnic_send_wr wr = epf_wr(1 + i, RNIC_WR_SEND, A.lkey,
                                        SRC_OFF, 100);
        epf_post(&A, &wr);
    }
    /* the RTR and three Sends */
    ck_assert_uint_eq(rnic_ep_tx_peek_batch(A.ep, iov, 64, &cnt, 16),
                      l0 + 3 * l);
    epf_no_cqe(A.scq);
    rnic_ep_tx_advance(A.ep, l0 + l - 1);
    epf_no_cqe(A.scq);
    rnic_ep_tx_advance(A.ep, 1);
    expect_cqe(A.scq, 1, RNIC_WC_SUCCESS, RNIC_WC_SEND, 100);
    epf_no_cqe(A.scq);
    rnic_ep_tx_advance(A.ep, 2 * l - 1);
    expect_cqe(A.scq, 2, RNIC_WC_SUCCESS, RNIC_WC_SEND, 100);
    epf_no_cqe(A.scq);
    ck_assert_uint_eq(rnic_ep_tx_peek_batch(A.ep, iov, 64, &cnt, 16), 1);
    ck_assert_int_eq(cnt, 1);
    rnic_ep_tx_advance(A.ep, 1);
    expect_cqe(A.scq, 3, RNIC_WC_SUCCESS, RNIC_WC_SEND, 100);
    epf_no_cqe(A.scq);
    ck_assert_uint_eq(rnic_ep_tx_peek_batch(A.ep, iov, 64, &cnt, 16), 0);
}
END_TEST

struct ulpdu_list {
    int count;
    uint8_t opcode[EPF_MAX_ULPDUS];
};

static int list_ulpdu(void *opaque, const uint8_t *ulpdu, size_t len)
{
    struct ulpdu_list *l = opaque;

    ck_assert_uint_ge(len, 2);
    ck_assert_int_lt(l->count, EPF_MAX_ULPDUS);
    l->opcode[l->count++] = ulpdu[1] & RNIC_RDMAP_OPCODE_MASK;
    return 0;
}

/*
 * A batch is handed out and partly written (into the middle of an FPDU,
 * or up to an FPDU boundary); then the stream from the peer breaks.  The
 * Terminate follows the FPDU begun, as with one FPDU at a time: the rest
 * of the batch is dropped unsent.
 */
START_TEST(test_batch_terminate_first)
{
    static uint8_t bad[24] = { 0, 18 };     /* its CRC is wrong */
    uint32_t m = rnic_ep_mulpdu(A.ep);
    size_t cut = rnic_fpdu_len(14) + 2 * rnic_fpdu_len(m) + (_i ? 0 : 100);
    struct ulpdu_list l[2] = { { 0 } };
    int want = _i ? 4 : 5;

    rec_reset();
    for (int batch = 0; batch < 2; batch++) {
        struct tx_rec *r = &rec[batch][0];
        uint32_t stag;
        struct rnic_fpdu_rx rx;
        struct iovec iov[64];
        size_t n;
        int cnt;

        teardown();
        setup();
        stag = remote_mr(&B, DST_OFF, MIB, RNIC_ACCESS_REMOTE_WRITE,
                         RNIC_STAG_PERSISTENT);
        batch_write(&A, 1, SRC_OFF, stag, DST_OFF, 100000);
        while (r->len < cut) {
            n = batch ? rnic_ep_tx_peek_batch(A.ep, iov, 64, &cnt, 16)
                      : rnic_ep_tx_peek(A.ep, iov, 64, &cnt);
            ck_assert_uint_gt(n, 0);
            if (batch) {
                ck_assert_uint_gt(n, cut - r->len);
            }
            n = n < cut - r->len ? n : cut - r->len;
            for (int i = 0, off = 0; i < cnt && (size_t)off < n; i++) {
                size_t k = iov[i].iov_len < n - off ? iov[i].iov_len
                                                    : n - off;

                memcpy(r->buf + r->len + off, iov[i].iov_base, k);
                off += (int)k;
            }
            rnic_ep_tx_advance(A.ep, n);
            r->len += n;
        }
        ck_assert_int_eq(rnic_ep_rx(A.ep, bad, sizeof(bad)), -EPROTO);
        ck_assert_uint_eq(A.stream_lost, 1);
        drain(&A, &B, batch, r);
        ck_assert_uint_eq(A.term_sent, 1);
        ck_assert_uint_eq(rnic_ep_tx_peek_batch(A.ep, iov, 64, &cnt, 16), 0);
        rnic_fpdu_rx_init(&rx, true, false, malloc(RNIC_MPA_ULPDU_MAX + 4),
                          RNIC_MPA_ULPDU_MAX + 4);
        ck_assert_int_eq(rnic_fpdu_rx_input(&rx, r->buf, r->len, list_ulpdu,
                                            &l[batch]), 0);
        free(rx.buf);
        ck_assert_int_eq(l[batch].count, want);
        ck_assert_uint_eq(l[batch].opcode[want - 1], RNIC_RDMAP_TERMINATE);
        for (int i = 0; i < want - 1; i++) {
            ck_assert_uint_eq(l[batch].opcode[i], RNIC_RDMAP_WRITE);
        }
        for (uint32_t k = rnic_cq_count(A.scq); k; k--) {
            ck_assert_int_ne(epf_cqe(A.scq).status, RNIC_WC_SUCCESS);
        }
    }
    expect_same_streams_side(0);
}
END_TEST

#ifndef __SANITIZE_ADDRESS__
/* Heap bytes A's endpoint holds, made again with markers on or off. */
static size_t ep_heap_bytes(bool markers)
{
    struct epf_params p = { .initiator = true };
    struct rnic_mpa_result resp;
    struct mallinfo2 before;

    epf_mpa_pair(true, markers, 0, 4, &p.mpa, &resp);
    rnic_ep_free(A.ep);
    before = mallinfo2();
    epf_new_ep(&A, &p);
    return mallinfo2().uordblks - before.uordblks;
}
#endif

/*
 * Host memory per connection: without markers the transmit ring keeps
 * only what unmarked framing uses of each FPDU's 5 KiB (once it was all
 * 24 of them, 125 KiB per connection, markers or not).  Under ASan
 * malloc is not glibc's and mallinfo2 says nothing.
 */
START_TEST(test_tx_ring_sized_for_markers)
{
#ifndef __SANITIZE_ADDRESS__
    size_t off = ep_heap_bytes(false), on = ep_heap_bytes(true);

    ck_assert_uint_ge(on - off, RNIC_EP_TX_RING_MIN *
                      (sizeof(struct rnic_fpdu_out) - RNIC_FPDU_OUT_UNMARKED));
#endif
}
END_TEST

Suite *engine_suite(void)
{
    Suite *s = suite_create("engine");
    TCase *tc = tcase_create("engine");

    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_ops_sizes, 0,
                        sizeof(wire_cfgs) / sizeof(wire_cfgs[0]));
    tcase_add_loop_test(tc, test_ops_without_maps, 0, 2);
    tcase_add_test(tc, test_segmentation);
    tcase_add_test(tc, test_write_from_scattered_pages);
    tcase_add_test(tc, test_tx_ring_sized_for_markers);
    tcase_add_loop_test(tc, test_tx_ring_grows_for_a_batch, 0, 2);
    tcase_add_test(tc, test_scatter_gather);
    tcase_add_test(tc, test_inline_send);
    tcase_add_test(tc, test_srq);
    tcase_add_test(tc, test_imm_data);
    tcase_add_test(tc, test_send_takes_late_recv);
    tcase_add_test(tc, test_atomics);
    tcase_add_test(tc, test_send_inv_then_write_refused);
    tcase_add_test(tc, test_one_shot_written_twice);
    tcase_add_loop_test(tc, test_one_shot_atomic_used_up, 0, 2);
    tcase_add_test(tc, test_recv_linked_stag);
    tcase_add_test(tc, test_recv_link_scoped_to_queue);
    tcase_add_test(tc, test_recv_link_forgotten_on_flush);
    tcase_add_test(tc, test_recv_link_survives_graceful_close);
    tcase_add_test(tc, test_persistent_many_writes);
    tcase_add_test(tc, test_zero_length_write_unchecked);
    tcase_add_test(tc, test_ord_limit);
    tcase_add_test(tc, test_fence);
    tcase_add_test(tc, test_fence_waits_for_atomic);
    tcase_add_test(tc, test_dereg_cuts_framed_write);
    tcase_add_test(tc, test_invalidate_cuts_read_response);
    tcase_add_test(tc, test_ird_exceeded);
    tcase_add_test(tc, test_flush_once);
    tcase_add_loop_test(tc, test_bad_local_sge, 0, 3);
    tcase_add_test(tc, test_local_inv_and_bind_in_order);
    tcase_add_test(tc, test_fast_reg_read_inv);
    tcase_add_test(tc, test_bound_window_written);
    tcase_add_test(tc, test_recv_too_long);
    tcase_add_loop_test(tc, test_batch_same_stream, 0, 12);
    tcase_add_test(tc, test_batch_one_shot_source);
    tcase_add_test(tc, test_zero_read_keeps_one_shot);
    tcase_add_test(tc, test_batch_read_responses);
    tcase_add_test(tc, test_batch_bad_sge_waits);
    tcase_add_test(tc, test_batch_completion_at_last_octet);
    tcase_add_loop_test(tc, test_batch_terminate_first, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}
