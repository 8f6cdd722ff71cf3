// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Protection domains and memory regions, the STag being both lkey and
 * rkey.  A user MR is the device's REG_MR: a page list of bus addresses,
 * iova = the verbs virtual address, pages pinned through ib_umem.  Kernel
 * users get the PD's physical STag as their DMA MR (tagged offset = bus
 * address) and fast-registration MRs (ALLOC_MR, then IB_WR_REG_MR on the
 * send queue).  Memory windows of both types are the device's; user space
 * binds them through its send queue (librnic), as verbs does.
 */
#include <rdma/ib_umem.h>
#include <rdma/iter.h>
#include "rnic_ib.h"

int rnic_ib_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct rnic_ib_pd *pd = to_rpd(ibpd);
	struct rnic_cmd cmd;
	int err;

	err = rnic_ib_cmd(to_rdev(ibpd->device), RNIC_CMD_CREATE_PD, NULL, 0,
			  &cmd);
	if (err)
		return err;
	pd->pdn = le32_to_cpu(((struct rnic_cmd_pd *)cmd.u.raw)->pdn);
	return 0;
}

int rnic_ib_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	int err = rnic_ib_cmd_handle(to_rdev(ibpd->device),
				     RNIC_CMD_DESTROY_PD, to_rpd(ibpd)->pdn);

	/* The core frees the PD whatever we say; a dead device forgot it. */
	return err == -ENODEV ? 0 : err;
}

static u32 rnic_ib_access(int acc)
{
	u32 a = RNIC_ACC_LOCAL_READ;

	if (acc & IB_ACCESS_LOCAL_WRITE)
		a |= RNIC_ACC_LOCAL_WRITE;
	if (acc & IB_ACCESS_REMOTE_READ)
		a |= RNIC_ACC_REMOTE_READ;
	if (acc & IB_ACCESS_REMOTE_WRITE)
		a |= RNIC_ACC_REMOTE_WRITE;
	if (acc & IB_ACCESS_REMOTE_ATOMIC)
		a |= RNIC_ACC_REMOTE_ATOMIC;
	if (acc & IB_ACCESS_MW_BIND)
		a |= RNIC_ACC_MW_BIND;
	return a;
}

/* REG_MR over @npages entries of @pbl (little-endian, coherent memory). */
static int rnic_ib_reg(struct rnic_ib_dev *dev, struct rnic_ib_pd *pd,
		       struct rnic_ib_mr *mr, __le64 *pbl, dma_addr_t pbl_dma,
		       u32 npages, u8 shift, u64 iova, u64 len, u32 offset,
		       int acc, u32 mr_flags)
{
	struct rnic_cmd_reg_mr p = { };
	struct rnic_cmd cmd;
	int err;

	p.pdn = cpu_to_le32(pd->pdn);
	p.access = cpu_to_le32(rnic_ib_access(acc));
	p.iova = cpu_to_le64(iova);
	p.length = cpu_to_le64(len);
	p.pbl_addr = cpu_to_le64(pbl_dma);
	p.npages = cpu_to_le32(npages);
	p.first_byte_offset = cpu_to_le32(offset);
	p.page_shift = shift;
	p.key = atomic_inc_return(&dev->next_key) & 0xff;
	/*
	 * Verbs MRs are persistent and only MWs are remotely invalidated,
	 * unless rnicdv_reg_mr asked otherwise.
	 */
	p.policy = mr_flags & RNIC_IB_MR_ONE_SHOT ? RNIC_MR_POLICY_ONE_SHOT :
		   RNIC_MR_POLICY_PERSISTENT;
	if (!(mr_flags & RNIC_IB_MR_REMOTE_INV))
		p.policy |= RNIC_MR_NO_REMOTE_INV;
	err = rnic_ib_cmd(dev, RNIC_CMD_REG_MR, &p, sizeof(p), &cmd);
	if (err)
		return err;
	mr->stag = le32_to_cpu(((struct rnic_cmd_reg_mr *)cmd.u.raw)->stag);
	mr->ibmr.lkey = mr->stag;
	mr->ibmr.rkey = mr->stag;
	mr->access = acc;
	mr->flags = mr_flags;
	return 0;
}

/* ALLOC_MR: @max_pages 0 asks for the PD's physical STag. */
static int rnic_ib_alloc_stag(struct rnic_ib_dev *dev, struct rnic_ib_pd *pd,
			      struct rnic_ib_mr *mr, u32 max_pages)
{
	struct rnic_cmd_alloc_mr p = { };
	struct rnic_cmd cmd;
	int err;

