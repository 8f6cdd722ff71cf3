/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * engine.h's "Moving a live connection": endpoint A is saved in the
 * middle of B's stream to it (its deframer holding part of an FPDU, Read
 * Responses and inbound Read and Atomic Requests outstanding) with its
 * STag table, CQs and QP, freed, and made again from the bytes, as the
 * device does on a migration; the bytes in flight wait in the byte pipes,
 * which stand for the sockets' kernel queues.  The same script runs once
 * without the move: every byte of both sides' guest memory and every CQE
 * must come out the same.  Damaged endpoint bytes fail the load or load
 * into something that runs on without touching memory it does not own
 * (make check-unit-san).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include "iwarp/engine_internal.h"
#include "suites.h"
#include "support/epfix.h"

#define MIB         ((uint32_t)1 << 20)
#define SRC_OFF     0ull                    /* each side's data to send */
#define RECV_OFF    ((uint64_t)2 << 20)     /* its receive buffers */
#define WRITE_OFF   ((uint64_t)3 << 20)     /* the peer's Writes land here */
#define READ_OFF    ((uint64_t)4 << 20)     /* its own Reads land here */
#define ATOM_OFF    ((uint64_t)7 << 20)
#define RECV_LEN    ((uint32_t)128 * 1024)
#define CHUNK       3000
#define MAX_CQES    16
#define RECV_WR     RNIC_WR_OPCODE_COUNT    /* a CQE wanted of a receive */
#define NCUTS       7

/* Bytes written to a socket and not yet read: the kernel's, not a side's. */
struct pipe {
    uint8_t *buf;
    size_t len, off, cap;
};

struct keys {
    uint32_t write, read, atom;     /* remote access to the side's memory */
};

/* What a run leaves: both sides' guest memory and every CQE. */
struct outcome {
    uint8_t *mem[2];
    struct rnic_cqe cqe[4][MAX_CQES];   /* A send, A recv, B send, B recv */
    uint32_t ncqe[4];
};

struct cfg {
    bool crc, markers;
    uint8_t rtr;
};

static const struct cfg cfgs[] = {
    { .crc = true, .markers = false, .rtr = RNIC_MPA_RTR_WRITE },
    { .crc = true, .markers = true, .rtr = RNIC_MPA_RTR_READ },
    { .crc = false, .markers = false, .rtr = 0 },
};

static struct epf_side A, B;        /* A initiates; A is the one moved */
static struct epf_params pa, pb;
static struct epf_rng rng;
static struct pipe ab, ba;          /* A to B, B to A */
static struct keys ka, kb;
static size_t mark1, mark2;         /* ba.len after B's first, second batch */

/* ---- the pipes ---- */

static void pipe_put(struct pipe *p, const void *data, size_t n)
{
    if (n > p->cap - p->len) {
        p->cap = 2 * (p->len + n);
        p->buf = realloc(p->buf, p->cap);
        ck_assert_ptr_nonnull(p->buf);
    }
    memcpy(p->buf + p->len, data, n);
    p->len += n;
}

static void pipe_free(struct pipe *p)
{
    free(p->buf);
    *p = (struct pipe) { 0 };
}

/*
 * What @s's transmitter offers, into @p (NULL: dropped), the socket taking
 * a random part of each batch, until there is nothing more or @max octets
 * went; how many went.  The transmitter is quiet after it unless @max cut
 * it short.
 */
static size_t drain_max(struct epf_side *s, struct pipe *p, size_t max)
{
    struct iovec iov[64];
    size_t total = 0, n;
    int cnt;

    while (total < max &&
           (n = rnic_ep_tx_peek_batch(s->ep, iov, 64, &cnt,
                                      1 + (int)epf_rand(&rng, 8)))) {
        size_t take = 1 + epf_rand(&rng, (uint32_t)n), left = take;

        for (int i = 0; i < cnt && left; i++) {
            size_t k = iov[i].iov_len < left ? iov[i].iov_len : left;

            if (p) {
                pipe_put(p, iov[i].iov_base, k);
            }
            left -= k;
        }
        rnic_ep_tx_advance(s->ep, take);
        total += take;
    }
    return total;
}

static size_t drain(struct epf_side *s, struct pipe *p)
{
    return drain_max(s, p, SIZE_MAX);
}

