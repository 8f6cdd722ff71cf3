/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <string.h>
#include <check.h>
#include "iwarp/mpa.h"
#include "suites.h"

/* First frames of hostfwd-lo-*.pcap (tests/data/siw-captures/mpa-hexdump.txt) */
#define SIW_KEY_REQ "4d504120494420526571204672616d65"
#define SIW_KEY_REP "4d504120494420526570204672616d65"
static const char siw_req_nocrc[] = SIW_KEY_REQ "1002000400010001";
static const char siw_rep_nocrc[] = SIW_KEY_REP "1002000400010001";
static const char siw_req_crc[] = SIW_KEY_REQ "5002000400010001";
static const char siw_rep_crc[] = SIW_KEY_REP "5002000400010001";

static size_t unhex(const char *hex, uint8_t *out)
{
    size_t n = strlen(hex) / 2;

    for (size_t i = 0; i < n; i++) {
        unsigned v;

        ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = v;
    }
    return n;
}

/* What siw's compile-time defaults amount to, for rping (IRD/ORD 1/1). */
static struct rnic_mpa_params siw_like(enum rnic_mpa_crc_policy crc)
{
    return (struct rnic_mpa_params) {
        .rev = 2, .crc = crc, .ird = 1, .ord = 1,
    };
}

static void parse_hex(const char *hex, bool reply, struct rnic_mpa_frame *f)
{
    uint8_t buf[RNIC_MPA_FRAME_MAX];
    size_t n = unhex(hex, buf);

    ck_assert_int_eq(rnic_mpa_parse(buf, n, reply, f), (int)n);
}

static void assert_bytes(const uint8_t *got, int len, const char *hex)
{
    uint8_t want[RNIC_MPA_FRAME_MAX];
    size_t n = unhex(hex, want);

    ck_assert_int_eq(len, (int)n);
    ck_assert_mem_eq(got, want, n);
}

/* Patch one octet of a siw frame, parse it and negotiate with siw_like(). */
static int negotiate_patched(const char *hex, bool reply, size_t at,
                             uint8_t val)
{
    struct rnic_mpa_params p = siw_like(RNIC_MPA_CRC_ACCEPT);
    struct rnic_mpa_frame f;
    struct rnic_mpa_result res;
    uint8_t buf[64];
    size_t n = unhex(hex, buf);
    int len;

    buf[at] = val;
    len = rnic_mpa_parse(buf, n, reply, &f);
    if (len < 0) {
        return len;
    }
    ck_assert_int_eq(len, (int)n);
    return reply ? rnic_mpa_negotiate_reply(&p, &f, &res)
                 : rnic_mpa_negotiate_request(&p, &f, &res);
}

START_TEST(test_parse_siw_request)
{
    struct rnic_mpa_frame f;

    parse_hex(siw_req_nocrc, false, &f);
    ck_assert_int_eq(f.rev, 2);
    ck_assert(f.enhanced);
    ck_assert(!(f.flags & (RNIC_MPA_FLAG_C | RNIC_MPA_FLAG_M)));
    ck_assert_uint_eq(f.ird, 1);
    ck_assert_uint_eq(f.ord, 1);
    ck_assert(!f.p2p);
    ck_assert_uint_eq(f.pd_len, 0);
    parse_hex(siw_req_crc, false, &f);
    ck_assert(f.flags & RNIC_MPA_FLAG_C);
    /* a Request is not a Reply */
    ck_assert_int_eq(negotiate_patched(siw_req_nocrc, true, 0, 'M'),
                     RNIC_MPA_ERR_KEY);
}
END_TEST

START_TEST(test_build_request_like_siw)
{
    struct rnic_mpa_params p = siw_like(RNIC_MPA_CRC_ACCEPT);
    uint8_t buf[RNIC_MPA_FRAME_MAX];

    assert_bytes(buf, rnic_mpa_build_request(&p, buf, sizeof(buf)),
                 siw_req_nocrc);
    p.crc = RNIC_MPA_CRC_REQUIRED;
    assert_bytes(buf, rnic_mpa_build_request(&p, buf, sizeof(buf)),
                 siw_req_crc);
}
END_TEST

