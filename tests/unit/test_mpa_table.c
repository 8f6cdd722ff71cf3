/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The RFC 6581 negotiation table, exhaustively: every combination of the
 * four flag bits of the IRD/ORD words (A peer-to-peer, B Send RTR in the
 * IRD word; C Write RTR, D Read RTR in the ORD word) in a Request, against
 * every set of RTR types the responder takes, and every Reply against
 * every set an initiator offers.  Frames are written and read as raw
 * octets here, not with the core's own encoder, and the expected outcome
 * comes from the rules below (docs/protocol.md, "RFC 6581"):
 *
 *  responder  A=0: Reply with A=B=C=D=0 (client-server), B/C/D ignored.
 *             A=1: Reply with A=1 and exactly one of B/C/D, one offered
 *             and taken (Write before Read before Send); none in common:
 *             MPA Reject (R bit), no RFC 6581 data.  A=1 offering no
 *             type: client-server Reply (such an initiator never sends
 *             an RTR; siw's peer_to_peer with rtr_type NO_RTR does it).
 *  initiator  Request A=1 and the offered B/C/D when it offers any type.
 *             Reply A=0: client-server, whatever was offered.
 *             Reply A=1: exactly one of B/C/D, one we offered; anything
 *             else is refused with Terminate "No Matching RTR Option"
 *             (LLP layer 2, MPA type 0, code 0x07), our only FPDU.
 *  revision 1 (either side): no IRD/ORD words, never peer-to-peer.
 */
#include <string.h>
#include <check.h>
#include "iwarp/fpdu.h"
#include "iwarp/mpa.h"
#include "suites.h"

#define A_P2P   0x8     /* table index bits: A B C D */
#define B_SEND  0x4
#define C_WRITE 0x2
#define D_READ  0x1

#define FLAG_R  0x20
#define FLAG_S  0x10    /* RFC 6581 data present */

/* A rev 2 frame with RFC 6581 data: IRD 5, ORD 3 and the four flags. */
static size_t frame(uint8_t *buf, const char *key, unsigned abcd)
{
    uint16_t ird = 5 | (abcd & A_P2P ? 0x8000 : 0) |
                   (abcd & B_SEND ? 0x4000 : 0);
    uint16_t ord = 3 | (abcd & C_WRITE ? 0x8000 : 0) |
                   (abcd & D_READ ? 0x4000 : 0);
    const uint8_t hdr[] = {
        FLAG_S, 2, 0, 4, ird >> 8, ird & 0xff, ord >> 8, ord & 0xff,
    };

    memcpy(buf, key, 16);
    memcpy(buf + 16, hdr, sizeof(hdr));
    return 16 + sizeof(hdr);
}

/* The four flags of a frame's IRD/ORD words, as a table index. */
static unsigned abcd_of(const uint8_t *f)
{
    return (f[20] & 0x80 ? A_P2P : 0) | (f[20] & 0x40 ? B_SEND : 0) |
           (f[22] & 0x80 ? C_WRITE : 0) | (f[22] & 0x40 ? D_READ : 0);
}

/* RNIC_MPA_RTR_* <-> the B/C/D bits. */
static unsigned bcd_of(uint8_t rtr)
{
    return (rtr & RNIC_MPA_RTR_SEND ? B_SEND : 0) |
           (rtr & RNIC_MPA_RTR_WRITE ? C_WRITE : 0) |
           (rtr & RNIC_MPA_RTR_READ ? D_READ : 0);
}

static struct rnic_mpa_params params(uint8_t rev, uint8_t rtr)
{
    return (struct rnic_mpa_params) {
        .rev = rev, .crc = RNIC_MPA_CRC_ACCEPT, .ird = 8, .ord = 8,
        .rtr = rtr,
    };
}

/* The responder's rule: the B/C/D bit it must choose, 0 to reject. */
static unsigned expect_choice(unsigned req, unsigned taken)
{
    unsigned common = req & taken;

    if (common & C_WRITE) {
        return C_WRITE;
    }
    if (common & D_READ) {
        return D_READ;
    }
    return common & B_SEND;
}

/* _i: Request flags (4 bits) x RTR types the responder takes (3 bits). */
START_TEST(test_responder_table)
{
    unsigned req = _i >> 3;
    uint8_t taken = _i & 7;
    struct rnic_mpa_params p = params(2, taken);
    struct rnic_mpa_conn c;
    uint8_t buf[64];
    size_t n = frame(buf, RNIC_MPA_KEY_REQ, req), used;
    unsigned want = expect_choice(req, bcd_of(taken));
    int ret;

    ck_assert_int_eq(rnic_mpa_conn_init(&c, false, &p), 0);
    ret = rnic_mpa_conn_input(&c, buf, n, &used);
    ck_assert_uint_eq(used, n);
    ck_assert_mem_eq(c.out, RNIC_MPA_KEY_REP, 16);
    if (!(req & A_P2P) || req == A_P2P) {
        ck_assert_int_eq(ret, RNIC_MPA_DONE);
        ck_assert_uint_eq(c.out[16], FLAG_S);
        ck_assert_uint_eq(abcd_of(c.out), 0);
        ck_assert_uint_eq(c.result.rtr, 0);
    } else if (!want) {
        ck_assert_int_eq(ret, RNIC_MPA_ERR_RTR);
        ck_assert_uint_eq(c.out[16] & FLAG_R, FLAG_R);
        ck_assert_uint_eq(c.out[16] & FLAG_S, 0);
    } else {
        ck_assert_int_eq(ret, RNIC_MPA_DONE);
        ck_assert_uint_eq(c.out[16], FLAG_S);
        ck_assert_uint_eq(abcd_of(c.out), A_P2P | want);
        ck_assert_uint_eq(bcd_of(c.result.rtr), want);
    }
    if (ret == RNIC_MPA_DONE) {
        /* IRD/ORD: ours, and our ORD capped at the initiator's IRD (5) */
        ck_assert_uint_eq(((c.out[20] << 8 | c.out[21]) & 0x3fff), 8);
        ck_assert_uint_eq(((c.out[22] << 8 | c.out[23]) & 0x3fff), 5);
    }
}
END_TEST

static int got_ulpdu(void *opaque, const uint8_t *ulpdu, size_t len)
{
    memcpy(opaque, ulpdu, len);
    return 0;
}

/*
 * The initiator's Terminate, octet by octet: ULPDU_LENGTH 22 (untagged
 * DDP header, Terminate header), DDP L and version 1, RDMAP version 1 and
 * opcode 7, queue 2, MSN 1, MO 0, then layer/type 0x20 and code 0x07; the
 * CRC (deframed by the core's receiver) right when @crc.
 */
static void assert_term_fpdu(const uint8_t *f, size_t len, bool crc)
{
    static const uint8_t want[] = {
        0x00, 0x16, 0x41, 0x47, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1,
        0, 0, 0, 0, 0x20, 0x07, 0x00, 0x00,
    };
    struct rnic_fpdu_rx rx;
    uint8_t buf[64], ulpdu[64];

    ck_assert_uint_eq(len, sizeof(want) + 4);
    ck_assert_mem_eq(f, want, sizeof(want));
    rnic_fpdu_rx_init(&rx, crc, false, buf, sizeof(buf));
    ck_assert_int_eq(rnic_fpdu_rx_input(&rx, f, len, got_ulpdu, ulpdu), 0);
    ck_assert_mem_eq(ulpdu, want + 2, 22);
}

/* The Terminate is framed as the Reply agreed: with CRC here. */
START_TEST(test_initiator_term_with_crc)
{
    static const uint8_t rep[] = "MPA ID Rep Frame\x50\x02\x00\x04"
                                 "\x80\x01\x80\x01";
    struct rnic_mpa_params p = params(2, RNIC_MPA_RTR_READ);
    struct rnic_mpa_conn c;
    size_t used;

    p.crc = RNIC_MPA_CRC_REQUIRED;
    ck_assert_int_eq(rnic_mpa_conn_init(&c, true, &p), 0);
    ck_assert_int_eq(rnic_mpa_conn_input(&c, rep, 24, &used),
                     RNIC_MPA_ERR_RTR);
    assert_term_fpdu(c.out, c.out_len, true);
    c.out[c.out_len - 1] ^= 1;
    {
        struct rnic_fpdu_rx rx;
        uint8_t buf[64], ulpdu[64];

        rnic_fpdu_rx_init(&rx, true, false, buf, sizeof(buf));
        ck_assert_int_eq(rnic_fpdu_rx_input(&rx, c.out, c.out_len,
                                            got_ulpdu, ulpdu),
                         RNIC_FPDU_ERR_CRC);
    }
}
END_TEST

/* The initiator's rule: 1 when the Reply is taken. */
static bool expect_reply_ok(unsigned offered, unsigned rep)
{
    unsigned bcd = rep & (B_SEND | C_WRITE | D_READ);

    if (!(rep & A_P2P)) {
        return true;
    }
    return bcd && !(bcd & (bcd - 1)) && (bcd & offered);
}

/* _i: RTR types offered (3 bits; 0: client-server) x Reply flags. */
START_TEST(test_initiator_table)
{
    uint8_t offered = _i >> 4;
    unsigned rep = _i & 15;
    struct rnic_mpa_params p = params(2, offered);
    struct rnic_mpa_conn c;
    uint8_t buf[64];
    size_t n = frame(buf, RNIC_MPA_KEY_REP, rep), used;
    int ret;

    ck_assert_int_eq(rnic_mpa_conn_init(&c, true, &p), 0);
    ck_assert_uint_eq(c.out_len, 24);
    ck_assert_uint_eq(abcd_of(c.out),
                      offered ? A_P2P | bcd_of(offered) : 0);
    ret = rnic_mpa_conn_input(&c, buf, n, &used);
    if (expect_reply_ok(bcd_of(offered), rep)) {
        ck_assert_int_eq(ret, RNIC_MPA_DONE);
        ck_assert_uint_eq(bcd_of(c.result.rtr),
                          rep & A_P2P ? rep & ~A_P2P : 0);
    } else {
        struct rnic_term_code t = rnic_mpa_err_to_term(ret);

        ck_assert_int_eq(ret, RNIC_MPA_ERR_RTR);
        ck_assert_uint_eq(t.layer, RNIC_TERM_LAYER_LLP);
        ck_assert_uint_eq(t.ecode, RNIC_MPA_ECODE_NO_MATCHING_RTR);
        assert_term_fpdu(c.out, c.out_len, false);
    }
}
END_TEST

/*
 * Revision 1 peers: a rev 1 Request (private data "abc", which must not be
 * read as IRD/ORD) gets a rev 1 Reply without RFC 6581 data, whatever RTR
 * types we would take; a rev 1 initiator offers nothing; a rev 2 initiator
 * takes a rev 1 Reply as client-server.  _i: our RTR types.
 */
START_TEST(test_revision1_table)
{
    static const uint8_t req1[] = "MPA ID Req Frame\x00\x01\x00\x03" "abc";
    static const uint8_t rep1[] = "MPA ID Rep Frame\x00\x01\x00\x03" "xyz";
    struct rnic_mpa_params p2 = params(2, _i), p1 = params(1, _i);
    struct rnic_mpa_conn c;
    size_t used;

    ck_assert_int_eq(rnic_mpa_conn_init(&c, false, &p2), 0);
    ck_assert_int_eq(rnic_mpa_conn_input(&c, req1, 23, &used), RNIC_MPA_DONE);
    ck_assert_uint_eq(c.out_len, 20);
    ck_assert_uint_eq(c.out[16], 0);
    ck_assert_uint_eq(c.out[17], 1);
    ck_assert(!c.result.enhanced && !c.result.rtr);
    ck_assert_uint_eq(c.peer.pd_len, 3);
    ck_assert_mem_eq(c.peer.pd, "abc", 3);

    ck_assert_int_eq(rnic_mpa_conn_init(&c, true, &p1), 0);
    ck_assert_uint_eq(c.out_len, 20);
    ck_assert_uint_eq(c.out[16], 0);
    ck_assert_uint_eq(c.out[17], 1);
    ck_assert_int_eq(rnic_mpa_conn_input(&c, rep1, 23, &used), RNIC_MPA_DONE);
    ck_assert(!c.result.enhanced && !c.result.rtr);

    ck_assert_int_eq(rnic_mpa_conn_init(&c, true, &p2), 0);
    ck_assert_int_eq(rnic_mpa_conn_input(&c, rep1, 23, &used), RNIC_MPA_DONE);
    ck_assert(!c.result.enhanced && !c.result.rtr);
    ck_assert_uint_eq(c.result.rev, 1);
    ck_assert_mem_eq(c.peer.pd, "xyz", 3);
}
END_TEST

/*
 * siw's peer-to-peer Request as siw sends it, Write and Read both offered
 * as RTR: the responder's Reply picks one of them, Write, so that siw's
 * p2p client can connect to rnic.
 */
START_TEST(test_siw_p2p_request)
{
    static const uint8_t req[] = "MPA ID Req Frame\x10\x02\x00\x04"
                                 "\x80\x01\xc0\x01";
    struct rnic_mpa_params p = params(2, RNIC_MPA_RTR_WRITE |
                                         RNIC_MPA_RTR_READ);
    struct rnic_mpa_conn c;
    size_t used;

    ck_assert_int_eq(rnic_mpa_conn_init(&c, false, &p), 0);
    ck_assert_int_eq(rnic_mpa_conn_input(&c, req, 24, &used), RNIC_MPA_DONE);
    ck_assert_uint_eq(c.out_len, 24);
    ck_assert_mem_eq(c.out + 16, "\x10\x02\x00\x04\x80\x08\x80\x01", 8);
}
END_TEST

Suite *mpa_table_suite(void)
{
    Suite *s = suite_create("mpa-table");
    TCase *tc = tcase_create("rfc6581");

    tcase_add_loop_test(tc, test_responder_table, 0, 16 * 8);
    tcase_add_loop_test(tc, test_initiator_table, 0, 8 * 16);
    tcase_add_loop_test(tc, test_revision1_table, 0, 8);
    tcase_add_test(tc, test_siw_p2p_request);
    tcase_add_test(tc, test_initiator_term_with_crc);
    suite_add_tcase(s, tc);
    return s;
}
