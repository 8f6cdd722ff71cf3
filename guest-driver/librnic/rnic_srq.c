// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Shared receive queues.  In direct mode the SRQ's ring is mapped from the
 * kernel driver and posted to here, as the driver posts to its own
 * (guest-driver/linux/rnic_ib_srq.c): the receives of an SRQ complete on
 * whichever QPs took them, in any order, so a WQE's wr_id is a tag, an
 * index into the SRQ's table of the user's wr_ids, free again when its
 * completion is polled (rnic_cq.c).  Otherwise the kernel posts.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <util/udma_barrier.h>
#include "librnic.h"

static void rnic_srq_free(struct rnic_srq *srq)
{
	if (srq->ring)
		munmap(srq->ring, srq->len);
	free(srq->wr_id);
	free(srq->free);
	pthread_spin_destroy(&srq->lock);
	free(srq);
}

static int rnic_srq_direct_init(struct rnic_srq *srq, struct ibv_context *ctx,
				const struct rnic_ib_create_srq_resp *resp)
{
	uint32_t i, n = 1u << resp->log_size;
	void *p;

	srq->direct = true;
	srq->srqn = resp->srqn;
	srq->log_size = resp->log_size;
	srq->wr_id = calloc(n, sizeof(*srq->wr_id));
	srq->free = calloc(n, sizeof(*srq->free));
	if (!srq->wr_id || !srq->free)
		return ENOMEM;
	for (i = 0; i < n; i++)
		srq->free[i] = n - 1 - i;
	srq->nfree = n;
	p = mmap(NULL, resp->srq_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 ctx->cmd_fd, resp->srq_key);
	if (p == MAP_FAILED)
		return errno;
	srq->ring = p;
	srq->len = resp->srq_len;
	return 0;
}

struct ibv_srq *rnic_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr)
{
	struct {
		struct ib_uverbs_create_srq_resp ibv;
		struct rnic_ib_create_srq_resp drv;
	} resp = {};
	struct ibv_create_srq cmd;
	struct rnic_srq *srq = calloc(1, sizeof(*srq));
	int ret;

	if (!srq)
		return NULL;
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	ret = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd, sizeof(cmd),
				 &resp.ibv, sizeof(resp));
	if (ret) {
		rnic_srq_free(srq);
		errno = ret;
		return NULL;
	}
	if (resp.drv.flags & RNIC_IB_DIRECT) {
		ret = rnic_srq_direct_init(srq, pd->context, &resp.drv);
		if (ret) {
			ibv_cmd_destroy_srq(&srq->vsrq.srq);
			rnic_srq_free(srq);
			errno = ret;
			return NULL;
		}
	}
	return &srq->vsrq.srq;
}

int rnic_destroy_srq(struct ibv_srq *ibsrq)
{
	int ret = ibv_cmd_destroy_srq(ibsrq);

	if (!ret)
		rnic_srq_free(to_rsrq(ibsrq));
	return ret;
}

int rnic_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct ibv_modify_srq cmd;

	return ibv_cmd_modify_srq(srq, attr, mask, &cmd, sizeof(cmd));
}

int rnic_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

int rnic_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad)
{
	struct rnic_srq *srq = to_rsrq(ibsrq);
	uint32_t mask, start, tag;
	struct rnic_rq_wqe *w;
	int err = 0;

	if (!srq->direct)
		return ibv_cmd_post_srq_recv(ibsrq, wr, bad);
	mask = (1u << srq->log_size) - 1;
	pthread_spin_lock(&srq->lock);
	start = srq->prod;
	for (; wr; wr = wr->next) {
		if ((unsigned int)wr->num_sge > RNIC_WQE_MAX_SGE) {
			err = EINVAL;
			break;
		}
		if (!srq->nfree) {
			err = ENOMEM;
			break;
		}
		tag = srq->free[--srq->nfree];
		srq->wr_id[tag] = wr->wr_id;
		w = (struct rnic_rq_wqe *)srq->ring + (srq->prod & mask);
		rnic_rq_wqe(wr, w, tag, 0);
		srq->prod++;
	}
	if (srq->prod != start) {
		udma_to_device_barrier();
		rnic_doorbell(to_rctx(ibsrq->context), RNIC_REG_DB_SRQ,
			      srq->srqn, srq->prod);
	}
	pthread_spin_unlock(&srq->lock);
	if (err)
		*bad = wr;
	return err;
}

/* A receive of the SRQ completed with @tag: its wr_id, and the tag free. */
bool rnic_srq_done(struct rnic_srq *srq, uint32_t tag, uint64_t *wr_id)
{
	if (tag >> srq->log_size)
		return false;
	pthread_spin_lock(&srq->lock);
	*wr_id = srq->wr_id[tag];
	srq->free[srq->nfree++] = tag;
	pthread_spin_unlock(&srq->lock);
	return true;
}
