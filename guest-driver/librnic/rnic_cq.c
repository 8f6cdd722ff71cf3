// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * CQs.  The kernel driver offers each CQ's ring, followed by a page whose
 * first word is the count of entries consumed (rnic-ib-uapi.h).
 *
 * A direct CQ is polled here as the kernel driver polls its own (guest-
 * driver/linux/rnic_ib_cq.c): the same translation of CQEs, the user's
 * wr_id from the QP's per-slot array (rnic_qp.c), the QP's queue drained
 * up to the CQE's index.  The count goes into the page after each poll
 * for the kernel, which reads it to arm the CQ; the device hears of it
 * through the doorbell page only every half ring, since it needs it only
 * to know the ring has room (for a CQE to wait while the ring looks
 * empty, a whole ring must have been consumed since it last heard, so it
 * heard at the half).
 *
 * Otherwise the ring is read-only, and a poll first looks at the entry
 * after the kernel's count itself: the POLL_CQ system call, which
 * consumes and translates entries, is made only once the device has
 * written one (a busy poll of an empty CQ made one per look).
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <ccan/array_size.h>
#include <util/udma_barrier.h>
#include "rnic.h"

struct rnic_cq {
	struct ibv_cq ibcq;
	pthread_spinlock_t lock;	/* direct: the consumer */
	uint8_t *ring;			/* NULL: every poll is a system call */
	uint32_t *ucons;		/* the page after the ring */
	size_t map_len;
	uint32_t log_size;
	uint32_t cqn;
	bool direct;
	uint32_t cons, db_cons;		/* direct: consumed; told the device */
};

static struct rnic_cq *to_rcq(struct ibv_cq *cq)
{
	return container_of(cq, struct rnic_cq, ibcq);
}

/* The ring and its page, writable for a direct CQ. */
static int rnic_cq_map(struct ibv_context *ctx, struct rnic_cq *cq,
		       const struct rnic_ib_create_cq_resp *resp)
{
	long page = sysconf(_SC_PAGESIZE);
	int prot = cq->direct ? PROT_READ | PROT_WRITE : PROT_READ;
	void *p;

	if (resp->mmap_len <= page)
		return EPROTO;
	p = mmap(NULL, resp->mmap_len, prot, MAP_SHARED, ctx->cmd_fd,
		 resp->mmap_key);
	if (p == MAP_FAILED)
		return errno;
	cq->ring = p;
	cq->map_len = resp->mmap_len;
	cq->ucons = (uint32_t *)(cq->ring + cq->map_len - page);
	cq->log_size = resp->log_size;
	cq->cqn = resp->cqn;
	return 0;
}

static void rnic_free_cq(struct rnic_cq *cq)
{
	pthread_spin_destroy(&cq->lock);
	free(cq);
}

struct ibv_cq *rnic_create_cq(struct ibv_context *ctx, int cqe,
			      struct ibv_comp_channel *channel, int vector)
{
	struct {
		struct ib_uverbs_create_cq_resp ibv;
		struct rnic_ib_create_cq_resp drv;
	} resp = {};
	struct ibv_create_cq cmd;
	struct rnic_cq *cq = calloc(1, sizeof(*cq));
	int ret;

	if (!cq)
		return NULL;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	if (ibv_cmd_create_cq(ctx, cqe, channel, vector, &cq->ibcq, &cmd,
			      sizeof(cmd), &resp.ibv, sizeof(resp))) {
		rnic_free_cq(cq);
		return NULL;
	}
	cq->direct = resp.drv.flags & RNIC_IB_DIRECT;
	ret = rnic_cq_map(ctx, cq, &resp.drv);
	/*
	 * Without its ring, a CQ polls through the kernel (an older driver),
	 * unless it is direct: then the kernel refuses its polls.
	 */
	if (ret && cq->direct) {
		ibv_cmd_destroy_cq(&cq->ibcq);
		rnic_free_cq(cq);
		errno = ret;
		return NULL;
	}
	return &cq->ibcq;
}

int rnic_destroy_cq(struct ibv_cq *ibcq)
{
	struct rnic_cq *cq = to_rcq(ibcq);
	int ret = ibv_cmd_destroy_cq(ibcq);

	if (ret)
		return ret;
	if (cq->ring)
		munmap(cq->ring, cq->map_len);
	rnic_free_cq(cq);
	return 0;
}

/* A poll that found a QP before it left the table is done with it. */
void rnic_cq_sync(struct ibv_cq *ibcq)
{
	struct rnic_cq *cq = to_rcq(ibcq);

	pthread_spin_lock(&cq->lock);
	pthread_spin_unlock(&cq->lock);
}

/* The entry at @cons if the device has written it, else NULL. */
static const struct rnic_cq_entry *rnic_cq_next(const struct rnic_cq *cq,
						uint32_t cons)
{
	uint32_t mask = (1u << cq->log_size) - 1;
	const struct rnic_cq_entry *e = (const void *)(cq->ring +
		(size_t)(cons & mask) * RNIC_CQE_SIZE);
	uint8_t phase = ((cons >> cq->log_size) & 1) ^ 1;

	return (__atomic_load_n(&e->phase, __ATOMIC_ACQUIRE) & 1) == phase ?
	       e : NULL;
}