/* As responder we answer siw's Requests with exactly siw's Replies. */
START_TEST(test_reply_like_siw)
{
    static const struct {
        const char *req, *rep;
        enum rnic_mpa_crc_policy policy;
        bool crc;
    } cases[] = {
        { siw_req_nocrc, siw_rep_nocrc, RNIC_MPA_CRC_ACCEPT, false },
        { siw_req_crc, siw_rep_crc, RNIC_MPA_CRC_ACCEPT, true },
        { siw_req_nocrc, siw_rep_crc, RNIC_MPA_CRC_REQUIRED, true },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct rnic_mpa_params p = siw_like(cases[i].policy);
        struct rnic_mpa_frame req;
        struct rnic_mpa_result res;
        uint8_t buf[RNIC_MPA_FRAME_MAX];

        parse_hex(cases[i].req, false, &req);
        ck_assert_int_eq(rnic_mpa_negotiate_request(&p, &req, &res), 0);
        ck_assert_int_eq(res.crc, cases[i].crc);
        ck_assert_int_eq(res.rev, 2);
        ck_assert(res.enhanced && !res.markers_tx && !res.markers_rx);
        assert_bytes(buf, rnic_mpa_build_reply(&p, &res, buf, sizeof(buf)),
                     cases[i].rep);
    }
}
END_TEST

START_TEST(test_initiator_accepts_siw_reply)
{
    struct rnic_mpa_params p = siw_like(RNIC_MPA_CRC_ACCEPT);
    struct rnic_mpa_frame rep;
    struct rnic_mpa_result res;

    parse_hex(siw_rep_crc, true, &rep);
    ck_assert_int_eq(rnic_mpa_negotiate_reply(&p, &rep, &res), 0);
    ck_assert(res.crc);
    ck_assert_uint_eq(res.peer_ird, 1);
    ck_assert_uint_eq(res.ord, 1);
    parse_hex(siw_rep_nocrc, true, &rep);
    ck_assert_int_eq(rnic_mpa_negotiate_reply(&p, &rep, &res), 0);
    ck_assert(!res.crc);
    p.crc = RNIC_MPA_CRC_OFF;
    parse_hex(siw_rep_crc, true, &rep);
    ck_assert_int_eq(rnic_mpa_negotiate_reply(&p, &rep, &res),
                     RNIC_MPA_ERR_CRC);
}
END_TEST

/* Build, parse, negotiate both ways; returns the responder's verdict. */
static int handshake(const struct rnic_mpa_params *ini,
                     const struct rnic_mpa_params *rsp,
                     struct rnic_mpa_result *ini_res,
                     struct rnic_mpa_result *rsp_res)
{
    uint8_t buf[RNIC_MPA_FRAME_MAX];
    struct rnic_mpa_frame f;
    int len = rnic_mpa_build_request(ini, buf, sizeof(buf));
    int err;

    ck_assert_int_gt(len, 0);
    ck_assert_int_eq(rnic_mpa_parse(buf, len, false, &f), len);
    err = rnic_mpa_negotiate_request(rsp, &f, rsp_res);
    if (err) {
        return err;
    }
    len = rnic_mpa_build_reply(rsp, rsp_res, buf, sizeof(buf));
    ck_assert_int_gt(len, 0);
    ck_assert_int_eq(rnic_mpa_parse(buf, len, true, &f), len);
    return rnic_mpa_negotiate_reply(ini, &f, ini_res);
}

