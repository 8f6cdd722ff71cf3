/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the receive path of one endpoint (rnic_ep_rx), with
 * the transmitter drained between chunks as the device drains it
 * (rnic_ep_tx_peek_batch, up to RNIC_EP_TX_BATCH_FPDUS FPDUs a call, in
 * pieces the socket takes) so that Terminates, Read and Atomic Responses
 * are built too.  The receiver is rxside.h's: a QP in RTS, regions of
 * every kind (page lists too), memory windows of both types, posted
 * receives, optionally work of its own outstanding; the input's header
 * (fuzz.h) chooses CRC, markers, MPA role and RTR, SRQ, MULPDU, how the
 * connection ends, whether the socket pushes back (FPDUs stay in flight
 * across chunks), which DMA calls fail, and where between chunks the
 * consumer invalidates, deregisters, unbinds or re-binds an STag or
 * links one to a new receive.
 *
 * Besides what ASan and UBSan catch, every input must keep these:
 *  - guest memory is written only where the peer may make us write, as
 *    the STag table and the WRs stand at the moment of the write: a
 *    region or window registered for remote write or atomics while its
 *    STag is valid; a posted receive buffer until that receive
 *    completes; the sink of our own Read or Atomic until it completes.
 *    It is read only where the peer may make us read (remote read or
 *    atomic ranges, our own Send's payload).  Checked on every DMA call;
 *    no writable mapping outlives the call that made it;
 *  - at the end, every octet of guest memory that changed lies in a
 *    range the peer could write at some point: nothing wrote past a
 *    mapping or into a read-only region;
 *  - octets sent straight from guest memory (zero-copy maps) come from
 *    an STag that is valid when they are sent: after an invalidation
 *    completes no byte of that region leaves, since the guest may
 *    already have reused the memory;
 *  - a DMA write that failed ends the stream: the QP is no longer in RTS
 *    (our Terminate, or ERROR), whatever else happened; so does a failed
 *    read, unless the transmitter read the same range again later (it
 *    retries a payload it framed ahead once the FPDUs before it are
 *    sent);
 *  - what we send deframes and each ULPDU has a valid DDP header;
 *  - every completion names a WR we posted, and every mapping is
 *    unmapped when the endpoint goes (epf_fini).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "rxside.h"

/* Guest memory actually backed: every range rxside.h uses lies below. */
#define FUZZ_MEM    ((size_t)1 << 20)
/* What the device hands one sendmsg() (rnic-dp.c: one iovec spare). */
#define FUZZ_TX_IOV 63

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void __real_memdma_init(struct memdma *m, uint64_t base, size_t size);
void __wrap_memdma_init(struct memdma *m, uint64_t base, size_t size);
void __wrap_memdma_free(struct memdma *m);

static struct rxs R;
static struct rnic_dma memdma_ops;      /* memdma's own callbacks */
static struct rnic_fpdu_rx sent;        /* deframes what we send */
static uint8_t sent_buf[RNIC_MPA_ULPDU_MAX + 4];
/* Guest memory after set-up: rxs_setup() writes the same whatever the
 * header says, so one copy serves every input. */
static uint8_t before[FUZZ_MEM];
static bool have_before;

#define FUZZ_MAX_RETRIES 16

/* DMA calls made to fail, and what failed. */
static struct {
    uint8_t kinds;                      /* RXS_CFG2_FAIL_* */
    uint8_t rate;                       /* of 256 */
    struct epf_rng rng;
    unsigned writes_failed;
    int write_maps;                     /* writable maps not unmapped */
    /* failed reads not yet retried with success (nretry > max: lost) */
    struct { uint64_t addr; size_t len; } retry[FUZZ_MAX_RETRIES];
    unsigned nretry;
} F;

/*
 * epf_init() asks for EPF_SIZE of guest memory; allocating and freeing
 * that per input (ASan poisons its shadow each time) was most of the run
 * time.  Linked with --wrap (fuzz.mk), the fixture gets FUZZ_MEM of one
 * buffer instead, cleared per input: addresses above it are refused like
 * any unbacked guest address.
 */
void __wrap_memdma_init(struct memdma *m, uint64_t base, size_t size)
{
    static struct memdma keep;

    (void)size;
    if (!keep.mem) {
        __real_memdma_init(&keep, base, FUZZ_MEM);
    }
    memset(keep.mem, 0, FUZZ_MEM);
    *m = keep;
    m->dma.opaque = m;
}

void __wrap_memdma_free(struct memdma *m)
{
    m->mem = NULL;
}

/*
 * [addr, addr + len) inside a range that is open now: its STag (if any)
 * valid and its WR (if any) not completed.  @ever: inside any range, open
 * or not.
 */
static bool fuzz_allowed(const struct rxs_range *l, int n, uint64_t addr,
                         uint64_t len, bool ever)
{
    for (int i = 0; i < n; i++) {
        if (addr < l[i].addr || addr - l[i].addr > l[i].len ||
            len > l[i].len - (addr - l[i].addr)) {
            continue;
        }
        if (ever || (!l[i].done && (!l[i].stag ||
                                    rnic_stag_lookup(R.s.stags,
                                                     l[i].stag)))) {
            return true;
        }
    }
    return false;
}

static void fuzz_check_access(uint64_t addr, size_t len, bool is_write)
{
    bool ok = is_write ? fuzz_allowed(R.wr_ok, R.nwr_ok, addr, len, false)
                       : fuzz_allowed(R.rd_ok, R.nrd_ok, addr, len, true);

    if (!ok) {
        fuzz_fail("%s of %zu octets at offset %#llx: outside what the peer "
                  "may access now", is_write ? "write" : "read", len,
                  (unsigned long long)(addr - EPF_BASE));
    }
}

/* The input chose to make this call fail. */
static bool fuzz_fault(uint8_t kind)
{
    return (F.kinds & kind) && epf_rand(&F.rng, 256) < F.rate;
}

/*
 * A failed read the transmitter may retry once the FPDUs ahead are sent;
 * a read or read map of the same address that succeeds later settles it.
 */
static void fuzz_read_failed(uint64_t addr, size_t len, bool failed)
{
    if (failed) {
        if (F.nretry < FUZZ_MAX_RETRIES) {
            F.retry[F.nretry].addr = addr;
            F.retry[F.nretry].len = len;
        }
        F.nretry++;
        return;
    }
    for (unsigned i = 0; F.nretry <= FUZZ_MAX_RETRIES && i < F.nretry; i++) {
        if (F.retry[i].addr == addr) {
            F.retry[i--] = F.retry[--F.nretry];
        }
    }
}

static int fuzz_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    bool failed;

    fuzz_check_access(addr, len, false);
    failed = fuzz_fault(RXS_CFG2_FAIL_READ) ||
             memdma_ops.read(opaque, addr, buf, len) < 0;
    fuzz_read_failed(addr, len, failed);
    return failed ? -1 : 0;
}

