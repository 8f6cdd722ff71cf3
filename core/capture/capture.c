/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Capture streams: each direction of a connection is cut into units (the
 * MPA Request or Reply, then FPDUs by their ULPDU_LENGTH), and each unit
 * becomes one TCP segment at its real sequence number (capture.h says
 * why).  A unit is written when its last octet has been sent or received.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "capture_internal.h"
#include "iwarp/fpdu.h"
#include "iwarp/iwarp.h"

/* Fixed initial sequence numbers: Wireshark shows them relative anyway. */
#define CAP_ISN_PEER    0x20000000u
#define CAP_ISN_LOCAL   0x10000000u

static void cap_new_file(void *opaque);

struct rnic_cap *rnic_cap_new(const struct rnic_pcapng_config *cfg)
{
    struct rnic_cap *cap = calloc(1, sizeof(*cap));

    if (!cap) {
        return NULL;
    }
    cap->file = rnic_pcapng_open(cfg);
    if (!cap->file) {
        int err = errno;

        free(cap);
        errno = err;
        return NULL;
    }
    rnic_pcapng_set_new_file_cb(cap->file, cap_new_file, cap);
    return cap;
}

static struct cap_stream *cap_find(const struct rnic_cap *cap, uint64_t key)
{
    struct cap_stream *s;

    for (s = cap->streams; s && s->key != key; s = s->next) {
        continue;
    }
    return s;
}

bool rnic_cap_known(const struct rnic_cap *cap, uint64_t key)
{
    return cap_find(cap, key) != NULL;
}

/* SYN, SYN-ACK, ACK at the initial sequence numbers. */
static void cap_handshake(struct rnic_cap *cap, struct cap_stream *s,
                          uint64_t ts, const char *comment)
{
    bool a = s->local_active;   /* index of the side that connected */
    uint32_t ia = s->dir[a].isn, ip = s->dir[!a].isn;

    cap_frame(cap, s, a, CAP_TCP_SYN, ia, 0, NULL, 0, ts, comment);
    cap_frame(cap, s, !a, CAP_TCP_SYN | CAP_TCP_ACK, ip, ia + 1, NULL, 0, ts,
              NULL);
    cap_frame(cap, s, a, CAP_TCP_ACK, ia + 1, ip + 1, NULL, 0, ts, NULL);
}

void rnic_cap_open(struct rnic_cap *cap, uint64_t key,
                   const struct rnic_cap_addr *local,
                   const struct rnic_cap_addr *peer, bool local_active,
                   const char *comment, uint64_t ts_ns)
{
    struct cap_stream *s;

    if (cap_find(cap, key)) {
        return;
    }
    s = calloc(1, sizeof(*s));
    if (!s) {
        return;
    }
    s->key = key;
    s->local = *local;
    s->peer = *peer;
    s->local_active = local_active;
    s->dir[0].isn = CAP_ISN_PEER;
    s->dir[1].isn = CAP_ISN_LOCAL;
    for (int i = 0; i < 2; i++) {
        s->dir[i].next = s->dir[i].isn + 1;
        s->dir[i].buf = malloc(CAP_UNIT_MAX);
        if (!s->dir[i].buf) {
            s->dir[i].mode = CAP_MODE_RAW;
        }
    }
    s->next = cap->streams;
    cap->streams = s;
    cap->nstreams++;
    cap_handshake(cap, s, ts_ns, comment);
}

/* Octets @len at the direction's next sequence number, cut to fit frames. */
static void cap_emit(struct rnic_cap *cap, struct cap_stream *s, bool tx,
                     const uint8_t *p, size_t len)
{
    struct cap_dir *d = &s->dir[tx];

    while (len) {
        size_t n = len < CAP_SEG_MAX ? len : CAP_SEG_MAX;

        cap_frame(cap, s, tx, CAP_TCP_PSH | CAP_TCP_ACK, d->next,
                  s->dir[!tx].next, p, n, cap->now, NULL);
        d->next += (uint32_t)n;
        p += n;
        len -= n;
    }
}

