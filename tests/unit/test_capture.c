/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device's capture writer: the pcapng it writes is read back with
 * libpcap (pcap_stream.c), and the TCP streams rebuilt from it must be the
 * octets that were handed in, one MPA frame or FPDU per segment however
 * they were split, with SYN and FIN around them; the size bound holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <check.h>
#include "capture/capture.h"
#include "iwarp/fpdu.h"
#include "iwarp/iwarp.h"
#include "suites.h"
#include "support/pcap_stream.h"

static char path[64];

static void setup(void)
{
    snprintf(path, sizeof(path), "capture-test-%d.pcapng", (int)getpid());
}

static void teardown(void)
{
    char p[80];

    unlink(path);
    for (int i = 1; i < 4; i++) {
        snprintf(p, sizeof(p), "%s.%d", path, i);
        unlink(p);
    }
}

static const struct rnic_cap_addr local = {
    AF_INET, { 127, 0, 0, 1 }, 40000
};
static const struct rnic_cap_addr peer = {
    AF_INET, { 127, 0, 0, 2 }, 5555
};

/* An MPA frame with @pd_len octets of private data; returns its length. */
static size_t mpa_frame(uint8_t *p, const char *key, uint16_t pd_len)
{
    memcpy(p, key, RNIC_MPA_KEY_LEN);
    p[16] = RNIC_MPA_FLAG_ENHANCED;
    p[17] = 2;
    rnic_st_be16(p + 18, pd_len);
    memset(p + 20, 0x5a, pd_len);
    return 20 + pd_len;
}

/* An FPDU of a ULPDU of @ulpdu octets (all @fill); returns its length. */
static size_t fpdu(uint8_t *p, uint16_t ulpdu, uint8_t fill)
{
    size_t len = rnic_fpdu_len(ulpdu);

    memset(p, 0, len);
    rnic_st_be16(p, ulpdu);
    memset(p + 2, fill, ulpdu);
    return len;
}

static struct rnic_cap *cap_new(uint64_t limit, unsigned files)
{
    struct rnic_pcapng_config cfg = {
        .path = path, .limit = limit, .files = files, .appl = "unit test",
    };
    struct rnic_cap *cap = rnic_cap_new(&cfg);

    ck_assert_ptr_nonnull(cap);
    return cap;
}

/* Hands @len octets of @p over in pieces of @step. */
static void feed(struct rnic_cap *cap, bool tx, const uint8_t *p, size_t len,
                 size_t step)
{
    for (size_t off = 0; off < len; off += step) {
        struct iovec iov[2];
        size_t n = len - off < step ? len - off : step;

        /* two iovecs per call, as sendmsg hands them */
        iov[0] = (struct iovec) { (void *)(p + off), n / 2 };
        iov[1] = (struct iovec) { (void *)(p + off + n / 2), n - n / 2 };
        rnic_cap_data(cap, 7, tx, iov, 2, n, 1000 + off);
    }
}

static void load(const char *file, struct pcap_capture *pc)
{
    char err[256];

    memset(pc, 0, sizeof(*pc));
    ck_assert_msg(pcap_capture_load(file, pc, err, sizeof(err)) == 0, "%s",
                  err);
}

/* The comment of the file's Interface Statistics Block, or "". */
static const char *isb_comment(const char *file)
{
    static char comment[256];
    uint8_t *buf = malloc(1 << 20);
    FILE *fp = fopen(file, "rb");
    size_t len = fread(buf, 1, 1 << 20, fp), off = 0;

    fclose(fp);
    comment[0] = 0;
    while (off + 12 <= len) {
        uint32_t type, blen;
        uint16_t code, olen;

        memcpy(&type, buf + off, 4);
        memcpy(&blen, buf + off + 4, 4);
        ck_assert_uint_ge(blen, 12);
        if (type == 5) {
            memcpy(&code, buf + off + 20, 2);
            memcpy(&olen, buf + off + 22, 2);
            ck_assert_uint_eq(code, 1);
            ck_assert_uint_lt(olen, sizeof(comment));
            memcpy(comment, buf + off + 24, olen);
            comment[olen] = 0;
        }
        off += blen;
    }
    ck_assert_uint_eq(off, len);
    free(buf);
    return comment;
}

