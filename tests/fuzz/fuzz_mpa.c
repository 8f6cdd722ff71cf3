/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: MPA connection setup.  The input's header (fuzz.h)
 * gives our role and parameters; the rest is what the peer sends, fed to
 * rnic_mpa_conn_input() in chunks, and parsed whole by rnic_mpa_parse()
 * as a Request and as a Reply.  Our own parameters also go through a
 * build / parse / negotiate round with ourselves as the peer.
 *
 * Besides what ASan and UBSan catch, every input must keep these:
 *  - the state machine consumes exactly the peer's frame, never beyond,
 *    and agrees with rnic_mpa_parse() on its length;
 *  - every frame we build parses back to the same length and fields;
 *  - what is agreed respects our policy (CRC, markers, revision, the
 *    14-bit IRD/ORD, one RTR type out of those we offered);
 *  - two ends with the same parameters that accept the Request also
 *    accept the Reply;
 *  - a failed responder answers only with a Reject, a failed initiator
 *    only with the RFC 6581 Terminate of its error, framed as agreed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "iwarp/engine.h"
#include "iwarp/fpdu.h"
#include "fuzz.h"
#include "iwarp/mpa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t ulp_pd[] = "private data of the ULP";

/* Small values, and the top of the 14-bit range and just beyond it. */
static uint16_t fuzz_rd(uint8_t b)
{
    if (b == 0xff) {
        return 0x4000;
    }
    return b < 0xf0 ? b : 0x3ff0 + (b - 0xf0);
}

static struct rnic_mpa_params fuzz_params(const uint8_t *hdr)
{
    return (struct rnic_mpa_params) {
        .rev = hdr[0] & FUZZ_MPA_REV1 ? 1 : 2,
        .crc = (hdr[0] >> FUZZ_MPA_CRC_SHIFT & 3) % 3,
        .markers_wanted = hdr[0] & FUZZ_MPA_MARKERS_WANTED,
        .markers_allowed = hdr[0] & FUZZ_MPA_MARKERS_ALLOWED,
        .strict_ird = hdr[0] & FUZZ_MPA_STRICT_IRD,
        .rtr = hdr[1] & 7,
        .ird = fuzz_rd(hdr[2]),
        .ord = fuzz_rd(hdr[3]),
        .pd = hdr[0] & FUZZ_MPA_PD ? ulp_pd : NULL,
        .pd_len = hdr[0] & FUZZ_MPA_PD ? sizeof(ulp_pd) : 0,
    };
}

/* A frame we built parses back to what we meant. */
static void fuzz_check_built(const uint8_t *buf, int len, bool reply,
                             const struct rnic_mpa_params *p)
{
    static struct rnic_mpa_frame f;
    int got = rnic_mpa_parse(buf, (size_t)len, reply, &f);

    if (got != len) {
        fuzz_fail("our %s of %d octets parses as %d",
                  reply ? "Reply" : "Request", len, got);
    }
    if (f.pd_len != p->pd_len || (p->pd_len && memcmp(f.pd, p->pd,
                                                      p->pd_len))) {
        fuzz_fail("our private data did not survive the round trip");
    }
    if (!reply && f.rev != p->rev) {
        fuzz_fail("Request of revision %u built for %u", f.rev, p->rev);
    }
}

static void fuzz_check_result(const struct rnic_mpa_params *p,
                              const struct rnic_mpa_result *r)
{
    if (r->rev > p->rev || r->rev < 1) {
        fuzz_fail("agreed revision %u, we speak up to %u", r->rev, p->rev);
    }
    if ((p->crc == RNIC_MPA_CRC_OFF && r->crc) ||
        (p->crc == RNIC_MPA_CRC_REQUIRED && !r->crc)) {
        fuzz_fail("CRC %d agreed under policy %d", r->crc, p->crc);
    }
    if (r->markers_tx && !p->markers_allowed) {
        fuzz_fail("markers to send, never allowed");
    }
    if (r->ird > 0x3fff || r->ord > 0x3fff || r->peer_ird > 0x3fff ||
        r->peer_ord > 0x3fff) {
        fuzz_fail("IRD/ORD beyond 14 bits");
    }
    if (r->rtr && ((r->rtr & (r->rtr - 1)) || !(r->rtr & p->rtr))) {
        fuzz_fail("RTR %#x agreed, %#x offered", r->rtr, p->rtr);
    }
}

