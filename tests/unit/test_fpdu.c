/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include "iwarp/fpdu.h"
#include "suites.h"

#define STREAM_MAX  (1 << 20)
#define MAX_ULPDUS  64

/* First FPDUs from siw after the handshake (mpa-hexdump.txt) */
static const uint8_t siw_send_crc[] = {
    0x00, 0x22, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x55, 0xe0,
    0x99, 0xc7, 0x23, 0x70, 0x6f, 0xfa, 0x87, 0x00, 0x00, 0x00, 0x00, 0x40,
    0xf7, 0x9b, 0xc2, 0xc3,
};
static const uint8_t siw_send_nocrc[] = {
    0x00, 0x22, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x55, 0x8f,
    0x37, 0x17, 0xa3, 0x70, 0x9d, 0xc2, 0xe2, 0x00, 0x00, 0x00, 0x00, 0x40,
    0x00, 0x00, 0x00, 0x00,
};

/* What the deframer handed out, copied (ULPDUs may point into input). */
struct sink {
    uint8_t data[STREAM_MAX];
    size_t off[MAX_ULPDUS + 1];
    int count;
    int fail_at;            /* return an error for this ULPDU, or -1 */
};

static struct sink sink = { .fail_at = -1 };
static uint8_t stream[STREAM_MAX];
static uint8_t payload[STREAM_MAX];
static uint8_t rxbuf[RNIC_MPA_ULPDU_MAX + 4];

static int sink_ulpdu(void *opaque, const uint8_t *ulpdu, size_t len)
{
    struct sink *s = opaque;

    if (s->count == s->fail_at) {
        return -100;
    }
    ck_assert_int_lt(s->count, MAX_ULPDUS);
    memcpy(s->data + s->off[s->count], ulpdu, len);
    s->off[s->count + 1] = s->off[s->count] + len;
    s->count++;
    return 0;
}

static void sink_reset(void)
{
    sink.count = 0;
    sink.off[0] = 0;
}

/* Flatten one framed FPDU onto the end of the stream. */
static size_t put_fpdu(const struct rnic_fpdu_out *out, size_t at)
{
    for (int i = 0; i < out->iovcnt; i++) {
        memcpy(stream + at, out->iov[i].iov_base, out->iov[i].iov_len);
        at += out->iov[i].iov_len;
    }
    return at;
}

/* Frame ULPDUs of the given sizes, each in one to three pieces. */
static size_t build_stream(bool crc, bool markers, const size_t *sizes,
                           int n)
{
    static struct rnic_fpdu_out out;
    struct rnic_fpdu_tx tx;
    size_t at = 0, poff = 0;

    rnic_fpdu_tx_init(&tx, crc, markers);
    for (int i = 0; i < n; i++) {
        uint8_t *p = payload + poff;
        size_t a = sizes[i] / 3, b = sizes[i] / 2;
        struct iovec iov[3][3] = {
            { { p, sizes[i] } },
            { { p, a }, { p + a, sizes[i] - a } },
            { { p, a }, { p + a, b - a }, { p + b, sizes[i] - b } },
        };

        ck_assert_int_eq(rnic_fpdu_tx_frame(&tx, iov[i % 3], 1 + i % 3, &out),
                         0);
        ck_assert_uint_eq(put_fpdu(&out, at), at + out.len);
        at += out.len;
        poff += sizes[i];
    }
    ck_assert_uint_eq(tx.pos, at);
    return at;
}

static struct rnic_fpdu_rx rx;

/* Deframe the first @len octets of the stream, @step at a time. */
static int deframe(bool crc, bool markers, size_t cap, size_t len,
                   size_t step)
{
    int err = 0;

    rnic_fpdu_rx_init(&rx, crc, markers, rxbuf, cap);
    sink_reset();
    for (size_t off = 0; off < len && !err; off += step) {
        err = rnic_fpdu_rx_input(&rx, stream + off,
                                 len - off < step ? len - off : step,
                                 sink_ulpdu, &sink);
    }
    return err;
}

START_TEST(test_round_trip)
{
    static const size_t sizes[] = {
        18, 0, 1, 2, 3, 4, 5, 14, 100, 505, 506, 507, 508, 509, 510, 511,
        512, 1024, 1430, 1442, 4096, 9000, 65535, 17, 1000,
    };
    static const size_t steps[] = { 1, 2, 3, 5, 64, 511, 512, 513, 1500,
                                    STREAM_MAX };
    const int n = sizeof(sizes) / sizeof(sizes[0]);
    bool crc = _i & 1, markers = _i & 2;
    unsigned seed = _i;
    size_t len;

    for (size_t i = 0; i < sizeof(payload); i++) {
        payload[i] = rand_r(&seed);
    }
    len = build_stream(crc, markers, sizes, n);

    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        ck_assert_int_eq(deframe(crc, markers, sizeof(rxbuf), len, steps[s]),
                         0);
        ck_assert_int_eq(sink.count, n);
        ck_assert_uint_eq(rx.pos, len);
        ck_assert_uint_eq(rx.last_pos + rx.last_len, len);
        ck_assert_uint_eq(sink.off[n], sink.off[n - 1] + sizes[n - 1]);
        ck_assert_mem_eq(sink.data, payload, sink.off[n]);
    }
    if (markers) {
        /* the stream opens with a marker pointing at the first FPDU */
        ck_assert_uint_eq(rnic_ld_be32(stream), 0);
        ck_assert_uint_eq(rnic_ld_be16(stream + 4), sizes[0]);
    } else {
        ck_assert_uint_eq(rnic_ld_be16(stream), sizes[0]);
    }
}
END_TEST

