/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * CRC32c by carry-less multiplication: fold the buffer 16 octets (one
 * 128-bit lane) at a time with PCLMULQDQ, or four lanes at a time with
 * VPCLMULQDQ on 512-bit registers, then reduce the last lane to 32 bits
 * with two crc32 instructions and finish the tail with crc32.
 *
 * The math (reflected bit order, as CRC32c is sent).  Octet b, bit t of
 * a 16-octet lane is the coefficient of x^(127 - 8b - t), so a lane V is
 * the polynomial V(x) = lo(x) x^64 + hi(x), lo and hi being its two 64-bit
 * halves read the same way (bit i is x^(63 - i)).  The CRC register after
 * a prefix A is A(x) x^32 mod P, so A may be replaced by anything
 * congruent to it modulo P.  Moving V forward over D bits of data means
 * adding V(x) x^D to the lane D bits further on, and
 *
 *   V(x) x^D = lo(x) x^(D+64) + hi(x) x^D  ==  lo(x) k(D+64) + hi(x) k(D)
 *
 * with k(N) = x^N mod P, a polynomial of degree <= 31, so each product
 * has degree <= 94 and fits a lane.  PCLMULQDQ of a 64-bit half u by a
 * 64-bit r gives bit k = XOR over i + j = k of u_i r_j, which read as a
 * lane is u(x) * (sum of r_j x^(64 - j)).  Storing x^(N - 32) mod P with
 * its coefficient of x^e at bit 32 - e (the 32-bit reflected value
 * shifted left by one) makes that sum x^32 x^(N - 32) = x^N, as wanted.
 * The constants are computed here at first use from P, by shifting.
 *
 * Starting from a non-zero register c is the same as starting from 0
 * with c XORed into the first 32 bits of data (the CRC is linear), and a
 * last lane V becomes the register V(x) x^32 mod P by crc32 from 0 over
 * its 16 octets, which is what the crc32 instruction computes.
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include "crc32c.h"

#ifdef __x86_64__
#include <immintrin.h>

/* x^(n - 32) mod P, reflected and shifted left by one: see above. */
static uint64_t crc32c_xpow(unsigned n)
{
    uint32_t r = 0x80000000u;   /* x^0, reflected */

    for (unsigned i = 32; i < n; i++) {
        r = (r >> 1) ^ (r & 1 ? CRC32C_POLY_REFLECTED : 0);
    }
    return (uint64_t)r << 1;
}

/* Fold distances in bits: 64 octets, then 3, 2 and 1 lanes, then 256 octets. */
enum { FOLD_512, FOLD_384, FOLD_256, FOLD_128, FOLD_2048, FOLD_N };
static const unsigned crc32c_fold_bits[FOLD_N] = { 512, 384, 256, 128, 2048 };

/* Per distance D: { k(D + 64) for the low half, k(D) for the high half }. */
static uint64_t crc32c_fold_k[FOLD_N][2] __attribute__((aligned(16)));
static bool crc32c_fold_ready;

/*
 * Idempotent, so a race between two first callers (main loop and an
 * IOThread) is harmless; the release store publishes the constants.
 */
static void crc32c_fold_init(void)
{
    for (int f = 0; f < FOLD_N; f++) {
        crc32c_fold_k[f][0] = crc32c_xpow(crc32c_fold_bits[f] + 64);
        crc32c_fold_k[f][1] = crc32c_xpow(crc32c_fold_bits[f]);
    }
    __atomic_store_n(&crc32c_fold_ready, true, __ATOMIC_RELEASE);
}

static inline void crc32c_fold_need(void)
{
    if (!__atomic_load_n(&crc32c_fold_ready, __ATOMIC_ACQUIRE)) {
        crc32c_fold_init();
    }
}

/* Skipped below this many octets: crc32 streams are as fast there. */
#define CRC32C_FOLD_MIN 64

