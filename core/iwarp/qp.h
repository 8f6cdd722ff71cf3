/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Queue pairs: the iWARP QP state machine, the send and receive queues,
 * shared receive queues, Read accounting (ORD/IRD, fencing) and the
 * per-QP untagged-queue MSNs.
 *
 * States and transitions (RFC 5040 section 8, RDMAC verbs for iWARP):
 *
 *   IDLE -> RTS        an established, MPA-negotiated connection is adopted
 *   IDLE -> ERROR      the consumer gives up before connecting (flushes RQ)
 *   RTS -> CLOSING     graceful close begins: WRs already handed to the
 *                      data path drain, nothing new starts
 *   RTS -> TERMINATE   a Terminate was sent or received; flushes everything
 *   RTS -> ERROR       abortive close (LLP reset) or fatal error; flushes
 *   CLOSING -> IDLE    the LLP closed cleanly with no send work left
 *   CLOSING -> ERROR   the LLP closed with work left, or an abort; flushes
 *   TERMINATE -> ERROR the LLP connection is gone after the Terminate
 *   ERROR -> IDLE      reset by the consumer; the QP may connect again
 *
 * Anything else, including a transition to the current state, is refused.
 *
 * Posting: receives may be posted in IDLE, RTS and CLOSING.  Sends are
 * accepted only in RTS; in IDLE and CLOSING they are refused with
 * -ENOTCONN (as Linux siw does), so no send ever waits for a connection
 * that might never come.  In TERMINATE and ERROR every posted WR completes
 * at once with RNIC_WC_WR_FLUSH_ERR (verbs semantics for an errored QP).
 *
 * Completion: send WRs complete strictly in posting order.  The tx/rx code
 * marks a WR done when it is (a Send when transmitted, a Read when its
 * response has fully arrived); its CQE is written once every older WR is
 * done too.  A successful unsignaled WR leaves no CQE; unsuccessful and
 * flushed WRs always do.
 *
 * The core does no locking: the device serialises calls per QP.
 */
#ifndef RNIC_QP_H
#define RNIC_QP_H

#include <stdbool.h>
#include <stdint.h>
#include "wr.h"

struct rnic_cq;
struct rnic_srq;

#define RNIC_QP_MAX_DEPTH (1u << 16)
#define RNIC_QP_MAX_RD    128   /* upper bound for ORD and IRD */

enum rnic_qp_state {
    RNIC_QP_IDLE,
    RNIC_QP_RTS,
    RNIC_QP_CLOSING,
    RNIC_QP_TERMINATE,
    RNIC_QP_ERROR,
    RNIC_QP_STATE_COUNT,
};

/*
 * Untagged queues, each with its own MSN (RFC 5040 section 5.1, RFC 7306
 * section 5).  The values are the wire QNs (enum rnic_ddp_qn in iwarp.h),
 * so the rx/tx code indexes the MSN arrays with the QN it sees.
 */
enum rnic_qp_qn {
    RNIC_QP_QN_SEND = 0,        /* Send, Send with Invalidate/SE */
    RNIC_QP_QN_READ_REQ = 1,    /* RDMA Read Request */
    RNIC_QP_QN_TERMINATE = 2,
    RNIC_QP_QN_ATOMIC = 3,      /* Atomic Request */
    RNIC_QP_QN_COUNT,
};

struct rnic_qp_attr {
    uint32_t sq_depth;
    uint32_t rq_depth;          /* ignored (no RQ) when srq is set */
    uint32_t max_send_sge;      /* <= RNIC_MAX_SGE */
    uint32_t max_recv_sge;      /* <= RNIC_MAX_SGE */
    uint32_t max_ord;           /* <= RNIC_QP_MAX_RD */
    uint32_t max_ird;           /* <= RNIC_QP_MAX_RD; inbound Read queue */
    bool atomics;               /* RFC 7306 atomics may be posted */
    /* A kernel consumer's QP: FAST_REG and the physical STag (stag.h). */
    bool privileged;
    struct rnic_cq *send_cq;
    struct rnic_cq *recv_cq;
    struct rnic_srq *srq;       /* optional */
};

