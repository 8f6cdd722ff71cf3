/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include "crc32c.h"
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

/* Same results for every length and alignment, whole or in two pieces. */
START_TEST(test_hw_equals_sw)
{
    uint8_t buf[4096 + 8];
    unsigned seed = 12345;

    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = rand_r(&seed);
    }
    for (size_t off = 0; off < 8; off++) {
        for (size_t len = 0; len <= 100; len++) {
            uint32_t sw = rnic_crc32c_sw(0, buf + off, len);

            ck_assert_uint_eq(rnic_crc32c(0, buf + off, len), sw);
            if (rnic_crc32c_hw_available()) {
                ck_assert_uint_eq(rnic_crc32c_hw(0, buf + off, len), sw);
            }
            for (size_t cut = 0; cut <= len; cut += 7) {
                uint32_t c = rnic_crc32c(0, buf + off, cut);

                c = rnic_crc32c(c, buf + off + cut, len - cut);
                ck_assert_uint_eq(c, sw);
            }
        }
    }
    ck_assert_uint_eq(rnic_crc32c(0, buf + 3, 4096),
                      rnic_crc32c_sw(0, buf + 3, 4096));
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

    if (!rnic_crc32c_hw_available()) {
        return;
    }
    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = rand_r(&seed);
    }
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        for (size_t off = 0; off < 8; off += 3) {
            uint32_t start = rnic_crc32c_sw(0, buf, 17);

            ck_assert_uint_eq(rnic_crc32c_hw(start, buf + off, lens[i]),
                              rnic_crc32c_sw(start, buf + off, lens[i]));
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
    tcase_add_test(tc, test_hw_equals_sw);
    tcase_add_test(tc, test_hw_long_buffers);
    suite_add_tcase(s, tc);
    return s;
}
