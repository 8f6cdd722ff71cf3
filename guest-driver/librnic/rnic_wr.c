// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The ibv_wr_* send API (create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
 * Debian's perftest uses it only on a few vendors' devices, not on rnic;
 * tests/e2e/verbs-abi-check.c checks a QP offers it).  The WRs of one
 * wr_start..wr_complete batch are built as an ibv_send_wr list in the QP
 * and go to post_send at wr_complete, as one post (into the rings in
 * direct mode, else to the kernel); an error in building one (too many
 * WRs or SGEs, too much inline data) is reported there and nothing of the
 * batch is posted.
 */
#include <errno.h>
#include <string.h>
#include "librnic.h"

#define RNIC_SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV | \
		       IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ | \
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |                   \
		       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |                    \
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |                  \
		       IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)

int rnic_wr_check(uint64_t send_ops_flags)
{
	return send_ops_flags & ~(uint64_t)RNIC_SEND_OPS ? EOPNOTSUPP : 0;
}

/* The next WR of the batch, its opcode and the QP's wr_id and flags set. */
static struct ibv_send_wr *rnic_wr_next(struct ibv_qp_ex *qpx,
					enum ibv_wr_opcode opcode)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);
	struct ibv_send_wr *wr;

	if (qp->err)
		return NULL;
	if (qp->n == qp->cap) {
		qp->err = ENOMEM;
		return NULL;
	}
	wr = &qp->wrs[qp->n];
	memset(wr, 0, sizeof(*wr));
	wr->sg_list = &qp->sges[qp->n * RNIC_WQE_MAX_SGE];
	wr->opcode = opcode;
	wr->wr_id = qpx->wr_id;
	wr->send_flags = qpx->wr_flags;
	qp->n++;
	return wr;
}

/* The WR the setters apply to: the last one started. */
static struct ibv_send_wr *rnic_wr_cur(struct ibv_qp_ex *qpx)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);

	return qp->err || !qp->n ? NULL : &qp->wrs[qp->n - 1];
}

static void rnic_wr_send(struct ibv_qp_ex *qpx)
{
	rnic_wr_next(qpx, IBV_WR_SEND);
}

static void rnic_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct ibv_send_wr *wr = rnic_wr_next(qpx, IBV_WR_SEND_WITH_INV);

	if (wr)
		wr->invalidate_rkey = rkey;
}

static void rnic_wr_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
			 uint32_t rkey, uint64_t addr)
{
	struct ibv_send_wr *wr = rnic_wr_next(qpx, op);

	if (wr) {
		wr->wr.rdma.rkey = rkey;
		wr->wr.rdma.remote_addr = addr;
	}
}

static void rnic_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t addr)
{
	rnic_wr_rdma(qpx, IBV_WR_RDMA_WRITE, rkey, addr);
}

static void rnic_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				   uint64_t addr, __be32 imm)
{
	rnic_wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr);
	if (rnic_wr_cur(qpx))
		rnic_wr_cur(qpx)->imm_data = imm;
}

static void rnic_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t addr)
{
	rnic_wr_rdma(qpx, IBV_WR_RDMA_READ, rkey, addr);
}

static void rnic_wr_atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
			   uint32_t rkey, uint64_t addr, uint64_t compare_add,
			   uint64_t swap)
{
	struct ibv_send_wr *wr = rnic_wr_next(qpx, op);

	if (wr) {
		wr->wr.atomic.rkey = rkey;
		wr->wr.atomic.remote_addr = addr;
		wr->wr.atomic.compare_add = compare_add;
		wr->wr.atomic.swap = swap;
	}
}

static void rnic_wr_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
			    uint64_t addr, uint64_t compare, uint64_t swap)
{
	rnic_wr_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare,
		       swap);
}

static void rnic_wr_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t addr, uint64_t add)
{
	rnic_wr_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static void rnic_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct ibv_send_wr *wr = rnic_wr_next(qpx, IBV_WR_LOCAL_INV);

	if (wr)
		wr->invalidate_rkey = rkey;
}

static void rnic_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			    uint32_t rkey,
			    const struct ibv_mw_bind_info *bind_info)
{
	struct ibv_send_wr *wr = rnic_wr_next(qpx, IBV_WR_BIND_MW);

	if (wr) {
		wr->bind_mw.mw = mw;
		wr->bind_mw.rkey = rkey;
		wr->bind_mw.bind_info = *bind_info;
	}
}

