// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Completion queues: the device's CQ ring, polled by the driver (kernel
 * users and the uverbs POLL_CQ write() command alike) or, in a direct
 * context, by the process itself (rnic-ib-uapi.h).  A CQE's wr_id is the
 * poller's index of the WQE it completes; the user's wr_id is kept per
 * slot (rnic_ib_qp.c), and the index tells how far the queue has drained,
 * since one queue's completions come in order.
 */
#include <linux/interrupt.h>
#include <linux/mm.h>
#include <rdma/uverbs_ioctl.h>
#include "rnic_ib.h"

/* A user CQ's ring, then one page for cons (rnic_ib_umap.c). */
static int rnic_ib_cq_uring(struct rnic_ib_dev *dev, struct rnic_ib_cq *cq,
			    u32 log)
{
	int err = rnic_ib_umap_ring(dev, &cq->ring, log, RNIC_CQE_SIZE,
				    PAGE_SIZE, cq->direct, &cq->umap);

	if (!err)
		cq->ucons = cq->ring.va + cq->ring.bytes;
	return err;
}

static void rnic_ib_cq_ring_free(struct rnic_ib_dev *dev,
				 struct rnic_ib_cq *cq)
{
	if (cq->umap)
		rnic_ib_umap_ring_free(dev, &cq->ring, cq->umap);
	else
		rnic_ring_free(dev->rdev, &cq->ring);
}

/* Offers the ring to the process. */
static int rnic_ib_cq_export(struct rnic_ib_cq *cq, struct ib_udata *udata)
{
	struct rnic_ib_create_cq_resp resp = {
		.mmap_len = cq->umap->len,
		.log_size = cq->ring.log_size,
		.cqn = cq->cqn,
		.flags = cq->direct ? RNIC_IB_DIRECT : 0,
	};
	u64 key;
	int err;

	err = rnic_ib_umap_insert(udata, cq->umap, &key);
	if (err)
		return err;
	resp.mmap_key = key;
	return ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
}

int rnic_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		      struct uverbs_attr_bundle *attrs)
{
	/* A kernel CQ has no bundle. */
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
	struct rnic_ib_dev *dev = to_rdev(ibcq->device);
	struct rnic_ib_cq *cq = to_rnic_ib_cq(ibcq);
	struct rnic_cmd_cq p = { };
	struct rnic_cmd cmd;
	u32 log, udb = 0;
	int err;

	if (attr->flags || !attr->cqe ||
	    attr->cqe > le32_to_cpu(dev->rdev->attr.max_cqe))
		return -EINVAL;
	log = max_t(u32, order_base_2(attr->cqe), 1);
	spin_lock_init(&cq->lock);
	/* The first three fields are all an older librnic knows of. */
	if (udata && udata->outlen >= offsetof(struct rnic_ib_create_cq_resp,
					       cqn)) {
		/* A direct context's CQs are consumed by the process. */
		udb = rnic_ib_uctx(udata)->udb;
		cq->direct = udb;
		err = rnic_ib_cq_uring(dev, cq, log);
	} else {
		err = rnic_ring_alloc(dev->rdev, &cq->ring, log, RNIC_CQE_SIZE);
	}
	if (err)
		return err;
	cq->vector = RNIC_MSIX_VEC_ADMIN + 1 +
		     attr->comp_vector % (RNIC_MSIX_VECTORS - 1);
	p.ring_addr = cpu_to_le64(cq->ring.dma);
	p.log_size = log;
	p.msix_vector = cq->vector;
	p.udb = cpu_to_le32(udb);
	err = rnic_ib_cmd(dev, RNIC_CMD_CREATE_CQ, &p, sizeof(p), &cmd);
	if (err)
		goto err_ring;
	cq->cqn = le32_to_cpu(((struct rnic_cmd_cq *)cmd.u.raw)->cqn);
	if (cq->umap) {
		err = rnic_ib_cq_export(cq, udata);
		if (err)
			goto err_cq;
	}
	err = xa_err(xa_store_irq(&dev->cqs, cq->cqn, cq, GFP_KERNEL));
	if (err)
		goto err_cq;
	ibcq->cqe = 1 << log;
	return 0;

err_cq:
	rnic_ib_cmd_handle(dev, RNIC_CMD_DESTROY_CQ, cq->cqn);
err_ring:
	rnic_ib_cq_ring_free(dev, cq);
	return err;
}

