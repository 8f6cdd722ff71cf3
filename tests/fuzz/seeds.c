/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Writes the fuzzers' seed corpora into OUTDIR/corpus-fuzz_{rx,mpa,fpdu}/,
 * each seed with the header its target expects (fuzz.h):
 *  - from the siw captures (pcap_stream): each direction's MPA frame for
 *    fuzz_mpa, and the FPDUs after it for fuzz_rx and fuzz_fpdu, cut on
 *    an FPDU boundary;
 *  - from our own engines: a peer built like the fuzzed receiver
 *    (rxside.h) runs every operation against it, so the stream names
 *    STags and offsets the receiver has and gets past the STag checks;
 *  - Requests, Replies and Rejects we build for a spread of parameters,
 *    and FPDUs we frame with and without markers.
 * Usage: seeds OUTDIR
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "iwarp/fpdu.h"
#include "fuzz.h"
#include "iwarp/mpa.h"
#include "rxside.h"
#include "support/pcap_stream.h"

#define SEED_MAX    (24 * 1024)     /* stream octets in one seed */

static const char *outdir;
static unsigned nseeds;

static void seed_write(const char *target, const char *name,
                       const uint8_t *hdr, size_t hlen, const uint8_t *data,
                       size_t len)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/corpus-%s", outdir, target);
    if (mkdir(path, 0777) < 0 && errno != EEXIST) {
        perror(path);
        exit(1);
    }
    snprintf(path, sizeof(path), "%s/corpus-%s/%s", outdir, target, name);
    f = fopen(path, "wb");
    if (!f || fwrite(hdr, 1, hlen, f) != hlen ||
        fwrite(data, 1, len, f) != len || fclose(f)) {
        perror(path);
        exit(1);
    }
    nseeds++;
}

/* A fuzz_rx header: whole chunks, no faults, no events. */
static void rx_hdr_init(uint8_t *hdr, uint8_t cfg, uint8_t cfg2)
{
    memset(hdr, 0, FUZZ_RX_HDR);
    hdr[0] = cfg;
    hdr[1] = 15;
    hdr[2] = 1;
    hdr[3] = cfg2;
    for (int k = 0; k < FUZZ_RX_EVENTS; k++) {
        hdr[6 + 2 * k] = 0xff;
        hdr[7 + 2 * k] = 0xff;      /* kind 7: none */
    }
}

/* ---- from the captures ---- */

struct cut {
    struct rnic_fpdu_rx rx;
    size_t end;                     /* last FPDU boundary within SEED_MAX */
};

static int cut_ulpdu(void *opaque, const uint8_t *ulpdu, size_t len)
{
    struct cut *c = opaque;

    (void)ulpdu;
    (void)len;
    if (c->rx.pos > SEED_MAX) {
        return -1;
    }
    c->end = c->rx.pos;
    return 0;
}

static size_t fpdu_prefix(const uint8_t *p, size_t len, bool crc)
{
    static uint8_t buf[RNIC_MPA_ULPDU_MAX + 4];
    struct cut c = { .end = 0 };

    rnic_fpdu_rx_init(&c.rx, crc, false, buf, sizeof(buf));
    rnic_fpdu_rx_input(&c.rx, p, len, cut_ulpdu, &c);
    return c.end;
}

static uint8_t rtr_cfg(const struct rnic_mpa_frame *rep)
{
    uint8_t rtr = rep->p2p ? rep->rtr : 0;

    return (rtr & RNIC_MPA_RTR_READ ? 3 : rtr & RNIC_MPA_RTR_WRITE ? 2 :
            rtr & RNIC_MPA_RTR_SEND ? 1 : 0) << RXS_CFG_RTR_SHIFT;
}

