/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Scale soak: two QEMU processes, each with its rnic on its own IOThread.
 * Device a holds SOAK_QPS queue pairs (every one created, most idle);
 * SOAK_CONNS of them, spread over the whole QP table, are connected one
 * to one with QPs of device b.  Then every connection moves traffic at
 * the same time, ROUNDS times, each round with all its work posted on all
 * connections before any completion is reaped: a -> b an RDMA Write and a
 * Send, b -> a a Send, every one signalled.  Every completion must come
 * exactly once (wr_id = kind, round, connection; a second one or a
 * missing one fails), with the right QP, opcode, status and length, and
 * every Send's and Write's bytes must be where they were sent.  Then
 * everything is destroyed and no event may have been lost.
 *
 * Prints host memory per idle and per connected QP (the QEMU process's
 * RSS delta, guest rings and buffers touched beforehand so that only
 * the device's own memory counts):
 *   soak: NAME VALUE UNIT
 * /rnic/soak/one-iothread does the same with both devices in one QEMU on
 * one IOThread, which then carries both ends of every connection.
 * `make soak` runs both (so does `make e2e`), `make check` the first.
 * SOAK_QPS / SOAK_CONNS in the environment override the sizes.
 */
#include "qemu/osdep.h"
#include <sys/resource.h>
#include "qemu/bswap.h"
#include "libqos/rnic.h"

#define QP_LOG      2               /* 4 WQEs: 2 rounds of 2 Sends in flight */
#define CQ_LOG      14
#define EQ_LOG      12
#define ROUNDS      6
#define INFLIGHT    2               /* rounds posted before reaping */
#define PAGE        4096
#define WRITE_LEN   512             /* at slot * WRITE_LEN */
#define SEND_LEN    256
#define SEND_SRC    1024            /* + slot * SEND_LEN */
#define RECV_BUF    2048            /* + slot * SEND_LEN */
#define MR_ACCESS   (RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_WRITE)

enum { K_A_WRITE, K_A_SEND, K_A_RECV, K_B_SEND, K_B_RECV, K_NUM };

typedef struct SoakDev {
    QRnic t;
    uint32_t pdn, cqn, stag, cq_cons, nqps;
    uint64_t cq_ring, buf, rings;
    QRnicQp *qps;
} SoakDev;

static uint32_t soak_qps, soak_conns;
static uint8_t *seen;                  /* [kind][round][conn] */

static uint32_t soak_env(const char *name, uint32_t dflt)
{
    const char *v = g_getenv(name);

    return v ? (uint32_t)g_ascii_strtoull(v, NULL, 10) : dflt;
}

/* Device a's QP of connection @c: spread over the whole table. */
static uint32_t soak_a_index(uint32_t c)
{
    return (uint64_t)c * soak_qps / soak_conns;
}

static uint64_t soak_rss_kib(SoakDev *d)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/status",
                                            qtest_pid(d->t.qts));
    g_autofree char *text = NULL;
    const char *p;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    p = strstr(text, "VmRSS:");
    g_assert_nonnull(p);
    return g_ascii_strtoull(p + 6, NULL, 10);
}

/*
 * A QEMU holds one socket per connection end it carries (@ends) plus its
 * own few dozen: the soft limit is raised to the hard one (inherited by
 * QEMU), and the hard one too where we may (root), which must leave room.
 */
static void soak_fd_limit(uint32_t ends)
{
    rlim_t need = ends * soak_conns + 256 + 1;
    struct rlimit rl;

    g_assert_cmpint(getrlimit(RLIMIT_NOFILE, &rl), ==, 0);
    if (rl.rlim_max < need) {
        struct rlimit up = { .rlim_cur = need, .rlim_max = need };

        if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
            rl = up;
        }
    }
    rl.rlim_cur = rl.rlim_max;
    g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &rl), ==, 0);
    printf("soak: rlimit-nofile %llu fds (needs > %llu)\n",
           (unsigned long long)rl.rlim_cur, (unsigned long long)need - 1);
    g_assert_cmpuint(rl.rlim_cur, >=, need);
}

/* -device rnic options on IOThread @io, and that IOThread if @object. */
static char *soak_args(const char *io, uint32_t nqps, bool object)
{
    return g_strdup_printf(
        ",iothread=%s,max-qps=%u,max-cqes=%u,listen-allow=127.0.0.1,"
        "peer-allow=127.0.0.1%s%s%s", io, nqps, 1u << CQ_LOG,
        object ? " -m 512M -object iothread,id=" : "", object ? io : "",
        object ? " " : "");
}

