// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Queue pairs and the data path.  The device owns the QP's state from RTS
 * on: it goes to RTS when CONNECT or ACCEPT has adopted a connection
 * (rnic_ib_cm.c, which also records RTS and, when the connection ends,
 * ERR).  An iWARP QP starts in INIT; modify_qp records INIT and RTR (what
 * rdma_cm asks before it connects), refuses RTS without a connection, as
 * siw does, and turns SQD and ERR into DISCONNECT (graceful or abortive)
 * or, with no connection, MODIFY_QP to ERROR, which flushes.  Work
 * requests become the device's 128-byte WQEs, written into the rings and
 * rung with one doorbell; a WQE's wr_id is the driver's index and the
 * user's wr_id waits in a per-slot array until the completion comes back
 * (rnic_ib_cq.c).  The QPs of a direct context are posted to by the
 * process itself, through rings and a doorbell page it maps
 * (rnic-ib-uapi.h).
 */
#include <rdma/uverbs_ioctl.h>
#include <linux/interrupt.h>
#include <linux/uaccess.h>
#include "rnic_ib.h"

static u32 rnic_ib_log(u32 n)
{
	return max_t(u32, order_base_2(max_t(u32, n, 1)), 1);
}


static void rnic_ib_qp_free(struct rnic_ib_dev *dev, struct rnic_ib_qp *qp)
{
	if (qp->sq_map) {
		rnic_ib_umap_ring_free(dev, &qp->sq, qp->sq_map);
		if (qp->rq_map)
			rnic_ib_umap_ring_free(dev, &qp->rq, qp->rq_map);
		return;
	}
	rnic_ring_free(dev->rdev, &qp->sq);
	rnic_ring_free(dev->rdev, &qp->rq);
	kvfree(qp->sq_wr_id);
	kvfree(qp->rq_wr_id);
}

/* The rings of a kernel QP, or of a QP the kernel posts to for a process. */
static int rnic_ib_qp_rings(struct rnic_ib_dev *dev, struct rnic_ib_qp *qp,
			    u32 slog, u32 rlog)
{
	qp->sq_wr_id = kvcalloc(1u << slog, sizeof(u64), GFP_KERNEL);
	if (!qp->sq_wr_id)
		return -ENOMEM;
	if (!rlog)
		return rnic_ring_alloc(dev->rdev, &qp->sq, slog,
				       RNIC_SQ_WQE_SIZE);
	qp->rq_wr_id = kvcalloc(1u << rlog, sizeof(u64), GFP_KERNEL);
	if (!qp->rq_wr_id)
		return -ENOMEM;
	return rnic_ring_alloc(dev->rdev, &qp->sq, slog, RNIC_SQ_WQE_SIZE) ?:
	       rnic_ring_alloc(dev->rdev, &qp->rq, rlog, RNIC_RQ_WQE_SIZE);
}

/* A direct QP's rings: pages the process maps and writes. */
static int rnic_ib_qp_urings(struct rnic_ib_dev *dev, struct rnic_ib_qp *qp,
			     u32 slog, u32 rlog)
{
	int err = rnic_ib_umap_ring(dev, &qp->sq, slog, RNIC_SQ_WQE_SIZE, 0,
				    true, &qp->sq_map);

	if (err || !rlog)
		return err;
	err = rnic_ib_umap_ring(dev, &qp->rq, rlog, RNIC_RQ_WQE_SIZE, 0, true,
				&qp->rq_map);
	if (err) {
		rnic_ib_umap_ring_free(dev, &qp->sq, qp->sq_map);
		qp->sq_map = NULL;
	}
	return err;
}

/* Offers a direct QP's rings (or, flags 0, says the kernel posts). */
static int rnic_ib_qp_export(struct rnic_ib_qp *qp, struct ib_udata *udata)
{
	struct rnic_ib_create_qp_resp resp = { };
	u64 sq_key, rq_key;
	int err;

	if (qp->sq_map) {
		rq_key = 0;
		err = rnic_ib_umap_insert(udata, qp->sq_map, &sq_key) ?:
		      (qp->rq_map ?
		       rnic_ib_umap_insert(udata, qp->rq_map, &rq_key) : 0);
		if (err)
			return err;
		resp = (struct rnic_ib_create_qp_resp) {
			.sq_key = sq_key, .rq_key = rq_key,
			.sq_len = qp->sq_map->len,
			.rq_len = qp->rq_map ? qp->rq_map->len : 0,
			.sq_log_size = qp->sq.log_size,
			.rq_log_size = qp->rq.log_size,
			.flags = RNIC_IB_DIRECT,
		};
	}
	return ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
}

