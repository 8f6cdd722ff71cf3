/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core/device/tcp_repair.c on real loopback connections: a socket A,
 * connected to B, is saved, closed and rebuilt as A'; B must read every
 * byte A ever wrote and A' every byte B wrote, in order, without an EOF
 * or a reset.  TCP_REPAIR needs CAP_NET_ADMIN: without it the suite says
 * so and runs nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <check.h>
#include "device/tcp_repair.h"
#include "suites.h"

/* Offsets of header fields in a version 1 blob (tcp_repair.c's order). */
#define BLOB_FAMILY     8
#define BLOB_SND_WSCALE 16
#define BLOB_SEND_LEN   88
#define BLOB_UNSENT_LEN 92
#define BLOB_RECV_LEN   100

/* One direction of a connection: what was written and what read back. */
struct dir {
    const char *name;
    int wfd, rfd;
    uint8_t seed;
    size_t written, got;
};

/* A connection A <-> B, and what went each way. */
struct pair {
    int a, b, listener;
    struct dir ab, ba;
};

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* The byte at @off of a stream: a shift or a repeat shows. */
static uint8_t pattern(uint8_t seed, size_t off)
{
    return (uint8_t)(((uint32_t)off * 2654435761u) >> 13) ^ seed;
}

static bool repair_permitted(void)
{
    int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
    bool ok = fd >= 0 &&
              setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &one, sizeof(one)) == 0;

    if (fd >= 0) {
        close(fd);
    }
    return ok;
}

static void set_nonblock(int fd)
{
    ck_assert_int_eq(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
}

static socklen_t loopback(int family, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    ss->ss_family = family;
    if (family == AF_INET) {
        ((struct sockaddr_in *)ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return sizeof(struct sockaddr_in);
    }
    ((struct sockaddr_in6 *)ss)->sin6_addr = in6addr_loopback;
    return sizeof(struct sockaddr_in6);
}

static bool ipv6_available(void)
{
    struct sockaddr_storage ss;
    socklen_t len = loopback(AF_INET6, &ss);
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&ss, len) == 0;

    if (fd >= 0) {
        close(fd);
    }
    return ok;
}

/*
 * A connected pair over loopback.  @a_accepts: A is the accepted socket
 * and the listener stays open (the restore shares its port, as the
 * device's accepted connections would); else A connected.  @b_rcvbuf,
 * if not 0, is B's SO_RCVBUF, set before the handshake so that B
 * announces a small window.
 */
static void make_pair(int family, bool a_accepts, int b_rcvbuf,
                      struct pair *p)
{
    struct sockaddr_storage ss;
    socklen_t len = loopback(family, &ss);
    int l = socket(family, SOCK_STREAM, 0), c = socket(family, SOCK_STREAM, 0);
    int s;

    ck_assert_int_ge(l, 0);
    ck_assert_int_ge(c, 0);
    if (b_rcvbuf) {
        /* An accepted socket inherits the listener's buffers. */
        ck_assert_int_eq(setsockopt(a_accepts ? c : l, SOL_SOCKET, SO_RCVBUF,
                                    &b_rcvbuf, sizeof(b_rcvbuf)), 0);
    }
    ck_assert_int_eq(bind(l, (struct sockaddr *)&ss, len), 0);
    ck_assert_int_eq(listen(l, 4), 0);
    ck_assert_int_eq(getsockname(l, (struct sockaddr *)&ss, &len), 0);
    ck_assert_int_eq(connect(c, (struct sockaddr *)&ss, len), 0);
    s = accept(l, NULL, NULL);
    ck_assert_int_ge(s, 0);
    p->a = a_accepts ? s : c;
    p->b = a_accepts ? c : s;
    p->listener = l;
    p->ab = (struct dir){ .name = "B reading A", .seed = 0xa5,
                          .wfd = p->a, .rfd = p->b };
    p->ba = (struct dir){ .name = "A reading B", .seed = 0x5b,
                          .wfd = p->b, .rfd = p->a };
    if (!a_accepts) {
        close(l);
        p->listener = -1;
    }
    set_nonblock(p->a);
    set_nonblock(p->b);
}

static void close_pair(struct pair *p)
{
    close(p->a);
    close(p->b);
    if (p->listener >= 0) {
        close(p->listener);
    }
}

/* Writes up to @max more bytes of @d's stream without waiting. */
static size_t dir_write(struct dir *d, size_t max)
{
    uint8_t chunk[16384];
    size_t done = 0;

    while (done < max) {
        size_t n = max - done < sizeof(chunk) ? max - done : sizeof(chunk);
        ssize_t r;

        for (size_t i = 0; i < n; i++) {
            chunk[i] = pattern(d->seed, d->written + i);
        }
        r = send(d->wfd, chunk, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        }
        ck_assert_msg(r > 0, "%s: write: %s", d->name, strerror(errno));
        d->written += r;
        done += r;
    }
    return done;
}

/* Reads what has arrived, checking every byte; an EOF or error fails. */
static void dir_read(struct dir *d)
{
    uint8_t chunk[16384];

    for (;;) {
        ssize_t r = recv(d->rfd, chunk, sizeof(chunk), MSG_DONTWAIT);

        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        }
        ck_assert_msg(r != 0, "%s: EOF after %zu bytes", d->name, d->got);
        ck_assert_msg(r > 0, "%s: %s after %zu bytes", d->name,
                      strerror(errno), d->got);
        ck_assert_msg(d->got + r <= d->written, "%s: %zu bytes, %zu written",
                      d->name, d->got + r, d->written);
        for (ssize_t i = 0; i < r; i++) {
            ck_assert_msg(chunk[i] == pattern(d->seed, d->got + i),
                          "%s: byte %zu wrong", d->name, d->got + i);
        }
        d->got += r;
    }
}