/* One direction: @frame_len octets of MPA frame, then FPDUs. */
static void capture_dir(const char *name, const struct pcap_tcp_dir *d,
                        int frame_len, bool reply, bool crc, uint8_t rtr)
{
    const uint8_t *fpdus = d->data + frame_len;
    size_t n = fpdu_prefix(fpdus, d->len - frame_len, crc);
    size_t extra = d->len - frame_len < 64 ? d->len - frame_len : 64;
    /* the receiver of a Reply sent the Request: the initiator */
    uint8_t rx_hdr[FUZZ_RX_HDR];
    uint8_t mpa_hdr[FUZZ_MPA_HDR] = {
        (reply ? FUZZ_MPA_INITIATOR : 0) | RNIC_MPA_CRC_ACCEPT <<
        FUZZ_MPA_CRC_SHIFT | FUZZ_MPA_STRICT_IRD, 0x7 | 6 << 4, 16, 16, 3,
    };
    uint8_t fpdu_hdr[FUZZ_FPDU_HDR] = { crc ? FUZZ_FPDU_CRC : 0, 15, 1 };
    char seed[512];

    rx_hdr_init(rx_hdr, (crc ? RXS_CFG_CRC : 0) |
                (reply ? RXS_CFG_INITIATOR : 0) | rtr, 0);
    snprintf(seed, sizeof(seed), "%s-%s", name, reply ? "rep" : "req");
    seed_write("fuzz_mpa", seed, mpa_hdr, sizeof(mpa_hdr), d->data,
               (size_t)frame_len + extra);
    if (!n) {
        return;
    }
    seed_write("fuzz_rx", seed, rx_hdr, sizeof(rx_hdr), fpdus, n);
    seed_write("fuzz_fpdu", seed, fpdu_hdr, sizeof(fpdu_hdr), fpdus, n);
    rx_hdr[1] = 6;      /* the same in pieces of up to 64 octets */
    fpdu_hdr[1] = 6;
    strcat(seed, "-small");
    seed_write("fuzz_rx", seed, rx_hdr, sizeof(rx_hdr), fpdus, n);
    seed_write("fuzz_fpdu", seed, fpdu_hdr, sizeof(fpdu_hdr), fpdus, n);
}

static void capture_conn(const char *name, const struct pcap_tcp_conn *c)
{
    static struct rnic_mpa_frame req, rep;
    const struct pcap_tcp_dir *ini = &c->dir[0], *rsp = &c->dir[1];
    int req_len, rep_len;
    bool crc;

    if (c->dir[1].len >= RNIC_MPA_KEY_LEN &&
        !memcmp(c->dir[1].data, RNIC_MPA_KEY_REQ, RNIC_MPA_KEY_LEN)) {
        ini = &c->dir[1];
        rsp = &c->dir[0];
    }
    req_len = rnic_mpa_parse(ini->data, ini->len, false, &req);
    rep_len = rnic_mpa_parse(rsp->data, rsp->len, true, &rep);
    if (req_len <= 0 || rep_len <= 0) {
        return;         /* not MPA */
    }
    crc = (req.flags | rep.flags) & RNIC_MPA_FLAG_C;
    capture_dir(name, ini, req_len, false, crc, rtr_cfg(&rep));
    capture_dir(name, rsp, rep_len, true, crc, rtr_cfg(&rep));
}

static void from_captures(void)
{
    const char *dir = pcap_captures_dir();
    static struct pcap_capture cap;
    struct dirent *e;
    char path[4096], err[512], name[300];
    DIR *d;

    if (!dir || !(d = opendir(dir))) {
        fprintf(stderr, "seeds: no siw captures found, skipping them\n");
        return;
    }
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);

        if (l < 5 || strcmp(e->d_name + l - 5, ".pcap")) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (pcap_capture_load(path, &cap, err, sizeof(err)) < 0) {
            fprintf(stderr, "seeds: %s\n", err);
            continue;
        }
        for (size_t i = 0; i < cap.nconns; i++) {
            snprintf(name, sizeof(name), "siw-%.*s-%zu", (int)l - 5,
                     e->d_name, i);
            capture_conn(name, &cap.conns[i]);
        }
        pcap_capture_free(&cap);
    }
    closedir(d);
}

