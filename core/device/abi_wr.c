/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Guest queue entries to core work requests and back: see abi_wr.h. */
#include <endian.h>
#include <string.h>
#include "abi_wr.h"

#define N_ELEM(a) (sizeof(a) / sizeof((a)[0]))

static const uint8_t cqe_status_of_core[RNIC_WC_STATUS_COUNT] = {
    [RNIC_WC_SUCCESS] = RNIC_CQE_SUCCESS,
    [RNIC_WC_LOC_LEN_ERR] = RNIC_CQE_LOC_LEN_ERR,
    [RNIC_WC_LOC_QP_OP_ERR] = RNIC_CQE_LOC_QP_OP_ERR,
    [RNIC_WC_LOC_PROT_ERR] = RNIC_CQE_LOC_PROT_ERR,
    [RNIC_WC_WR_FLUSH_ERR] = RNIC_CQE_WR_FLUSH_ERR,
    [RNIC_WC_MW_BIND_ERR] = RNIC_CQE_MW_BIND_ERR,
    [RNIC_WC_BAD_RESP_ERR] = RNIC_CQE_BAD_RESP_ERR,
    [RNIC_WC_LOC_ACCESS_ERR] = RNIC_CQE_LOC_ACCESS_ERR,
    [RNIC_WC_REM_INV_REQ_ERR] = RNIC_CQE_REM_INV_REQ_ERR,
    [RNIC_WC_REM_ACCESS_ERR] = RNIC_CQE_REM_ACCESS_ERR,
    [RNIC_WC_REM_OP_ERR] = RNIC_CQE_REM_OP_ERR,
    [RNIC_WC_FATAL_ERR] = RNIC_CQE_FATAL_ERR,
    [RNIC_WC_GENERAL_ERR] = RNIC_CQE_GENERAL_ERR,
};

static const uint8_t cqe_opcode_of_core[RNIC_WC_OPCODE_COUNT] = {
    [RNIC_WC_SEND] = RNIC_WQE_SEND,
    [RNIC_WC_WRITE] = RNIC_WQE_WRITE,
    [RNIC_WC_READ] = RNIC_WQE_READ,
    [RNIC_WC_ATOMIC_FETCH_ADD] = RNIC_WQE_ATOMIC_FADD,
    [RNIC_WC_ATOMIC_CMP_SWAP] = RNIC_WQE_ATOMIC_CSWAP,
    [RNIC_WC_IMM_DATA] = RNIC_WQE_IMM_DATA,
    [RNIC_WC_LOCAL_INV] = RNIC_WQE_LOCAL_INV,
    [RNIC_WC_BIND_MW] = RNIC_WQE_BIND_MW,
    [RNIC_WC_RECV] = RNIC_WQE_RECV,
    [RNIC_WC_FAST_REG] = RNIC_WQE_FAST_REG,
};

/* Zero is RNIC_WR_SEND for RNIC_WQE_SEND only; other zeros are holes. */
static const int8_t wr_opcode_of_abi[] = {
    [RNIC_WQE_SEND] = RNIC_WR_SEND,
    [RNIC_WQE_SEND_INV] = RNIC_WR_SEND_INV,
    [RNIC_WQE_WRITE] = RNIC_WR_WRITE,
    [RNIC_WQE_READ] = RNIC_WR_READ,
    [RNIC_WQE_ATOMIC_FADD] = RNIC_WR_ATOMIC_FETCH_ADD,
    [RNIC_WQE_ATOMIC_CSWAP] = RNIC_WR_ATOMIC_CMP_SWAP,
    [RNIC_WQE_IMM_DATA] = RNIC_WR_IMM_DATA,
    [RNIC_WQE_LOCAL_INV] = RNIC_WR_LOCAL_INV,
    [RNIC_WQE_BIND_MW] = RNIC_WR_BIND_MW,
    [RNIC_WQE_FAST_REG] = RNIC_WR_FAST_REG,
    [RNIC_WQE_READ_INV] = RNIC_WR_READ_INV,
};

void rnic_abi_cqe(const struct rnic_cqe *c, uint8_t phase,
                  struct rnic_cq_entry *e)
{
    uint8_t flags = 0;

    flags |= c->flags & RNIC_WC_WITH_INV ? RNIC_CQE_FLAG_WITH_INV : 0;
    flags |= c->flags & RNIC_WC_WITH_IMM ? RNIC_CQE_FLAG_WITH_IMM : 0;
    flags |= c->flags & RNIC_WC_SOLICITED ? RNIC_CQE_FLAG_SOLICITED : 0;
    *e = (struct rnic_cq_entry) {
        .wr_id = htole64(c->wr_id),
        .byte_len = htole32(c->byte_len),
        .qpn = htole32(c->qpn),
        .imm = htole32(c->imm_data),
        .invalidated_stag = htole32(c->inval_stag),
        .status = c->status < N_ELEM(cqe_status_of_core) ?
                  cqe_status_of_core[c->status] : RNIC_CQE_GENERAL_ERR,
        .opcode = c->opcode < N_ELEM(cqe_opcode_of_core) ?
                  cqe_opcode_of_core[c->opcode] : 0,
        .flags = flags,
        .phase = phase,
    };
}