int rnic_ib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct rnic_ib_dev *dev = to_rdev(ibcq->device);
	struct rnic_ib_cq *cq = to_rnic_ib_cq(ibcq);
	int err;

	err = rnic_ib_cmd_handle(dev, RNIC_CMD_DESTROY_CQ, cq->cqn);
	if (err && err != -ENODEV)
		return err;
	xa_erase_irq(&dev->cqs, cq->cqn);
	/* The vector's handler may have found the CQ just before. */
	synchronize_irq(pci_irq_vector(dev->rdev->pdev, cq->vector));
	rnic_ib_cq_ring_free(dev, cq);
	return 0;
}

/* Entries consumed: the driver's count, or a direct process's own. */
static u32 rnic_ib_cq_cons(struct rnic_ib_cq *cq)
{
	return cq->direct ? READ_ONCE(*cq->ucons) : cq->cons;
}

/*
 * The entry after @cons if the device has written it.  A direct process
 * may write any cons: the index is masked, and only its own events err.
 */
static struct rnic_cq_entry *rnic_ib_cq_at(struct rnic_ib_cq *cq, u32 cons)
{
	u32 mask = (1u << cq->ring.log_size) - 1;
	struct rnic_cq_entry *e = (struct rnic_cq_entry *)cq->ring.va +
				  (cons & mask);
	u8 phase = ((cons >> cq->ring.log_size) & 1) ^ 1;

	return (READ_ONCE(e->phase) & 1) == phase ? e : NULL;
}

static struct rnic_cq_entry *rnic_ib_cq_next(struct rnic_ib_cq *cq)
{
	return rnic_ib_cq_at(cq, rnic_ib_cq_cons(cq));
}

/* The first entry from cons on that the device has not written yet. */
static u32 rnic_ib_cq_prod(struct rnic_ib_cq *cq)
{
	u32 cons = rnic_ib_cq_cons(cq), prod = cons;

	while (prod - cons < (1u << cq->ring.log_size) &&
	       rnic_ib_cq_at(cq, prod))
		prod++;
	return prod;
}

/*
 * Whether the device has written, since the arm, an entry the arm asked
 * for: any, or for a solicited arm a solicited or failed one (the rule
 * of core/iwarp/cq.c).  The device writes in order from arm_prod; an entry
 * keeps its phase after it is consumed until the device writes its slot
 * a lap later, so the walk sees entries whether they were taken or not,
 * and a consumer that is past arm_prod has taken some anyway.
 */
static bool rnic_ib_cq_news(struct rnic_ib_cq *cq)
{
	u32 size = 1u << cq->ring.log_size, i = cq->arm_prod;
	s32 taken = rnic_ib_cq_cons(cq) - cq->arm_prod;
	struct rnic_cq_entry *e;

	if (taken >= (s32)size || (taken > 0 && !cq->arm_solicited))
		return true;
	for (; i - cq->arm_prod < size && (e = rnic_ib_cq_at(cq, i)); i++) {
		if (!cq->arm_solicited ||
		    (READ_ONCE(e->flags) & RNIC_CQE_FLAG_SOLICITED) ||
		    READ_ONCE(e->status) != RNIC_CQE_SUCCESS)
			return true;
	}
	return false;
}