/* ---- from our engines ---- */

static uint8_t stream[1 << 17];
static size_t stream_len;

/* Moves what @from sends to @to; keeps it when @from is the peer. */
static size_t synth_pump(struct rxs *from, struct rxs *to, bool keep)
{
    struct iovec iov[64];
    size_t total = 0, n;
    int cnt;

    while ((n = rnic_ep_tx_peek(from->s.ep, iov, 64, &cnt))) {
        for (int i = 0; i < cnt; i++) {
            if (keep && stream_len + iov[i].iov_len <= sizeof(stream)) {
                memcpy(stream + stream_len, iov[i].iov_base,
                       iov[i].iov_len);
                stream_len += iov[i].iov_len;
            }
            rnic_ep_rx(to->s.ep, iov[i].iov_base, iov[i].iov_len);
        }
        rnic_ep_tx_advance(from->s.ep, n);
        total += n;
    }
    return total;
}

static struct rnic_send_wr synth_wr(struct rxs *peer, uint64_t id,
                                    enum rnic_wr_opcode op, uint32_t len,
                                    uint32_t stag, uint64_t to)
{
    struct rnic_send_wr wr = epf_wr(id, op, peer->s.lkey, 0x90000, len);

    /* both sides register alike: the peer's STags are ours */
    wr.remote_stag = stag;
    wr.remote_to = to;
    return wr;
}

static struct rnic_send_wr synth_region(struct rxs *peer, uint64_t id,
                                        enum rnic_wr_opcode op, uint32_t len,
                                        enum rxs_region target, uint64_t off)
{
    return synth_wr(peer, id, op, len, peer->stag[target],
                    rxs_region_to(target) + off);
}

static struct rnic_send_wr synth_window(struct rxs *peer, uint64_t id,
                                        enum rnic_wr_opcode op, uint32_t len,
                                        enum rxs_window target, uint64_t off)
{
    return synth_wr(peer, id, op, len, peer->mw[target],
                    rxs_window_to(target) + off);
}

#define SYNTH_NWR   17

/* Every operation, on every kind of region and window. */
static void synth_wrs(struct rxs *peer, const struct rxs *rx,
                      struct rnic_send_wr *wr)
{
    wr[0] = synth_region(peer, 1, RNIC_WR_WRITE, 3000, RXS_WRITE, 10);
    wr[1] = synth_region(peer, 2, RNIC_WR_WRITE, 100, RXS_LINKED, 0);
    wr[2] = synth_region(peer, 3, RNIC_WR_SEND, 700, RXS_WRITE, 0);
    wr[3] = synth_region(peer, 4, RNIC_WR_WRITE, 4096, RXS_ONE_SHOT, 0);
    wr[4] = synth_region(peer, 5, RNIC_WR_READ, 2000, RXS_READ_WRITE, 5);
    wr[5] = synth_region(peer, 6, RNIC_WR_ATOMIC_FETCH_ADD, 8, RXS_ATOMIC,
                         16);
    wr[6] = synth_region(peer, 7, RNIC_WR_ATOMIC_CMP_SWAP, 8, RXS_ATOMIC,
                         24);
    wr[7] = synth_region(peer, 8, RNIC_WR_IMM_DATA_SE, 0, RXS_WRITE, 0);
    wr[7].num_sge = 0;
    wr[7].imm_data = 0x12345678;
    wr[8] = synth_region(peer, 9, RNIC_WR_SEND_SE_INV, 50, RXS_WRITE, 0);
    wr[8].invalidate_stag = rx->stag[RXS_WRITE];
    wr[9] = synth_region(peer, 10, RNIC_WR_WRITE, 0, RXS_READ_WRITE, 0);
    wr[9].num_sge = 0;
    /* across the pages of a page list, and through both windows */
    wr[10] = synth_region(peer, 11, RNIC_WR_WRITE, 5000, RXS_PAGES, 3000);
    wr[11] = synth_region(peer, 12, RNIC_WR_READ, 3000, RXS_PAGES, 7000);
    wr[12] = synth_window(peer, 13, RNIC_WR_WRITE, 700, RXS_MW1, 100);
    wr[13] = synth_window(peer, 14, RNIC_WR_READ, 1000, RXS_MW1, 4000);
    wr[14] = synth_window(peer, 15, RNIC_WR_ATOMIC_CMP_SWAP, 8, RXS_MW2, 8);
    wr[15] = synth_window(peer, 16, RNIC_WR_SEND_INV, 64, RXS_MW2, 0);
    wr[15].invalidate_stag = rx->mw[RXS_MW2];
    /* across the pages of a fast-registered region */
    wr[16] = synth_region(peer, 17, RNIC_WR_WRITE, 6000, RXS_FAST, 200);
}

