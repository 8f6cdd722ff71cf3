// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What a process maps: rings and doorbell pages (rnic-ib-uapi.h).
 *
 * A user ring lives in pages of its own rather than coherent memory, as
 * efa does: mapped into the process with vm_insert_page(), they stay
 * allocated while a mapping holds them, so neither order of unmapping and
 * destroying frees memory the process or the device still uses.  The
 * device gets a streaming mapping (x86 is coherent; the DMA mask is 64
 * bits, so nothing is bounced).
 *
 * A direct context also maps one doorbell page of BAR 4: the device lets
 * a page ring only the queues created with its number (docs/spec.md
 * "Doorbell pages"), so a process reaches no other process's queues.
 * The number is free for another context only once the last mapping of
 * the page is gone (mmap_free), not when the context is.
 */
#include <linux/mm.h>
#include <rdma/uverbs_ioctl.h>
#include "rnic_ib.h"

/* The ring's pages and @extra bytes after it, mapped for the device. */
int rnic_ib_umap_ring(struct rnic_ib_dev *dev, struct rnic_ring *r, u32 log,
		      u32 esize, size_t extra, bool writable,
		      struct rnic_ib_umap **out)
{
	struct device *d = &dev->rdev->pdev->dev;
	size_t bytes = PAGE_ALIGN((size_t)esize << log);
	struct rnic_ib_umap *m = kzalloc(sizeof(*m), GFP_KERNEL);

	if (!m)
		return -ENOMEM;
	m->len = bytes + PAGE_ALIGN(extra);
	m->writable = writable;
	m->va = alloc_pages_exact(m->len, GFP_KERNEL | __GFP_ZERO);
	if (!m->va)
		goto err;
	r->dma = dma_map_single(d, m->va, bytes, DMA_BIDIRECTIONAL);
	if (dma_mapping_error(d, r->dma))
		goto err_pages;
	r->va = m->va;
	r->bytes = bytes;
	r->log_size = log;
	*out = m;
	return 0;

err_pages:
	free_pages_exact(m->va, m->len);
err:
	kfree(m);
	return -ENOMEM;
}

/* Once the entry is in, its removal frees the pages (rnic_ib_mmap_free). */
void rnic_ib_umap_ring_free(struct rnic_ib_dev *dev, struct rnic_ring *r,
			    struct rnic_ib_umap *m)
{
	dma_unmap_single(&dev->rdev->pdev->dev, r->dma, r->bytes,
			 DMA_BIDIRECTIONAL);
	if (m->inserted) {
		rdma_user_mmap_entry_remove(&m->rdma);
		return;
	}
	free_pages_exact(m->va, m->len);
	kfree(m);
}

struct rnic_ib_ucontext *rnic_ib_uctx(struct ib_udata *udata)
{
	return rdma_udata_to_drv_context(udata, struct rnic_ib_ucontext, ibuc);
}

/* Offers @m to the process: *key is the mmap() offset. */
int rnic_ib_umap_insert(struct ib_udata *udata, struct rnic_ib_umap *m,
			u64 *key)
{
	int err = rdma_user_mmap_entry_insert(&rnic_ib_uctx(udata)->ibuc,
					      &m->rdma, m->len);

	if (err)
		return err;
	m->inserted = true;
	*key = rdma_user_mmap_get_offset(&m->rdma);
	return 0;
}

/* A doorbell page for @uc, or 0 with uc->udb left 0: not direct. */
int rnic_ib_udb_get(struct rnic_ib_dev *dev, struct rnic_ib_ucontext *uc)
{
	struct pci_dev *pdev = dev->rdev->pdev;
	struct rnic_ib_umap *m;
	int page, err;

	if (!dev->udb_pages)
		return 0;
	page = ida_alloc_max(&dev->udb_ida, dev->udb_pages - 1, GFP_KERNEL);
	if (page < 0)
		return page == -ENOSPC ? 0 : page;
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m) {
		ida_free(&dev->udb_ida, page);
		return -ENOMEM;
	}
	m->len = PAGE_SIZE;
	m->writable = true;
	m->io = pci_resource_start(pdev, RNIC_BAR_UDB) +
		(phys_addr_t)page * RNIC_UDB_PAGE_SIZE;
	m->dev = dev;
	m->udb = page + 1;
	err = rdma_user_mmap_entry_insert(&uc->ibuc, &m->rdma, m->len);
	if (err) {
		ida_free(&dev->udb_ida, page);
		kfree(m);
		return err;
	}
	uc->udb = m->udb;
	uc->udb_map = m;
	return 0;
}

void rnic_ib_udb_put(struct rnic_ib_ucontext *uc)
{
	if (uc->udb_map)
		rdma_user_mmap_entry_remove(&uc->udb_map->rdma);
}

static int rnic_ib_mmap_pages(struct vm_area_struct *vma,
			      struct rnic_ib_umap *m)
{
	unsigned long off;
	int err = 0;

	if (!m->writable)
		vm_flags_clear(vma, VM_MAYWRITE);
	for (off = 0; off < m->len && !err; off += PAGE_SIZE)
		err = vm_insert_page(vma, vma->vm_start + off,
				     virt_to_page(m->va + off));
	return err;
}

int rnic_ib_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *e = rdma_user_mmap_entry_get(uctx, vma);
	struct rnic_ib_umap *m;
	int err;

	if (!e)
		return -EINVAL;
	m = container_of(e, struct rnic_ib_umap, rdma);
	/* Only what the process is meant to write is writable. */
	if ((vma->vm_flags & VM_WRITE) && !m->writable)
		err = -EPERM;
	else if (vma->vm_end - vma->vm_start != m->len)
		err = -EINVAL;
	else if (m->io)
		err = rdma_user_mmap_io(uctx, vma, PHYS_PFN(m->io), m->len,
					pgprot_noncached(vma->vm_page_prot),
					e);
	else
		err = rnic_ib_mmap_pages(vma, m);
	rdma_user_mmap_entry_put(e);
	return err;
}

void rnic_ib_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct rnic_ib_umap *m = container_of(entry, struct rnic_ib_umap, rdma);

	if (m->io)
		ida_free(&m->dev->udb_ida, m->udb - 1);
	else
		free_pages_exact(m->va, m->len);
	kfree(m);
}