static void rnic_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num,
				 const struct ibv_sge *list)
{
	struct ibv_send_wr *wr = rnic_wr_cur(qpx);

	if (!wr)
		return;
	if (num > RNIC_WQE_MAX_SGE) {
		qpx_to_rqp(qpx)->err = EINVAL;
		return;
	}
	memcpy(wr->sg_list, list, num * sizeof(*list));
	wr->num_sge = num;
}

static void rnic_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			    uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	rnic_wr_set_sge_list(qpx, 1, &sge);
}

/*
 * Inline data: the caller may reuse its buffer on return, but the batch
 * is posted only at wr_complete, so the bytes wait in the WR's own
 * RNIC_WQE_INLINE_MAX-byte slot; post_send copies them into the WQE
 * (IBV_SEND_INLINE).
 */
static void rnic_wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num,
					 const struct ibv_data_buf *list)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);
	struct ibv_send_wr *wr = rnic_wr_cur(qpx);
	uint8_t *slot;
	size_t i, len = 0;

	if (!wr)
		return;
	slot = qp->inl + (size_t)(qp->n - 1) * RNIC_WQE_INLINE_MAX;
	for (i = 0; i < num; i++) {
		if (list[i].length > RNIC_WQE_INLINE_MAX - len) {
			qp->err = EINVAL;
			return;
		}
		memcpy(slot + len, list[i].addr, list[i].length);
		len += list[i].length;
	}
	wr->sg_list[0].addr = (uintptr_t)slot;
	wr->sg_list[0].length = len;
	wr->sg_list[0].lkey = 0;
	wr->num_sge = 1;
	wr->send_flags |= IBV_SEND_INLINE;
}

static void rnic_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				    size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	rnic_wr_set_inline_data_list(qpx, 1, &buf);
}

static void rnic_wr_start(struct ibv_qp_ex *qpx)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);

	qp->n = 0;
	qp->err = 0;
}

static int rnic_wr_complete(struct ibv_qp_ex *qpx)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);
	struct ibv_send_wr *bad;
	uint32_t i;
	int err = qp->err;

	if (!err && qp->n) {
		for (i = 0; i + 1 < qp->n; i++)
			qp->wrs[i].next = &qp->wrs[i + 1];
		qp->wrs[qp->n - 1].next = NULL;
		err = rnic_post_send(&qp->vqp.qp, qp->wrs, &bad);
	}
	qp->n = 0;
	qp->err = 0;
	return err;
}

static void rnic_wr_abort(struct ibv_qp_ex *qpx)
{
	rnic_wr_start(qpx);
}

void rnic_wr_init(struct rnic_qp *qp, uint64_t flags)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;

	if (flags & IBV_QP_EX_WITH_SEND)
		qpx->wr_send = rnic_wr_send;
	if (flags & IBV_QP_EX_WITH_SEND_WITH_INV)
		qpx->wr_send_inv = rnic_wr_send_inv;
	if (flags & IBV_QP_EX_WITH_RDMA_WRITE)
		qpx->wr_rdma_write = rnic_wr_rdma_write;
	if (flags & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		qpx->wr_rdma_write_imm = rnic_wr_rdma_write_imm;
	if (flags & IBV_QP_EX_WITH_RDMA_READ)
		qpx->wr_rdma_read = rnic_wr_rdma_read;
	if (flags & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		qpx->wr_atomic_cmp_swp = rnic_wr_cmp_swp;
	if (flags & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		qpx->wr_atomic_fetch_add = rnic_wr_fetch_add;
	if (flags & IBV_QP_EX_WITH_LOCAL_INV)
		qpx->wr_local_inv = rnic_wr_local_inv;
	if (flags & IBV_QP_EX_WITH_BIND_MW)
		qpx->wr_bind_mw = rnic_wr_bind_mw;
	qpx->wr_set_sge = rnic_wr_set_sge;
	qpx->wr_set_sge_list = rnic_wr_set_sge_list;
	qpx->wr_set_inline_data = rnic_wr_set_inline_data;
	qpx->wr_set_inline_data_list = rnic_wr_set_inline_data_list;
	qpx->wr_start = rnic_wr_start;
	qpx->wr_complete = rnic_wr_complete;
	qpx->wr_abort = rnic_wr_abort;
}