/*
 * Variants of one stream: the consumer changing STags between chunks, the
 * socket pushing back, DMA failing.  Events: chunk index, what.
 */
static const struct synth_variant {
    const char *name;
    uint8_t cfg2, rate;
    uint8_t ev[FUZZ_RX_EVENTS][2];
} variants[] = {
    { "inv", RXS_CFG2_STALL, 0, {
        { 2, RXS_EV_INVALIDATE | RXS_WRITE << 3 },
        { 4, RXS_EV_LOCAL_INV | (RXS_NREGIONS + RXS_MW2) << 3 },
        { 6, RXS_EV_DESTROY | (RXS_NREGIONS + RXS_MW1) << 3 },
        { 8, RXS_EV_REBIND | (RXS_NREGIONS + RXS_MW2) << 3 } } },
    { "relink", 0, 0, {
        { 1, RXS_EV_LINK_RECV | RXS_PAGES << 3 },
        { 3, RXS_EV_DESTROY | RXS_READ_WRITE << 3 },
        { 5, RXS_EV_REBIND | (RXS_NREGIONS + RXS_MW1) << 3 },
        { 7, RXS_EV_REBIND | RXS_PAGES << 3 } } },
    { "fastreg", 0, 0, {
        { 1, RXS_EV_LOCAL_INV | RXS_FAST << 3 },
        { 2, RXS_EV_FAST_REG | RXS_FAST << 3 },
        { 5, RXS_EV_INVALIDATE | RXS_FAST << 3 },
        { 6, RXS_EV_FAST_REG | RXS_FAST << 3 } } },
    { "lkey", RXS_CFG2_STALL, 0, {
        { 0, RXS_EV_LOCAL_INV | RXS_ONE_SHOT << 3 },
        { 9, RXS_EV_INVALIDATE | (RXS_EV_TARGETS - 1) << 3 },
        { 0xff, 0xff }, { 0xff, 0xff } } },
    { "faults", RXS_CFG2_FAIL_READ | RXS_CFG2_FAIL_WRITE |
      RXS_CFG2_FAIL_MAP, 6, {
        { 0xff, 0xff }, { 0xff, 0xff }, { 0xff, 0xff }, { 0xff, 0xff } } },
    { "wfail", RXS_CFG2_FAIL_MAP | RXS_CFG2_FAIL_WRITE, 90, {
        { 0xff, 0xff }, { 0xff, 0xff }, { 0xff, 0xff }, { 0xff, 0xff } } },
    { "mapfail", RXS_CFG2_FAIL_MAP | RXS_CFG2_STALL, 128, {
        { 0xff, 0xff }, { 0xff, 0xff }, { 0xff, 0xff }, { 0xff, 0xff } } },
};