static enum ib_wc_status rnic_ib_wc_status(u8 status)
{
	static const enum ib_wc_status map[] = {
		[RNIC_CQE_SUCCESS] = IB_WC_SUCCESS,
		[RNIC_CQE_LOC_LEN_ERR] = IB_WC_LOC_LEN_ERR,
		[RNIC_CQE_LOC_QP_OP_ERR] = IB_WC_LOC_QP_OP_ERR,
		[RNIC_CQE_LOC_PROT_ERR] = IB_WC_LOC_PROT_ERR,
		[RNIC_CQE_WR_FLUSH_ERR] = IB_WC_WR_FLUSH_ERR,
		[RNIC_CQE_MW_BIND_ERR] = IB_WC_MW_BIND_ERR,
		[RNIC_CQE_LOC_ACCESS_ERR] = IB_WC_LOC_ACCESS_ERR,
		[RNIC_CQE_REM_INV_REQ_ERR] = IB_WC_REM_INV_REQ_ERR,
		[RNIC_CQE_REM_ACCESS_ERR] = IB_WC_REM_ACCESS_ERR,
		[RNIC_CQE_REM_OP_ERR] = IB_WC_REM_OP_ERR,
		[RNIC_CQE_BAD_RESP_ERR] = IB_WC_BAD_RESP_ERR,
		[RNIC_CQE_FATAL_ERR] = IB_WC_FATAL_ERR,
		[RNIC_CQE_GENERAL_ERR] = IB_WC_GENERAL_ERR,
	};

	return status < ARRAY_SIZE(map) ? map[status] : IB_WC_GENERAL_ERR;
}

static enum ib_wc_opcode rnic_ib_wc_opcode(u8 op)
{
	switch (op) {
	case RNIC_WQE_WRITE:
	case RNIC_WQE_IMM_DATA:		/* an RDMA Write with immediate's */
		return IB_WC_RDMA_WRITE;
	case RNIC_WQE_READ:
		return IB_WC_RDMA_READ;
	case RNIC_WQE_ATOMIC_FADD:
		return IB_WC_FETCH_ADD;
	case RNIC_WQE_ATOMIC_CSWAP:
		return IB_WC_COMP_SWAP;
	case RNIC_WQE_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case RNIC_WQE_BIND_MW:
		return IB_WC_BIND_MW;
	case RNIC_WQE_FAST_REG:
		return IB_WC_REG_MR;
	case RNIC_WQE_RECV:
		return IB_WC_RECV;
	default:
		return IB_WC_SEND;
	}
}

/* Fills @wc from @c; false for a CQE of a QP that is gone. */
static bool rnic_ib_cqe(struct rnic_ib_dev *dev, const struct rnic_cq_entry *c,
			struct ib_wc *wc)
{
	struct rnic_ib_qp *qp = xa_load(&dev->qps, le32_to_cpu(c->qpn));
	u32 idx = (u32)le64_to_cpu(c->wr_id);

	/* A direct QP's indexes are the process's: not ours to translate. */
	if (!qp || qp->sq_map)
		return false;
	memset(wc, 0, sizeof(*wc));
	if (c->opcode == RNIC_WQE_RECV && qp->srq) {
		if (!rnic_ib_srq_done(qp->srq, idx, &wc->wr_id))
			return false;
	} else if (c->opcode == RNIC_WQE_RECV) {
		wc->wr_id = qp->rq_wr_id[idx & ((1u << qp->rq.log_size) - 1)];
		WRITE_ONCE(qp->rq_done, idx + 1);
	} else {
		wc->wr_id = qp->sq_wr_id[idx & ((1u << qp->sq.log_size) - 1)];
		WRITE_ONCE(qp->sq_done, idx + 1);
	}
	wc->status = rnic_ib_wc_status(c->status);
	wc->vendor_err = c->status;
	wc->opcode = rnic_ib_wc_opcode(c->opcode);
	wc->byte_len = le32_to_cpu(c->byte_len);
	wc->qp = &qp->ibqp;
	wc->port_num = 1;
	if (c->flags & RNIC_CQE_FLAG_WITH_INV) {
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = le32_to_cpu(c->invalidated_stag);
	} else if (c->flags & RNIC_CQE_FLAG_WITH_IMM) {
		/* RFC 7306's Immediate Data: the verbs' Write with immediate */
		wc->opcode = IB_WC_RECV_RDMA_WITH_IMM;
		wc->wc_flags |= IB_WC_WITH_IMM;
		wc->ex.imm_data = cpu_to_be32(le32_to_cpu(c->imm));
	}
	return true;
}