__attribute__((target("sse4.2,pclmul")))
static inline __m128i fold128(__m128i v, int f)
{
    __m128i k = _mm_load_si128((const __m128i *)crc32c_fold_k[f]);

    return _mm_xor_si128(_mm_clmulepi64_si128(v, k, 0x00),
                         _mm_clmulepi64_si128(v, k, 0x11));
}

/* The register after the lane @v, then crc32 over the @len octets at @p. */
__attribute__((target("sse4.2,pclmul")))
static uint32_t crc32c_finish(__m128i v, const uint8_t *p, size_t len)
{
    uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(v));

    c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(v, 1));
    for (; len >= 8; len -= 8, p += 8) {
        uint64_t w;

        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
    }
    while (len--) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
    }
    return (uint32_t)c;
}

static inline __m128i loadu128(const uint8_t *p)
{
    return _mm_loadu_si128((const __m128i *)p);
}

__attribute__((target("sse4.2,pclmul")))
uint32_t rnic_crc32c_clmul(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    __m128i x0, x1, x2, x3;

    if (len < CRC32C_FOLD_MIN) {
        return rnic_crc32c_hw(crc, buf, len);
    }
    crc32c_fold_need();
    x0 = _mm_xor_si128(loadu128(p), _mm_cvtsi32_si128((int)~crc));
    x1 = loadu128(p + 16);
    x2 = loadu128(p + 32);
    x3 = loadu128(p + 48);
    for (p += 64, len -= 64; len >= 64; p += 64, len -= 64) {
        x0 = _mm_xor_si128(fold128(x0, FOLD_512), loadu128(p));
        x1 = _mm_xor_si128(fold128(x1, FOLD_512), loadu128(p + 16));
        x2 = _mm_xor_si128(fold128(x2, FOLD_512), loadu128(p + 32));
        x3 = _mm_xor_si128(fold128(x3, FOLD_512), loadu128(p + 48));
    }
    x0 = _mm_xor_si128(_mm_xor_si128(fold128(x0, FOLD_384), x3),
                       _mm_xor_si128(fold128(x1, FOLD_256),
                                     fold128(x2, FOLD_128)));
    for (; len >= 16; p += 16, len -= 16) {
        x0 = _mm_xor_si128(fold128(x0, FOLD_128), loadu128(p));
    }
    return ~crc32c_finish(x0, p, len);
}

bool rnic_crc32c_clmul_available(void)
{
    return __builtin_cpu_supports("sse4.2") &&
           __builtin_cpu_supports("pclmul");
}

#define VPCLMUL_TARGET "sse4.2,pclmul,avx512f,vpclmulqdq"

__attribute__((target(VPCLMUL_TARGET)))
static inline __m512i fold512(__m512i v, __m512i k, __m512i next)
{
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(v, k, 0x00),
                                     _mm512_clmulepi64_epi128(v, k, 0x11),
                                     next, 0x96);  /* a ^ b ^ c */
}

__attribute__((target(VPCLMUL_TARGET)))
static inline __m512i fold_k512(int f)
{
    return _mm512_maskz_broadcast_i32x4(
        (__mmask16)-1, _mm_load_si128((const __m128i *)crc32c_fold_k[f]));
}

/*
 * Lane @i of @v.  The maskz forms of this and of the broadcast above do
 * what the plain ones do without their undefined operand, which GCC 12
 * warns about under QEMU's flags.
 */
#define lane512(v, i) _mm512_maskz_extracti32x4_epi32((__mmask8)-1, v, i)

/*
 * A 64-octet block of the input; when copying (@d is the distance from
 * source to destination, @copy a constant once inlined), stored there too.
 */
__attribute__((target(VPCLMUL_TARGET), always_inline))
static inline __m512i take512(const uint8_t *p, ptrdiff_t d, bool copy)
{
    __m512i v = _mm512_loadu_si512((const void *)p);

    if (copy) {
        _mm512_storeu_si512((void *)(p + d), v);
    }
    return v;
}

__attribute__((target(VPCLMUL_TARGET), always_inline))
static inline __m128i take128(const uint8_t *p, ptrdiff_t d, bool copy)
{
    __m128i v = loadu128(p);

    if (copy) {
        _mm_storeu_si128((__m128i *)(p + d), v);
    }
    return v;
}

