/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pcapng writer (draft-ietf-opsawg-pcapng): Section Header Block,
 * Interface Description Block, Enhanced Packet Blocks; host byte order,
 * which the Section Header's byte-order magic tells readers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pcapng.h"

#define PCAPNG_SHB          0x0a0d0d0au
#define PCAPNG_IDB          0x00000001u
#define PCAPNG_ISB          0x00000005u
#define PCAPNG_EPB          0x00000006u
#define PCAPNG_BOM          0x1a2b3c4du
#define OPT_END             0
#define OPT_COMMENT         1
#define OPT_SHB_USERAPPL    4
#define OPT_IF_NAME         2
#define OPT_IF_TSRESOL      9
#define OPT_ISB_IFRECV      4
#define OPT_ISB_IFDROP      5
#define PCAPNG_STATS_MAX    4096    /* longest statistics comment */
#define PCAPNG_OPT_MAX      256     /* longest option value written */

struct rnic_pcapng {
    FILE *fp;
    char *path;
    char *appl;
    uint64_t limit;
    unsigned files;
    bool closed_to_packets;     /* one file and its limit reached */
    bool in_new_file;
    rnic_pcapng_new_file_fn *new_file;
    void *opaque;
    struct rnic_pcapng_stats st;
    char buf[1 << 16];
};

static size_t pad4(size_t n)
{
    return (n + 3) & ~(size_t)3;
}

/* Appends option @code with @len octets of @val to @p; returns the size. */
static size_t put_opt(uint8_t *p, uint16_t code, const void *val, size_t len)
{
    uint16_t hdr[2] = { code, (uint16_t)len };

    memcpy(p, hdr, 4);
    if (len) {
        memcpy(p + 4, val, len);
    }
    memset(p + 4 + len, 0, pad4(len) - len);
    return 4 + pad4(len);
}

static void put_write(struct rnic_pcapng *f, const void *p, size_t n)
{
    if (!f->st.error && n && fwrite(p, 1, n, f->fp) != n) {
        f->st.error = errno ? errno : EIO;
    }
    f->st.bytes += n;
}

/* A block of @type whose body is @body: length, body, length. */
static void put_block(struct rnic_pcapng *f, uint32_t type, const void *body,
                      size_t len)
{
    uint32_t hdr[2] = { type, (uint32_t)(12 + len) };

    put_write(f, hdr, 8);
    put_write(f, body, len);
    put_write(f, &hdr[1], 4);
}

static void put_header(struct rnic_pcapng *f)
{
    uint8_t shb[16 + 4 + PCAPNG_OPT_MAX + 4] = { 0 };
    uint8_t idb[8 + 4 + 8 + 4 + 8 + 4] = { 0 };
    uint32_t bom = PCAPNG_BOM;
    uint16_t ver[2] = { 1, 0 };
    int64_t section_len = -1;
    uint16_t link[2] = { RNIC_PCAPNG_LINKTYPE_ETHERNET, 0 };
    uint32_t snaplen = 0;           /* no limit */
    uint8_t tsresol = 9;            /* nanoseconds */
    size_t n = 0;

    memcpy(shb, &bom, 4);
    memcpy(shb + 4, ver, 4);
    memcpy(shb + 8, &section_len, 8);
    n = 16 + put_opt(shb + 16, OPT_SHB_USERAPPL, f->appl,
                     strnlen(f->appl, PCAPNG_OPT_MAX));
    n += put_opt(shb + n, OPT_END, NULL, 0);
    put_block(f, PCAPNG_SHB, shb, n);

    memcpy(idb, link, 4);
    memcpy(idb + 4, &snaplen, 4);
    n = 8 + put_opt(idb + 8, OPT_IF_NAME, "rnic", 4);
    n += put_opt(idb + n, OPT_IF_TSRESOL, &tsresol, 1);
    n += put_opt(idb + n, OPT_END, NULL, 0);
    put_block(f, PCAPNG_IDB, idb, n);
}

/*
 * The file holds guest payloads: readable by its owner only (0600 within
 * the umask), and always a new file.  Whatever was at the path is removed
 * first (a symlink itself, not its target); if anything appears there
 * before the exclusive create, the capture stops with EEXIST instead of
 * writing through it.
 */
static bool open_file(struct rnic_pcapng *f)
{
    int fd;

    if (unlink(f->path) && errno != ENOENT) {
        return false;
    }
    fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
    if (fd < 0) {
        return false;
    }
    f->fp = fdopen(fd, "wb");
    if (!f->fp) {
        int err = errno;

        close(fd);
        errno = err;
        return false;
    }
    setvbuf(f->fp, f->buf, _IOFBF, sizeof(f->buf));
    f->st.bytes = 0;
    put_header(f);
    return true;
}

struct rnic_pcapng *rnic_pcapng_open(const struct rnic_pcapng_config *cfg)
{
    struct rnic_pcapng *f = calloc(1, sizeof(*f));

    if (!f) {
        return NULL;
    }
    f->path = strdup(cfg->path);
    f->appl = strdup(cfg->appl ? cfg->appl : "rnic");
    f->limit = cfg->limit;
    f->files = cfg->files ? cfg->files : 1;
    if (!f->path || !f->appl || !open_file(f)) {
        int err = errno;

        free(f->path);
        free(f->appl);
        free(f);
        errno = err;
        return NULL;
    }
    return f;
}