	p.pdn = cpu_to_le32(pd->pdn);
	p.max_pages = cpu_to_le32(max_pages);
	p.key = atomic_inc_return(&dev->next_key) & 0xff;
	p.flags = max_pages ? 0 : RNIC_ALLOC_MR_PHYS;
	err = rnic_ib_cmd(dev, RNIC_CMD_ALLOC_MR, &p, sizeof(p), &cmd);
	if (err)
		return err;
	mr->stag = le32_to_cpu(((struct rnic_cmd_alloc_mr *)cmd.u.raw)->stag);
	mr->ibmr.lkey = mr->stag;
	mr->ibmr.rkey = mr->stag;
	return 0;
}

/*
 * The kernel's DMA MR (ib_alloc_pd's local_dma_lkey): the physical STag,
 * whose tagged offsets are bus addresses.  The device lets only kernel QPs
 * use it and never the wire, so a remotely accessible one cannot be had.
 */
struct ib_mr *rnic_ib_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct rnic_ib_mr *mr;
	int err;

	if (access & ~(IB_ACCESS_LOCAL_WRITE))
		return ERR_PTR(-EOPNOTSUPP);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	err = rnic_ib_alloc_stag(to_rdev(ibpd->device), to_rpd(ibpd), mr, 0);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

/*
 * A fast-registration MR: a device region with a slot for @max_num_sg
 * pages and a page list of ours that map_mr_sg fills and the device reads
 * when the IB_WR_REG_MR reaches the head of the send queue.
 */
struct ib_mr *rnic_ib_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			       u32 max_num_sg)
{
	struct rnic_ib_dev *dev = to_rdev(ibpd->device);
	struct device *dma = &dev->rdev->pdev->dev;
	struct rnic_ib_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg ||
	    max_num_sg > le32_to_cpu(dev->rdev->attr.max_fast_reg_pages))
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->max_pages = max_num_sg;
	mr->pbl = dma_alloc_coherent(dma, max_num_sg * sizeof(*mr->pbl),
				     &mr->pbl_dma, GFP_KERNEL);
	err = mr->pbl ? rnic_ib_alloc_stag(dev, to_rpd(ibpd), mr, max_num_sg) :
			-ENOMEM;
	if (err) {
		if (mr->pbl)
			dma_free_coherent(dma, max_num_sg * sizeof(*mr->pbl),
					  mr->pbl, mr->pbl_dma);
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

static int rnic_ib_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct rnic_ib_mr *mr = to_rmr(ibmr);

	if (mr->npages == mr->max_pages)
		return -ENOMEM;
	mr->pbl[mr->npages++] = cpu_to_le64(addr);
	return 0;
}

int rnic_ib_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg,
		      int sg_nents, unsigned int *sg_offset)
{
	to_rmr(ibmr)->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, rnic_ib_set_page);
}

/*
 * IB_WR_REG_MR as a FAST_REG WQE: the MR as map_mr_sg left it, with the
 * key and access of the work request (the consumer has already put the
 * key into the MR's lkey and rkey with ib_update_fast_reg_key()).
 */
int rnic_ib_fast_reg_wqe(const struct ib_reg_wr *wr, struct rnic_sq_wqe *w)
{
	struct rnic_ib_mr *mr = to_rmr(wr->mr);
	u64 psz = wr->mr->page_size;

	if (!mr->pbl || !is_power_of_2(psz) || ilog2(psz) < 12 ||
	    ilog2(psz) > 21)
		return -EINVAL;
	w->opcode = RNIC_WQE_FAST_REG;
	w->fr.pbl_addr = cpu_to_le64(mr->pbl_dma);
	w->fr.iova = cpu_to_le64(wr->mr->iova);
	w->fr.length = cpu_to_le64(wr->mr->length);
	w->fr.npages = cpu_to_le32(mr->npages);
	w->fr.access = cpu_to_le32(rnic_ib_access(wr->access));
	w->fr.stag = cpu_to_le32(wr->key);
	w->fr.first_byte_offset = cpu_to_le32(wr->mr->iova & (psz - 1));
	w->fr.page_shift = ilog2(psz);
	return 0;
}