struct rnic_sq_slot {
    struct rnic_send_wr wr;
    bool done;                  /* finished, CQE waits for older WRs */
    enum rnic_wc_status status;
};

struct rnic_recv_ring {
    struct rnic_recv_wr *wrs;
    uint32_t depth;
    uint32_t head;
    uint32_t count;
};

/* An RDMA Read Request from the peer, kept until its response is sent. */
struct rnic_inbound_read {
    uint32_t sink_stag;         /* peer's buffer the response goes to */
    uint64_t sink_to;
    uint32_t length;
    uint32_t src_stag;          /* our buffer the response comes from */
    uint64_t src_to;
};

struct rnic_qp {
    uint32_t qpn;
    enum rnic_qp_state state;
    struct rnic_qp_attr attr;

    struct {
        struct rnic_sq_slot *slots;
        uint32_t head;          /* oldest WR without a completion */
        uint32_t started;       /* of those, handed to tx by sq_next */
        uint32_t count;         /* all posted and not yet completed */
    } sq;
    struct rnic_recv_ring rq;

    /* The receive WR the inbound Send in progress is placed into: the RQ
     * head, or with an SRQ the WR taken from it (then owned by this QP). */
    bool recv_active;
    struct rnic_recv_wr srq_wr;

    uint32_t ord;               /* negotiated: Reads we may have pending */
    uint32_t ird;               /* negotiated: peer Reads we serve at once */
    uint32_t ord_used;          /* Reads/Atomics sent, response pending */
    struct {                    /* Inbound Read Queue, max_ird entries */
        struct rnic_inbound_read *reqs;
        uint32_t head;
        uint32_t count;
    } irq;

    /* Next MSN to send / expected next from the peer; 1 after adopt
     * (RFC 5041 section 5.1).  Owned by the tx and rx code. */
    uint32_t tx_msn[RNIC_QP_QN_COUNT];
    uint32_t rx_msn[RNIC_QP_QN_COUNT];
};

const char *rnic_qp_state_str(enum rnic_qp_state state);
bool rnic_qp_transition_legal(enum rnic_qp_state from, enum rnic_qp_state to);

/*
 * Allocates every queue up front; takes references on the CQs and SRQ.
 * NULL if an attribute is out of range or a CQ is missing.
 */
struct rnic_qp *rnic_qp_new(uint32_t qpn, const struct rnic_qp_attr *attr);
/* Drops the WRs without completions (verbs destroy) and the references. */
void rnic_qp_free(struct rnic_qp *qp);

/*
 * Moves the QP to @to, flushing as described above.  -EINVAL: illegal
 * transition; -EBUSY: CLOSING -> IDLE with send or inbound Read work left
 * (nothing changed in both cases).  -ENOSPC/-EIO: the transition happened
 * but a CQ overflowed while flushing (report a CQ error).
 */
int rnic_qp_modify(struct rnic_qp *qp, enum rnic_qp_state to);

/* IDLE -> RTS with the negotiated limits; -ERANGE above max_ord/max_ird. */
int rnic_qp_adopt_connection(struct rnic_qp *qp, uint32_t ord, uint32_t ird);

/*
 * The LLP connection is gone: CLOSING ends in IDLE if drained, otherwise
 * (and from RTS or TERMINATE) the QP goes to ERROR.  No-op in IDLE/ERROR.
 * Returns like rnic_qp_modify().
 */
int rnic_qp_connection_closed(struct rnic_qp *qp);
/* True when rnic_qp_connection_closed() would flush the queues. */
bool rnic_qp_close_flushes(const struct rnic_qp *qp);

/*
 * 0 on success.  -ENOTCONN: state forbids it; -ENOMEM: queue full;
 * -E2BIG: too many SGEs or inline bytes; -EOPNOTSUPP: unknown opcode, or
 * atomics/Reads not enabled (ORD 0); -EINVAL: malformed (bad flags, SGEs
 * where the opcode takes none, atomic not one 8-byte SGE, receive posted
 * to a QP that uses an SRQ); -EMSGSIZE: total length above 4 GiB - 1.
 * In TERMINATE/ERROR: 0 and a flush CQE, or the CQ's push error.
 */