void rnic_pcapng_close(struct rnic_pcapng *f)
{
    if (f) {
        if (f->fp) {
            fclose(f->fp);
        }
        free(f->path);
        free(f->appl);
        free(f);
    }
}

void rnic_pcapng_set_new_file_cb(struct rnic_pcapng *f,
                                 rnic_pcapng_new_file_fn *fn, void *opaque)
{
    f->new_file = fn;
    f->opaque = opaque;
}

/* path.N-2 -> path.N-1, ..., path -> path.1, and a fresh path. */
static bool rotate(struct rnic_pcapng *f)
{
    size_t len = strlen(f->path) + 16;
    char *from = malloc(len), *to = malloc(len);
    bool ok = from && to;

    fclose(f->fp);
    f->fp = NULL;
    for (unsigned i = f->files - 1; ok && i > 0; i--) {
        if (i > 1) {
            snprintf(from, len, "%s.%u", f->path, i - 1);
        } else {
            snprintf(from, len, "%s", f->path);
        }
        snprintf(to, len, "%s.%u", f->path, i);
        /* A missing older file is fine; a file that stays is not. */
        ok = !rename(from, to) || errno == ENOENT;
    }
    free(from);
    free(to);
    if (!ok || !open_file(f)) {
        f->st.error = errno ? errno : EIO;
        return false;
    }
    f->st.rotations++;
    if (f->new_file) {
        f->in_new_file = true;
        f->new_file(f->opaque);
        f->in_new_file = false;
    }
    return true;
}

/* Room for a block of @len octets, rotating if that is the policy. */
static bool make_room(struct rnic_pcapng *f, size_t len)
{
    if (f->st.error || f->closed_to_packets) {
        return false;
    }
    if (!f->limit || f->st.bytes + len <= f->limit) {
        return true;
    }
    if (f->files > 1 && !f->in_new_file) {
        return rotate(f) && f->st.bytes + len <= f->limit;
    }
    if (f->files <= 1) {
        f->closed_to_packets = true;
        fflush(f->fp);
    }
    return false;
}

bool rnic_pcapng_write(struct rnic_pcapng *f, uint64_t ts_ns,
                       const void *a, size_t alen, const void *b, size_t blen,
                       const char *comment)
{
    size_t caplen = alen + blen;
    size_t clen = comment ? strnlen(comment, PCAPNG_OPT_MAX) : 0;
    uint8_t opts[4 + PCAPNG_OPT_MAX + 4 + 4];
    size_t olen = 0;
    uint32_t hdr[7];
    static const uint8_t zero[4];

    if (clen) {
        olen = put_opt(opts, OPT_COMMENT, comment, clen);
        olen += put_opt(opts + olen, OPT_END, NULL, 0);
    }
    hdr[0] = PCAPNG_EPB;
    hdr[1] = (uint32_t)(32 + pad4(caplen) + olen);
    if (!make_room(f, hdr[1])) {
        f->st.dropped++;
        return false;
    }
    hdr[2] = 0;                                 /* interface 0 */
    hdr[3] = (uint32_t)(ts_ns >> 32);
    hdr[4] = (uint32_t)ts_ns;
    hdr[5] = hdr[6] = (uint32_t)caplen;
    put_write(f, hdr, sizeof(hdr));
    put_write(f, a, alen);
    put_write(f, b, blen);
    put_write(f, zero, pad4(caplen) - caplen);
    put_write(f, opts, olen);
    put_write(f, &hdr[1], 4);
    if (f->st.error) {
        f->st.dropped++;
        return false;
    }
    f->st.packets++;
    return true;
}

void rnic_pcapng_write_stats(struct rnic_pcapng *f, uint64_t ts_ns,
                             const char *comment)
{
    size_t clen = comment ? strnlen(comment, PCAPNG_STATS_MAX) : 0;
    uint8_t *body = malloc(12 + 4 + PCAPNG_STATS_MAX + 2 * 12 + 4);
    uint32_t hdr[3] = { 0, (uint32_t)(ts_ns >> 32), (uint32_t)ts_ns };
    size_t n = sizeof(hdr);

    if (!body || !f->fp) {
        free(body);
        return;
    }
    memcpy(body, hdr, n);
    if (clen) {
        n += put_opt(body + n, OPT_COMMENT, comment, clen);
    }
    n += put_opt(body + n, OPT_ISB_IFRECV, &f->st.packets, 8);
    n += put_opt(body + n, OPT_ISB_IFDROP, &f->st.dropped, 8);
    n += put_opt(body + n, OPT_END, NULL, 0);
    put_block(f, PCAPNG_ISB, body, n);
    free(body);
}

bool rnic_pcapng_accepting(const struct rnic_pcapng *f)
{
    return !f->st.error && !f->closed_to_packets;
}

void rnic_pcapng_drop(struct rnic_pcapng *f)
{
    f->st.dropped++;
}

void rnic_pcapng_flush(struct rnic_pcapng *f)
{
    if (f->fp && fflush(f->fp) && !f->st.error) {
        f->st.error = errno ? errno : EIO;
    }
}

const struct rnic_pcapng_stats *rnic_pcapng_stats(const struct rnic_pcapng *f)
{
    return &f->st;
}

const char *rnic_pcapng_path(const struct rnic_pcapng *f)
{
    return f->path;
}
