/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Golden input: every FPDU that Linux siw put on the wire in
 * tests/data/siw-captures must deframe, pass its CRC where one was
 * negotiated, parse, and frame again to the very same octets.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include "iwarp/fpdu.h"
#include "iwarp/mpa.h"
#include "suites.h"
#include "support/pcap_stream.h"

#define MAX_CAPTURES 64

struct counts {
    unsigned mpa_conns;
    unsigned fpdus;
    unsigned crc_checked;
    unsigned ops[RNIC_RDMAP_OPCODE_COUNT];
};

/* Cross-checked with tshark -Y iwarp_ddp_rdmap (iwarp_rdma.opcode). */
static const struct expect {
    const char *file;
    unsigned mpa_conns, sends, writes, read_reqs, read_resps;
    bool crc;
} expected[] = {
    { "hostfwd-lo-crc.pcap",    2, 1, 0, 0, 0, true },
    { "hostfwd-lo-nocrc.pcap",  2, 1, 0, 0, 0, false },
    { "rping-crc.pcap",         2, 440, 310, 110, 310, true },
    { "rping-nocrc.pcap",       2, 440, 310, 110, 310, false },
    { "tools.pcap",             3, 429, 804, 0, 0, false },
};

static char capture_names[MAX_CAPTURES][256];
static int ncaptures;

/* One direction being deframed. */
struct dir_check {
    const uint8_t *fpdus;           /* first octet after the MPA frame */
    struct rnic_fpdu_rx rx;
    bool crc, markers;
    struct counts *n;
};

static uint8_t rxbuf[RNIC_MPA_ULPDU_MAX + 4];

/* Opcode-specific shape: tagged or not, and on which queue. */
static void check_rdmap(const struct rnic_ddp_hdr *h, const uint8_t *body,
                        size_t len)
{
    switch (h->opcode) {
    case RNIC_RDMAP_WRITE:
    case RNIC_RDMAP_READ_RESP:
        ck_assert(h->tagged);
        break;
    case RNIC_RDMAP_READ_REQ: {
        const struct rnic_rdmap_read_req *rr = (const void *)body;

        ck_assert(!h->tagged && h->last);
        ck_assert_uint_eq(h->qn, RNIC_DDP_QN_READ_REQ);
        ck_assert_uint_eq(len, sizeof(*rr));
        ck_assert_uint_gt(rnic_ld_be32(&rr->size), 0);
        break;
    }
    case RNIC_RDMAP_SEND:
    case RNIC_RDMAP_SEND_SE:
    case RNIC_RDMAP_SEND_INV:
    case RNIC_RDMAP_SEND_SE_INV:
        ck_assert(!h->tagged);
        ck_assert_uint_eq(h->qn, RNIC_DDP_QN_SEND);
        break;
    default:
        ck_abort_msg("unexpected opcode %u", h->opcode);
    }
}

/* Parse one ULPDU, then frame it again from its fields and payload. */
static int check_ulpdu(void *opaque, const uint8_t *u, size_t len)
{
    static struct rnic_fpdu_out out;
    struct dir_check *dc = opaque;
    struct rnic_ddp_hdr h;
    uint8_t hdr[sizeof(struct rnic_ddp_untagged_hdr)];
    size_t hlen = rnic_ddp_hdr_decode(&h, u, len);
    struct rnic_fpdu_tx tx;
    struct iovec iov[2];
    const uint8_t *orig = dc->fpdus + dc->rx.last_pos;

    ck_assert_uint_gt(hlen, 0);
    ck_assert_uint_eq(h.ddp_version, RNIC_DDP_VERSION);
    ck_assert_uint_eq(h.rdmap_version, RNIC_RDMAP_VERSION);
    check_rdmap(&h, u + hlen, len - hlen);
    dc->n->ops[h.opcode]++;
    dc->n->fpdus++;
    dc->n->crc_checked += dc->crc;

    iov[0] = (struct iovec) { hdr, rnic_ddp_hdr_encode(&h, hdr) };
    iov[1] = (struct iovec) { (void *)(u + hlen), len - hlen };
    rnic_fpdu_tx_init(&tx, dc->crc, dc->markers);
    tx.pos = dc->rx.last_pos;
    ck_assert_int_eq(rnic_fpdu_tx_frame(&tx, iov, 2, &out), 0);
    ck_assert_uint_eq(out.len, dc->rx.last_len);
    for (int i = 0; i < out.iovcnt; i++) {
        ck_assert_mem_eq(out.iov[i].iov_base, orig, out.iov[i].iov_len);
        orig += out.iov[i].iov_len;
    }
    return 0;
}

