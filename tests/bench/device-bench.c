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
 *    dev-read-64k-ord1-nocrc-one-cpu: the same with both QEMU processes
 *    on one host CPU (bench_read_64k_one_cpu() says why);
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
 * Then the cost model (docs/protocol.md, "Cost model"; bench_cost): what
 * the host's CPU spends, in time run (schedstat: user and system), not
 * how long a run takes, which a shared machine's load stretches.  Pairs
 * of QEMUs with MPA CRC off (mpa-crc's default), each device on its own
 * IOThread (the default), where all of its data path runs:
 *  - dev-cpu-write-SIZE: CPU microseconds a Write of 64 B, 4 KiB, 64 KiB
 *    or 1 MiB costs both devices' IOThreads together, one connection,
 *    vs tcp-2proc-cpu-SIZE: what a write() of that size costs two
 *    processes on raw TCP, both together; -process: both QEMU processes
 *    whole, vs their IOThreads (the rest is mostly qtest's commands,
 *    the bench's stand-in for a driver writing its rings);
 *  - dev-cpu-per-msg, dev-cpu-per-gib: the model CPU = per message +
 *    size * per byte through the 64 B and 1 MiB figures, vs raw TCP's
 *    the same way; -crc: with mpa-crc=required, vs without;
 *    dev-cpu-write-4k-vs-model, -64k-: the sizes between, vs the model;
 *  - dev-cpu-write-4k-idle255, -qps16, -qps256: 4 KiB Writes on one of
 *    256 connections (the rest idle), spread over 16 and over all 256
 *    (each QP's doorbell then brings what their shared CQ leaves room
 *    for: cost_batch()), and -batchN: one connection posting as few at a
 *    time as each of the 256 does; each vs dev-cpu-write-4k-alone, one
 *    connection in a pair of its own, measured again beside them.
 * Built in QEMU's qtest tree (laid there as rnic-device-bench.c); `make
 * bench` runs it.
 */
#include "qemu/osdep.h"
#include <netinet/tcp.h>
#include <sched.h>
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
    uint32_t pdn, cqn, stag, cq_cons, nqps;
    uint8_t cq_log;
    uint64_t cq_ring, buf;
    QRnicQp *qp;            /* [nqps]: single-QP runs use the first */
    int64_t io_tid;         /* the device's own IOThread */
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

static double median_of(double *v, int n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return v[n / 2];
}

static double median(double *v)
{
    return median_of(v, RUNS);
}

static void report(const char *name, double value, const char *unit,
                   const char *base_name, double base, double ratio)
{
    printf("bench: %s %.3g %s ratio=%.2f (vs %s %.3g %s)\n", name, value,
           unit, ratio, base_name, base, unit);
    fflush(stdout);
}

/* A QEMU with -device rnic@args, @nqps QPs on one CQ of 2^@cq_log CQEs. */
static void dev_start_qps(Dev *d, const char *args, uint32_t nqps,
                          uint8_t cq_log)
{
    const uint32_t access = RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_READ |
                            RNIC_ACC_REMOTE_WRITE;

    memset(d, 0, sizeof(*d));
    qrnic_test_start(&d->t, args);
    qrnic_test_enable(&d->t);
    qrnic_iothreads(d->t.qts, &d->io_tid);
    d->pdn = qrnic_create_pd(&d->t);
    d->cq_log = cq_log;
    d->cqn = qrnic_create_cq(&d->t, cq_log, 1, &d->cq_ring);
    d->nqps = nqps;
    d->qp = g_new0(QRnicQp, nqps);
    for (uint32_t i = 0; i < nqps; i++) {
        g_assert_cmphex(qrnic_try_create_qp(&d->t, d->pdn, d->cqn, d->cqn,
                                            QP_LOG, &d->qp[i]),
                        ==, RNIC_CMD_OK);
    }
    d->buf = guest_alloc(d->t.alloc, BUF);
    g_assert_cmphex(qrnic_reg_mr(&d->t, d->pdn, d->buf, BUF, access, 1,
                                 &d->stag), ==, RNIC_CMD_OK);
}

static void dev_start(Dev *d, const char *args)
{
    dev_start_qps(d, args, 1, CQ_LOG);
}

static void dev_stop(Dev *d)
{
    qrnic_test_stop(&d->t);
    g_free(d->qp);
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

    while (!qrnic_read_cqe(&d->t, d->cq_ring, d->cq_log, index, e)) {
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
    uint32_t size = 1u << d->cq_log;
    g_autofree struct rnic_cq_entry *e = g_new(struct rnic_cq_entry, n);

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

static void dev_post_recv(Dev *d, QRnicQp *qp)
{
    struct rnic_rq_wqe w = {
        .num_sge = 1,
        .sge[0] = dev_sge(d, SMALL, 64),
    };

    qrnic_post_recv(&d->t, qp, &w);
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
    dev_post_recv(a, a->qp);
    t0 = now();
    qrnic_post_sends(&b->t, b->qp, w, XFERS + 1);
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
    qrnic_post_sends(&b->t, b->qp, w, XFERS);
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
            dev_post_recv(a, a->qp);
        }
        qrnic_post_sends(&b->t, b->qp, w, n);
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
        dev_post_recv(a, a->qp);
        dev_post_recv(b, b->qp);
    }
    t0 = now();
    for (int i = 0; i < PINGS; i++) {
        qrnic_post_send(&b->t, b->qp, &ping);
        dev_recv_done(a);
        qrnic_post_send(&a->t, a->qp, &pong);
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

/* What a baseline's child process does with its end of the connection. */
typedef void TcpChild(int fd, uint32_t x, uint32_t y);

/* The child writes @runs times XFERS MiB, or echoes 64-byte messages. */
static void tcp_child(int fd, uint32_t echo, uint32_t runs)
{
    static char buf[MIB];

    for (uint32_t r = 0; r < runs; r++) {
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

/* A connection to a child process that runs @child(its end, @x, @y). */
static int tcp_fork(TcpChild *child, uint32_t x, uint32_t y, pid_t *pid)
{
    uint16_t port;
    int lfd = qrnic_tcp_listen(&port), fd;

    *pid = fork();
    g_assert_cmpint(*pid, >=, 0);
    if (!*pid) {
        fd = qrnic_tcp_connect(port, 0);
        tcp_setup(fd);
        child(fd, x, y);
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
    qrnic_connect_qps(&a.t, a.qp->qpn, &b.t, b.qp->qpn, rd);
    for (int i = 0; i < RUNS; i++) {
        tb[i] = dev_64k_run(&a, &b, RNIC_WQE_WRITE);
        t[i] = dev_64k_run(&a, &b, RNIC_WQE_READ);
        r[i] = tb[i] / t[i];
    }
    report(name, mb / median(t), "MB/s", base, mb / median(tb), median(r));
    dev_stop(&b);
    dev_stop(&a);
}

/*
 * A Read on a connection of ORD 1 waits for two wake-ups of a device
 * thread by the other process: the responder's for the Request, the
 * requester's for the Response.  Across two host CPUs each can cost far
 * more than the work between them (on a virtual machine an idle CPU is
 * woken through the hypervisor); on one CPU each is a context switch.
 * So dev-read-64k-ord1 once more with this process, and the QEMUs it
 * starts, on its first CPU: what the device's round trip costs without
 * the machine's cross-CPU wake-ups.
 */
static void bench_read_64k_one_cpu(const char *args)
{
    cpu_set_t all, one;
    int cpu = 0;

    g_assert_cmpint(sched_getaffinity(0, sizeof(all), &all), ==, 0);
    while (!CPU_ISSET(cpu, &all)) {
        cpu++;
    }
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    g_assert_cmpint(sched_setaffinity(0, sizeof(one), &one), ==, 0);
    bench_read_64k("-nocrc-one-cpu", args, 1);
    g_assert_cmpint(sched_setaffinity(0, sizeof(all), &all), ==, 0);
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
    qrnic_connect_qps(&a.t, a.qp->qpn, &b.t, b.qp->qpn, 16);
    fd = tcp_fork(tcp_child, false, 2 * RUNS, &pid);
    bench_bandwidth(wr, dev_write_run, &a, &b, fd);
    bench_bandwidth(rd, dev_read_run, &a, &b, fd);
    tcp_join(fd, pid);
    fd = tcp_fork(tcp_child, true, RUNS, &pid);
    bench_latency(rtt, &a, &b, fd);
    tcp_join(fd, pid);
    dev_stop(&b);
    dev_stop(&a);
    bench_read_64k(suffix, args, 16);
    bench_read_64k(suffix, args, 1);
}

/* QEMU_BENCH_ARGS adds to every device's options (e.g. an IOThread). */
static char *bench_args(void)
{
    /* loopback, any port: the listener takes port 0 */
    return g_strdup_printf(",listen-allow=127.0.0.1,peer-allow=127.0.0.1%s",
                           g_getenv("QEMU_BENCH_ARGS") ?: "");
}

static void bench_device(void)
{
    g_autofree char *extra = bench_args();
    g_autofree char *crc = g_strdup_printf(",mpa-crc=required%s", extra);

    bench_pair("-crc", crc);
    bench_pair("-nocrc", extra);
    bench_read_64k_one_cpu(extra);
    /* The same with each process's device on its own -object iothread. */
    qrnic_test_iothread = true;
    bench_pair("-crc-iothread", crc);
    bench_pair("-nocrc-iothread", extra);
    qrnic_test_iothread = false;
}

/* ---- Host CPU per message and per byte: the cost model ---- */

#define COST_BYTES  (128 * MIB)     /* a run moves this much, */
#define COST_MSGS   16384           /* or this many messages if fewer */
#define COST_CQ_LOG 12              /* max-cqes' default */
#define COST_QPS    256             /* QPs of the many-QP pair */
#define COST_QPS_SOME 16            /* QPs of the row between */
#define GIB         (1024.0 * MIB)

/* The sizes of the per-size rows; the model is fitted to the first and last. */
static const uint32_t cost_lens[] = { 64, 4096, 64 * 1024, MIB };
static const char *const cost_names[] = { "64", "4k", "64k", "1m" };
#define COST_SIZES  ARRAY_SIZE(cost_lens)
#define COST_LAST   (COST_SIZES - 1)
#define COST_QP_SIZE 1              /* index in cost_lens[] of the QP rows */

typedef struct Pair {
    Dev a, b;
} Pair;

/* CPU seconds (user and system) spent so far, or per message of a run. */
typedef struct Cpu {
    double io;          /* by both devices' IOThreads: the device's work */
    double all;         /* by both QEMU processes, qtest's commands too */
} Cpu;

/*
 * Seconds thread @tid of process @pid has run, from schedstat (in ns):
 * stat's utime and stime count 10 ms ticks, coarse beside a run.
 */
static double thread_cpu(pid_t pid, int64_t tid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/task/%" PRId64
                                            "/schedstat", (int)pid, tid);
    g_autofree char *text = NULL;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    return g_ascii_strtoull(text, NULL, 10) / 1e9;
}

static double timespec_s(const struct timespec *ts)
{
    return ts->tv_sec + ts->tv_nsec / 1e9;
}

/* Seconds all threads of process @pid have run, exited ones too. */
static double process_cpu(pid_t pid)
{
    clockid_t clock;
    struct timespec ts;

    g_assert_cmpint(clock_getcpuclockid(pid, &clock), ==, 0);
    g_assert_cmpint(clock_gettime(clock, &ts), ==, 0);
    return timespec_s(&ts);
}

static Cpu cost_cpu(Pair *p)
{
    pid_t pa = qtest_pid(p->a.t.qts), pb = qtest_pid(p->b.t.qts);

    return (Cpu) {
        .io = thread_cpu(pa, p->a.io_tid) + thread_cpu(pb, p->b.io_tid),
        .all = process_cpu(pa) + process_cpu(pb),
    };
}

/* Messages of a run of @len-octet messages. */
static uint32_t cost_msgs(uint32_t len)
{
    return MIN(COST_MSGS, COST_BYTES / len);
}

/*
 * @n Sends b -> a, one on each of the first @n QPs, and their arrival;
 * a's receives were posted before the run (cost_write_run_by says why).
 */
static void cost_send_each(Pair *p, uint32_t n)
{
    struct rnic_sq_wqe w = dev_wqe(&p->b, RNIC_WQE_SEND, &p->a, 64);

    for (uint32_t i = 0; i < n; i++) {
        qrnic_post_send(&p->b.t, &p->b.qp[i], &w);
    }
    dev_cqes(&p->b, RNIC_WQE_SEND, n, NAP_US);
    dev_cqes(&p->a, RNIC_WQE_RECV, n, NAP_US);
}

/* Most WQEs a round can post on each of @q QPs: its SQ, their CQ. */
static uint32_t cost_batch(uint32_t q)
{
    return MIN((1u << QP_LOG) - 1, ((1u << COST_CQ_LOG) - 1) / q);
}

/*
 * A run: Writes of @len octets b -> a, cost_msgs(@len) of them spread
 * evenly over b's first @q QPs, in rounds of @per_qp on each, posted QP
 * by QP (one memwrite and one doorbell each), then their completions
 * reaped.  Then a Send on each QP, whose arrival says the Writes before
 * it are placed; its receive is posted before the Writes.  Returns the
 * CPU this cost, per Write.
 */
static Cpu cost_write_run_by(Pair *p, uint32_t q, uint32_t len,
                             uint32_t per_qp)
{
    uint32_t n = cost_msgs(len);
    struct rnic_sq_wqe w[1u << QP_LOG];
    Cpu c0 = cost_cpu(p), c1;

    g_assert_cmpuint(n % q, ==, 0);
    for (uint32_t i = 0; i < q; i++) {
        dev_post_recv(&p->a, &p->a.qp[i]);
    }
    for (uint32_t i = 0; i < per_qp; i++) {
        w[i] = dev_wqe(&p->b, RNIC_WQE_WRITE, &p->a, len);
    }
    for (uint32_t done = 0; done < n;) {
        uint32_t k = MIN(per_qp, (n - done) / q);

        for (uint32_t i = 0; i < q; i++) {
            qrnic_post_sends(&p->b.t, &p->b.qp[i], w, k);
        }
        dev_cqes(&p->b, RNIC_WQE_WRITE, k * q, NAP_US);
        done += k * q;
    }
    cost_send_each(p, q);
    c1 = cost_cpu(p);
    return (Cpu) { (c1.io - c0.io) / n, (c1.all - c0.all) / n };
}

/* The same in rounds as deep as the queues take. */
static Cpu cost_write_run(Pair *p, uint32_t q, uint32_t len)
{
    return cost_write_run_by(p, q, len, cost_batch(q));
}

/* The baseline's child: for each byte from the parent, @n writes of @len. */
static void cost_tcp_child(int fd, uint32_t len, uint32_t n)
{
    static char buf[MIB];
    char go;

    while (read(fd, &go, 1) == 1) {
        for (uint32_t i = 0; i < n; i++) {
            qrnic_write_full(fd, buf, len);
        }
    }
    _exit(0);
}

static double self_cpu(void)
{
    struct timespec ts;

    g_assert_cmpint(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts), ==, 0);
    return timespec_s(&ts);
}

/*
 * A baseline run: raw TCP between two processes, the child's
 * cost_msgs(@len) write()s of @len (TCP_NODELAY, as the device's
 * sockets), read here as they come.  CPU seconds of both per message.
 */
static double cost_tcp_run(int fd, pid_t pid, uint32_t len)
{
    static char buf[MIB];
    uint32_t n = cost_msgs(len);
    double c0 = thread_cpu(pid, pid) + self_cpu();

    qrnic_write_full(fd, "", 1);
    for (uint64_t left = (uint64_t)len * n; left;) {
        ssize_t got = read(fd, buf, MIN(left, sizeof(buf)));

        g_assert_cmpint(got, >, 0);
        left -= got;
    }
    return (thread_cpu(pid, pid) + self_cpu() - c0) / n;
}

/* Two QEMUs of @nqps QPs each, b's QP i connected to a's QP i. */
static void cost_pair(Pair *p, const char *args, uint32_t nqps)
{
    struct rnic_cmd_listen l = { .local = qrnic_loopback(0), .backlog = 1 };
    struct rnic_conn_param param = {
        .ird = cpu_to_le16(1), .ord = cpu_to_le16(1),
    };
    struct rnic_event ev;
    struct rnic_cmd cmd;

    dev_start_qps(&p->a, args, nqps, COST_CQ_LOG);
    dev_start_qps(&p->b, args, nqps, COST_CQ_LOG);
    /* each device on an IOThread of its own, whose CPU is the device's */
    g_assert_cmpint(p->a.io_tid, >, 0);
    g_assert_cmpint(p->b.io_tid, >, 0);
    cmd = qrnic_cmd_ok(&p->a.t, RNIC_CMD_LISTEN, &l, sizeof(l));
    for (uint32_t i = 0; i < nqps; i++) {
        struct rnic_cmd_connect k = {
            .qpn = cpu_to_le32(p->b.qp[i].qpn),
            .peer = ((struct rnic_cmd_listen *)cmd.u.raw)->local,
            .param = param,
        };
        struct rnic_cmd_accept acc = {
            .qpn = cpu_to_le32(p->a.qp[i].qpn), .param = param,
        };

        qrnic_cmd_ok(&p->b.t, RNIC_CMD_CONNECT, &k, sizeof(k));
        qrnic_expect_event(&p->a.t, RNIC_EV_CONN_REQUEST, &ev);
        acc.conn_id = ev.id;
        qrnic_cmd_ok(&p->a.t, RNIC_CMD_ACCEPT, &acc, sizeof(acc));
        qrnic_expect_event(&p->a.t, RNIC_EV_CONN_ESTABLISHED, &ev);
        qrnic_expect_event(&p->b.t, RNIC_EV_CONN_ESTABLISHED, &ev);
    }
}

static void cost_pair_stop(Pair *p)
{
    dev_stop(&p->b);
    dev_stop(&p->a);
}

/* A figure per message, printed in microseconds as the rtt rows are. */
static void cost_report(const char *name, double v, const char *base,
                        double base_v, double ratio)
{
    report(name, v * 1e6, "us", base, base_v * 1e6, ratio);
}

/*
 * The model, CPU(len) = msg + len * byte, through the first size and
 * the last; printed as microseconds a message and seconds a GiB.
 */
static void cost_model(const double *c, double *msg, double *byte)
{
    *byte = (c[COST_LAST] - c[0]) / (cost_lens[COST_LAST] - cost_lens[0]);
    *msg = c[0] - cost_lens[0] * *byte;
}

static void cost_report_model(const char *suffix, const double *c,
                              const char *base, const double *base_c)
{
    g_autofree char *m = g_strdup_printf("dev-cpu-per-msg%s", suffix);
    g_autofree char *g = g_strdup_printf("dev-cpu-per-gib%s", suffix);
    g_autofree char *bm = g_strdup_printf("%s-per-msg", base);
    g_autofree char *bg = g_strdup_printf("%s-per-gib", base);
    double msg, byte, base_msg, base_byte;

    cost_model(c, &msg, &byte);
    cost_model(base_c, &base_msg, &base_byte);
    cost_report(m, msg, bm, base_msg, msg / base_msg);
    report(g, byte * GIB, "s", bg, base_byte * GIB, byte / base_byte);
}

/*
 * The runs of one size, each figure's right after the others' (CPU per
 * message): raw TCP, the device (IOThreads, processes), the device with
 * CRC (the model's sizes only), and the device over raw TCP.
 */
typedef struct CostSize {
    double tcp[RUNS], io[RUNS], all[RUNS], crc[RUNS], r[RUNS];
} CostSize;

static void cost_size_runs(Pair *one, Pair *crc, size_t i, CostSize *s)
{
    pid_t pid;
    int fd = tcp_fork(cost_tcp_child, cost_lens[i], cost_msgs(cost_lens[i]),
                      &pid);

    for (int r = 0; r < RUNS; r++) {
        Cpu c;

        s->tcp[r] = cost_tcp_run(fd, pid, cost_lens[i]);
        c = cost_write_run(one, 1, cost_lens[i]);
        s->io[r] = c.io;
        s->all[r] = c.all;
        s->r[r] = c.io / s->tcp[r];
        s->crc[r] = i == 0 || i == COST_LAST ?
                    cost_write_run(crc, 1, cost_lens[i]).io : 0;
    }
    tcp_join(fd, pid);
}

/*
 * Every size on one connection, against raw TCP and with CRC; the model
 * fitted to each, and checked against the sizes between.
 */
static void cost_sizes(Pair *one, Pair *crc)
{
    double tcp[COST_SIZES], dev[COST_SIZES], dev_crc[COST_SIZES], msg, byte;

    for (size_t i = 0; i < COST_SIZES; i++) {
        g_autofree char *name = g_strdup_printf("dev-cpu-write-%s",
                                                cost_names[i]);
        g_autofree char *base = g_strdup_printf("tcp-2proc-cpu-%s",
                                                cost_names[i]);
        g_autofree char *all = g_strdup_printf("%s-process", name);
        CostSize s;

        cost_size_runs(one, crc, i, &s);
        tcp[i] = median(s.tcp);
        dev[i] = median(s.io);
        dev_crc[i] = median(s.crc);
        cost_report(name, dev[i], base, tcp[i], median(s.r));
        if (i == 0 || i == COST_LAST) {
            double all_v = median(s.all);

            cost_report(all, all_v, name, dev[i], all_v / dev[i]);
        }
    }
    cost_report_model("", dev, "tcp-2proc-cpu", tcp);
    cost_report_model("-crc", dev_crc, "dev-cpu", dev);
    cost_model(dev, &msg, &byte);
    for (size_t i = 1; i < COST_LAST; i++) {
        g_autofree char *name = g_strdup_printf("dev-cpu-write-%s-vs-model",
                                                cost_names[i]);
        g_autofree char *base = g_strdup_printf("dev-cpu-model-%s",
                                                cost_names[i]);
        double model = msg + cost_lens[i] * byte;

        cost_report(name, dev[i], base, model, dev[i] / model);
    }
}

/* A row of cost_qps(): BASE-@what@n, runs of @q QPs of @p, @per_qp deep. */
typedef struct CostQps {
    const char *what;
    uint32_t n;
    Pair *p;
    uint32_t q, per_qp;
} CostQps;

/*
 * COST_QPS connections between two QEMUs: the traffic of one with the
 * others connected and idle, then spread over COST_QPS_SOME and over
 * all; and one connection alone posting as few at a time as each of all
 * does.  Each run right after one of a connection alone (@one).
 */
static void cost_qps(Pair *one, Pair *many)
{
    const uint32_t len = cost_lens[COST_QP_SIZE];
    const CostQps v[] = {
        { "idle", COST_QPS - 1, many, 1, cost_batch(1) },
        { "qps", COST_QPS_SOME, many, COST_QPS_SOME,
          cost_batch(COST_QPS_SOME) },
        { "qps", COST_QPS, many, COST_QPS, cost_batch(COST_QPS) },
        { "batch", cost_batch(COST_QPS), one, 1, cost_batch(COST_QPS) },
    };
    g_autofree char *row = g_strdup_printf("dev-cpu-write-%s",
                                           cost_names[COST_QP_SIZE]);
    g_autofree char *base = g_strdup_printf("%s-alone", row);
    double alone[RUNS], t[ARRAY_SIZE(v)][RUNS], r[ARRAY_SIZE(v)][RUNS];

    for (int k = 0; k < RUNS; k++) {
        alone[k] = cost_write_run(one, 1, len).io;
        for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
            t[i][k] = cost_write_run_by(v[i].p, v[i].q, len,
                                        v[i].per_qp).io;
            r[i][k] = t[i][k] / alone[k];
        }
    }
    for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
        g_autofree char *name = g_strdup_printf("%s-%s%u", row, v[i].what,
                                                v[i].n);

        cost_report(name, median(t[i]), base, median(alone), median(r[i]));
    }
}

/*
 * Host CPU per message and per byte (docs/protocol.md, "Cost model"):
 * pairs of QEMUs, each device on its own IOThread (the default), MPA CRC
 * off (mpa-crc's default) but for the pair of the -crc rows.
 */
static void bench_cost(void)
{
    g_autofree char *args = bench_args();
    g_autofree char *crc_args = g_strdup_printf(",mpa-crc=required%s", args);
    Pair one, crc, many;

    cost_pair(&one, args, 1);
    cost_pair(&crc, crc_args, 1);
    cost_sizes(&one, &crc);
    cost_pair_stop(&crc);
    cost_pair(&many, args, COST_QPS);
    cost_qps(&one, &many);
    cost_pair_stop(&many);
    cost_pair_stop(&one);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/rnic/bench/device", bench_device);
    qtest_add_func("/rnic/bench/cost", bench_cost);
    return g_test_run();
}