/* Rings, a PD, a CQ and one MR over every connection's page. */
static void soak_setup(SoakDev *d, uint32_t nqps)
{
    uint64_t bytes = (uint64_t)soak_conns * PAGE;

    d->t.eq_log = EQ_LOG;
    qrnic_test_enable(&d->t);
    d->nqps = nqps;
    d->qps = g_new0(QRnicQp, nqps);
    d->pdn = qrnic_create_pd(&d->t);
    d->cqn = qrnic_create_cq(&d->t, CQ_LOG, 1, &d->cq_ring);
    d->buf = guest_alloc(d->t.alloc, bytes);
    qtest_memset(d->t.qts, d->buf, 0, bytes);
    g_assert_cmphex(qrnic_reg_mr(&d->t, d->pdn, d->buf, bytes, MR_ACCESS, 1,
                                 &d->stag), ==, RNIC_CMD_OK);
    /* One SQ page and one RQ page per QP, touched now: not the device's. */
    d->rings = guest_alloc(d->t.alloc, (uint64_t)nqps * 2 * PAGE);
    qtest_memset(d->t.qts, d->rings, 0, (uint64_t)nqps * 2 * PAGE);
}

/* A QEMU process of its own, with its own IOThread. */
static void soak_start(SoakDev *d, const char *io, uint32_t nqps)
{
    g_autofree char *args = soak_args(io, nqps, true);

    memset(d, 0, sizeof(*d));
    qrnic_test_start(&d->t, args);
    soak_setup(d, nqps);
}

static void soak_create_qps(SoakDev *d)
{
    for (uint32_t i = 0; i < d->nqps; i++) {
        uint64_t sq = d->rings + (uint64_t)i * 2 * PAGE;

        g_assert_cmphex(qrnic_create_qp_at(&d->t, d->pdn, d->cqn, d->cqn,
                                           QP_LOG, sq, sq + PAGE, &d->qps[i]),
                        ==, RNIC_CMD_OK);
    }
}

static void soak_expect_event(SoakDev *d, uint8_t type, struct rnic_event *ev)
{
    gint64 end = g_get_monotonic_time() + QRNIC_TIMEOUT_US;

    while (!qrnic_next_event(&d->t, ev)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(d->t.qts, 1000);
    }
    g_assert_cmpuint(ev->type, ==, type);
}

/* One listener on a; b's QP c connects, a's QP soak_a_index(c) accepts. */
static void soak_connect_all(SoakDev *a, SoakDev *b)
{
    struct rnic_cmd_listen l = {
        .local = qrnic_loopback(0),
        .backlog = 4,
    };
    struct rnic_conn_param param = {
        .ird = cpu_to_le16(1), .ord = cpu_to_le16(1),
    };
    struct rnic_cmd cmd = qrnic_cmd_ok(&a->t, RNIC_CMD_LISTEN, &l, sizeof(l));
    struct rnic_event ev;

    for (uint32_t c = 0; c < soak_conns; c++) {
        uint32_t qpa = a->qps[soak_a_index(c)].qpn;

        struct rnic_cmd_connect k = {
            .qpn = cpu_to_le32(b->qps[c].qpn),
            .peer = ((struct rnic_cmd_listen *)cmd.u.raw)->local,
            .param = param,
        };
        struct rnic_cmd_accept acc = {
            .qpn = cpu_to_le32(qpa), .param = param,
        };

        qrnic_cmd_ok(&b->t, RNIC_CMD_CONNECT, &k, sizeof(k));
        soak_expect_event(a, RNIC_EV_CONN_REQUEST, &ev);
        acc.conn_id = ev.id;
        qrnic_cmd_ok(&a->t, RNIC_CMD_ACCEPT, &acc, sizeof(acc));
        soak_expect_event(a, RNIC_EV_CONN_ESTABLISHED, &ev);
        g_assert_cmpuint(le32_to_cpu(ev.id), ==, qpa);
        soak_expect_event(b, RNIC_EV_CONN_ESTABLISHED, &ev);
        g_assert_cmpuint(le32_to_cpu(ev.id), ==, b->qps[c].qpn);
    }
}

static uint64_t soak_wr_id(int kind, uint32_t round, uint32_t c)
{
    return (uint64_t)kind << 48 | (uint64_t)round << 24 | c;
}

/* The bytes connection @c sends in @round (@kind: which message). */
static void soak_pattern(uint8_t *p, size_t len, int kind, uint32_t round,
                         uint32_t c)
{
    uint32_t x = (kind * 0x9e3779b9u) ^ (round * 0x85ebca6bu) ^
                 (c * 0xc2b2ae35u) ^ 1;

    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = x;
    }
}