/* @n more octets of @p (SIZE_MAX: all) into @to, read in random pieces. */
static void deliver(struct pipe *p, struct epf_side *to, size_t n)
{
    if (n > p->len - p->off) {
        n = p->len - p->off;
    }
    while (n) {
        size_t piece = 1 + epf_rand(&rng, CHUNK);

        piece = piece < n ? piece : n;
        ck_assert_int_eq(rnic_ep_rx(to->ep, p->buf + p->off, piece), 0);
        p->off += piece;
        n -= piece;
    }
}

/* Both ways until neither side has anything to send. */
static void run_both(void)
{
    size_t moved;

    do {
        moved = drain(&A, &ab);
        deliver(&ab, &B, SIZE_MAX);
        moved += drain(&B, &ba);
        deliver(&ba, &A, SIZE_MAX);
    } while (moved);
}

/* ---- the two sides ---- */

static struct keys side_keys(struct epf_side *s)
{
    unsigned lw = RNIC_ACCESS_LOCAL_WRITE;

    return (struct keys) {
        .write = epf_mr(s, WRITE_OFF, MIB, RNIC_ACCESS_REMOTE_WRITE | lw,
                        RNIC_STAG_PERSISTENT, false),
        .read = epf_mr(s, SRC_OFF, 2 * MIB, RNIC_ACCESS_REMOTE_READ,
                       RNIC_STAG_PERSISTENT, false),
        .atom = epf_mr(s, ATOM_OFF, EPF_PAGE, RNIC_ACCESS_REMOTE_ATOMIC | lw,
                       RNIC_STAG_PERSISTENT, false),
    };
}

static void pair_up(const struct cfg *c)
{
    pa = (struct epf_params) { .initiator = true, .atomics = true };
    pb = (struct epf_params) { .atomics = true };
    epf_mpa_pair(c->crc, c->markers, c->rtr, 4, &pa.mpa, &pb.mpa);
    epf_init(&A, &pa, 10);
    epf_init(&B, &pb, 20);
    rng.s = 0x243f6a8885a308d3ull;
    epf_fill(epf_ptr(&A, SRC_OFF), 2 * MIB, &rng);
    epf_fill(epf_ptr(&B, SRC_OFF), 2 * MIB, &rng);
    epf_ptr(&A, ATOM_OFF)[0] = 0xe8;    /* 1000, little-endian */
    epf_ptr(&A, ATOM_OFF)[1] = 0x03;
    ka = side_keys(&A);
    kb = side_keys(&B);
    pipe_free(&ab);
    pipe_free(&ba);
}

static void pair_down(void)
{
    epf_fini(&A);
    epf_fini(&B);
    pipe_free(&ab);
    pipe_free(&ba);
}

static void post(struct epf_side *s, uint64_t id, enum rnic_wr_opcode op,
                 uint64_t off, uint32_t len, uint32_t stag, uint64_t roff)
{
    struct rnic_send_wr wr = epf_wr(id, op, s->lkey, off, len);

    wr.remote_stag = stag;
    wr.remote_to = epf_addr(roff);
    wr.atomic_add_or_compare = 5;
    epf_post(s, &wr);
}

/*
 * B's stream to A, A reading nothing of it yet: a Send, a Write, a Read
 * and an Atomic on A (mark1), then the Response to A's Read of 150000
 * octets, a long Send and a Write (mark2).  Then A reads @cut octets of
 * it: the first @cut of them, in the same random pieces on every run.
 */
