// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Direct mode's posting (rnic-ib-uapi.h).  A direct QP's rings are mapped
 * from the kernel driver, and posts do here what the driver's own
 * post_send and post_recv do (guest-driver/linux/rnic_ib_qp.c), so that
 * the device sees the same WQEs either way: a WQE's wr_id is the queue's
 * free-running producer index, the user's wr_id waits in a per-slot array
 * until the CQE comes back (rnic_cq.c), and the room left is what the
 * last completion says has drained.  One doorbell, through the context's
 * page, for each batch.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <util/udma_barrier.h>
#include "librnic.h"

struct rnic_qp *rnic_qp_find(struct rnic_context *ctx, uint32_t qpn)
{
	struct rnic_qp **blk;

	if (qpn >= RNIC_QP_TBL * RNIC_QP_TBL)
		return NULL;
	blk = __atomic_load_n(&ctx->qp_tbl[qpn / RNIC_QP_TBL],
			      __ATOMIC_ACQUIRE);
	return blk ? __atomic_load_n(&blk[qpn % RNIC_QP_TBL],
				     __ATOMIC_ACQUIRE) : NULL;
}

static int rnic_qp_add(struct rnic_context *ctx, struct rnic_qp *qp)
{
	uint32_t qpn = qp->vqp.qp.qp_num;
	struct rnic_qp **blk;

	if (qpn >= RNIC_QP_TBL * RNIC_QP_TBL)
		return EINVAL;
	pthread_mutex_lock(&ctx->qp_lock);
	blk = ctx->qp_tbl[qpn / RNIC_QP_TBL];
	if (!blk) {
		blk = calloc(RNIC_QP_TBL, sizeof(*blk));
		__atomic_store_n(&ctx->qp_tbl[qpn / RNIC_QP_TBL], blk,
				 __ATOMIC_RELEASE);
	}
	if (blk)
		__atomic_store_n(&blk[qpn % RNIC_QP_TBL], qp,
				 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->qp_lock);
	return blk ? 0 : ENOMEM;
}

static int rnic_wq_map(struct ibv_context *ctx, struct rnic_wq *wq,
		       uint64_t key, uint32_t len, uint32_t log_size)
{
	void *p;

	wq->log_size = log_size;
	wq->wr_id = calloc(1u << log_size, sizeof(*wq->wr_id));
	if (!wq->wr_id)
		return ENOMEM;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
		 key);
	if (p == MAP_FAILED)
		return errno;
	wq->ring = p;
	wq->len = len;
	return 0;
}

/*
 * The kernel made the QP direct: without its rings it cannot be used at
 * all (the kernel refuses its posts), so a failure here fails the create.
 * The table entry comes last, when nothing can fail any more.
 */
int rnic_qp_direct_init(struct rnic_qp *qp,
			const struct rnic_ib_create_qp_resp *resp,
			bool sig_all)
{
	struct ibv_context *ctx = qp->vqp.qp.context;
	int ret;

	pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	qp->direct = true;
	qp->sig_all = sig_all;
	ret = rnic_wq_map(ctx, &qp->sq, resp->sq_key, resp->sq_len,
			  resp->sq_log_size);
	if (!ret && !qp->srq)
		ret = rnic_wq_map(ctx, &qp->rq, resp->rq_key, resp->rq_len,
				  resp->rq_log_size);
	if (!ret)
		ret = rnic_qp_add(to_rctx(ctx), qp);
	return ret;
}

/*
 * After DESTROY_QP.  The entry goes only if it is still this QP's: the
 * kernel may already have given the number to a new QP.  Then, as the
 * kernel driver does, wait out a poll that found the QP just before.
 */
void rnic_qp_direct_forget(struct rnic_qp *qp)
{
	struct rnic_context *ctx = to_rctx(qp->vqp.qp.context);
	uint32_t qpn = qp->vqp.qp.qp_num;
	struct rnic_qp **blk;

	pthread_mutex_lock(&ctx->qp_lock);
	blk = ctx->qp_tbl[qpn / RNIC_QP_TBL];
	if (blk[qpn % RNIC_QP_TBL] == qp)
		__atomic_store_n(&blk[qpn % RNIC_QP_TBL], NULL,
				 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->qp_lock);
	rnic_cq_sync(qp->vqp.qp.send_cq);
	rnic_cq_sync(qp->vqp.qp.recv_cq);
}

static void rnic_wq_free(struct rnic_wq *wq)
{
	if (wq->ring)
		munmap(wq->ring, wq->len);
	free(wq->wr_id);
	pthread_spin_destroy(&wq->lock);
}

