/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Completion queues, and the names of work request and completion codes
 * (traces and tests print names, never bare numbers).
 */
#include <errno.h>
#include <stdlib.h>
#include "cq.h"
#include "save.h"

enum rnic_cq_armed {
    RNIC_CQ_DISARMED,
    RNIC_CQ_ARMED_SOLICITED,
    RNIC_CQ_ARMED_NEXT,
};

struct rnic_cq {
    struct rnic_cqe *ring;
    uint32_t depth;
    uint32_t head;              /* oldest CQE, < depth */
    uint32_t count;
    uint32_t refs;
    bool overflowed;
    enum rnic_cq_armed armed;
    rnic_cq_notify_fn *notify;
    void *opaque;
    rnic_cq_notify_fn *changed;
    void *changed_opaque;
};

struct rnic_cq *rnic_cq_new(uint32_t depth, rnic_cq_notify_fn *notify,
                            void *opaque)
{
    struct rnic_cq *cq;

    if (depth == 0 || depth > RNIC_CQ_MAX_DEPTH) {
        return NULL;
    }
    cq = calloc(1, sizeof(*cq));
    if (!cq) {
        return NULL;
    }
    cq->ring = calloc(depth, sizeof(*cq->ring));
    if (!cq->ring) {
        free(cq);
        return NULL;
    }
    cq->depth = depth;
    cq->notify = notify;
    cq->opaque = opaque;
    return cq;
}

void rnic_cq_set_changed(struct rnic_cq *cq, rnic_cq_notify_fn *changed,
                         void *opaque)
{
    cq->changed = changed;
    cq->changed_opaque = opaque;
}

static void rnic_cq_note_changed(struct rnic_cq *cq)
{
    if (cq->changed) {
        cq->changed(cq->changed_opaque, cq);
    }
}

int rnic_cq_destroy(struct rnic_cq *cq)
{
    if (cq->refs) {
        return -EBUSY;
    }
    free(cq->ring);
    free(cq);
    return 0;
}

void rnic_cq_ref(struct rnic_cq *cq)
{
    cq->refs++;
}

void rnic_cq_unref(struct rnic_cq *cq)
{
    if (cq->refs) {
        cq->refs--;
    }
}

uint32_t rnic_cq_refcount(const struct rnic_cq *cq)
{
    return cq->refs;
}

bool rnic_cq_arm_wants(enum rnic_cq_arm how, const struct rnic_cqe *cqe)
{
    return how == RNIC_CQ_ARM_NEXT || (cqe->flags & RNIC_WC_SOLICITED) ||
           cqe->status != RNIC_WC_SUCCESS;
}

static bool rnic_cq_wants_notify(const struct rnic_cq *cq,
                                 const struct rnic_cqe *cqe)
{
    switch (cq->armed) {
    case RNIC_CQ_ARMED_NEXT:
        return rnic_cq_arm_wants(RNIC_CQ_ARM_NEXT, cqe);
    case RNIC_CQ_ARMED_SOLICITED:
        return rnic_cq_arm_wants(RNIC_CQ_ARM_SOLICITED, cqe);
    default:
        return false;
    }
}

int rnic_cq_push(struct rnic_cq *cq, const struct rnic_cqe *cqe)
{
    if (cq->overflowed) {
        return -EIO;
    }
    if (cq->count == cq->depth) {
        cq->overflowed = true;
        rnic_cq_note_changed(cq);
        return -ENOSPC;
    }
    cq->ring[rnic_ring_slot(cq->head, cq->count, cq->depth)] = *cqe;
    cq->count++;
    if (rnic_cq_wants_notify(cq, cqe)) {
        /* Disarm before calling out: the handler may re-arm. */
        cq->armed = RNIC_CQ_DISARMED;
        if (cq->notify) {
            cq->notify(cq->opaque, cq);
        }
    }
    rnic_cq_note_changed(cq);
    return 0;
}

uint32_t rnic_cq_poll(struct rnic_cq *cq, struct rnic_cqe *out, uint32_t max)
{
    uint32_t n = 0;

    while (n < max && cq->count) {
        out[n++] = cq->ring[cq->head];
        cq->head = rnic_ring_slot(cq->head, 1, cq->depth);
        cq->count--;
    }
    return n;
}