/*
 * Moves @n more bytes each way through @x and @y (@y may be NULL),
 * writing and reading both at once, until everything written has been
 * read, failing when no byte has arrived for @ms milliseconds: a stall,
 * not a slow machine (a test starved of the CPU once read 212750 of
 * 400352 bytes in a 10 s total).
 */
static void pump(struct dir *x, struct dir *y, size_t n, long ms)
{
    struct dir *d[2] = { x, y };
    size_t want[2] = { x->written + n, y ? y->written + n : 0 };
    size_t got = 0;
    long end = 0;

    for (;;) {
        struct pollfd pfd[4];
        int np = 0;
        bool done = true;

        if (x->got + (y ? y->got : 0) != got || !end) {
            got = x->got + (y ? y->got : 0);
            end = now_ms() + ms;
        }
        for (int i = 0; i < 2 && d[i]; i++) {
            dir_write(d[i], want[i] - d[i]->written);
            dir_read(d[i]);
            if (d[i]->got < want[i]) {
                done = false;
                pfd[np++] = (struct pollfd){ .fd = d[i]->rfd,
                                             .events = POLLIN };
                if (d[i]->written < want[i]) {
                    pfd[np++] = (struct pollfd){ .fd = d[i]->wfd,
                                                 .events = POLLOUT };
                }
            }
        }
        if (done) {
            return;
        }
        ck_assert_msg(now_ms() < end, "%s: %zu of %zu bytes, none for %ld ms",
                      x->name, x->got, want[0], ms);
        poll(pfd, np, 50);
    }
}

/* Everything @d's writer has written, read (pump: a stall of @ms fails). */
static void dir_settle(struct dir *d, long ms)
{
    pump(d, NULL, 0, ms);
}

static uint32_t sock_ioctl(int fd, unsigned long req)
{
    int v = -1;

    ck_assert_int_eq(ioctl(fd, req, &v), 0);
    return v;
}