void rnic_qp_direct_free(struct rnic_qp *qp)
{
	rnic_wq_free(&qp->sq);
	rnic_wq_free(&qp->rq);
}

/* IBV_SEND_INLINE: the payload goes into the WQE's SGE area. */
static int rnic_inline(const struct ibv_send_wr *wr, struct rnic_sq_wqe *w)
{
	uint8_t *dst = (uint8_t *)w->sge;
	uint32_t len = 0;
	int i;

	if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_INV &&
	    wr->opcode != IBV_WR_RDMA_WRITE &&
	    wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM)
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		const struct ibv_sge *sge = &wr->sg_list[i];

		if (sge->length > RNIC_WQE_INLINE_MAX - len)
			return EINVAL;
		memcpy(dst + len, (void *)(uintptr_t)sge->addr, sge->length);
		len += sge->length;
	}
	w->flags |= RNIC_WQE_FLAG_INLINE;
	w->num_sge = len;
	return 0;
}

/*
 * The opcode and its operands.  An RDMA Write with immediate is a Write
 * here and an Immediate Data WQE after it (rnic_sq_imm).  No Send with
 * immediate (iWARP has none), no fast registration (kernel QPs only).
 */
static int rnic_sq_op(const struct ibv_send_wr *wr, struct rnic_sq_wqe *w)
{
	switch (wr->opcode) {
	case IBV_WR_BIND_MW:
		return rnic_bind_wqe(wr, w);
	case IBV_WR_SEND:
		w->opcode = RNIC_WQE_SEND;
		break;
	case IBV_WR_SEND_WITH_INV:
		w->opcode = RNIC_WQE_SEND_INV;
		w->imm_or_stag = htole32(wr->invalidate_rkey);
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		w->opcode = wr->opcode == IBV_WR_RDMA_READ ?
			    RNIC_WQE_READ : RNIC_WQE_WRITE;
		w->remote_addr = htole64(wr->wr.rdma.remote_addr);
		w->remote_stag = htole32(wr->wr.rdma.rkey);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		w->opcode = wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
			    RNIC_WQE_ATOMIC_CSWAP : RNIC_WQE_ATOMIC_FADD;
		w->remote_addr = htole64(wr->wr.atomic.remote_addr);
		w->remote_stag = htole32(wr->wr.atomic.rkey);
		w->atomic_arg0 = htole64(wr->wr.atomic.compare_add);
		w->atomic_arg1 = htole64(wr->wr.atomic.swap);
		break;
	case IBV_WR_LOCAL_INV:
		w->opcode = RNIC_WQE_LOCAL_INV;
		w->imm_or_stag = htole32(wr->invalidate_rkey);
		break;
	default:
		return EINVAL;
	}
	return 0;
}

/* One ibv_send_wr as a device WQE; its wr_id is filled in by the caller. */
static int rnic_sq_wqe(const struct rnic_qp *qp, const struct ibv_send_wr *wr,
		       struct rnic_sq_wqe *w)
{
	int i;

	if ((unsigned int)wr->num_sge > RNIC_WQE_MAX_SGE)
		return EINVAL;
	memset(w, 0, sizeof(*w));
	if (rnic_sq_op(wr, w))
		return EINVAL;
	if (qp->sig_all || (wr->send_flags & IBV_SEND_SIGNALED))
		w->flags |= RNIC_WQE_FLAG_SIGNALED;
	if (wr->send_flags & IBV_SEND_SOLICITED)
		w->flags |= RNIC_WQE_FLAG_SOLICITED;
	if (wr->send_flags & IBV_SEND_FENCE)
		w->flags |= RNIC_WQE_FLAG_FENCE;
	if (w->opcode == RNIC_WQE_BIND_MW)
		return 0;
	if (wr->send_flags & IBV_SEND_INLINE)
		return rnic_inline(wr, w);
	w->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		w->sge[i].addr = htole64(wr->sg_list[i].addr);
		w->sge[i].length = htole32(wr->sg_list[i].length);
		w->sge[i].stag = htole32(wr->sg_list[i].lkey);
	}
	return 0;
}

/* Room for @n more WQEs: the slots from prod on have completed. */
static bool rnic_wq_room(const struct rnic_wq *wq, uint32_t n)
{
	uint32_t mask = (1u << wq->log_size) - 1;

	return wq->prod + n - 1 -
	       __atomic_load_n(&wq->done, __ATOMIC_ACQUIRE) <= mask;
}

/*
 * An RDMA Write with immediate's second WQE: RFC 7306's Immediate Data,
 * which takes one receive at the peer as the verbs' immediate does.  It
 * carries the WR's completion; the Write before it keeps only its fence.
 */
