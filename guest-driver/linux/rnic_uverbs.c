// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * /dev/rnicN: user programs drive the device through ioctls
 * (guest-driver/rnic-uapi.h).  Each open file is a context that owns what
 * it creates: PDs, MRs over its own pinned pages, CQs and QPs whose rings
 * the driver allocates in coherent DMA memory, listeners and connections.
 * Work requests and completions are copied through ioctls; events are
 * routed from the admin interrupt to the owning file's queue.  Closing the
 * file destroys everything it owned; removing the device releases every
 * file's resources at once and fails later calls with -ENODEV.
 */
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include "rnic.h"
#include "../rnic-uapi.h"

#define RNIC_UCTX_EVENTS	256	/* per open file */
#define RNIC_U_MR_MAX_PAGES	(SZ_1G / PAGE_SIZE)
#define RNIC_POLL_MAX		256	/* CQEs per RNIC_IOC_POLL_CQ */
#define RNIC_POST_MAX		1024	/* WQEs per post */

static DEFINE_IDA(rnic_ida);

struct rnic_umr {
	u32 stag;
	unsigned long npages;
	struct page **pages;
	dma_addr_t *dma;
};

struct rnic_ucq {
	struct kref ref;		/* the context, and sleeping pollers */
	struct rnic_dev *rdev;
	u32 cqn;
	struct rnic_ring ring;
	u32 cons;			/* entries consumed (free-running) */
	u32 qps;			/* QPs of this file using it */
};

struct rnic_uqp {
	u32 qpn;
	struct rnic_ring sq, rq;
	u32 sq_prod, sq_done;		/* posted, completed (free-running) */
	u32 rq_prod, rq_done;
	u8 *sq_signaled;		/* per SQ slot: did the user ask for a CQE */
	struct rnic_ucq *scq, *rcq;
};

struct rnic_uctx {
	struct rnic_dev *rdev;
	struct list_head node;		/* in rdev->ctxs */
	struct mutex lock;		/* every field below but the events */
	bool dead;			/* resources already released */
	struct xarray pds;		/* pdn -> xa_mk_value(1) */
	struct xarray mrs;		/* stag -> struct rnic_umr */
	struct xarray cqs;		/* cqn -> struct rnic_ucq */
	struct xarray qps;		/* qpn -> struct rnic_uqp */
	struct xarray listeners;	/* id -> xa_mk_value(1) */
	struct xarray conns;		/* conn id -> xa_mk_value(1) */

	spinlock_t ev_lock;		/* the event queue */
	wait_queue_head_t ev_wait;
	u32 ev_head, ev_tail, ev_lost;
	struct rnic_event ev[RNIC_UCTX_EVENTS];
};

/* ---- the device's lifetime ---- */

static void rnic_dev_release(struct kref *ref)
{
	struct rnic_dev *rdev = container_of(ref, struct rnic_dev, ref);

	xa_destroy(&rdev->qp_owner);
	xa_destroy(&rdev->cq_owner);
	xa_destroy(&rdev->lis_owner);
	xa_destroy(&rdev->conn_owner);
	if (rdev->index >= 0)
		ida_free(&rnic_ida, rdev->index);
	pci_dev_put(rdev->pdev);
	kfree(rdev);
}

void rnic_dev_put(struct rnic_dev *rdev)
{
	kref_put(&rdev->ref, rnic_dev_release);
}

/* ---- events: admin interrupt -> the owning file ---- */

static void rnic_uctx_push_event(struct rnic_uctx *ctx,
				 const struct rnic_event *ev)
{
	spin_lock(&ctx->ev_lock);
	if (ctx->ev_tail - ctx->ev_head < RNIC_UCTX_EVENTS)
		ctx->ev[ctx->ev_tail++ % RNIC_UCTX_EVENTS] = *ev;
	else
		ctx->ev_lost++;
	spin_unlock(&ctx->ev_lock);
	wake_up_interruptible(&ctx->ev_wait);
}

/* Called from the admin interrupt for every event but FATAL's logging. */
void rnic_uverbs_event(struct rnic_dev *rdev, const struct rnic_event *ev)
{
	u32 id = le32_to_cpu(ev->id), arg0 = le32_to_cpu(ev->arg0);
	struct rnic_uctx *ctx = NULL;
	unsigned long flags;

	spin_lock_irqsave(&rdev->route_lock, flags);
	switch (ev->type) {
	case RNIC_EV_CONN_REQUEST:
		ctx = xa_load(&rdev->lis_owner, arg0);
		break;
	case RNIC_EV_CONN_ERROR:
		/* The QP's number when one was named, else the connection's. */
		ctx = xa_load(&rdev->qp_owner, id);
		if (!ctx)
			ctx = xa_load(&rdev->conn_owner, id);
		break;
	case RNIC_EV_CQ_OVERFLOW:
		ctx = xa_load(&rdev->cq_owner, id);
		break;
	case RNIC_EV_FATAL:
		list_for_each_entry(ctx, &rdev->ctxs, node)
			rnic_uctx_push_event(ctx, ev);
		ctx = NULL;
		break;
	default:
		ctx = xa_load(&rdev->qp_owner, id);
		break;
	}
	if (ctx)
		rnic_uctx_push_event(ctx, ev);
	spin_unlock_irqrestore(&rdev->route_lock, flags);
}

/* After erasing a file's routes: no interrupt still delivers to it. */
static void rnic_route_barrier(struct rnic_dev *rdev)
{
	spin_lock_irq(&rdev->route_lock);
	spin_unlock_irq(&rdev->route_lock);
}

static int rnic_route_add(struct xarray *xa, u32 id, struct rnic_uctx *ctx)
{
	return xa_err(xa_store_irq(xa, id, ctx, GFP_KERNEL));
}