/* Waits up to 2 s for A's queues: @inq bytes in, and/or unacked+unsent. */
static void wait_queues(int fd, uint32_t inq, bool unacked_and_unsent)
{
    long end = now_ms() + 2000;

    for (;;) {
        uint32_t in = sock_ioctl(fd, SIOCINQ);
        uint32_t out = sock_ioctl(fd, SIOCOUTQ);
        uint32_t notsent = sock_ioctl(fd, SIOCOUTQNSD);

        if (in == inq && (!unacked_and_unsent || (notsent && out > notsent))) {
            return;
        }
        ck_assert_msg(now_ms() < end, "queues: in %u (want %u), out %u, "
                      "not sent %u", in, inq, out, notsent);
        usleep(1000);
    }
}

/* A filter that drops every segment arriving at @fd, or none. */
static void drop_incoming(int fd, bool on)
{
    struct sock_filter drop[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
    struct sock_fprog prog = { .len = 1, .filter = drop };
    int zero = 0;

    if (on) {
        ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER,
                                    &prog, sizeof(prog)), 0);
    } else {
        ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER,
                                    &zero, sizeof(zero)), 0);
    }
}

static int sockopt(int fd, int level, int name)
{
    int v = -1;
    socklen_t l = sizeof(v);

    ck_assert_int_eq(getsockopt(fd, level, name, &v, &l), 0);
    return v;
}

static int count_fds(void)
{
    DIR *dir = opendir("/proc/self/fd");
    int n = 0;

    ck_assert_ptr_nonnull(dir);
    while (readdir(dir)) {
        n++;
    }
    closedir(dir);
    return n;
}

/*
 * Everything written so far arrives both ways (a stall of @ms fails), then
 * @n more bytes each way; B never saw an error.  Closes the pair.
 */
static void finish_pair(struct pair *p, size_t n, long ms)
{
    dir_settle(&p->ab, ms);
    dir_settle(&p->ba, ms);
    pump(&p->ab, &p->ba, n, ms);
    ck_assert_int_eq(sockopt(p->b, SOL_SOCKET, SO_ERROR), 0);
    close_pair(p);
}

/* Closes A (saved: in repair mode) and makes A' from @blob. */
static void replace_a(struct pair *p, uint8_t *blob, size_t blen)
{
    int a2;

    close(p->a);
    a2 = rnic_tcp_repair_restore(blob, blen);
    ck_assert_msg(a2 >= 0, "restore: %s", strerror(-a2));
    free(blob);
    p->a = p->ab.wfd = p->ba.rfd = a2;
}

/*
 * The whole move: A's receive queue holds bytes A has not read, its send
 * queue bytes B has not acknowledged and bytes not sent yet, and B sends
 * more while A is saved.  A is closed in repair mode and rebuilt; then
 * both directions carry on.
 */