/* A user region of @flags (RNIC_IB_MR_*). */
static struct ib_mr *rnic_ib_reg_umr(struct ib_pd *ibpd, u64 start,
				     u64 length, u64 virt, int access,
				     u32 flags)
{
	struct rnic_ib_dev *dev = to_rdev(ibpd->device);
	struct device *dma = &dev->rdev->pdev->dev;
	struct ib_block_iter biter;
	struct rnic_ib_mr *mr;
	dma_addr_t pbl_dma;
	size_t npages, i = 0;
	__le64 *pbl;
	int err;

	if (length > le64_to_cpu(dev->rdev->attr.max_mr_size))
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		goto err_free;
	}
	npages = ib_umem_num_dma_blocks(mr->umem, PAGE_SIZE);
	pbl = dma_alloc_coherent(dma, npages * sizeof(*pbl), &pbl_dma,
				 GFP_KERNEL);
	if (!pbl) {
		err = -ENOMEM;
		goto err_umem;
	}
	rdma_for_each_block(mr->umem->sgt_append.sgt.sgl, &biter,
			    mr->umem->sgt_append.sgt.nents, PAGE_SIZE)
		if (i < npages)
			pbl[i++] = cpu_to_le64(rdma_block_iter_dma_address(&biter));
	err = rnic_ib_reg(dev, to_rpd(ibpd), mr, pbl, pbl_dma, npages,
			  PAGE_SHIFT, virt, length, start & ~PAGE_MASK, access,
			  flags);
	dma_free_coherent(dma, npages * sizeof(*pbl), pbl, pbl_dma);
	if (err)
		goto err_umem;
	/* The core sets these too, but not for a rereg's new region. */
	mr->ibmr.iova = virt;
	mr->ibmr.length = length;
	return &mr->ibmr;

err_umem:
	ib_umem_release(mr->umem);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

struct ib_mr *rnic_ib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				  u64 virt, int access, struct ib_udata *udata)
{
	struct rnic_ib_reg_mr_req req = { };
	int err;

	if (udata && udata->inlen) {
		err = ib_copy_from_udata(&req, udata,
					 min(udata->inlen, sizeof(req)));
		if (err)
			return ERR_PTR(err);
		if (req.flags & ~(RNIC_IB_MR_ONE_SHOT | RNIC_IB_MR_REMOTE_INV))
			return ERR_PTR(-EINVAL);
	}
	return rnic_ib_reg_umr(ibpd, start, length, virt, access, req.flags);
}

int rnic_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct rnic_ib_dev *dev = to_rdev(ibmr->device);
	struct rnic_ib_mr *mr = to_rmr(ibmr);
	int err;

	/* For an alloc_mr region the device takes any key: see spec.md. */
	err = rnic_ib_cmd_handle(dev, RNIC_CMD_DEREG_MR, mr->stag);
	/* The device may still reach the pages: keep them pinned. */
	if (err && err != -ENODEV)
		return err;
	ib_umem_release(mr->umem);
	if (mr->pbl)
		dma_free_coherent(&dev->rdev->pdev->dev,
				  mr->max_pages * sizeof(*mr->pbl), mr->pbl,
				  mr->pbl_dma);
	kfree(mr);
	return 0;
}

/*
 * A new region for the old one (the core then deregisters the old): the
 * device cannot change a region's pages, PD or rights in place, and
 * verbs lets the keys change.  What @flags leave out stays as it was.
 */
struct ib_mr *rnic_ib_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				    u64 length, u64 virt, int access,
				    struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct rnic_ib_mr *mr = to_rmr(ibmr);

	if (!mr->umem)
		return ERR_PTR(-EOPNOTSUPP);
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = mr->umem->address;
		length = mr->umem->length;
		virt = ibmr->iova;
	}
	if (!(flags & IB_MR_REREG_ACCESS))
		access = mr->access;
	if (!(flags & IB_MR_REREG_PD))
		ibpd = ibmr->pd;
	return rnic_ib_reg_umr(ibpd, start, length, virt, access, mr->flags);
}

int rnic_ib_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct rnic_ib_dev *dev = to_rdev(ibmw->device);
	struct rnic_cmd_alloc_mw p = { };
	struct rnic_cmd cmd;
	int err;

	p.pdn = cpu_to_le32(to_rpd(ibmw->pd)->pdn);
	p.type = ibmw->type == IB_MW_TYPE_1 ? 1 : 2;
	p.key = atomic_inc_return(&dev->next_key) & 0xff;
	err = rnic_ib_cmd(dev, RNIC_CMD_ALLOC_MW, &p, sizeof(p), &cmd);
	if (err)
		return err;
	ibmw->rkey = le32_to_cpu(((struct rnic_cmd_alloc_mw *)cmd.u.raw)->stag);
	return 0;
}

/* By the STag it was allocated with: the device ignores the key. */
int rnic_ib_dealloc_mw(struct ib_mw *ibmw)
{
	int err = rnic_ib_cmd_handle(to_rdev(ibmw->device),
				     RNIC_CMD_DEALLOC_MW, ibmw->rkey);

	return err == -ENODEV ? 0 : err;
}