/* ---- commands on behalf of a file ---- */

static int rnic_ucmd(struct rnic_uctx *ctx, u8 opcode, const void *in,
		     size_t len, struct rnic_cmd *out)
{
	struct rnic_cmd cmd = { .opcode = opcode };
	int err;

	/* A removed device's queue is aborted: commands fail with -EIO. */
	if (ctx->dead)
		return -ENODEV;
	memcpy(cmd.u.raw, in, min_t(size_t, len, sizeof(cmd.u.raw)));
	err = rnic_cmd_exec_quiet(ctx->rdev, &cmd);
	if (out)
		*out = cmd;
	return err;
}

/* A command on one object: its handle is the payload's first word. */
static int rnic_ucmd_handle(struct rnic_uctx *ctx, u8 opcode, u32 handle)
{
	__le32 h = cpu_to_le32(handle);

	return rnic_ucmd(ctx, opcode, &h, sizeof(h), NULL);
}

/* ---- memory regions ---- */

static void rnic_umr_unpin(struct rnic_dev *rdev, struct rnic_umr *mr,
			   unsigned long mapped, unsigned long pinned)
{
	unsigned long i;

	for (i = 0; i < mapped; i++)
		dma_unmap_page(&rdev->pdev->dev, mr->dma[i], PAGE_SIZE,
			       DMA_BIDIRECTIONAL);
	if (pinned)
		unpin_user_pages_dirty_lock(mr->pages, pinned, true);
	kvfree(mr->pages);
	kvfree(mr->dma);
	kfree(mr);
}

static int rnic_umr_pin(struct rnic_dev *rdev, struct rnic_umr *mr,
			unsigned long start, unsigned int gup_flags)
{
	struct device *dev = &rdev->pdev->dev;
	unsigned long pinned = 0, mapped;
	int ret;

	while (pinned < mr->npages) {
		ret = pin_user_pages_fast(start + pinned * PAGE_SIZE,
					  mr->npages - pinned, gup_flags,
					  mr->pages + pinned);
		if (ret <= 0) {
			rnic_umr_unpin(rdev, mr, 0, pinned);
			return ret ? ret : -EFAULT;
		}
		pinned += ret;
	}
	for (mapped = 0; mapped < mr->npages; mapped++) {
		mr->dma[mapped] = dma_map_page(dev, mr->pages[mapped], 0,
					       PAGE_SIZE, DMA_BIDIRECTIONAL);
		if (dma_mapping_error(dev, mr->dma[mapped])) {
			rnic_umr_unpin(rdev, mr, mapped, pinned);
			return -ENOMEM;
		}
	}
	return 0;
}

static int rnic_ioc_reg_mr(struct rnic_uctx *ctx, struct rnic_u_reg_mr *u)
{
	struct rnic_dev *rdev = ctx->rdev;
	struct device *dev = &rdev->pdev->dev;
	u32 writes = RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_WRITE |
		     RNIC_ACC_REMOTE_ATOMIC;
	unsigned long offset = u->addr & ~PAGE_MASK, i;
	struct rnic_cmd_reg_mr p = { 0 };
	struct rnic_cmd cmd;
	struct rnic_umr *mr;
	dma_addr_t pbl_dma;
	__le64 *pbl;
	int err;

	if (!xa_load(&ctx->pds, u->pdn))
		return -ENOENT;
	if (!u->length || u->addr + u->length < u->addr ||
	    u->length > le64_to_cpu(rdev->attr.max_mr_size))
		return -EINVAL;
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return -ENOMEM;
	mr->npages = DIV_ROUND_UP(offset + u->length, PAGE_SIZE);
	if (mr->npages > RNIC_U_MR_MAX_PAGES) {
		kfree(mr);
		return -E2BIG;
	}
	mr->pages = kvcalloc(mr->npages, sizeof(*mr->pages), GFP_KERNEL);
	mr->dma = kvcalloc(mr->npages, sizeof(*mr->dma), GFP_KERNEL);
	if (!mr->pages || !mr->dma) {
		rnic_umr_unpin(rdev, mr, 0, 0);
		return -ENOMEM;
	}
	err = rnic_umr_pin(rdev, mr, u->addr & PAGE_MASK,
			   FOLL_LONGTERM | (u->access & writes ? FOLL_WRITE : 0));
	if (err)
		return err;

	/* The page list is read by REG_MR and not kept by the device. */
	pbl = dma_alloc_coherent(dev, mr->npages * sizeof(*pbl), &pbl_dma,
				 GFP_KERNEL);
	if (!pbl) {
		err = -ENOMEM;
		goto err_unpin;
	}
	for (i = 0; i < mr->npages; i++)
		pbl[i] = cpu_to_le64(mr->dma[i]);
	p.pdn = cpu_to_le32(u->pdn);
	p.access = cpu_to_le32(u->access);
	p.iova = cpu_to_le64(u->addr);
	p.length = cpu_to_le64(u->length);
	p.pbl_addr = cpu_to_le64(pbl_dma);
	p.npages = cpu_to_le32(mr->npages);
	p.first_byte_offset = cpu_to_le32(offset);
	p.page_shift = PAGE_SHIFT;
	p.key = u->key;
	p.policy = u->policy;
	err = rnic_ucmd(ctx, RNIC_CMD_REG_MR, &p, sizeof(p), &cmd);
	dma_free_coherent(dev, mr->npages * sizeof(*pbl), pbl, pbl_dma);
	if (err)
		goto err_unpin;
	mr->stag = le32_to_cpu(((struct rnic_cmd_reg_mr *)cmd.u.raw)->stag);
	err = xa_err(xa_store(&ctx->mrs, mr->stag, mr, GFP_KERNEL));
	if (err) {
		rnic_ucmd_handle(ctx, RNIC_CMD_DEREG_MR, mr->stag);
		goto err_unpin;
	}
	u->stag = mr->stag;
	return 0;

err_unpin:
	rnic_umr_unpin(rdev, mr, mr->npages, mr->npages);
	return err;
}

