/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Work requests and work completions as the protocol core sees them.
 *
 * These are host-side structures, not a wire or guest ABI: the device
 * fetches a WQE from guest memory, validates it into a struct rnic_send_wr
 * or struct rnic_recv_wr, and turns a struct rnic_cqe back into the guest's
 * CQE layout.  Keeping them separate lets the core be tested without any
 * guest memory at all.
 */
#ifndef RNIC_WR_H
#define RNIC_WR_H

#include <stdbool.h>
#include <stdint.h>

/* Scatter/gather entries per work request; the QP may allow fewer. */
#define RNIC_MAX_SGE 8

/* An RDMA Read writes into one tagged sink buffer (RFC 5040 6.4): 1 SGE. */
#define RNIC_MAX_READ_SGE 1

/* Atomic operations (RFC 7306) work on one 64-bit quantity. */
#define RNIC_ATOMIC_LEN 8

struct rnic_sge {
    uint32_t stag;      /* local STag (L_Key) */
    uint64_t to;        /* tagged offset within that STag */
    uint32_t length;
};

/* Inline data reuses the SGE array's storage: no extra bytes per WR. */
#define RNIC_MAX_INLINE (RNIC_MAX_SGE * sizeof(struct rnic_sge))

enum rnic_wr_opcode {
    RNIC_WR_SEND,
    RNIC_WR_SEND_INV,           /* Send with Invalidate of a remote STag */
    RNIC_WR_SEND_SE,            /* Send with Solicited Event */
    RNIC_WR_SEND_SE_INV,
    RNIC_WR_WRITE,
    RNIC_WR_READ,
    RNIC_WR_ATOMIC_FETCH_ADD,   /* RFC 7306 */
    RNIC_WR_ATOMIC_CMP_SWAP,    /* RFC 7306 */
    RNIC_WR_IMM_DATA,           /* RFC 7306 Immediate Data, no payload */
    RNIC_WR_IMM_DATA_SE,
    RNIC_WR_LOCAL_INV,          /* local only: nothing goes on the wire */
    RNIC_WR_BIND_MW,            /* local only */
    RNIC_WR_FAST_REG,           /* local only; kernel QPs only */
    RNIC_WR_READ_INV,           /* Read, then invalidate the sink STag */
    RNIC_WR_OPCODE_COUNT,
};

enum rnic_wr_flags {
    RNIC_WR_SIGNALED  = 1u << 0, /* successful completion makes a CQE */
    RNIC_WR_FENCE     = 1u << 1, /* wait for all prior Reads/Atomics */
    RNIC_WR_SOLICITED = 1u << 2, /* same as the _SE opcode variant */
    RNIC_WR_INLINE    = 1u << 3, /* payload is in inline_data */
};
#define RNIC_WR_FLAGS_ALL (RNIC_WR_SIGNALED | RNIC_WR_FENCE | \
                           RNIC_WR_SOLICITED | RNIC_WR_INLINE)

struct rnic_bind_params {
    uint32_t mw_stag;
    uint32_t mr_stag;
    uint64_t to;
    uint64_t length;
    uint32_t access;
    uint8_t key;                /* the window's new key; must differ */
};

/* FAST_REG: the page list is read from guest memory when the WR runs. */
struct rnic_fast_reg_params {
    uint64_t pbl_addr;
    uint64_t iova;
    uint64_t length;
    uint32_t npages;
    uint32_t access;
    uint32_t stag;
    uint32_t first_byte_offset;
    uint8_t page_shift;
};

struct rnic_send_wr {
    uint64_t wr_id;
    enum rnic_wr_opcode opcode;
    uint32_t flags;             /* enum rnic_wr_flags */
    uint32_t num_sge;           /* 0 for a zero-length message */
    uint32_t inline_len;        /* only with RNIC_WR_INLINE */
    union {
        struct rnic_sge sge[RNIC_MAX_SGE];
        uint8_t inline_data[RNIC_MAX_INLINE];
        /* FAST_REG (no SGEs): here, so that no SQ slot grows for it */
        struct rnic_fast_reg_params fast_reg;
    };
    uint32_t remote_stag;       /* WRITE, READ source, ATOMIC target */
    uint64_t remote_to;
    uint32_t invalidate_stag;   /* SEND_*INV: remote; LOCAL_INV: local */
    uint32_t imm_data;
    uint64_t atomic_add_or_compare;
    uint64_t atomic_swap;
    struct rnic_bind_params bind;
};

struct rnic_recv_wr {
    uint64_t wr_id;
    uint32_t num_sge;
    struct rnic_sge sge[RNIC_MAX_SGE];
};