static void move_connection(int family, bool a_accepts)
{
    struct pair p;
    uint8_t *blob = NULL;
    size_t blen = 0, sendq, unsent, recvq;
    int one = 1, sndbuf = 65536, a_sndbuf, a_rcvbuf;
    uint32_t ts;

    make_pair(family, a_accepts, 4096, &p);
    ck_assert_int_eq(setsockopt(p.a, IPPROTO_TCP, TCP_NODELAY, &one,
                                sizeof(one)), 0);
    /* A's send queue stays small: a quick test (and SO_SNDBUF moves). */
    ck_assert_int_eq(setsockopt(p.a, SOL_SOCKET, SO_SNDBUF, &sndbuf,
                                sizeof(sndbuf)), 0);
    a_sndbuf = sockopt(p.a, SOL_SOCKET, SO_SNDBUF);
    a_rcvbuf = sockopt(p.a, SOL_SOCKET, SO_RCVBUF);

    /* A's receive queue: 50000 bytes it does not read. */
    while (p.ba.written < 50000) {
        dir_write(&p.ba, 50000 - p.ba.written);
        usleep(1000);
    }
    wait_queues(p.a, 50000, false);
    /* B's small window fills; the rest waits in A's send queue. */
    dir_write(&p.ab, SIZE_MAX);
    /*
     * Unacknowledged bytes: B reads its queue, which opens its window,
     * but drops what A then sends into it.
     */
    drop_incoming(p.b, true);
    usleep(20000);
    dir_read(&p.ab);
    dir_write(&p.ab, SIZE_MAX);
    wait_queues(p.a, 50000, true);

    ck_assert_int_eq(rnic_tcp_repair_save(p.a, &blob, &blen), 0);
    ck_assert_int_eq(rnic_tcp_repair_queues(blob, blen, &sendq, &unsent,
                                            &recvq), 0);
    ck_assert_uint_eq(recvq, 50000);
    ck_assert_uint_eq(sendq, p.ab.written - p.ab.got);
    ck_assert_uint_gt(unsent, 0);
    ck_assert_uint_lt(unsent, sendq);
    ck_assert_uint_eq(blen, RNIC_TCP_REPAIR_HDR_LEN + sendq + recvq);

    /*
     * Sent while A is saved: A must not acknowledge it (the kernel would,
     * in repair mode alone), so that B sends it again to A'.
     */
    drop_incoming(p.b, false);
    ck_assert_uint_eq(dir_write(&p.ba, 1000), 1000);
    usleep(20000);
    /* A' goes on from where A's timestamp clock is now, not was. */
    ts = sockopt(p.a, IPPROTO_TCP, TCP_TIMESTAMP);
    replace_a(&p, blob, blen);
    ck_assert_int_ge((int32_t)(sockopt(p.a, IPPROTO_TCP, TCP_TIMESTAMP) -
                               ts), 0);
    ck_assert(fcntl(p.a, F_GETFL) & O_NONBLOCK);
    ck_assert(fcntl(p.a, F_GETFD) & FD_CLOEXEC);
    ck_assert_int_eq(sockopt(p.a, IPPROTO_TCP, TCP_NODELAY), 1);
    ck_assert_int_eq(sockopt(p.a, SOL_SOCKET, SO_SNDBUF), a_sndbuf);
    ck_assert_int_eq(sockopt(p.a, SOL_SOCKET, SO_RCVBUF), a_rcvbuf);

    /* A's unacknowledged bytes may wait for A''s first RTO (1 s). */
    finish_pair(&p, 300000, 10000);
}

START_TEST(test_move_ipv4)
{
    move_connection(AF_INET, false);
}
END_TEST

/* A is the accepted socket: A' binds the port its listener still holds. */
START_TEST(test_move_ipv4_accepted)
{
    move_connection(AF_INET, true);
}
END_TEST

START_TEST(test_move_ipv6)
{
    if (!ipv6_available()) {
        fprintf(stderr, "tcp_repair: no IPv6 loopback, IPv6 move skipped\n");
        return;
    }
    move_connection(AF_INET6, true);
}
END_TEST

/*
 * A pair whose A has @in bytes from B waiting, and has written @out, and
 * A saved into *@blob.
 */
static void make_saved_pair(struct pair *p, bool a_accepts, size_t in,
                            size_t out, uint8_t **blob, size_t *blen)
{
    make_pair(AF_INET, a_accepts, 0, p);
    ck_assert_uint_eq(dir_write(&p->ba, in), in);
    ck_assert_uint_eq(dir_write(&p->ab, out), out);
    wait_queues(p->a, in, false);
    ck_assert_int_eq(rnic_tcp_repair_save(p->a, blob, blen), 0);
}

/* A failed migration: the socket goes on; what B sent meanwhile arrives. */
START_TEST(test_save_cancel)
{
    struct pair p;
    uint8_t *blob = NULL;
    size_t blen = 0;

    make_saved_pair(&p, false, 3000, 3000, &blob, &blen);
    free(blob);
    ck_assert_uint_eq(dir_write(&p.ba, 1000), 1000);
    ck_assert_int_eq(rnic_tcp_repair_cancel(p.a), 0);
    ck_assert_int_eq(sockopt(p.a, IPPROTO_TCP, TCP_REPAIR), 0);
    finish_pair(&p, 100000, 5000);
}
END_TEST

