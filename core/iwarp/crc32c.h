/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * CRC32c (Castagnoli), as MPA uses it for FPDUs (RFC 5044 §4.4) and iSCSI
 * defines it (RFC 3720 §12.1).
 *
 * @crc is the value returned by the previous call (0 to start), so a
 * buffer may be summed in pieces: crc(crc(0, a), b) == crc(0, a || b).
 * The result is the final CRC.  On the wire, MPA (like iSCSI) puts its
 * least significant byte first: see rnic_crc32c_store().
 */
#ifndef RNIC_CRC32C_H
#define RNIC_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The Castagnoli polynomial 0x1EDC6F41, bit-reflected (LSB first). */
#define CRC32C_POLY_REFLECTED 0x82f63b78u

/* The fastest implementation this CPU supports, chosen on first use. */
uint32_t rnic_crc32c(uint32_t crc, const void *buf, size_t len);

/* Portable slicing-by-8 table implementation. */
uint32_t rnic_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* SSE4.2 crc32 instruction; call only when rnic_crc32c_hw_available(). */
uint32_t rnic_crc32c_hw(uint32_t crc, const void *buf, size_t len);
bool rnic_crc32c_hw_available(void);

/*
 * Carry-less multiply folding (crc32c_fold.c): PCLMULQDQ on 128-bit lanes,
 * or VPCLMULQDQ on 512-bit registers (AVX-512).  Each falls back to
 * rnic_crc32c_hw() under 64 octets; call only when its _available() says.
 */
uint32_t rnic_crc32c_clmul(uint32_t crc, const void *buf, size_t len);
bool rnic_crc32c_clmul_available(void);
uint32_t rnic_crc32c_vpclmul(uint32_t crc, const void *buf, size_t len);
bool rnic_crc32c_vpclmul_available(void);
/* rnic_crc32c_copy()'s VPCLMULQDQ body: one read of @src. */
uint32_t rnic_crc32c_copy_vpclmul(uint32_t crc, void *dst, const void *src,
                                  size_t len);

/*
 * Copies @len octets from @src to @dst (not overlapping) and returns the
 * CRC of them continued from @crc, reading the source once where the CPU
 * allows (VPCLMULQDQ), else memcpy() then rnic_crc32c().
 */
uint32_t rnic_crc32c_copy(uint32_t crc, void *dst, const void *src,
                          size_t len);

/* The CRC field as it is sent (checked against siw's FPDUs). */
static inline void rnic_crc32c_store(void *field, uint32_t crc)
{
    uint8_t *b = field;

    b[0] = crc;
    b[1] = crc >> 8;
    b[2] = crc >> 16;
    b[3] = crc >> 24;
}

static inline uint32_t rnic_crc32c_load(const void *field)
{
    const uint8_t *b = field;

    return b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
}

#endif /* RNIC_CRC32C_H */
