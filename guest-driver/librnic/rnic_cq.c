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
 *
 * ibv_create_cq_ex's CQs poll the same way, one work completion at a time
 * (start_poll/next_poll take it, the read_* accessors read it).
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <ccan/array_size.h>
#include <util/udma_barrier.h>
#include "librnic.h"

struct rnic_cq {
	struct verbs_cq vcq;		/* ibv_cq, or ibv_cq_ex */
	pthread_spinlock_t lock;	/* direct: the consumer */
	uint8_t *ring;			/* NULL: every poll is a system call */
	uint32_t *ucons;		/* the page after the ring */
	size_t map_len;
	uint32_t log_size;
	uint32_t cqn;
	bool direct;
	uint32_t cons, db_cons;		/* direct: consumed; told the device */
	struct ibv_wc cur;		/* cq_ex: the completion being read */
};

static struct rnic_cq *to_rcq(struct ibv_cq *cq)
{
	return container_of(cq, struct rnic_cq, vcq.cq);
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

/* After the create command: the ring, if the kernel offers it. */
static struct rnic_cq *rnic_cq_setup(struct ibv_context *ctx,
				     struct rnic_cq *cq,
				     const struct rnic_ib_create_cq_resp *drv)
{
	int ret;

	cq->direct = drv->flags & RNIC_IB_DIRECT;
	ret = rnic_cq_map(ctx, cq, drv);
	/*
	 * Without its ring, a CQ polls through the kernel (an older driver),
	 * unless it is direct: then the kernel refuses its polls.
	 */
	if (ret && cq->direct) {
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		rnic_free_cq(cq);
		errno = ret;
		return NULL;
	}
	return cq;
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

	if (!cq)
		return NULL;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	if (ibv_cmd_create_cq(ctx, cqe, channel, vector, &cq->vcq.cq, &cmd,
			      sizeof(cmd), &resp.ibv, sizeof(resp))) {
		rnic_free_cq(cq);
		return NULL;
	}
	cq = rnic_cq_setup(ctx, cq, &resp.drv);
	return cq ? &cq->vcq.cq : NULL;
}

/* ---- ibv_create_cq_ex: one work completion at a time ---- */

static struct rnic_cq *cqx_to_rcq(struct ibv_cq_ex *cqx)
{
	return container_of(cqx, struct rnic_cq, vcq.cq_ex);
}

static int rnic_cqx_take(struct ibv_cq_ex *cqx)
{
	struct rnic_cq *cq = cqx_to_rcq(cqx);
	int n = rnic_poll_cq(&cq->vcq.cq, 1, &cq->cur);

	if (n < 0)
		return -n;
	if (!n)
		return ENOENT;
	cqx->wr_id = cq->cur.wr_id;
	cqx->status = cq->cur.status;
	return 0;
}

static int rnic_cqx_start_poll(struct ibv_cq_ex *cqx,
			       struct ibv_poll_cq_attr *attr)
{
	return attr->comp_mask ? EINVAL : rnic_cqx_take(cqx);
}

static void rnic_cqx_end_poll(struct ibv_cq_ex *cqx)
{
}

#define RNIC_CQX_READ(field, type)					\
	static type rnic_cqx_read_##field(struct ibv_cq_ex *cqx)	\
	{								\
		return cqx_to_rcq(cqx)->cur.field;			\
	}
RNIC_CQX_READ(opcode, enum ibv_wc_opcode)
RNIC_CQX_READ(vendor_err, uint32_t)
RNIC_CQX_READ(byte_len, uint32_t)
RNIC_CQX_READ(imm_data, __be32)
RNIC_CQX_READ(qp_num, uint32_t)
RNIC_CQX_READ(src_qp, uint32_t)
RNIC_CQX_READ(wc_flags, unsigned int)
RNIC_CQX_READ(slid, uint32_t)
RNIC_CQX_READ(sl, uint8_t)
RNIC_CQX_READ(dlid_path_bits, uint8_t)

/* What struct ibv_wc has; no timestamps, flow tags or VLANs. */
#define RNIC_CQX_WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |     \
			   IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |    \
			   IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |          \
			   IBV_WC_EX_WITH_DLID_PATH_BITS)

struct ibv_cq_ex *rnic_create_cq_ex(struct ibv_context *ctx,
				    struct ibv_cq_init_attr_ex *attr)
{
	struct {
		struct ib_uverbs_ex_create_cq_resp ibv;
		struct rnic_ib_create_cq_resp drv;
	} resp = {};
	struct ibv_create_cq_ex cmd;
	struct ibv_cq_ex *cqx;
	struct rnic_cq *cq;

	if (attr->wc_flags & ~RNIC_CQX_WC_FLAGS ||
	    attr->comp_mask & ~IBV_CQ_INIT_ATTR_MASK_FLAGS || attr->flags) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	if (ibv_cmd_create_cq_ex(ctx, attr, &cq->vcq, &cmd, sizeof(cmd),
				 &resp.ibv, sizeof(resp), 0)) {
		rnic_free_cq(cq);
		return NULL;
	}
	cq = rnic_cq_setup(ctx, cq, &resp.drv);
	if (!cq)
		return NULL;
	cqx = &cq->vcq.cq_ex;
	cqx->start_poll = rnic_cqx_start_poll;
	cqx->next_poll = rnic_cqx_take;
	cqx->end_poll = rnic_cqx_end_poll;
	cqx->read_opcode = rnic_cqx_read_opcode;
	cqx->read_vendor_err = rnic_cqx_read_vendor_err;
	cqx->read_byte_len = rnic_cqx_read_byte_len;
	cqx->read_imm_data = rnic_cqx_read_imm_data;
	cqx->read_qp_num = rnic_cqx_read_qp_num;
	cqx->read_src_qp = rnic_cqx_read_src_qp;
	cqx->read_wc_flags = rnic_cqx_read_wc_flags;
	cqx->read_slid = rnic_cqx_read_slid;
	cqx->read_sl = rnic_cqx_read_sl;
	cqx->read_dlid_path_bits = rnic_cqx_read_dlid_path_bits;
	return cqx;
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
	struct rnic_context *ctx = to_rctx(cq->vcq.cq.context);
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