static struct rnic_wqe_sge soak_sge(SoakDev *d, uint32_t c, uint32_t off,
                                    uint32_t len)
{
    return qrnic_sge(d->stag, QRNIC_MR_IOVA + (uint64_t)c * PAGE + off, len);
}

static void soak_post_recv(SoakDev *d, QRnicQp *qp, int kind,
                           uint32_t round, uint32_t c)
{
    struct rnic_rq_wqe w = {
        .wr_id = cpu_to_le64(soak_wr_id(kind, round, c)),
        .num_sge = 1,
        .sge[0] = soak_sge(d, c, RECV_BUF + round % INFLIGHT * SEND_LEN,
                           SEND_LEN),
    };

    qrnic_post_recv(&d->t, qp, &w);
}

/* A Send of this round's pattern, staged in @d's send slot first. */
static void soak_post_send(SoakDev *d, QRnicQp *qp, int kind,
                           uint32_t round, uint32_t c)
{
    uint32_t off = SEND_SRC + round % INFLIGHT * SEND_LEN;
    uint8_t data[SEND_LEN];
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(soak_wr_id(kind, round, c)),
        .opcode = RNIC_WQE_SEND,
        .flags = RNIC_WQE_FLAG_SIGNALED,
        .num_sge = 1,
        .sge[0] = soak_sge(d, c, off, SEND_LEN),
    };

    soak_pattern(data, sizeof(data), kind, round, c);
    qtest_memwrite(d->t.qts, d->buf + (uint64_t)c * PAGE + off, data,
                   sizeof(data));
    qrnic_post_send(&d->t, qp, &w);
}

/* a's Write of this round's pattern into b's page of connection @c. */
static void soak_post_write(SoakDev *a, SoakDev *b, QRnicQp *qp,
                            uint32_t round, uint32_t c)
{
    uint32_t slot = round % INFLIGHT * WRITE_LEN;
    uint8_t data[WRITE_LEN];
    struct rnic_sq_wqe w = {
        .wr_id = cpu_to_le64(soak_wr_id(K_A_WRITE, round, c)),
        .opcode = RNIC_WQE_WRITE,
        .flags = RNIC_WQE_FLAG_SIGNALED,
        .num_sge = 1,
        .sge[0] = soak_sge(a, c, slot, WRITE_LEN),
        .remote_stag = cpu_to_le32(b->stag),
        .remote_addr = cpu_to_le64(QRNIC_MR_IOVA + (uint64_t)c * PAGE +
                                   slot),
    };

    soak_pattern(data, sizeof(data), K_A_WRITE, round, c);
    qtest_memwrite(a->t.qts, a->buf + (uint64_t)c * PAGE + slot, data,
                   sizeof(data));
    qrnic_post_send(&a->t, qp, &w);
}

static void soak_post_round(SoakDev *a, SoakDev *b, uint32_t round)
{
    for (uint32_t c = 0; c < soak_conns; c++) {
        QRnicQp *qa = &a->qps[soak_a_index(c)], *qb = &b->qps[c];

        soak_post_recv(b, qb, K_B_RECV, round, c);
        soak_post_recv(a, qa, K_A_RECV, round, c);
        soak_post_write(a, b, qa, round, c);
        soak_post_send(a, qa, K_A_SEND, round, c);
        soak_post_send(b, qb, K_B_SEND, round, c);
    }
}

/* Marks one completion seen; a second one of the same WR fails. */
static void soak_check_cqe(SoakDev *d, bool is_a,
                           const struct rnic_cq_entry *e)
{
    uint64_t id = le64_to_cpu(e->wr_id);
    int kind = id >> 48;
    uint32_t round = (id >> 24) & 0xffffff, c = id & 0xffffff;
    uint32_t qpn;
    uint8_t op;

    g_assert_cmpuint(e->status, ==, RNIC_CQE_SUCCESS);
    g_assert_cmpint(kind, <, K_NUM);
    g_assert_cmpuint(round, <, ROUNDS);
    g_assert_cmpuint(c, <, soak_conns);
    g_assert_true(is_a == (kind <= K_A_RECV));
    qpn = is_a ? d->qps[soak_a_index(c)].qpn : d->qps[c].qpn;
    g_assert_cmpuint(le32_to_cpu(e->qpn), ==, qpn);
    op = kind == K_A_WRITE ? RNIC_WQE_WRITE :
         kind == K_A_RECV || kind == K_B_RECV ? RNIC_WQE_RECV : RNIC_WQE_SEND;
    g_assert_cmpuint(e->opcode, ==, op);
    if (op == RNIC_WQE_RECV) {
        g_assert_cmpuint(le32_to_cpu(e->byte_len), ==, SEND_LEN);
    }
    g_assert_cmpuint(seen[((size_t)kind * ROUNDS + round) * soak_conns + c],
                     ==, 0);
    seen[((size_t)kind * ROUNDS + round) * soak_conns + c] = 1;
}

