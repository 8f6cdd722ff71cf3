/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `make bench`: speed figures of the protocol core, each printed as
 *
 *   bench: NAME VALUE UNIT ratio=R (vs BASELINE)
 *
 * where BASELINE is measured in the same run, on the same machine, the
 * same way, so that the ratio means something on any machine.  Not a
 * test: nothing here asserts anything about time.
 *
 * Method, for every figure: one untimed warm-up run, then BENCH_RUNS
 * timed runs (CLOCK_MONOTONIC), and the median of them is printed.  The
 * raw TCP baselines run on their own loopback connection, one run of the
 * baseline before each run of the figure, so that both see the same load
 * (this machine is shared; medians of separate series drifted apart); the
 * ratio printed for them is the median of the runs' ratios, the values
 * beside it the medians of each series.
 *  - crc32c: GB/s summing a 1 MiB buffer, rnic_crc32c_hw() (SSE4.2)
 *    against rnic_crc32c_sw() (portable slicing-by-8); then the
 *    carry-less multiply folds (clmul: PCLMULQDQ, vpclmul: AVX-512) on
 *    1 MiB and on 1460-octet buffers against rnic_crc32c_hw() on the same.
 *  - write-1m-crc / write-1m-nocrc: MB/s of RDMA Writes of 1 MiB between
 *    two engines (epfix sides) over one loopback TCP connection, each
 *    followed by a zero-length Send so that a run ends when the last
 *    Write is placed on the far side (one Write at a time: posted all at
 *    once, the loop's writer outruns its reader and the loopback queue
 *    outgrows the cache, raw TCP too: docs/protocol.md section 3);
 *    against raw TCP moving the same bytes over the same kind of
 *    connection into a plain buffer.  MPA
 *    results are set up directly (epf_mpa_pair), the handshake is not
 *    measured.  One thread drives both ends with poll(), as the device's
 *    event loop would; the raw baseline is driven the same way.  Both
 *    set TCP_NODELAY, as the device does on its connections: with Nagle
 *    on, this loop's raw TCP moved a fraction of what it moves without,
 *    a baseline that flattered every ratio.  Both fix their socket
 *    buffers at 4 MiB (SOCK_BUF): left to the kernel's autotuning, about
 *    one loopback connection in two stayed much slower than the others
 *    for its whole life, so a ratio said more about which connections it
 *    got than about rnic (docs/protocol.md section 3, "What `make bench`
 *    compares against").  Fixed buffers made most connections steady,
 *    not all: each of the two is the fastest of three drawn
 *    (tcp_connect_pair).  MULPDU
 *    comes from the connection's MSS, as in the device; -mss1460 shows
 *    the same with the MULPDU of a 1460-octet MSS (an Ethernet path), with
 *    and without CRC (the difference is what the CRC costs there).
 *    NAME-framed-raw: raw TCP carrying the bytes of NAME's FPDUs (header,
 *    payload and trailer iovecs, sent in the engines' batches) against
 *    plain raw TCP, paired on one connection: what the framing costs the
 *    kernel.  NAME-limit: the bound of the design, that framed time plus
 *    the passes over the data rnic adds to it, FPDU by FPDU (CRC on each
 *    side, the placement copy), each measured in this run; a Write row's
 *    distance below it is the cost of all else (rnic's work per FPDU,
 *    system calls, the loop).
 *  - read-64k-crc, read-1m-crc, read-64k-crc-qd16: MB/s of RDMA Reads
 *    against RDMA Writes of the same size, one at a time (an ORD of 1, as
 *    qperf connects) or 16 at a time (perftest's ORD), on one connection
 *    (bench_read() says how).  With one thread driving both engines the
 *    Read's extra hop costs a turn of the loop, not a wake-up of another
 *    process: the device bench's dev-read-64k-ord1 has that.
 *  - send-64-rtt: microseconds per round trip of a 64-octet Send answered
 *    by a 64-octet Send, against raw TCP ping-pong of 64 octets.
 *  - stag-lookup / stag-resolve: calls per second with 1,048,576 regions
 *    registered, on STags drawn at random (the same sequence for all),
 *    against indexing a plain array of {key, valid} by STag index (2 MiB,
 *    which stays in the core's cache);
 *    stag-resolve-vs-entries: resolve again, against a plain array of
 *    32-octet entries holding what a resolve must read, checked for key,
 *    PD, access and bounds (32 MiB, a miss to DRAM per STag as the
 *    table's).  Each alternates with its baseline run by run, as the TCP
 *    rows do, and all arrays are allocated as the table's are.
 *  - qp-idle-host-dN: host memory the core holds per idle QP (rnic_qp_new
 *    with send and receive queues of N slots, the device's ORD/IRD of 16),
 *    as malloc's in-use bytes (mallinfo2) before and after creating
 *    10,000 of them, divided by 10,000; against the goal of 4 KiB.  An
 *    idle QP holds no shadow slots (each queue gets them with its first
 *    post), so N does not show there; qp-used-host-d128 is the same QPs
 *    once each has had a Send, a Receive and an inbound Read queued, which
 *    then hold the slots of all three queues, against the guest's own
 *    rings of that depth (the device's 128-octet WQEs).  The device's own
 *    RnicQp (hw/rnic) is not counted here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include "iwarp/crc32c.h"
#include "iwarp/fpdu.h"
#include "iwarp/qp.h"
#include "rnic/rnic-abi.h"
#include "support/epfix.h"

#define BENCH_RUNS      7
#define MIB             ((size_t)1 << 20)
#define XFER_PER_RUN    32          /* 1 MiB transfers per timed run */
#define SOCK_BUF        (4 << 20)   /* SO_SNDBUF, SO_RCVBUF: see above */
#define CONN_DRAWS      3           /* connections drawn per pair: see above */
#define RTT_PER_RUN     2000
#define NSTAGS          ((uint32_t)1 << 20)
#define LOOKUPS_PER_RUN ((uint32_t)1 << 22)

#define SRC_OFF         0ull
#define DST_OFF         ((uint64_t)4 << 20)

/* The connection in use: the engines' or the raw baseline's (paired runs). */
static int fds[2][2] = { { -1, -1 }, { -1, -1 } };
static int *fd = fds[0];

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Median seconds of BENCH_RUNS timed calls of @fn, after one warm-up. */
static double median_time(void (*fn)(void *), void *arg)
{
    double t[BENCH_RUNS];

    fn(arg);
    for (int i = 0; i < BENCH_RUNS; i++) {
        double start = now_s();

        fn(arg);
        t[i] = now_s() - start;
    }
    qsort(t, BENCH_RUNS, sizeof(t[0]), cmp_double);
    return t[BENCH_RUNS / 2];
}

/*
 * Median seconds of BENCH_RUNS timed calls of @fn on connection @fn_fds
 * and of @base on @base_fds, alternated run by run so that both see the
 * same machine load (this machine is shared: a baseline measured once,
 * seconds earlier, made ratios swing by 2x).  Returns the median of the
 * runs' time ratios fn/base, steadier than the ratio of the two medians.
 */
static double median_time_paired(void (*fn)(void *), void *arg, int *fn_fds,
                                 void (*base)(void *), void *base_arg,
                                 int *base_fds, double *t_fn, double *t_base)
{
    double t[2][BENCH_RUNS], r[BENCH_RUNS];

    fd = base_fds;
    base(base_arg);
    fd = fn_fds;
    fn(arg);
    for (int i = 0; i < BENCH_RUNS; i++) {
        double start = now_s();

        fd = base_fds;
        base(base_arg);
        t[1][i] = now_s() - start;
        fd = fn_fds;
        start = now_s();
        fn(arg);
        t[0][i] = now_s() - start;
        r[i] = t[0][i] / t[1][i];
    }
    for (int k = 0; k < 2; k++) {
        qsort(t[k], BENCH_RUNS, sizeof(t[k][0]), cmp_double);
    }
    qsort(r, BENCH_RUNS, sizeof(r[0]), cmp_double);
    *t_fn = t[0][BENCH_RUNS / 2];
    *t_base = t[1][BENCH_RUNS / 2];
    return r[BENCH_RUNS / 2];
}

static void report_ratio(const char *name, double value, const char *unit,
                         const char *base_name, double base, double ratio)
{
    printf("bench: %s %.3g %s ratio=%.2f (vs %s %.3g %s)\n", name, value,
           unit, ratio, base_name, base, unit);
    fflush(stdout);
}

static void report(const char *name, double value, const char *unit,
                   const char *base_name, double base)
{
    report_ratio(name, value, unit, base_name, base, value / base);
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* ---- CRC32c ---- */

static uint8_t crc_buf[MIB];
static volatile uint32_t crc_sink;

struct crc_job {
    uint32_t (*fn)(uint32_t crc, const void *buf, size_t len);
    size_t len;             /* summed over and over, through crc_buf */
};

static void crc_run(void *arg)
{
    const struct crc_job *j = arg;

    for (size_t off = 0; off + j->len <= 64 * MIB; off += j->len) {
        crc_sink = j->fn(crc_sink, crc_buf + off % (MIB - j->len + 1), j->len);
    }
}

static double crc_gbs(uint32_t (*fn)(uint32_t, const void *, size_t),
                      size_t len)
{
    struct crc_job j = { fn, len };

    return 64.0 * MIB / len * len / 1e9 / median_time(crc_run, &j);
}

/*
 * 1 MiB (the bulk of a loopback Write) and 1460 octets (an FPDU's worth
 * on an Ethernet path), each implementation this CPU has, against the
 * crc32 instruction's three streams at the same length.
 */
static void bench_crc32c(void)
{
    static const struct {
        const char *name;
        uint32_t (*fn)(uint32_t, const void *, size_t);
        bool (*available)(void);
    } fold[] = {
        { "clmul", rnic_crc32c_clmul, rnic_crc32c_clmul_available },
        { "vpclmul", rnic_crc32c_vpclmul, rnic_crc32c_vpclmul_available },
    };
    static const size_t lens[] = { MIB, 1460 };
    double hw[2];
    char name[64];

    for (size_t i = 0; i < sizeof(crc_buf); i++) {
        crc_buf[i] = (uint8_t)(i * 131 + 7);
    }
    if (!rnic_crc32c_hw_available()) {
        printf("bench: crc32c-hw n/a: this CPU has no SSE4.2\n");
        return;
    }
    hw[0] = crc_gbs(rnic_crc32c_hw, MIB);
    report("crc32c-hw", hw[0], "GB/s", "crc32c-sw",
           crc_gbs(rnic_crc32c_sw, MIB));
    hw[1] = crc_gbs(rnic_crc32c_hw, 1460);
    for (size_t f = 0; f < sizeof(fold) / sizeof(fold[0]); f++) {
        for (int l = 0; l < 2; l++) {
            snprintf(name, sizeof(name), "crc32c-%s-%zu", fold[f].name,
                     lens[l]);
            if (!fold[f].available()) {
                printf("bench: %s n/a: not on this CPU\n", name);
                continue;
            }
            report(name, crc_gbs(fold[f].fn, lens[l]), "GB/s",
                   l ? "crc32c-hw-1460" : "crc32c-hw", hw[l]);
        }
    }
}

/* ---- loopback TCP ---- */


static void tcp_connect_one(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof(sa);
    int l = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(l, 1) < 0 || getsockname(l, (struct sockaddr *)&sa, &len) < 0) {
        die("listen");
    }
    fd[0] = socket(AF_INET, SOCK_STREAM, 0);
    if (fd[0] < 0 || connect(fd[0], (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        (fd[1] = accept(l, NULL, NULL)) < 0) {
        die("connect");
    }
    close(l);
    for (int i = 0; i < 2; i++) {
        int one = 1, bufsz = SOCK_BUF;

        fcntl(fd[i], F_SETFL, fcntl(fd[i], F_GETFL) | O_NONBLOCK);
        setsockopt(fd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        setsockopt(fd[i], SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
        setsockopt(fd[i], SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
    }
}

static void tcp_close_pair(void)
{
    close(fd[0]);
    close(fd[1]);
}

static int wait_io(void)
{
    struct pollfd p[2] = { { fd[0], POLLIN | POLLOUT, 0 },
                           { fd[1], POLLIN | POLLOUT, 0 } };

    if (poll(p, 2, 1000) < 0) {
        die("poll");
    }
    return (p[0].revents & POLLIN ? 1 : 0) | (p[0].revents & POLLOUT ? 2 : 0) |
           (p[1].revents & POLLIN ? 4 : 0) | (p[1].revents & POLLOUT ? 8 : 0);
}

/* ---- raw TCP baselines ---- */

static uint8_t raw_buf[2][MIB];

/* Moves @len octets from fd[from] to fd[!from]. */
static void raw_move(int from, size_t len)
{
    size_t sent = 0, got = 0;

    while (got < len) {
        int ev = wait_io();
        ssize_t n;

        if (sent < len && (ev & (from ? 8 : 2))) {
            n = write(fd[from], raw_buf[from] + sent % MIB,
                      len - sent < MIB - sent % MIB ? len - sent
                                                    : MIB - sent % MIB);
            sent += n > 0 ? (size_t)n : 0;
        }
        if (ev & (from ? 1 : 4)) {
            n = read(fd[!from], raw_buf[!from] + got % MIB, MIB - got % MIB);
            got += n > 0 ? (size_t)n : 0;
        }
    }
}

static void raw_stream_run(void *arg)
{
    (void)arg;
    raw_move(0, XFER_PER_RUN * MIB);
}

static void raw_pingpong_run(void *arg)
{
    size_t len = *(size_t *)arg;

    for (int i = 0; i < RTT_PER_RUN; i++) {
        raw_move(0, len);
        raw_move(1, len);
    }
}

/*
 * The fastest of CONN_DRAWS fresh connections, each timed by one raw run:
 * with the same settings, now and then a loopback connection moves a
 * fraction of what the others do for its whole life (see the head), and
 * a row that drew one for its raw baseline printed a ratio above 2.  The
 * engines' connection is drawn the same way, so a ratio compares rnic
 * with raw TCP, not one connection with another.
 */
static void tcp_connect_pair(void)
{
    int best[2] = { -1, -1 };
    double best_t = 0;

    for (int i = 0; i < CONN_DRAWS; i++) {
        double t = now_s();

        tcp_connect_one();
        raw_stream_run(NULL);
        t = now_s() - t;
        if (best[0] >= 0 && t >= best_t) {
            tcp_close_pair();
            continue;
        }
        if (best[0] >= 0) {
            close(best[0]);
            close(best[1]);
        }
        best[0] = fd[0];
        best[1] = fd[1];
        best_t = t;
    }
    fd[0] = best[0];
    fd[1] = best[1];
}

/* ---- two engines ---- */

static struct epf_side A, B;        /* A initiator */

static void ep_tx(struct epf_side *s, int i)
{
    struct iovec iov[RNIC_EP_TX_BATCH_IOV];
    int cnt;
    ssize_t n = 1;

    while (n > 0 && rnic_ep_tx_peek_batch(s->ep, iov, RNIC_EP_TX_BATCH_IOV,
                                          &cnt, RNIC_EP_TX_BATCH_FPDUS)) {
        n = writev(fd[i], iov, cnt);
        rnic_ep_tx_advance(s->ep, n > 0 ? (size_t)n : 0);
    }
}

/* As the device reads (hw/rnic/rnic-dp.c): on while a read fills the chunk. */
static void ep_rx(struct epf_side *s, int i)
{
    static uint8_t buf[RNIC_EP_RX_CHUNK];
    size_t done = 0;
    ssize_t n;

    do {
        n = read(fd[i], buf, sizeof(buf));
        if (n > 0 && rnic_ep_rx(s->ep, buf, (size_t)n) < 0) {
            fprintf(stderr, "bench: the stream broke\n");
            exit(1);
        }
        done += sizeof(buf);
    } while (n == sizeof(buf) && done < RNIC_EP_TX_BATCH_BYTES);
}

/* One turn of the loop both engines share: what is readable, then send. */
static void engines_turn(void)
{
    int ev = wait_io();

    if (ev & 1) {
        ep_rx(&A, 0);
    }
    if (ev & 4) {
        ep_rx(&B, 1);
    }
    ep_tx(&A, 0);
    ep_tx(&B, 1);
}

/* Runs both engines until @s has @n receive completions (all drained). */
static void run_until_recv(struct epf_side *s, uint32_t n)
{
    struct rnic_cqe cqe[64];
    uint32_t got = 0;

    while (got < n) {
        engines_turn();
        got += rnic_cq_poll(s->rcq, cqe, 64);
        rnic_cq_poll(A.scq, cqe, 64);
        rnic_cq_poll(B.scq, cqe, 64);
    }
}

/*
 * @socket_mss: MULPDU from the connection's TCP_MAXSEG, as the device sets
 * it (65483 on loopback); otherwise the engine's default for a 1460-octet
 * MSS, as on an Ethernet path.
 */
static void engines_up_rd(bool crc, bool socket_mss, uint16_t rd)
{
    struct epf_params pa = { .initiator = true, .max_rd = rd };
    struct epf_params pb = { .initiator = false, .max_rd = rd };
    int mss = 0;
    socklen_t len = sizeof(mss);

    epf_mpa_pair(crc, false, 0, rd, &pa.mpa, &pb.mpa);
    tcp_connect_pair();
    if (socket_mss &&
        !getsockopt(fd[0], IPPROTO_TCP, TCP_MAXSEG, &mss, &len) && mss > 0) {
        pa.mulpdu = pb.mulpdu = rnic_fpdu_mulpdu(mss, false);
    }
    epf_init(&A, &pa, 10);
    epf_init(&B, &pb, 20);
}

/* ORD and IRD of 4 */
static void engines_up(bool crc, bool socket_mss)
{
    engines_up_rd(crc, socket_mss, 4);
}

static void engines_down(void)
{
    epf_fini(&A);
    epf_fini(&B);
    tcp_close_pair();
}

static uint32_t write_stag;

static void rdma_write_run(void *arg)
{
    struct rnic_send_wr w = epf_wr(1, RNIC_WR_WRITE, A.lkey, SRC_OFF, MIB);
    struct rnic_send_wr done = epf_wr(2, RNIC_WR_SEND, A.lkey, SRC_OFF, 0);

    (void)arg;
    w.remote_stag = write_stag;
    w.remote_to = epf_addr(DST_OFF);
    w.flags = 0;
    done.num_sge = 0;
    for (int i = 0; i < XFER_PER_RUN; i++) {
        epf_post_recv(&B, 1, DST_OFF, 0);
        epf_post(&A, &w);
        epf_post(&A, &done);
        run_until_recv(&B, 1);
    }
}

/* A second loopback connection for the raw baseline, beside the engines'. */
static void raw_pair_up(void)
{
    fd = fds[1];
    tcp_connect_pair();
    fd = fds[0];
}

static void raw_pair_down(void)
{
    fd = fds[1];
    tcp_close_pair();
    fd = fds[0];
}

/*
 * Raw TCP carrying its bytes framed as rnic frames a Write's FPDUs: each
 * MiB cut into FPDUs of @payload octets (the last one shorter), each
 * FPDU ULPDU_LENGTH and the DDP header in one iovec, the payload, then
 * the pad and CRC; one writev() of up to a batch at a time (as the
 * engines send: RNIC_EP_TX_BATCH_BYTES, RNIC_EP_TX_BATCH_FPDUS).
 * What the kernel alone spends on such a stream, beside raw_move()'s one
 * buffer per write().
 */
struct framed {
    size_t payload;
    size_t left;                /* FPDUs not yet wholly sent */
    size_t off, skip;           /* the oldest's payload offset, octets gone */
};

static uint8_t framed_hdr[RNIC_MPA_HDR_LEN +
                          sizeof(struct rnic_ddp_tagged_hdr)];
static uint8_t framed_trailer[3 + RNIC_MPA_CRC_LEN];

/* The FPDU at payload offset @off of the MiB: three iovecs; its length. */
static size_t framed_fpdu(size_t payload, size_t off, struct iovec *iov)
{
    size_t plen = MIB - off < payload ? MIB - off : payload;
    size_t ulpdu = sizeof(framed_hdr) - RNIC_MPA_HDR_LEN + plen;

    iov[0] = (struct iovec){ framed_hdr, sizeof(framed_hdr) };
    iov[1] = (struct iovec){ raw_buf[0] + off, plen };
    iov[2] = (struct iovec){ framed_trailer,
                             rnic_mpa_pad_len(ulpdu) + RNIC_MPA_CRC_LEN };
    return rnic_fpdu_len(ulpdu);
}

static size_t framed_next(size_t payload, size_t off)
{
    return MIB - off > payload ? off + payload : 0;
}

static void framed_send(struct framed *fr)
{
    struct iovec iov[3 * RNIC_EP_TX_BATCH_FPDUS];
    size_t flen[RNIC_EP_TX_BATCH_FPDUS];
    size_t len = 0, off = fr->off, done = fr->skip;
    int k, i = 0;
    ssize_t n;

    for (k = 0; k < RNIC_EP_TX_BATCH_FPDUS && (size_t)k < fr->left &&
                len < RNIC_EP_TX_BATCH_BYTES; k++) {
        flen[k] = framed_fpdu(fr->payload, off, iov + 3 * k);
        len += flen[k];
        off = framed_next(fr->payload, off);
    }
    while (done >= iov[i].iov_len) {    /* what went of the oldest FPDU */
        done -= iov[i++].iov_len;
    }
    iov[i].iov_base = (uint8_t *)iov[i].iov_base + done;
    iov[i].iov_len -= done;
    n = writev(fd[0], iov + i, 3 * k - i);
    done = fr->skip + (n > 0 ? (size_t)n : 0);
    for (i = 0; i < k && done >= flen[i]; i++) {
        done -= flen[i];
        fr->off = framed_next(fr->payload, fr->off);
        fr->left--;
    }
    fr->skip = done;
}

static void raw_framed_run(void *arg)
{
    struct framed fr = { .payload = *(size_t *)arg };
    size_t len = 0, got = 0, off = 0;
    struct iovec iov[3];

    do {
        len += XFER_PER_RUN * framed_fpdu(fr.payload, off, iov);
        fr.left += XFER_PER_RUN;
        off = framed_next(fr.payload, off);
    } while (off);
    while (got < len) {
        int ev = wait_io();

        if (fr.left && (ev & 2)) {
            framed_send(&fr);
        }
        if (ev & 4) {
            ssize_t n = read(fd[1], raw_buf[1], MIB);

            got += n > 0 ? (size_t)n : 0;
        }
    }
    /* loopback mostly delivers within writev(): octets sent twice show */
    if (got > len || (wait_io() & 4)) {
        fprintf(stderr, "bench: the framed run sent more than its FPDUs\n");
        exit(1);
    }
}

/*
 * The passes over the data that rnic adds to raw TCP's two socket copies
 * by design, for one run's bytes in FPDUs of @payload octets
 * (docs/protocol.md section 3): with CRC, one sum over each FPDU of the
 * source as it is sent and one over each FPDU in the input chunk, and
 * always the placement copy from the chunk into the target.
 */
struct passes {
    bool crc;
    size_t payload;
};

static uint8_t pass_src[MIB], pass_chunk[RNIC_EP_RX_CHUNK], pass_dst[MIB];

static void own_passes_run(void *arg)
{
    const struct passes *p = arg;
    uint32_t c = 0;

    for (int i = 0; i < XFER_PER_RUN; i++) {
        size_t in = 0;          /* the FPDU's place in the input chunk */

        for (size_t off = 0; off < MIB; off += p->payload) {
            size_t len = MIB - off < p->payload ? MIB - off : p->payload;

            if (in + len > sizeof(pass_chunk)) {
                in = 0;
            }
            if (p->crc) {
                c ^= rnic_crc32c(0, pass_src + off, len);
                c ^= rnic_crc32c(0, pass_chunk + in, len);
            }
            memcpy(pass_dst + off, pass_chunk + in, len);
            in += len;
        }
    }
    crc_sink = c;
}

/*
 * NAME-limit: the fastest these Writes could go by design: the time of
 * raw TCP carrying the same FPDUs (raw_framed_run, paired with the plain
 * raw run for its ratio) plus that of rnic's own passes (own_passes_run),
 * all measured now.  Returns that time.
 */
static double report_limit(const char *name, const struct passes *p,
                           double mb, double t_raw)
{
    double t_framed, t_plain, r, t;
    char limit[64];

    r = median_time_paired(raw_framed_run, (void *)&p->payload, fds[1],
                           raw_stream_run, NULL, fds[1], &t_framed, &t_plain);
    snprintf(limit, sizeof(limit), "%s-framed-raw", name);
    report_ratio(limit, mb / t_framed, "MB/s", "raw-tcp", mb / t_plain, 1 / r);
    t = t_raw * r + median_time(own_passes_run, (void *)p);
    snprintf(limit, sizeof(limit), "%s-limit", name);
    report(limit, mb / t, "MB/s", "raw-tcp", mb / t_raw);
    return t;
}

/*
 * NAME-per-fpdu: a run's time per FPDU (the Write's, and the zero-length
 * Send's behind each) against the limit's: what is left between the two
 * is rnic's own work per FPDU, which the limit leaves out.  With the
 * small FPDUs of a 1460-octet MSS it is what keeps a row from its limit
 * (docs/protocol.md section 3).
 */
static void report_per_fpdu(const char *name, size_t payload, double t,
                            double t_limit)
{
    double n = XFER_PER_RUN * ((MIB + payload - 1) / payload + 1);
    char row[64], lim[64];

    snprintf(row, sizeof(row), "%s-per-fpdu", name);
    snprintf(lim, sizeof(lim), "%s-limit-per-fpdu", name);
    report_ratio(row, t / n * 1e9, "ns", lim, t_limit / n * 1e9, t / t_limit);
}

static void bench_write(const char *name, bool crc, bool socket_mss)
{
    double mb = XFER_PER_RUN * (double)MIB / 1e6, t, t_raw, t_limit, r;
    struct passes p = { .crc = crc };

    engines_up(crc, socket_mss);
    raw_pair_up();
    p.payload = rnic_ep_mulpdu(A.ep) - sizeof(struct rnic_ddp_tagged_hdr);
    write_stag = epf_mr(&B, DST_OFF, MIB, RNIC_ACCESS_REMOTE_WRITE |
                        RNIC_ACCESS_LOCAL_WRITE, RNIC_STAG_PERSISTENT, false);
    r = median_time_paired(rdma_write_run, NULL, fds[0], raw_stream_run,
                           NULL, fds[1], &t, &t_raw);
    report_ratio(name, mb / t, "MB/s", "raw-tcp", mb / t_raw, 1 / r);
    t_limit = report_limit(name, &p, mb, t_raw);
    report_per_fpdu(name, p.payload, t, t_limit);
    raw_pair_down();
    engines_down();
}

/*
 * RDMA Read against RDMA Write, the same octets in the same direction
 * (A's memory into B's) over the same engines and connection, alternated
 * run by run (the Write as the baseline).  Each run moves XFER_PER_RUN MiB
 * in messages of @size octets with up to @depth of them not yet placed:
 * depth 1 is a consumer with an ORD of 1 (qperf connects with that), 16
 * one that keeps the device's ORD full (perftest).  B's Read is placed
 * when it completes; A's Write when a zero-length Send posted behind it
 * is received (as write-1m-* do).  The data goes the same way in both:
 * a loopback connection can turn slow in one direction and stay so (in
 * one run, Writes fell from 5.6 to 2.3 GB/s after their first runs while
 * Reads bringing the data the other way stayed at 5.6), and a ratio must
 * not compare one direction with the other.
 */
struct xfer {
    bool read;
    uint32_t size;
    uint32_t depth;
};

static uint32_t read_stag;

/* One turn of the loop: what B's send and receive CQs completed. */
static void xfer_turn(uint32_t *b_sent, uint32_t *b_recv)
{
    struct rnic_cqe cqe[64];
    uint32_t n;

    engines_turn();
    n = rnic_cq_poll(B.scq, cqe, 64);
    for (uint32_t i = 0; i < n; i++) {
        if (cqe[i].status != RNIC_WC_SUCCESS) {
            fprintf(stderr, "bench: a %s failed\n",
                    rnic_wc_opcode_str(cqe[i].opcode));
            exit(1);
        }
    }
    *b_sent += n;
    *b_recv += rnic_cq_poll(B.rcq, cqe, 64);
    rnic_cq_poll(A.scq, cqe, 64);
}

static void xfer_run(void *arg)
{
    const struct xfer *x = arg;
    uint32_t total = (uint32_t)(XFER_PER_RUN * MIB / x->size);
    uint32_t posted = 0, sent = 0, recv = 0;
    uint32_t *placed = x->read ? &sent : &recv;
    struct rnic_send_wr wr, fin = epf_wr(2, RNIC_WR_SEND, A.lkey, SRC_OFF, 0);

    fin.num_sge = 0;
    fin.flags = 0;
    if (x->read) {
        wr = epf_wr(1, RNIC_WR_READ, B.lkey, DST_OFF, x->size);
        wr.remote_stag = read_stag;
        wr.remote_to = epf_addr(SRC_OFF);
    } else {
        wr = epf_wr(1, RNIC_WR_WRITE, A.lkey, SRC_OFF, x->size);
        wr.remote_stag = write_stag;
        wr.remote_to = epf_addr(DST_OFF);
        wr.flags = 0;
    }
    while (*placed < total) {
        while (posted < total && posted - *placed < x->depth) {
            if (x->read) {
                epf_post(&B, &wr);
            } else {
                epf_post(&A, &wr);
                epf_post_recv(&B, 1, DST_OFF, 0);
                epf_post(&A, &fin);
            }
            posted++;
        }
        xfer_turn(&sent, &recv);
    }
}

static void bench_read(const char *name, uint32_t size, uint32_t depth)
{
    struct xfer rd = { true, size, depth }, wr = { false, size, depth };
    double mb = XFER_PER_RUN * (double)MIB / 1e6, t_rd, t_wr, r;
    char base[64];

    engines_up_rd(true, true, 16);
    write_stag = epf_mr(&B, DST_OFF, MIB, RNIC_ACCESS_REMOTE_WRITE |
                        RNIC_ACCESS_LOCAL_WRITE, RNIC_STAG_PERSISTENT, false);
    read_stag = epf_mr(&A, SRC_OFF, MIB, RNIC_ACCESS_REMOTE_READ |
                       RNIC_ACCESS_LOCAL_READ, RNIC_STAG_PERSISTENT, false);
    r = median_time_paired(xfer_run, &rd, fds[0], xfer_run, &wr, fds[0],
                           &t_rd, &t_wr);
    snprintf(base, sizeof(base), "write%s", name + strlen("read"));
    report_ratio(name, mb / t_rd, "MB/s", base, mb / t_wr, 1 / r);
    engines_down();
}

static void send_pingpong_run(void *arg)
{
    uint32_t len = *(uint32_t *)arg;
    struct rnic_send_wr ping = epf_wr(1, RNIC_WR_SEND, A.lkey, SRC_OFF, len);
    struct rnic_send_wr pong = epf_wr(2, RNIC_WR_SEND, B.lkey, SRC_OFF, len);

    ping.flags = pong.flags = 0;
    for (int i = 0; i < RTT_PER_RUN; i++) {
        epf_post_recv(&B, 1, DST_OFF, len);
        epf_post_recv(&A, 1, DST_OFF, len);
        epf_post(&A, &ping);
        run_until_recv(&B, 1);
        epf_post(&B, &pong);
        run_until_recv(&A, 1);
    }
}

static void bench_pingpong(void)
{
    uint32_t len = 64;
    size_t raw_len = len;
    double raw, ep, r;

    engines_up(true, true);
    raw_pair_up();
    r = median_time_paired(send_pingpong_run, &len, fds[0], raw_pingpong_run,
                           &raw_len, fds[1], &ep, &raw);
    raw_pair_down();
    engines_down();
    report_ratio("send-64-rtt-crc", ep / RTT_PER_RUN * 1e6, "us",
                 "raw-tcp-64-rtt", raw / RTT_PER_RUN * 1e6, r);
}

/* ---- STag lookups ---- */

struct plain_entry {
    uint8_t key;
    bool valid;
};

/*
 * What a resolve must read: a plain array of entries holding that and no
 * more (key, validity, PD, access, base, length, guest address), 32
 * octets as the table's, checked for key, validity, PD, access and
 * bounds.  It is the fair baseline of stag-resolve: a random index into
 * 32 MiB misses the cache to DRAM, for this array as for the table.
 */
struct plain_full {
    uint64_t base_to, length, addr;
    uint32_t pd;
    uint8_t key, valid, access, pad;
};

#define PLAIN_BYTES      (((size_t)NSTAGS + 2) * sizeof(struct plain_entry))
#define PLAIN_FULL_BYTES (((size_t)NSTAGS + 2) * sizeof(struct plain_full))

/*
 * As the table allocates its arrays (stag.c): anonymous memory aligned to
 * a page, so that no entry straddles two cache lines, in huge pages where
 * the kernel grants them.
 */
static void *stag_bench_array(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

static struct rnic_stag_table *table;
static struct plain_entry *plain;
static struct plain_full *plain_full;
static uint32_t *probe;             /* the random STags looked up */
static volatile uint64_t lookup_sink;

static void stag_lookup_run(void *arg)
{
    uint64_t hits = 0;

    (void)arg;
    for (uint32_t i = 0; i < LOOKUPS_PER_RUN; i++) {
        hits += rnic_stag_lookup(table, probe[i]);
    }
    lookup_sink = hits;
}

static void stag_resolve_run(void *arg)
{
    uint32_t pd = *(uint32_t *)arg;
    struct rnic_mem_ref ref;
    uint64_t hits = 0;

    for (uint32_t i = 0; i < LOOKUPS_PER_RUN; i++) {
        hits += rnic_stag_resolve(table, probe[i], pd, 1, 0x100, 64,
                                  RNIC_ACCESS_REMOTE_WRITE, &ref) ==
                RNIC_STAG_OK;
    }
    lookup_sink = hits;
}

static void plain_lookup_run(void *arg)
{
    uint64_t hits = 0;

    (void)arg;
    for (uint32_t i = 0; i < LOOKUPS_PER_RUN; i++) {
        const struct plain_entry *e = &plain[rnic_stag_index(probe[i])];

        hits += e->valid && e->key == rnic_stag_key(probe[i]);
    }
    lookup_sink = hits;
}

static void plain_resolve_run(void *arg)
{
    uint32_t pd = *(uint32_t *)arg;
    uint64_t hits = 0;

    for (uint32_t i = 0; i < LOOKUPS_PER_RUN; i++) {
        const struct plain_full *e = &plain_full[rnic_stag_index(probe[i])];

        hits += e->valid && e->key == rnic_stag_key(probe[i]) &&
                e->pd == pd && (e->access & RNIC_ACCESS_REMOTE_WRITE) &&
                0x100 >= e->base_to && 0x100 + 64 <= e->base_to + e->length;
    }
    lookup_sink = hits;
}

static void bench_stags(void)
{
    struct rnic_stag_table_params tp = {
        .max_stags = NSTAGS + 1, .max_pds = 1,
        .default_policy = RNIC_STAG_PERSISTENT,
    };
    struct epf_rng rng = { 12345 };
    uint32_t pd, *stags = malloc(NSTAGS * sizeof(*stags));
    double r, t_fig, t_base;

    table = rnic_stag_table_new(&tp);
    plain = stag_bench_array(PLAIN_BYTES);
    plain_full = stag_bench_array(PLAIN_FULL_BYTES);
    probe = malloc(LOOKUPS_PER_RUN * sizeof(*probe));
    if (!table || !plain || !plain_full || !probe || !stags ||
        rnic_pd_alloc(table, &pd) != RNIC_STAG_OK) {
        die("stag table");
    }
    for (uint32_t i = 0; i < NSTAGS; i++) {
        uint64_t page = (uint64_t)(i + 1) << 12;
        struct rnic_mr_attr a = {
            .pd = pd, .key = (uint8_t)i, .access = RNIC_ACCESS_REMOTE_WRITE |
            RNIC_ACCESS_LOCAL_WRITE, .policy = RNIC_STAG_PERSISTENT,
            .pages = &page, .npages = 1, .page_shift = 12, .length = 4096,
        };

        if (rnic_mr_register(table, &a, &stags[i]) != RNIC_STAG_OK) {
            die("rnic_mr_register");
        }
        plain[rnic_stag_index(stags[i])] =
            (struct plain_entry) { rnic_stag_key(stags[i]), true };
        plain_full[rnic_stag_index(stags[i])] = (struct plain_full) {
            .length = 4096, .addr = page, .pd = pd,
            .key = rnic_stag_key(stags[i]), .valid = true,
            .access = RNIC_ACCESS_REMOTE_WRITE,
        };
    }
    for (uint32_t i = 0; i < LOOKUPS_PER_RUN; i++) {
        probe[i] = stags[epf_rand(&rng, NSTAGS)];
    }
    r = median_time_paired(stag_lookup_run, NULL, fd, plain_lookup_run, NULL,
                           fd, &t_fig, &t_base);
    report_ratio("stag-lookup", LOOKUPS_PER_RUN / t_fig, "lookups/s",
                 "plain-array", LOOKUPS_PER_RUN / t_base, 1 / r);
    r = median_time_paired(stag_resolve_run, &pd, fd, plain_lookup_run, NULL,
                           fd, &t_fig, &t_base);
    report_ratio("stag-resolve", LOOKUPS_PER_RUN / t_fig, "lookups/s",
                 "plain-array", LOOKUPS_PER_RUN / t_base, 1 / r);
    r = median_time_paired(stag_resolve_run, &pd, fd, plain_resolve_run, &pd,
                           fd, &t_fig, &t_base);
    report_ratio("stag-resolve-vs-entries", LOOKUPS_PER_RUN / t_fig,
                 "lookups/s", "plain-entry-array", LOOKUPS_PER_RUN / t_base,
                 1 / r);
    rnic_stag_table_free(table);
    munmap(plain_full, PLAIN_FULL_BYTES);
    munmap(plain, PLAIN_BYTES);
    free(probe);
    free(stags);
}

/* ---- host memory per idle QP ---- */

#define NQPS 10000

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();

    return mi.uordblks + mi.hblkhd;
}

/* One post to each queue: what makes a QP hold its shadow slots. */
static void qp_use(struct rnic_qp *qp)
{
    struct rnic_send_wr s = { .opcode = RNIC_WR_SEND };
    struct rnic_recv_wr r = { .num_sge = 0 };
    struct rnic_inbound_read rd = { .length = 1 };

    if (rnic_qp_adopt_connection(qp, 16, 16) || rnic_qp_post_send(qp, &s) ||
        rnic_qp_post_recv(qp, &r) || rnic_qp_irq_push(qp, &rd)) {
        die("qp use");
    }
}

static void bench_qp_memory(uint32_t depth, bool used)
{
    struct rnic_cq *cq = rnic_cq_new(1024, NULL, NULL);
    struct rnic_qp **qps = calloc(NQPS, sizeof(*qps));
    struct rnic_qp_attr a = {
        .sq_depth = depth, .rq_depth = depth,
        .max_send_sge = 4, .max_recv_sge = 4,
        .max_ord = 16, .max_ird = 16, .atomics = true,
        .send_cq = cq, .recv_cq = cq,
    };
    char name[32], rings[32];
    size_t before;

    if (!cq || !qps) {
        die("qp bench");
    }
    before = heap_in_use();
    for (uint32_t i = 0; i < NQPS; i++) {
        qps[i] = rnic_qp_new(i + 1, &a);
        if (!qps[i]) {
            die("rnic_qp_new");
        }
        if (used) {
            qp_use(qps[i]);
        }
    }
    snprintf(name, sizeof(name), "qp-%s-host-d%u", used ? "used" : "idle",
             depth);
    snprintf(rings, sizeof(rings), "guest-rings-d%u", depth);
    report(name, (double)(heap_in_use() - before) / NQPS, "B/QP",
           used ? rings : "goal",
           used ? depth * (RNIC_SQ_WQE_SIZE + RNIC_RQ_WQE_SIZE) : 4096);
    for (uint32_t i = 0; i < NQPS; i++) {
        rnic_qp_free(qps[i]);
    }
    free(qps);
    rnic_cq_destroy(cq);
}

/* `rnic-bench [SUBSTRING]`: only the figures whose group name holds it. */
static bool wanted(const char *only, const char *name)
{
    return !only || strstr(name, only);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        bool crc, socket_mss;
    } writes[] = {
        { "write-1m-crc", true, true },
        { "write-1m-nocrc", false, true },
        { "write-1m-crc-mss1460", true, false },
        { "write-1m-nocrc-mss1460", false, false },
    };
    static const struct {
        const char *name;
        uint32_t size, depth;
    } reads[] = {
        { "read-64k-crc", 64 * 1024, 1 },
        { "read-1m-crc", MIB, 1 },
        { "read-64k-crc-qd16", 64 * 1024, 16 },
    };
    const char *only = argc > 1 ? argv[1] : NULL;

    if (wanted(only, "crc32c")) {
        bench_crc32c();
    }
    for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
        if (wanted(only, writes[i].name)) {
            bench_write(writes[i].name, writes[i].crc, writes[i].socket_mss);
        }
    }
    for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
        if (wanted(only, reads[i].name)) {
            bench_read(reads[i].name, reads[i].size, reads[i].depth);
        }
    }
    if (wanted(only, "send-64-rtt-crc")) {
        bench_pingpong();
    }
    if (wanted(only, "stag-lookup stag-resolve")) {
        bench_stags();
    }
    if (wanted(only, "qp-idle-host-d1 qp-idle-host-d128 qp-used-host-d128")) {
        bench_qp_memory(1, false);
        bench_qp_memory(128, false);
        bench_qp_memory(128, true);
    }
    return 0;
}
