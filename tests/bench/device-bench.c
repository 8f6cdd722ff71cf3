/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device's own speed, with no guest CPU in the way: two QEMU
 * processes, each with -device rnic, driven through qtest (rings in guest
 * memory, doorbells, CQ polling) and connected over 127.0.0.1.  Each
 * figure is printed against raw TCP between two processes measured in
 * the same run, as the core's bench does:
 *   bench: NAME VALUE UNIT ratio=R (vs BASELINE)
 *  - dev-write-1m: MB/s of 1 MiB RDMA Writes (the last one known placed
 *    when a Send behind it arrives), vs a TCP stream between processes;
 *  - dev-read-1m: MB/s of 1 MiB RDMA Reads, same baseline;
 *  - dev-send-64-rtt: microseconds per round trip of a 64-byte Send
 *    answered by one, vs TCP ping-pong between processes.
 * Each with MPA CRC32c required (-crc) and off (-nocrc), then again with
 * each process's device on its own IOThread (-crc-iothread,
 * -nocrc-iothread: -object iothread -device rnic,iothread=).  Polling goes
 * through qtest's socket, which the latency figure includes; the
 * bandwidth runs poll every NAP_US microseconds, not without pause.
 * Built in QEMU's qtest tree (laid there as rnic-device-bench.c); `make
 * bench` runs it.
 */
#include "qemu/osdep.h"
#include <netinet/tcp.h>
#include <sys/wait.h>
#include "qemu/bswap.h"
#include "libqos/rnic.h"

#define RUNS        5
#define XFERS       64              /* 1 MiB transfers per timed run */
#define MIB         (1024 * 1024)
#define PINGS       200
#define NAP_US      200             /* between polls of a bandwidth run */
#define QP_LOG      7
#define CQ_LOG      8
#define SMALL       (MIB)           /* offset of the 64-byte buffers */
#define BUF         (MIB + 4096)

typedef struct Dev {
    RnicTest t;
    uint32_t pdn, cqn, stag, cq_cons;
    uint64_t cq_ring, buf;
    RnicTestQp qp;
} Dev;

static double now(void)
{
    return g_get_monotonic_time() / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double median(double *v)
{
    qsort(v, RUNS, sizeof(*v), cmp_double);
    return v[RUNS / 2];
}

static void report(const char *name, double value, const char *unit,
                   const char *base_name, double base)
{
    printf("bench: %s %.3g %s ratio=%.2f (vs %s %.3g %s)\n", name, value,
           unit, value / base, base_name, base, unit);
    fflush(stdout);
}

static void dev_start(Dev *d, const char *args)
{
    const uint32_t access = RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_READ |
                            RNIC_ACC_REMOTE_WRITE;

    memset(d, 0, sizeof(*d));
    rnic_test_start(&d->t, args);
    rnic_test_enable(&d->t);
    d->pdn = rnic_create_pd(&d->t);
    d->cqn = rnic_create_cq(&d->t, CQ_LOG, 1, &d->cq_ring);
    g_assert_cmphex(rnic_try_create_qp(&d->t, d->pdn, d->cqn, d->cqn, QP_LOG,
                                       &d->qp), ==, RNIC_CMD_OK);
    d->buf = guest_alloc(d->t.alloc, BUF);
    g_assert_cmphex(rnic_reg_mr(&d->t, d->pdn, d->buf, BUF, access, 1,
                                &d->stag), ==, RNIC_CMD_OK);
}

/*
 * Polls without sleeping when @nap is 0: the latency figure depends on
 * it.  The bandwidth runs sleep @nap microseconds between polls: each
 * poll is a qtest round trip that the QEMU process answers on its main
 * loop, and on a machine of two cores the spinning poller competes with
 * the data path for the CPU.
 */
static void dev_cqe(Dev *d, uint8_t opcode, int nap)
{
    struct rnic_cq_entry e;
    gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    while (!rnic_read_cqe(&d->t, d->cq_ring, CQ_LOG, d->cq_cons, &e)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        if (nap) {
            g_usleep(nap);
        }
    }
    g_assert_cmpuint(e.status, ==, RNIC_CQE_SUCCESS);
    g_assert_cmpuint(e.opcode, ==, opcode);
    d->cq_cons++;
    rnic_wr(&d->t, RNIC_REG_DB_CQ, RNIC_DB_VALUE(d->cqn, d->cq_cons));
}

static struct rnic_wqe_sge dev_sge(Dev *d, uint32_t off, uint32_t len)
{
    return (struct rnic_wqe_sge) {
        .addr = cpu_to_le64(RNIC_TEST_MR_IOVA + off),
        .length = cpu_to_le32(len),
        .stag = cpu_to_le32(d->stag),
    };
}

static void dev_post_recv(Dev *d)
{
    struct rnic_rq_wqe w = {
        .num_sge = 1,
        .sge[0] = dev_sge(d, SMALL, 64),
    };

    rnic_post_recv(&d->t, &d->qp, &w);
}

static void dev_post(Dev *d, uint8_t opcode, Dev *peer, uint32_t len)
{
    struct rnic_sq_wqe w = {
        .opcode = opcode,
        .flags = RNIC_WQE_FLAG_SIGNALED,
        .num_sge = 1,
        .sge[0] = dev_sge(d, opcode == RNIC_WQE_SEND ? SMALL : 0, len),
        .remote_stag = cpu_to_le32(peer->stag),
        .remote_addr = cpu_to_le64(RNIC_TEST_MR_IOVA),
    };

    rnic_post_send(&d->t, &d->qp, &w);
}

/* XFERS Writes b -> a, then a Send: its arrival says all are placed. */
static double dev_write_run(Dev *a, Dev *b)
{
    double t0;

    dev_post_recv(a);
    t0 = now();
    for (int i = 0; i < XFERS; i++) {
        dev_post(b, RNIC_WQE_WRITE, a, MIB);
    }
    dev_post(b, RNIC_WQE_SEND, a, 64);
    for (int i = 0; i < XFERS; i++) {
        dev_cqe(b, RNIC_WQE_WRITE, NAP_US);
    }
    dev_cqe(b, RNIC_WQE_SEND, NAP_US);
    dev_cqe(a, RNIC_WQE_RECV, NAP_US);
    return now() - t0;
}

static double dev_read_run(Dev *a, Dev *b)
{
    double t0 = now();

    for (int i = 0; i < XFERS; i++) {
        dev_post(b, RNIC_WQE_READ, a, MIB);
    }
    for (int i = 0; i < XFERS; i++) {
        dev_cqe(b, RNIC_WQE_READ, NAP_US);
    }
    return now() - t0;
}

static double dev_pingpong_run(Dev *a, Dev *b)
{
    double t0 = now();

    for (int i = 0; i < PINGS; i++) {
        dev_post_recv(a);
        dev_post_recv(b);
        /* A Send completes once handed to TCP: before the peer has it. */
        dev_post(b, RNIC_WQE_SEND, a, 64);
        dev_cqe(b, RNIC_WQE_SEND, 0);
        dev_cqe(a, RNIC_WQE_RECV, 0);
        dev_post(a, RNIC_WQE_SEND, b, 64);
        dev_cqe(a, RNIC_WQE_SEND, 0);
        dev_cqe(b, RNIC_WQE_RECV, 0);
    }
    return (now() - t0) / PINGS;
}

/* ---- raw TCP between two processes: the baseline ---- */

/* The child writes XFERS MiB, or echoes 64-byte messages, then exits. */
static void tcp_child(int fd, bool echo)
{
    static char buf[MIB];

    for (int r = 0; r < RUNS; r++) {
        for (int i = 0; i < (echo ? PINGS : XFERS); i++) {
            if (echo) {
                rnic_read_full(fd, buf, 64);
            }
            rnic_write_full(fd, buf, echo ? 64 : MIB);
        }
    }
    _exit(0);
}

static int tcp_fork(bool echo, pid_t *pid)
{
    uint16_t port;
    int lfd = rnic_tcp_listen(&port), fd, one = 1;

    *pid = fork();
    g_assert_cmpint(*pid, >=, 0);
    if (!*pid) {
        fd = rnic_tcp_connect(port, 0);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        tcp_child(fd, echo);
    }
    fd = rnic_tcp_accept(lfd);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    close(lfd);
    return fd;
}

static void tcp_baselines(double *mbs, double *rtt_us)
{
    static char buf[MIB];
    double t[RUNS];
    pid_t pid;
    int fd = tcp_fork(false, &pid);

    for (int r = 0; r < RUNS; r++) {
        double t0 = now();

        for (int i = 0; i < XFERS; i++) {
            rnic_read_full(fd, buf, MIB);
        }
        t[r] = now() - t0;
    }
    *mbs = XFERS * (double)MIB / 1e6 / median(t);
    close(fd);
    waitpid(pid, NULL, 0);

    fd = tcp_fork(true, &pid);
    for (int r = 0; r < RUNS; r++) {
        double t0 = now();

        for (int i = 0; i < PINGS; i++) {
            rnic_write_full(fd, buf, 64);
            rnic_read_full(fd, buf, 64);
        }
        t[r] = (now() - t0) / PINGS;
    }
    *rtt_us = median(t) * 1e6;
    close(fd);
    waitpid(pid, NULL, 0);
}

/* One pair of QEMU processes with -device rnic@args, every figure. */
static void bench_pair(const char *suffix, const char *args, double tcp_mbs,
                       double tcp_rtt)
{
    g_autofree char *wr = g_strdup_printf("dev-write-1m%s", suffix);
    g_autofree char *rd = g_strdup_printf("dev-read-1m%s", suffix);
    g_autofree char *rtt = g_strdup_printf("dev-send-64-rtt%s", suffix);
    double t[RUNS];
    Dev a, b;

    dev_start(&a, args);
    dev_start(&b, args);
    rnic_connect_qps(&a.t, a.qp.qpn, &b.t, b.qp.qpn, 16);
    for (int r = 0; r < RUNS; r++) {
        t[r] = dev_write_run(&a, &b);
    }
    report(wr, XFERS * (double)MIB / 1e6 / median(t), "MB/s", "tcp-2proc",
           tcp_mbs);
    for (int r = 0; r < RUNS; r++) {
        t[r] = dev_read_run(&a, &b);
    }
    report(rd, XFERS * (double)MIB / 1e6 / median(t), "MB/s", "tcp-2proc",
           tcp_mbs);
    for (int r = 0; r < RUNS; r++) {
        t[r] = dev_pingpong_run(&a, &b) * 1e6;
    }
    report(rtt, median(t), "us", "tcp-2proc-64-rtt", tcp_rtt);
    rnic_test_stop(&b.t);
    rnic_test_stop(&a.t);
}

/* QEMU_BENCH_ARGS adds to every device's options (e.g. an IOThread). */
static void bench_device(void)
{
    /* loopback, any port: the listener takes port 0 */
    g_autofree char *extra = g_strdup_printf(
        ",listen-allow=127.0.0.1,peer-allow=127.0.0.1%s",
        g_getenv("QEMU_BENCH_ARGS") ?: "");
    g_autofree char *crc = g_strdup_printf(",mpa-crc=required%s", extra);
    double tcp_mbs, tcp_rtt;

    tcp_baselines(&tcp_mbs, &tcp_rtt);
    bench_pair("-crc", crc, tcp_mbs, tcp_rtt);
    bench_pair("-nocrc", extra, tcp_mbs, tcp_rtt);
    /* The same with each process's device on its own -object iothread. */
    rnic_test_iothread = true;
    bench_pair("-crc-iothread", crc, tcp_mbs, tcp_rtt);
    bench_pair("-nocrc-iothread", extra, tcp_mbs, tcp_rtt);
    rnic_test_iothread = false;
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/rnic/bench/device", bench_device);
    return g_test_run();
}