void rnic_cq_arm(struct rnic_cq *cq, enum rnic_cq_arm how)
{
    if (how == RNIC_CQ_ARM_NEXT) {
        cq->armed = RNIC_CQ_ARMED_NEXT;
    } else if (cq->armed == RNIC_CQ_DISARMED) {
        cq->armed = RNIC_CQ_ARMED_SOLICITED;
    }
}

bool rnic_cq_arm_held(struct rnic_cq *cq, enum rnic_cq_arm how)
{
    rnic_cq_arm(cq, how);
    for (uint32_t i = 0; i < cq->count; i++) {
        if (rnic_cq_wants_notify(cq,
                                 &cq->ring[rnic_ring_slot(cq->head, i,
                                                          cq->depth)])) {
            cq->armed = RNIC_CQ_DISARMED;
            return true;
        }
    }
    return false;
}

uint32_t rnic_cq_depth(const struct rnic_cq *cq)
{
    return cq->depth;
}

uint32_t rnic_cq_count(const struct rnic_cq *cq)
{
    return cq->count;
}

bool rnic_cq_overflowed(const struct rnic_cq *cq)
{
    return cq->overflowed;
}

/* Tables indexed by enum value; an out-of-range value prints as "?". */
static const char *rnic_enum_name(const char *const *names, unsigned count,
                                  unsigned value)
{
    return value < count && names[value] ? names[value] : "?";
}

#define RNIC_NAME(table, value) \
    rnic_enum_name(table, sizeof(table) / sizeof(table[0]), (unsigned)(value))

const char *rnic_wr_opcode_str(enum rnic_wr_opcode op)
{
    static const char *const names[RNIC_WR_OPCODE_COUNT] = {
        [RNIC_WR_SEND] = "SEND",
        [RNIC_WR_SEND_INV] = "SEND_INV",
        [RNIC_WR_SEND_SE] = "SEND_SE",
        [RNIC_WR_SEND_SE_INV] = "SEND_SE_INV",
        [RNIC_WR_WRITE] = "WRITE",
        [RNIC_WR_READ] = "READ",
        [RNIC_WR_ATOMIC_FETCH_ADD] = "ATOMIC_FETCH_ADD",
        [RNIC_WR_ATOMIC_CMP_SWAP] = "ATOMIC_CMP_SWAP",
        [RNIC_WR_IMM_DATA] = "IMM_DATA",
        [RNIC_WR_IMM_DATA_SE] = "IMM_DATA_SE",
        [RNIC_WR_LOCAL_INV] = "LOCAL_INV",
        [RNIC_WR_BIND_MW] = "BIND_MW",
        [RNIC_WR_FAST_REG] = "FAST_REG",
        [RNIC_WR_READ_INV] = "READ_INV",
    };

    return RNIC_NAME(names, op);
}

const char *rnic_wc_status_str(enum rnic_wc_status status)
{
    static const char *const names[RNIC_WC_STATUS_COUNT] = {
        [RNIC_WC_SUCCESS] = "SUCCESS",
        [RNIC_WC_LOC_LEN_ERR] = "LOC_LEN_ERR",
        [RNIC_WC_LOC_QP_OP_ERR] = "LOC_QP_OP_ERR",
        [RNIC_WC_LOC_PROT_ERR] = "LOC_PROT_ERR",
        [RNIC_WC_WR_FLUSH_ERR] = "WR_FLUSH_ERR",
        [RNIC_WC_MW_BIND_ERR] = "MW_BIND_ERR",
        [RNIC_WC_BAD_RESP_ERR] = "BAD_RESP_ERR",
        [RNIC_WC_LOC_ACCESS_ERR] = "LOC_ACCESS_ERR",
        [RNIC_WC_REM_INV_REQ_ERR] = "REM_INV_REQ_ERR",
        [RNIC_WC_REM_ACCESS_ERR] = "REM_ACCESS_ERR",
        [RNIC_WC_REM_OP_ERR] = "REM_OP_ERR",
        [RNIC_WC_FATAL_ERR] = "FATAL_ERR",
        [RNIC_WC_GENERAL_ERR] = "GENERAL_ERR",
    };

    return RNIC_NAME(names, status);
}

