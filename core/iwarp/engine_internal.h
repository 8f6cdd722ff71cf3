/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The endpoint's state, shared by engine.c, tx.c, tx_frame.c,
 * tx_fast_reg.c, tx_inval.c, rx.c, rx_untagged.c and term.c only.
 */
#ifndef RNIC_ENGINE_INTERNAL_H
#define RNIC_ENGINE_INTERNAL_H

#include "engine.h"
#include "fpdu.h"

/* Untagged header plus the largest RDMAP body that follows it. */
#define RNIC_EP_CTL_MAX (sizeof(struct rnic_ddp_untagged_hdr) + \
                         RNIC_TERM_BODY_MAX)
/* Guest memory pieces one FPDU's payload may be mapped in. */
#define RNIC_EP_TX_MAPS (RNIC_FPDU_TX_MAX_PIECES - 1)
/* Stop value of the deframer callback: the endpoint stopped receiving. */
#define RNIC_EP_RX_STOP (-EPROTO)

enum rnic_tx_kind {
    RNIC_TX_IDLE,
    RNIC_TX_SQ,                 /* a send WR */
    RNIC_TX_READ_RESP,
    RNIC_TX_CTL,                /* one FPDU, body in ctl[]: RTR, responses */
};

/* The outbound message being segmented. */
struct rnic_tx_msg {
    enum rnic_tx_kind kind;
    struct rnic_send_wr *wr;
    struct rnic_ddp_hdr hdr;    /* TO / MO advance per segment */
    uint8_t ctl[RNIC_TERM_BODY_MAX];    /* RDMAP body after the header */
    size_t ctl_len;
    const uint8_t *inline_data;
    const struct rnic_sge *sge;
    uint32_t nsge;
    struct rnic_sge src;        /* Read Response source */
    struct rnic_inbound_read rd;    /* the Read Request answered */
    uint32_t rd_msn;
    unsigned access;            /* needed on the payload STags */
    uint32_t len;               /* payload octets */
    uint32_t off;               /* of those, framed so far */
};

/* What finishes when the last octet of an FPDU has been sent. */
enum rnic_tx_done {
    RNIC_TX_DONE_NONE,
    RNIC_TX_DONE_WR,            /* the send WR of its message completes */
    RNIC_TX_DONE_READ_RESP,     /* a one-shot source STag is used up */
};

/*
 * One framed FPDU in flight (an entry of the endpoint's ring).  Its iovecs
 * point into this struct and into guest memory it keeps mapped, so that
 * an entry stays put until its last octet is sent or it is dropped.
 */
struct rnic_tx_fpdu {
    uint32_t pos;               /* ftx.pos before it was framed */
    size_t sent;
    enum rnic_tx_done done;
    struct rnic_send_wr *wr;    /* RNIC_TX_DONE_WR */
    uint32_t src_stag;          /* RNIC_TX_DONE_READ_RESP */
    bool term;                  /* our Terminate */
    bool bounced;               /* its payload is in ep->bounce */
    /* the message it belongs to (tx_inval.c fails it when cut) */
    enum rnic_tx_kind kind;
    struct rnic_send_wr *msg_wr;    /* RNIC_TX_SQ */
    /* indices of the STags its payload was resolved through */
    uint32_t stags[RNIC_MAX_SGE];
    uint32_t nstags;
    bool poisoned;              /* an STag went: never to be sent */
    /* ULPDU_LENGTH, then the DDP header and RDMAP body: one iovec */
    uint8_t hdr[RNIC_MPA_HDR_LEN + RNIC_EP_CTL_MAX];
    struct rnic_mem_iov map[RNIC_EP_TX_MAPS];
    size_t nmap;
    struct rnic_fpdu_out *out;  /* in its block: see RNIC_FPDU_OUT_UNMARKED */
};

/*
 * The transmit ring doubles from RNIC_EP_TX_RING_MIN entries up to
 * RNIC_EP_TX_BATCH_FPDUS, each time by a block of new entries: entries
 * never move, since their framed FPDUs point into them (the header).
 */
#define RNIC_EP_TX_RING_BLOCKS  3
_Static_assert(RNIC_EP_TX_RING_MIN << (RNIC_EP_TX_RING_BLOCKS - 1) ==
               RNIC_EP_TX_BATCH_FPDUS, "the ring doubles up to a batch");

struct rnic_tx_block {
    struct rnic_tx_fpdu *fpdus;
    uint8_t *outs;              /* each entry's framed FPDU (its ->out) */
};