static int fuzz_dma_write(void *opaque, uint64_t addr, const void *buf,
                          size_t len)
{
    fuzz_check_access(addr, len, true);
    if (fuzz_fault(RXS_CFG2_FAIL_WRITE)) {
        F.writes_failed++;
        return -1;
    }
    return memdma_ops.write(opaque, addr, buf, len);
}

static void *fuzz_dma_map(void *opaque, uint64_t addr, size_t *len,
                          bool is_write)
{
    void *host;

    if (fuzz_fault(RXS_CFG2_FAIL_MAP)) {
        return NULL;
    }
    host = memdma_ops.map(opaque, addr, len, is_write);
    if (host) {
        fuzz_check_access(addr, *len, is_write);
        F.write_maps += is_write;
        if (!is_write) {
            fuzz_read_failed(addr, *len, false);
        }
    }
    return host;
}

static void fuzz_dma_unmap(void *opaque, void *host, size_t len,
                           bool is_write, size_t written)
{
    F.write_maps -= is_write;
    memdma_ops.unmap(opaque, host, len, is_write, written);
}

/* Every DMA call of the endpoint goes through the checks above. */
static void fuzz_watch_dma(const uint8_t *hdr)
{
    F.kinds = hdr[3] & (RXS_CFG2_FAIL_READ | RXS_CFG2_FAIL_WRITE |
                        RXS_CFG2_FAIL_MAP);
    F.rate = hdr[4];
    F.rng.s = 0x2545f4914f6cdd1dull ^ hdr[5];
    F.writes_failed = 0;
    F.write_maps = 0;
    F.nretry = 0;
    memdma_ops = R.s.mem.dma;
    R.s.mem.dma.read = fuzz_dma_read;
    R.s.mem.dma.write = fuzz_dma_write;
    R.s.mem.dma.map = fuzz_dma_map;
    R.s.mem.dma.unmap = fuzz_dma_unmap;
}

/* Every changed octet lies where the peer could write at some point. */
static void fuzz_check_memory(void)
{
    const uint8_t *now = R.s.mem.mem;

    for (size_t blk = 0; blk < FUZZ_MEM; blk += EPF_PAGE) {
        if (!memcmp(now + blk, before + blk, EPF_PAGE)) {
            continue;
        }
        for (size_t k = blk; k < blk + EPF_PAGE; k++) {
            if (now[k] != before[k] &&
                !fuzz_allowed(R.wr_ok, R.nwr_ok, EPF_BASE + k, 1, true)) {
                fuzz_fail("guest memory at offset %#zx written, never "
                          "writable by the peer", k);
            }
        }
    }
}

static int fuzz_sent_ulpdu(void *opaque, const uint8_t *ulpdu, size_t len)
{
    struct rnic_ddp_hdr h;

    (void)opaque;
    if (!rnic_ddp_hdr_decode(&h, ulpdu, len)) {
        fuzz_fail("sent a ULPDU of %zu octets without a DDP header", len);
    }
    return 0;
}