static void synth_variants(const char *name, uint8_t cfg, uint8_t cfg2)
{
    uint8_t hdr[FUZZ_RX_HDR];
    char seed[96];

    for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
        rx_hdr_init(hdr, cfg, cfg2 | variants[v].cfg2);
        hdr[1] = 9;         /* many chunks, for the events to fall between */
        hdr[4] = variants[v].rate;
        hdr[5] = (uint8_t)v;
        memcpy(hdr + 6, variants[v].ev, sizeof(variants[v].ev));
        snprintf(seed, sizeof(seed), "%s-%s", name, variants[v].name);
        seed_write("fuzz_rx", seed, hdr, sizeof(hdr), stream, stream_len);
    }
}

/* The peer runs every operation against a receiver configured so. */
static void synth_rx(uint8_t cfg, uint8_t cfg2)
{
    static struct rxs peer, rx;
    struct rnic_send_wr wr[SYNTH_NWR];
    uint8_t hdr[FUZZ_RX_HDR];
    char name[64];

    rxs_setup(&rx, cfg, cfg2, false);
    rxs_setup(&peer, cfg, cfg2, true);
    synth_wrs(&peer, &rx, wr);
    for (size_t i = 0; i < SYNTH_NWR; i++) {
        epf_post(&peer.s, &wr[i]);
    }
    stream_len = 0;
    while (synth_pump(&peer, &rx, true) + synth_pump(&rx, &peer, false)) {
    }
    snprintf(name, sizeof(name), "engine-%02x-%02x", cfg, cfg2);
    /* a seed the receiver refuses would only test the refusal */
    if (rx.s.term_sent || peer.s.term_sent || rx.s.qp->state != RNIC_QP_RTS ||
        rnic_cq_count(peer.s.scq) < SYNTH_NWR) {
        fprintf(stderr, "seeds: %s: the operations did not all go "
                "through (terminate %u/%u: %s, %u completions)\n", name,
                rx.s.term_sent, peer.s.term_sent,
                rnic_term_code_str(rx.s.term_sent ? rx.s.sent_code
                                                  : peer.s.sent_code),
                rnic_cq_count(peer.s.scq));
        exit(1);
    }
    rx_hdr_init(hdr, cfg, cfg2);
    seed_write("fuzz_rx", name, hdr, sizeof(hdr), stream, stream_len);
    hdr[1] = 7;
    strcat(name, "-small");
    seed_write("fuzz_rx", name, hdr, sizeof(hdr), stream, stream_len);
    name[strlen(name) - strlen("-small")] = '\0';
    synth_variants(name, cfg, cfg2);
    rxs_teardown(&peer);
    rxs_teardown(&rx);
}

/* FPDUs of a spread of lengths, framed by our transmitter. */
static void synth_fpdu(uint8_t flags)
{
    static struct rnic_fpdu_out out;
    static uint8_t ulpdu[3000];
    static const uint32_t lens[] = { 18, 1, 0, 2000, 511, 3000, 28, 64 };
    struct rnic_fpdu_tx tx;
    uint8_t hdr[FUZZ_FPDU_HDR] = { flags, 15, 1 };
    char name[64];

    for (size_t i = 0; i < sizeof(ulpdu); i++) {
        ulpdu[i] = (uint8_t)(i * 7);
    }
    rnic_fpdu_tx_init(&tx, flags & FUZZ_FPDU_CRC, flags & FUZZ_FPDU_MARKERS);
    stream_len = 0;
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        struct iovec iov = { ulpdu, lens[i] };

        rnic_fpdu_tx_frame(&tx, &iov, 1, &out);
        for (int k = 0; k < out.iovcnt; k++) {
            memcpy(stream + stream_len, out.iov[k].iov_base,
                   out.iov[k].iov_len);
            stream_len += out.iov[k].iov_len;
        }
    }
    snprintf(name, sizeof(name), "engine-%02x", flags);
    seed_write("fuzz_fpdu", name, hdr, sizeof(hdr), stream, stream_len);
}