static int rnic_ib_qp_check(struct rnic_ib_dev *dev,
			    struct ib_qp_init_attr *attr)
{
	u32 max_wr = le32_to_cpu(dev->rdev->attr.max_qp_wr);
	u32 max_sge = le32_to_cpu(dev->rdev->attr.max_sge);
	struct ib_qp_cap *cap = &attr->cap;

	if (cap->max_send_wr > max_wr / RNIC_IB_SQ_WQES_PER_WR)
		return -EINVAL;

	if (attr->qp_type != IB_QPT_RC || attr->create_flags)
		return -EOPNOTSUPP;
	if (cap->max_inline_data > RNIC_WQE_INLINE_MAX)
		return -EINVAL;
	if (cap->max_send_wr > max_wr || cap->max_recv_wr > max_wr ||
	    cap->max_send_sge > max_sge || cap->max_recv_sge > max_sge)
		return -EINVAL;
	return 0;
}

int rnic_ib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		      struct ib_udata *udata)
{
	struct rnic_ib_dev *dev = to_rdev(ibqp->device);
	struct rnic_ib_qp *qp = to_rnic_ib_qp(ibqp);
	struct rnic_cmd_qp p = { };
	struct ib_qp_cap *cap = &attr->cap;
	struct rnic_cmd cmd;
	u32 slog, rlog, udb;
	int err;

	err = rnic_ib_qp_check(dev, attr);
	if (err)
		return err;
	/* With an SRQ, no receive queue of its own (rlog 0: no ring). */
	qp->srq = attr->srq ? to_rnic_ib_srq(attr->srq) : NULL;
	slog = rnic_ib_log(cap->max_send_wr * RNIC_IB_SQ_WQES_PER_WR);
	rlog = qp->srq ? 0 : rnic_ib_log(cap->max_recv_wr);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	refcount_set(&qp->ref, 1);
	init_completion(&qp->free);
	qp->sig_all = attr->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->state = IB_QPS_INIT;
	/* An older librnic leaves no room for the rings' offsets. */
	udb = udata ? rnic_ib_uctx(udata)->udb : 0;
	if (udb && udata->outlen >= sizeof(struct rnic_ib_create_qp_resp))
		err = rnic_ib_qp_urings(dev, qp, slog, rlog);
	else
		err = rnic_ib_qp_rings(dev, qp, slog, rlog);
	if (err)
		goto err_free;
	p.pdn = cpu_to_le32(to_rpd(ibqp->pd)->pdn);
	p.send_cqn = cpu_to_le32(to_rnic_ib_cq(attr->send_cq)->cqn);
	p.recv_cqn = cpu_to_le32(to_rnic_ib_cq(attr->recv_cq)->cqn);
	p.srqn = cpu_to_le32(qp->srq ? qp->srq->srqn : RNIC_NO_SRQ);
	p.sq_addr = cpu_to_le64(qp->sq.dma);
	p.rq_addr = cpu_to_le64(qp->rq.dma);
	p.sq_log_size = slog;
	p.rq_log_size = rlog;
	p.udb = cpu_to_le32(qp->sq_map ? udb : 0);
	/* Fast registration and the physical STag: never for user space. */
	if (!udata)
		p.flags = cpu_to_le16(RNIC_QP_FLAG_KERNEL);
	err = rnic_ib_cmd(dev, RNIC_CMD_CREATE_QP, &p, sizeof(p), &cmd);
	if (err)
		goto err_free;
	qp->qpn = le32_to_cpu(((struct rnic_cmd_qp *)cmd.u.raw)->qpn);
	if (udata)
		err = rnic_ib_qp_export(qp, udata);
	if (!err)
		err = xa_err(xa_store_irq(&dev->qps, qp->qpn, qp, GFP_KERNEL));
	if (err) {
		rnic_ib_cmd_handle(dev, RNIC_CMD_DESTROY_QP, qp->qpn);
		goto err_free;
	}
	ibqp->qp_num = qp->qpn;
	cap->max_send_wr = (1u << slog) / RNIC_IB_SQ_WQES_PER_WR;
	cap->max_recv_wr = qp->srq ? 0 : 1u << rlog;
	cap->max_inline_data = RNIC_WQE_INLINE_MAX;
	return 0;

err_free:
	rnic_ib_qp_free(dev, qp);
	return err;
}