/*
 * The device no longer reaches the pages once DEREG_MR succeeded; if it
 * failed for another reason than a dead device, the pages stay pinned.
 */
static int rnic_umr_destroy(struct rnic_uctx *ctx, struct rnic_umr *mr)
{
	int err = 0;

	if (!ctx->dead)
		err = rnic_ucmd_handle(ctx, RNIC_CMD_DEREG_MR, mr->stag);
	if (err && err != -ENODEV)
		return err;
	xa_erase(&ctx->mrs, mr->stag);
	rnic_umr_unpin(ctx->rdev, mr, mr->npages, mr->npages);
	return 0;
}

/* ---- CQs ---- */

static void rnic_ucq_release(struct kref *ref)
{
	struct rnic_ucq *cq = container_of(ref, struct rnic_ucq, ref);

	rnic_ring_free(cq->rdev, &cq->ring);
	kfree(cq);
}

static int rnic_ioc_create_cq(struct rnic_uctx *ctx, struct rnic_u_cq *u)
{
	struct rnic_dev *rdev = ctx->rdev;
	struct rnic_cmd_cq p = { 0 };
	struct rnic_cmd cmd;
	struct rnic_ucq *cq;
	int err;

	if (u->log_size < 1 || u->log_size > 16 ||
	    (1u << u->log_size) > le32_to_cpu(rdev->attr.max_cqe))
		return -EINVAL;
	cq = kzalloc(sizeof(*cq), GFP_KERNEL);
	if (!cq)
		return -ENOMEM;
	kref_init(&cq->ref);
	cq->rdev = rdev;
	err = rnic_ring_alloc(rdev, &cq->ring, u->log_size, RNIC_CQE_SIZE);
	if (err)
		goto err_free;
	p.ring_addr = cpu_to_le64(cq->ring.dma);
	p.log_size = u->log_size;
	p.msix_vector = RNIC_MSIX_VEC_ADMIN + 1 +
		atomic_inc_return(&rdev->next_vector) % (RNIC_MSIX_VECTORS - 1);
	err = rnic_ucmd(ctx, RNIC_CMD_CREATE_CQ, &p, sizeof(p), &cmd);
	if (err)
		goto err_ring;
	cq->cqn = le32_to_cpu(((struct rnic_cmd_cq *)cmd.u.raw)->cqn);
	err = xa_err(xa_store(&ctx->cqs, cq->cqn, cq, GFP_KERNEL));
	if (!err)
		err = rnic_route_add(&rdev->cq_owner, cq->cqn, ctx);
	if (err) {
		xa_erase(&ctx->cqs, cq->cqn);
		rnic_ucmd_handle(ctx, RNIC_CMD_DESTROY_CQ, cq->cqn);
		goto err_ring;
	}
	u->cqn = cq->cqn;
	return 0;

err_ring:
	rnic_ring_free(rdev, &cq->ring);
err_free:
	kfree(cq);
	return err;
}

static int rnic_ucq_destroy(struct rnic_uctx *ctx, struct rnic_ucq *cq)
{
	int err = 0;

	if (cq->qps)
		return -EBUSY;
	if (!ctx->dead)
		err = rnic_ucmd_handle(ctx, RNIC_CMD_DESTROY_CQ, cq->cqn);
	if (err && err != -ENODEV)
		return err;
	xa_erase(&ctx->cqs, cq->cqn);
	xa_erase_irq(&ctx->rdev->cq_owner, cq->cqn);
	kref_put(&cq->ref, rnic_ucq_release);
	return 0;
}

static struct rnic_cq_entry *rnic_ucq_next(struct rnic_ucq *cq)
{
	u32 mask = (1u << cq->ring.log_size) - 1;
	struct rnic_cq_entry *e = (struct rnic_cq_entry *)cq->ring.va +
				  (cq->cons & mask);
	u8 phase = ((cq->cons >> cq->ring.log_size) & 1) ^ 1;

	return (READ_ONCE(e->phase) & 1) == phase ? e : NULL;
}

/*
 * Takes up to @max entries off the ring.  Every send WR is posted
 * signaled so the driver can count free SQ slots; the entries of those
 * the user posted unsignaled are dropped here unless they failed.
 */
static u32 rnic_ucq_poll(struct rnic_uctx *ctx, struct rnic_ucq *cq,
			 struct rnic_cq_entry *out, u32 max)
{
	struct rnic_cq_entry *e, c;
	struct rnic_uqp *qp;
	u32 n = 0, start = cq->cons, slot;
	bool keep;

	while (n < max && (e = rnic_ucq_next(cq))) {
		dma_rmb();	/* the phase before the rest of the entry */
		c = *e;
		cq->cons++;
		keep = true;
		qp = xa_load(&ctx->qps, le32_to_cpu(c.qpn));
		if (qp && c.opcode == RNIC_WQE_RECV) {
			qp->rq_done++;
		} else if (qp) {
			slot = qp->sq_done & ((1u << qp->sq.log_size) - 1);
			keep = qp->sq_signaled[slot] ||
			       c.status != RNIC_CQE_SUCCESS;
			qp->sq_done++;
		}
		if (keep)
			out[n++] = c;
	}
	if (cq->cons != start)
		rnic_write(ctx->rdev, RNIC_REG_DB_CQ,
			   RNIC_DB_VALUE(cq->cqn, cq->cons));
	return n;
}

/* ---- QPs ---- */

static void rnic_uqp_free(struct rnic_dev *rdev, struct rnic_uqp *qp)
{
	rnic_ring_free(rdev, &qp->sq);
	rnic_ring_free(rdev, &qp->rq);
	kfree(qp->sq_signaled);
	kfree(qp);
}

