/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdbool.h>
#include <string.h>
#include "crc32c.h"


static uint32_t crc32c_table[8][256];

static void crc32c_init_table(void)
{
    for (unsigned i = 0; i < 256; i++) {
        uint32_t c = i;

        for (int k = 0; k < 8; k++) {
            c = (c >> 1) ^ (c & 1 ? CRC32C_POLY_REFLECTED : 0);
        }
        crc32c_table[0][i] = c;
    }
    for (unsigned i = 0; i < 256; i++) {
        for (int t = 1; t < 8; t++) {
            uint32_t c = crc32c_table[t - 1][i];

            crc32c_table[t][i] = (c >> 8) ^ crc32c_table[0][c & 0xff];
        }
    }
}

static inline uint32_t load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 |
           (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint32_t rnic_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint32_t c = ~crc;

    /* Idempotent, so a race between two first callers is harmless. */
    if (!crc32c_table[0][1]) {
        crc32c_init_table();
    }
    for (; len >= 8; len -= 8, p += 8) {
        uint32_t lo = load_le32(p) ^ c;
        uint32_t hi = load_le32(p + 4);

        c = crc32c_table[7][lo & 0xff] ^ crc32c_table[6][(lo >> 8) & 0xff] ^
            crc32c_table[5][(lo >> 16) & 0xff] ^ crc32c_table[4][lo >> 24] ^
            crc32c_table[3][hi & 0xff] ^ crc32c_table[2][(hi >> 8) & 0xff] ^
            crc32c_table[1][(hi >> 16) & 0xff] ^ crc32c_table[0][hi >> 24];
    }
    while (len--) {
        c = (c >> 8) ^ crc32c_table[0][(c ^ *p++) & 0xff];
    }
    return ~c;
}

#if defined(__x86_64__) || defined(__i386__)

bool rnic_crc32c_hw_available(void)
{
    return __builtin_cpu_supports("sse4.2");
}

#ifdef __x86_64__
/*
 * The crc32 instruction has a latency of several cycles but can start one
 * per cycle, so long buffers run as three independent streams whose CRCs
 * are then combined: streams of 1024 octets, then of 128 for what is
 * left (an Ethernet-sized FPDU).  Combining needs the CRC register
 * advanced over 1 or 2 streams of zeros, which is linear in the register:
 * tables of that map, by byte, built on first use.
 */
static const size_t crc32c_stream_len[2] = { 1024, 128 };

static uint32_t crc32c_shift_tab[2][2][4][256]; /* [stream][1 or 2][byte] */
static bool crc32c_shift_ready;

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw_zeros(uint32_t c, size_t n)
{
    uint64_t c64 = c;

    for (; n; n -= 8) {
        c64 = __builtin_ia32_crc32di(c64, 0);
    }
    return (uint32_t)c64;
}

/* Idempotent, so a race between two first callers is harmless. */
static void crc32c_init_shift(void)
{
    for (int s = 0; s < 2; s++) {
        for (int t = 0; t < 2; t++) {
            uint32_t bit[32];

            for (int i = 0; i < 32; i++) {
                bit[i] = crc32c_hw_zeros(1u << i,
                                         (t + 1) * crc32c_stream_len[s]);
            }
            for (int k = 0; k < 4; k++) {
                for (unsigned b = 0; b < 256; b++) {
                    uint32_t v = 0;

                    for (int i = 0; i < 8; i++) {
                        v ^= b & (1u << i) ? bit[8 * k + i] : 0;
                    }
                    crc32c_shift_tab[s][t][k][b] = v;
                }
            }
        }
    }
    crc32c_shift_ready = true;
}