START_TEST(test_streams_rebuilt)
{
    static uint8_t tx[3 * 70000], rx[70000];
    size_t tl = 0, rl = 0, units[4];
    struct rnic_cap *cap = cap_new(0, 1);
    struct pcap_capture pc;
    struct pcap_tcp_dir *d;

    units[0] = mpa_frame(tx, RNIC_MPA_KEY_REQ, 4);
    tl = units[0];
    units[1] = fpdu(tx + tl, 30, 1);
    tl += units[1];
    units[2] = fpdu(tx + tl, 65000, 2);
    tl += units[2];
    units[3] = fpdu(tx + tl, 1, 3);
    tl += units[3];
    rl = mpa_frame(rx, RNIC_MPA_KEY_REP, 4);
    rl += fpdu(rx + rl, 100, 9);

    rnic_cap_open(cap, 7, &local, &peer, true, "conn 7", 1);
    feed(cap, true, tx, units[0], 3);
    feed(cap, false, rx, rl, 7);
    feed(cap, true, tx + units[0], tl - units[0], 4093);
    rnic_cap_end(cap, 7, false, RNIC_CAP_FIN, 5000);
    rnic_cap_close(cap, 7, 6000);
    ck_assert_uint_eq(rnic_cap_streams(cap), 0);
    ck_assert_int_eq(rnic_cap_stats(cap)->error, 0);
    rnic_cap_free(cap, 7000, "rnic-stats stat-tx-fpdus=3");

    ck_assert_str_eq(isb_comment(path), "rnic-stats stat-tx-fpdus=3");
    load(path, &pc);
    ck_assert_uint_eq(pc.nconns, 1);
    /* 3 handshake, 4 + 2 units, 2 FINs */
    ck_assert_uint_eq(pc.packets, 11);
    d = &pc.conns[0].dir[0];
    ck_assert(d->syn_seen && !d->gap);
    ck_assert_uint_eq(d->sport, 40000);
    ck_assert_uint_eq(d->len, tl);
    ck_assert(!memcmp(d->data, tx, tl));
    ck_assert_uint_eq(d->nsegs, 4);
    for (int i = 0; i < 4; i++) {
        ck_assert_uint_eq(d->segs[i].len, units[i]);
    }
    d = &pc.conns[0].dir[1];
    ck_assert(d->syn_seen && !d->gap);
    ck_assert_uint_eq(d->len, rl);
    ck_assert(!memcmp(d->data, rx, rl));
    ck_assert_uint_eq(d->nsegs, 2);
    pcap_capture_free(&pc);
}
END_TEST

/* A stream that is not MPA goes out as it came, nothing dropped. */
START_TEST(test_not_mpa)
{
    static const uint8_t junk[] = "GET / HTTP/1.0\r\n\r\nmore and more";
    struct rnic_cap *cap = cap_new(0, 1);
    struct pcap_capture pc;

    rnic_cap_open(cap, 7, &local, &peer, false, NULL, 1);
    feed(cap, false, junk, sizeof(junk), 5);
    rnic_cap_end(cap, 7, true, RNIC_CAP_RST, 9);
    rnic_cap_free(cap, 10, NULL);
    load(path, &pc);
    ck_assert_uint_eq(pc.conns[0].dir[0].sport, 5555);  /* peer connected */
    ck_assert_uint_eq(pc.conns[0].dir[0].len, sizeof(junk));
    ck_assert(!memcmp(pc.conns[0].dir[0].data, junk, sizeof(junk)));
    pcap_capture_free(&pc);
}
END_TEST

/* One file: the limit holds and what did not fit is counted. */
START_TEST(test_limit)
{
    static uint8_t buf[70000];
    struct rnic_cap *cap = cap_new(4096, 1);
    size_t n = mpa_frame(buf, RNIC_MPA_KEY_REQ, 0);
    struct stat st;

    rnic_cap_open(cap, 7, &local, &peer, true, NULL, 1);
    feed(cap, true, buf, n, n);
    for (int i = 0; i < 20; i++) {
        n = fpdu(buf, 1000, (uint8_t)i);
        feed(cap, true, buf, n, n);
    }
    ck_assert_uint_gt(rnic_cap_stats(cap)->dropped, 0);
    ck_assert_uint_le(rnic_cap_stats(cap)->bytes, 4096);
    rnic_cap_free(cap, 2, NULL);
    ck_assert_int_eq(stat(path, &st), 0);
    /* the limit, and the closing statistics block (no comment here) */
    ck_assert_int_le(st.st_size, 4096 + 64);
}
END_TEST

/*
 * Rotation: each new file begins with the open connection's handshake
 * and MPA frames, so it decodes on its own; at most N files remain.
 */
