// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Shared receive queues.  The device takes an SRQ's entries in ring
 * order, but their receives complete on whichever QPs took them, in any
 * order: so a WQE's wr_id is not a ring position but a tag, an index into
 * the SRQ's table of the consumer's wr_ids, free again when its
 * completion is polled.  The ring never overflows: the entries the device
 * has not fetched are a part of those without a completion, which the
 * table bounds to the ring's size.  A direct context's SRQ is the
 * process's to post to (librnic keeps the tags: rnic-ib-uapi.h); any
 * other, the kernel's.
 */
#include "rnic_ib.h"

static void rnic_ib_srq_free(struct rnic_ib_dev *dev, struct rnic_ib_srq *srq)
{
	if (srq->umap)
		rnic_ib_umap_ring_free(dev, &srq->ring, srq->umap);
	else
		rnic_ring_free(dev->rdev, &srq->ring);
	kvfree(srq->wr_id);
	kvfree(srq->free);
}

/* The ring and the tags of an SRQ the kernel posts to. */
static int rnic_ib_srq_kring(struct rnic_ib_dev *dev, struct rnic_ib_srq *srq,
			     u32 log)
{
	u32 i, n = 1u << log;

	srq->wr_id = kvcalloc(n, sizeof(*srq->wr_id), GFP_KERNEL);
	srq->free = kvcalloc(n, sizeof(*srq->free), GFP_KERNEL);
	if (!srq->wr_id || !srq->free)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		srq->free[i] = n - 1 - i;
	srq->nfree = n;
	return rnic_ring_alloc(dev->rdev, &srq->ring, log, RNIC_RQ_WQE_SIZE);
}

/* Offers a direct SRQ's ring (or, flags 0, says the kernel posts). */
static int rnic_ib_srq_export(struct rnic_ib_srq *srq, struct ib_udata *udata)
{
	struct rnic_ib_create_srq_resp resp = { .srqn = srq->srqn };
	int err;

	if (srq->umap) {
		err = rnic_ib_umap_insert(udata, srq->umap, &resp.srq_key);
		if (err)
			return err;
		resp.srq_len = srq->umap->len;
		resp.log_size = srq->ring.log_size;
		resp.flags = RNIC_IB_DIRECT;
	}
	return ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
}

int rnic_ib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		       struct ib_udata *udata)
{
	struct rnic_ib_dev *dev = to_rdev(ibsrq->device);
	const struct rnic_device_attr *d = &dev->rdev->attr;
	struct rnic_ib_srq *srq = to_rnic_ib_srq(ibsrq);
	struct ib_srq_attr *a = &init->attr;
	struct rnic_cmd_srq p = { };
	struct rnic_cmd cmd;
	u32 log, udb;
	int err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	/* srq_limit is for modify_srq: create ignores it, as verbs say. */
	if (a->max_wr > le32_to_cpu(d->max_srq_wr) ||
	    a->max_sge > le32_to_cpu(d->max_sge))
		return -EINVAL;
	log = max_t(u32, order_base_2(max_t(u32, a->max_wr, 1)), 1);
	spin_lock_init(&srq->lock);
	/* An older librnic leaves no room for the ring's offset. */
	udb = udata ? rnic_ib_uctx(udata)->udb : 0;
	if (udb && udata->outlen >= sizeof(struct rnic_ib_create_srq_resp))
		err = rnic_ib_umap_ring(dev, &srq->ring, log, RNIC_RQ_WQE_SIZE,
					0, true, &srq->umap);
	else
		err = rnic_ib_srq_kring(dev, srq, log);
	if (err)
		goto err_free;
	p.pdn = cpu_to_le32(to_rpd(ibsrq->pd)->pdn);
	p.log_size = log;
	p.ring_addr = cpu_to_le64(srq->ring.dma);
	p.udb = cpu_to_le32(srq->umap ? udb : 0);
	err = rnic_ib_cmd(dev, RNIC_CMD_CREATE_SRQ, &p, sizeof(p), &cmd);
	if (err)
		goto err_free;
	srq->srqn = le32_to_cpu(((struct rnic_cmd_srq *)cmd.u.raw)->srqn);
	err = udata ? rnic_ib_srq_export(srq, udata) : 0;
	if (!err) {
		mutex_lock(&dev->cm_lock);
		err = xa_err(xa_store(&dev->srqs, srq->srqn, srq, GFP_KERNEL));
		mutex_unlock(&dev->cm_lock);
	}
	if (err) {
		rnic_ib_cmd_handle(dev, RNIC_CMD_DESTROY_SRQ, srq->srqn);
		goto err_free;
	}
	a->max_wr = 1u << log;
	a->max_sge = le32_to_cpu(d->max_sge);
	return 0;

err_free:
	rnic_ib_srq_free(dev, srq);
	return err;
}