static void deframe(const struct pcap_tcp_dir *d, size_t start, bool crc,
                    bool markers, struct counts *n)
{
    static struct dir_check dc;

    dc.fpdus = d->data + start;
    dc.crc = crc;
    dc.markers = markers;
    dc.n = n;
    rnic_fpdu_rx_init(&dc.rx, crc, markers, rxbuf, sizeof(rxbuf));
    ck_assert_int_eq(rnic_fpdu_rx_input(&dc.rx, dc.fpdus, d->len - start,
                                        check_ulpdu, &dc), 0);
    /* the stream ends on an FPDU boundary */
    ck_assert_uint_eq(dc.rx.pos, d->len - start);
    ck_assert(dc.rx.phase == RNIC_FPDU_RX_HDR && dc.rx.got == 0);
}

/* Parameters under which we would have sent exactly this frame. */
static struct rnic_mpa_params params_of(const struct rnic_mpa_frame *f,
                                        bool ask_crc)
{
    return (struct rnic_mpa_params) {
        .rev = f->rev,
        .crc = ask_crc ? RNIC_MPA_CRC_REQUIRED : RNIC_MPA_CRC_ACCEPT,
        .markers_wanted = f->flags & RNIC_MPA_FLAG_M,
        .ird = f->ird, .ord = f->ord,
        .rtr = f->p2p ? f->rtr : 0,
        .pd = f->pd, .pd_len = f->pd_len,
    };
}

static void check_connection(const struct pcap_tcp_conn *c, struct counts *n)
{
    static struct rnic_mpa_frame req, rep;
    uint8_t buf[RNIC_MPA_FRAME_MAX];
    const struct pcap_tcp_dir *ini = &c->dir[0], *rsp = &c->dir[1];
    struct rnic_mpa_params ip, rp;
    struct rnic_mpa_result ires, rres;
    int req_len, rep_len;

    if (rsp->len >= 16 && !memcmp(rsp->data, RNIC_MPA_KEY_REQ, 16)) {
        ini = &c->dir[1];
        rsp = &c->dir[0];
    }
    if (ini->len < 16 || memcmp(ini->data, RNIC_MPA_KEY_REQ, 16)) {
        return;     /* not an MPA connection */
    }
    n->mpa_conns++;
    ck_assert(!ini->gap && !rsp->gap);
    req_len = rnic_mpa_parse(ini->data, ini->len, false, &req);
    rep_len = rnic_mpa_parse(rsp->data, rsp->len, true, &rep);
    ck_assert_int_gt(req_len, 0);
    ck_assert_int_gt(rep_len, 0);

    /* what we send for the same parameters is what siw sent */
    ip = params_of(&req, req.flags & RNIC_MPA_FLAG_C);
    ck_assert_int_eq(rnic_mpa_build_request(&ip, buf, sizeof(buf)), req_len);
    ck_assert_mem_eq(buf, ini->data, req_len);
    rp = params_of(&rep, (rep.flags & RNIC_MPA_FLAG_C) &&
                         !(req.flags & RNIC_MPA_FLAG_C));
    ck_assert_int_eq(rnic_mpa_negotiate_request(&rp, &req, &rres), 0);
    ck_assert_int_eq(rnic_mpa_build_reply(&rp, &rres, buf, sizeof(buf)),
                     rep_len);
    ck_assert_mem_eq(buf, rsp->data, rep_len);
    ck_assert_int_eq(rnic_mpa_negotiate_reply(&ip, &rep, &ires), 0);
    ck_assert_int_eq(ires.crc, rres.crc);

    deframe(ini, req_len, ires.crc, ires.markers_tx, n);
    deframe(rsp, rep_len, rres.crc, rres.markers_tx, n);
}

