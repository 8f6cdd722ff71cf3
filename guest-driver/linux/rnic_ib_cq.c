// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Completion queues: the device's CQ ring in coherent memory, polled by
 * the driver (kernel users and the uverbs POLL_CQ write() command alike).
 * A CQE's wr_id is the driver's index of the WQE it completes; the user's
 * wr_id is kept per slot (rnic_ib_qp.c), and the index tells how far the
 * queue has drained, since one queue's completions come in order.
 */
#include <linux/interrupt.h>
#include <linux/mm.h>
#include <rdma/uverbs_ioctl.h>
#include "rnic_ib.h"
#include "../rnic-ib-uapi.h"

/*
 * A user CQ's ring, in pages of its own rather than coherent memory, as
 * efa does: mapped into the process with vm_insert_page(), they stay
 * allocated while a mapping holds them, so neither order of unmapping and
 * destroying frees memory the process or the device still uses.  The
 * device gets a streaming mapping (x86 is coherent; the DMA mask is 64
 * bits, so nothing is bounced).  One more page after the ring holds cons.
 */
static int rnic_ib_cq_uring(struct rnic_ib_dev *dev, struct rnic_ib_cq *cq,
			    u32 log)
{
	struct device *d = &dev->rdev->pdev->dev;
	size_t bytes = PAGE_ALIGN((size_t)RNIC_CQE_SIZE << log);
	struct rnic_ib_umap *m = kzalloc(sizeof(*m), GFP_KERNEL);

	if (!m)
		return -ENOMEM;
	m->len = bytes + PAGE_SIZE;
	m->va = alloc_pages_exact(m->len, GFP_KERNEL | __GFP_ZERO);
	if (!m->va)
		goto err;
	cq->ring.dma = dma_map_single(d, m->va, bytes, DMA_BIDIRECTIONAL);
	if (dma_mapping_error(d, cq->ring.dma))
		goto err_pages;
	cq->ring.va = m->va;
	cq->ring.bytes = bytes;
	cq->ring.log_size = log;
	cq->ucons = m->va + bytes;
	cq->umap = m;
	return 0;

err_pages:
	free_pages_exact(m->va, m->len);
err:
	kfree(m);
	return -ENOMEM;
}

/* Once the entry is in, its removal frees the pages (rnic_ib_mmap_free). */
static void rnic_ib_cq_ring_free(struct rnic_ib_dev *dev,
				 struct rnic_ib_cq *cq, bool inserted)
{
	if (!cq->umap) {
		rnic_ring_free(dev->rdev, &cq->ring);
		return;
	}
	dma_unmap_single(&dev->rdev->pdev->dev, cq->ring.dma, cq->ring.bytes,
			 DMA_BIDIRECTIONAL);
	if (inserted) {
		rdma_user_mmap_entry_remove(&cq->umap->rdma);
		return;
	}
	free_pages_exact(cq->umap->va, cq->umap->len);
	kfree(cq->umap);
}

/* Offers the ring to the process; *inserted says if the entry went in. */
static int rnic_ib_cq_export(struct rnic_ib_cq *cq, struct ib_udata *udata,
			     bool *inserted)
{
	struct rnic_ib_create_cq_resp resp = {
		.mmap_len = cq->umap->len,
		.log_size = cq->ring.log_size,
	};
	struct rnic_ib_ucontext *uctx = rdma_udata_to_drv_context(
		udata, struct rnic_ib_ucontext, ibuc);
	int err;

	err = rdma_user_mmap_entry_insert(&uctx->ibuc, &cq->umap->rdma,
					  cq->umap->len);
	if (err)
		return err;
	*inserted = true;
	resp.mmap_key = rdma_user_mmap_get_offset(&cq->umap->rdma);
	return ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
}

int rnic_ib_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *e = rdma_user_mmap_entry_get(uctx, vma);
	struct rnic_ib_umap *m;
	unsigned long off;
	int err = 0;

	if (!e)
		return -EINVAL;
	m = container_of(e, struct rnic_ib_umap, rdma);
	/* The device writes the ring; the process only reads it. */
	if (vma->vm_flags & VM_WRITE) {
		err = -EPERM;
		goto out;
	}
	if (vma->vm_end - vma->vm_start != m->len) {
		err = -EINVAL;
		goto out;
	}
	vma->vm_flags &= ~VM_MAYWRITE;
	for (off = 0; off < m->len && !err; off += PAGE_SIZE)
		err = vm_insert_page(vma, vma->vm_start + off,
				     virt_to_page(m->va + off));
