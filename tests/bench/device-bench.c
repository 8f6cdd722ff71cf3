/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device's own speed, with no guest CPU in the way: two QEMU
 * processes, each with -device rnic, driven through qtest (rings in guest
 * memory, doorbells, CQ polling) and connected over 127.0.0.1.  Each
 * figure is printed against raw TCP between two processes measured in
 * the same run, run by run (each device run right after a baseline run;
 * the ratio is the median of the runs'), as the core's bench does:
 *   bench: NAME VALUE UNIT ratio=R (vs BASELINE)
 *  - dev-write-1m: MB/s of 1 MiB RDMA Writes (the last one known placed
 *    when a Send behind it arrives), vs a TCP stream between processes;
 *  - dev-read-1m: MB/s of 1 MiB RDMA Reads, same baseline;
 *  - dev-read-64k-ord16, dev-read-64k-ord1: MB/s of 64 KiB RDMA Reads on
 *    a connection of ORD and IRD 16 (perftest's) and of 1 (qperf's: each
 *    Read then waits for the Response before it), each against 64 KiB
 *    Writes on the same connection (dev-write-64k), run by run;
 *  - dev-send-64-rtt: microseconds per round trip of a 64-byte Send
 *    answered by one, vs TCP ping-pong between processes; and
 *    dev-send-64-rtt-minus-qtest, the same less the time of its qtest
 *    commands alone (dev_qtest_run), which are most of it: each is a
 *    round trip through a QEMU's main loop.
 * Each with MPA CRC32c required (-crc) and off (-nocrc), then again with
 * each process's device on its own IOThread (-crc-iothread,
 * -nocrc-iothread: -object iothread -device rnic,iothread=).  The
 * bandwidth runs post their WQEs in one batch (one memwrite, one
 * doorbell) and poll every NAP_US microseconds, not without pause.  A run
 * moves XFERS MiB: shorter runs left a row's ratio to the machine's noise
 * (docs/protocol.md section 3).
 * Built in QEMU's qtest tree (laid there as rnic-device-bench.c); `make
 * bench` runs it.
 */
#include "qemu/osdep.h"
#include <netinet/tcp.h>
#include <sys/wait.h>
#include "qemu/bswap.h"
#include "libqos/rnic.h"

#define RUNS        11
#define XFERS       192             /* 1 MiB transfers per timed run */
#define MIB         (1024 * 1024)
#define PINGS       200
#define NAP_US      200             /* between polls of a bandwidth run */
#define QP_LOG      8
#define CQ_LOG      8
/* A run's WQEs (and the Send behind them) fit the SQ and their CQEs the CQ */
QEMU_BUILD_BUG_ON(XFERS + 1 > (1 << QP_LOG) || XFERS + 1 > (1 << CQ_LOG));
/* A ping-pong run's receives fit the RQ and their CQEs the CQ */
QEMU_BUILD_BUG_ON(PINGS > (1 << QP_LOG) || PINGS > (1 << CQ_LOG));
#define SMALL_XFERS 192             /* 64 KiB transfers per batch */
#define SMALL_BATCHES 8             /* batches per timed run */
QEMU_BUILD_BUG_ON(SMALL_XFERS + 1 > (1 << QP_LOG) ||
                  SMALL_XFERS + 1 > (1 << CQ_LOG));
#define SMALL       (MIB)           /* offset of the 64-byte buffers */
#define BUF         (MIB + 4096)

typedef struct Dev {
    QRnic t;
    uint32_t pdn, cqn, stag, cq_cons;
    uint64_t cq_ring, buf;
    QRnicQp qp;
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
                   const char *base_name, double base, double ratio)
{
    printf("bench: %s %.3g %s ratio=%.2f (vs %s %.3g %s)\n", name, value,
           unit, ratio, base_name, base, unit);
    fflush(stdout);
}

static void dev_start(Dev *d, const char *args)
{
    const uint32_t access = RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_READ |
                            RNIC_ACC_REMOTE_WRITE;

    memset(d, 0, sizeof(*d));
    qrnic_test_start(&d->t, args);
    qrnic_test_enable(&d->t);
    d->pdn = qrnic_create_pd(&d->t);
    d->cqn = qrnic_create_cq(&d->t, CQ_LOG, 1, &d->cq_ring);
    g_assert_cmphex(qrnic_try_create_qp(&d->t, d->pdn, d->cqn, d->cqn, QP_LOG,
                                        &d->qp), ==, RNIC_CMD_OK);
    d->buf = guest_alloc(d->t.alloc, BUF);
    g_assert_cmphex(qrnic_reg_mr(&d->t, d->pdn, d->buf, BUF, access, 1,
                                 &d->stag), ==, RNIC_CMD_OK);
}

/*
 * Waits for CQE @index of @d's CQ.  The latency figure polls without
 * pause (@nap 0); the bandwidth runs sleep @nap microseconds between
 * polls: each poll is a qtest round trip that the QEMU process answers on
 * its main loop, and on a machine of two cores the spinning poller
 * competes with the data path for the CPU.
 */
static void dev_poll(Dev *d, uint32_t index, struct rnic_cq_entry *e, int nap)
{
    gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    while (!qrnic_read_cqe(&d->t, d->cq_ring, CQ_LOG, index, e)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        if (nap) {
            g_usleep(nap);
        }
    }
}

/*
 * @n completions of @opcode: waits for the last, then reads the others in
 * one memread and frees them all with one doorbell (each qtest round trip
 * is work for the QEMU process that the data path would otherwise get).
 */
static void dev_cqes(Dev *d, uint8_t opcode, uint32_t n, int nap)
{
    struct rnic_cq_entry e[1u << CQ_LOG];
    uint32_t size = 1u << CQ_LOG;

    g_assert_cmpuint(n, >=, 1);
    g_assert_cmpuint(n, <=, size);
    dev_poll(d, d->cq_cons + n - 1, &e[n - 1], nap);
    for (uint32_t done = 0; done < n - 1;) {
        uint32_t first = (d->cq_cons + done) & (size - 1);
        uint32_t run = MIN(n - 1 - done, size - first);

        qtest_memread(d->t.qts, d->cq_ring + first * RNIC_CQE_SIZE,
                      e + done, run * sizeof(e[0]));
        done += run;
    }
    for (uint32_t i = 0; i < n; i++) {
        g_assert_cmpuint(e[i].status, ==, RNIC_CQE_SUCCESS);
        g_assert_cmpuint(e[i].opcode, ==, opcode);
    }
    d->cq_cons += n;
    qrnic_wr(&d->t, RNIC_REG_DB_CQ, RNIC_DB_VALUE(d->cqn, d->cq_cons));
}

static struct rnic_wqe_sge dev_sge(Dev *d, uint32_t off, uint32_t len)
{
    return qrnic_sge(d->stag, QRNIC_MR_IOVA + off, len);
}

static void dev_post_recv(Dev *d)
{
    struct rnic_rq_wqe w = {
        .num_sge = 1,
        .sge[0] = dev_sge(d, SMALL, 64),
    };

    qrnic_post_recv(&d->t, &d->qp, &w);
}

static struct rnic_sq_wqe dev_wqe(Dev *d, uint8_t opcode, Dev *peer,
                                  uint32_t len)
{
    return (struct rnic_sq_wqe) {
        .opcode = opcode,
        .flags = RNIC_WQE_FLAG_SIGNALED,
        .num_sge = 1,
        .sge[0] = dev_sge(d, opcode == RNIC_WQE_SEND ? SMALL : 0, len),
        .remote_stag = cpu_to_le32(peer->stag),
        .remote_addr = cpu_to_le64(QRNIC_MR_IOVA),
    };
}

/*
 * XFERS Writes b -> a, then a Send: its arrival says all are placed.
 * Posted in one batch, as a driver with a full send queue would.
 */
static double dev_write_run(Dev *a, Dev *b)
{
    struct rnic_sq_wqe w[XFERS + 1];
    double t0;

    for (int i = 0; i < XFERS; i++) {
        w[i] = dev_wqe(b, RNIC_WQE_WRITE, a, MIB);
    }
    w[XFERS] = dev_wqe(b, RNIC_WQE_SEND, a, 64);
    dev_post_recv(a);
    t0 = now();
    qrnic_post_sends(&b->t, &b->qp, w, XFERS + 1);
    dev_cqes(b, RNIC_WQE_WRITE, XFERS, NAP_US);
    dev_cqes(b, RNIC_WQE_SEND, 1, NAP_US);
    dev_cqes(a, RNIC_WQE_RECV, 1, NAP_US);
    return now() - t0;
}

static double dev_read_run(Dev *a, Dev *b)
{
    struct rnic_sq_wqe w[XFERS];
    double t0;

    for (int i = 0; i < XFERS; i++) {
        w[i] = dev_wqe(b, RNIC_WQE_READ, a, MIB);
    }
    t0 = now();
    qrnic_post_sends(&b->t, &b->qp, w, XFERS);
    dev_cqes(b, RNIC_WQE_READ, XFERS, NAP_US);
    return now() - t0;
}

/*
 * SMALL_BATCHES times SMALL_XFERS 64 KiB Reads or Writes b <- a or b -> a
 * (the Writes followed by a Send, as dev_write_run): the sizes of a
 * consumer's 64 KiB messages (qperf's and perftest's default).
 */
static double dev_64k_run(Dev *a, Dev *b, uint8_t opcode)
{
    struct rnic_sq_wqe w[SMALL_XFERS + 1];
    double t0 = now();

    for (int k = 0; k < SMALL_BATCHES; k++) {
        uint32_t n = SMALL_XFERS;

        for (int i = 0; i < SMALL_XFERS; i++) {
            w[i] = dev_wqe(b, opcode, a, 64 * 1024);
        }
        if (opcode == RNIC_WQE_WRITE) {
            w[n++] = dev_wqe(b, RNIC_WQE_SEND, a, 64);
            dev_post_recv(a);
        }
        qrnic_post_sends(&b->t, &b->qp, w, n);
        dev_cqes(b, opcode, SMALL_XFERS, NAP_US);
        if (opcode == RNIC_WQE_WRITE) {
            dev_cqes(b, RNIC_WQE_SEND, 1, NAP_US);
            dev_cqes(a, RNIC_WQE_RECV, 1, NAP_US);
        }
    }
    return now() - t0;
}

/* @d's next completion, a receive's; its CQ doorbell is left for later. */
static void dev_recv_done(Dev *d)
{
    struct rnic_cq_entry e;

    dev_poll(d, d->cq_cons++, &e, 0);
    g_assert_cmpuint(e.status, ==, RNIC_CQE_SUCCESS);
    g_assert_cmpuint(e.opcode, ==, RNIC_WQE_RECV);
}

/*
 * PINGS 64-byte Sends each way, one answering the other.  The receives
 * are posted before the clock starts, the Sends are unsignaled and the CQ
 * doorbells wait for the end, so each message costs the fewest qtest
 * round trips a driver could spend on it: the WQE, its doorbell and the
 * polls of the receiver's CQ.
 */
static double dev_pingpong_run(Dev *a, Dev *b)
{
    struct rnic_sq_wqe ping = dev_wqe(b, RNIC_WQE_SEND, a, 64);
    struct rnic_sq_wqe pong = dev_wqe(a, RNIC_WQE_SEND, b, 64);
    double t0;

    ping.flags = pong.flags = 0;
    for (int i = 0; i < PINGS; i++) {
        dev_post_recv(a);
        dev_post_recv(b);
    }
    t0 = now();
    for (int i = 0; i < PINGS; i++) {
        qrnic_post_send(&b->t, &b->qp, &ping);
        dev_recv_done(a);
        qrnic_post_send(&a->t, &a->qp, &pong);
        dev_recv_done(b);
    }
    t0 = now() - t0;
    qrnic_wr(&a->t, RNIC_REG_DB_CQ, RNIC_DB_VALUE(a->cqn, a->cq_cons));
    qrnic_wr(&b->t, RNIC_REG_DB_CQ, RNIC_DB_VALUE(b->cqn, b->cq_cons));
    return t0 / PINGS;
}

/*
 * The qtest commands of a dev_pingpong_run with no message behind them:
 * per message the WQE's memwrite (to an unused part of the buffer), a
 * write of the scratch register for its doorbell and one memread of the
 * receiver's CQ.
 */
static double dev_qtest_run(Dev *a, Dev *b)
{
    struct rnic_sq_wqe w = dev_wqe(b, RNIC_WQE_SEND, a, 64);
    struct rnic_cq_entry e;
    Dev *from = b, *to = a;
    double t0 = now();

    for (int i = 0; i < 2 * PINGS; i++) {
        qtest_memwrite(from->t.qts, from->buf + SMALL + 2048, &w, sizeof(w));
        qrnic_wr(&from->t, RNIC_REG_SCRATCH, i);
        qtest_memread(to->t.qts, to->cq_ring, &e, sizeof(e));
        from = to;
        to = from == a ? b : a;
    }
    return (now() - t0) / PINGS;
}

/* ---- raw TCP between two processes: the baseline ---- */

/* The child writes @runs times XFERS MiB, or echoes 64-byte messages. */
static void tcp_child(int fd, bool echo, int runs)
{
    static char buf[MIB];

    for (int r = 0; r < runs; r++) {
        for (int i = 0; i < (echo ? PINGS : XFERS); i++) {
            if (echo) {
                qrnic_read_full(fd, buf, 64);
            }
            qrnic_write_full(fd, buf, echo ? 64 : MIB);
        }
    }
    _exit(0);
}

/* As the device sets its sockets: no Nagle, sock-buf's default buffers. */
static void tcp_setup(int fd)
{
    int one = 1, size = 4 << 20;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

static int tcp_fork(bool echo, int runs, pid_t *pid)
{
    uint16_t port;
    int lfd = qrnic_tcp_listen(&port), fd;

    *pid = fork();
    g_assert_cmpint(*pid, >=, 0);
    if (!*pid) {
        fd = qrnic_tcp_connect(port, 0);
        tcp_setup(fd);
        tcp_child(fd, echo, runs);
    }
    fd = qrnic_tcp_accept(lfd);
    tcp_setup(fd);
    close(lfd);
    return fd;
}

static void tcp_join(int fd, pid_t pid)
{
    close(fd);
    waitpid(pid, NULL, 0);
}

/* One baseline run: XFERS MiB from the child, in seconds. */
static double tcp_stream_run(int fd)
{
    static char buf[MIB];
    double t0 = now();

    for (int i = 0; i < XFERS; i++) {
        qrnic_read_full(fd, buf, MIB);
    }
    return now() - t0;
}

/* One baseline run: seconds per 64-byte round trip through the child. */
static double tcp_pingpong_run(int fd)
{
    char buf[64] = { 0 };
    double t0 = now();

    for (int i = 0; i < PINGS; i++) {
        qrnic_write_full(fd, buf, 64);
        qrnic_read_full(fd, buf, 64);
    }
    return (now() - t0) / PINGS;
}

/*
 * RUNS runs of @dev, each right after a run of the baseline on @fd, so
 * that both see the same load: this machine is shared, and a baseline
 * measured once, before everything, made ratios swing between 0.4 and
 * 1.1 from one bench to the next.  Prints the medians of both series and
 * the median of the runs' ratios, the device's bandwidth over TCP's.
 */
static void bench_bandwidth(const char *name, double (*dev)(Dev *, Dev *),
                            Dev *a, Dev *b, int fd)
{
    double t[RUNS], tb[RUNS], r[RUNS];

    for (int i = 0; i < RUNS; i++) {
        tb[i] = tcp_stream_run(fd);
        t[i] = dev(a, b);
        r[i] = tb[i] / t[i];
    }
    report(name, XFERS * (double)MIB / 1e6 / median(t), "MB/s", "tcp-2proc",
           XFERS * (double)MIB / 1e6 / median(tb), median(r));
}

/*
 * The same, for the round trip, with a third run in each round: the
 * qtest commands of a ping-pong alone (dev_qtest_run).  NAME-minus-qtest
 * is the median of the rounds' differences: what the devices and the
 * connection add to the commands that drive them.
 */
static void bench_latency(const char *name, Dev *a, Dev *b, int fd)
{
    double t[RUNS], tb[RUNS], r[RUNS], rest[RUNS], rest_r[RUNS];
    g_autofree char *rest_name = g_strdup_printf("%s-minus-qtest", name);

    for (int i = 0; i < RUNS; i++) {
        tb[i] = tcp_pingpong_run(fd);
        t[i] = dev_pingpong_run(a, b);
        rest[i] = t[i] - dev_qtest_run(a, b);
        r[i] = t[i] / tb[i];
        rest_r[i] = rest[i] / tb[i];
    }
    report(name, median(t) * 1e6, "us", "tcp-2proc-64-rtt", median(tb) * 1e6,
           median(r));
    report(rest_name, median(rest) * 1e6, "us", "tcp-2proc-64-rtt",
           median(tb) * 1e6, median(rest_r));
}

/*
 * 64 KiB Reads against 64 KiB Writes on a connection of ORD and IRD @rd,
 * run by run (the Write as the baseline): with 1, every Read waits for the
 * one before it, as qperf's do (it connects with an ORD of 1).
 */
static void bench_read_64k(const char *suffix, const char *args, uint8_t rd)
{
    g_autofree char *name = g_strdup_printf("dev-read-64k-ord%u%s", rd,
                                            suffix);
    g_autofree char *base = g_strdup_printf("dev-write-64k%s", suffix);
    double t[RUNS], tb[RUNS], r[RUNS];
    const double mb = SMALL_BATCHES * SMALL_XFERS * 65536.0 / 1e6;
    Dev a, b;

    dev_start(&a, args);
    dev_start(&b, args);
    qrnic_connect_qps(&a.t, a.qp.qpn, &b.t, b.qp.qpn, rd);
    for (int i = 0; i < RUNS; i++) {
        tb[i] = dev_64k_run(&a, &b, RNIC_WQE_WRITE);
        t[i] = dev_64k_run(&a, &b, RNIC_WQE_READ);
        r[i] = tb[i] / t[i];
    }
    report(name, mb / median(t), "MB/s", base, mb / median(tb), median(r));
    qrnic_test_stop(&b.t);
    qrnic_test_stop(&a.t);
}

/* One pair of QEMU processes with -device rnic@args, every figure. */
static void bench_pair(const char *suffix, const char *args)
{
    g_autofree char *wr = g_strdup_printf("dev-write-1m%s", suffix);
    g_autofree char *rd = g_strdup_printf("dev-read-1m%s", suffix);
    g_autofree char *rtt = g_strdup_printf("dev-send-64-rtt%s", suffix);
    pid_t pid;
    int fd;
    Dev a, b;

    dev_start(&a, args);
    dev_start(&b, args);
    qrnic_connect_qps(&a.t, a.qp.qpn, &b.t, b.qp.qpn, 16);
    fd = tcp_fork(false, 2 * RUNS, &pid);
    bench_bandwidth(wr, dev_write_run, &a, &b, fd);
    bench_bandwidth(rd, dev_read_run, &a, &b, fd);
    tcp_join(fd, pid);
    fd = tcp_fork(true, RUNS, &pid);
    bench_latency(rtt, &a, &b, fd);
    tcp_join(fd, pid);
    qrnic_test_stop(&b.t);
    qrnic_test_stop(&a.t);
    bench_read_64k(suffix, args, 16);
    bench_read_64k(suffix, args, 1);
}

/* QEMU_BENCH_ARGS adds to every device's options (e.g. an IOThread). */
static void bench_device(void)
{
    /* loopback, any port: the listener takes port 0 */
    g_autofree char *extra = g_strdup_printf(
        ",listen-allow=127.0.0.1,peer-allow=127.0.0.1%s",
        g_getenv("QEMU_BENCH_ARGS") ?: "");
    g_autofree char *crc = g_strdup_printf(",mpa-crc=required%s", extra);

    bench_pair("-crc", crc);
    bench_pair("-nocrc", extra);
    /* The same with each process's device on its own -object iothread. */
    qrnic_test_iothread = true;
    bench_pair("-crc-iothread", crc);
    bench_pair("-nocrc-iothread", extra);
    qrnic_test_iothread = false;
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/rnic/bench/device", bench_device);
    return g_test_run();
}