/* Markers sit exactly every 512 octets and point back to their FPDU. */
START_TEST(test_marker_positions)
{
    static const size_t sizes[] = { 1000, 300, 2000 };
    size_t len = build_stream(false, true, sizes, 3);
    /* marker, ULPDU_LENGTH at 4, 506 octets, marker, 494 octets, pad, CRC */
    size_t second = 4 + 2 + 1000 + 4 + 2 + 4;

    ck_assert_uint_eq(rnic_ld_be16(stream + 4), 1000);
    ck_assert_uint_eq(rnic_ld_be32(stream + 512), 512 - 4);
    ck_assert_uint_eq(second, 1016);
    ck_assert_uint_eq(rnic_ld_be16(stream + second), 300);
    ck_assert_uint_eq(rnic_ld_be32(stream + 1024), 1024 - second);
    for (size_t m = 0; m < len; m += 512) {
        ck_assert_uint_eq(rnic_ld_be16(stream + m), 0);
        ck_assert_uint_eq(rnic_ld_be16(stream + m + 2) % 4, 0);
    }
}
END_TEST

/* A marker on an FPDU boundary precedes the next FPDU, FPDUPTR 0. */
START_TEST(test_marker_on_boundary)
{
    /* marker + (2 + 498 + 0 + 4) = 508; then 2 + 2, a marker, the CRC */
    static const size_t sizes[] = { 498, 2, 7 };
    static const size_t exact[] = { 502, 7 };   /* 4 + 2 + 502 + 0 + 4 = 512 */
    size_t len = build_stream(true, true, sizes, 3);

    ck_assert_uint_eq(rnic_ld_be16(stream + 508), 2);
    ck_assert_uint_eq(rnic_ld_be32(stream + 512), 512 - 508);
    ck_assert_uint_eq(len, 520 + 2 + 7 + 3 + 4);
    ck_assert_int_eq(deframe(true, true, sizeof(rxbuf), len, 1), 0);
    ck_assert_int_eq(sink.count, 3);

    len = build_stream(true, true, exact, 2);
    ck_assert_uint_eq(rnic_ld_be32(stream + 512), 0);
    ck_assert_uint_eq(rnic_ld_be16(stream + 516), 7);
    ck_assert_int_eq(deframe(true, true, sizeof(rxbuf), len, 3), 0);
    ck_assert_int_eq(sink.count, 2);
}
END_TEST

/* Flip each octet of a CRC-protected stream in turn: every flip is caught. */
START_TEST(test_flipped_byte)
{
    static const size_t sizes[] = { 30, 600 };
    bool markers = _i;
    size_t len = build_stream(true, markers, sizes, 2);

    for (size_t at = 0; at < len; at++) {
        int err;

        stream[at] ^= 0x01;
        err = deframe(true, markers, sizeof(rxbuf), len, at % 2 ? 1 : len);
        stream[at] ^= 0x01;
        /* a flip in ULPDU_LENGTH may instead run past the end */
        ck_assert_msg(err == RNIC_FPDU_ERR_CRC || err == RNIC_FPDU_ERR_MARKER ||
                      (err == 0 && sink.count < 2),
                      "flip at %zu: err %d count %d", at, err, sink.count);
    }
    /* without CRC the same flip in the payload goes through */
    len = build_stream(false, false, sizes, 2);
    stream[10] ^= 0x80;
    ck_assert_int_eq(deframe(false, false, sizeof(rxbuf), len, len), 0);
    ck_assert_int_eq(sink.count, 2);
}
END_TEST

START_TEST(test_bad_marker)
{
    static const size_t sizes[] = { 1000 };
    size_t len = build_stream(false, true, sizes, 1);
    struct rnic_term_code t;

    stream[512 + 3] += 4;
    ck_assert_int_eq(deframe(false, true, sizeof(rxbuf), len, 100),
                     RNIC_FPDU_ERR_MARKER);
    t = rnic_fpdu_err_to_term(RNIC_FPDU_ERR_MARKER);
    ck_assert_uint_eq(t.ecode, RNIC_MPA_ECODE_MARKER);
    /* reserved bits and the low FPDUPTR bits are ignored */
    stream[512 + 3] -= 4;
    stream[512] = 0xff;
    stream[512 + 3] |= 3;
    ck_assert_int_eq(deframe(false, true, sizeof(rxbuf), len, 100), 0);
    ck_assert_int_eq(sink.count, 1);
}
END_TEST