START_TEST(test_revisions)
{
    struct rnic_mpa_params a = siw_like(RNIC_MPA_CRC_ACCEPT);
    struct rnic_mpa_params b = siw_like(RNIC_MPA_CRC_ACCEPT);
    struct rnic_mpa_result ra, rb;
    uint8_t buf[RNIC_MPA_FRAME_MAX];

    a.rev = 1;
    ck_assert_int_eq(rnic_mpa_build_request(&a, buf, sizeof(buf)), 20);
    assert_bytes(buf, 20, SIW_KEY_REQ "00010000");
    a.ird = 3;
    a.ord = 0;
    b.ird = 5;
    b.ord = 7;
    ck_assert_int_eq(handshake(&a, &b, &ra, &rb), 0);
    ck_assert(ra.rev == 1 && rb.rev == 1 && !ra.enhanced && !rb.enhanced);
    /* nothing exchanged: each side keeps the limits it asked for */
    ck_assert(ra.ird == 3 && ra.ord == 0 && rb.ird == 5 && rb.ord == 7);
    /* an enhanced initiator meets a rev 1 responder */
    a.rev = 2;
    b.rev = 1;
    ck_assert_int_eq(handshake(&a, &b, &ra, &rb), 0);
    ck_assert(ra.rev == 1 && !ra.enhanced);
    b.rev = 2;
    ck_assert_int_eq(handshake(&a, &b, &ra, &rb), 0);
    ck_assert(ra.rev == 2 && rb.rev == 2 && ra.enhanced && rb.enhanced);
    b.rev = 3;
    ck_assert_int_eq(handshake(&a, &b, &ra, &rb), RNIC_MPA_ERR_PARAM);
}
END_TEST

START_TEST(test_bad_revision_and_key)
{
    struct rnic_mpa_frame f;
    uint8_t buf[64];

    ck_assert_int_eq(negotiate_patched(siw_req_nocrc, false, 17, 0),
                     RNIC_MPA_ERR_REVISION);
    ck_assert_int_eq(negotiate_patched(siw_req_nocrc, false, 17, 3),
                     RNIC_MPA_ERR_REVISION);
    ck_assert_int_eq(negotiate_patched(siw_req_nocrc, false, 4, 'X'),
                     RNIC_MPA_ERR_KEY);
    ck_assert_int_eq(negotiate_patched(siw_rep_nocrc, true, 17, 3),
                     RNIC_MPA_ERR_REVISION);
    /* too short yet: no verdict */
    unhex(siw_req_nocrc, buf);
    ck_assert_int_eq(rnic_mpa_parse(buf, 19, false, &f), 0);
}
END_TEST

/* CRC per local policy (row) and whether the peer asks (column). */
static const int crc_want[3][2] = {
    [RNIC_MPA_CRC_OFF] = { 0, RNIC_MPA_ERR_CRC },
    [RNIC_MPA_CRC_ACCEPT] = { 0, 1 },
    [RNIC_MPA_CRC_REQUIRED] = { 1, 1 },
};

static void assert_crc(int err, const struct rnic_mpa_result *res, int want)
{
    if (want < 0) {
        ck_assert_int_eq(err, want);
    } else {
        ck_assert_int_eq(err, 0);
        ck_assert_int_eq(res->crc, want);
    }
}

START_TEST(test_crc_policy_matrix)
{
    for (int policy = 0; policy < 3; policy++) {
        for (int asks = 0; asks < 2; asks++) {
            struct rnic_mpa_params peer = siw_like(asks ? RNIC_MPA_CRC_REQUIRED
                                                        : RNIC_MPA_CRC_ACCEPT);
            struct rnic_mpa_params local = siw_like(policy);
            struct rnic_mpa_frame rep;
            struct rnic_mpa_result ra, rb;

            /* we respond to a Request */
            assert_crc(handshake(&peer, &local, &ra, &rb), &rb,
                       crc_want[policy][asks]);
            /* we initiated and get a Reply */
            parse_hex(asks ? siw_rep_crc : siw_rep_nocrc, true, &rep);
            assert_crc(rnic_mpa_negotiate_reply(&local, &rep, &ra), &ra,
                       crc_want[policy][asks]);
        }
    }
}
END_TEST

