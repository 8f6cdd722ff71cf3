/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the receive path of one endpoint (rnic_ep_rx), with
 * the transmitter drained between chunks so that Terminates, Read and
 * Atomic Responses are built too.  The receiver is rxside.h's: a QP in
 * RTS, regions of every kind, posted receives, optionally work of its
 * own outstanding; the input's header chooses CRC, MPA role and RTR,
 * SRQ, MULPDU and how the connection ends (fuzz.h).
 *
 * Besides what ASan and UBSan catch, every input must keep these:
 *  - guest memory is written only where the peer may make us write (a
 *    region registered for remote write or atomics, while its STag is
 *    valid; a posted receive buffer; the sink of our own Read or Atomic)
 *    and read only where it may make us read (remote read or atomic
 *    regions, our own Send's payload): checked on every DMA call;
 *  - the guard bands around those ranges and the read-only regions keep
 *    their pattern: nothing wrote past a mapping;
 *  - what we send deframes and each ULPDU has a valid DDP header;
 *  - every completion names a WR we posted, and every mapping is
 *    unmapped when the endpoint goes (epf_fini).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "rxside.h"

#define GUARD_LEN   32
#define GUARD_BYTE  0xa5
/* Guest memory actually backed: every range rxside.h uses lies below. */
#define FUZZ_MEM    ((size_t)1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void __real_memdma_init(struct memdma *m, uint64_t base, size_t size);
void __wrap_memdma_init(struct memdma *m, uint64_t base, size_t size);
void __wrap_memdma_free(struct memdma *m);

static struct rxs R;
static struct rnic_dma memdma_ops;      /* memdma's own callbacks */
static struct rnic_fpdu_rx sent;        /* deframes what we send */
static uint8_t sent_buf[RNIC_MPA_ULPDU_MAX + 4];

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

/* [addr, addr + len) inside one range whose STag (if any) is valid. */
static bool fuzz_allowed(const struct rxs_range *l, int n, uint64_t addr,
                         uint64_t len, bool need_valid)
{
    for (int i = 0; i < n; i++) {
        if (addr < l[i].addr || addr - l[i].addr > l[i].len ||
            len > l[i].len - (addr - l[i].addr)) {
            continue;
        }
        return !need_valid || !l[i].stag ||
               rnic_stag_lookup(R.s.stags, l[i].stag);
    }
    return false;
}

static void fuzz_check_access(uint64_t addr, size_t len, bool is_write)
{
    bool ok = is_write ? fuzz_allowed(R.wr_ok, R.nwr_ok, addr, len, true)
                       : fuzz_allowed(R.rd_ok, R.nrd_ok, addr, len, false);

    if (!ok) {
        fuzz_fail("%s of %zu octets at offset %#llx: outside what the peer "
                  "may access", is_write ? "write" : "read", len,
                  (unsigned long long)(addr - EPF_BASE));
    }
}

static int fuzz_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    fuzz_check_access(addr, len, false);
    return memdma_ops.read(opaque, addr, buf, len);
}

static int fuzz_dma_write(void *opaque, uint64_t addr, const void *buf,
                          size_t len)
{
    fuzz_check_access(addr, len, true);
    return memdma_ops.write(opaque, addr, buf, len);
}

static void *fuzz_dma_map(void *opaque, uint64_t addr, size_t *len,
                          bool is_write)
{
    void *host = memdma_ops.map(opaque, addr, len, is_write);

    if (host) {
        fuzz_check_access(addr, *len, is_write);
    }
    return host;
}

/* Every DMA call of the endpoint goes through the checks above. */
static void fuzz_watch_dma(void)
{
    memdma_ops = R.s.mem.dma;
    R.s.mem.dma.read = fuzz_dma_read;
    R.s.mem.dma.write = fuzz_dma_write;
    R.s.mem.dma.map = fuzz_dma_map;
}