/* Octets sent straight from guest memory come from a valid STag. */
static void fuzz_check_sent_from(const uint8_t *p, size_t len)
{
    const uint8_t *mem = R.s.mem.mem;

    if (p < mem || p >= mem + FUZZ_MEM) {
        return;
    }
    if (!fuzz_allowed(R.rd_ok, R.nrd_ok, EPF_BASE + (uint64_t)(p - mem), len,
                      false)) {
        fuzz_fail("sent %zu octets of guest memory at offset %#llx no "
                  "valid STag covers any more", len,
                  (unsigned long long)(p - mem));
    }
}

/* The socket takes @n octets of what the batch offers. */
static void fuzz_send(const struct iovec *iov, int cnt, size_t n)
{
    for (int i = 0; i < cnt && n; i++) {
        size_t k = iov[i].iov_len < n ? iov[i].iov_len : n;

        fuzz_check_sent_from(iov[i].iov_base, k);
        if (rnic_fpdu_rx_input(&sent, iov[i].iov_base, k, fuzz_sent_ulpdu,
                               NULL) < 0) {
            fuzz_fail("sent a stream that does not deframe: %d", sent.err);
        }
        n -= k;
    }
}

/*
 * Takes what the transmitter offers, as rnic_dp_flush() does: batches of
 * FPDUs, of which the socket takes input-chosen amounts.  @all: until
 * nothing is left; else one batch, as a socket that then pushes back.
 */
static void fuzz_drain_tx(struct fuzz_chunker *c, bool all)
{
    struct iovec iov[FUZZ_TX_IOV];
    size_t total;
    int cnt;

    while ((total = rnic_ep_tx_peek_batch(R.s.ep, iov, FUZZ_TX_IOV, &cnt,
                                          RNIC_EP_TX_BATCH_FPDUS))) {
        size_t n = fuzz_chunk(c, total);

        fuzz_send(iov, cnt, n);
        rnic_ep_tx_advance(R.s.ep, n);
        if (!all) {
            break;
        }
    }
}

/* Completions name WRs we posted; what they complete closes its ranges. */
static void fuzz_poll_cq(struct rnic_cq *cq)
{
    struct rnic_cqe cqe;

    while (rnic_cq_poll(cq, &cqe, 1) == 1) {
        if (!rxs_wr_known(&R, cqe.wr_id)) {
            fuzz_fail("completion for wr_id %llu, never posted",
                      (unsigned long long)cqe.wr_id);
        }
        rxs_wr_done(&R, cqe.wr_id, cqe.status == RNIC_WC_SUCCESS);
    }
}

/* Between two chunks: what every call must have left behind. */
static void fuzz_between_chunks(void)
{
    if (F.write_maps) {
        fuzz_fail("%d writable mappings outlive the call that made them",
                  F.write_maps);
    }
    fuzz_poll_cq(R.s.scq);
    fuzz_poll_cq(R.s.rcq);
}

static void fuzz_events(const uint8_t *hdr, unsigned chunk)
{
    for (int k = 0; k < FUZZ_RX_EVENTS; k++) {
        if (hdr[6 + 2 * k] == chunk) {
            rxs_event(&R, hdr[7 + 2 * k]);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *hdr = data;
    struct fuzz_chunker c;
    bool stall;
    unsigned chunk = 0;

    if (size < FUZZ_RX_HDR) {
        return 0;
    }
    rxs_setup(&R, hdr[0], hdr[3], false);
    stall = hdr[3] & RXS_CFG2_STALL;
    if (!have_before) {
        memcpy(before, R.s.mem.mem, FUZZ_MEM);
        have_before = true;
    }
    fuzz_watch_dma(hdr);
    rnic_fpdu_rx_init(&sent, R.p.mpa.crc, R.p.mpa.markers_tx, sent_buf,
                      sizeof(sent_buf));
    fuzz_chunker_init(&c, hdr[1], hdr[2]);
    data += FUZZ_RX_HDR;
    size -= FUZZ_RX_HDR;

    fuzz_drain_tx(&c, !stall);
    while (size) {
        size_t n = fuzz_chunk(&c, size);
        int ret;

        fuzz_events(hdr, chunk++);
        ret = rnic_ep_rx(R.s.ep, data, n);
        data += n;
        size -= n;
        fuzz_drain_tx(&c, !stall);
        fuzz_between_chunks();
        if (ret < 0) {
            break;      /* later input is discarded anyway */
        }
    }
    fuzz_drain_tx(&c, true);
    if (R.s.qp->state == RNIC_QP_RTS &&
        (F.writes_failed || (F.nretry && F.nretry <= FUZZ_MAX_RETRIES))) {
        fuzz_fail("%u DMA writes and %u reads failed (never retried) and "
                  "the QP is still in RTS", F.writes_failed, F.nretry);
    }
    if (R.cfg & RXS_CFG_ABORT) {
        rnic_ep_modify(R.s.ep, RNIC_QP_ERROR);
    } else {
        rnic_ep_connection_closed(R.s.ep);
    }
    fuzz_drain_tx(&c, true);
    fuzz_between_chunks();
    fuzz_check_memory();
    rxs_teardown(&R);
    return 0;
}
