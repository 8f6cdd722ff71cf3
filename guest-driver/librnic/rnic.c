// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * librnic: matches the rnic PCI function (an out-of-tree driver has no
 * driver id of its own: RDMA_DRIVER_UNKNOWN), opens a context, asking for
 * direct mode, and runs the control verbs through the kernel's uverbs
 * commands (ipathverbs is the pattern).  A context is direct or not as a
 * whole: the kernel makes every CQ and QP of a context that got its
 * doorbell page direct, so a page that cannot be mapped fails the open.
 * create_qp_ex adds the ibv_wr_* API (rnic_wr.c).
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "librnic.h"

struct rnic_device {
	struct verbs_device ibv_dev;
};

static int rnic_query_device_ex(struct ibv_context *ctx,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(ctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;
	/* The device's ABI version, as the kernel's fw_ver says too. */
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u", (unsigned int)(fw >> 16) & 0xffff,
		 (unsigned int)fw & 0xffff);
	return 0;
}

static int rnic_query_port(struct ibv_context *ctx, uint8_t port,
			   struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(ctx, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *rnic_alloc_pd(struct ibv_context *ctx)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return NULL;
	if (ibv_cmd_alloc_pd(ctx, pd, &cmd, sizeof(cmd), &resp,
			     sizeof(resp))) {
		free(pd);
		return NULL;
	}
	return pd;
}

static int rnic_dealloc_pd(struct ibv_pd *pd)
{
	int ret = ibv_cmd_dealloc_pd(pd);

	if (!ret)
		free(pd);
	return ret;
}

/* reg_mr with its driver data: @flags RNIC_IB_MR_* (rnicdv_reg_mr). */
struct ibv_mr *rnic_reg_mr_flags(struct ibv_pd *pd, void *addr, size_t len,
				 uint64_t hca_va, int access, uint32_t flags)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct {
		struct ibv_reg_mr ibv;
		struct rnic_ib_reg_mr_req drv;
	} cmd = { .drv.flags = flags };
	struct verbs_mr *vmr = calloc(1, sizeof(*vmr));
	int err;

	if (!vmr)
		return NULL;
	err = ibv_cmd_reg_mr(pd, addr, len, hca_va, access, vmr, &cmd.ibv,
			     flags ? sizeof(cmd) : sizeof(cmd.ibv), &resp,
			     sizeof(resp));
	if (err) {
		free(vmr);
		errno = err;
		return NULL;
	}
	return &vmr->ibv_mr;
}

static struct ibv_mr *rnic_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
				  uint64_t hca_va, int access)
{
	return rnic_reg_mr_flags(pd, addr, len, hca_va, access, 0);
}

static int rnic_dereg_mr(struct verbs_mr *vmr)
{
	int ret = ibv_cmd_dereg_mr(vmr);

	if (!ret)
		free(vmr);
	return ret;
}

/* A new region for the old one (the kernel's rereg); the keys may change. */
static int rnic_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			 void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

/* The WR array of the ibv_wr_* API, sized to the send queue. */
static int rnic_qp_wr_alloc(struct rnic_qp *qp, uint32_t max_send_wr)
{
	qp->cap = max_send_wr ? max_send_wr : 1;
	qp->wrs = calloc(qp->cap, sizeof(*qp->wrs));
	qp->sges = calloc((size_t)qp->cap * RNIC_WQE_MAX_SGE, sizeof(*qp->sges));
	qp->inl = malloc((size_t)qp->cap * RNIC_WQE_INLINE_MAX);
	return qp->wrs && qp->sges && qp->inl ? 0 : ENOMEM;
}

static void rnic_free_qp(struct rnic_qp *qp)
{
	if (qp->direct)
		rnic_qp_direct_free(qp);
	free(qp->wrs);
	free(qp->sges);
	free(qp->inl);
	free(qp);
}

/* What the QP needs in user space once the kernel has made it. */
static int rnic_qp_setup(struct rnic_qp *qp, struct ibv_qp_init_attr_ex *attr,
			 const struct rnic_ib_create_qp_resp *drv)
{
	int ret = 0;

	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		ret = rnic_qp_wr_alloc(qp, attr->cap.max_send_wr);
		if (ret)
			return ret;
		rnic_wr_init(qp, attr->send_ops_flags);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	if (drv->flags & RNIC_IB_DIRECT)
		ret = rnic_qp_direct_init(qp, drv, attr->sq_sig_all);
	return ret;
}

static struct ibv_qp *rnic_create_qp_ex(struct ibv_context *ctx,
					struct ibv_qp_init_attr_ex *attr)
{
	struct {
		struct ib_uverbs_ex_create_qp_resp ibv;
		struct rnic_ib_create_qp_resp drv;
	} resp = {};
	struct ibv_create_qp_ex cmd = {};
	struct rnic_qp *qp;
	int ret;

	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    rnic_wr_check(attr->send_ops_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	if (attr->srq)
		qp->srq = to_rsrq(attr->srq);
	ret = ibv_cmd_create_qp_ex2(ctx, &qp->vqp, attr, &cmd, sizeof(cmd),
				    &resp.ibv, sizeof(resp));
	if (!ret) {
		ret = rnic_qp_setup(qp, attr, &resp.drv);
		if (ret)
			ibv_cmd_destroy_qp(&qp->vqp.qp);
	}
	if (ret) {
		rnic_free_qp(qp);
		errno = ret;
		return NULL;
	}
	return &qp->vqp.qp;
}

static struct ibv_qp *rnic_create_qp(struct ibv_pd *pd,
				     struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp = rnic_create_qp_ex(pd->context, &ex);

	if (qp)
		attr->cap = ex.cap;
	return qp;
}

static int rnic_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int mask, struct ibv_qp_init_attr *init)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(qp, attr, mask, init, &cmd, sizeof(cmd));
}