int rnic_qp_post_send(struct rnic_qp *qp, const struct rnic_send_wr *wr);
int rnic_qp_post_recv(struct rnic_qp *qp, const struct rnic_recv_wr *wr);
/* True in TERMINATE and ERROR, where a posted WR is flushed at once. */
bool rnic_qp_flushes_posts(const struct rnic_qp *qp);

/*
 * The next WR the tx path may start now, or NULL: not RTS, nothing
 * posted, blocked by FENCE while Reads/Atomics are pending, or a
 * Read/Atomic beyond ORD.  A returned WR counts as started (and against
 * ORD if it is a Read or Atomic); finish it with rnic_qp_sq_done().
 */
struct rnic_send_wr *rnic_qp_sq_next(struct rnic_qp *qp);

/* The Read/Atomic the next response belongs to (responses come in order). */
struct rnic_send_wr *rnic_qp_sq_oldest_read(struct rnic_qp *qp);

/*
 * Marks a started WR finished with @status and writes every CQE that is
 * now due, in order.  -EINVAL if @wr is not a started, unfinished WR;
 * -ENOSPC/-EIO from the send CQ.  An unsuccessful status does not change
 * the QP state: the caller chooses between TERMINATE and ERROR.
 */
int rnic_qp_sq_done(struct rnic_qp *qp, struct rnic_send_wr *wr,
                    enum rnic_wc_status status);

/*
 * Binds the receive WR for a new inbound untagged message.  NULL when the
 * QP cannot receive (not RTS/CLOSING), a message is already in progress,
 * or no WR is posted: the rx path answers the last with a Terminate.
 */
const struct rnic_recv_wr *rnic_qp_recv_begin(struct rnic_qp *qp);
const struct rnic_recv_wr *rnic_qp_recv_current(const struct rnic_qp *qp);

/*
 * Completes the bound receive WR.  The caller fills status, byte_len,
 * flags, inval_stag and imm_data of @cqe; wr_id, opcode and qpn are set
 * here.  -EINVAL if no message is in progress; else like rnic_cq_push().
 */
int rnic_qp_recv_complete(struct rnic_qp *qp, struct rnic_cqe *cqe);

/*
 * Inbound Read Queue.  push: -EPROTO when the peer exceeds our IRD (a
 * protocol error: the rx path sends a Terminate).  head: the oldest
 * request, whose Read Response the tx path sends next; NULL if none.
 */
int rnic_qp_irq_push(struct rnic_qp *qp, const struct rnic_inbound_read *req);
const struct rnic_inbound_read *rnic_qp_irq_head(const struct rnic_qp *qp);
void rnic_qp_irq_pop(struct rnic_qp *qp);

/*
 * Shared receive queue: several QPs take receive WRs from it in posting
 * order.  WRs stay with the SRQ when a QP is flushed; only the one a QP
 * had already taken for a message in progress is flushed with that QP.
 */
struct rnic_srq *rnic_srq_new(uint32_t srqn, uint32_t depth, uint32_t max_sge);
/* -EBUSY while a QP still uses the SRQ. */
int rnic_srq_destroy(struct rnic_srq *srq);
/* 0, -ENOMEM (full), -E2BIG (SGEs), -EMSGSIZE (total length). */
int rnic_srq_post_recv(struct rnic_srq *srq, const struct rnic_recv_wr *wr);
uint32_t rnic_srq_count(const struct rnic_srq *srq);

/*
 * The receive queue @qp takes its receive WRs from (its SRQ or its own
 * RQ), as rnic_stag_link_to_recv() scopes links: rnic_recv_queue_*().
 */
uint64_t rnic_qp_recv_queue(const struct rnic_qp *qp);

#endif /* RNIC_QP_H */