/* Sets the 32-bit little-endian header field at @off of @b. */
static void put32(uint8_t *b, size_t off, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        b[off + i] = v >> (8 * i);
    }
}

/* A blob is untrusted: whatever it holds, restore fails cleanly. */
START_TEST(test_restore_rejects)
{
    struct pair p;
    uint8_t *blob = NULL, *bad, *again = NULL;
    size_t blen = 0, alen = 0, sendq;
    int fds;

    make_saved_pair(&p, false, 3000, 2000, &blob, &blen);
    /* Saved already: refused, the first save stands. */
    ck_assert_int_eq(rnic_tcp_repair_save(p.a, &again, &alen), -EBUSY);
    ck_assert_ptr_null(again);
    ck_assert_int_eq(rnic_tcp_repair_cancel(p.a), 0);
    ck_assert_int_eq(rnic_tcp_repair_queues(blob, blen, &sendq, NULL, NULL),
                     0);

    fds = count_fds();
    /* Every truncation, and one byte too many. */
    for (size_t len = 0; len < blen; len++) {
        ck_assert_int_eq(rnic_tcp_repair_restore(blob, len), -EINVAL);
    }
    bad = malloc(blen + 1);
    ck_assert_ptr_nonnull(bad);
    memcpy(bad, blob, blen);
    bad[blen] = 0;
    ck_assert_int_eq(rnic_tcp_repair_restore(bad, blen + 1), -EINVAL);
    ck_assert_int_eq(rnic_tcp_repair_restore(NULL, 0), -EINVAL);

#define BAD(field_off, value, err) \
    do { \
        memcpy(bad, blob, blen); \
        put32(bad, field_off, value); \
        ck_assert_int_eq(rnic_tcp_repair_restore(bad, blen), err); \
        ck_assert_int_eq(rnic_tcp_repair_queues(bad, blen, NULL, NULL, \
                                                NULL), err); \
    } while (0)
    BAD(0, 0x52544e53, -EINVAL);                    /* magic */
    BAD(4, 2 | RNIC_TCP_REPAIR_HDR_LEN << 16, -EPROTONOSUPPORT);
    BAD(4, 1 | (RNIC_TCP_REPAIR_HDR_LEN + 4) << 16, -EINVAL);
    BAD(BLOB_FAMILY, 5, -EAFNOSUPPORT);
    BAD(BLOB_SND_WSCALE, 15, -EINVAL);
    /* Queues longer than the blob, than the bound, than each other. */
    BAD(BLOB_RECV_LEN, 3001, -EINVAL);
    BAD(BLOB_SEND_LEN, blen, -EINVAL);
    BAD(BLOB_SEND_LEN, 0xffffffff, -E2BIG);
    BAD(BLOB_RECV_LEN, RNIC_TCP_REPAIR_QUEUE_MAX + 1, -E2BIG);
    BAD(BLOB_UNSENT_LEN, sendq + 1, -EINVAL);
#undef BAD
    ck_assert_int_eq(count_fds(), fds);
    free(bad);
    free(blob);

    /* The connection is as it was. */
    finish_pair(&p, 10000, 5000);
}
END_TEST

/* What save refuses; the socket goes on untouched. */
START_TEST(test_save_refuses)
{
    struct sockaddr_storage ss;
    socklen_t len = loopback(AF_INET, &ss);
    int l = socket(AF_INET, SOCK_STREAM, 0);
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    uint8_t *blob = NULL;
    size_t blen = 0;

    ck_assert_int_eq(bind(l, (struct sockaddr *)&ss, len), 0);
    ck_assert_int_eq(listen(l, 1), 0);
    ck_assert_int_eq(rnic_tcp_repair_save(l, &blob, &blen), -ENOTCONN);
    ck_assert_int_eq(getsockname(l, (struct sockaddr *)&ss, &len), 0);
    ck_assert_int_eq(connect(u, (struct sockaddr *)&ss, len), 0);
    ck_assert_int_eq(rnic_tcp_repair_save(u, &blob, &blen), -EOPNOTSUPP);
    ck_assert_ptr_null(blob);
    ck_assert_int_eq(sockopt(l, IPPROTO_TCP, TCP_REPAIR), 0);
    close(u);
    close(l);
}
END_TEST