int rnic_ib_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct rnic_ib_dev *dev = to_rdev(ibcq->device);
	struct rnic_ib_cq *cq = to_rnic_ib_cq(ibcq);
	struct rnic_cq_entry *e, c;
	unsigned long flags;
	u32 start;
	int n = 0;

	if (cq->direct)
		return -EINVAL;		/* the process polls it itself */
	spin_lock_irqsave(&cq->lock, flags);
	start = cq->cons;
	while (n < num && (e = rnic_ib_cq_next(cq))) {
		dma_rmb();	/* the phase before the rest of the entry */
		c = *e;
		cq->cons++;
		if (rnic_ib_cqe(dev, &c, &wc[n]))
			n++;
	}
	if (cq->cons != start && cq->ucons)
		WRITE_ONCE(*cq->ucons, cq->cons);
	/*
	 * The device needs cons only to know the ring has room, so it hears
	 * of it every half ring, not every poll (an MMIO write is a trap to
	 * the hypervisor).  No completion waits for room unheard: for one to
	 * wait while the driver finds the ring empty, the driver must have
	 * consumed a whole ring since it last told, so it told at the half.
	 */
	if (cq->cons - cq->db_cons >= (1u << cq->ring.log_size) / 2) {
		rnic_write(dev->rdev, RNIC_REG_DB_CQ,
			   RNIC_DB_VALUE(cq->cqn, cq->cons));
		cq->db_cons = cq->cons;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/*
 * Arms the device's CQ, then looks once more: an entry written before the
 * arm raised no interrupt, and IB_CQ_REPORT_MISSED_EVENTS says so.
 */
int rnic_ib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct rnic_ib_dev *dev = to_rdev(ibcq->device);
	struct rnic_ib_cq *cq = to_rnic_ib_cq(ibcq);
	u32 arm = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
		  RNIC_DB_ARM_SOLICITED : RNIC_DB_ARM_NEXT;
	unsigned long irqflags;
	bool missed;

	spin_lock_irqsave(&cq->lock, irqflags);
	/* As the device: a second arm keeps the first's start, and NEXT wins. */
	if (!cq->armed) {
		cq->arm_prod = rnic_ib_cq_prod(cq);
		cq->arm_solicited = arm == RNIC_DB_ARM_SOLICITED;
	} else if (arm == RNIC_DB_ARM_NEXT) {
		cq->arm_solicited = false;
	}
	cq->armed = true;
	rnic_write(dev->rdev, RNIC_REG_DB_CQ_ARM, cq->cqn | arm);
	missed = rnic_ib_cq_next(cq);
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return (flags & IB_CQ_REPORT_MISSED_EVENTS) && missed ? 1 : 0;
}

/* From a CQ vector's interrupt: one call per armed CQ with a new entry. */
void rnic_ib_cq_vector(struct rnic_ib_dev *dev, unsigned int vector)
{
	struct rnic_ib_cq *cq;
	unsigned long idx;
	bool fire;

	xa_for_each(&dev->cqs, idx, cq) {
		if (cq->vector != vector)
			continue;
		spin_lock(&cq->lock);
		/*
		 * An entry the arm asked for, still in the ring or already
		 * taken by a poller that held the lock while the interrupt
		 * waited: the device has disarmed either way, so the consumer
		 * must hear of it.  Anything else is no event: another CQ's
		 * interrupt on this vector would make one that a consumer
		 * polling once per event, as perftest -e does, takes for a
		 * completion and falls out of step.
		 */
		fire = cq->armed && rnic_ib_cq_news(cq);
		if (fire)
			cq->armed = false;
		spin_unlock(&cq->lock);
		if (fire && cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	}
}