/* Writes the octets of a unit that will not be completed. */
static void cap_flush_partial(struct rnic_cap *cap, struct cap_stream *s,
                              bool tx)
{
    struct cap_dir *d = &s->dir[tx];

    if (d->len) {
        cap_emit(cap, s, tx, d->buf, d->len);
        d->len = 0;
    }
}

static bool cap_is_mpa_key(const uint8_t *p)
{
    return !memcmp(p, RNIC_MPA_KEY_REQ, RNIC_MPA_KEY_LEN) ||
           !memcmp(p, RNIC_MPA_KEY_REP, RNIC_MPA_KEY_LEN);
}

static uint8_t cap_frame_flags(const struct cap_dir *d)
{
    return d->frame_len > 16 ? d->frame[16] : 0;
}

/*
 * After an MPA frame: FPDUs follow, unless the Reply rejected, or either
 * side asked for markers (FPDUs cannot then be cut by length alone).
 */
static void cap_mpa_done(struct cap_stream *s, bool tx)
{
    struct cap_dir *d = &s->dir[tx];
    uint8_t all = cap_frame_flags(&s->dir[0]) | cap_frame_flags(&s->dir[1]);

    d->mode = CAP_MODE_FPDU;
    if ((cap_frame_flags(d) & RNIC_MPA_FLAG_R) &&
        !memcmp(d->buf, RNIC_MPA_KEY_REP, RNIC_MPA_KEY_LEN)) {
        d->mode = CAP_MODE_RAW;
    }
    if (all & RNIC_MPA_FLAG_M) {
        for (int i = 0; i < 2; i++) {
            if (s->dir[i].mode == CAP_MODE_FPDU) {
                s->dir[i].mode = CAP_MODE_RAW;
            }
        }
    }
}

static void cap_unit_done(struct rnic_cap *cap, struct cap_stream *s, bool tx)
{
    struct cap_dir *d = &s->dir[tx];

    if (d->mode == CAP_MODE_MPA && d->len <= sizeof(d->frame)) {
        memcpy(d->frame, d->buf, d->len);
        d->frame_len = d->len;
    }
    cap_emit(cap, s, tx, d->buf, d->len);
    if (d->mode == CAP_MODE_MPA) {
        cap_mpa_done(s, tx);
    }
    d->len = 0;
}

/* Octets the unit in progress needs in all, as far as its header tells. */
static size_t cap_unit_want(const struct cap_dir *d)
{
    if (d->mode == CAP_MODE_MPA) {
        return d->len < 20 ? 20 : 20 + (size_t)rnic_ld_be16(d->buf + 18);
    }
    return d->len < 2 ? 2 : rnic_fpdu_len(rnic_ld_be16(d->buf));
}

static void cap_feed(struct rnic_cap *cap, struct cap_stream *s, bool tx,
                     const uint8_t *p, size_t n)
{
    struct cap_dir *d = &s->dir[tx];

    while (n) {
        size_t take;

        if (d->mode == CAP_MODE_RAW) {
            cap_flush_partial(cap, s, tx);
            cap_emit(cap, s, tx, p, n);
            return;
        }
        take = cap_unit_want(d) - d->len;
        take = take < n ? take : n;
        memcpy(d->buf + d->len, p, take);
        d->len += take;
        p += take;
        n -= take;
        if (d->mode == CAP_MODE_MPA && d->len == 20 &&
            !cap_is_mpa_key(d->buf)) {
            d->mode = CAP_MODE_RAW;     /* not MPA: write it as it came */
            continue;
        }
        if (d->len == cap_unit_want(d)) {
            cap_unit_done(cap, s, tx);
        }
    }
}

void rnic_cap_data(struct rnic_cap *cap, uint64_t key, bool tx,
                   const struct iovec *iov, int cnt, size_t len,
                   uint64_t ts_ns)
{
    struct cap_stream *s = cap_find(cap, key);

    if (!s || s->dir[tx].ended) {
        return;
    }
    if (!rnic_pcapng_accepting(cap->file)) {
        /* nothing more goes to this file: no framing, no checksums */
        rnic_pcapng_drop(cap->file);
        return;
    }
    cap->now = ts_ns;
    for (int i = 0; i < cnt && len; i++) {
        size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;

        cap_feed(cap, s, tx, iov[i].iov_base, n);
        len -= n;
    }
}