static void script_start(const struct cfg *c, int cut_no)
{
    size_t cut;

    pair_up(c);
    for (int i = 0; i < 3; i++) {
        epf_post_recv(&A, 100 + i, RECV_OFF + i * RECV_LEN, RECV_LEN);
    }
    epf_post_recv(&B, 200, RECV_OFF, RECV_LEN);
    /* the RTR message, if any, reaches B: B may send */
    drain(&A, &ab);
    deliver(&ab, &B, SIZE_MAX);
    post(&B, 11, RNIC_WR_SEND, SRC_OFF, 5000, 0, 0);
    post(&B, 12, RNIC_WR_WRITE, SRC_OFF + 10000, 40000, ka.write, WRITE_OFF);
    post(&B, 13, RNIC_WR_READ, READ_OFF, 30000, ka.read, SRC_OFF + 5);
    post(&B, 14, RNIC_WR_ATOMIC_FETCH_ADD, ATOM_OFF, 8, ka.atom, ATOM_OFF);
    drain(&B, &ba);
    mark1 = ba.len;
    post(&A, 1, RNIC_WR_READ, READ_OFF, 150000, kb.read, SRC_OFF + 3);
    drain(&A, &ab);
    deliver(&ab, &B, SIZE_MAX);
    post(&B, 15, RNIC_WR_SEND, SRC_OFF + 60000, 70000, 0, 0);
    post(&B, 16, RNIC_WR_WRITE, SRC_OFF + 200000, 1000, ka.write,
         WRITE_OFF + 65536);
    drain(&B, &ba);
    mark2 = ba.len;
    ck_assert_uint_gt(mark2, mark1 + 150000);
    switch (cut_no) {
    case 0:
        cut = 3000;                             /* inside the first Send */
        break;
    case 1:
        cut = mark1 - 7;                        /* the Atomic Request */
        break;
    case 2:
        cut = mark1 + 70000;                    /* the Read Response */
        break;
    case 3:                                     /* inside a marker */
        cut = ((mark1 + 80000) & ~(size_t)511) + 2;
        break;
    case 4:
        cut = mark2 - 3;                        /* the last FPDU's CRC */
        break;
    case 5:
        cut = mark1 + 3;                        /* the Response's start */
        break;
    default:
        cut = 1;                                /* the stream's first octet */
        break;
    }
    deliver(&ba, &A, cut);
}

/* The state the cut left A in: quiet, and what each cut was chosen for. */
static void check_cut(const struct cfg *c, int cut_no)
{
    const struct rnic_fpdu_rx *rx = &A.ep->frx;

    ck_assert(rnic_ep_tx_quiet(A.ep));
    ck_assert_msg(rx->phase != RNIC_FPDU_RX_HDR || rx->got || rx->in_marker,
                  "cut %d is between FPDUs", cut_no);
    switch (cut_no) {
    case 0:
        ck_assert(A.ep->rx_send_more);
        break;
    case 1:
        ck_assert_uint_eq(A.qp->irq.count, 1);
        break;
    case 2:
    case 3:
        ck_assert_uint_gt(A.ep->rresp_got, 0);
        ck_assert_uint_eq(A.qp->ord_used, 1);
        ck_assert_uint_eq(A.qp->irq.count, 2);
        ck_assert(rx->in_marker == (cut_no == 3 && c->markers));
        break;
    case 4:
        ck_assert_int_eq(rx->phase, RNIC_FPDU_RX_CRC);
        break;
    case 6:
        ck_assert(A.ep->rtr_read_pending == (c->rtr == RNIC_MPA_RTR_READ));
        break;
    }
}

/* The rest of B's stream to A, then work both ways, A answering B. */
static void script_finish(struct outcome *out)
{
    struct rnic_cq *cqs[4];

    deliver(&ba, &A, SIZE_MAX);
    post(&A, 2, RNIC_WR_SEND, SRC_OFF + 1000, 3000, 0, 0);
    post(&A, 3, RNIC_WR_WRITE, SRC_OFF + 300000, 60000, kb.write, WRITE_OFF);
    post(&A, 4, RNIC_WR_READ, READ_OFF + 512 * 1024, 10000, kb.read,
         SRC_OFF + 400000);
    post(&B, 17, RNIC_WR_SEND, SRC_OFF + 500000, 777, 0, 0);
    run_both();
    ck_assert_uint_eq(A.term_sent + A.term_received + A.stream_lost, 0);
    ck_assert_uint_eq(B.term_sent + B.term_received + B.stream_lost, 0);
    cqs[0] = A.scq;
    cqs[1] = A.rcq;
    cqs[2] = B.scq;
    cqs[3] = B.rcq;
    for (int i = 0; i < 4; i++) {
        out->ncqe[i] = rnic_cq_poll(cqs[i], out->cqe[i], MAX_CQES);
    }
    for (int i = 0; i < 2; i++) {
        struct epf_side *s = i ? &B : &A;

        out->mem[i] = malloc(EPF_SIZE);
        ck_assert_ptr_nonnull(out->mem[i]);
        memcpy(out->mem[i], s->mem.mem, EPF_SIZE);
    }
}

static void outcome_free(struct outcome *out)
{
    free(out->mem[0]);
    free(out->mem[1]);
}