/* Both ends with @p: a Request the responder takes gives a good Reply. */
static void fuzz_self_negotiate(const struct rnic_mpa_params *p)
{
    static struct rnic_mpa_frame req, rep;
    uint8_t buf[RNIC_MPA_FRAME_MAX];
    struct rnic_mpa_result rres, ires;
    int len = rnic_mpa_build_request(p, buf, sizeof(buf));

    if (len < 0) {
        return;
    }
    fuzz_check_built(buf, len, false, p);
    rnic_mpa_parse(buf, (size_t)len, false, &req);
    if (rnic_mpa_negotiate_request(p, &req, &rres) < 0) {
        return;
    }
    fuzz_check_result(p, &rres);
    len = rnic_mpa_build_reply(p, &rres, buf, sizeof(buf));
    if (len < 0) {
        fuzz_fail("accepted a Request, cannot build the Reply: %d", len);
    }
    fuzz_check_built(buf, len, true, p);
    rnic_mpa_parse(buf, (size_t)len, true, &rep);
    len = rnic_mpa_negotiate_reply(p, &rep, &ires);
    if (len < 0) {
        fuzz_fail("our own Reply refused by our own Request's end: %s",
                  rnic_mpa_strerror(len));
    }
    fuzz_check_result(p, &ires);
    if (ires.crc != rres.crc || ires.markers_tx != rres.markers_rx ||
        ires.markers_rx != rres.markers_tx || ires.rtr != rres.rtr) {
        fuzz_fail("the two ends agreed on different things");
    }
}

static int fuzz_term_ulpdu(void *opaque, const uint8_t *u, size_t len)
{
    struct rnic_term_code want = rnic_mpa_err_to_term(*(int *)opaque);

    if (len != 22 || (u[1] & 0xf) != RNIC_RDMAP_TERMINATE ||
        u[18] != (want.layer << 4 | want.etype) || u[19] != want.ecode) {
        fuzz_fail("our Terminate is not the one of our error");
    }
    *(int *)opaque = 0;
    return 0;
}

/* An initiator refusing the Reply: one Terminate FPDU, nothing else. */
static void fuzz_check_term(struct rnic_mpa_conn *c)
{
    static uint8_t buf[64];
    struct rnic_fpdu_rx rx;
    int err = c->err;

    if (!rnic_mpa_err_is_term(err)) {
        fuzz_fail("an initiator answers %s", rnic_mpa_strerror(err));
    }
    rnic_fpdu_rx_init(&rx, c->result.crc, c->result.markers_tx, buf,
                      sizeof(buf));
    if (rnic_fpdu_rx_input(&rx, c->out, c->out_len, fuzz_term_ulpdu,
                           &err) || err) {
        fuzz_fail("our Terminate does not deframe");
    }
}

/* The peer's bytes through the state machine, in chunks. */
static void fuzz_conn(const struct rnic_mpa_params *p, bool initiator,
                      const uint8_t *hdr, const uint8_t *data, size_t size)
{
    static struct rnic_mpa_conn c;
    static struct rnic_mpa_frame f;
    struct fuzz_chunker ch;
    size_t total = 0;
    int whole;

    if (rnic_mpa_conn_init(&c, initiator, p) < 0) {
        return;
    }
    if (initiator) {
        fuzz_check_built(c.out, (int)c.out_len, false, p);
    }
    fuzz_chunker_init(&ch, hdr[1] >> 4, hdr[4]);
    while (total < size && c.state == RNIC_MPA_WAIT_FRAME) {
        size_t n = fuzz_chunk(&ch, size - total), used;

        rnic_mpa_conn_input(&c, data + total, n, &used);
        if (used > n) {
            fuzz_fail("used %zu of %zu octets", used, n);
        }
        total += used;
        if (c.state == RNIC_MPA_WAIT_FRAME && used != n) {
            fuzz_fail("left %zu octets unread while waiting", n - used);
        }
    }
    whole = rnic_mpa_parse(data, size, initiator, &f);
    if (c.state == RNIC_MPA_DONE) {
        if (whole <= 0 || (size_t)whole != total) {
            fuzz_fail("frame of %zu octets consumed, parse says %d", total,
                      whole);
        }
        fuzz_check_result(p, &c.result);
    }
    if (c.state == RNIC_MPA_FAILED && c.out_len) {
        if (initiator) {
            fuzz_check_term(&c);
        } else if (rnic_mpa_parse(c.out, c.out_len, true, &f) !=
                   (int)c.out_len || !(f.flags & RNIC_MPA_FLAG_R)) {
            fuzz_fail("our Reject does not parse as one");
        }
    }
    if (c.state == RNIC_MPA_DONE && !initiator) {
        fuzz_check_built(c.out, (int)c.out_len, true, p);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct rnic_mpa_frame f;
    struct rnic_mpa_params p;

    if (size < FUZZ_MPA_HDR) {
        return 0;
    }
    p = fuzz_params(data);
    fuzz_self_negotiate(&p);
    fuzz_conn(&p, data[0] & FUZZ_MPA_INITIATOR, data, data + FUZZ_MPA_HDR,
              size - FUZZ_MPA_HDR);
    rnic_mpa_parse(data + FUZZ_MPA_HDR, size - FUZZ_MPA_HDR, false, &f);
    rnic_mpa_parse(data + FUZZ_MPA_HDR, size - FUZZ_MPA_HDR, true, &f);
    return 0;
}