/* Reaps what is there, a chunk of the ring per qtest read. */
static uint32_t soak_reap(SoakDev *d, bool is_a)
{
    enum { CHUNK = 256 };
    struct rnic_cq_entry e[CHUNK];
    uint32_t mask = (1u << CQ_LOG) - 1, got = 0;

    for (;;) {
        uint32_t idx = d->cq_cons & mask, n = MIN(CHUNK, mask + 1 - idx);
        uint8_t phase = ((d->cq_cons >> CQ_LOG) & 1) ^ 1;
        uint32_t i;

        qtest_memread(d->t.qts, d->cq_ring + idx * RNIC_CQE_SIZE, e,
                      n * sizeof(e[0]));
        for (i = 0; i < n && e[i].phase == phase; i++) {
            soak_check_cqe(d, is_a, &e[i]);
        }
        d->cq_cons += i;
        got += i;
        if (i) {
            qrnic_wr(&d->t, RNIC_REG_DB_CQ, RNIC_DB_VALUE(d->cqn, d->cq_cons));
        }
        if (i < n) {
            return got;
        }
    }
}

/* Waits for @want completions on each device; fails on one too many. */
static void soak_reap_all(SoakDev *a, SoakDev *b, uint32_t want_a,
                          uint32_t want_b)
{
    gint64 end = g_get_monotonic_time() + 120 * G_USEC_PER_SEC;
    uint32_t got_a = 0, got_b = 0;

    while (got_a < want_a || got_b < want_b) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        got_a += soak_reap(a, true);
        got_b += soak_reap(b, false);
        qtest_clock_step(a->t.qts, 1000);
        qtest_clock_step(b->t.qts, 1000);
    }
    g_usleep(50 * 1000);
    g_assert_cmpuint(got_a + soak_reap(a, true), ==, want_a);
    g_assert_cmpuint(got_b + soak_reap(b, false), ==, want_b);
}

/* Every completion of @round came; the bytes are where they were sent. */
static void soak_verify_round(SoakDev *a, SoakDev *b, uint32_t round)
{
    size_t bytes = (size_t)soak_conns * PAGE;
    g_autofree uint8_t *ma = g_malloc(bytes), *mb = g_malloc(bytes);
    uint8_t want[WRITE_LEN];

    qtest_memread(a->t.qts, a->buf, ma, bytes);
    qtest_memread(b->t.qts, b->buf, mb, bytes);
    for (uint32_t c = 0; c < soak_conns; c++) {
        const uint8_t *pa = ma + (size_t)c * PAGE, *pb = mb + (size_t)c * PAGE;
        uint32_t recv = RECV_BUF + round % INFLIGHT * SEND_LEN;

        for (int k = 0; k < K_NUM; k++) {
            g_assert_cmpuint(seen[((size_t)k * ROUNDS + round) * soak_conns +
                                  c], ==, 1);
        }
        soak_pattern(want, WRITE_LEN, K_A_WRITE, round, c);
        g_assert_cmpmem(pb + round % INFLIGHT * WRITE_LEN, WRITE_LEN, want,
                        WRITE_LEN);
        soak_pattern(want, SEND_LEN, K_A_SEND, round, c);
        g_assert_cmpmem(pb + recv, SEND_LEN, want, SEND_LEN);
        soak_pattern(want, SEND_LEN, K_B_SEND, round, c);
        g_assert_cmpmem(pa + recv, SEND_LEN, want, SEND_LEN);
    }
}

/*
 * Returns a's RSS once the first rounds' completions are in: before the
 * checks read megabytes through qtest, which QEMU's heap keeps.
 */