void rnic_cap_end(struct rnic_cap *cap, uint64_t key, bool tx,
                  enum rnic_cap_end how, uint64_t ts_ns)
{
    struct cap_stream *s = cap_find(cap, key);
    struct cap_dir *d;

    if (!s || s->reset || s->dir[tx].ended) {
        return;
    }
    d = &s->dir[tx];
    cap->now = ts_ns;
    cap_flush_partial(cap, s, tx);
    if (how == RNIC_CAP_RST) {
        cap_flush_partial(cap, s, !tx);
        cap_frame(cap, s, tx, CAP_TCP_RST | CAP_TCP_ACK, d->next,
                  s->dir[!tx].next, NULL, 0, ts_ns, NULL);
        s->reset = true;
        s->dir[0].ended = s->dir[1].ended = true;
        return;
    }
    cap_frame(cap, s, tx, CAP_TCP_FIN | CAP_TCP_ACK, d->next,
              s->dir[!tx].next, NULL, 0, ts_ns, NULL);
    d->next++;
    d->ended = true;
}

static void cap_stream_free(struct cap_stream *s)
{
    free(s->dir[0].buf);
    free(s->dir[1].buf);
    free(s);
}

void rnic_cap_close(struct rnic_cap *cap, uint64_t key, uint64_t ts_ns)
{
    struct cap_stream **pp, *s;

    for (pp = &cap->streams; *pp && (*pp)->key != key; pp = &(*pp)->next) {
        continue;
    }
    s = *pp;
    if (!s) {
        return;
    }
    cap->now = ts_ns;
    cap_flush_partial(cap, s, false);
    rnic_cap_end(cap, key, true, RNIC_CAP_FIN, ts_ns);
    *pp = s->next;
    cap->nstreams--;
    cap_stream_free(s);
}

/*
 * A rotated file starts with the handshakes (and MPA frames, at their
 * real sequence numbers) of the connections still open, so that a reader
 * of this file alone can decode the FPDUs that follow.
 */
static void cap_new_file(void *opaque)
{
    struct rnic_cap *cap = opaque;

    for (struct cap_stream *s = cap->streams; s; s = s->next) {
        char comment[96];

        snprintf(comment, sizeof(comment), "rnic: connection 0x%llx opened "
                 "before this file began; its MPA frames again",
                 (unsigned long long)s->key);
        cap_handshake(cap, s, cap->now, comment);
        for (int req = 1; req >= 0; req--) {
            for (int tx = 0; tx < 2; tx++) {
                struct cap_dir *d = &s->dir[tx];
                bool is_req = d->frame_len &&
                    !memcmp(d->frame, RNIC_MPA_KEY_REQ, RNIC_MPA_KEY_LEN);

                if (d->frame_len && is_req == req) {
                    cap_frame(cap, s, tx, CAP_TCP_PSH | CAP_TCP_ACK,
                              d->isn + 1, s->dir[!tx].isn + 1, d->frame,
                              d->frame_len, cap->now, NULL);
                }
            }
        }
    }
}

void rnic_cap_free(struct rnic_cap *cap, uint64_t ts_ns, const char *comment)
{
    if (!cap) {
        return;
    }
    cap->now = ts_ns;
    while (cap->streams) {
        struct cap_stream *s = cap->streams;

        cap_flush_partial(cap, s, false);
        cap_flush_partial(cap, s, true);
        cap->streams = s->next;
        cap_stream_free(s);
    }
    rnic_pcapng_write_stats(cap->file, ts_ns, comment);
    rnic_pcapng_close(cap->file);
    free(cap);
}

void rnic_cap_flush(struct rnic_cap *cap)
{
    rnic_pcapng_flush(cap->file);
}

const struct rnic_pcapng_stats *rnic_cap_stats(const struct rnic_cap *cap)
{
    return rnic_pcapng_stats(cap->file);
}

const char *rnic_cap_path(const struct rnic_cap *cap)
{
    return rnic_pcapng_path(cap->file);
}

unsigned rnic_cap_streams(const struct rnic_cap *cap)
{
    return cap->nstreams;
}
