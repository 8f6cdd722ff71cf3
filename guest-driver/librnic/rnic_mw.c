// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Memory windows.  The kernel allocates and frees them (ALLOC_MW,
 * DEALLOC_MW); both types are bound through the send queue with a BIND_MW
 * WQE, ibv_bind_mw (type 1) as IBV_WR_BIND_MW (type 2) is, so binding
 * needs direct mode (the uverbs post_send command carries no bind).  The
 * WQE gives the window its new key (docs/spec.md, "Keys").  A window is
 * bound onto a region, never unbound without one: bind it with length 0
 * instead, or free it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "librnic.h"

struct ibv_mw *rnic_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw = calloc(1, sizeof(*mw));
	int ret;

	if (!mw)
		return NULL;
	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

int rnic_dealloc_mw(struct ibv_mw *mw)
{
	int ret = ibv_cmd_dealloc_mw(mw);

	if (!ret)
		free(mw);
	return ret;
}

/* The window's remote rights; it has no local ones. */
static int rnic_mw_access(unsigned int acc, uint32_t *out)
{
	*out = 0;
	if (acc & IBV_ACCESS_ZERO_BASED)
		return EINVAL;
	if (acc & IBV_ACCESS_REMOTE_READ)
		*out |= RNIC_ACC_REMOTE_READ;
	if (acc & IBV_ACCESS_REMOTE_WRITE)
		*out |= RNIC_ACC_REMOTE_WRITE;
	if (acc & IBV_ACCESS_REMOTE_ATOMIC)
		*out |= RNIC_ACC_REMOTE_ATOMIC;
	return 0;
}

int rnic_bind_wqe(const struct ibv_send_wr *wr, struct rnic_sq_wqe *w)
{
	const struct ibv_mw_bind_info *i = &wr->bind_mw.bind_info;
	uint32_t access;

	if (!i->mr || i->length > UINT32_MAX || i->mr->pd != wr->bind_mw.mw->pd ||
	    rnic_mw_access(i->mw_access_flags, &access))
		return EINVAL;
	w->opcode = RNIC_WQE_BIND_MW;
	w->remote_stag = htole32(wr->bind_mw.mw->rkey);
	w->bind_access = htole32(access | (wr->bind_mw.rkey & 0xff) << 24);
	w->num_sge = 1;
	w->sge[0].addr = htole64(i->addr);
	w->sge[0].length = htole32(i->length);
	w->sge[0].stag = htole32(i->mr->lkey);
	return 0;
}

/* A type 1 window's bind: the next key, as every provider gives it. */
int rnic_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
		.bind_mw = {
			.mw = mw,
			.rkey = ibv_inc_rkey(mw->rkey),
			.bind_info = mw_bind->bind_info,
		},
	};
	struct ibv_send_wr *bad;
	int ret;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	if (!to_rqp(qp)->direct)
		return EOPNOTSUPP;
	ret = rnic_post_send(qp, &wr, &bad);
	if (!ret)
		mw->rkey = wr.bind_mw.rkey;
	return ret;
}