/* Our Request, and our Reply to it, for parameters @p. */
static void synth_mpa(const char *name, const struct rnic_mpa_params *p,
                      uint8_t flags)
{
    static struct rnic_mpa_frame req;
    uint8_t buf[RNIC_MPA_FRAME_MAX];
    uint8_t hdr[FUZZ_MPA_HDR] = {
        flags, (uint8_t)(p->rtr | 15 << 4), (uint8_t)p->ird,
        (uint8_t)p->ord, 1,
    };
    struct rnic_mpa_result res;
    char seed[64];
    int len = rnic_mpa_build_request(p, buf, sizeof(buf));

    snprintf(seed, sizeof(seed), "engine-%s-req", name);
    seed_write("fuzz_mpa", seed, hdr, sizeof(hdr), buf, (size_t)len);
    rnic_mpa_parse(buf, (size_t)len, false, &req);
    if (rnic_mpa_negotiate_request(p, &req, &res) < 0) {
        return;
    }
    len = rnic_mpa_build_reply(p, &res, buf, sizeof(buf));
    hdr[0] |= FUZZ_MPA_INITIATOR;
    snprintf(seed, sizeof(seed), "engine-%s-rep", name);
    seed_write("fuzz_mpa", seed, hdr, sizeof(hdr), buf, (size_t)len);
    len = rnic_mpa_build_reject(p->rev, (const uint8_t *)"no", 2, buf,
                                sizeof(buf));
    snprintf(seed, sizeof(seed), "engine-%s-reject", name);
    seed_write("fuzz_mpa", seed, hdr, sizeof(hdr), buf, (size_t)len);
}

static void from_engines(void)
{
    static const uint8_t rx_cfgs[] = {
        0, RXS_CFG_CRC, RXS_CFG_INITIATOR | 1 << RXS_CFG_RTR_SHIFT,
        2 << RXS_CFG_RTR_SHIFT | RXS_CFG_CRC,
        RXS_CFG_INITIATOR | 3 << RXS_CFG_RTR_SHIFT | RXS_CFG_SQ_WORK,
        RXS_CFG_SRQ | RXS_CFG_SQ_WORK | RXS_CFG_CRC,
        RXS_CFG_SMALL_MULPDU | RXS_CFG_SQ_WORK | RXS_CFG_ABORT,
    };
    struct rnic_mpa_params p2 = {
        .rev = 2, .crc = RNIC_MPA_CRC_REQUIRED, .ird = 4, .ord = 4,
        .rtr = RNIC_MPA_RTR_SEND | RNIC_MPA_RTR_WRITE | RNIC_MPA_RTR_READ,
    };
    struct rnic_mpa_params p1 = {
        .rev = 1, .crc = RNIC_MPA_CRC_ACCEPT, .markers_wanted = true,
        .markers_allowed = true,
        .pd = (const uint8_t *)"hello", .pd_len = 5,
    };

    for (size_t i = 0; i < sizeof(rx_cfgs); i++) {
        synth_rx(rx_cfgs[i], 0);
        synth_rx(rx_cfgs[i], RXS_CFG2_MARKERS |
                 (i & 1 ? RXS_CFG2_SHORT_MAPS : 0));
    }
    for (uint8_t f = 0; f < 4; f++) {
        synth_fpdu(f);
    }
    synth_mpa("v2", &p2, RNIC_MPA_CRC_REQUIRED << FUZZ_MPA_CRC_SHIFT);
    synth_mpa("v1", &p1, FUZZ_MPA_REV1 | FUZZ_MPA_MARKERS_WANTED |
              FUZZ_MPA_MARKERS_ALLOWED |
              RNIC_MPA_CRC_ACCEPT << FUZZ_MPA_CRC_SHIFT);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    outdir = argv[1];
    from_captures();
    from_engines();
    printf("seeds: %u written under %s\n", nseeds, outdir);
    return 0;
}
