/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Two endpoints over a real TCP connection on 127.0.0.1: the MPA
 * handshake through core/iwarp/mpa.c (both roles), then every operation with
 * its data checked, for CRC on and off and markers on and off.
 * Non-blocking sockets driven by poll(), every wait bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <check.h>
#include "suites.h"
#include "support/epfix.h"

#define SRC_OFF     0ull
#define DST_OFF     ((uint64_t)4 << 20)
#define ATOM_OFF    ((uint64_t)7 << 20)
#define DEADLINE_MS 20000

static struct epf_side A, B;        /* A connects: the MPA initiator */
static int fd[2] = { -1, -1 };
static uint8_t early[2][RNIC_MPA_FRAME_MAX];    /* FPDUs after the frame */
static size_t early_len[2];

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void set_nonblock(int s)
{
    ck_assert_int_eq(fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK), 0);
}

static void tcp_pair(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof(sa);
    int l = socket(AF_INET, SOCK_STREAM, 0);

    ck_assert_int_ge(l, 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(l, 1), 0);
    ck_assert_int_eq(getsockname(l, (struct sockaddr *)&sa, &len), 0);
    fd[0] = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd[0], 0);
    ck_assert_int_eq(connect(fd[0], (struct sockaddr *)&sa, sizeof(sa)), 0);
    fd[1] = accept(l, NULL, NULL);
    ck_assert_int_ge(fd[1], 0);
    close(l);
    set_nonblock(fd[0]);
    set_nonblock(fd[1]);
}

/* ---- the MPA handshake ---- */

struct hs {
    struct rnic_mpa_conn c;
    size_t sent;
    bool have_out;              /* out[] is ready to go */
};

static void hs_step(struct hs *h, int i, short revents)
{
    uint8_t buf[RNIC_MPA_FRAME_MAX];
    size_t used;
    ssize_t n;

    if ((revents & POLLOUT) && h->have_out && h->sent < h->c.out_len) {
        n = write(fd[i], h->c.out + h->sent, h->c.out_len - h->sent);
        h->sent += n > 0 ? (size_t)n : 0;
    }
    if (!(revents & POLLIN) || h->c.state != RNIC_MPA_WAIT_FRAME) {
        return;
    }
    n = read(fd[i], buf, sizeof(buf));
    ck_assert_int_gt(n, 0);
    ck_assert_int_ge(rnic_mpa_conn_input(&h->c, buf, (size_t)n, &used), 0);
    memcpy(early[i], buf + used, (size_t)n - used);
    early_len[i] = (size_t)n - used;
    h->have_out = true;
}

static bool hs_done(const struct hs *h)
{
    return h[0].c.state == RNIC_MPA_DONE && h[1].c.state == RNIC_MPA_DONE &&
           h[0].sent >= h[0].c.out_len && h[1].sent >= h[1].c.out_len;
}

static void handshake(bool crc, bool markers, struct rnic_mpa_result *res)
{
    struct rnic_mpa_params p = {
        .rev = 2, .crc = crc ? RNIC_MPA_CRC_REQUIRED : RNIC_MPA_CRC_OFF,
        .markers_wanted = markers, .markers_allowed = true,
        .ird = 4, .ord = 4,
        .rtr = RNIC_MPA_RTR_SEND | RNIC_MPA_RTR_WRITE | RNIC_MPA_RTR_READ,
    };
    struct hs h[2] = { { .have_out = true } };
    uint64_t end = now_ms() + DEADLINE_MS;

    ck_assert_int_eq(rnic_mpa_conn_init(&h[0].c, true, &p), 0);
    ck_assert_int_eq(rnic_mpa_conn_init(&h[1].c, false, &p), 0);
    while (!hs_done(h)) {
        struct pollfd pfd[2] = { { fd[0], POLLIN | POLLOUT, 0 },
                                 { fd[1], POLLIN | POLLOUT, 0 } };

        ck_assert_uint_lt(now_ms(), end);
        ck_assert_int_ge(poll(pfd, 2, 100), 0);
        hs_step(&h[0], 0, pfd[0].revents);
        hs_step(&h[1], 1, pfd[1].revents);
    }
    res[0] = h[0].c.result;
    res[1] = h[1].c.result;
    ck_assert(res[0].crc == crc && res[1].crc == crc);
    ck_assert(res[0].markers_tx == markers && res[1].markers_rx == markers);
    ck_assert_uint_ne(res[0].rtr, 0);
}

/* ---- moving bytes ---- */