/* What the response to one inbound Read/Atomic Request needs beyond
 * struct rnic_inbound_read, kept in the QP's IRQ slot order. */
struct rnic_ep_resp {
    bool atomic;
    uint32_t msn;               /* of the request, for a Terminate */
    uint32_t req_id;
    uint64_t orig;
};

enum rnic_term_state {
    RNIC_TERM_NONE,
    RNIC_TERM_QUEUED,           /* ours, not yet framed */
    RNIC_TERM_SENDING,
    RNIC_TERM_SENT,
    RNIC_TERM_RECEIVED,         /* the peer's: we send nothing more */
};

struct rnic_ep {
    struct rnic_qp *qp;
    struct rnic_stag_table *stags;
    const struct rnic_dma *dma;
    uint32_t pd;
    struct rnic_mpa_result mpa;
    bool initiator;
    uint32_t mulpdu;
    const struct rnic_ep_ops *ops;
    void *opaque;
    uint64_t *rx_op_count;      /* [16] or NULL */
    uint64_t *tx_op_count;      /* [16] or NULL */

    /* RFC 6581 */
    bool rtr_tx;                /* initiator: RTR still to send */
    bool rtr_wait;              /* responder: nothing sent before it */
    bool rtr_read_pending;      /* initiator: zero Read Response due */
    bool rtr_resp_due;          /* responder: answer the RTR Read */
    struct rnic_inbound_read rtr_read;

    /* TX */
    struct rnic_fpdu_tx ftx;
    struct rnic_tx_msg msg;
    /* FPDUs framed and not yet sent whole, oldest first (only the oldest
     * may be partly sent): ring_cap entries, from RNIC_EP_TX_RING_MIN up
     * to RNIC_EP_TX_BATCH_FPDUS (tx_frame.c, rnic_tx_ring_room). */
    struct rnic_tx_fpdu **ring;
    uint32_t ring_cap;          /* a power of 2 */
    struct rnic_tx_block blocks[RNIC_EP_TX_RING_BLOCKS];
    uint32_t nblocks;
    uint32_t ring_head;
    uint32_t ring_count;
    uint32_t offered;           /* of those, handed out since the advance */
    uint64_t fpdus_sent;        /* retired from the ring, sent whole */
    unsigned cuts;              /* times FPDUs were dropped unsent */
    uint8_t *bounce;            /* payload when it cannot be mapped */
    bool bounce_busy;           /* an FPDU in the ring uses it */
    /* tx_inval.c: told of every STag that goes */
    struct rnic_stag_watcher watch;
    bool tx_poisoned;           /* an FPDU in the ring is poisoned */
    uint8_t *snap;              /* the rest of a partly sent FPDU */
    uint32_t atomic_tx_id;      /* req_id of the next Atomic Request */

    /* RX */
    struct rnic_fpdu_rx frx;
    uint8_t *rx_buf;
    bool rx_stopped;
    uint32_t rx_mo[RNIC_QP_QN_COUNT];   /* expected MO of the message */
    bool rx_send_more;          /* a Send is in progress on QN 0 */
    uint32_t rresp_got;         /* octets of the current Read Response */
    uint32_t atomic_rx_id;      /* req_id the next Atomic Response has */
    struct rnic_ep_resp *resp;  /* max_ird entries, IRQ slot order */

    /* Terminate */
    enum rnic_term_state term;
    struct rnic_term_code term_code;
    uint8_t term_seg[sizeof(struct rnic_ddp_untagged_hdr) +
                     sizeof(struct rnic_rdmap_read_req)];
    size_t term_seg_len;        /* copied octets of the offending segment */
    uint16_t term_ulpdu_len;
};

/* engine.c */
void rnic_ep_set_state(struct rnic_ep *ep, enum rnic_qp_state to);
/*
 * Queue our Terminate (first error wins) about the offending segment
 * @seg (NULL: none) and move the QP to @state (TERMINATE or ERROR).
 */
void rnic_ep_fail(struct rnic_ep *ep, struct rnic_term_code code,
                  const uint8_t *seg, size_t seg_len,
                  enum rnic_qp_state state);
bool rnic_ep_sending_allowed(const struct rnic_ep *ep);

/* tx.c */
/* Frames one more FPDU into the ring; false if there is none to send now. */
bool rnic_tx_build_next(struct rnic_ep *ep);
/* A WR failed locally: its CQE, our Terminate, QP to ERROR. */
void rnic_tx_wr_failed(struct rnic_ep *ep, struct rnic_send_wr *wr,
                       enum rnic_wc_status status);

