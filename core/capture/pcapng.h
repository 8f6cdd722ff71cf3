/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A pcapng file writer with a size bound: one section, one Ethernet
 * interface with nanosecond timestamps, Enhanced Packet Blocks with an
 * optional comment.  When the next block would take the file past its
 * limit, the file is either rotated (path -> path.1 -> ... -> path.N-1,
 * the oldest dropped) or, with one file, closed to further packets, which
 * are then counted as dropped.  No QEMU dependency: the device and the
 * unit tests share it.
 */
#ifndef RNIC_PCAPNG_H
#define RNIC_PCAPNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RNIC_PCAPNG_LINKTYPE_ETHERNET 1

struct rnic_pcapng_config {
    const char *path;
    uint64_t limit;         /* octets per file; 0: unbounded */
    unsigned files;         /* 1 (or 0): stop at the limit; N: rotate */
    const char *appl;       /* recorded as the section's shb_userappl */
};

struct rnic_pcapng_stats {
    uint64_t packets;       /* written, over every file */
    uint64_t bytes;         /* written to the current file */
    uint64_t dropped;       /* not written: limit reached, or error */
    uint64_t rotations;
    int error;              /* errno of the first write error, or 0 */
};

struct rnic_pcapng;

/*
 * A new file at the path (0600; whatever was there is replaced, a symlink
 * never followed) with its header; NULL and errno on error.
 */
struct rnic_pcapng *rnic_pcapng_open(const struct rnic_pcapng_config *cfg);
void rnic_pcapng_close(struct rnic_pcapng *f);

/*
 * Called when a new file begins (rotation), after its header, so that the
 * caller can write what a reader needs to decode the rest (e.g. the
 * handshakes of connections still open).  It may call rnic_pcapng_write.
 */
typedef void rnic_pcapng_new_file_fn(void *opaque);
void rnic_pcapng_set_new_file_cb(struct rnic_pcapng *f,
                                 rnic_pcapng_new_file_fn *fn, void *opaque);

/*
 * One packet of @len octets from up to 2 pieces (headers, payload), with
 * an optional comment.  False when it was dropped.
 */
bool rnic_pcapng_write(struct rnic_pcapng *f, uint64_t ts_ns,
                       const void *a, size_t alen, const void *b, size_t blen,
                       const char *comment);
/*
 * An Interface Statistics Block: packets written and dropped, and
 * @comment (e.g. the device's counters), whatever the limit; for the end.
 */
void rnic_pcapng_write_stats(struct rnic_pcapng *f, uint64_t ts_ns,
                             const char *comment);
/*
 * False once no packet will be written any more (one file at its limit,
 * or a write error); then rnic_pcapng_drop() counts what is left out.
 */
bool rnic_pcapng_accepting(const struct rnic_pcapng *f);
void rnic_pcapng_drop(struct rnic_pcapng *f);
/* Pushes what is buffered to the file, so that readers see it. */
void rnic_pcapng_flush(struct rnic_pcapng *f);
const struct rnic_pcapng_stats *rnic_pcapng_stats(const struct rnic_pcapng *f);
const char *rnic_pcapng_path(const struct rnic_pcapng *f);

#endif /* RNIC_PCAPNG_H */