/* ---- moving A ---- */

static void save_a(struct rnic_sv *s)
{
    *s = (struct rnic_sv) { 0 };
    rnic_stag_table_save(s, A.stags);
    rnic_cq_save(s, A.scq);
    rnic_cq_save(s, A.rcq);
    rnic_qp_save(s, A.qp);
    rnic_ep_save(s, A.ep);
    ck_assert(!s->failed);
}

/*
 * What the device does: A's state to bytes, A freed, A' made with the
 * same parameters (the table's limits as epf_init() chose them) and
 * loaded; A' saves to the same bytes.
 */
static void move_a(void)
{
    struct rnic_stag_table_params tp = {
        .max_stags = 256, .max_pds = 4, .max_recv_links = 64,
        .default_policy = pa.policy,
    };
    struct rnic_qp_attr attr = A.qp->attr;
    uint32_t qpn = A.qp->qpn, depth = rnic_cq_depth(A.scq);
    struct rnic_sv s1, s2;
    struct rnic_ld l;

    save_a(&s1);
    rnic_ep_free(A.ep);
    rnic_qp_free(A.qp);
    ck_assert_int_eq(rnic_cq_destroy(A.scq), 0);
    ck_assert_int_eq(rnic_cq_destroy(A.rcq), 0);
    rnic_stag_table_free(A.stags);
    ck_assert_int_eq(A.mem.mapped, 0);

    A.stags = rnic_stag_table_new(&tp);
    A.scq = rnic_cq_new(depth, NULL, NULL);
    A.rcq = rnic_cq_new(depth, NULL, NULL);
    ck_assert(A.stags && A.scq && A.rcq);
    attr.send_cq = A.scq;
    attr.recv_cq = A.rcq;
    A.qp = rnic_qp_new(qpn, &attr);
    ck_assert_ptr_nonnull(A.qp);
    rnic_ld_init(&l, s1.buf, s1.len);
    ck_assert_int_eq(rnic_stag_table_load(&l, A.stags), 0);
    ck_assert_int_eq(rnic_cq_load(&l, A.scq), 0);
    ck_assert_int_eq(rnic_cq_load(&l, A.rcq), 0);
    ck_assert_int_eq(rnic_qp_load(&l, A.qp), 0);
    ck_assert_int_eq(A.qp->state, RNIC_QP_RTS);
    epf_new_ep(&A, &pa);
    ck_assert_int_eq(rnic_ep_load(&l, A.ep), 0);
    ck_assert_uint_eq(l.off, s1.len);
    ck_assert(rnic_ep_tx_quiet(A.ep));

    save_a(&s2);
    ck_assert_uint_eq(s2.len, s1.len);
    ck_assert_mem_eq(s2.buf, s1.buf, s1.len);
    rnic_sv_free(&s1);
    rnic_sv_free(&s2);
}

/* ---- what a run must produce ---- */

struct want_cqe {
    uint64_t id;
    enum rnic_wr_opcode op;         /* or RECV_WR */
    uint32_t len;
};

static void expect_cqes(const struct outcome *o, int q,
                        const struct want_cqe *w, uint32_t n)
{
    ck_assert_uint_eq(o->ncqe[q], n);
    for (uint32_t i = 0; i < n; i++) {
        const struct rnic_cqe *c = &o->cqe[q][i];
        enum rnic_wc_opcode op = w[i].op == RECV_WR ?
                                 RNIC_WC_RECV : rnic_wc_opcode_of(w[i].op);

        ck_assert_msg(c->wr_id == w[i].id && c->status == RNIC_WC_SUCCESS &&
                      c->opcode == op && c->byte_len == w[i].len,
                      "CQ %d #%u: id %lu %s %s len %u", q, i,
                      (unsigned long)c->wr_id, rnic_wc_status_str(c->status),
                      rnic_wc_opcode_str(c->opcode), c->byte_len);
    }
}

/* @n octets at @dst of side @to equal those at @src of side @from. */
static void expect_data(const struct outcome *o, int to, uint64_t dst,
                        int from, uint64_t src, uint32_t n)
{
    ck_assert_mem_eq(o->mem[to] + dst, o->mem[from] + src, n);
}