static int rnic_ioc_create_qp(struct rnic_uctx *ctx, struct rnic_u_qp *u)
{
	struct rnic_dev *rdev = ctx->rdev;
	u32 max_wr = le32_to_cpu(rdev->attr.max_qp_wr);
	struct rnic_cmd_qp p = { 0 };
	struct rnic_ucq *scq, *rcq;
	struct rnic_cmd cmd;
	struct rnic_uqp *qp;
	int err;

	scq = xa_load(&ctx->cqs, u->send_cqn);
	rcq = xa_load(&ctx->cqs, u->recv_cqn);
	if (!xa_load(&ctx->pds, u->pdn) || !scq || !rcq)
		return -ENOENT;
	if (u->sq_log_size < 1 || u->sq_log_size > 15 ||
	    u->rq_log_size < 1 || u->rq_log_size > 15 ||
	    (1u << u->sq_log_size) > max_wr || (1u << u->rq_log_size) > max_wr)
		return -EINVAL;
	qp = kzalloc(sizeof(*qp), GFP_KERNEL);
	if (!qp)
		return -ENOMEM;
	qp->sq_signaled = kzalloc(1u << u->sq_log_size, GFP_KERNEL);
	err = qp->sq_signaled ? 0 : -ENOMEM;
	if (!err)
		err = rnic_ring_alloc(rdev, &qp->sq, u->sq_log_size,
				      RNIC_SQ_WQE_SIZE);
	if (!err)
		err = rnic_ring_alloc(rdev, &qp->rq, u->rq_log_size,
				      RNIC_RQ_WQE_SIZE);
	if (err)
		goto err_free;
	p.pdn = cpu_to_le32(u->pdn);
	p.send_cqn = cpu_to_le32(u->send_cqn);
	p.recv_cqn = cpu_to_le32(u->recv_cqn);
	p.srqn = cpu_to_le32(RNIC_NO_SRQ);
	p.sq_addr = cpu_to_le64(qp->sq.dma);
	p.rq_addr = cpu_to_le64(qp->rq.dma);
	p.sq_log_size = u->sq_log_size;
	p.rq_log_size = u->rq_log_size;
	err = rnic_ucmd(ctx, RNIC_CMD_CREATE_QP, &p, sizeof(p), &cmd);
	if (err)
		goto err_free;
	qp->qpn = le32_to_cpu(((struct rnic_cmd_qp *)cmd.u.raw)->qpn);
	err = xa_err(xa_store(&ctx->qps, qp->qpn, qp, GFP_KERNEL));
	if (!err)
		err = rnic_route_add(&rdev->qp_owner, qp->qpn, ctx);
	if (err) {
		xa_erase(&ctx->qps, qp->qpn);
		rnic_ucmd_handle(ctx, RNIC_CMD_DESTROY_QP, qp->qpn);
		goto err_free;
	}
	qp->scq = scq;
	qp->rcq = rcq;
	scq->qps++;
	rcq->qps++;
	u->qpn = qp->qpn;
	return 0;

err_free:
	rnic_uqp_free(rdev, qp);
	return err;
}

static int rnic_uqp_destroy(struct rnic_uctx *ctx, struct rnic_uqp *qp)
{
	int err = 0;

	/* DESTROY_QP also resets the QP's connection. */
	if (!ctx->dead)
		err = rnic_ucmd_handle(ctx, RNIC_CMD_DESTROY_QP, qp->qpn);
	if (err && err != -ENODEV)
		return err;
	xa_erase(&ctx->qps, qp->qpn);
	xa_erase_irq(&ctx->rdev->qp_owner, qp->qpn);
	qp->scq->qps--;
	qp->rcq->qps--;
	rnic_uqp_free(ctx->rdev, qp);
	return 0;
}

/* Copies WQEs from the user into free slots and rings the doorbell once. */
static int rnic_ioc_post(struct rnic_uctx *ctx, struct rnic_u_post *u,
			 bool send)
{
	struct rnic_uqp *qp = xa_load(&ctx->qps, u->qpn);
	const void __user *src = u64_to_user_ptr(u->wqes);
	struct rnic_ring *ring;
	u32 *prod, done, mask, n, slot;
	size_t size = send ? RNIC_SQ_WQE_SIZE : RNIC_RQ_WQE_SIZE;
	struct rnic_sq_wqe *w;
	int err = 0;

	if (!qp)
		return -ENOENT;
	if (u->count > RNIC_POST_MAX)
		return -EINVAL;
	ring = send ? &qp->sq : &qp->rq;
	prod = send ? &qp->sq_prod : &qp->rq_prod;
	done = send ? qp->sq_done : qp->rq_done;
	mask = (1u << ring->log_size) - 1;
	for (n = 0; n < u->count && *prod - done <= mask; n++) {
		slot = *prod & mask;
		w = ring->va + slot * size;
		if (copy_from_user(w, src + n * size, size)) {
			err = -EFAULT;
			break;
		}
		if (send) {
			qp->sq_signaled[slot] = w->flags &
						RNIC_WQE_FLAG_SIGNALED;
			w->flags |= RNIC_WQE_FLAG_SIGNALED;
		}
		(*prod)++;
	}
	if (n)	/* writel() orders the ring stores before the doorbell */
		rnic_write(ctx->rdev, send ? RNIC_REG_DB_SQ : RNIC_REG_DB_RQ,
			   RNIC_DB_VALUE(qp->qpn, *prod));
	u->count = n;
	return n ? 0 : err;
}

/* ---- connections ---- */