static enum ibv_wc_status rnic_wc_status(uint8_t status)
{
	static const enum ibv_wc_status map[] = {
		[RNIC_CQE_SUCCESS] = IBV_WC_SUCCESS,
		[RNIC_CQE_LOC_LEN_ERR] = IBV_WC_LOC_LEN_ERR,
		[RNIC_CQE_LOC_QP_OP_ERR] = IBV_WC_LOC_QP_OP_ERR,
		[RNIC_CQE_LOC_PROT_ERR] = IBV_WC_LOC_PROT_ERR,
		[RNIC_CQE_WR_FLUSH_ERR] = IBV_WC_WR_FLUSH_ERR,
		[RNIC_CQE_MW_BIND_ERR] = IBV_WC_MW_BIND_ERR,
		[RNIC_CQE_LOC_ACCESS_ERR] = IBV_WC_LOC_ACCESS_ERR,
		[RNIC_CQE_REM_INV_REQ_ERR] = IBV_WC_REM_INV_REQ_ERR,
		[RNIC_CQE_REM_ACCESS_ERR] = IBV_WC_REM_ACCESS_ERR,
		[RNIC_CQE_REM_OP_ERR] = IBV_WC_REM_OP_ERR,
		[RNIC_CQE_BAD_RESP_ERR] = IBV_WC_BAD_RESP_ERR,
		[RNIC_CQE_FATAL_ERR] = IBV_WC_FATAL_ERR,
		[RNIC_CQE_GENERAL_ERR] = IBV_WC_GENERAL_ERR,
	};

	return status < ARRAY_SIZE(map) ? map[status] : IBV_WC_GENERAL_ERR;
}

static enum ibv_wc_opcode rnic_wc_opcode(uint8_t op)
{
	switch (op) {
	case RNIC_WQE_WRITE:
	case RNIC_WQE_IMM_DATA:		/* an RDMA Write with immediate's */
		return IBV_WC_RDMA_WRITE;
	case RNIC_WQE_READ:
		return IBV_WC_RDMA_READ;
	case RNIC_WQE_ATOMIC_FADD:
		return IBV_WC_FETCH_ADD;
	case RNIC_WQE_ATOMIC_CSWAP:
		return IBV_WC_COMP_SWAP;
	case RNIC_WQE_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case RNIC_WQE_BIND_MW:
		return IBV_WC_BIND_MW;
	case RNIC_WQE_RECV:
		return IBV_WC_RECV;
	default:
		return IBV_WC_SEND;
	}
}

/* Fills @wc from @c; false for a CQE of a QP that is gone. */
static bool rnic_cqe(struct rnic_context *ctx, const struct rnic_cq_entry *c,
		     struct ibv_wc *wc)
{
	uint32_t qpn = le32toh(c->qpn);
	uint32_t idx = (uint32_t)le64toh(c->wr_id);
	struct rnic_qp *qp = rnic_qp_find(ctx, qpn);
	struct rnic_wq *wq;
	uint64_t wr_id;

	if (!qp)
		return false;
	if (qp->srq && c->opcode == RNIC_WQE_RECV) {
		if (!rnic_srq_done(qp->srq, idx, &wr_id))
			return false;
	} else {
		wq = c->opcode == RNIC_WQE_RECV ? &qp->rq : &qp->sq;
		wr_id = wq->wr_id[idx & ((1u << wq->log_size) - 1)];
		/* After the wr_id is read: the slot is the posters' again. */
		__atomic_store_n(&wq->done, idx + 1, __ATOMIC_RELEASE);
	}
	*wc = (struct ibv_wc) {
		.wr_id = wr_id,
		.status = rnic_wc_status(c->status),
		.opcode = rnic_wc_opcode(c->opcode),
		.vendor_err = c->status,
		.byte_len = le32toh(c->byte_len),
		.qp_num = qpn,
	};
	if (c->flags & RNIC_CQE_FLAG_WITH_INV) {
		wc->wc_flags = IBV_WC_WITH_INV;
		wc->invalidated_rkey = le32toh(c->invalidated_stag);
	} else if (c->flags & RNIC_CQE_FLAG_WITH_IMM) {
		/* RFC 7306's Immediate Data: the verbs' Write with immediate */
		wc->opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		wc->wc_flags = IBV_WC_WITH_IMM;
		wc->imm_data = htobe32(le32toh(c->imm));
	}
	return true;
}

static int rnic_poll_direct(struct rnic_cq *cq, int num, struct ibv_wc *wc)
{
	struct rnic_context *ctx = to_rctx(cq->ibcq.context);
	const struct rnic_cq_entry *e;
	struct rnic_cq_entry c;
	uint32_t start;
	int n = 0;

	pthread_spin_lock(&cq->lock);
	start = cq->cons;
	while (n < num && (e = rnic_cq_next(cq, cq->cons))) {
		udma_from_device_barrier();	/* the phase, then the rest */
		c = *e;
		cq->cons++;
		if (rnic_cqe(ctx, &c, &wc[n]))
			n++;
	}
	if (cq->cons != start)
		__atomic_store_n(cq->ucons, cq->cons, __ATOMIC_RELEASE);
	if (cq->cons - cq->db_cons >= (1u << cq->log_size) / 2) {
		rnic_doorbell(ctx, RNIC_REG_DB_CQ, cq->cqn, cq->cons);
		cq->db_cons = cq->cons;
	}
	pthread_spin_unlock(&cq->lock);
	return n;
}

int rnic_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc)
{
	struct rnic_cq *cq = to_rcq(ibcq);

	if (cq->direct)
		return rnic_poll_direct(cq, num, wc);
	if (cq->ring && !rnic_cq_next(cq, __atomic_load_n(cq->ucons,
							  __ATOMIC_ACQUIRE)))
		return 0;
	return ibv_cmd_poll_cq(ibcq, num, wc);
}