static void expect_outcome(const struct outcome *o)
{
    static const struct want_cqe a_send[] = {
        { 1, RNIC_WR_READ, 150000 }, { 2, RNIC_WR_SEND, 3000 },
        { 3, RNIC_WR_WRITE, 60000 }, { 4, RNIC_WR_READ, 10000 },
    };
    static const struct want_cqe a_recv[] = {
        { 100, RECV_WR, 5000 }, { 101, RECV_WR, 70000 }, { 102, RECV_WR, 777 },
    };
    static const struct want_cqe b_send[] = {
        { 11, RNIC_WR_SEND, 5000 }, { 12, RNIC_WR_WRITE, 40000 },
        { 13, RNIC_WR_READ, 30000 }, { 14, RNIC_WR_ATOMIC_FETCH_ADD, 8 },
        { 15, RNIC_WR_SEND, 70000 }, { 16, RNIC_WR_WRITE, 1000 },
        { 17, RNIC_WR_SEND, 777 },
    };
    static const struct want_cqe b_recv[] = { { 200, RECV_WR, 3000 } };

    expect_cqes(o, 0, a_send, 4);
    expect_cqes(o, 1, a_recv, 3);
    expect_cqes(o, 2, b_send, 7);
    expect_cqes(o, 3, b_recv, 1);
    expect_data(o, 0, READ_OFF, 1, SRC_OFF + 3, 150000);
    expect_data(o, 0, READ_OFF + 512 * 1024, 1, SRC_OFF + 400000, 10000);
    expect_data(o, 0, RECV_OFF, 1, SRC_OFF, 5000);
    expect_data(o, 0, RECV_OFF + RECV_LEN, 1, SRC_OFF + 60000, 70000);
    expect_data(o, 0, RECV_OFF + 2 * RECV_LEN, 1, SRC_OFF + 500000, 777);
    expect_data(o, 0, WRITE_OFF, 1, SRC_OFF + 10000, 40000);
    expect_data(o, 0, WRITE_OFF + 65536, 1, SRC_OFF + 200000, 1000);
    expect_data(o, 1, READ_OFF, 0, SRC_OFF + 5, 30000);
    expect_data(o, 1, RECV_OFF, 0, SRC_OFF + 1000, 3000);
    expect_data(o, 1, WRITE_OFF, 0, SRC_OFF + 300000, 60000);
    ck_assert_uint_eq(o->mem[0][ATOM_OFF] | o->mem[0][ATOM_OFF + 1] << 8,
                      1005);
    ck_assert_uint_eq(o->mem[1][ATOM_OFF] | o->mem[1][ATOM_OFF + 1] << 8,
                      1000);
}

static void expect_same(const struct outcome *a, const struct outcome *b)
{
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(!memcmp(a->mem[i], b->mem[i], EPF_SIZE),
                      "side %c's memory differs", "AB"[i]);
    }
    for (int q = 0; q < 4; q++) {
        ck_assert_uint_eq(a->ncqe[q], b->ncqe[q]);
        for (uint32_t i = 0; i < a->ncqe[q]; i++) {
            const struct rnic_cqe *x = &a->cqe[q][i], *y = &b->cqe[q][i];

            ck_assert_uint_eq(x->wr_id, y->wr_id);
            ck_assert_int_eq(x->status, y->status);
            ck_assert_int_eq(x->opcode, y->opcode);
            ck_assert_uint_eq(x->byte_len, y->byte_len);
            ck_assert_uint_eq(x->qpn, y->qpn);
            ck_assert_uint_eq(x->flags, y->flags);
            ck_assert_uint_eq(x->imm_data, y->imm_data);
            ck_assert_uint_eq(x->inval_stag, y->inval_stag);
        }
    }
}

/* ---- 1. round trip in the middle of the stream ---- */

START_TEST(test_move_mid_stream)
{
    const struct cfg *c = &cfgs[_i / NCUTS];
    int cut = _i % NCUTS;
    struct outcome plain = { 0 }, moved = { 0 };

    script_start(c, cut);
    check_cut(c, cut);
    script_finish(&plain);
    pair_down();

    script_start(c, cut);
    check_cut(c, cut);
    move_a();
    script_finish(&moved);
    pair_down();

    expect_outcome(&plain);
    expect_same(&plain, &moved);
    outcome_free(&plain);
    outcome_free(&moved);
}
END_TEST

/* ---- 2. only a quiet transmitter is saved ---- */