static int rnic_ioc_listen(struct rnic_uctx *ctx, struct rnic_u_listen *u)
{
	struct rnic_cmd_listen p = { .local = u->local };
	struct rnic_cmd_listen *out;
	struct rnic_cmd cmd;
	int err;

	p.backlog = cpu_to_le32(u->backlog);
	err = rnic_ucmd(ctx, RNIC_CMD_LISTEN, &p, sizeof(p), &cmd);
	if (err)
		return err;
	out = (struct rnic_cmd_listen *)cmd.u.raw;
	u->local = out->local;
	u->listener_id = le32_to_cpu(out->listener_id);
	err = xa_err(xa_store(&ctx->listeners, u->listener_id, xa_mk_value(1),
			      GFP_KERNEL));
	if (!err)
		err = rnic_route_add(&ctx->rdev->lis_owner, u->listener_id,
				     ctx);
	if (err) {
		xa_erase(&ctx->listeners, u->listener_id);
		rnic_ucmd_handle(ctx, RNIC_CMD_UNLISTEN, u->listener_id);
	}
	return err;
}

static int rnic_ulistener_destroy(struct rnic_uctx *ctx, u32 id)
{
	int err = 0;

	if (!ctx->dead)
		err = rnic_ucmd_handle(ctx, RNIC_CMD_UNLISTEN, id);
	xa_erase(&ctx->listeners, id);
	xa_erase_irq(&ctx->rdev->lis_owner, id);
	return err == -ENODEV ? 0 : err;
}

/* A connection id this file learnt from an event or made itself. */
static int rnic_uconn_add(struct rnic_uctx *ctx, u32 conn_id)
{
	int err = xa_err(xa_store(&ctx->conns, conn_id, xa_mk_value(1),
				  GFP_KERNEL));

	return err ? err : rnic_route_add(&ctx->rdev->conn_owner, conn_id, ctx);
}

static int rnic_ioc_conn(struct rnic_uctx *ctx, unsigned int ioc,
			 struct rnic_u_conn *u)
{
	u8 pdata[RNIC_MAX_PDATA];
	union {
		struct rnic_cmd_connect connect;
		struct rnic_cmd_accept accept;	/* ACCEPT, REJECT */
	} p = { };
	struct rnic_conn_param *param = &p.accept.param;
	struct rnic_device_attr *a = &ctx->rdev->attr;
	struct rnic_cmd cmd;
	dma_addr_t pd_dma = 0;
	void *pd_va = NULL;
	u8 opcode;
	int err;

	if (ioc != RNIC_IOC_REJECT && !xa_load(&ctx->qps, u->qpn))
		return -ENOENT;
	if (ioc != RNIC_IOC_CONNECT && !xa_load(&ctx->conns, u->conn_id))
		return -ENOENT;
	if (u->pdata_len > sizeof(pdata))
		return -EINVAL;
	if (u->pdata_len) {
		if (copy_from_user(pdata, u64_to_user_ptr(u->pdata),
				   u->pdata_len))
			return -EFAULT;
		pd_va = dma_alloc_coherent(&ctx->rdev->pdev->dev, u->pdata_len,
					   &pd_dma, GFP_KERNEL);
		if (!pd_va)
			return -ENOMEM;
		memcpy(pd_va, pdata, u->pdata_len);
	}
	if (ioc == RNIC_IOC_CONNECT) {
		p.connect.qpn = cpu_to_le32(u->qpn);
		p.connect.peer = u->peer;
		param = &p.connect.param;
	} else {
		p.accept.conn_id = cpu_to_le32(u->conn_id);
		if (ioc == RNIC_IOC_ACCEPT)
			p.accept.qpn = cpu_to_le32(u->qpn);
	}
	param->ird = cpu_to_le16(min_t(u32, u->ird, le32_to_cpu(a->max_ird)));
	param->ord = cpu_to_le16(min_t(u32, u->ord, le32_to_cpu(a->max_ord)));
	param->pdata_len = cpu_to_le16(u->pdata_len);
	param->rtr = u->rtr;
	param->pdata_addr = cpu_to_le64(pd_dma);
	opcode = ioc == RNIC_IOC_CONNECT ? RNIC_CMD_CONNECT :
		 ioc == RNIC_IOC_ACCEPT ? RNIC_CMD_ACCEPT : RNIC_CMD_REJECT;
	err = rnic_ucmd(ctx, opcode, &p, sizeof(p), &cmd);
	if (pd_va)
		dma_free_coherent(&ctx->rdev->pdev->dev, u->pdata_len, pd_va,
				  pd_dma);
	if (err || ioc != RNIC_IOC_CONNECT)
		return err;
	u->conn_id = le32_to_cpu(((struct rnic_cmd_connect *)cmd.u.raw)->conn_id);
	return rnic_uconn_add(ctx, u->conn_id);
}

static int rnic_ioc_query_conn(struct rnic_uctx *ctx,
			       struct rnic_u_query_conn *u)
{
	struct device *dev = &ctx->rdev->pdev->dev;
	struct rnic_cmd_query_conn p = { 0 }, *out;
	struct rnic_cmd cmd;
	dma_addr_t info_dma;
	void *info;
	int err;

	if (!xa_load(&ctx->conns, u->conn_id))
		return -ENOENT;
	info = dma_alloc_coherent(dev, RNIC_CONN_INFO_SIZE, &info_dma,
				  GFP_KERNEL);
	if (!info)
		return -ENOMEM;
	p.conn_id = cpu_to_le32(u->conn_id);
	p.info_addr = cpu_to_le64(info_dma);
	err = rnic_ucmd(ctx, RNIC_CMD_QUERY_CONN, &p, sizeof(p), &cmd);
	out = (struct rnic_cmd_query_conn *)cmd.u.raw;
	u->rtr = out->rtr;
	u->peer_rtr = out->peer_rtr;
	if (!err && copy_to_user(u64_to_user_ptr(u->info), info,
				 RNIC_CONN_INFO_SIZE))
		err = -EFAULT;
	dma_free_coherent(dev, RNIC_CONN_INFO_SIZE, info, info_dma);
	return err;
}