START_TEST(test_oversize)
{
    static const size_t sizes[] = { 101 };
    size_t len = build_stream(true, false, sizes, 1);
    struct rnic_term_code t;
    struct rnic_fpdu_tx tx;
    static struct rnic_fpdu_out out;
    struct iovec big = { payload, RNIC_MPA_ULPDU_MAX + 1 };

    for (size_t step = 1; step <= len; step += len - 1) {
        /* 101 + pad 1 does not fit 100; 101 + 1 fits 102 */
        ck_assert_int_eq(deframe(true, false, 100, len, step),
                         RNIC_FPDU_ERR_TOO_LONG);
        ck_assert_int_eq(rnic_fpdu_rx_input(&rx, stream, 4, sink_ulpdu, &sink),
                         RNIC_FPDU_ERR_TOO_LONG);      /* sticky */
        ck_assert_int_eq(sink.count, 0);
        ck_assert_int_eq(deframe(true, false, 102, len, step), 0);
        ck_assert_int_eq(sink.count, 1);
    }
    t = rnic_fpdu_err_to_term(RNIC_FPDU_ERR_CRC);
    ck_assert_uint_eq(t.layer, RNIC_TERM_LAYER_LLP);
    ck_assert_uint_eq(t.ecode, RNIC_MPA_ECODE_CRC);
    rnic_fpdu_tx_init(&tx, false, false);
    ck_assert_int_eq(rnic_fpdu_tx_frame(&tx, &big, 1, &out), -1);
}
END_TEST

START_TEST(test_callback_error_stops)
{
    static const size_t sizes[] = { 10, 20, 30 };
    size_t len = build_stream(false, false, sizes, 3);

    sink.fail_at = 1;
    ck_assert_int_eq(deframe(false, false, sizeof(rxbuf), len, len), -100);
    ck_assert_int_eq(sink.count, 1);
    sink.fail_at = -1;
}
END_TEST

/* siw's first FPDU: verified, and framed again to the same octets. */
START_TEST(test_siw_fpdu)
{
    const uint8_t *wire = _i ? siw_send_crc : siw_send_nocrc;
    struct rnic_fpdu_tx tx;
    static struct rnic_fpdu_out out;
    struct iovec iov = { (void *)(wire + 2), 0x22 };

    rnic_fpdu_rx_init(&rx, _i, false, rxbuf, sizeof(rxbuf));
    sink_reset();
    ck_assert_int_eq(rnic_fpdu_rx_input(&rx, wire, 40, sink_ulpdu, &sink), 0);
    ck_assert_int_eq(sink.count, 1);
    ck_assert_mem_eq(sink.data, wire + 2, 0x22);
    rnic_fpdu_tx_init(&tx, _i, false);
    ck_assert_int_eq(rnic_fpdu_tx_frame(&tx, &iov, 1, &out), 0);
    ck_assert_uint_eq(out.len, 40);
    ck_assert_uint_eq(put_fpdu(&out, 0), 40);
    ck_assert_mem_eq(stream, wire, 40);
}
END_TEST

START_TEST(test_mulpdu)
{
    ck_assert_uint_eq(rnic_fpdu_mulpdu(1448, false), 1442);
    ck_assert_uint_eq(rnic_fpdu_mulpdu(1460, false), 1454);
    ck_assert_uint_eq(rnic_fpdu_mulpdu(1450, false), 1442);
    ck_assert_uint_eq(rnic_fpdu_mulpdu(1448, true), 1430);
    ck_assert_uint_eq(rnic_fpdu_mulpdu(4, false), 0);
    ck_assert_uint_eq(rnic_fpdu_mulpdu(100000, false), RNIC_MPA_ULPDU_MAX);
    /* a MULPDU-sized ULPDU framed with markers fits the EMSS */
    for (uint32_t emss = 536; emss < 9000; emss += 97) {
        size_t ul = rnic_fpdu_mulpdu(emss, true);
        size_t worst = rnic_fpdu_len(ul) + 4 * ((emss + 511) / 512);

        ck_assert_uint_le(worst, emss);
        ck_assert_uint_le(rnic_fpdu_len(rnic_fpdu_mulpdu(emss, false)), emss);
    }
}
END_TEST

Suite *fpdu_suite(void)
{
    Suite *s = suite_create("fpdu");
    TCase *tc = tcase_create("framing");

    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_round_trip, 0, 4);
    tcase_add_test(tc, test_marker_positions);
    tcase_add_test(tc, test_marker_on_boundary);
    tcase_add_loop_test(tc, test_flipped_byte, 0, 2);
    tcase_add_test(tc, test_bad_marker);
    tcase_add_test(tc, test_oversize);
    tcase_add_test(tc, test_callback_error_stops);
    tcase_add_loop_test(tc, test_siw_fpdu, 0, 2);
    tcase_add_test(tc, test_mulpdu);
    suite_add_tcase(s, tc);
    return s;
}