START_TEST(test_move_not_quiet)
{
    /* a two-octet ULPDU with a zero CRC: A's stream is lost */
    static const uint8_t bad[8] = { 0, 2, 0xc0, 0x41 };
    struct iovec iov[64];
    size_t first;
    int cnt, ret;

    pair_up(&cfgs[0]);
    ck_assert(rnic_ep_tx_quiet(A.ep));
    drain(&A, &ab);                             /* the RTR message */
    ck_assert(rnic_ep_tx_quiet(A.ep));
    /* posted work waits in the QP: still quiet */
    post(&A, 1, RNIC_WR_SEND, SRC_OFF, 3 * rnic_ep_mulpdu(A.ep), 0, 0);
    ck_assert(rnic_ep_tx_quiet(A.ep));
    /* an FPDU framed, none of it advanced past */
    first = rnic_ep_tx_peek(A.ep, iov, 64, &cnt);
    ck_assert_uint_gt(first, 1);
    ck_assert(!rnic_ep_tx_quiet(A.ep));
    /* partly sent */
    rnic_ep_tx_advance(A.ep, first - 1);
    ck_assert(!rnic_ep_tx_quiet(A.ep));
    /* the first FPDU sent, the message half segmented */
    rnic_ep_tx_advance(A.ep, 1);
    ck_assert_uint_eq(A.ep->ring_count, 0);
    ck_assert(!rnic_ep_tx_quiet(A.ep));
    /* several framed ahead */
    ck_assert_uint_gt(rnic_ep_tx_peek_batch(A.ep, iov, 64, &cnt, 8), 0);
    ck_assert(!rnic_ep_tx_quiet(A.ep));
    drain(&A, &ab);
    ck_assert(rnic_ep_tx_quiet(A.ep));
    /* a Terminate due, then sent */
    ret = rnic_ep_rx(A.ep, bad, sizeof(bad));
    ck_assert_int_eq(ret, -EPROTO);
    ck_assert_uint_eq(A.stream_lost, 1);
    ck_assert(!rnic_ep_tx_quiet(A.ep));
    drain(&A, &ab);
    ck_assert_uint_eq(A.term_sent, 1);
    ck_assert(!rnic_ep_tx_quiet(A.ep));
    pair_down();
}
END_TEST

/* ---- 3. damaged bytes ---- */

static struct rnic_qp_attr scratch_attr;
static struct rnic_sv qp_blob;

/*
 * A fresh QP (from qp_blob, completing into scratch CQs) and endpoint for
 * A, and the endpoint's @len bytes at @blob loaded into it (*@used: how
 * many it read).
 */
static int load_a(const uint8_t *blob, size_t len, size_t *used)
{
    struct rnic_ld l;
    int ret;

    A.qp = rnic_qp_new(10, &scratch_attr);
    ck_assert_ptr_nonnull(A.qp);
    rnic_ld_init(&l, qp_blob.buf, qp_blob.len);
    ck_assert_int_eq(rnic_qp_load(&l, A.qp), 0);
    epf_new_ep(&A, &pa);
    rnic_ld_init(&l, blob, len);
    ret = rnic_ep_load(&l, A.ep);
    if (used) {
        *used = l.off;
    }
    return ret;
}

static void drop_a(void)
{
    struct rnic_cqe c[64];

    rnic_ep_free(A.ep);
    rnic_qp_free(A.qp);
    A.ep = NULL;
    A.qp = NULL;
    while (rnic_cq_poll(scratch_attr.send_cq, c, 64) ||
           rnic_cq_poll(scratch_attr.recv_cq, c, 64)) {
    }
    ck_assert_int_eq(A.mem.mapped, 0);
}

/* An endpoint that loaded runs on: the next 16 KiB of B's, 16 KiB out. */
static void run_on(void)
{
    size_t off = ba.off;

    while (off < ba.len && off < ba.off + 16384) {
        size_t piece = 1 + epf_rand(&rng, CHUNK);

        piece = piece < ba.len - off ? piece : ba.len - off;
        rnic_ep_rx(A.ep, ba.buf + off, piece);
        off += piece;
    }
    drain_max(&A, NULL, 16384);
}

static size_t first_diff(const struct rnic_sv *a, const struct rnic_sv *b)
{
    size_t i = 0;

    while (i < a->len && i < b->len && a->buf[i] == b->buf[i]) {
        i++;
    }
    ck_assert_uint_lt(i, a->len);
    return i;
}

