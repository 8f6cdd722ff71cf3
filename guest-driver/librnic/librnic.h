/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * librnic: the rdma-core provider of the rnic device (PCI 1234:7269).
 * Control verbs go through the kernel driver's uverbs commands.  The data
 * path runs in one of two modes, chosen per process when the context is
 * opened (guest-driver/rnic-ib-uapi.h):
 *  - direct mode, when the driver grants it a doorbell page: librnic
 *    writes WQEs into the QPs' rings and rings the device itself
 *    (rnic_qp.c), and consumes CQEs itself (rnic_cq.c), so posting and
 *    polling make no system call (under TCG a guest system call costs
 *    microseconds); only req_notify_cq asks the kernel, which keeps the
 *    arm state its interrupt handler needs;
 *  - otherwise (RNIC_DIRECT=0 for A/B runs, an older driver, no page
 *    left), posts and polls are uverbs commands, and only each CQ's ring
 *    is mapped, read-only, so that polling an empty CQ makes no call.
 * rnic_wr.c adds the ibv_wr_* send API of create_qp_ex on top of post_send.
 */
#ifndef LIBRNIC_H
#define LIBRNIC_H

#include <pthread.h>
#include <stdbool.h>
#include <infiniband/driver.h>
#include <util/mmio.h>
/*
 * The repository's include/rnic/rnic-abi.h and guest-driver/
 * rnic-ib-uapi.h, copied in by the build.
 */
#include "rnic-abi.h"
#include "rnic-ib-uapi.h"


/* The qpn -> QP table of direct CQs: RNIC_QP_TBL blocks of as many. */
#define RNIC_QP_TBL	256

struct rnic_context {
	struct verbs_context ibv_ctx;
	uint8_t *db;			/* the doorbell page; NULL: not direct */
	size_t db_len;
	/*
	 * Direct CQs find a CQE's QP here, without a lock: device numbers
	 * are below 65536, and a block, once there, stays until the context
	 * goes, so a poll never races with a free.
	 */
	pthread_mutex_t qp_lock;	/* writers of qp_tbl */
	struct rnic_qp **qp_tbl[RNIC_QP_TBL];
};

static inline struct rnic_context *to_rctx(struct ibv_context *ctx)
{
	return container_of(ctx, struct rnic_context, ibv_ctx.context);
}

/* Direct mode: tells the device of a queue's new index. */
static inline void rnic_doorbell(struct rnic_context *ctx, uint32_t reg,
				 uint32_t id, uint32_t idx)
{
	mmio_write32(ctx->db + reg, RNIC_DB_VALUE(id, idx));
}

/* A direct QP's send or receive queue, as the kernel driver keeps one. */
struct rnic_wq {
	pthread_spinlock_t lock;	/* posters */
	void *ring;			/* 1 << log_size WQEs, mapped */
	size_t len;
	uint64_t *wr_id;		/* the user's, per slot */
	uint32_t log_size;
	uint32_t prod;			/* posted, free-running */
	uint32_t done;			/* completed, set by poll */
};

struct rnic_qp {
	struct verbs_qp vqp;
	bool direct;			/* false: the kernel posts */
	bool sig_all;
	struct rnic_wq sq, rq;		/* rq: none on an SRQ */
	struct rnic_srq *srq;
	/* ibv_wr_*: the WRs between wr_start and wr_complete. */
	struct ibv_send_wr *wrs;
	struct ibv_sge *sges;
	uint8_t *inl;		/* RNIC_WQE_INLINE_MAX bytes per WR */
	uint32_t cap, n;
	int err;
};

/* An SRQ (rnic_srq.c); direct: posted here, wr_ids by tag. */
struct rnic_srq {
	struct verbs_srq vsrq;
	bool direct;
	pthread_spinlock_t lock;	/* posters and pollers */
	void *ring;
	size_t len;
	uint32_t log_size, srqn;
	uint32_t prod;			/* posted, free-running */
	uint64_t *wr_id;		/* the user's, per tag */
	uint32_t *free, nfree;		/* a stack of free tags */
};

static inline struct rnic_srq *to_rsrq(struct ibv_srq *srq)
{
	return container_of(srq, struct rnic_srq, vsrq.srq);
}

static inline struct rnic_qp *to_rqp(struct ibv_qp *qp)
{
	return container_of(qp, struct rnic_qp, vqp.qp);
}

static inline struct rnic_qp *qpx_to_rqp(struct ibv_qp_ex *qpx)
{
	return container_of(qpx, struct rnic_qp, vqp.qp_ex);
}

struct ibv_cq *rnic_create_cq(struct ibv_context *ctx, int cqe,
			      struct ibv_comp_channel *channel, int vector);
struct ibv_cq_ex *rnic_create_cq_ex(struct ibv_context *ctx,
				    struct ibv_cq_init_attr_ex *attr);
int rnic_destroy_cq(struct ibv_cq *cq);
int rnic_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc);
void rnic_cq_sync(struct ibv_cq *cq);

struct rnic_qp *rnic_qp_find(struct rnic_context *ctx, uint32_t qpn);
int rnic_qp_direct_init(struct rnic_qp *qp,
			const struct rnic_ib_create_qp_resp *resp,
			bool sig_all);
void rnic_qp_direct_forget(struct rnic_qp *qp);
void rnic_qp_direct_free(struct rnic_qp *qp);
int rnic_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad);
/* Windows (rnic_mw.c); rnic_bind_wqe fills a BIND_MW WQE's operands. */
struct ibv_mw *rnic_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int rnic_dealloc_mw(struct ibv_mw *mw);
int rnic_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind);
int rnic_bind_wqe(const struct ibv_send_wr *wr, struct rnic_sq_wqe *w);
int rnic_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad);
int rnic_post_recv_link(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad, uint32_t linked);
void rnic_rq_wqe(const struct ibv_recv_wr *wr, struct rnic_rq_wqe *w,
		 uint32_t tag, uint32_t linked);

struct ibv_srq *rnic_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr);
int rnic_destroy_srq(struct ibv_srq *srq);
int rnic_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int rnic_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int rnic_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad);
bool rnic_srq_done(struct rnic_srq *srq, uint32_t tag, uint64_t *wr_id);

bool rnic_is_ours(struct ibv_device *device);
struct ibv_mr *rnic_reg_mr_flags(struct ibv_pd *pd, void *addr, size_t len,
				 uint64_t hca_va, int access, uint32_t flags);

int rnic_wr_check(uint64_t send_ops_flags);
void rnic_wr_init(struct rnic_qp *qp, uint64_t send_ops_flags);

#endif /* LIBRNIC_H */