static int rnic_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			  int mask)
{
	struct ibv_modify_qp cmd;

	return ibv_cmd_modify_qp(qp, attr, mask, &cmd, sizeof(cmd));
}

static int rnic_destroy_qp(struct ibv_qp *ibqp)
{
	struct rnic_qp *qp = to_rqp(ibqp);
	int ret = ibv_cmd_destroy_qp(ibqp);

	if (ret)
		return ret;
	if (qp->direct)
		rnic_qp_direct_forget(qp);
	rnic_free_qp(qp);
	return 0;
}

static void rnic_free_context(struct ibv_context *ibctx);

static const struct verbs_context_ops rnic_ctx_ops = {
	.free_context	= rnic_free_context,
	.query_device_ex = rnic_query_device_ex,
	.query_port	= rnic_query_port,
	.alloc_pd	= rnic_alloc_pd,
	.dealloc_pd	= rnic_dealloc_pd,
	.reg_mr		= rnic_reg_mr,
	.dereg_mr	= rnic_dereg_mr,
	.rereg_mr	= rnic_rereg_mr,
	.alloc_mw	= rnic_alloc_mw,
	.dealloc_mw	= rnic_dealloc_mw,
	.bind_mw	= rnic_bind_mw,
	.create_cq	= rnic_create_cq,
	.create_cq_ex	= rnic_create_cq_ex,
	.poll_cq	= rnic_poll_cq,
	.req_notify_cq	= ibv_cmd_req_notify_cq,
	.destroy_cq	= rnic_destroy_cq,
	.create_qp	= rnic_create_qp,
	.create_qp_ex	= rnic_create_qp_ex,
	.query_qp	= rnic_query_qp,
	.modify_qp	= rnic_modify_qp,
	.destroy_qp	= rnic_destroy_qp,
	.post_send	= rnic_post_send,
	.post_recv	= rnic_post_recv,
	.create_srq	= rnic_create_srq,
	.destroy_srq	= rnic_destroy_srq,
	.modify_srq	= rnic_modify_srq,
	.query_srq	= rnic_query_srq,
	.post_srq_recv	= rnic_post_srq_recv,
};

/* RNIC_DIRECT=0: everything through the kernel, as before (A/B runs). */
static bool rnic_want_direct(void)
{
	const char *env = getenv("RNIC_DIRECT");

	return !env || strcmp(env, "0");
}

/* GET_CONTEXT, then the doorbell page if direct mode was granted. */
static int rnic_get_context(struct rnic_context *ctx, int cmd_fd)
{
	struct {
		struct ibv_get_context ibv;
		struct rnic_ib_alloc_ucontext_req drv;
	} cmd = {};
	struct {
		struct ib_uverbs_get_context_resp ibv;
		struct rnic_ib_alloc_ucontext_resp drv;
	} resp = {};
	void *db;
	int ret;

	if (rnic_want_direct())
		cmd.drv.flags = RNIC_IB_DIRECT;
	ret = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd.ibv, sizeof(cmd),
				  &resp.ibv, sizeof(resp));
	if (ret)
		return ret;
	if (!(resp.drv.flags & RNIC_IB_DIRECT) || !resp.drv.udb_len)
		return 0;
	db = mmap(NULL, resp.drv.udb_len, PROT_WRITE, MAP_SHARED, cmd_fd,
		  resp.drv.udb_key);
	if (db == MAP_FAILED)
		return errno;
	ctx->db = db;
	ctx->db_len = resp.drv.udb_len;
	return 0;
}

static struct verbs_context *rnic_alloc_context(struct ibv_device *ibdev,
						int cmd_fd, void *private_data)
{
	struct rnic_context *ctx;
	int ret;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;
	pthread_mutex_init(&ctx->qp_lock, NULL);
	ret = rnic_get_context(ctx, cmd_fd);
	if (ret) {
		pthread_mutex_destroy(&ctx->qp_lock);
		verbs_uninit_context(&ctx->ibv_ctx);
		free(ctx);
		errno = ret;
		return NULL;
	}
	verbs_set_ops(&ctx->ibv_ctx, &rnic_ctx_ops);
	return &ctx->ibv_ctx;
}

static void rnic_free_context(struct ibv_context *ibctx)
{
	struct rnic_context *ctx = to_rctx(ibctx);
	int i;

	if (ctx->db)
		munmap(ctx->db, ctx->db_len);
	for (i = 0; i < RNIC_QP_TBL; i++)
		free(ctx->qp_tbl[i]);
	pthread_mutex_destroy(&ctx->qp_lock);
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static struct verbs_device *rnic_device_alloc(struct verbs_sysfs_dev *sysfs)
{
	struct rnic_device *dev = calloc(1, sizeof(*dev));

	return dev ? &dev->ibv_dev : NULL;
}

static void rnic_uninit_device(struct verbs_device *vdev)
{
	free(container_of(vdev, struct rnic_device, ibv_dev));
}

static const struct verbs_match_ent rnic_match_table[] = {
	VERBS_PCI_MATCH(RNIC_PCI_VENDOR_ID, RNIC_PCI_DEVICE_ID, NULL),
	{}
};

static const struct verbs_device_ops rnic_dev_ops;

bool rnic_is_ours(struct ibv_device *device)
{
	return verbs_get_device(device)->ops == &rnic_dev_ops;
}

static const struct verbs_device_ops rnic_dev_ops = {
	.name = "rnic",
	.match_min_abi_version = 1,
	.match_max_abi_version = 1,
	.match_table = rnic_match_table,
	.alloc_device = rnic_device_alloc,
	.uninit_device = rnic_uninit_device,
	.alloc_context = rnic_alloc_context,
};
PROVIDER_DRIVER(rnic, rnic_dev_ops);
