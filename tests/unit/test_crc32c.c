/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include "iwarp/crc32c.h"
#include "suites.h"

typedef uint32_t crc_fn(uint32_t crc, const void *buf, size_t len);

/* RFC 3720 B.4, plus the usual "123456789" check value. */
static void check_vectors(crc_fn *crc)
{
    static const uint8_t scsi_read[48] = {
        0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
        0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
        0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    };
    uint8_t buf[32];

    memset(buf, 0, sizeof(buf));
    ck_assert_uint_eq(crc(0, buf, 32), 0x8a9136aa);
    memset(buf, 0xff, sizeof(buf));
    ck_assert_uint_eq(crc(0, buf, 32), 0x62a8ab43);
    for (int i = 0; i < 32; i++) {
        buf[i] = i;
    }
    ck_assert_uint_eq(crc(0, buf, 32), 0x46dd794e);
    for (int i = 0; i < 32; i++) {
        buf[i] = 31 - i;
    }
    ck_assert_uint_eq(crc(0, buf, 32), 0x113fdb5c);
    ck_assert_uint_eq(crc(0, scsi_read, sizeof(scsi_read)), 0xd9963a56);
    ck_assert_uint_eq(crc(0, "123456789", 9), 0xe3069283);
    ck_assert_uint_eq(crc(0, NULL, 0), 0);
}

START_TEST(test_vectors_sw)
{
    check_vectors(rnic_crc32c_sw);
}
END_TEST

START_TEST(test_vectors_dispatch)
{
    check_vectors(rnic_crc32c);
}
END_TEST

START_TEST(test_vectors_hw)
{
    if (!rnic_crc32c_hw_available()) {
        return;     /* the dispatch test has covered the fallback */
    }
    check_vectors(rnic_crc32c_hw);
}
END_TEST

/* Every implementation, whether this CPU has it or not (then skipped). */
static const struct {
    const char *name;
    crc_fn *fn;
    bool (*available)(void);
} impls[] = {
    { "hw", rnic_crc32c_hw, rnic_crc32c_hw_available },
    { "clmul", rnic_crc32c_clmul, rnic_crc32c_clmul_available },
    { "vpclmul", rnic_crc32c_vpclmul, rnic_crc32c_vpclmul_available },
    { "dispatch", rnic_crc32c, NULL },
};
#define N_IMPLS (sizeof(impls) / sizeof(impls[0]))

static bool impl_usable(size_t i)
{
    return !impls[i].available || impls[i].available();
}

/* The definition, one bit at a time: the reference for everything else. */
static uint32_t crc32c_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
    uint32_t c = ~crc;

    while (len--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++) {
            c = (c >> 1) ^ (c & 1 ? CRC32C_POLY_REFLECTED : 0);
        }
    }
    return ~c;
}

START_TEST(test_vectors_fold)
{
    for (size_t i = 0; i < N_IMPLS; i++) {
        if (impl_usable(i)) {
            check_vectors(impls[i].fn);
        }
    }
}
END_TEST

/* The table implementation against the definition. */
START_TEST(test_sw_equals_bitwise)
{
    static uint8_t buf[8192 + 64];
    unsigned seed = 99;

    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = rand_r(&seed);
    }
    for (size_t len = 0; len <= 8192; len += 1 + len / 8) {
        for (size_t off = 0; off < 64; off += 7) {
            ck_assert_uint_eq(rnic_crc32c_sw(0x1234567, buf + off, len),
                              crc32c_bitwise(0x1234567, buf + off, len));
        }
    }
}
END_TEST

/*
 * Every implementation against the reference: random lengths 0..8192 and
 * the lengths around each one's block sizes, at every alignment 0..63,
 * from a random starting CRC, each in a buffer of exactly that size (so
 * that ASan sees any read past its end); rnic_crc32c_copy() too, which
 * must also leave an exact copy.
 */