/* ---- waiting ---- */

static bool rnic_uctx_has_event(struct rnic_uctx *ctx)
{
	return READ_ONCE(ctx->ev_tail) != READ_ONCE(ctx->ev_head) ||
	       READ_ONCE(ctx->dead);
}

static int rnic_ioc_get_event(struct rnic_uctx *ctx, struct rnic_u_event *u)
{
	long left;
	bool got = false;

	left = wait_event_interruptible_timeout(ctx->ev_wait,
						rnic_uctx_has_event(ctx),
						msecs_to_jiffies(u->timeout_ms));
	if (left < 0)
		return left;
	spin_lock_irq(&ctx->ev_lock);
	if (ctx->ev_tail != ctx->ev_head) {
		u->ev = ctx->ev[ctx->ev_head++ % RNIC_UCTX_EVENTS];
		got = true;
	}
	u->lost = ctx->ev_lost;
	spin_unlock_irq(&ctx->ev_lock);
	if (!got)
		return READ_ONCE(ctx->dead) ? -ENODEV : -ETIMEDOUT;

	/* Connection ids the file may now ACCEPT, REJECT or QUERY_CONN. */
	mutex_lock(&ctx->lock);
	switch (u->ev.type) {
	case RNIC_EV_CONN_REQUEST:
		rnic_uconn_add(ctx, le32_to_cpu(u->ev.id));
		break;
	case RNIC_EV_CONN_ESTABLISHED:
	case RNIC_EV_CONN_REJECTED:
		rnic_uconn_add(ctx, le32_to_cpu(u->ev.arg0));
		break;
	}
	mutex_unlock(&ctx->lock);
	return 0;
}

static bool rnic_ucq_ready(struct rnic_uctx *ctx, struct rnic_ucq *cq)
{
	return READ_ONCE(ctx->dead) || READ_ONCE(ctx->rdev->dead) ||
	       rnic_ucq_next(cq);
}

/* Called with ctx->lock held; drops it while sleeping. */
static int rnic_ioc_poll_cq(struct rnic_uctx *ctx, struct rnic_u_poll *u)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(u->timeout_ms);
	struct rnic_cq_entry *buf;
	struct rnic_ucq *cq;
	u32 max = min_t(u32, u->count, RNIC_POLL_MAX), n;
	long left, wait;
	int err = 0;

	cq = xa_load(&ctx->cqs, u->cqn);
	if (!cq)
		return -ENOENT;
	buf = kmalloc_array(max ? max : 1, sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	kref_get(&cq->ref);
	for (;;) {
		n = rnic_ucq_poll(ctx, cq, buf, max);
		wait = (long)(deadline - jiffies);
		if (n || !max || !u->timeout_ms || wait <= 0)
			break;
		/* Arm, then look again before sleeping: no wake-up is lost. */
		rnic_write(ctx->rdev, RNIC_REG_DB_CQ_ARM,
			   cq->cqn | RNIC_DB_ARM_NEXT);
		mutex_unlock(&ctx->lock);
		left = wait_event_interruptible_timeout(ctx->rdev->cq_wait,
							rnic_ucq_ready(ctx, cq),
							wait);
		mutex_lock(&ctx->lock);
		if (left < 0) {
			err = left;
			break;
		}
		if (ctx->dead) {
			err = -ENODEV;
			break;
		}
		if (!xa_load(&ctx->cqs, u->cqn)) {	/* destroyed meanwhile */
			err = -ENOENT;
			break;
		}
	}
	kref_put(&cq->ref, rnic_ucq_release);
	if (!err && n && copy_to_user(u64_to_user_ptr(u->cqes), buf,
				      n * sizeof(*buf)))
		err = -EFAULT;
	kfree(buf);
	u->count = err ? 0 : n;
	return err;
}

/* ---- the file ---- */

/*
 * Destroys everything @ctx owns, dependents first.  With the device gone
 * (ctx->dead) no command is sent and only memory is freed.
 */
static void rnic_uctx_destroy_all(struct rnic_uctx *ctx)
{
	struct rnic_dev *rdev = ctx->rdev;
	unsigned long id;
	struct rnic_umr *mr;
	struct rnic_ucq *cq;
	struct rnic_uqp *qp;
	void *entry;
	int err;

	xa_for_each(&ctx->listeners, id, entry)
		rnic_ulistener_destroy(ctx, id);
	xa_for_each(&ctx->conns, id, entry) {
		struct rnic_cmd_accept p = { .conn_id = cpu_to_le32(id) };

		/* Connections still pending are refused; others say no. */
		if (!ctx->dead)
			rnic_ucmd(ctx, RNIC_CMD_REJECT, &p, sizeof(p), NULL);
		xa_erase(&ctx->conns, id);
		xa_erase_irq(&rdev->conn_owner, id);
	}
	xa_for_each(&ctx->qps, id, qp) {
		err = rnic_uqp_destroy(ctx, qp);
		if (err)
			dev_warn(&rdev->pdev->dev, "QP %lu not destroyed (%d): its rings stay allocated\n",
				 id, err);
	}
	xa_for_each(&ctx->cqs, id, cq) {
		err = rnic_ucq_destroy(ctx, cq);
		if (err)
			dev_warn(&rdev->pdev->dev, "CQ %lu not destroyed (%d): its ring stays allocated\n",
				 id, err);
	}
	xa_for_each(&ctx->mrs, id, mr) {
		err = rnic_umr_destroy(ctx, mr);
		if (err)
			dev_warn(&rdev->pdev->dev, "MR 0x%lx not deregistered (%d): its pages stay pinned\n",
				 id, err);
	}
	xa_for_each(&ctx->pds, id, entry) {
		if (!ctx->dead)
			rnic_ucmd_handle(ctx, RNIC_CMD_DESTROY_PD, id);
		xa_erase(&ctx->pds, id);
	}
	rnic_route_barrier(rdev);
}