static uint64_t soak_traffic(SoakDev *a, SoakDev *b)
{
    gint64 t0 = g_get_monotonic_time();
    uint64_t rss = 0;

    for (uint32_t r = 0; r < ROUNDS; r += INFLIGHT) {
        for (uint32_t i = 0; i < INFLIGHT; i++) {
            soak_post_round(a, b, r + i);
        }
        /* a: Write, Send, Recv per connection; b: Send, Recv. */
        soak_reap_all(a, b, 3 * INFLIGHT * soak_conns,
                      2 * INFLIGHT * soak_conns);
        rss = rss ?: soak_rss_kib(a);
        for (uint32_t i = 0; i < INFLIGHT; i++) {
            soak_verify_round(a, b, r + i);
        }
    }
    printf("soak: traffic %u connections x %u rounds (%u completions) "
           "in %.1f s\n", soak_conns, ROUNDS, 5 * ROUNDS * soak_conns,
           (g_get_monotonic_time() - t0) / 1e6);
    return rss;
}

/* Destroys every QP, then takes every event: none may have been dropped. */
static void soak_teardown(SoakDev *d)
{
    struct rnic_event ev;

    for (uint32_t i = 0; i < d->nqps; i++) {
        struct rnic_cmd_qp q = { .qpn = cpu_to_le32(d->qps[i].qpn) };

        qrnic_cmd_ok(&d->t, RNIC_CMD_DESTROY_QP, &q, sizeof(q));
    }
    qrnic_settle(&d->t);
    while (qrnic_next_event(&d->t, &ev)) {
        /* the peers' disconnects */
    }
    g_assert_cmphex(qrnic_rd(&d->t, RNIC_REG_STATUS) &
                    RNIC_STATUS_EQ_OVERFLOW, ==, 0);
}

static void soak_report(const char *name, double kib, uint32_t n)
{
    printf("soak: %s %.2f KiB/QP (RSS +%.0f KiB over %u QPs)\n", name,
           kib / n, kib, n);
    fflush(stdout);
}

/*
 * Creates, connects, moves traffic, tears down.  The RSS figures are
 * device a's alone when b is in another process (@own_process).
 */
static void soak_run(SoakDev *a, SoakDev *b, bool own_process)
{
    uint64_t rss0, rss_idle, rss_conn, rss_active;
    gint64 t0;

    seen = g_malloc0((size_t)K_NUM * ROUNDS * soak_conns);

    rss0 = soak_rss_kib(a);
    t0 = g_get_monotonic_time();
    soak_create_qps(a);
    rss_idle = soak_rss_kib(a);
    printf("soak: created %u QPs on one device in %.1f s\n", soak_qps,
           (g_get_monotonic_time() - t0) / 1e6);
    soak_report("qp-idle-host-rss", rss_idle - rss0, soak_qps);

    soak_create_qps(b);
    t0 = g_get_monotonic_time();
    soak_connect_all(a, b);
    rss_conn = soak_rss_kib(a);
    printf("soak: connected %u QP pairs in %.1f s\n", soak_conns,
           (g_get_monotonic_time() - t0) / 1e6);
    if (own_process) {
        soak_report("qp-connected-host-rss", rss_conn - rss_idle,
                    soak_conns);
    }

    rss_active = soak_traffic(a, b);
    if (own_process) {
        soak_report("qp-active-host-rss", rss_active - rss_idle,
                    soak_conns);
    }

    soak_teardown(b);
    soak_teardown(a);
    g_free(seen);
    g_free(a->qps);
    g_free(b->qps);
    qrnic_test_stop(&b->t);
    qrnic_test_stop(&a->t);
}

/* Two QEMU processes, each device on its own IOThread. */
static void test_soak(void)
{
    SoakDev a, b;

    soak_fd_limit(1);
    soak_start(&a, "ioa", soak_qps);
    soak_start(&b, "iob", soak_conns);
    soak_run(&a, &b, true);
}

/* Both devices in one QEMU on one IOThread: it carries both ends. */
static void test_soak_one_iothread(void)
{
    g_autofree char *args_a = soak_args("io0", soak_qps, true);
    g_autofree char *args_b = soak_args("io0", soak_conns, false);
    SoakDev a = { 0 }, b = { 0 };

    soak_fd_limit(2);
    qrnic_test_start_pair(&a.t, &b.t, args_a, args_b);
    soak_setup(&a, soak_qps);
    soak_setup(&b, soak_conns);
    soak_run(&a, &b, false);
}


int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    soak_qps = soak_env("SOAK_QPS", 10000);
    soak_conns = soak_env("SOAK_CONNS", 1000);
    g_assert_cmpuint(soak_conns, >=, 1);
    g_assert_cmpuint(soak_conns, <=, soak_qps);
    qtest_add_func("/rnic/soak/qps-connections-traffic", test_soak);
    qtest_add_func("/rnic/soak/one-iothread", test_soak_one_iothread);
    return g_test_run();
}