START_TEST(test_markers)
{
    struct rnic_mpa_params ini = siw_like(RNIC_MPA_CRC_ACCEPT);
    struct rnic_mpa_params rsp = siw_like(RNIC_MPA_CRC_ACCEPT);
    struct rnic_mpa_result ra, rb;

    ini.markers_wanted = true;
    ck_assert_int_eq(handshake(&ini, &rsp, &ra, &rb), RNIC_MPA_ERR_MARKERS);
    rsp.markers_allowed = true;
    ck_assert_int_eq(handshake(&ini, &rsp, &ra, &rb), 0);
    ck_assert(rb.markers_tx && !rb.markers_rx);
    ck_assert(ra.markers_rx && !ra.markers_tx);
    /* the responder wants them too, the initiator cannot send them */
    rsp.markers_wanted = true;
    ck_assert_int_eq(handshake(&ini, &rsp, &ra, &rb), RNIC_MPA_ERR_MARKERS);
    ini.markers_allowed = true;
    ck_assert_int_eq(handshake(&ini, &rsp, &ra, &rb), 0);
    ck_assert(ra.markers_tx && ra.markers_rx && rb.markers_tx && rb.markers_rx);
}
END_TEST

START_TEST(test_private_data_limits)
{
    static uint8_t pd[RNIC_MPA_PD_MAX + 1];
    struct rnic_mpa_params p = siw_like(RNIC_MPA_CRC_ACCEPT);
    struct rnic_mpa_frame f;
    uint8_t buf[RNIC_MPA_FRAME_MAX + 8];
    int len;

    for (size_t i = 0; i < sizeof(pd); i++) {
        pd[i] = i * 7;
    }
    p.pd = pd;
    p.rev = 1;
    p.pd_len = 0;
    ck_assert_int_eq(rnic_mpa_build_request(&p, buf, sizeof(buf)), 20);
    p.pd_len = 512;
    len = rnic_mpa_build_request(&p, buf, sizeof(buf));
    ck_assert_int_eq(len, 532);
    ck_assert_int_eq(rnic_mpa_parse(buf, len, false, &f), len);
    ck_assert_uint_eq(f.pd_len, 512);
    ck_assert_mem_eq(f.pd, pd, 512);
    p.pd_len = 513;
    ck_assert_int_eq(rnic_mpa_build_request(&p, buf, sizeof(buf)),
                     RNIC_MPA_ERR_PD_LEN);
    /* rev 2: the 4-byte IRD/ORD prefix counts against the 512 */
    p.rev = 2;
    p.pd_len = 508;
    ck_assert_int_eq(rnic_mpa_build_request(&p, buf, sizeof(buf)), 532);
    ck_assert_int_eq(rnic_mpa_parse(buf, 532, false, &f), 532);
    ck_assert_uint_eq(f.pd_len, 508);
    ck_assert_mem_eq(f.pd, pd, 508);
    p.pd_len = 509;
    ck_assert_int_eq(rnic_mpa_build_request(&p, buf, sizeof(buf)),
                     RNIC_MPA_ERR_PD_LEN);
    /* a received length of 513 is refused from the header alone */
    rnic_st_be16(buf + 18, 513);
    ck_assert_int_eq(rnic_mpa_parse(buf, 20, false, &f), RNIC_MPA_ERR_PD_LEN);
}
END_TEST

START_TEST(test_reject)
{
    static const char why[] = "go away";
    struct rnic_mpa_params p = siw_like(RNIC_MPA_CRC_ACCEPT);
    struct rnic_mpa_frame f;
    struct rnic_mpa_result res;
    uint8_t buf[RNIC_MPA_FRAME_MAX];
    int len = rnic_mpa_build_reject(2, (const uint8_t *)why, sizeof(why),
                                    buf, sizeof(buf));

    ck_assert_int_eq(len, 20 + (int)sizeof(why));
    ck_assert_uint_eq(buf[16], RNIC_MPA_FLAG_R);
    ck_assert_int_eq(rnic_mpa_parse(buf, len, true, &f), len);
    ck_assert_int_eq(rnic_mpa_negotiate_reply(&p, &f, &res),
                     RNIC_MPA_ERR_REJECTED);
    ck_assert_mem_eq(f.pd, why, sizeof(why));
}
END_TEST