static int rnic_open(struct inode *inode, struct file *file)
{
	struct miscdevice *misc = file->private_data;
	struct rnic_dev *rdev = container_of(misc, struct rnic_dev, misc);
	struct rnic_uctx *ctx;

	if (READ_ONCE(rdev->dead))
		return -ENODEV;
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	ctx->rdev = rdev;
	mutex_init(&ctx->lock);
	xa_init(&ctx->pds);
	xa_init(&ctx->mrs);
	xa_init(&ctx->cqs);
	xa_init(&ctx->qps);
	xa_init(&ctx->listeners);
	xa_init(&ctx->conns);
	spin_lock_init(&ctx->ev_lock);
	init_waitqueue_head(&ctx->ev_wait);
	/* misc_open() holds misc_mtx: remove cannot run concurrently. */
	kref_get(&rdev->ref);
	mutex_lock(&rdev->ctxs_lock);
	spin_lock_irq(&rdev->route_lock);
	list_add_tail(&ctx->node, &rdev->ctxs);
	spin_unlock_irq(&rdev->route_lock);
	mutex_unlock(&rdev->ctxs_lock);
	file->private_data = ctx;
	return nonseekable_open(inode, file);
}

static int rnic_release(struct inode *inode, struct file *file)
{
	struct rnic_uctx *ctx = file->private_data;
	struct rnic_dev *rdev = ctx->rdev;

	mutex_lock(&rdev->ctxs_lock);
	spin_lock_irq(&rdev->route_lock);
	list_del(&ctx->node);
	spin_unlock_irq(&rdev->route_lock);
	mutex_unlock(&rdev->ctxs_lock);
	mutex_lock(&ctx->lock);
	rnic_uctx_destroy_all(ctx);
	mutex_unlock(&ctx->lock);
	xa_destroy(&ctx->pds);
	xa_destroy(&ctx->mrs);
	xa_destroy(&ctx->cqs);
	xa_destroy(&ctx->qps);
	xa_destroy(&ctx->listeners);
	xa_destroy(&ctx->conns);
	kfree(ctx);
	rnic_dev_put(rdev);
	return 0;
}

/* The ioctls that take and return one fixed-size structure. */
static long rnic_uctx_ioctl(struct rnic_uctx *ctx, unsigned int ioc,
			    void *arg)
{
	struct rnic_cmd cmd;
	void *ptr;
	int err;

	switch (ioc) {
	case RNIC_IOC_QUERY_DEVICE:
		memcpy(arg, &ctx->rdev->attr, sizeof(ctx->rdev->attr));
		return 0;
	case RNIC_IOC_CREATE_PD: {
		struct rnic_u_pd *u = arg;

		err = rnic_ucmd(ctx, RNIC_CMD_CREATE_PD, NULL, 0, &cmd);
		if (err)
			return err;
		u->pdn = le32_to_cpu(((struct rnic_cmd_pd *)cmd.u.raw)->pdn);
		err = xa_err(xa_store(&ctx->pds, u->pdn, xa_mk_value(1),
				      GFP_KERNEL));
		if (err)
			rnic_ucmd_handle(ctx, RNIC_CMD_DESTROY_PD, u->pdn);
		return err;
	}
	case RNIC_IOC_DESTROY_PD: {
		struct rnic_u_pd *u = arg;

		if (!xa_load(&ctx->pds, u->pdn))
			return -ENOENT;
		err = rnic_ucmd_handle(ctx, RNIC_CMD_DESTROY_PD, u->pdn);
		if (!err)
			xa_erase(&ctx->pds, u->pdn);
		return err;
	}
	case RNIC_IOC_REG_MR:
		return rnic_ioc_reg_mr(ctx, arg);
	case RNIC_IOC_DEREG_MR: {
		struct rnic_u_stag *u = arg;

		ptr = xa_load(&ctx->mrs, u->stag);
		return ptr ? rnic_umr_destroy(ctx, ptr) : -ENOENT;
	}
	case RNIC_IOC_INVALIDATE: {
		struct rnic_u_stag *u = arg;

		/* Only a region of this file (windows are not offered). */
		if (!xa_load(&ctx->mrs, u->stag))
			return -ENOENT;
		return rnic_ucmd_handle(ctx, RNIC_CMD_INVALIDATE, u->stag);
	}
	case RNIC_IOC_CREATE_CQ:
		return rnic_ioc_create_cq(ctx, arg);
	case RNIC_IOC_DESTROY_CQ: {
		struct rnic_u_cq *u = arg;

		ptr = xa_load(&ctx->cqs, u->cqn);
		return ptr ? rnic_ucq_destroy(ctx, ptr) : -ENOENT;
	}
	case RNIC_IOC_CREATE_QP:
		return rnic_ioc_create_qp(ctx, arg);
	case RNIC_IOC_DESTROY_QP: {
		struct rnic_u_qp *u = arg;

		ptr = xa_load(&ctx->qps, u->qpn);
		return ptr ? rnic_uqp_destroy(ctx, ptr) : -ENOENT;
	}
	case RNIC_IOC_MODIFY_QP: {
		struct rnic_cmd_modify_qp *u = arg;

		if (!xa_load(&ctx->qps, le32_to_cpu(u->qpn)))
			return -ENOENT;
		return rnic_ucmd(ctx, RNIC_CMD_MODIFY_QP, u, sizeof(*u), NULL);
	}
	case RNIC_IOC_QUERY_QP: {
		struct rnic_cmd_query_qp *u = arg;

		if (!xa_load(&ctx->qps, le32_to_cpu(u->qpn)))
			return -ENOENT;
		err = rnic_ucmd(ctx, RNIC_CMD_QUERY_QP, u, sizeof(*u), &cmd);
		if (!err)
			memcpy(u, cmd.u.raw, sizeof(*u));
		return err;
	}
	case RNIC_IOC_LISTEN:
		return rnic_ioc_listen(ctx, arg);
	case RNIC_IOC_UNLISTEN: {
		struct rnic_u_listen *u = arg;

		if (!xa_load(&ctx->listeners, u->listener_id))
			return -ENOENT;
		return rnic_ulistener_destroy(ctx, u->listener_id);
	}
	case RNIC_IOC_CONNECT:
	case RNIC_IOC_ACCEPT:
	case RNIC_IOC_REJECT:
		return rnic_ioc_conn(ctx, ioc, arg);
	case RNIC_IOC_DISCONNECT: {
		struct rnic_cmd_disconnect *u = arg;

		if (!xa_load(&ctx->qps, le32_to_cpu(u->qpn)))
			return -ENOENT;
		return rnic_ucmd(ctx, RNIC_CMD_DISCONNECT, u, sizeof(*u), NULL);
	}
	case RNIC_IOC_QUERY_CONN:
		return rnic_ioc_query_conn(ctx, arg);
	case RNIC_IOC_POST_SEND:
	case RNIC_IOC_POST_RECV:
		return rnic_ioc_post(ctx, arg, ioc == RNIC_IOC_POST_SEND);
	case RNIC_IOC_POLL_CQ:
		return rnic_ioc_poll_cq(ctx, arg);
	}
	return -ENOTTY;
}