int rnic_ib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct rnic_ib_dev *dev = to_rdev(ibsrq->device);
	struct rnic_ib_srq *srq = to_rnic_ib_srq(ibsrq);
	int err;

	/* After this, no SRQ_LIMIT event finds it. */
	mutex_lock(&dev->cm_lock);
	xa_erase(&dev->srqs, srq->srqn);
	mutex_unlock(&dev->cm_lock);
	err = rnic_ib_cmd_handle(dev, RNIC_CMD_DESTROY_SRQ, srq->srqn);
	/* The core destroyed its QPs first: the device has let go. */
	if (err && err != -ENODEV)
		dev_warn(&dev->rdev->pdev->dev, "SRQ %u: DESTROY_SRQ failed (%d)\n",
			 srq->srqn, err);
	rnic_ib_srq_free(dev, srq);
	return 0;
}

/*
 * The limit event (MODIFY_SRQ arms it); an SRQ's size cannot change
 * (IB_SRQ_MAX_WR: EOPNOTSUPP).
 */
int rnic_ib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		       enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct rnic_ib_dev *dev = to_rdev(ibsrq->device);
	struct rnic_ib_srq *srq = to_rnic_ib_srq(ibsrq);
	struct rnic_cmd_modify_srq p = {
		.srqn = cpu_to_le32(srq->srqn),
		.limit = cpu_to_le32(attr->srq_limit),
	};
	int err;

	if (mask & ~IB_SRQ_LIMIT)
		return -EOPNOTSUPP;
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit > 1u << srq->ring.log_size)
		return -EINVAL;
	/*
	 * Not under cm_lock: a consumer may re-arm from its event handler,
	 * which the event work calls holding it.
	 */
	err = rnic_ib_cmd(dev, RNIC_CMD_MODIFY_SRQ, &p, sizeof(p), NULL);
	if (!err)
		WRITE_ONCE(srq->limit, attr->srq_limit);
	return err;
}

/* SRQ_LIMIT (the event work, under cm_lock): the device has disarmed. */
void rnic_ib_srq_limit(struct rnic_ib_dev *dev, u32 srqn)
{
	struct rnic_ib_srq *srq = xa_load(&dev->srqs, srqn);
	struct ib_event ev = {
		.device = &dev->ibdev,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
	};

	if (!srq)
		return;
	WRITE_ONCE(srq->limit, 0);
	if (srq->ibsrq.event_handler) {
		ev.element.srq = &srq->ibsrq;
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
}

int rnic_ib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct rnic_ib_srq *srq = to_rnic_ib_srq(ibsrq);

	attr->max_wr = 1u << srq->ring.log_size;
	attr->max_sge = RNIC_WQE_MAX_SGE;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

int rnic_ib_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			  const struct ib_recv_wr **bad)
{
	struct rnic_ib_dev *dev = to_rdev(ibsrq->device);
	struct rnic_ib_srq *srq = to_rnic_ib_srq(ibsrq);
	u32 mask = (1u << srq->ring.log_size) - 1, start, tag;
	unsigned long flags;
	int err = 0;

	if (srq->umap) {
		if (bad)
			*bad = wr;
		return -EINVAL;		/* the process posts */
	}
	spin_lock_irqsave(&srq->lock, flags);
	start = srq->prod;
	for (; wr; wr = wr->next) {
		if (wr->num_sge > RNIC_WQE_MAX_SGE) {
			err = -EINVAL;
			break;
		}
		if (!srq->nfree) {
			err = -ENOMEM;
			break;
		}
		tag = srq->free[--srq->nfree];
		srq->wr_id[tag] = wr->wr_id;
		rnic_ib_rq_wqe((struct rnic_rq_wqe *)srq->ring.va +
			       (srq->prod & mask), wr, tag, 0);
		srq->prod++;
	}
	if (srq->prod != start)
		rnic_write(dev->rdev, RNIC_REG_DB_SRQ,
			   RNIC_DB_VALUE(srq->srqn, srq->prod));
	spin_unlock_irqrestore(&srq->lock, flags);
	if (err && bad)
		*bad = wr;
	return err;
}

/* A receive of the SRQ completed with @tag: its wr_id, and the tag free. */
bool rnic_ib_srq_done(struct rnic_ib_srq *srq, u32 tag, u64 *wr_id)
{
	unsigned long flags;

	if (tag >= 1u << srq->ring.log_size)
		return false;
	spin_lock_irqsave(&srq->lock, flags);
	*wr_id = srq->wr_id[tag];
	srq->free[srq->nfree++] = tag;
	spin_unlock_irqrestore(&srq->lock, flags);
	return true;
}