START_TEST(test_rotation)
{
    static uint8_t buf[70000];
    struct rnic_cap *cap = cap_new(8192, 3);
    uint8_t req[64], rep[64];
    size_t reql = mpa_frame(req, RNIC_MPA_KEY_REQ, 4);
    size_t repl = mpa_frame(rep, RNIC_MPA_KEY_REP, 4);
    struct pcap_capture pc;
    char old[80];

    rnic_cap_open(cap, 7, &local, &peer, true, NULL, 1);
    feed(cap, true, req, reql, reql);
    feed(cap, false, rep, repl, repl);
    for (int i = 0; i < 40; i++) {
        size_t n = fpdu(buf, 1000, (uint8_t)i);

        feed(cap, true, buf, n, 100);
    }
    ck_assert_uint_ge(rnic_cap_stats(cap)->rotations, 3);
    ck_assert_uint_eq(rnic_cap_stats(cap)->dropped, 0);
    rnic_cap_free(cap, 2, NULL);

    snprintf(old, sizeof(old), "%s.3", path);
    ck_assert_int_ne(access(old, F_OK), 0);
    snprintf(old, sizeof(old), "%s.2", path);
    ck_assert_int_eq(access(old, F_OK), 0);
    load(path, &pc);
    ck_assert(pc.conns[0].dir[0].syn_seen);
    ck_assert_uint_eq(pc.conns[0].dir[0].segs[0].len, reql);
    ck_assert(!memcmp(pc.conns[0].dir[0].segs[0].data, req, reql));
    ck_assert_uint_eq(pc.conns[0].dir[1].segs[0].len, repl);
    pcap_capture_free(&pc);
}
END_TEST

static mode_t file_mode(const char *p)
{
    struct stat st;

    ck_assert_int_eq(lstat(p, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    return st.st_mode & 07777;
}

/*
 * The files hold guest payloads: 0600 whatever the umask allows, the
 * first file and every rotated one.
 */
START_TEST(test_files_private)
{
    static uint8_t buf[4000];
    mode_t old = umask(022);
    struct rnic_cap *cap = cap_new(8192, 2);
    char p1[80];

    ck_assert_uint_eq(file_mode(path), 0600);
    rnic_cap_open(cap, 7, &local, &peer, true, NULL, 1);
    for (int i = 0; i < 8; i++) {
        feed(cap, true, buf, fpdu(buf, 1000, (uint8_t)i), 1008);
    }
    ck_assert_uint_ge(rnic_cap_stats(cap)->rotations, 1);
    ck_assert_uint_eq(file_mode(path), 0600);
    snprintf(p1, sizeof(p1), "%s.1", path);
    ck_assert_uint_eq(file_mode(p1), 0600);
    rnic_cap_free(cap, 2, NULL);
    umask(old);
}
END_TEST

/*
 * A symlink at the capture's path is not followed: its target keeps its
 * content, and the capture writes a file of its own.
 */
START_TEST(test_symlink_not_followed)
{
    char target[80];
    struct rnic_cap *cap;
    FILE *t;
    char got[16] = "";

    snprintf(target, sizeof(target), "%s.target", path);
    t = fopen(target, "w");
    ck_assert_ptr_nonnull(t);
    fputs("victim", t);
    fclose(t);
    ck_assert_int_eq(symlink(target, path), 0);
    cap = cap_new(0, 1);
    rnic_cap_free(cap, 2, NULL);
    ck_assert_uint_eq(file_mode(path), 0600);
    t = fopen(target, "r");
    ck_assert_ptr_nonnull(fgets(got, sizeof(got), t));
    fclose(t);
    unlink(target);
    ck_assert_str_eq(got, "victim");
}
END_TEST

/*
 * A rotation that cannot move the full file aside (path.1 is a directory
 * here) stops the capture: what was captured stays, never overwritten.
 */
START_TEST(test_rotation_cannot_move)
{
    static uint8_t buf[4000];
    struct rnic_cap *cap = cap_new(8192, 2);
    char p1[80];
    struct stat st;

    snprintf(p1, sizeof(p1), "%s.1", path);
    ck_assert_int_eq(mkdir(p1, 0700), 0);
    rnic_cap_open(cap, 7, &local, &peer, true, NULL, 1);
    for (int i = 0; i < 8; i++) {
        feed(cap, true, buf, fpdu(buf, 1000, (uint8_t)i), 1008);
    }
    ck_assert_uint_eq(rnic_cap_stats(cap)->rotations, 0);
    ck_assert_int_ne(rnic_cap_stats(cap)->error, 0);
    rnic_cap_free(cap, 2, NULL);
    ck_assert_int_eq(rmdir(p1), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_gt(st.st_size, 4096);
}
END_TEST

Suite *capture_suite(void)
{
    Suite *s = suite_create("capture");
    TCase *tc = tcase_create("capture");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_streams_rebuilt);
    tcase_add_test(tc, test_not_mpa);
    tcase_add_test(tc, test_limit);
    tcase_add_test(tc, test_rotation);
    tcase_add_test(tc, test_files_private);
    tcase_add_test(tc, test_symlink_not_followed);
    tcase_add_test(tc, test_rotation_cannot_move);
    suite_add_tcase(s, tc);
    return s;
}
