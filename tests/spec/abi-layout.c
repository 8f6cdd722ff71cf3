/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The layouts and numbers of include/rnic/rnic-abi.h as the compiler sees
 * them, for tests/spec/check-spec.py to hold docs/spec.md against: one
 * line per structure ("struct NAME SIZE"), per field ("field NAME OFFSET
 * SIZE", offsetof and sizeof, never by hand) and per constant ("const
 * NAME VALUE").  Exits 1 if a structure has bytes no field names: every
 * byte of the ABI is a field the spec can describe.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include "rnic/rnic-abi.h"

struct field {
    const char *name;
    size_t offset, size;
};

#define F(s, f) { #f, offsetof(struct s, f), sizeof(((struct s *)0)->f) }
#define END { NULL, 0, 0 }

static int failed;

static void layout(const char *name, size_t size, const struct field *f)
{
    size_t next = 0;

    printf("struct %s %zu\n", name, size);
    for (; f->name; f++) {
        printf("field %s %zu %zu\n", f->name, f->offset, f->size);
        if (f->offset != next) {
            fprintf(stderr, "%s: bytes %zu..%zu before %s: no field\n",
                    name, next, f->offset, f->name);
            failed = 1;
        }
        next = f->offset + f->size;
    }
    if (next != size) {
        fprintf(stderr, "%s: %zu bytes at the end that no field names\n",
                name, size - next);
        failed = 1;
    }
}

#define LAYOUT(s, ...) \
    layout(#s, sizeof(struct s), (const struct field[]) { __VA_ARGS__, END })

static void commands(void)
{
    LAYOUT(rnic_cmd, F(rnic_cmd, opcode), F(rnic_cmd, flags),
           F(rnic_cmd, status), F(rnic_cmd, cookie), F(rnic_cmd, u));
    LAYOUT(rnic_cmd_query_device, F(rnic_cmd_query_device, attr_addr));
    LAYOUT(rnic_cmd_pd, F(rnic_cmd_pd, pdn));
    LAYOUT(rnic_cmd_reg_mr, F(rnic_cmd_reg_mr, stag), F(rnic_cmd_reg_mr, pdn),
           F(rnic_cmd_reg_mr, access), F(rnic_cmd_reg_mr, npages),
           F(rnic_cmd_reg_mr, iova), F(rnic_cmd_reg_mr, length),
           F(rnic_cmd_reg_mr, pbl_addr), F(rnic_cmd_reg_mr, first_byte_offset),
           F(rnic_cmd_reg_mr, page_shift), F(rnic_cmd_reg_mr, key),
           F(rnic_cmd_reg_mr, policy), F(rnic_cmd_reg_mr, rsvd));
    LAYOUT(rnic_cmd_alloc_mr, F(rnic_cmd_alloc_mr, stag),
           F(rnic_cmd_alloc_mr, pdn), F(rnic_cmd_alloc_mr, max_pages),
           F(rnic_cmd_alloc_mr, key), F(rnic_cmd_alloc_mr, flags),
           F(rnic_cmd_alloc_mr, rsvd));
    LAYOUT(rnic_cmd_stag, F(rnic_cmd_stag, stag));
    LAYOUT(rnic_cmd_alloc_mw, F(rnic_cmd_alloc_mw, stag),
           F(rnic_cmd_alloc_mw, pdn), F(rnic_cmd_alloc_mw, type),
           F(rnic_cmd_alloc_mw, key), F(rnic_cmd_alloc_mw, rsvd));
    LAYOUT(rnic_cmd_bind_mw, F(rnic_cmd_bind_mw, mw_stag),
           F(rnic_cmd_bind_mw, mr_stag), F(rnic_cmd_bind_mw, addr),
           F(rnic_cmd_bind_mw, length), F(rnic_cmd_bind_mw, access),
           F(rnic_cmd_bind_mw, key), F(rnic_cmd_bind_mw, policy),
           F(rnic_cmd_bind_mw, rsvd), F(rnic_cmd_bind_mw, new_stag),
           F(rnic_cmd_bind_mw, rsvd1));
    LAYOUT(rnic_cmd_cq, F(rnic_cmd_cq, cqn), F(rnic_cmd_cq, log_size),
           F(rnic_cmd_cq, msix_vector), F(rnic_cmd_cq, rsvd),
           F(rnic_cmd_cq, ring_addr), F(rnic_cmd_cq, udb),
           F(rnic_cmd_cq, rsvd1));
    LAYOUT(rnic_cmd_qp, F(rnic_cmd_qp, qpn), F(rnic_cmd_qp, pdn),
           F(rnic_cmd_qp, send_cqn), F(rnic_cmd_qp, recv_cqn),
           F(rnic_cmd_qp, srqn), F(rnic_cmd_qp, sq_log_size),
           F(rnic_cmd_qp, rq_log_size), F(rnic_cmd_qp, flags),
           F(rnic_cmd_qp, sq_addr), F(rnic_cmd_qp, rq_addr),
           F(rnic_cmd_qp, udb), F(rnic_cmd_qp, rsvd));
    LAYOUT(rnic_cmd_modify_qp, F(rnic_cmd_modify_qp, qpn),
           F(rnic_cmd_modify_qp, mask), F(rnic_cmd_modify_qp, state),
           F(rnic_cmd_modify_qp, rsvd));
    LAYOUT(rnic_cmd_query_qp, F(rnic_cmd_query_qp, qpn),
           F(rnic_cmd_query_qp, state), F(rnic_cmd_query_qp, term_layer_etype),
           F(rnic_cmd_query_qp, term_ecode),
           F(rnic_cmd_query_qp, term_received), F(rnic_cmd_query_qp, ird),
           F(rnic_cmd_query_qp, ord), F(rnic_cmd_query_qp, conn_id),
           F(rnic_cmd_query_qp, sq_cons), F(rnic_cmd_query_qp, rq_cons));
    LAYOUT(rnic_cmd_srq, F(rnic_cmd_srq, srqn), F(rnic_cmd_srq, pdn),
           F(rnic_cmd_srq, log_size), F(rnic_cmd_srq, rsvd),
           F(rnic_cmd_srq, udb), F(rnic_cmd_srq, ring_addr));
    LAYOUT(rnic_cmd_modify_srq, F(rnic_cmd_modify_srq, srqn),
           F(rnic_cmd_modify_srq, limit));
    LAYOUT(rnic_cmd_listen, F(rnic_cmd_listen, listener_id),
           F(rnic_cmd_listen, backlog), F(rnic_cmd_listen, local));
    LAYOUT(rnic_cmd_connect, F(rnic_cmd_connect, qpn),
           F(rnic_cmd_connect, conn_id), F(rnic_cmd_connect, peer),
           F(rnic_cmd_connect, rsvd), F(rnic_cmd_connect, param),
           F(rnic_cmd_connect, local_addr));
    LAYOUT(rnic_cmd_accept, F(rnic_cmd_accept, conn_id),
           F(rnic_cmd_accept, qpn), F(rnic_cmd_accept, param));
    LAYOUT(rnic_cmd_disconnect, F(rnic_cmd_disconnect, qpn),
           F(rnic_cmd_disconnect, flags));
    LAYOUT(rnic_cmd_query_conn, F(rnic_cmd_query_conn, conn_id),
           F(rnic_cmd_query_conn, rtr), F(rnic_cmd_query_conn, peer_rtr),
           F(rnic_cmd_query_conn, flags), F(rnic_cmd_query_conn, rsvd),
           F(rnic_cmd_query_conn, info_addr),
           F(rnic_cmd_query_conn, qpn), F(rnic_cmd_query_conn, rsvd1));
}

static void shared(void)
{
    LAYOUT(rnic_sockaddr, F(rnic_sockaddr, family), F(rnic_sockaddr, rsvd),
           F(rnic_sockaddr, port), F(rnic_sockaddr, addr));
    LAYOUT(rnic_conn_param, F(rnic_conn_param, ird), F(rnic_conn_param, ord),
           F(rnic_conn_param, pdata_len), F(rnic_conn_param, rtr),
           F(rnic_conn_param, rsvd), F(rnic_conn_param, pdata_addr));
    LAYOUT(rnic_conn_info, F(rnic_conn_info, local), F(rnic_conn_info, peer),
           F(rnic_conn_info, ird), F(rnic_conn_info, ord),
           F(rnic_conn_info, pdata_len), F(rnic_conn_info, mpa_rev),
           F(rnic_conn_info, mpa_crc), F(rnic_conn_info, pdata));
    LAYOUT(rnic_device_attr, F(rnic_device_attr, abi_version),
           F(rnic_device_attr, max_pd), F(rnic_device_attr, max_mr),
           F(rnic_device_attr, max_mw), F(rnic_device_attr, max_cq),
           F(rnic_device_attr, max_cqe), F(rnic_device_attr, max_qp),
           F(rnic_device_attr, max_qp_wr), F(rnic_device_attr, max_srq),
           F(rnic_device_attr, max_srq_wr), F(rnic_device_attr, max_sge),
           F(rnic_device_attr, max_ird), F(rnic_device_attr, max_ord),
           F(rnic_device_attr, max_pdata), F(rnic_device_attr, max_mr_size),
           F(rnic_device_attr, page_size_cap),
           F(rnic_device_attr, msix_vectors), F(rnic_device_attr, mpa_rev),
           F(rnic_device_attr, flags),
           F(rnic_device_attr, max_page_list_bytes),
           F(rnic_device_attr, mpa_rtr), F(rnic_device_attr, mac),
           F(rnic_device_attr, rsvd0),
           F(rnic_device_attr, max_fast_reg_pages),
           F(rnic_device_attr, udb_pages), F(rnic_device_attr, rsvd));
}

static void queues(void)
{
    LAYOUT(rnic_wqe_sge, F(rnic_wqe_sge, addr), F(rnic_wqe_sge, length),
           F(rnic_wqe_sge, stag));
    LAYOUT(rnic_wqe_fast_reg, F(rnic_wqe_fast_reg, pbl_addr),
           F(rnic_wqe_fast_reg, iova), F(rnic_wqe_fast_reg, length),
           F(rnic_wqe_fast_reg, npages), F(rnic_wqe_fast_reg, access),
           F(rnic_wqe_fast_reg, stag),
           F(rnic_wqe_fast_reg, first_byte_offset),
           F(rnic_wqe_fast_reg, page_shift), F(rnic_wqe_fast_reg, rsvd));
    LAYOUT(rnic_sq_wqe, F(rnic_sq_wqe, wr_id), F(rnic_sq_wqe, opcode),
           F(rnic_sq_wqe, flags), F(rnic_sq_wqe, num_sge),
           F(rnic_sq_wqe, rsvd0), F(rnic_sq_wqe, imm_or_stag),
           F(rnic_sq_wqe, remote_stag), F(rnic_sq_wqe, bind_access),
           F(rnic_sq_wqe, remote_addr), F(rnic_sq_wqe, atomic_arg0),
           F(rnic_sq_wqe, atomic_arg1), F(rnic_sq_wqe, rsvd1),
           F(rnic_sq_wqe, sge));   /* FAST_REG's fr is this area too */
    LAYOUT(rnic_rq_wqe, F(rnic_rq_wqe, wr_id), F(rnic_rq_wqe, num_sge),
           F(rnic_rq_wqe, rsvd0), F(rnic_rq_wqe, linked_stag),
           F(rnic_rq_wqe, rsvd1), F(rnic_rq_wqe, sge));
    LAYOUT(rnic_cq_entry, F(rnic_cq_entry, wr_id), F(rnic_cq_entry, byte_len),
           F(rnic_cq_entry, qpn), F(rnic_cq_entry, imm),
           F(rnic_cq_entry, invalidated_stag), F(rnic_cq_entry, status),
           F(rnic_cq_entry, opcode), F(rnic_cq_entry, flags),
           F(rnic_cq_entry, phase), F(rnic_cq_entry, rsvd));
    LAYOUT(rnic_event, F(rnic_event, type), F(rnic_event, rsvd),
           F(rnic_event, phase), F(rnic_event, id), F(rnic_event, arg0),
           F(rnic_event, arg1), F(rnic_event, timestamp_ns),
           F(rnic_event, rsvd1));
}

#define C(name) printf("const %s %llu\n", #name, (unsigned long long)(name))

static void registers(void)
{
    C(RNIC_REG_ID); C(RNIC_REG_VERSION); C(RNIC_REG_SCRATCH);
    C(RNIC_REG_STATUS); C(RNIC_REG_CONTROL);
    C(RNIC_REG_CMDQ_BASE_LO); C(RNIC_REG_CMDQ_BASE_HI);
    C(RNIC_REG_CMDQ_LOG_SIZE); C(RNIC_REG_CMDQ_PROD); C(RNIC_REG_CMDQ_CONS);
    C(RNIC_REG_EQ_BASE_LO); C(RNIC_REG_EQ_BASE_HI); C(RNIC_REG_EQ_LOG_SIZE);
    C(RNIC_REG_EQ_CONS); C(RNIC_REG_EQ_PROD);
    C(RNIC_REG_DB_SQ); C(RNIC_REG_DB_RQ); C(RNIC_REG_DB_CQ);
    C(RNIC_REG_DB_CQ_ARM); C(RNIC_REG_DB_SRQ);
    C(RNIC_ID_MAGIC); C(RNIC_VERSION_VALUE);
}

static void opcodes(void)
{
    C(RNIC_CMD_QUERY_DEVICE); C(RNIC_CMD_CREATE_PD); C(RNIC_CMD_DESTROY_PD);
    C(RNIC_CMD_REG_MR); C(RNIC_CMD_DEREG_MR); C(RNIC_CMD_ALLOC_MW);
    C(RNIC_CMD_BIND_MW); C(RNIC_CMD_DEALLOC_MW); C(RNIC_CMD_CREATE_CQ);
    C(RNIC_CMD_DESTROY_CQ); C(RNIC_CMD_CREATE_QP); C(RNIC_CMD_MODIFY_QP);
    C(RNIC_CMD_QUERY_QP); C(RNIC_CMD_DESTROY_QP); C(RNIC_CMD_CREATE_SRQ);
    C(RNIC_CMD_DESTROY_SRQ); C(RNIC_CMD_LISTEN); C(RNIC_CMD_UNLISTEN);
    C(RNIC_CMD_CONNECT); C(RNIC_CMD_ACCEPT); C(RNIC_CMD_REJECT);
    C(RNIC_CMD_DISCONNECT); C(RNIC_CMD_QUERY_CONN); C(RNIC_CMD_INVALIDATE);
    C(RNIC_CMD_ALLOC_MR); C(RNIC_CMD_MODIFY_SRQ);
}

static void codes(void)
{
    C(RNIC_CMD_OK); C(RNIC_CMD_ERR_OPCODE); C(RNIC_CMD_ERR_PARAM);
    C(RNIC_CMD_ERR_RESOURCE); C(RNIC_CMD_ERR_HANDLE); C(RNIC_CMD_ERR_BUSY);
    C(RNIC_CMD_ERR_STATE); C(RNIC_CMD_ERR_DMA); C(RNIC_CMD_ERR_ACCESS);
    C(RNIC_CMD_ERR_DENIED); C(RNIC_CMD_ERR_ADDRINUSE);
    C(RNIC_CMD_STATUS_PENDING);
    C(RNIC_WQE_SEND); C(RNIC_WQE_SEND_INV); C(RNIC_WQE_WRITE);
    C(RNIC_WQE_READ); C(RNIC_WQE_ATOMIC_FADD); C(RNIC_WQE_ATOMIC_CSWAP);
    C(RNIC_WQE_IMM_DATA); C(RNIC_WQE_LOCAL_INV); C(RNIC_WQE_BIND_MW);
    C(RNIC_WQE_FAST_REG); C(RNIC_WQE_READ_INV); C(RNIC_WQE_RECV);
    C(RNIC_ACC_LOCAL_READ); C(RNIC_ACC_LOCAL_WRITE); C(RNIC_ACC_REMOTE_READ);
    C(RNIC_ACC_REMOTE_WRITE); C(RNIC_ACC_REMOTE_ATOMIC); C(RNIC_ACC_MW_BIND);
    C(RNIC_ACC_ALL);
    C(RNIC_CQE_SUCCESS); C(RNIC_CQE_LOC_LEN_ERR); C(RNIC_CQE_LOC_QP_OP_ERR);
    C(RNIC_CQE_LOC_PROT_ERR); C(RNIC_CQE_WR_FLUSH_ERR);
    C(RNIC_CQE_MW_BIND_ERR); C(RNIC_CQE_LOC_ACCESS_ERR);
    C(RNIC_CQE_REM_INV_REQ_ERR); C(RNIC_CQE_REM_ACCESS_ERR);
    C(RNIC_CQE_REM_OP_ERR); C(RNIC_CQE_BAD_RESP_ERR); C(RNIC_CQE_FATAL_ERR);
    C(RNIC_CQE_GENERAL_ERR);
    C(RNIC_EV_CONN_REQUEST); C(RNIC_EV_CONN_ESTABLISHED);
    C(RNIC_EV_CONN_REJECTED); C(RNIC_EV_CONN_ERROR); C(RNIC_EV_CONN_CLOSED);
    C(RNIC_EV_QP_ERROR); C(RNIC_EV_TERM_RECEIVED); C(RNIC_EV_TERM_SENT);
    C(RNIC_EV_CQ_OVERFLOW); C(RNIC_EV_FATAL); C(RNIC_EV_SRQ_LIMIT);
}

int main(void)
{
    commands();
    shared();
    queues();
    registers();
    opcodes();
    codes();
    return failed;
}