void rnic_ib_qp_get(struct ib_qp *ibqp)
{
	refcount_inc(&to_rnic_ib_qp(ibqp)->ref);
}

void rnic_ib_qp_put(struct ib_qp *ibqp)
{
	struct rnic_ib_qp *qp = to_rnic_ib_qp(ibqp);

	if (refcount_dec_and_test(&qp->ref))
		complete(&qp->free);
}

/* iw_cm, under its spinlock: no sleeping. */
struct ib_qp *rnic_ib_get_qp(struct ib_device *ibdev, int qpn)
{
	struct rnic_ib_qp *qp = xa_load(&to_rdev(ibdev)->qps, qpn);

	return qp ? &qp->ibqp : NULL;
}

/* MODIFY_QP to ERROR: the device flushes everything outstanding. */
int rnic_ib_qp_error(struct rnic_ib_dev *dev, struct rnic_ib_qp *qp)
{
	struct rnic_cmd_modify_qp p = {
		.qpn = cpu_to_le32(qp->qpn),
		.mask = cpu_to_le32(RNIC_MODIFY_STATE),
		.state = RNIC_QPS_ERROR,
	};
	int err = rnic_ib_cmd(dev, RNIC_CMD_MODIFY_QP, &p, sizeof(p), NULL);

	/* Already in ERROR (a Terminate, a closed connection): fine. */
	return err == -EINVAL || err == -ENODEV ? 0 : err;
}

int rnic_ib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		      struct ib_udata *udata)
{
	struct rnic_ib_dev *dev = to_rdev(ibqp->device);
	struct rnic_ib_qp *qp = to_rnic_ib_qp(ibqp);
	int err = 0;

	if (!(mask & IB_QP_STATE))
		return 0;
	switch (attr->qp_state) {
	case IB_QPS_SQD:
		err = rnic_ib_cm_disconnect(dev, qp, false);
		break;
	case IB_QPS_ERR:
		err = rnic_ib_cm_disconnect(dev, qp, true);
		if (err == -ENOTCONN)
			err = rnic_ib_qp_error(dev, qp);
		break;
	case IB_QPS_RTS:
		/* Only a connection makes RTS: CONNECT or ACCEPT did. */
		if (READ_ONCE(qp->state) != IB_QPS_RTS)
			return -EINVAL;
		break;
	case IB_QPS_RESET:
	case IB_QPS_INIT:
	case IB_QPS_RTR:
		break;
	default:
		return -EINVAL;
	}
	if (err == -ENOTCONN)
		err = 0;
	if (!err)
		qp->state = attr->qp_state;
	return err;
}

int rnic_ib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		     struct ib_qp_init_attr *init)
{
	struct rnic_ib_qp *qp = to_rnic_ib_qp(ibqp);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	attr->qp_state = READ_ONCE(qp->state);
	attr->cur_qp_state = attr->qp_state;
	attr->cap.max_send_wr = (1u << qp->sq.log_size) / RNIC_IB_SQ_WQES_PER_WR;
	attr->cap.max_recv_wr = qp->srq ? 0 : 1u << qp->rq.log_size;
	attr->cap.max_send_sge = RNIC_WQE_MAX_SGE;
	attr->cap.max_recv_sge = RNIC_WQE_MAX_SGE;
	attr->cap.max_inline_data = RNIC_WQE_INLINE_MAX;
	attr->qp_access_flags = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
				IB_ACCESS_REMOTE_READ;
	init->qp_type = IB_QPT_RC;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	return 0;
}

