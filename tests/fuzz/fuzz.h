/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the fuzz targets and their seed generator (seeds.c) agree on: the
 * header each target reads at the start of its input, and how chunk
 * sizes come out of it.
 *
 *   fuzz_rx:   cfg (enum rxs_cfg), chunk, seed, cfg2 (enum rxs_cfg2),
 *              fault rate, fault seed, then FUZZ_RX_EVENTS pairs (chunk
 *              index, what: enum rxs_event_kind | target << 3); then the
 *              received stream.  Event k happens before the chunk of that
 *              index is received; with a fault bit of cfg2 set, each DMA
 *              call of that kind fails with probability rate / 256.
 *   fuzz_mpa:  flags (enum fuzz_mpa_flags), rtr/ird, ord, chunk, seed;
 *              then the peer's bytes (its MPA frame, maybe FPDUs after)
 *   fuzz_fpdu: flags (FUZZ_FPDU_*), chunk, seed; then the stream
 *
 * chunk: the pieces fed to the target are 1 .. 2^(chunk & 15) octets,
 * drawn from a generator seeded with seed.
 */
#ifndef RNIC_FUZZ_H
#define RNIC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include "support/epfix.h"

#define FUZZ_RX_EVENTS  4
#define FUZZ_RX_HDR     (6 + 2 * FUZZ_RX_EVENTS)
#define FUZZ_MPA_HDR    5
#define FUZZ_FPDU_HDR   3

enum fuzz_mpa_flags {
    FUZZ_MPA_INITIATOR  = 1 << 0,
    FUZZ_MPA_REV1       = 1 << 1,
    FUZZ_MPA_CRC_SHIFT  = 2,        /* 2 bits: enum rnic_mpa_crc_policy */
    FUZZ_MPA_MARKERS_WANTED  = 1 << 4,
    FUZZ_MPA_MARKERS_ALLOWED = 1 << 5,
    FUZZ_MPA_STRICT_IRD = 1 << 6,
    FUZZ_MPA_PD         = 1 << 7,   /* we send ULP private data */
};

enum fuzz_fpdu_flags {
    FUZZ_FPDU_CRC       = 1 << 0,
    FUZZ_FPDU_MARKERS   = 1 << 1,
    FUZZ_FPDU_SMALL_BUF = 1 << 2,   /* a buffer for 1 KiB ULPDUs only */
};

/* A property does not hold: say which, and abort (a crash to libFuzzer). */
void fuzz_fail(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));

/* Deterministic chunk sizes from the two header octets. */
struct fuzz_chunker {
    struct epf_rng rng;
    uint32_t max;
};

static inline void fuzz_chunker_init(struct fuzz_chunker *c, uint8_t chunk,
                                     uint8_t seed)
{
    c->rng.s = 0x9e3779b97f4a7c15ull ^ seed;    /* never 0 */
    c->max = 1u << (chunk & 15);
}

static inline size_t fuzz_chunk(struct fuzz_chunker *c, size_t left)
{
    size_t n = 1 + epf_rand(&c->rng, c->max);

    return n < left ? n : left;
}

#endif /* RNIC_FUZZ_H */