START_TEST(test_rev2_reply_needs_enhanced_flag)
{
    struct rnic_mpa_frame f;
    uint8_t buf[64];

    ck_assert_int_eq(negotiate_patched(siw_rep_nocrc, true, 16, 0),
                     RNIC_MPA_ERR_ENHANCED);
    /* enhanced flag but no room for IRD/ORD */
    unhex(siw_rep_nocrc, buf);
    rnic_st_be16(buf + 18, 2);
    ck_assert_int_eq(rnic_mpa_parse(buf, 22, true, &f), RNIC_MPA_ERR_ENHANCED);
}
END_TEST

START_TEST(test_p2p_rtr_and_ird)
{
    struct rnic_mpa_params ini = siw_like(RNIC_MPA_CRC_ACCEPT);
    struct rnic_mpa_params rsp = siw_like(RNIC_MPA_CRC_ACCEPT);
    struct rnic_mpa_result ra, rb;
    uint8_t buf[RNIC_MPA_FRAME_MAX];
    struct rnic_term_code t;

    ini.rtr = RNIC_MPA_RTR_WRITE | RNIC_MPA_RTR_READ;
    ini.ird = 16;
    ini.ord = 8;
    ck_assert_int_eq(rnic_mpa_build_request(&ini, buf, sizeof(buf)), 24);
    assert_bytes(buf + 16, 8, "10020004" "8010" "c008");
    rsp.rtr = RNIC_MPA_RTR_READ | RNIC_MPA_RTR_SEND;
    rsp.ird = 4;
    rsp.ord = 32;
    ck_assert_int_eq(handshake(&ini, &rsp, &ra, &rb), 0);
    ck_assert_uint_eq(ra.rtr, RNIC_MPA_RTR_READ);
    ck_assert_uint_eq(rb.rtr, RNIC_MPA_RTR_READ);
    ck_assert_uint_eq(rb.ord, 16);    /* capped by the initiator's IRD */
    ck_assert_uint_eq(ra.ord, 4);     /* capped by the responder's IRD */
    rsp.strict_ird = true;
    ck_assert_int_eq(handshake(&ini, &rsp, &ra, &rb), RNIC_MPA_ERR_IRD);
    t = rnic_mpa_err_to_term(RNIC_MPA_ERR_IRD);
    ck_assert_uint_eq(t.ecode, RNIC_MPA_ECODE_INSUFFICIENT_IRD);
    rsp.strict_ird = false;
    rsp.rtr = RNIC_MPA_RTR_SEND;
    ck_assert_int_eq(handshake(&ini, &rsp, &ra, &rb), RNIC_MPA_ERR_RTR);
    t = rnic_mpa_err_to_term(RNIC_MPA_ERR_RTR);
    ck_assert_uint_eq(t.layer, RNIC_TERM_LAYER_LLP);
    ck_assert_uint_eq(t.ecode, RNIC_MPA_ECODE_NO_MATCHING_RTR);
    t = rnic_mpa_err_to_term(RNIC_MPA_ERR_KEY);
    ck_assert_uint_eq(t.ecode, RNIC_MPA_ECODE_INVALID_REQ_REP);
}
END_TEST

