// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Raw TCP between two host processes over loopback: the physical limit of
 * a TCP-carried device, for `make bench-guest` (tests/e2e/bench-guest.sh).
 *
 *   tcp-pair bw SIZE SECONDS    one process writes SIZE-byte messages for
 *                               SECONDS, the other reads: prints MB/s,
 *                               perftest's MB (2^20 bytes)
 *   tcp-pair lat SIZE SECONDS   ping-pong of SIZE bytes: prints one-way
 *                               latency (half the round trip, as
 *                               perftest's ib_send_lat does) in µs
 *
 * One line: "tcp-pair MODE SIZE VALUE UNIT".  TCP_NODELAY on both ends so
 * that the latency is the stack's, not Nagle's.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MB (1024.0 * 1024)    /* perftest's "MB/sec" */

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* Reads exactly LEN bytes; false at end of stream. */
static bool read_full(int fd, char *buf, size_t len)
{
    while (len) {
        ssize_t n = read(fd, buf, len);

        if (n <= 0) {
            if (n < 0) {
                die("read");
            }
            return false;
        }
        buf += n;
        len -= n;
    }
    return true;
}

static void write_full(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(fd, buf, len);

        if (n < 0) {
            die("write");
        }
        buf += n;
        len -= n;
    }
}

/* A connected pair: *child is the forked peer's end, the return ours. */
static int tcp_pair(pid_t *pid, int *child)
{
    struct sockaddr_in a = { .sin_family = AF_INET };
    socklen_t alen = sizeof(a);
    int lfd = socket(AF_INET, SOCK_STREAM, 0), fd, one = 1;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) ||
        listen(lfd, 1) || getsockname(lfd, (struct sockaddr *)&a, &alen)) {
        die("listen");
    }
    *pid = fork();
    if (*pid < 0) {
        die("fork");
    }
    if (!*pid) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
            die("connect");
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        *child = fd;
        return -1;
    }
    fd = accept(lfd, NULL, NULL);
    if (fd < 0) {
        die("accept");
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    close(lfd);
    return fd;
}

/* The child: reads (bw) or echoes (lat) until the parent closes. */
static void child_loop(int fd, bool echo, char *buf, size_t size)
{
    while (read_full(fd, buf, size)) {
        if (echo) {
            write_full(fd, buf, size);
        }
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    bool lat;
    size_t size;
    double secs, t0, t;
    long n = 0;
    char *buf;
    pid_t pid;
    int fd, cfd;

    if (argc != 4 || (strcmp(argv[1], "bw") && strcmp(argv[1], "lat"))) {
        fprintf(stderr, "usage: tcp-pair bw|lat SIZE SECONDS\n");
        return 2;
    }
    lat = !strcmp(argv[1], "lat");
    size = strtoul(argv[2], NULL, 0);
    secs = atof(argv[3]);
    buf = calloc(1, size ? size : 1);
    if (!size || !buf) {
        return 2;
    }
    fd = tcp_pair(&pid, &cfd);
    if (fd < 0) {
        child_loop(cfd, lat, buf, size);
    }
    t0 = now();
    do {
        /* The clock is read every 64 messages: cheap next to a syscall. */
        for (int i = 0; i < 64; i++, n++) {
            write_full(fd, buf, size);
            if (lat && !read_full(fd, buf, size)) {
                die("echo ended");
            }
        }
        t = now() - t0;
    } while (t < secs);
    close(fd);
    waitpid(pid, NULL, 0);
    t = now() - t0;     /* bw: until the reader has it all, not the buffers */
    if (lat) {
        printf("tcp-pair lat %zu %.2f us\n", size, t / n / 2 * 1e6);
    } else {
        printf("tcp-pair bw %zu %.1f MB/s\n", size, n * (double)size / MB / t);
    }
    return 0;
}