/* tx_fast_reg.c: a FAST_REG work request, its page list read now. */
enum rnic_wc_status rnic_tx_fast_reg(struct rnic_ep *ep,
                                     const struct rnic_fast_reg_params *p);

/* tx_inval.c: no byte of an invalidated STag leaves after it went */
/* Room for the rest of one FPDU, markers included. */
#define RNIC_EP_SNAP_MAX    (RNIC_MPA_ULPDU_MAX + 1024)
void rnic_tx_inval_init(struct rnic_ep *ep);
void rnic_tx_inval_fini(struct rnic_ep *ep);
/* Drops the poisoned FPDUs and what follows them; fails their message. */
void rnic_tx_cut_poisoned(struct rnic_ep *ep);

/* tx_frame.c: the FPDUs in flight */
/* The @i-th oldest FPDU in the ring (i == ring_count: the next free). */
struct rnic_tx_fpdu *rnic_tx_fpdu_at(struct rnic_ep *ep, uint32_t i);
bool rnic_tx_ring_new(struct rnic_ep *ep);
void rnic_tx_ring_free(struct rnic_ep *ep);
bool rnic_tx_ring_room(struct rnic_ep *ep);
/* Drops the FPDUs from the @keep-th oldest on, unsent. */
void rnic_tx_drop_from(struct rnic_ep *ep, uint32_t keep);
void rnic_tx_abandon(struct rnic_ep *ep);
void rnic_tx_release(struct rnic_ep *ep);
void rnic_tx_unmap(struct rnic_ep *ep, struct rnic_tx_fpdu *d);
/* Drops the FPDUs no one may be writing yet. */
void rnic_tx_trim(struct rnic_ep *ep);
/* A Read Response in the ring has still to use up its source STag. */
bool rnic_tx_read_resp_pending(struct rnic_ep *ep);
/* The next free ring entry, made empty. */
struct rnic_tx_fpdu *rnic_tx_fpdu_new(struct rnic_ep *ep);
/* Frames the ULPDU @ulpdu (@cnt pieces) into FPDU @d and queues it. */
void rnic_tx_frame(struct rnic_ep *ep, struct rnic_tx_fpdu *d,
                   struct iovec *ulpdu, int cnt);

/* rx.c / rx_untagged.c */
struct rnic_rx_seg {
    const uint8_t *raw;         /* the whole ULPDU */
    size_t len;
    struct rnic_ddp_hdr h;
    const uint8_t *payload;     /* after the DDP header */
    uint32_t plen;
};

/* The Terminate of a segment the receive path itself failed to handle. */
static inline struct rnic_term_code rnic_rx_catastrophic(void)
{
    return rnic_term_ddp(RNIC_DDP_ETYPE_LOCAL_CATASTROPHIC, 0);
}

/* Terminate about @seg; returns RNIC_EP_RX_STOP. */
int rnic_rx_refuse(struct rnic_ep *ep, const struct rnic_rx_seg *seg,
                   struct rnic_term_code code);
int rnic_rx_place(struct rnic_ep *ep, const struct rnic_mem_ref *ref,
                  const uint8_t *data);
/* rx_untagged.c: the untagged messages, by RDMAP opcode */
int rnic_rx_send(struct rnic_ep *ep, const struct rnic_rx_seg *seg);
int rnic_rx_imm(struct rnic_ep *ep, const struct rnic_rx_seg *seg);
int rnic_rx_read_req(struct rnic_ep *ep, const struct rnic_rx_seg *seg);
int rnic_rx_atomic_req(struct rnic_ep *ep, const struct rnic_rx_seg *seg);
int rnic_rx_atomic_resp(struct rnic_ep *ep, const struct rnic_rx_seg *seg);
int rnic_rx_terminate(struct rnic_ep *ep, const struct rnic_rx_seg *seg);

/* The slot of the IRQ entry @off places after its head. */
static inline uint32_t rnic_ep_irq_slot(const struct rnic_ep *ep,
                                        uint32_t off)
{
    return rnic_ring_slot(ep->qp->irq.head, off, ep->qp->attr.max_ird);
}

/* What a kernel QP adds to its local accesses (the physical STag). */
static inline unsigned rnic_ep_priv(const struct rnic_ep *ep)
{
    return ep->qp->attr.privileged ? RNIC_ACCESS_PRIVILEGED : 0;
}

#endif /* RNIC_ENGINE_INTERNAL_H */