out:
	rdma_user_mmap_entry_put(e);
	return err;
}

void rnic_ib_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct rnic_ib_umap *m = container_of(entry, struct rnic_ib_umap, rdma);

	free_pages_exact(m->va, m->len);
	kfree(m);
}

int rnic_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		      struct ib_udata *udata)
{
	struct rnic_ib_dev *dev = to_rdev(ibcq->device);
	struct rnic_ib_cq *cq = to_rcq(ibcq);
	struct rnic_cmd_create_cq p = { };
	struct rnic_cmd cmd;
	bool inserted = false;
	u32 log;
	int err;

	if (attr->flags || !attr->cqe ||
	    attr->cqe > le32_to_cpu(dev->rdev->attr.max_cqe))
		return -EINVAL;
	log = max_t(u32, order_base_2(attr->cqe), 1);
	spin_lock_init(&cq->lock);
	if (udata && udata->outlen >= sizeof(struct rnic_ib_create_cq_resp))
		err = rnic_ib_cq_uring(dev, cq, log);
	else
		err = rnic_ring_alloc(dev->rdev, &cq->ring, log, RNIC_CQE_SIZE);
	if (err)
		return err;
	cq->vector = RNIC_MSIX_VEC_ADMIN + 1 +
		     attr->comp_vector % (RNIC_MSIX_VECTORS - 1);
	p.ring_addr = cpu_to_le64(cq->ring.dma);
	p.log_size = log;
	p.msix_vector = cq->vector;
	err = rnic_ib_cmd(dev, RNIC_CMD_CREATE_CQ, &p, sizeof(p), &cmd);
	if (err)
		goto err_ring;
	cq->cqn = le32_to_cpu(((struct rnic_cmd_create_cq *)cmd.u.raw)->cqn);
	if (cq->umap) {
		err = rnic_ib_cq_export(cq, udata, &inserted);
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
	rnic_ib_cq_ring_free(dev, cq, inserted);
	return err;
}

int rnic_ib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct rnic_ib_dev *dev = to_rdev(ibcq->device);
	struct rnic_ib_cq *cq = to_rcq(ibcq);
	int err;

	err = rnic_ib_cmd_handle(dev, RNIC_CMD_DESTROY_CQ, cq->cqn);
	if (err && err != -ENODEV)
		return err;
	xa_erase_irq(&dev->cqs, cq->cqn);
	/* The vector's handler may have found the CQ just before. */
	synchronize_irq(pci_irq_vector(dev->rdev->pdev, cq->vector));
	rnic_ib_cq_ring_free(dev, cq, !!cq->umap);
	return 0;
}

static struct rnic_cq_entry *rnic_ib_cq_next(struct rnic_ib_cq *cq)
{
	u32 mask = (1u << cq->ring.log_size) - 1;
	struct rnic_cq_entry *e = (struct rnic_cq_entry *)cq->ring.va +
				  (cq->cons & mask);
	u8 phase = ((cq->cons >> cq->ring.log_size) & 1) ^ 1;

	return (READ_ONCE(e->phase) & 1) == phase ? e : NULL;
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

	if (!qp)
		return false;
	memset(wc, 0, sizeof(*wc));
	if (c->opcode == RNIC_WQE_RECV) {
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
		wc->wc_flags |= IB_WC_WITH_IMM;
		wc->ex.imm_data = cpu_to_be32(le32_to_cpu(c->imm));
	}
	return true;
}

int rnic_ib_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct rnic_ib_dev *dev = to_rdev(ibcq->device);
	struct rnic_ib_cq *cq = to_rcq(ibcq);
	struct rnic_cq_entry *e, c;
	unsigned long flags;
	u32 start;
	int n = 0;

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
	struct rnic_ib_cq *cq = to_rcq(ibcq);
	u32 arm = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
		  RNIC_DB_ARM_SOLICITED : RNIC_DB_ARM_NEXT;
	unsigned long irqflags;
	bool missed;

	spin_lock_irqsave(&cq->lock, irqflags);
	cq->armed = true;
	cq->arm_cons = cq->cons;
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
		 * An entry since the arm, still in the ring or already taken
		 * by a poller that held the lock while the interrupt waited:
		 * the device has disarmed either way, so the consumer must
		 * hear of it (verbs allows a spurious event, not a lost one).
		 */
		fire = cq->armed && (rnic_ib_cq_next(cq) ||
				     cq->cons != cq->arm_cons);
		if (fire)
			cq->armed = false;
		spin_unlock(&cq->lock);
		if (fire && cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	}
}
