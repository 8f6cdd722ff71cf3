/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The data-path engine: one endpoint (struct rnic_ep) is one connected
 * QP's iWARP byte stream after the MPA handshake.  It owns no socket: the
 * device feeds received bytes to rnic_ep_rx() in any chunking, and asks
 * rnic_ep_tx_peek() what to write next, reporting with
 * rnic_ep_tx_advance() how much the socket took.
 *
 * TX frames FPDUs zero copy (the iovecs point into mapped guest memory
 * where the DMA layer can map, else into one bounce buffer of the
 * endpoint) and hands out one FPDU per rnic_ep_tx_peek(), or several
 * consecutive ones per rnic_ep_tx_peek_batch(), from a small ring
 * allocated with the endpoint.  Messages are picked in this order: a
 * Terminate; the RTR message of RFC 6581; the response to the oldest
 * inbound Read or Atomic Request (IRD-limited); the next SQ work request
 * the QP releases (fence and ORD honoured).  A message is picked behind
 * FPDUs not yet sent only when starting it can neither fail nor complete
 * anything (no local operation, no bad SGE, no Read Response still to use
 * up its source STag); otherwise it waits until they are sent, as with
 * one FPDU at a time.  A WR completes when the last octet of its last
 * FPDU is advanced past.  When an STag that FPDUs framed ahead read
 * through is invalidated (by any means), those not yet begun are never
 * sent and their message fails with a Terminate; the one partly sent is
 * finished from a copy taken at the invalidation (tx_inval.c).
 *
 * RX validates each DDP segment completely before placing any byte of
 * it, in the order of RFC 5041 section 7 / RFC 5040 section 7; on any
 * violation the QP goes to TERMINATE (or ERROR) and a Terminate naming
 * layer, error type and code, with the offending headers, is sent.
 *
 * Conventions of this implementation:
 *  - Immediate Data (RFC 7306 section 7) carries 8 octets: our 32-bit
 *    immediate is the low-order half, octets 4..7 in network order;
 *    octets 0..3 are sent as zero and ignored on receipt.  It consumes a
 *    receive WR, places nothing and completes with byte_len 0.
 *  - Atomic operands are 64-bit little-endian in guest memory (the x86
 *    guest's order) and big-endian on the wire.  The target must be
 *    8-byte aligned.  Compare-and-swap uses all-ones masks.
 *  - A receive WR's wr_id is the recv_id used with
 *    rnic_stag_link_to_recv() on the QP's receive queue
 *    (rnic_qp_recv_queue()): links are consumed when the WR completes and
 *    forgotten when it is flushed.
 *  - BIND_MW gives the window the next key (key + 1, as ib_inc_rkey).
 *  - Without RFC 6581 RTR the responder may send at once.
 *
 * Single-threaded: the device serialises every call on one endpoint and
 * on the QP, CQs and STag table it uses.
 */
#ifndef RNIC_ENGINE_H
#define RNIC_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "cq.h"
#include "dma.h"
#include "iwarp.h"
#include "mpa.h"
#include "qp.h"
#include "qpn.h"
#include "save.h"
#include "stag.h"

#define RNIC_EP_EMSS_DEFAULT    1460
/* Room for the largest control message: Terminate with both headers. */
#define RNIC_EP_MULPDU_MIN      128
/*
 * At most this many FPDUs in flight, and so in one rnic_ep_tx_peek_batch()
 * (a ring entry each per endpoint: about 500 octets unmarked, 5 KiB with
 * markers; the ring holds 64 until a batch needs more).  Unmarked FPDUs
 * take about three iovecs each.  Batches are large because a writev, and
 * a turn of the event loop, costs about the same whatever it carries:
 * small ones made the system calls, not the data, the limit
 * (docs/protocol.md section 4, "Batches", has the figures).
 */
#define RNIC_EP_TX_BATCH_FPDUS  256
/* The ring entries an endpoint starts with (and keeps, with markers). */
#define RNIC_EP_TX_RING_MIN     64
/* A batch adds no FPDU that would take it past this many octets. */
#define RNIC_EP_TX_BATCH_BYTES  (1024 * 1024)
/* iovecs that hold a whole batch of unmarked FPDUs (three each, and room) */
#define RNIC_EP_TX_BATCH_IOV    (4 * RNIC_EP_TX_BATCH_FPDUS)
/*
 * What a caller of rnic_ep_rx() should read at once: past the largest
 * FPDU, so that most arrive whole and skip the reassembly copy.
 */
#define RNIC_EP_RX_CHUNK        (256 * 1024)

struct rnic_ep;

/* What the device hears about; every member may be NULL. */
struct rnic_ep_ops {
    /* The last octet of our Terminate went to tx_advance: close now. */
    void (*term_sent)(void *opaque, struct rnic_term_code code);
    /* The peer's Terminate arrived; the QP is in TERMINATE or ERROR. */
    void (*term_received)(void *opaque, struct rnic_term_code code);
    void (*state_changed)(void *opaque, enum rnic_qp_state state);
    /*
     * The received stream cannot be parsed any more (CRC, marker, length).
     * Stop reading; send what rnic_ep_tx_peek() still yields (the
     * Terminate), then close.
     */
    void (*stream_lost)(void *opaque, struct rnic_term_code code);
    /*
     * A Send or Immediate Data found no receive: hand the QP those its
     * consumer posted that it has not taken yet.  Asked once, then the
     * message is refused if there is still none.
     */
    void (*need_recv)(void *opaque);
};

struct rnic_ep_params {
    struct rnic_qp *qp;             /* IDLE (adopted here) or RTS */
    struct rnic_stag_table *stags;
    const struct rnic_dma *dma;
    uint32_t pd;                    /* the QP's protection domain */
    struct rnic_mpa_result mpa;     /* what the handshake agreed */
    bool initiator;                 /* sent the MPA Request */
    uint32_t emss;                  /* 0: RNIC_EP_EMSS_DEFAULT */
    uint32_t mulpdu;                /* 0: from emss and markers */
    const struct rnic_ep_ops *ops;
    void *opaque;
    /*
     * optional, [16] by RDMAP opcode: FPDUs received whole (CRC good), and
     * FPDUs sent whole
     */
    uint64_t *rx_op_count;
    uint64_t *tx_op_count;
};

/*
 * Allocates every buffer the stream will need.  NULL if a parameter is
 * invalid (MULPDU below RNIC_EP_MULPDU_MIN or above 65535, QP neither
 * IDLE nor RTS, ORD/IRD above the QP's maxima) or memory is short.
 */
struct rnic_ep *rnic_ep_new(const struct rnic_ep_params *p);
/* Unmaps what the FPDUs in flight still hold; the QP is left as it is. */
void rnic_ep_free(struct rnic_ep *ep);

/* The largest ULPDU this endpoint sends. */
uint32_t rnic_ep_mulpdu(const struct rnic_ep *ep);
struct rnic_qp *rnic_ep_qp(const struct rnic_ep *ep);

/*
 * Consumes all of @data.  0 while the stream lives; -EPROTO once the
 * endpoint stopped receiving (Terminate sent or received, stream lost):
 * later input is discarded.
 */
int rnic_ep_rx(struct rnic_ep *ep, const void *data, size_t len);

/*
 * The unsent rest of the oldest FPDU in flight, building the next one if
 * none is: up to @max iovecs in iov[], their count in *cnt, their total
 * returned (0: nothing to send now).  When the FPDU needs more than @max
 * iovecs only its first @max are returned.  The CRC of the FPDU is the
 * last 4 octets of its last iovec.  The iovecs stay valid until the next
 * rnic_ep_tx_advance() or rnic_ep_free().
 */
size_t rnic_ep_tx_peek(struct rnic_ep *ep, struct iovec *iov, int max,
                       int *cnt);
/*
 * As rnic_ep_tx_peek(), followed by up to @max_fpdus - 1 further whole
 * FPDUs in stream order (of the same message or the next ones), framed
 * here as needed: each is added only if all its iovecs fit in @max and
 * the total stays within RNIC_EP_TX_BATCH_BYTES; never more than
 * RNIC_EP_TX_BATCH_FPDUS.  @max_fpdus < 2 is rnic_ep_tx_peek().  The CRC
 * of each whole FPDU is the last 4 octets of that FPDU's last iovec, and
 * each FPDU but the first begins at an iovec.
 *
 * When the QP leaves RTS/CLOSING or a Terminate is queued, the FPDUs
 * framed ahead are dropped unsent, except those partly or wholly
 * advanced past and those handed out since the last advance: these go
 * out whole, then the Terminate.
 */
size_t rnic_ep_tx_peek_batch(struct rnic_ep *ep, struct iovec *iov, int max,
                             int *cnt, int max_fpdus);
/*
 * Where each FPDU of a peek lies, for a filter on the way to the socket
 * (the device's fault injection) that must not re-parse the stream.
 */
struct rnic_ep_tx_fpdu {
    uint64_t seq;       /* FPDUs this endpoint sent whole before it */
    int end;            /* one past its last iovec in iov[] */
    bool tail;          /* its last iovec ends with the CRC (not cut) */
};

/*
 * As rnic_ep_tx_peek_batch(), also describing each FPDU handed out in
 * fpdus[] (room for @max_fpdus), their count in *nfpdus.
 */
size_t rnic_ep_tx_peek_fpdus(struct rnic_ep *ep, struct iovec *iov, int max,
                             int *cnt, int max_fpdus,
                             struct rnic_ep_tx_fpdu *fpdus, int *nfpdus);
/* FPDUs (Terminate included) whose last octet was advanced past. */
uint64_t rnic_ep_tx_fpdus_sent(const struct rnic_ep *ep);

/*
 * @sent octets of what tx_peek returned were written; any amount, across
 * FPDU boundaries.  Completions of the messages whose last octet is now
 * sent are reported, in order; the Terminate's last octet calls term_sent.
 */
void rnic_ep_tx_advance(struct rnic_ep *ep, size_t sent);

/*
 * Moving a live connection with its socket (save.h's format).  Quiet:
 * every FPDU framed was handed to the socket and no message is half
 * segmented, no Terminate is due or was exchanged: only then does
 * rnic_ep_save() hold everything (the socket's queues carry the rest).
 * rnic_ep_load() is for an endpoint just made with the same parameters
 * (mulpdu included) on the QP loaded with it, in RTS.
 */
bool rnic_ep_tx_quiet(const struct rnic_ep *ep);
void rnic_ep_save(struct rnic_sv *s, const struct rnic_ep *ep);
int rnic_ep_load(struct rnic_ld *l, struct rnic_ep *ep);

/*
 * State changes that go through the engine, so that receive-linked STags
 * of flushed receive WRs are forgotten and the transmitter drops work it
 * can no longer finish.  Returns like rnic_qp_modify().
 */
int rnic_ep_modify(struct rnic_ep *ep, enum rnic_qp_state to);
/* The LLP connection is gone (see rnic_qp_connection_closed()). */
int rnic_ep_connection_closed(struct rnic_ep *ep);
/*
 * The device found the QP's own work unusable (a malformed work queue
 * entry): the stream ends as for any local error, with a Terminate
 * (RDMAP, local catastrophic), the QP in TERMINATE and then ERROR, and
 * the message in progress dropped unless it was partly sent.
 */
void rnic_ep_local_error(struct rnic_ep *ep);

/* ---- Terminate messages (term.c) ---- */

static inline struct rnic_term_code rnic_term_rdmap(uint8_t etype,
                                                    uint8_t ecode)
{
    return (struct rnic_term_code) { RNIC_TERM_LAYER_RDMAP, etype, ecode };
}

static inline struct rnic_term_code rnic_term_ddp(uint8_t etype,
                                                  uint8_t ecode)
{
    return (struct rnic_term_code) { RNIC_TERM_LAYER_DDP, etype, ecode };
}

static inline bool rnic_term_code_eq(struct rnic_term_code a,
                                     struct rnic_term_code b)
{
    return a.layer == b.layer && a.etype == b.etype && a.ecode == b.ecode;
}

/* Largest Terminate body: word, segment length, DDP and RDMAP headers. */
#define RNIC_TERM_BODY_MAX  (sizeof(struct rnic_rdmap_terminate) + 2 + \
                             sizeof(struct rnic_ddp_untagged_hdr) + \
                             sizeof(struct rnic_rdmap_read_req))