/* The register @x advanced over (@t + 1) streams of kind @s of zeros. */
static inline uint32_t crc32c_shift(int s, int t, uint32_t x)
{
    return crc32c_shift_tab[s][t][0][x & 0xff] ^
           crc32c_shift_tab[s][t][1][(x >> 8) & 0xff] ^
           crc32c_shift_tab[s][t][2][(x >> 16) & 0xff] ^
           crc32c_shift_tab[s][t][3][x >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw_3way(uint32_t c, const uint8_t **pp, size_t *len)
{
    const uint8_t *p = *pp;

    if (!crc32c_shift_ready) {
        crc32c_init_shift();
    }
    for (int s = 0; s < 2; s++) {
        size_t n = crc32c_stream_len[s];

        for (; *len >= 3 * n; *len -= 3 * n, p += 3 * n) {
            uint64_t a = c, b = 0, d = 0;

            for (size_t i = 0; i < n; i += 8) {
                uint64_t va, vb, vd;

                memcpy(&va, p + i, 8);
                memcpy(&vb, p + n + i, 8);
                memcpy(&vd, p + 2 * n + i, 8);
                a = __builtin_ia32_crc32di(a, va);
                b = __builtin_ia32_crc32di(b, vb);
                d = __builtin_ia32_crc32di(d, vd);
            }
            c = crc32c_shift(s, 1, a) ^ crc32c_shift(s, 0, b) ^ (uint32_t)d;
        }
    }
    *pp = p;
    return c;
}
#endif

__attribute__((target("sse4.2")))
uint32_t rnic_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint32_t c = ~crc;

#ifdef __x86_64__
    uint64_t c64 = crc32c_hw_3way(c, &p, &len);

    for (; len >= 8; len -= 8, p += 8) {
        uint64_t v;

        memcpy(&v, p, sizeof(v));
        c64 = __builtin_ia32_crc32di(c64, v);
    }
    c = (uint32_t)c64;
#endif
    for (; len >= 4; len -= 4, p += 4) {
        uint32_t v;

        memcpy(&v, p, sizeof(v));
        c = __builtin_ia32_crc32si(c, v);
    }
    while (len--) {
        c = __builtin_ia32_crc32qi(c, *p++);
    }
    return ~c;
}

#else

bool rnic_crc32c_hw_available(void)
{
    return false;
}

uint32_t rnic_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
    return rnic_crc32c_sw(crc, buf, len);
}

#endif

typedef uint32_t crc32c_fn(uint32_t crc, const void *buf, size_t len);
typedef uint32_t crc32c_copy_fn(uint32_t crc, void *dst, const void *src,
                                size_t len);

static crc32c_fn *crc32c_impl;
static crc32c_copy_fn *crc32c_copy_impl;

static uint32_t crc32c_copy_plain(uint32_t crc, void *dst, const void *src,
                                  size_t len)
{
    memcpy(dst, src, len);
    return rnic_crc32c(crc, src, len);
}

/*
 * cpuid at run time: QEMU may run on another CPU than it was built on.
 * The 128-bit PCLMULQDQ fold is not chosen: `make bench` measured it
 * below the crc32 streams even on 1460 octets (docs/protocol.md, "Cost
 * of the CRC").
 * Idempotent, so two first callers (main loop and an IOThread) racing
 * is harmless.
 */
static void crc32c_pick(void)
{
    crc32c_copy_fn *copy = crc32c_copy_plain;
    crc32c_fn *fn = rnic_crc32c_sw;

    if (rnic_crc32c_vpclmul_available()) {
        fn = rnic_crc32c_vpclmul;
        copy = rnic_crc32c_copy_vpclmul;
    } else if (rnic_crc32c_hw_available()) {
        fn = rnic_crc32c_hw;
    }
    __atomic_store_n(&crc32c_copy_impl, copy, __ATOMIC_RELAXED);
    __atomic_store_n(&crc32c_impl, fn, __ATOMIC_RELAXED);
}

uint32_t rnic_crc32c(uint32_t crc, const void *buf, size_t len)
{
    crc32c_fn *fn = __atomic_load_n(&crc32c_impl, __ATOMIC_RELAXED);

    if (!fn) {
        crc32c_pick();
        fn = __atomic_load_n(&crc32c_impl, __ATOMIC_RELAXED);
    }
    return fn(crc, buf, len);
}

uint32_t rnic_crc32c_copy(uint32_t crc, void *dst, const void *src,
                          size_t len)
{
    crc32c_copy_fn *fn = __atomic_load_n(&crc32c_copy_impl, __ATOMIC_RELAXED);

    if (!fn) {
        crc32c_pick();
        fn = __atomic_load_n(&crc32c_copy_impl, __ATOMIC_RELAXED);
    }
    return fn(crc, dst, src, len);
}