const char *rnic_wc_opcode_str(enum rnic_wc_opcode op)
{
    static const char *const names[RNIC_WC_OPCODE_COUNT] = {
        [RNIC_WC_SEND] = "SEND",
        [RNIC_WC_WRITE] = "WRITE",
        [RNIC_WC_READ] = "READ",
        [RNIC_WC_ATOMIC_FETCH_ADD] = "ATOMIC_FETCH_ADD",
        [RNIC_WC_ATOMIC_CMP_SWAP] = "ATOMIC_CMP_SWAP",
        [RNIC_WC_IMM_DATA] = "IMM_DATA",
        [RNIC_WC_LOCAL_INV] = "LOCAL_INV",
        [RNIC_WC_BIND_MW] = "BIND_MW",
        [RNIC_WC_RECV] = "RECV",
        [RNIC_WC_FAST_REG] = "FAST_REG",
    };

    return RNIC_NAME(names, op);
}

enum rnic_wc_opcode rnic_wc_opcode_of(enum rnic_wr_opcode op)
{
    static const enum rnic_wc_opcode map[RNIC_WR_OPCODE_COUNT] = {
        [RNIC_WR_SEND] = RNIC_WC_SEND,
        [RNIC_WR_SEND_INV] = RNIC_WC_SEND,
        [RNIC_WR_SEND_SE] = RNIC_WC_SEND,
        [RNIC_WR_SEND_SE_INV] = RNIC_WC_SEND,
        [RNIC_WR_WRITE] = RNIC_WC_WRITE,
        [RNIC_WR_READ] = RNIC_WC_READ,
        [RNIC_WR_ATOMIC_FETCH_ADD] = RNIC_WC_ATOMIC_FETCH_ADD,
        [RNIC_WR_ATOMIC_CMP_SWAP] = RNIC_WC_ATOMIC_CMP_SWAP,
        [RNIC_WR_IMM_DATA] = RNIC_WC_IMM_DATA,
        [RNIC_WR_IMM_DATA_SE] = RNIC_WC_IMM_DATA,
        [RNIC_WR_LOCAL_INV] = RNIC_WC_LOCAL_INV,
        [RNIC_WR_BIND_MW] = RNIC_WC_BIND_MW,
        [RNIC_WR_FAST_REG] = RNIC_WC_FAST_REG,
        [RNIC_WR_READ_INV] = RNIC_WC_READ,
    };

    return (unsigned)op < RNIC_WR_OPCODE_COUNT ? map[op] : RNIC_WC_SEND;
}

const char *rnic_cq_armed_str(const struct rnic_cq *cq)
{
    switch (cq->armed) {
    case RNIC_CQ_ARMED_NEXT:
        return "next";
    case RNIC_CQ_ARMED_SOLICITED:
        return "solicited";
    default:
        return "no";
    }
}

/* ---- migration (save.h) ---- */

void rnic_cq_save(struct rnic_sv *s, const struct rnic_cq *cq)
{
    rnic_sv_u8(s, cq->overflowed);
    rnic_sv_u8(s, cq->armed);
    rnic_sv_u32(s, cq->count);
    for (uint32_t i = 0; i < cq->count; i++) {
        const struct rnic_cqe *e = &cq->ring[rnic_ring_slot(cq->head, i,
                                                            cq->depth)];

        rnic_sv_u64(s, e->wr_id);
        rnic_sv_u8(s, e->status);
        rnic_sv_u8(s, e->opcode);
        rnic_sv_u32(s, e->byte_len);
        rnic_sv_u32(s, e->qpn);
        rnic_sv_u32(s, e->flags);
        rnic_sv_u32(s, e->inval_stag);
        rnic_sv_u32(s, e->imm_data);
    }
}

int rnic_cq_load(struct rnic_ld *l, struct rnic_cq *cq)
{
    cq->overflowed = rnic_ld_u8(l);
    cq->armed = rnic_ld_u8(l);
    cq->count = rnic_ld_count(l, cq->depth);
    cq->head = 0;
    if (cq->armed > RNIC_CQ_ARMED_NEXT) {
        return -EINVAL;
    }
    for (uint32_t i = 0; i < cq->count; i++) {
        struct rnic_cqe *e = &cq->ring[i];

        e->wr_id = rnic_ld_u64(l);
        e->status = rnic_ld_u8(l);
        e->opcode = rnic_ld_u8(l);
        e->byte_len = rnic_ld_u32(l);
        e->qpn = rnic_ld_u32(l);
        e->flags = rnic_ld_u32(l);
        e->inval_stag = rnic_ld_u32(l);
        e->imm_data = rnic_ld_u32(l);
        if (e->status >= RNIC_WC_STATUS_COUNT ||
            e->opcode >= RNIC_WC_OPCODE_COUNT) {
            return -EINVAL;
        }
    }
    return l->failed ? -EINVAL : 0;
}
