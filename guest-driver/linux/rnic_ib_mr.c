// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Protection domains and memory regions.  An MR is the device's REG_MR:
 * a page list of bus addresses, iova = the verbs virtual address, and the
 * STag as both lkey and rkey.  User MRs pin their pages through ib_umem.
 * The DMA MR that kernel users need (get_dma_mr) is an identity mapping
 * of bus addresses 0..max_mr_size in 2 MiB pages: kernel work requests
 * name DMA addresses, which are then their own tagged offsets.
 */
#include <rdma/ib_umem.h>
#include <rdma/iter.h>
#include "rnic_ib.h"

#define RNIC_DMA_MR_SHIFT	21

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
		       int acc)
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
	/* Verbs MRs are persistent and only MWs are remotely invalidated. */
	p.policy = RNIC_MR_POLICY_PERSISTENT | RNIC_MR_NO_REMOTE_INV;
	err = rnic_ib_cmd(dev, RNIC_CMD_REG_MR, &p, sizeof(p), &cmd);
	if (err)
		return err;
	mr->stag = le32_to_cpu(((struct rnic_cmd_reg_mr *)cmd.u.raw)->stag);
	mr->ibmr.lkey = mr->stag;
	mr->ibmr.rkey = mr->stag;
	return 0;
}

struct ib_mr *rnic_ib_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct rnic_ib_dev *dev = to_rdev(ibpd->device);
	struct device *dma = &dev->rdev->pdev->dev;
	u64 len = le64_to_cpu(dev->rdev->attr.max_mr_size);
	u32 npages = DIV_ROUND_UP_ULL(len, 1ull << RNIC_DMA_MR_SHIFT), i;
	struct rnic_ib_mr *mr;
	dma_addr_t pbl_dma;
	__le64 *pbl;
	int err;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	pbl = dma_alloc_coherent(dma, npages * sizeof(*pbl), &pbl_dma,
				 GFP_KERNEL);
	if (!pbl) {
		kfree(mr);
		return ERR_PTR(-ENOMEM);
	}
	for (i = 0; i < npages; i++)
		pbl[i] = cpu_to_le64((u64)i << RNIC_DMA_MR_SHIFT);
	err = rnic_ib_reg(dev, to_rpd(ibpd), mr, pbl, pbl_dma, npages,
			  RNIC_DMA_MR_SHIFT, 0, len, 0, access);
	dma_free_coherent(dma, npages * sizeof(*pbl), pbl, pbl_dma);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

struct ib_mr *rnic_ib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				  u64 virt, int access, struct ib_udata *udata)
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
			  PAGE_SHIFT, virt, length, start & ~PAGE_MASK, access);
	dma_free_coherent(dma, npages * sizeof(*pbl), pbl, pbl_dma);
	if (err)
		goto err_umem;
	return &mr->ibmr;

err_umem:
	ib_umem_release(mr->umem);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

int rnic_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct rnic_ib_mr *mr = to_rmr(ibmr);
	int err;

	err = rnic_ib_cmd_handle(to_rdev(ibmr->device), RNIC_CMD_DEREG_MR,
				 mr->stag);
	/* The device may still reach the pages: keep them pinned. */
	if (err && err != -ENODEV)
		return err;
	ib_umem_release(mr->umem);
	kfree(mr);
	return 0;
}
