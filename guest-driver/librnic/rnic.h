/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * librnic: the rdma-core provider of the rnic device (PCI 1234:7269).
 * Every verb goes through the kernel driver's uverbs commands, posts and
 * polls included (write() commands the driver enables); only each CQ's
 * ring is mapped, read-only, so that polling an empty CQ makes no system
 * call (rnic_cq.c).  rnic_wr.c adds the ibv_wr_* send API of
 * create_qp_ex on top of ibv_cmd_post_send().
 */
#ifndef RNIC_PROVIDER_H
#define RNIC_PROVIDER_H

#include <infiniband/driver.h>
/*
 * The repository's include/rnic/rnic-abi.h and guest-driver/
 * rnic-ib-uapi.h, copied in by the build.
 */
#include "rnic-abi.h"
#include "rnic-ib-uapi.h"

#define RNIC_MAX_SGE	RNIC_WQE_MAX_SGE
#define RNIC_INLINE_MAX	RNIC_WQE_INLINE_MAX

struct rnic_qp {
	struct verbs_qp vqp;
	/* ibv_wr_*: the WRs between wr_start and wr_complete. */
	struct ibv_send_wr *wrs;
	struct ibv_sge *sges;
	uint8_t *inl;		/* RNIC_INLINE_MAX bytes per WR */
	uint32_t cap, n;
	int err;
};

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
int rnic_destroy_cq(struct ibv_cq *cq);
int rnic_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc);

int rnic_wr_check(uint64_t send_ops_flags);
void rnic_wr_init(struct rnic_qp *qp, uint64_t send_ops_flags);

#endif