/* Where field @f of @ep starts in its bytes: saved again with it changed. */
#define FIELD_AT(ep, f) ({                                  \
    struct rnic_sv s1_ = { 0 }, s2_ = { 0 };                \
    size_t at_;                                             \
    rnic_ep_save(&s1_, (ep));                               \
    (ep)->f ^= 1;                                           \
    rnic_ep_save(&s2_, (ep));                               \
    (ep)->f ^= 1;                                           \
    at_ = first_diff(&s1_, &s2_);                           \
    rnic_sv_free(&s1_);                                     \
    rnic_sv_free(&s2_);                                     \
    at_; })

struct poke {
    size_t at;
    unsigned width;                 /* octets, little-endian */
    uint32_t v;
};

/* @blob with @n fields set, loaded; run on when it loads. */
static int load_poked(const struct rnic_sv *blob, const struct poke *p,
                      int n)
{
    uint8_t *b = malloc(blob->len);
    int ret;

    ck_assert_ptr_nonnull(b);
    memcpy(b, blob->buf, blob->len);
    for (int i = 0; i < n; i++) {
        for (unsigned k = 0; k < p[i].width; k++) {
            b[p[i].at + k] = (uint8_t)(p[i].v >> (8 * k));
        }
    }
    ret = load_a(b, blob->len, NULL);
    if (!ret) {
        run_on();
    }
    drop_a();
    free(b);
    return ret;
}