static void check_against_ref(size_t len, size_t off, unsigned *seed)
{
    uint8_t *buf = malloc(off + len + 1), *copy;
    uint32_t start = rand_r(seed), want;

    ck_assert_ptr_nonnull(buf);
    for (size_t i = 0; i < off + len; i++) {
        buf[i] = rand_r(seed);
    }
    want = len <= 256 ? crc32c_bitwise(start, buf + off, len)
                      : rnic_crc32c_sw(start, buf + off, len);
    copy = malloc(off + len + 1);
    ck_assert_ptr_nonnull(copy);
    ck_assert_uint_eq(rnic_crc32c_copy(start, copy + off, buf + off, len),
                      want);
    ck_assert_int_eq(memcmp(copy + off, buf + off, len), 0);
    free(copy);
    for (size_t i = 0; i < N_IMPLS; i++) {
        if (impl_usable(i)) {
            ck_assert_msg(impls[i].fn(start, buf + off, len) == want,
                          "%s differs: len %zu offset %zu", impls[i].name,
                          len, off);
        }
    }
    free(buf);
}

START_TEST(test_all_equal_reference)
{
    static const size_t edges[] = {
        0, 1, 7, 8, 15, 16, 17, 63, 64, 65, 79, 80, 127, 128, 129, 191, 192,
        255, 256, 257, 319, 320, 383, 384, 385, 511, 512, 513, 1460, 1472,
        3071, 3072, 3073, 3456, 4095, 4096, 4097, 8191, 8192,
    };
    unsigned seed = 4242;

    for (size_t off = 0; off < 64; off++) {
        for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
            check_against_ref(edges[i], off, &seed);
        }
        for (int r = 0; r < 24; r++) {
            check_against_ref(rand_r(&seed) % 8193, off, &seed);
        }
    }
}
END_TEST

/* Whole or in two pieces, cut anywhere: the same CRC. */
START_TEST(test_pieces)
{
    uint8_t buf[1500 + 8];
    unsigned seed = 12345;

    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = rand_r(&seed);
    }
    for (size_t len = 0; len <= 1500; len += 1 + len / 5) {
        uint32_t sw = rnic_crc32c_sw(0, buf + 3, len);

        for (size_t cut = 0; cut <= len; cut += 1 + cut / 3) {
            for (size_t i = 0; i < N_IMPLS; i++) {
                uint32_t c;

                if (!impl_usable(i)) {
                    continue;
                }
                c = impls[i].fn(0, buf + 3, cut);
                c = impls[i].fn(c, buf + 3 + cut, len - cut);
                ck_assert_msg(c == sw, "%s in pieces: len %zu cut %zu",
                              impls[i].name, len, cut);
            }
        }
    }
}
END_TEST

/*
 * Long buffers take the hardware path's three interleaved streams: every
 * length around its block size, chained from a non-zero CRC, misaligned.
 */
START_TEST(test_hw_long_buffers)
{
    static const size_t lens[] = {
        383, 384, 385, 767, 768, 1460, 3071, 3072, 3073, 3079, 3080, 3456,
        3457, 6143, 6144, 6151, 9216 + 5, 65536, 100003,
    };
    static uint8_t buf[100003 + 8];
    unsigned seed = 777;

    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = rand_r(&seed);
    }
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        for (size_t off = 0; off < 8; off += 3) {
            uint32_t start = rnic_crc32c_sw(0, buf, 17);
            uint32_t want = rnic_crc32c_sw(start, buf + off, lens[i]);

            for (size_t k = 0; k < N_IMPLS; k++) {
                if (impl_usable(k)) {
                    ck_assert_uint_eq(impls[k].fn(start, buf + off, lens[i]),
                                      want);
                }
            }
        }
    }
}
END_TEST

Suite *crc32c_suite(void)
{
    Suite *s = suite_create("crc32c");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_vectors_sw);
    tcase_add_test(tc, test_vectors_dispatch);
    tcase_add_test(tc, test_vectors_hw);
    tcase_add_test(tc, test_vectors_fold);
    tcase_add_test(tc, test_sw_equals_bitwise);
    tcase_add_test(tc, test_all_equal_reference);
    tcase_add_test(tc, test_pieces);
    tcase_add_test(tc, test_hw_long_buffers);
    suite_add_tcase(s, tc);
    return s;
}