static long rnic_ioctl(struct file *file, unsigned int ioc, unsigned long arg)
{
	struct rnic_uctx *ctx = file->private_data;
	void __user *uarg = (void __user *)arg;
	union {
		struct rnic_device_attr attr;
		struct rnic_u_reg_mr mr;
		struct rnic_u_conn conn;
		struct rnic_u_event ev;
		struct rnic_u_qp qp;
		struct rnic_u_poll poll;
		struct rnic_cmd_query_qp qqp;
		struct rnic_u_query_conn qconn;
	} buf;
	size_t size = _IOC_SIZE(ioc);
	long err;

	if (_IOC_TYPE(ioc) != RNIC_IOC_MAGIC || size > sizeof(buf))
		return -ENOTTY;
	memset(&buf, 0, sizeof(buf));
	if ((_IOC_DIR(ioc) & _IOC_WRITE) && copy_from_user(&buf, uarg, size))
		return -EFAULT;
	if (ioc == RNIC_IOC_GET_EVENT) {
		err = rnic_ioc_get_event(ctx, &buf.ev);
	} else {
		mutex_lock(&ctx->lock);
		err = ctx->dead ? -ENODEV : rnic_uctx_ioctl(ctx, ioc, &buf);
		mutex_unlock(&ctx->lock);
	}
	if (!err && (_IOC_DIR(ioc) & _IOC_READ) &&
	    copy_to_user(uarg, &buf, size))
		return -EFAULT;
	return err;
}

static const struct file_operations rnic_fops = {
	.owner		= THIS_MODULE,
	.open		= rnic_open,
	.release	= rnic_release,
	.unlocked_ioctl	= rnic_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	/* No .llseek: lseek() fails with ESPIPE. */
};

/* Registers /dev/rnicN; the device is up and QUERY_DEVICE done. */
int rnic_uverbs_init(struct rnic_dev *rdev)
{
	int err;

	rdev->index = ida_alloc(&rnic_ida, GFP_KERNEL);
	if (rdev->index < 0)
		return rdev->index;
	snprintf(rdev->name, sizeof(rdev->name), "rnic%d", rdev->index);
	rdev->misc.minor = MISC_DYNAMIC_MINOR;
	rdev->misc.name = rdev->name;
	rdev->misc.fops = &rnic_fops;
	rdev->misc.parent = &rdev->pdev->dev;
	rdev->misc.mode = 0600;
	err = misc_register(&rdev->misc);
	if (err)
		return err;
	rdev->misc_registered = true;
	dev_info(&rdev->pdev->dev, "/dev/%s\n", rdev->name);
	return 0;
}

/* Remove, step 1: no new opens, commands fail, sleepers wake up. */
void rnic_uverbs_unplug(struct rnic_dev *rdev)
{
	struct rnic_uctx *ctx;

	if (rdev->misc_registered)
		misc_deregister(&rdev->misc);
	rdev->misc_registered = false;
	WRITE_ONCE(rdev->dead, true);
	rnic_cmdq_abort(rdev);
	mutex_lock(&rdev->ctxs_lock);
	list_for_each_entry(ctx, &rdev->ctxs, node)
		wake_up_interruptible(&ctx->ev_wait);
	mutex_unlock(&rdev->ctxs_lock);
	wake_up_all(&rdev->cq_wait);
}

/*
 * Remove, step 2, with the device reset: the memory of every file is
 * released now; the files themselves go when they are closed.
 */
void rnic_uverbs_release_all(struct rnic_dev *rdev)
{
	struct rnic_uctx *ctx;

	mutex_lock(&rdev->ctxs_lock);
	list_for_each_entry(ctx, &rdev->ctxs, node) {
		mutex_lock(&ctx->lock);
		WRITE_ONCE(ctx->dead, true);
		rnic_uctx_destroy_all(ctx);
		mutex_unlock(&ctx->lock);
		wake_up_interruptible(&ctx->ev_wait);
	}
	mutex_unlock(&rdev->ctxs_lock);
	wake_up_all(&rdev->cq_wait);
}