static void sges_of_abi(const struct rnic_wqe_sge *in, uint32_t n,
                        struct rnic_sge *out)
{
    for (uint32_t i = 0; i < n; i++) {
        out[i] = (struct rnic_sge) {
            .stag = le32toh(in[i].stag),
            .to = le64toh(in[i].addr),
            .length = le32toh(in[i].length),
        };
    }
}

static void fast_reg_of_abi(const struct rnic_wqe_fast_reg *in,
                            struct rnic_fast_reg_params *out)
{
    *out = (struct rnic_fast_reg_params) {
        .pbl_addr = le64toh(in->pbl_addr),
        .iova = le64toh(in->iova),
        .length = le64toh(in->length),
        .npages = le32toh(in->npages),
        .access = le32toh(in->access),
        .stag = le32toh(in->stag),
        .first_byte_offset = le32toh(in->first_byte_offset),
        .page_shift = in->page_shift,
    };
}

static bool opcode_ok(uint8_t op)
{
    return op < N_ELEM(wr_opcode_of_abi) &&
           (op == RNIC_WQE_SEND || wr_opcode_of_abi[op]);
}

/* The payload: inline bytes, or SGEs. */
static const char *send_payload(const struct rnic_sq_wqe *w,
                                struct rnic_send_wr *wr)
{
    if (w->flags & RNIC_WQE_FLAG_INLINE) {
        if (w->num_sge > RNIC_WQE_INLINE_MAX) {
            return "inline data longer than the entry holds";
        }
        wr->inline_len = w->num_sge;
        memcpy(wr->inline_data, w->sge, w->num_sge);
        return NULL;
    }
    if (w->num_sge > RNIC_WQE_MAX_SGE) {
        return "too many SGEs";
    }
    wr->num_sge = w->num_sge;
    sges_of_abi(w->sge, w->num_sge, wr->sge);
    return NULL;
}

const char *rnic_abi_send_wr(const struct rnic_sq_wqe *w,
                             struct rnic_send_wr *wr)
{
    uint8_t flags = w->flags;
    const char *why;

    memset(wr, 0, sizeof(*wr));
    wr->wr_id = le64toh(w->wr_id);
    if (!opcode_ok(w->opcode)) {
        return "unknown opcode";
    }
    if (flags & ~0x0f) {
        return "unknown flags";
    }
    wr->opcode = wr_opcode_of_abi[w->opcode];
    wr->flags = (flags & RNIC_WQE_FLAG_SIGNALED ? RNIC_WR_SIGNALED : 0) |
                (flags & RNIC_WQE_FLAG_SOLICITED ? RNIC_WR_SOLICITED : 0) |
                (flags & RNIC_WQE_FLAG_FENCE ? RNIC_WR_FENCE : 0) |
                (flags & RNIC_WQE_FLAG_INLINE ? RNIC_WR_INLINE : 0);
    why = send_payload(w, wr);
    if (why) {
        return why;
    }
    wr->remote_stag = le32toh(w->remote_stag);
    wr->remote_to = le64toh(w->remote_addr);
    wr->invalidate_stag = le32toh(w->imm_or_stag);
    wr->imm_data = le32toh(w->imm_or_stag);
    wr->atomic_add_or_compare = le64toh(w->atomic_arg0);
    wr->atomic_swap = le64toh(w->atomic_arg1);
    if (wr->opcode == RNIC_WR_BIND_MW) {
        wr->bind = (struct rnic_bind_params) {
            .mw_stag = wr->remote_stag,
            .mr_stag = le32toh(w->sge[0].stag),
            .to = le64toh(w->sge[0].addr),
            .length = le32toh(w->sge[0].length),
            .access = le32toh(w->bind_access) & 0xffffff,
            .key = le32toh(w->bind_access) >> 24,
        };
        wr->num_sge = 0;
    }
    if (wr->opcode == RNIC_WR_FAST_REG) {
        fast_reg_of_abi(&w->fr, &wr->fast_reg);
        wr->num_sge = 0;
    }
    return NULL;
}

const char *rnic_abi_recv_wr(const struct rnic_rq_wqe *w,
                             struct rnic_recv_wr *wr)
{
    memset(wr, 0, sizeof(*wr));
    wr->wr_id = le64toh(w->wr_id);
    if (w->num_sge > RNIC_WQE_MAX_SGE) {
        return "too many SGEs";
    }
    wr->num_sge = w->num_sge;
    sges_of_abi(w->sge, w->num_sge, wr->sge);
    return NULL;
}