/*
 * Four 64-octet registers in flight while 256 octets remain, then one,
 * then 16-octet lanes, then crc32 on the last < 16.  With @copy, every
 * octet read is also written @d further on: the copy and the CRC are one
 * pass over the source.
 */
__attribute__((target(VPCLMUL_TARGET), always_inline))
static inline uint32_t vpclmul_body(uint32_t crc, const uint8_t *p,
                                    size_t len, ptrdiff_t d, bool copy)
{
    __m512i x0, k;
    __m128i v;

    x0 = _mm512_xor_si512(take512(p, d, copy),
                          _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)~crc)));
    p += 64;
    len -= 64;
    if (len >= 192) {
        __m512i x1 = take512(p, d, copy), x2 = take512(p + 64, d, copy);
        __m512i x3 = take512(p + 128, d, copy);

        k = fold_k512(FOLD_2048);
        for (p += 192, len -= 192; len >= 256; p += 256, len -= 256) {
            x0 = fold512(x0, k, take512(p, d, copy));
            x1 = fold512(x1, k, take512(p + 64, d, copy));
            x2 = fold512(x2, k, take512(p + 128, d, copy));
            x3 = fold512(x3, k, take512(p + 192, d, copy));
        }
        k = fold_k512(FOLD_512);
        x0 = fold512(fold512(fold512(x0, k, x1), k, x2), k, x3);
    }
    k = fold_k512(FOLD_512);
    for (; len >= 64; p += 64, len -= 64) {
        x0 = fold512(x0, k, take512(p, d, copy));
    }
    v = _mm_xor_si128(_mm_xor_si128(
                          fold128(lane512(x0, 0), FOLD_384),
                          fold128(lane512(x0, 1), FOLD_256)),
                      _mm_xor_si128(
                          fold128(lane512(x0, 2), FOLD_128),
                          lane512(x0, 3)));
    for (; len >= 16; p += 16, len -= 16) {
        v = _mm_xor_si128(fold128(v, FOLD_128), take128(p, d, copy));
    }
    if (copy) {
        memcpy((uint8_t *)p + d, p, len);
    }
    return ~crc32c_finish(v, p, len);
}

__attribute__((target(VPCLMUL_TARGET)))
uint32_t rnic_crc32c_vpclmul(uint32_t crc, const void *buf, size_t len)
{
    if (len < CRC32C_FOLD_MIN) {
        return rnic_crc32c_hw(crc, buf, len);
    }
    crc32c_fold_need();
    return vpclmul_body(crc, buf, len, 0, false);
}

__attribute__((target(VPCLMUL_TARGET)))
uint32_t rnic_crc32c_copy_vpclmul(uint32_t crc, void *dst, const void *src,
                                  size_t len)
{
    if (len < CRC32C_FOLD_MIN) {
        memcpy(dst, src, len);
        return rnic_crc32c_hw(crc, src, len);
    }
    crc32c_fold_need();
    return vpclmul_body(crc, src, len, (const uint8_t *)dst -
                        (const uint8_t *)src, true);
}

bool rnic_crc32c_vpclmul_available(void)
{
    return rnic_crc32c_clmul_available() &&
           __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("vpclmulqdq");
}


#else

uint32_t rnic_crc32c_copy_vpclmul(uint32_t crc, void *dst, const void *src,
                                  size_t len)
{
    memcpy(dst, src, len);
    return rnic_crc32c_sw(crc, src, len);
}

bool rnic_crc32c_clmul_available(void)
{
    return false;
}

bool rnic_crc32c_vpclmul_available(void)
{
    return false;
}

uint32_t rnic_crc32c_clmul(uint32_t crc, const void *buf, size_t len)
{
    return rnic_crc32c_sw(crc, buf, len);
}

uint32_t rnic_crc32c_vpclmul(uint32_t crc, const void *buf, size_t len)
{
    return rnic_crc32c_sw(crc, buf, len);
}

#endif