int rnic_ib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct rnic_ib_dev *dev = to_rdev(ibqp->device);
	struct rnic_ib_qp *qp = to_rnic_ib_qp(ibqp);
	int err;

	/* The connection's consumer hears of its end first. */
	rnic_ib_cm_qp_gone(dev, qp);
	err = rnic_ib_cmd_handle(dev, RNIC_CMD_DESTROY_QP, qp->qpn);
	if (err && err != -ENODEV)
		dev_warn(&dev->rdev->pdev->dev, "QP %u: DESTROY_QP failed (%d)\n",
			 qp->qpn, err);
	/* A poller that found the QP before the erase is done with it. */
	spin_lock_irq(&to_rnic_ib_cq(ibqp->send_cq)->lock);
	spin_unlock_irq(&to_rnic_ib_cq(ibqp->send_cq)->lock);
	spin_lock_irq(&to_rnic_ib_cq(ibqp->recv_cq)->lock);
	spin_unlock_irq(&to_rnic_ib_cq(ibqp->recv_cq)->lock);
	/* iw_cm may still hold the QP until it has taken our CLOSE. */
	rnic_ib_qp_put(ibqp);
	while (!wait_for_completion_timeout(&qp->free, 10 * HZ))
		dev_warn(&dev->rdev->pdev->dev,
			 "QP %u: waiting for iw_cm to let go of it\n", qp->qpn);
	rnic_ib_qp_free(dev, qp);
	return 0;
}

/*
 * IB_SEND_INLINE: the payload is copied into the WQE's SGE area, so the
 * device reads no buffer and the sender may reuse its own at once.  A user
 * QP's addresses are the process's own (uverbs posts in its write()), a
 * kernel QP's are kernel virtual addresses.  Called without sq_lock held:
 * copy_from_user() may fault.
 */
static int rnic_ib_inline(struct rnic_ib_qp *qp, const struct ib_send_wr *wr,
			  struct rnic_sq_wqe *w)
{
	u8 *dst = (u8 *)w->sge;
	u32 len = 0;
	int i;

	BUILD_BUG_ON(sizeof(w->sge) < RNIC_WQE_INLINE_MAX);
	if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_INV &&
	    wr->opcode != IB_WR_RDMA_WRITE &&
	    wr->opcode != IB_WR_RDMA_WRITE_WITH_IMM)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sge = &wr->sg_list[i];

		if (sge->length > RNIC_WQE_INLINE_MAX - len)
			return -EINVAL;
		if (qp->ibqp.uobject) {
			if (copy_from_user(dst + len,
					   u64_to_user_ptr(sge->addr),
					   sge->length))
				return -EFAULT;
		} else {
			memcpy(dst + len, (void *)(uintptr_t)sge->addr,
			       sge->length);
		}
		len += sge->length;
	}
	w->flags |= RNIC_WQE_FLAG_INLINE;
	w->num_sge = len;
	return 0;
}

/* One ib_send_wr as a device WQE; its wr_id is filled in by the caller. */
static int rnic_ib_sq_wqe(struct rnic_ib_qp *qp, const struct ib_send_wr *wr,
			  struct rnic_sq_wqe *w)
{
	int i;