static void sock_tx(struct epf_side *s, int i)
{
    struct iovec iov[64];
    int cnt;
    ssize_t n;

    while (rnic_ep_tx_peek(s->ep, iov, 64, &cnt)) {
        n = writev(fd[i], iov, cnt);
        if (n <= 0) {
            ck_assert(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
            return;
        }
        rnic_ep_tx_advance(s->ep, (size_t)n);
    }
}

static void sock_rx(struct epf_side *s, int i)
{
    static uint8_t buf[1 << 16];
    ssize_t n = read(fd[i], buf, sizeof(buf));

    if (n > 0) {
        ck_assert_int_eq(rnic_ep_rx(s->ep, buf, (size_t)n), 0);
    }
}

/* Runs both sides until @a_scq + @b_rcq CQEs are there. */
static void run_until(uint32_t a_scq, uint32_t b_rcq)
{
    uint64_t end = now_ms() + DEADLINE_MS;
    struct epf_side *side[2] = { &A, &B };

    while (rnic_cq_count(A.scq) < a_scq || rnic_cq_count(B.rcq) < b_rcq) {
        struct pollfd pfd[2] = { { fd[0], POLLIN | POLLOUT, 0 },
                                 { fd[1], POLLIN | POLLOUT, 0 } };

        ck_assert_msg(now_ms() < end, "timed out");
        ck_assert_int_ge(poll(pfd, 2, 100), 0);
        for (int i = 0; i < 2; i++) {
            if (pfd[i].revents & POLLIN) {
                sock_rx(side[i], i);
            }
            if (pfd[i].revents & POLLOUT) {
                sock_tx(side[i], i);
            }
        }
    }
    ck_assert_uint_eq(A.term_sent + B.term_sent, 0);
}

static void connect_pair(bool crc, bool markers)
{
    struct epf_params pa = { .initiator = true, .atomics = true };
    struct epf_params pb = { .atomics = true };
    struct rnic_mpa_result res[2];
    struct epf_rng rng = { 77 };

    tcp_pair();
    handshake(crc, markers, res);
    pa.mpa = res[0];
    pb.mpa = res[1];
    epf_init(&A, &pa, 10);
    epf_init(&B, &pb, 20);
    epf_fill(epf_ptr(&A, SRC_OFF), 1 << 20, &rng);
    epf_fill(epf_ptr(&B, SRC_OFF), 1 << 20, &rng);
    /* FPDUs that came in the same read as the MPA frame */
    ck_assert_int_eq(rnic_ep_rx(A.ep, early[0], early_len[0]), 0);
    ck_assert_int_eq(rnic_ep_rx(B.ep, early[1], early_len[1]), 0);
}

static void teardown(void)
{
    for (int i = 0; i < 2; i++) {
        if (fd[i] >= 0) {
            close(fd[i]);
            fd[i] = -1;
        }
    }
    epf_fini(&A);
    epf_fini(&B);
}

static void check_cqe(struct rnic_cq *cq, uint64_t id, enum rnic_wc_opcode op,
                      uint32_t len)
{
    struct rnic_cqe c = epf_cqe(cq);

    ck_assert_uint_eq(c.wr_id, id);
    ck_assert_int_eq(c.status, RNIC_WC_SUCCESS);
    ck_assert_int_eq(c.opcode, op);
    ck_assert_uint_eq(c.byte_len, len);
}

/* Posts @n one-SGE WRs on A and a receive on B; all must succeed. */
static void post_and_complete(struct rnic_send_wr *wr, int n,
                              uint64_t recv_id)
{
    epf_post_recv(&B, recv_id, DST_OFF, 100000);
    for (int i = 0; i < n; i++) {
        epf_post(&A, &wr[i]);
    }
    run_until(n, 1);
    for (int i = 0; i < n; i++) {
        check_cqe(A.scq, wr[i].wr_id, rnic_wc_opcode_of(wr[i].opcode),
                  wr[i].num_sge ? wr[i].sge[0].length : 0);
    }
}

static void lb_send_write_read(void)
{
    uint32_t wstag = epf_mr(&B, DST_OFF, 1 << 20, RNIC_ACCESS_REMOTE_WRITE |
                            RNIC_ACCESS_LOCAL_WRITE, RNIC_STAG_PERSISTENT,
                            false);
    uint32_t rstag = epf_mr(&B, SRC_OFF, 1 << 20, RNIC_ACCESS_REMOTE_READ,
                            RNIC_STAG_PERSISTENT, false);
    struct rnic_send_wr wr[3] = {
        epf_wr(1, RNIC_WR_SEND, A.lkey, SRC_OFF, 100000),
        epf_wr(2, RNIC_WR_WRITE, A.lkey, SRC_OFF + 7, 200000),
        epf_wr(3, RNIC_WR_READ, A.lkey, DST_OFF, 300000),
    };

    wr[1].remote_stag = wstag;
    wr[1].remote_to = epf_addr(DST_OFF + 300000);
    wr[2].remote_stag = rstag;
    wr[2].remote_to = epf_addr(SRC_OFF + 3);
    post_and_complete(wr, 3, 9);
    check_cqe(B.rcq, 9, RNIC_WC_RECV, 100000);
    ck_assert_int_eq(memcmp(epf_ptr(&B, DST_OFF), epf_ptr(&A, SRC_OFF),
                            100000), 0);
    ck_assert_int_eq(memcmp(epf_ptr(&B, DST_OFF + 300000),
                            epf_ptr(&A, SRC_OFF + 7), 200000), 0);
    ck_assert_int_eq(memcmp(epf_ptr(&A, DST_OFF), epf_ptr(&B, SRC_OFF + 3),
                            300000), 0);
}

static void lb_atomics_imm(void)
{
    uint32_t astag = epf_mr(&B, ATOM_OFF, 64, RNIC_ACCESS_REMOTE_ATOMIC |
                            RNIC_ACCESS_LOCAL_WRITE, RNIC_STAG_PERSISTENT,
                            false);
    struct rnic_send_wr wr[3] = {
        epf_wr(4, RNIC_WR_ATOMIC_FETCH_ADD, A.lkey, ATOM_OFF, 8),
        epf_wr(5, RNIC_WR_ATOMIC_CMP_SWAP, A.lkey, ATOM_OFF + 8, 8),
        { .wr_id = 6, .opcode = RNIC_WR_IMM_DATA_SE,
          .flags = RNIC_WR_SIGNALED, .imm_data = 0xcafef00d },
    };
    struct rnic_cqe c;

    memset(epf_ptr(&B, ATOM_OFF), 0, 8);
    epf_ptr(&B, ATOM_OFF)[0] = 40;
    for (int i = 0; i < 2; i++) {
        wr[i].remote_stag = astag;
        wr[i].remote_to = epf_addr(ATOM_OFF);
    }
    wr[0].atomic_add_or_compare = 2;
    wr[1].atomic_add_or_compare = 42;
    wr[1].atomic_swap = 0x1122334455667788ull;
    post_and_complete(wr, 3, 10);
    ck_assert_uint_eq(epf_ptr(&A, ATOM_OFF)[0], 40);
    ck_assert_uint_eq(epf_ptr(&A, ATOM_OFF + 8)[0], 42);
    ck_assert_uint_eq(epf_ptr(&B, ATOM_OFF)[0], 0x88);
    ck_assert_uint_eq(epf_ptr(&B, ATOM_OFF)[7], 0x11);
    c = epf_cqe(B.rcq);
    ck_assert_uint_eq(c.imm_data, 0xcafef00d);
    ck_assert_uint_eq(c.flags, RNIC_WC_WITH_IMM | RNIC_WC_SOLICITED);
}

/* Graceful close: both QPs drain to CLOSING, then the LLP goes: IDLE. */
static void lb_close(void)
{
    ck_assert_int_eq(rnic_ep_modify(A.ep, RNIC_QP_CLOSING), 0);
    ck_assert_int_eq(rnic_ep_modify(B.ep, RNIC_QP_CLOSING), 0);
    ck_assert_int_eq(shutdown(fd[0], SHUT_WR), 0);
    ck_assert_int_eq(shutdown(fd[1], SHUT_WR), 0);
    rnic_ep_connection_closed(A.ep);
    rnic_ep_connection_closed(B.ep);
    ck_assert_int_eq(A.qp->state, RNIC_QP_IDLE);
    ck_assert_int_eq(B.qp->state, RNIC_QP_IDLE);
    epf_no_cqe(A.scq);
    epf_no_cqe(B.rcq);
}

START_TEST(test_loopback)
{
    connect_pair(_i & 1, _i & 2);
    lb_send_write_read();
    lb_atomics_imm();
    lb_close();
}
END_TEST

Suite *loopback_suite(void)
{
    Suite *s = suite_create("loopback");
    TCase *tc = tcase_create("loopback");

    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_loop_test(tc, test_loopback, 0, 4);
    suite_add_tcase(s, tc);
    return s;
}