/*
 * Completion statuses: the verbs set that an iWARP RNIC can actually
 * produce.  Retry/RNR statuses are absent on purpose: TCP retransmits for
 * us and a lost connection shows up as a flush.
 */
enum rnic_wc_status {
    /* The operation finished as requested. */
    RNIC_WC_SUCCESS,
    /* A local length error: an inbound message larger than the receive
     * WR's buffers, or a Read Response longer than the sink. */
    RNIC_WC_LOC_LEN_ERR,
    /* The WR was inconsistent with the QP when it was processed. */
    RNIC_WC_LOC_QP_OP_ERR,
    /* A local SGE failed STag/PD/bounds checks while building the message. */
    RNIC_WC_LOC_PROT_ERR,
    /* Not executed: the QP went to TERMINATE/ERROR first, or the WR was
     * posted while it was there. */
    RNIC_WC_WR_FLUSH_ERR,
    /* A Bind Memory Window WR could not be carried out. */
    RNIC_WC_MW_BIND_ERR,
    /* A response the peer sent did not match what we asked for (e.g. a
     * Read Response with no Read outstanding). */
    RNIC_WC_BAD_RESP_ERR,
    /* An inbound tagged or untagged message violated our local memory
     * protection (the peer's fault, reported on our receive side), or the
     * DMA to or from a local buffer failed (an address the bus or an
     * IOMMU does not map: the driver's fault). */
    RNIC_WC_LOC_ACCESS_ERR,
    /* The peer's Terminate said our request was invalid (e.g. opcode it
     * does not support, invalidating an STag it cannot). */
    RNIC_WC_REM_INV_REQ_ERR,
    /* The peer's Terminate reported a protection error on its memory: bad
     * STag, base/bounds, access rights. */
    RNIC_WC_REM_ACCESS_ERR,
    /* The peer could not complete the operation for another reason. */
    RNIC_WC_REM_OP_ERR,
    /* The device itself failed. */
    RNIC_WC_FATAL_ERR,
    /* Anything else; reported with a trace saying what. */
    RNIC_WC_GENERAL_ERR,
    RNIC_WC_STATUS_COUNT,
};

enum rnic_wc_opcode {
    RNIC_WC_SEND,
    RNIC_WC_WRITE,
    RNIC_WC_READ,
    RNIC_WC_ATOMIC_FETCH_ADD,
    RNIC_WC_ATOMIC_CMP_SWAP,
    RNIC_WC_IMM_DATA,
    RNIC_WC_LOCAL_INV,
    RNIC_WC_BIND_MW,
    RNIC_WC_RECV,
    RNIC_WC_FAST_REG,
    RNIC_WC_OPCODE_COUNT,
};

enum rnic_wc_flags {
    RNIC_WC_WITH_INV   = 1u << 0,   /* inval_stag was invalidated */
    RNIC_WC_WITH_IMM   = 1u << 1,   /* imm_data is valid */
    RNIC_WC_SOLICITED  = 1u << 2,   /* the message asked for an event */
};

struct rnic_cqe {
    uint64_t wr_id;
    enum rnic_wc_status status;
    enum rnic_wc_opcode opcode;
    uint32_t byte_len;
    uint32_t qpn;
    uint32_t flags;             /* enum rnic_wc_flags */
    uint32_t inval_stag;
    uint32_t imm_data;
};

/* Names for traces and tests (defined in cq.c); "?" for unknown values. */
const char *rnic_wr_opcode_str(enum rnic_wr_opcode op);
const char *rnic_wc_status_str(enum rnic_wc_status status);
const char *rnic_wc_opcode_str(enum rnic_wc_opcode op);

/* An RDMA Read, with or without invalidating its sink afterwards. */
static inline bool rnic_wr_is_read(enum rnic_wr_opcode op)
{
    return op == RNIC_WR_READ || op == RNIC_WR_READ_INV;
}

/* Done by the RNIC itself, in SQ order: nothing goes on the wire. */
static inline bool rnic_wr_is_local(enum rnic_wr_opcode op)
{
    return op == RNIC_WR_LOCAL_INV || op == RNIC_WR_BIND_MW ||
           op == RNIC_WR_FAST_REG;
}

/* The completion opcode a send WR reports. */
enum rnic_wc_opcode rnic_wc_opcode_of(enum rnic_wr_opcode op);

/*
 * Slot @offset positions after @head in a ring of @depth entries.  All our
 * rings keep head < depth plus a count, so any depth works, not only powers
 * of two, and no free-running index ever wraps.
 */
static inline uint32_t rnic_ring_slot(uint32_t head, uint32_t offset,
                                      uint32_t depth)
{
    uint32_t slot = head + offset;

    return slot >= depth ? slot - depth : slot;
}

#endif /* RNIC_WR_H */