	if (wr->num_sge > RNIC_WQE_MAX_SGE)
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	switch (wr->opcode) {
	case IB_WR_SEND:
		w->opcode = RNIC_WQE_SEND;
		break;
	case IB_WR_SEND_WITH_INV:
		w->opcode = RNIC_WQE_SEND_INV;
		w->imm_or_stag = cpu_to_le32(wr->ex.invalidate_rkey);
		break;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:		/* its second WQE: rnic_ib_imm */
		w->opcode = RNIC_WQE_WRITE;
		break;
	case IB_WR_RDMA_READ:
		w->opcode = RNIC_WQE_READ;
		break;
	case IB_WR_RDMA_READ_WITH_INV:
		/*
		 * The sink's STag goes, as siw and cxgb4 read it: rdma_rw
		 * fills ex.invalidate_rkey before it gives the MR its new
		 * key, so that field names the key of the last registration.
		 */
		if (wr->num_sge != 1)
			return -EINVAL;
		w->opcode = RNIC_WQE_READ_INV;
		w->imm_or_stag = cpu_to_le32(wr->sg_list[0].lkey);
		break;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
	case IB_WR_ATOMIC_CMP_AND_SWP:
		w->opcode = wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ?
			    RNIC_WQE_ATOMIC_CSWAP : RNIC_WQE_ATOMIC_FADD;
		w->remote_addr = cpu_to_le64(atomic_wr(wr)->remote_addr);
		w->remote_stag = cpu_to_le32(atomic_wr(wr)->rkey);
		w->atomic_arg0 = cpu_to_le64(atomic_wr(wr)->compare_add);
		w->atomic_arg1 = cpu_to_le64(atomic_wr(wr)->swap);
		break;
	case IB_WR_LOCAL_INV:
		w->opcode = RNIC_WQE_LOCAL_INV;
		w->imm_or_stag = cpu_to_le32(wr->ex.invalidate_rkey);
		break;
	case IB_WR_REG_MR:
		break;
	default:
		return -EINVAL;
	}
	if (w->opcode == RNIC_WQE_WRITE || w->opcode == RNIC_WQE_READ ||
	    w->opcode == RNIC_WQE_READ_INV) {
		w->remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		w->remote_stag = cpu_to_le32(rdma_wr(wr)->rkey);
	}
	if (qp->sig_all || (wr->send_flags & IB_SEND_SIGNALED))
		w->flags |= RNIC_WQE_FLAG_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		w->flags |= RNIC_WQE_FLAG_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		w->flags |= RNIC_WQE_FLAG_FENCE;
	if (wr->opcode == IB_WR_REG_MR)
		return rnic_ib_fast_reg_wqe(reg_wr(wr), w);
	if (wr->send_flags & IB_SEND_INLINE)
		return rnic_ib_inline(qp, wr, w);
	w->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		w->sge[i].addr = cpu_to_le64(wr->sg_list[i].addr);
		w->sge[i].length = cpu_to_le32(wr->sg_list[i].length);
		w->sge[i].stag = cpu_to_le32(wr->sg_list[i].lkey);
	}
	return 0;
}

/*
 * An RDMA Write with immediate data is two WQEs: the Write, and RFC 7306's
 * Immediate Data, which takes one receive at the peer as the verbs'
 * immediate does.  The WR's completion (signaled, solicited) is the
 * second's; the Write before it keeps only its fence.
 */
static void rnic_ib_imm(const struct ib_send_wr *wr, struct rnic_sq_wqe *write,
			struct rnic_sq_wqe *imm)
{
	u8 done = RNIC_WQE_FLAG_SIGNALED | RNIC_WQE_FLAG_SOLICITED;

	*imm = (struct rnic_sq_wqe) {
		.opcode = RNIC_WQE_IMM_DATA,
		.flags = write->flags & done,
		.imm_or_stag = cpu_to_le32(be32_to_cpu(wr->ex.imm_data)),
	};
	write->flags &= ~done;
}

static void rnic_ib_sq_put(struct rnic_ib_qp *qp, struct rnic_sq_wqe *w,
			   u64 wr_id)
{
	u32 mask = (1u << qp->sq.log_size) - 1;

	w->wr_id = cpu_to_le64(qp->sq_prod);
	memcpy((struct rnic_sq_wqe *)qp->sq.va + (qp->sq_prod & mask), w,
	       sizeof(*w));
	qp->sq_wr_id[qp->sq_prod & mask] = wr_id;
	qp->sq_prod++;
}

/*
 * Each WR is built on the stack first (an inline copy may fault), then
 * copied into its slot under sq_lock; one doorbell for the whole chain.
 */
int rnic_ib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		      const struct ib_send_wr **bad)
{
	struct rnic_ib_dev *dev = to_rdev(ibqp->device);
	struct rnic_ib_qp *qp = to_rnic_ib_qp(ibqp);
	u32 mask = (1u << qp->sq.log_size) - 1;
	struct rnic_sq_wqe wqe, imm;
	unsigned long flags;
	bool rung = false;
	int err = qp->sq_map ? -EINVAL : 0;	/* the process posts */

	for (; wr && !err; wr = wr->next) {
		u32 n = wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM ? 2 : 1;

		err = rnic_ib_sq_wqe(qp, wr, &wqe);
		if (err)
			break;
		if (n == 2)
			rnic_ib_imm(wr, &wqe, &imm);
		spin_lock_irqsave(&qp->sq_lock, flags);
		if (qp->sq_prod + n - 1 - READ_ONCE(qp->sq_done) > mask) {
			spin_unlock_irqrestore(&qp->sq_lock, flags);
			err = -ENOMEM;
			break;
		}
		rnic_ib_sq_put(qp, &wqe, wr->wr_id);
		if (n == 2)
			rnic_ib_sq_put(qp, &imm, wr->wr_id);
		spin_unlock_irqrestore(&qp->sq_lock, flags);
		rung = true;
	}
	if (rung) {
		/* writel() orders the ring stores; sq_prod only grows. */
		spin_lock_irqsave(&qp->sq_lock, flags);
		rnic_write(dev->rdev, RNIC_REG_DB_SQ,
			   RNIC_DB_VALUE(qp->qpn, qp->sq_prod));
		spin_unlock_irqrestore(&qp->sq_lock, flags);
	}
	if (err && bad)
		*bad = wr;
	return err;
}

