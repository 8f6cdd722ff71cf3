/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the FPDU deframer alone (rnic_fpdu_rx_input), with
 * CRC and markers on or off and a full-size or a small ULPDU buffer.
 *
 * Besides what ASan and UBSan catch, every input must keep these:
 *  - the chunking does not matter: the stream fed whole and fed in
 *    input-chosen pieces gives the same ULPDUs, the same error and the
 *    same position;
 *  - no ULPDU is longer than the buffer allows, and without markers
 *    each one is the very octets after its ULPDU_LENGTH in the stream.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "iwarp/fpdu.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SMALL_CAP   (1024 + 4)

static uint8_t rx_buf[RNIC_MPA_ULPDU_MAX + 4];

/* What one pass delivered. */
struct pass {
    struct rnic_fpdu_rx rx;
    const uint8_t *stream;
    uint64_t hash;                  /* FNV-1a over lengths and octets */
    unsigned count;
};

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        h = (h ^ p[i]) * 0x100000001b3ull;
    }
    return h;
}

static int fuzz_ulpdu(void *opaque, const uint8_t *ulpdu, size_t len)
{
    struct pass *ps = opaque;
    uint8_t l[2] = { (uint8_t)(len >> 8), (uint8_t)len };

    if (len + rnic_mpa_pad_len(len) > ps->rx.cap) {
        fuzz_fail("ULPDU of %zu octets from a buffer of %zu", len,
                  ps->rx.cap);
    }
    if (!ps->rx.markers &&
        memcmp(ulpdu, ps->stream + ps->rx.last_pos + RNIC_MPA_HDR_LEN, len)) {
        fuzz_fail("ULPDU at %u differs from the stream", ps->rx.last_pos);
    }
    ps->hash = fnv(fnv(ps->hash, l, 2), ulpdu, len);
    ps->count++;
    return 0;
}

static void fuzz_pass(struct pass *ps, uint8_t flags, const uint8_t *data,
                      size_t size, struct fuzz_chunker *ch)
{
    memset(ps, 0, sizeof(*ps));
    ps->stream = data;
    ps->hash = 0xcbf29ce484222325ull;
    rnic_fpdu_rx_init(&ps->rx, flags & FUZZ_FPDU_CRC,
                      flags & FUZZ_FPDU_MARKERS, rx_buf,
                      flags & FUZZ_FPDU_SMALL_BUF ? SMALL_CAP
                                                  : sizeof(rx_buf));
    for (size_t off = 0; off < size;) {
        size_t n = ch ? fuzz_chunk(ch, size - off) : size - off;

        rnic_fpdu_rx_input(&ps->rx, data + off, n, fuzz_ulpdu, ps);
        off += n;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct pass whole, pieces;
    struct fuzz_chunker ch;

    if (size < FUZZ_FPDU_HDR) {
        return 0;
    }
    fuzz_chunker_init(&ch, data[1], data[2]);
    fuzz_pass(&whole, data[0], data + FUZZ_FPDU_HDR, size - FUZZ_FPDU_HDR,
              NULL);
    fuzz_pass(&pieces, data[0], data + FUZZ_FPDU_HDR, size - FUZZ_FPDU_HDR,
              &ch);
    if (whole.count != pieces.count || whole.hash != pieces.hash ||
        whole.rx.err != pieces.rx.err ||
        (!whole.rx.err && whole.rx.pos != pieces.rx.pos)) {
        fuzz_fail("whole: %u ULPDUs, err %d, pos %u; in pieces: %u, %d, %u",
                  whole.count, whole.rx.err, whole.rx.pos, pieces.count,
                  pieces.rx.err, pieces.rx.pos);
    }
    return 0;
}