/* Feed @hex with @trailer behind it, @step bytes at a time. */
static int feed(struct rnic_mpa_conn *c, const char *hex, size_t step)
{
    uint8_t buf[RNIC_MPA_FRAME_MAX + 8];
    size_t n = unhex(hex, buf), off = 0;
    int ret = 0;

    memcpy(buf + n, "\x00\x22\x41\x43", 4);     /* an FPDU right behind */
    n += 4;
    while (off < n) {
        size_t chunk = n - off < step ? n - off : step, used;

        ret = rnic_mpa_conn_input(c, buf + off, chunk, &used);
        off += used;
        if (ret != RNIC_MPA_WAIT_FRAME) {
            break;
        }
        ck_assert_uint_eq(used, chunk);
    }
    ck_assert_uint_eq(n - off, ret < 0 ? n - off : 4);
    return ret;
}

START_TEST(test_conn_byte_at_a_time)
{
    struct rnic_mpa_params p = siw_like(RNIC_MPA_CRC_ACCEPT);
    struct rnic_mpa_conn rsp, ini;
    size_t steps[] = { 1, 3, 20, 1000 };

    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        ck_assert_int_eq(rnic_mpa_conn_init(&rsp, false, &p), 0);
        ck_assert_uint_eq(rsp.out_len, 0);
        ck_assert_int_eq(feed(&rsp, siw_req_crc, steps[i]), RNIC_MPA_DONE);
        assert_bytes(rsp.out, rsp.out_len, siw_rep_crc);
        ck_assert(rsp.result.crc);

        ck_assert_int_eq(rnic_mpa_conn_init(&ini, true, &p), 0);
        assert_bytes(ini.out, ini.out_len, siw_req_nocrc);
        ck_assert_int_eq(feed(&ini, siw_rep_nocrc, steps[i]), RNIC_MPA_DONE);
        ck_assert(!ini.result.crc && ini.result.enhanced);
    }
}
END_TEST

START_TEST(test_conn_rejects)
{
    struct rnic_mpa_params p = siw_like(RNIC_MPA_CRC_OFF);
    struct rnic_mpa_conn c;
    size_t used;

    rnic_mpa_conn_init(&c, false, &p);
    ck_assert_int_eq(feed(&c, siw_req_crc, 5), RNIC_MPA_ERR_CRC);
    ck_assert_int_eq(c.state, RNIC_MPA_FAILED);
    ck_assert_uint_gt(c.out_len, 20);
    ck_assert_mem_eq(c.out, RNIC_MPA_KEY_REP, 16);
    ck_assert_uint_eq(c.out[16], RNIC_MPA_FLAG_R);
    ck_assert_int_eq(rnic_mpa_conn_input(&c, "x", 1, &used), RNIC_MPA_ERR_CRC);
    ck_assert_uint_eq(used, 0);
    /* not MPA at all: no Reply, fail as soon as the header is in */
    rnic_mpa_conn_init(&c, false, &p);
    ck_assert_int_eq(rnic_mpa_conn_input(&c, "GET / HTTP/1.1\r\nHost: x\r\n",
                                         25, &used), RNIC_MPA_ERR_KEY);
    ck_assert_uint_eq(used, 20);
    ck_assert_uint_eq(c.out_len, 0);
}
END_TEST

Suite *mpa_suite(void)
{
    Suite *s = suite_create("mpa");
    TCase *tc = tcase_create("setup");

    tcase_add_test(tc, test_parse_siw_request);
    tcase_add_test(tc, test_build_request_like_siw);
    tcase_add_test(tc, test_reply_like_siw);
    tcase_add_test(tc, test_initiator_accepts_siw_reply);
    tcase_add_test(tc, test_revisions);
    tcase_add_test(tc, test_bad_revision_and_key);
    tcase_add_test(tc, test_crc_policy_matrix);
    tcase_add_test(tc, test_markers);
    tcase_add_test(tc, test_private_data_limits);
    tcase_add_test(tc, test_reject);
    tcase_add_test(tc, test_rev2_reply_needs_enhanced_flag);
    tcase_add_test(tc, test_p2p_rtr_and_ird);
    tcase_add_test(tc, test_conn_byte_at_a_time);
    tcase_add_test(tc, test_conn_rejects);
    suite_add_tcase(s, tc);
    return s;
}