static void fuzz_guards(bool check)
{
    for (int i = 0; i < R.nwr_ok; i++) {
        uint8_t *before = memdma_ptr(&R.s.mem, R.wr_ok[i].addr) - GUARD_LEN;
        uint8_t *after = before + GUARD_LEN + R.wr_ok[i].len;

        for (int k = 0; k < GUARD_LEN && check; k++) {
            if (before[k] != GUARD_BYTE || after[k] != GUARD_BYTE) {
                fuzz_fail("guard band of range %d overwritten", i);
            }
        }
        memset(before, GUARD_BYTE, GUARD_LEN);
        memset(after, GUARD_BYTE, GUARD_LEN);
    }
}

/* Read-only regions still hold the pattern rxs_setup() wrote. */
static void fuzz_check_read_only(void)
{
    for (int i = 0; i < RXS_NREGIONS; i++) {
        const uint8_t *p = memdma_ptr(&R.s.mem, rxs_region_addr(i));

        if (fuzz_allowed(R.wr_ok, R.nwr_ok, rxs_region_addr(i), 1, false)) {
            continue;
        }
        for (uint64_t k = 0; k < rxs_region_len(i); k++) {
            if (p[k] != 0x40 + i) {
                fuzz_fail("read-only region %d written at %llu", i,
                          (unsigned long long)k);
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

/* Takes what the transmitter offers, in pieces of input-chosen size. */
static void fuzz_drain_tx(struct fuzz_chunker *c)
{
    struct iovec iov[64];
    size_t total;
    int cnt;

    while ((total = rnic_ep_tx_peek(R.s.ep, iov, 64, &cnt))) {
        size_t n = fuzz_chunk(c, total), left = n;

        for (int i = 0; i < cnt && left; i++) {
            size_t k = iov[i].iov_len < left ? iov[i].iov_len : left;

            if (rnic_fpdu_rx_input(&sent, iov[i].iov_base, k,
                                   fuzz_sent_ulpdu, NULL) < 0) {
                fuzz_fail("sent a stream that does not deframe: %d",
                          sent.err);
            }
            left -= k;
        }
        rnic_ep_tx_advance(R.s.ep, n);
    }
}

static void fuzz_check_cq(struct rnic_cq *cq)
{
    struct rnic_cqe cqe;

    while (rnic_cq_poll(cq, &cqe, 1) == 1) {
        bool recv = cqe.wr_id >= RXS_RECV_ID &&
                    cqe.wr_id < RXS_RECV_ID + RXS_NRECV;

        if (!recv && (cqe.wr_id < 200 || cqe.wr_id > 202)) {
            fuzz_fail("completion for wr_id %llu, never posted",
                      (unsigned long long)cqe.wr_id);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_chunker c;

    if (size < FUZZ_RX_HDR) {
        return 0;
    }
    rxs_setup(&R, data[0], false);
    fuzz_watch_dma();
    fuzz_guards(false);
    rnic_fpdu_rx_init(&sent, R.p.mpa.crc, false, sent_buf, sizeof(sent_buf));
    fuzz_chunker_init(&c, data[1], data[2]);
    data += FUZZ_RX_HDR;
    size -= FUZZ_RX_HDR;

    fuzz_drain_tx(&c);
    while (size) {
        size_t n = fuzz_chunk(&c, size);
        int ret = rnic_ep_rx(R.s.ep, data, n);

        data += n;
        size -= n;
        fuzz_drain_tx(&c);
        if (ret < 0) {
            break;      /* later input is discarded anyway */
        }
    }
    if (R.cfg & RXS_CFG_ABORT) {
        rnic_ep_modify(R.s.ep, RNIC_QP_ERROR);
    } else {
        rnic_ep_connection_closed(R.s.ep);
    }
    fuzz_drain_tx(&c);
    fuzz_check_cq(R.s.scq);
    fuzz_check_cq(R.s.rcq);
    fuzz_guards(true);
    fuzz_check_read_only();
    rxs_teardown(&R);
    return 0;
}