static const struct expect *expectation(const char *file)
{
    for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
        if (!strcmp(expected[i].file, file)) {
            return &expected[i];
        }
    }
    return NULL;
}

START_TEST(test_capture)
{
    const char *dir = pcap_captures_dir();
    const struct expect *e = expectation(capture_names[_i]);
    static struct pcap_capture cap;
    struct counts n = { 0 };
    char path[4096], err[512];

    ck_assert_ptr_nonnull(dir);
    snprintf(path, sizeof(path), "%s/%s", dir, capture_names[_i]);
    ck_assert_msg(pcap_capture_load(path, &cap, err, sizeof(err)) == 0,
                  "%s", err);
    for (size_t i = 0; i < cap.nconns; i++) {
        check_connection(&cap.conns[i], &n);
    }
    pcap_capture_free(&cap);
    ck_assert_uint_gt(n.mpa_conns, 0);
    ck_assert_uint_gt(n.fpdus, 0);
    if (!e) {
        return;     /* a new capture: verified, not yet counted */
    }
    ck_assert_uint_eq(n.mpa_conns, e->mpa_conns);
    ck_assert_uint_eq(n.ops[RNIC_RDMAP_SEND], e->sends);
    ck_assert_uint_eq(n.ops[RNIC_RDMAP_WRITE], e->writes);
    ck_assert_uint_eq(n.ops[RNIC_RDMAP_READ_REQ], e->read_reqs);
    ck_assert_uint_eq(n.ops[RNIC_RDMAP_READ_RESP], e->read_resps);
    ck_assert_uint_eq(n.fpdus, e->sends + e->writes + e->read_reqs +
                               e->read_resps);
    ck_assert_uint_eq(n.crc_checked, e->crc ? n.fpdus : 0);
}
END_TEST

START_TEST(test_captures_present)
{
    ck_assert_msg(pcap_captures_dir(), "siw captures not found: set "
                  "RNIC_CAPTURES or run below a folder holding "
                  "tests/data/siw-captures (the repository's copy)");
    ck_assert_int_gt(ncaptures, 0);
    for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
        bool found = false;

        for (int k = 0; k < ncaptures; k++) {
            found |= !strcmp(capture_names[k], expected[i].file);
        }
        ck_assert_msg(found, "%s missing", expected[i].file);
    }
}
END_TEST

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void list_captures(void)
{
    const char *dir = pcap_captures_dir();
    DIR *d = dir ? opendir(dir) : NULL;
    struct dirent *ent;

    ncaptures = 0;
    while (d && (ent = readdir(d)) && ncaptures < MAX_CAPTURES) {
        size_t len = strlen(ent->d_name);

        if (len > 5 && len < sizeof(capture_names[0]) &&
            !strcmp(ent->d_name + len - 5, ".pcap")) {
            memcpy(capture_names[ncaptures++], ent->d_name, len + 1);
        }
    }
    if (d) {
        closedir(d);
    }
    qsort(capture_names, ncaptures, sizeof(capture_names[0]), cmp_name);
}

Suite *captures_suite(void)
{
    Suite *s = suite_create("captures");
    TCase *tc = tcase_create("siw");

    list_captures();
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_captures_present);
    tcase_add_loop_test(tc, test_capture, 0, ncaptures);
    suite_add_tcase(s, tc);
    return s;
}