static void rnic_sq_imm(const struct ibv_send_wr *wr, struct rnic_sq_wqe *write,
			struct rnic_sq_wqe *imm)
{
	uint8_t done = RNIC_WQE_FLAG_SIGNALED | RNIC_WQE_FLAG_SOLICITED;

	memset(imm, 0, sizeof(*imm));
	imm->opcode = RNIC_WQE_IMM_DATA;
	imm->flags = write->flags & done;
	imm->imm_or_stag = htole32(be32toh(wr->imm_data));
	write->flags &= ~done;
}

/*
 * The batch's WQEs reach memory before the doorbell does; under the lock,
 * so that doorbells carry growing indexes.
 */
static void rnic_wq_ring(struct rnic_qp *qp, struct rnic_wq *wq,
			 uint32_t reg, uint32_t start)
{
	if (wq->prod == start)
		return;
	udma_to_device_barrier();
	rnic_doorbell(to_rctx(qp->vqp.qp.context), reg, qp->vqp.qp.qp_num,
		      wq->prod);
}

/* Each WQE is built in its slot: the device reads no slot past prod. */
int rnic_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad)
{
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_wq *sq = &qp->sq;
	struct rnic_sq_wqe *w;
	uint32_t mask, start;
	int err = 0;

	if (!qp->direct)
		return ibv_cmd_post_send(ibqp, wr, bad);
	mask = (1u << sq->log_size) - 1;
	pthread_spin_lock(&sq->lock);
	start = sq->prod;
	for (; wr; wr = wr->next) {
		uint32_t n = wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ? 2 : 1;

		if (!rnic_wq_room(sq, n)) {
			err = ENOMEM;
			break;
		}
		w = (struct rnic_sq_wqe *)sq->ring + (sq->prod & mask);
		err = rnic_sq_wqe(qp, wr, w);
		if (err)
			break;
		if (n == 2)
			rnic_sq_imm(wr, w, (struct rnic_sq_wqe *)sq->ring +
					   ((sq->prod + 1) & mask));
		while (n--) {
			w = (struct rnic_sq_wqe *)sq->ring + (sq->prod & mask);
			w->wr_id = htole64(sq->prod);
			sq->wr_id[sq->prod & mask] = wr->wr_id;
			sq->prod++;
		}
	}
	rnic_wq_ring(qp, sq, RNIC_REG_DB_SQ, start);
	pthread_spin_unlock(&sq->lock);
	if (err)
		*bad = wr;
	return err;
}

/* A receive WQE (RQ or SRQ) whose wr_id is @tag; @linked: 0 or an STag. */
void rnic_rq_wqe(const struct ibv_recv_wr *wr, struct rnic_rq_wqe *w,
		 uint32_t tag, uint32_t linked)
{
	int i;

	memset(w, 0, sizeof(*w));
	w->wr_id = htole64(tag);
	w->linked_stag = htole32(linked);
	w->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		w->sge[i].addr = htole64(wr->sg_list[i].addr);
		w->sge[i].length = htole32(wr->sg_list[i].length);
		w->sge[i].stag = htole32(wr->sg_list[i].lkey);
	}
}

/* Receives whose use invalidates STag @linked (0: none). */
int rnic_post_recv_link(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad, uint32_t linked)
{
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_wq *rq = &qp->rq;
	struct rnic_rq_wqe *w;
	uint32_t mask, start;
	int err = 0;

	if (!qp->direct && !linked)
		return ibv_cmd_post_recv(ibqp, wr, bad);
	if (!qp->direct) {
		*bad = wr;
		return EOPNOTSUPP;	/* the kernel's post_recv has no link */
	}
	if (qp->srq) {
		*bad = wr;
		return EINVAL;		/* its receives are the SRQ's */
	}
	mask = (1u << rq->log_size) - 1;
	pthread_spin_lock(&rq->lock);
	start = rq->prod;
	for (; wr; wr = wr->next) {
		if ((unsigned int)wr->num_sge > RNIC_WQE_MAX_SGE) {
			err = EINVAL;
			break;
		}
		if (!rnic_wq_room(rq, 1)) {
			err = ENOMEM;
			break;
		}
		w = (struct rnic_rq_wqe *)rq->ring + (rq->prod & mask);
		rnic_rq_wqe(wr, w, rq->prod, linked);
		rq->wr_id[rq->prod & mask] = wr->wr_id;
		rq->prod++;
	}
	rnic_wq_ring(qp, rq, RNIC_REG_DB_RQ, start);
	pthread_spin_unlock(&rq->lock);
	if (err)
		*bad = wr;
	return err;
}

int rnic_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad)
{
	return rnic_post_recv_link(ibqp, wr, bad, 0);
}
