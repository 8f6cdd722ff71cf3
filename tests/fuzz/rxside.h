/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The receiver fuzz_rx attacks, built on one epfix side: a QP in RTS with
 * regions of every kind registered for the peer, receives posted and
 * (optionally) Reads, an Atomic and a Send of its own outstanding.  The
 * seed generator builds the same side twice, once as the peer, so that
 * its streams name STags and offsets the fuzzed receiver really has.
 *
 * It also knows which guest ranges the peer may legitimately make the
 * receiver write or read: everything else must stay untouched.
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

enum rxs_region {
    RXS_WRITE,                      /* remote write, Send with Invalidate */
    RXS_READ,                       /* remote read only */
    RXS_READ_WRITE,
    RXS_ONE_SHOT,                   /* remote write, one-shot */
    RXS_LINKED,                     /* remote write, linked to a receive */
    RXS_ATOMIC,
    RXS_NREGIONS,
};

#define RXS_NRECV       4
#define RXS_RECV_ID     100         /* ids RXS_RECV_ID .. + RXS_NRECV - 1 */
#define RXS_MAX_RANGES  (RXS_NREGIONS + RXS_NRECV + 3)

/* A guest range the peer may make us access; stag 0: no STag check. */
struct rxs_range {
    uint64_t addr, len;
    uint32_t stag;
};

struct rxs {
    struct epf_side s;
    struct epf_params p;
    uint8_t cfg;
    uint32_t stag[RXS_NREGIONS];
    struct rxs_range wr_ok[RXS_MAX_RANGES], rd_ok[RXS_MAX_RANGES];
    int nwr_ok, nrd_ok;
};

/* @peer: build the other end of the same connection. */
void rxs_setup(struct rxs *r, uint8_t cfg, bool peer);
void rxs_teardown(struct rxs *r);

/* Guest address and length of a region. */
uint64_t rxs_region_addr(enum rxs_region i);
uint64_t rxs_region_len(enum rxs_region i);

#endif /* RNIC_FUZZ_RXSIDE_H */