/* Half-closed (the peer's FIN arrived): refused, the socket goes on. */
START_TEST(test_save_refuses_half_closed)
{
    struct pair p;
    uint8_t *blob = NULL;
    size_t blen = 0;
    long end = now_ms() + 2000;
    char c;

    make_pair(AF_INET, false, 0, &p);
    ck_assert_int_eq(shutdown(p.b, SHUT_WR), 0);
    while (recv(p.a, &c, 1, MSG_PEEK | MSG_DONTWAIT) != 0) {
        ck_assert(now_ms() < end);
        usleep(1000);
    }
    ck_assert_int_eq(rnic_tcp_repair_save(p.a, &blob, &blen), -EOPNOTSUPP);
    ck_assert_ptr_null(blob);
    ck_assert_int_eq(sockopt(p.a, IPPROTO_TCP, TCP_REPAIR), 0);
    dir_settle(&p.ab, 0);
    pump(&p.ab, NULL, 10000, 5000);
    close_pair(&p);
}
END_TEST

/* On one host the 4-tuple is the old socket's until it is closed. */
START_TEST(test_restore_needs_old_gone)
{
    struct pair p;
    uint8_t *blob = NULL;
    size_t blen = 0;

    make_saved_pair(&p, true, 1000, 0, &blob, &blen);
    ck_assert_int_eq(rnic_tcp_repair_restore(blob, blen), -EADDRNOTAVAIL);
    replace_a(&p, blob, blen);
    finish_pair(&p, 100000, 5000);
}
END_TEST

/*
 * Between the close and the restore no socket holds the 4-tuple: on one
 * host what the peer sends then is answered with an RST (tcp_repair.h).
 */
START_TEST(test_gap_resets_peer_on_one_host)
{
    struct pair p;
    struct pollfd pfd;
    uint8_t *blob = NULL, c = 'x';
    size_t blen = 0;

    make_saved_pair(&p, false, 0, 0, &blob, &blen);
    free(blob);
    close(p.a);
    ck_assert_int_eq(send(p.b, &c, 1, MSG_NOSIGNAL), 1);
    pfd = (struct pollfd){ .fd = p.b, .events = POLLIN };
    ck_assert_int_eq(poll(&pfd, 1, 2000), 1);
    ck_assert_int_eq(recv(p.b, &c, 1, 0), -1);
    ck_assert_int_eq(errno, ECONNRESET);
    close(p.b);
}
END_TEST

Suite *tcp_repair_suite(void)
{
    Suite *s = suite_create("tcp_repair");
    TCase *tc;

    if (!repair_permitted()) {
        fprintf(stderr, "tcp_repair: TCP_REPAIR needs CAP_NET_ADMIN; "
                "suite skipped\n");
        return s;
    }
    tc = tcase_create("loopback");
    /* A' retransmits what B did not acknowledge after a 1 s RTO. */
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_move_ipv4);
    tcase_add_test(tc, test_move_ipv4_accepted);
    tcase_add_test(tc, test_move_ipv6);
    tcase_add_test(tc, test_save_cancel);
    tcase_add_test(tc, test_restore_rejects);
    tcase_add_test(tc, test_save_refuses);
    tcase_add_test(tc, test_save_refuses_half_closed);
    tcase_add_test(tc, test_restore_needs_old_gone);
    tcase_add_test(tc, test_gap_resets_peer_on_one_host);
    suite_add_tcase(s, tc);
    return s;
}