/*
 * A receive WQE (RQ or SRQ) whose wr_id is the driver's @tag; its use
 * invalidates STag @linked (0: none).
 */
void rnic_ib_rq_wqe(struct rnic_rq_wqe *w, const struct ib_recv_wr *wr,
		    u32 tag, u32 linked)
{
	int i;

	memset(w, 0, sizeof(*w));
	w->wr_id = cpu_to_le64(tag);
	w->linked_stag = cpu_to_le32(linked);
	w->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		w->sge[i].addr = cpu_to_le64(wr->sg_list[i].addr);
		w->sge[i].length = cpu_to_le32(wr->sg_list[i].length);
		w->sge[i].stag = cpu_to_le32(wr->sg_list[i].lkey);
	}
}

static int rnic_ib_post_recv_link(struct ib_qp *ibqp,
				  const struct ib_recv_wr *wr,
				  const struct ib_recv_wr **bad, u32 linked)
{
	struct rnic_ib_dev *dev = to_rdev(ibqp->device);
	struct rnic_ib_qp *qp = to_rnic_ib_qp(ibqp);
	u32 mask = (1u << qp->rq.log_size) - 1, start;
	struct rnic_rq_wqe *w;
	unsigned long flags;
	int err = 0;

	if (qp->sq_map || qp->srq) {
		if (bad)
			*bad = wr;
		return -EINVAL;		/* the process posts, or the SRQ */
	}
	spin_lock_irqsave(&qp->rq_lock, flags);
	start = qp->rq_prod;
	for (; wr; wr = wr->next) {
		if (wr->num_sge > RNIC_WQE_MAX_SGE) {
			err = -EINVAL;
			break;
		}
		if (qp->rq_prod - READ_ONCE(qp->rq_done) > mask) {
			err = -ENOMEM;
			break;
		}
		w = (struct rnic_rq_wqe *)qp->rq.va + (qp->rq_prod & mask);
		rnic_ib_rq_wqe(w, wr, qp->rq_prod, linked);
		qp->rq_wr_id[qp->rq_prod & mask] = wr->wr_id;
		qp->rq_prod++;
	}
	if (qp->rq_prod != start)
		rnic_write(dev->rdev, RNIC_REG_DB_RQ,
			   RNIC_DB_VALUE(qp->qpn, qp->rq_prod));
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	if (err && bad)
		*bad = wr;
	return err;
}

int rnic_ib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad)
{
	return rnic_ib_post_recv_link(ibqp, wr, bad, 0);
}

/*
 * One receive whose use invalidates @stag (an MR's or MW's; docs/spec.md
 * "Receive-linked STags"): the STag is good until a message lands here.
 */
int rnic_ib_post_recv_linked(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
			     u32 stag, const struct ib_recv_wr **bad)
{
	if (wr->next || !stag) {
		if (bad)
			*bad = wr;
		return -EINVAL;
	}
	return rnic_ib_post_recv_link(ibqp, wr, bad, stag);
}
EXPORT_SYMBOL_GPL(rnic_ib_post_recv_linked);

/* An asynchronous event for the QP's consumer (from the event work). */
void rnic_ib_qp_async(struct rnic_ib_dev *dev, u32 qpn,
		      enum ib_event_type type)
{
	struct rnic_ib_qp *qp = xa_load(&dev->qps, qpn);
	struct ib_event ev = { .device = &dev->ibdev, .event = type };

	if (!qp || !qp->ibqp.event_handler)
		return;
	ev.element.qp = &qp->ibqp;
	qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}
