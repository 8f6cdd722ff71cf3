/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The receiver fuzz_rx attacks, built on one epfix side: a QP in RTS with
 * regions of every kind registered for the peer (contiguous ones, and
 * page-list ones whose pages lie apart and out of order in guest memory),
 * a type 1 and a type 2 memory window bound over a page-list region,
 * receives posted and (optionally) Reads, an Atomic and a Send of its own
 * outstanding.  The seed generator builds the same side twice, once as
 * the peer, so that its streams name STags and offsets the fuzzed
 * receiver really has.
 *
 * It also knows which guest ranges the peer may legitimately make the
 * receiver write or read, through which STag and until which completion:
 * everything else must stay untouched.  rxs_event() changes the STags
 * between chunks of input as the consumer would (invalidate, deregister,
 * unbind, re-bind, a receive linked to an STag, fast registration of an
 * ALLOC_MR region, on a privileged QP) and keeps those ranges
 * up to date: a range closes when the consumer's change succeeded, by
 * its own account, whatever the STag table says.
 */
#ifndef RNIC_FUZZ_RXSIDE_H
#define RNIC_FUZZ_RXSIDE_H

#include <stdbool.h>
#include <stdint.h>
#include "support/epfix.h"

/* First octet of a fuzz_rx input. */
enum rxs_cfg {
    RXS_CFG_CRC         = 1 << 0,
    RXS_CFG_INITIATOR   = 1 << 1,   /* we sent the MPA Request */
    RXS_CFG_RTR_SHIFT   = 2,        /* 2 bits: none, Send, Write, Read */
    RXS_CFG_SRQ         = 1 << 4,
    RXS_CFG_SQ_WORK     = 1 << 5,   /* a Read, an Atomic and a Send posted */
    RXS_CFG_SMALL_MULPDU = 1 << 6,  /* our Read Responses in small FPDUs */
    RXS_CFG_ABORT       = 1 << 7,   /* end with an abort, not a close */
};

/* Fourth octet: more of the set-up, and what fuzz_rx does around it. */
enum rxs_cfg2 {
    RXS_CFG2_MARKERS    = 1 << 0,   /* MPA markers negotiated, both ways */
    RXS_CFG2_SHORT_MAPS = 1 << 1,   /* DMA maps end every 512 octets */
    RXS_CFG2_STALL      = 1 << 2,   /* fuzz_rx: one batch per chunk sent */
    RXS_CFG2_FAIL_READ  = 1 << 3,   /* fuzz_rx: DMA reads may fail */
    RXS_CFG2_FAIL_WRITE = 1 << 4,   /* ... writes */
    RXS_CFG2_FAIL_MAP   = 1 << 5,   /* ... maps */
};

enum rxs_region {
    RXS_WRITE,                      /* remote write, Send with Invalidate */
    RXS_READ,                       /* remote read only */
    RXS_READ_WRITE,
    RXS_ONE_SHOT,                   /* remote write, one-shot */
    RXS_LINKED,                     /* remote write, linked to a receive */
    RXS_ATOMIC,
    RXS_PAGES,                      /* page list: remote read and write */
    RXS_WIN_HOST,                   /* page list: no remote rights, MWs */
    RXS_FAST,                       /* ALLOC_MR, fast-registered */
    RXS_NREGIONS,
};

enum rxs_window {
    RXS_MW1,                        /* type 1: remote read and write */
    RXS_MW2,                        /* type 2: remote write and atomic */
    RXS_NWINDOWS,
};

/* What rxs_event() does (low 3 bits of its octet; the rest: no event). */
enum rxs_event_kind {
    RXS_EV_INVALIDATE,              /* the INVALIDATE command */
    RXS_EV_LOCAL_INV,               /* a LOCAL_INV WR on the send queue */
    RXS_EV_DESTROY,                 /* DEREG_MR or DEALLOC_MW */
    RXS_EV_REBIND,                  /* re-register, re-bind (a BIND_MW WR) */
    RXS_EV_LINK_RECV,               /* a new receive linked to the STag */
    RXS_EV_FAST_REG,                /* a FAST_REG WR of RXS_FAST, next key */
    RXS_EV_KINDS,
};
/* Targets (high 5 bits, modulo): regions, windows, then the local key. */
#define RXS_EV_TARGETS  (RXS_NREGIONS + RXS_NWINDOWS + 1)

#define RXS_NRECV       5
#define RXS_RECV_ID     100         /* ids RXS_RECV_ID .. + RXS_NRECV - 1 */
#define RXS_EV_RECV_ID  110         /* receives rxs_event() posts */
#define RXS_SQ_ID       200         /* our Read, Atomic and Send */
#define RXS_SQ_NWORK    3
#define RXS_EV_SQ_ID    300         /* LOCAL_INV, BIND_MW, FAST_REG WRs */
#define RXS_MAX_EVENTS  8
#define RXS_MAX_RANGES  96

/*
 * A guest range the peer may make us access: through @stag while it is
 * valid (0: no STag check), and until the WR @wr_id completes (0: none).
 */
struct rxs_range {
    uint64_t addr, len;
    uint32_t stag;
    uint64_t wr_id;
    bool done;                      /* that WR completed, or the STag
                                       was invalidated by the consumer */
};

struct rxs {
    struct epf_side s;
    struct epf_params p;
    uint8_t cfg, cfg2;
    uint32_t stag[RXS_NREGIONS];
    uint32_t mw[RXS_NWINDOWS];
    unsigned nevents;
    uint32_t ev_stag[RXS_MAX_EVENTS];   /* gone once its WR succeeds */
    struct rxs_range wr_ok[RXS_MAX_RANGES], rd_ok[RXS_MAX_RANGES];
    int nwr_ok, nrd_ok;
};

/* @peer: build the other end of the same connection. */
void rxs_setup(struct rxs *r, uint8_t cfg, uint8_t cfg2, bool peer);
void rxs_teardown(struct rxs *r);

/* Tagged offset of a region's first byte, and its length. */
uint64_t rxs_region_to(enum rxs_region i);
uint64_t rxs_region_len(enum rxs_region i);
/* Tagged offset of a window's first byte (as first bound), its length. */
uint64_t rxs_window_to(enum rxs_window i);
uint64_t rxs_window_len(enum rxs_window i);

/* The consumer changes an STag (@what: enum rxs_event_kind, target). */
void rxs_event(struct rxs *r, uint8_t what);
/*
 * The WR @wr_id completed: the ranges it opened close, and a LOCAL_INV
 * or BIND_MW that succeeded closes those of the STag it ended.
 */
void rxs_wr_done(struct rxs *r, uint64_t wr_id, bool success);
/* A completion for a WR rxs_setup() or rxs_event() posted. */
bool rxs_wr_known(const struct rxs *r, uint64_t wr_id);

#endif /* RNIC_FUZZ_RXSIDE_H */
