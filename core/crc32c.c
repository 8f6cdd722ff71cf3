/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>
#include "crc32c.h"

#define CRC32C_POLY_REFLECTED 0x82f63b78u

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

__attribute__((target("sse4.2")))
uint32_t rnic_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint32_t c = ~crc;

#ifdef __x86_64__
    uint64_t c64 = c;

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

static uint32_t crc32c_resolve(uint32_t crc, const void *buf, size_t len);

static crc32c_fn *crc32c_impl = crc32c_resolve;

static uint32_t crc32c_resolve(uint32_t crc, const void *buf, size_t len)
{
    crc32c_impl = rnic_crc32c_hw_available() ? rnic_crc32c_hw : rnic_crc32c_sw;
    return crc32c_impl(crc, buf, len);
}

uint32_t rnic_crc32c(uint32_t crc, const void *buf, size_t len)
{
    return crc32c_impl(crc, buf, len);
}