/* A Terminate body, decoded. */
struct rnic_term_info {
    struct rnic_term_code code;
    uint8_t hdrct;                  /* RNIC_TERM_HDRCT_* */
    uint16_t seg_len;               /* with M */
    struct rnic_ddp_hdr ddp;        /* with D */
    struct rnic_rdmap_read_req rreq;    /* with R, as on the wire */
};

/*
 * Lays out a Terminate body for @code about the offending DDP segment of
 * @seg_len octets, whose first @avail octets are at @seg (NULL when there
 * is no segment or it cannot be trusted); the RFC 5040 section 7.1 rules
 * decide which headers are copied.  Returns the length written to @body
 * (RNIC_TERM_BODY_MAX is enough).
 */
size_t rnic_term_build(uint8_t *body, struct rnic_term_code code,
                       const uint8_t *seg, size_t avail, size_t seg_len);
/* 0, or -EINVAL when @body is shorter than what its HdrCt announces. */
int rnic_term_parse(const uint8_t *body, size_t len,
                    struct rnic_term_info *info);
/* The completion status a WR gets when the peer terminates over it. */
enum rnic_wc_status rnic_term_wc_status(struct rnic_term_code code);
/* Completion status of a local SGE that failed rnic_stag_resolve(). */
enum rnic_wc_status rnic_term_local_status(enum rnic_stag_status st);
/*
 * Terminate code for a tagged-buffer failure of @st: DDP tagged errors
 * (RFC 5041 section 7.2) for @ddp, otherwise (a STag named in an RDMAP
 * header: Read Request, Atomic, Send with Invalidate) RDMAP's.
 */
struct rnic_term_code rnic_term_stag_error(enum rnic_stag_status st,
                                           bool ddp);
const char *rnic_term_code_str(struct rnic_term_code code);

#endif /* RNIC_ENGINE_H */