START_TEST(test_move_damaged)
{
    static const uint8_t masks[] = { 0x01, 0x80, 0xa5 };
    const struct cfg *c = &cfgs[_i];
    struct rnic_sv ep_blob = { 0 }, t1 = { 0 }, t2 = { 0 };
    struct rnic_cq *scq = rnic_cq_new(64, NULL, NULL);
    struct rnic_cq *rcq = rnic_cq_new(64, NULL, NULL);
    struct rnic_qp_attr attr;
    size_t phase, got, body, mgot, inm, used;
    uint32_t cap, held;
    uint8_t *mem = malloc(EPF_SIZE);
    struct outcome out = { 0 };

    ck_assert(scq && rcq && mem);
    script_start(c, 3);
    check_cut(c, 3);
    ck_assert_int_eq(A.ep->frx.phase, RNIC_FPDU_RX_BODY);
    cap = (uint32_t)A.ep->frx.cap;
    held = (uint32_t)A.ep->frx.got;
    phase = FIELD_AT(A.ep, frx.phase);
    got = FIELD_AT(A.ep, frx.got);
    body = FIELD_AT(A.ep, frx.body_len);
    mgot = FIELD_AT(A.ep, frx.marker_got);
    inm = FIELD_AT(A.ep, frx.in_marker);
    ck_assert(phase < got && got < body && body < mgot && mgot < inm);

    qp_blob = (struct rnic_sv) { 0 };
    rnic_qp_save(&qp_blob, A.qp);
    rnic_ep_save(&ep_blob, A.ep);
    rnic_stag_table_save(&t1, A.stags);
    ck_assert(!qp_blob.failed && !ep_blob.failed && !t1.failed);
    memcpy(mem, A.mem.mem, EPF_SIZE);
    attr = A.qp->attr;
    scratch_attr = attr;
    scratch_attr.send_cq = scq;
    scratch_attr.recv_cq = rcq;
    rnic_ep_free(A.ep);
    rnic_qp_free(A.qp);

    /* as saved, it loads and uses every byte */
    ck_assert_int_eq(load_a(ep_blob.buf, ep_blob.len, &used), 0);
    ck_assert_uint_eq(used, ep_blob.len);
    drop_a();
    for (size_t n = 0; n < ep_blob.len; n++) {
        ck_assert_msg(load_a(ep_blob.buf, n, NULL) == -EINVAL,
                      "%zu of %zu octets loaded", n, ep_blob.len);
        drop_a();
    }
    for (size_t i = 0; i < ep_blob.len; i++) {
        for (size_t m = 0; m < sizeof(masks); m++) {
            int ret;

            ep_blob.buf[i] ^= masks[m];
            ret = load_a(ep_blob.buf, ep_blob.len, NULL);
            ck_assert(ret == 0 || ret == -EINVAL);
            if (!ret) {
                run_on();
            }
            drop_a();
            ep_blob.buf[i] ^= masks[m];
        }
    }

    /* the deframer's counts against its phase and its buffer */
    ck_assert_int_eq(load_poked(&ep_blob, (struct poke[]) {
                         { phase, 1, 3 } }, 1), -EINVAL);
    ck_assert_int_eq(load_poked(&ep_blob, (struct poke[]) {
                         { phase, 1, 0xff } }, 1), -EINVAL);
    ck_assert_int_eq(load_poked(&ep_blob, (struct poke[]) {
                         { got, 4, 0xffffffff } }, 1), -EINVAL);
    ck_assert_int_eq(load_poked(&ep_blob, (struct poke[]) {
                         { body, 4, held - 1 } }, 1), -EINVAL);
    ck_assert_int_eq(load_poked(&ep_blob, (struct poke[]) {
                         { body, 4, cap + 1 }, { got, 4, cap + 1 } }, 2),
                     -EINVAL);
    ck_assert_int_eq(load_poked(&ep_blob, (struct poke[]) {
                         { body, 4, 0xffffffff } }, 1), -EINVAL);
    ck_assert_int_eq(load_poked(&ep_blob, (struct poke[]) {
                         { phase, 1, RNIC_FPDU_RX_HDR },
                         { got, 4, RNIC_MPA_HDR_LEN + 1 } }, 2), -EINVAL);
    ck_assert_int_eq(load_poked(&ep_blob, (struct poke[]) {
                         { phase, 1, RNIC_FPDU_RX_CRC },
                         { got, 4, RNIC_MPA_CRC_LEN + 1 } }, 2), -EINVAL);
    ck_assert_int_eq(load_poked(&ep_blob, (struct poke[]) {
                         { phase, 1, RNIC_FPDU_RX_CRC },
                         { body, 4, cap + 1 }, }, 2), -EINVAL);
    ck_assert_int_eq(load_poked(&ep_blob, (struct poke[]) {
                         { mgot, 4, RNIC_MPA_MARKER_LEN + 1 } }, 1),
                     -EINVAL);
    /* a marker complete is not one being received */
    ck_assert_int_eq(load_poked(&ep_blob, (struct poke[]) {
                         { mgot, 4, RNIC_MPA_MARKER_LEN },
                         { inm, 1, 1 } }, 2), -EINVAL);
    if (!c->markers) {
        ck_assert_int_eq(load_poked(&ep_blob, (struct poke[]) {
                             { mgot, 4, 1 } }, 1), -EINVAL);
    }
    /* the CRC phase holds the whole body: as many octets, so it loads */
    ck_assert_int_eq(load_poked(&ep_blob, (struct poke[]) {
                         { phase, 1, RNIC_FPDU_RX_CRC },
                         { body, 4, held }, { got, 4, 0 } }, 3), 0);

    /* none of it changed the table; the saved state still runs to the end */
    rnic_stag_table_save(&t2, A.stags);
    ck_assert_uint_eq(t2.len, t1.len);
    ck_assert_mem_eq(t2.buf, t1.buf, t1.len);
    memcpy(A.mem.mem, mem, EPF_SIZE);
    A.term_sent = A.term_received = A.stream_lost = 0;
    scratch_attr = attr;
    ck_assert_int_eq(load_a(ep_blob.buf, ep_blob.len, NULL), 0);
    script_finish(&out);
    pair_down();
    expect_outcome(&out);

    outcome_free(&out);
    free(mem);
    rnic_sv_free(&qp_blob);
    rnic_sv_free(&ep_blob);
    rnic_sv_free(&t1);
    rnic_sv_free(&t2);
    ck_assert_int_eq(rnic_cq_destroy(scq), 0);
    ck_assert_int_eq(rnic_cq_destroy(rcq), 0);
}
END_TEST

Suite *engine_save_suite(void)
{
    Suite *s = suite_create("engine_save");
    TCase *tc = tcase_create("engine_save");

    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_move_mid_stream, 0,
                        (int)(sizeof(cfgs) / sizeof(cfgs[0])) * NCUTS);
    tcase_add_test(tc, test_move_not_quiet);
    tcase_add_loop_test(tc, test_move_damaged, 0,
                        (int)(sizeof(cfgs) / sizeof(cfgs[0])));
    suite_add_tcase(s, tc);
    return s;
}
