// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * rnic guest driver: binds the rnic PCI function, brings the device up as
 * docs/spec.md "Bring-up" describes, learns its limits with QUERY_DEVICE
 * and takes it down again on remove.
 */
#include <linux/interrupt.h>
#include <linux/module.h>
#include <linux/pci.h>
#include "rnic_dev.h"

MODULE_SOFTDEP("pre: iw_cm ib_uverbs");

int rnic_ring_alloc(struct rnic_dev *rdev, struct rnic_ring *ring,
		    u32 log_size, size_t entry_size)
{
	/* Whole pages: the device wants 4 KiB-aligned, contiguous rings. */
	ring->bytes = PAGE_ALIGN(entry_size << log_size);
	ring->log_size = log_size;
	ring->va = dma_alloc_coherent(&rdev->pdev->dev, ring->bytes,
				      &ring->dma, GFP_KERNEL);
	if (!ring->va)
		return -ENOMEM;
	if (WARN_ON(!IS_ALIGNED(ring->dma, SZ_4K))) {
		rnic_ring_free(rdev, ring);
		return -ENOMEM;
	}
	return 0;
}

void rnic_ring_free(struct rnic_dev *rdev, struct rnic_ring *ring)
{
	if (ring->va)
		dma_free_coherent(&rdev->pdev->dev, ring->bytes, ring->va,
				  ring->dma);
	ring->va = NULL;
}

/* Ring registers are only accepted while ENABLE is clear. */
void rnic_ring_program(struct rnic_dev *rdev, const struct rnic_ring *ring,
		       u32 reg_base_lo, u32 reg_base_hi, u32 reg_log_size)
{
	rnic_write(rdev, reg_base_lo, lower_32_bits(ring->dma));
	rnic_write(rdev, reg_base_hi, upper_32_bits(ring->dma));
	rnic_write(rdev, reg_log_size, ring->log_size);
}

/* Command completions and events share the admin vector. */
static irqreturn_t rnic_admin_irq(int irq, void *data)
{
	struct rnic_dev *rdev = data;

	rnic_eq_irq(rdev);
	rnic_cmdq_irq(rdev);
	return IRQ_HANDLED;
}

/* A CQ's vector: call the ib_device's armed CQ handlers. */
static irqreturn_t rnic_cq_irq(int irq, void *data)
{
	struct rnic_vec *vec = data;

	rnic_ib_cq_irq(vec->rdev, vec->v);
	return IRQ_HANDLED;
}

static int rnic_request_cq_irqs(struct rnic_dev *rdev)
{
	int v, err;

	for (v = RNIC_MSIX_VEC_ADMIN + 1; v < RNIC_MSIX_VECTORS; v++) {
		rdev->vecs[v].rdev = rdev;
		rdev->vecs[v].v = v;
		err = request_irq(pci_irq_vector(rdev->pdev, v), rnic_cq_irq, 0,
				  RNIC_DRV_NAME "-cq", &rdev->vecs[v]);
		if (err) {
			while (--v > RNIC_MSIX_VEC_ADMIN)
				free_irq(pci_irq_vector(rdev->pdev, v),
					 &rdev->vecs[v]);
			return err;
		}
	}
	return 0;
}

static void rnic_free_cq_irqs(struct rnic_dev *rdev)
{
	int v;

	for (v = RNIC_MSIX_VEC_ADMIN + 1; v < RNIC_MSIX_VECTORS; v++)
		free_irq(pci_irq_vector(rdev->pdev, v), &rdev->vecs[v]);
}

static int rnic_check_identity(struct rnic_dev *rdev)
{
	struct device *dev = &rdev->pdev->dev;
	u32 id = rnic_read(rdev, RNIC_REG_ID);
	u32 version = rnic_read(rdev, RNIC_REG_VERSION);

	if (id != RNIC_ID_MAGIC) {
		dev_err(dev, "ID register reads 0x%08x, expected 0x%08x\n",
			id, RNIC_ID_MAGIC);
		return -ENODEV;
	}
	/*
	 * 0.2 is additive over 0.1: fast registration, the physical STag.
	 * 0.3 adds doorbell pages, used when QUERY_DEVICE reports some.
	 */
	if (version >> 16 != RNIC_ABI_MAJOR ||
	    (version & 0xffff) < RNIC_DRV_ABI_MINOR) {
		dev_err(dev, "device ABI %u.%u, this driver needs %u.%u or a later minor\n",
			version >> 16, version & 0xffff, RNIC_ABI_MAJOR,
			RNIC_DRV_ABI_MINOR);
		return -ENODEV;
	}
	return 0;
}

/* Clearing ENABLE stops the device; RESET makes it forget our rings. */
static void rnic_disable(struct rnic_dev *rdev)
{
	rnic_write(rdev, RNIC_REG_CONTROL, 0);
	rnic_write(rdev, RNIC_REG_CONTROL, RNIC_CONTROL_RESET);
}

static int rnic_enable(struct rnic_dev *rdev)
{
	u32 status;

	rnic_write(rdev, RNIC_REG_CONTROL, RNIC_CONTROL_ENABLE);
	status = rnic_read(rdev, RNIC_REG_STATUS);
	if (!(status & RNIC_STATUS_READY)) {
		dev_err(&rdev->pdev->dev,
			"device did not accept its rings (STATUS 0x%08x)\n",
			status);
		return -EIO;
	}
	return 0;
}

static int rnic_fetch_device_attr(struct rnic_dev *rdev)
{
	struct device *dev = &rdev->pdev->dev;
	struct rnic_cmd_query_device *in;
	struct rnic_device_attr *attr;
	struct rnic_cmd cmd = { .opcode = RNIC_CMD_QUERY_DEVICE };
	dma_addr_t attr_dma;
	int err;

	attr = dma_alloc_coherent(dev, RNIC_DEVICE_ATTR_SIZE, &attr_dma,
				  GFP_KERNEL);
	if (!attr)
		return -ENOMEM;
	in = (struct rnic_cmd_query_device *)cmd.u.raw;
	in->attr_addr = cpu_to_le64(attr_dma);
	err = rnic_cmd_exec(rdev, &cmd);
	if (!err)
		rdev->attr = *attr;
	dma_free_coherent(dev, RNIC_DEVICE_ATTR_SIZE, attr, attr_dma);
	return err;
}

static void rnic_log_limits(struct rnic_dev *rdev)
{
	const struct rnic_device_attr *a = &rdev->attr;
	u32 abi = le32_to_cpu(a->abi_version);

	dev_info(&rdev->pdev->dev,
		 "rnic ABI %u.%u: max_qp %u max_qp_wr %u max_cq %u max_cqe %u max_pd %u max_mr %u max_mw %u max_srq %u max_srq_wr %u max_sge %u max_ird %u max_ord %u max_pdata %u max_mr_size %llu page_size_cap 0x%x msix %u mpa_rev %u flags 0x%x\n",
		 abi >> 16, abi & 0xffff,
		 le32_to_cpu(a->max_qp), le32_to_cpu(a->max_qp_wr),
		 le32_to_cpu(a->max_cq), le32_to_cpu(a->max_cqe),
		 le32_to_cpu(a->max_pd), le32_to_cpu(a->max_mr),
		 le32_to_cpu(a->max_mw), le32_to_cpu(a->max_srq),
		 le32_to_cpu(a->max_srq_wr), le32_to_cpu(a->max_sge),
		 le32_to_cpu(a->max_ird), le32_to_cpu(a->max_ord),
		 le32_to_cpu(a->max_pdata), le64_to_cpu(a->max_mr_size),
		 le32_to_cpu(a->page_size_cap), le32_to_cpu(a->msix_vectors),
		 le32_to_cpu(a->mpa_rev), le32_to_cpu(a->flags));
}

static int rnic_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct rnic_dev *rdev;
	int err;

	rdev = kzalloc(sizeof(*rdev), GFP_KERNEL);
	if (!rdev)
		return -ENOMEM;
	rdev->pdev = pci_dev_get(pdev);
	pci_set_drvdata(pdev, rdev);

	err = pci_enable_device_mem(pdev);
	if (err)
		goto err_free;
	err = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (err)
		goto err_disable;
	err = pci_request_region(pdev, RNIC_BAR_REGS, RNIC_DRV_NAME);
	if (err)
		goto err_disable;
	pci_set_master(pdev);
	rdev->regs = pci_iomap(pdev, RNIC_BAR_REGS, RNIC_BAR_REGS_SIZE);
	if (!rdev->regs) {
		err = -ENOMEM;
		goto err_release;
	}
	err = rnic_check_identity(rdev);
	if (err)
		goto err_unmap;
	/* Whatever ran before us (kexec, a crashed driver) is forgotten. */
	rnic_disable(rdev);

	err = pci_alloc_irq_vectors(pdev, RNIC_MSIX_VECTORS, RNIC_MSIX_VECTORS,
				    PCI_IRQ_MSIX);
	if (err < 0)
		goto err_unmap;
	err = rnic_cmdq_create(rdev);
	if (err)
		goto err_vectors;
	err = rnic_eq_create(rdev);
	if (err)
		goto err_cmdq;
	err = request_irq(pci_irq_vector(pdev, RNIC_MSIX_VEC_ADMIN),
			  rnic_admin_irq, 0, RNIC_DRV_NAME "-admin", rdev);
	if (err)
		goto err_eq;
	err = rnic_enable(rdev);
	if (err)
		goto err_irq;
	err = rnic_fetch_device_attr(rdev);
	if (err) {
		dev_err(dev, "QUERY_DEVICE failed: %d\n", err);
		goto err_enabled;
	}
	rnic_log_limits(rdev);
	err = rnic_request_cq_irqs(rdev);
	if (err)
		goto err_enabled;
	err = rnic_ib_register(rdev);
	if (err) {
		dev_err(dev, "ib_device registration failed: %d\n", err);
		goto err_cq_irqs;
	}
	return 0;

err_cq_irqs:
	rnic_free_cq_irqs(rdev);
err_enabled:
	rnic_disable(rdev);
err_irq:
	free_irq(pci_irq_vector(pdev, RNIC_MSIX_VEC_ADMIN), rdev);
err_eq:
	rnic_eq_destroy(rdev);
err_cmdq:
	rnic_cmdq_destroy(rdev);
err_vectors:
	pci_free_irq_vectors(pdev);
err_unmap:
	pci_iounmap(pdev, rdev->regs);
err_release:
	pci_clear_master(pdev);
	pci_release_region(pdev, RNIC_BAR_REGS);
err_disable:
	pci_disable_device(pdev);
err_free:
	pci_set_drvdata(pdev, NULL);
	pci_dev_put(pdev);
	kfree(rdev);
	return err;
}

static void rnic_remove(struct pci_dev *pdev)
{
	struct rnic_dev *rdev = pci_get_drvdata(pdev);

	/* Every verbs object and connection goes while the device runs. */
	rnic_ib_unregister(rdev);
	WRITE_ONCE(rdev->dead, true);
	rnic_cmdq_abort(rdev);
	/* Stop the device before the memory it writes to goes away. */
	rnic_disable(rdev);
	rnic_free_cq_irqs(rdev);
	free_irq(pci_irq_vector(pdev, RNIC_MSIX_VEC_ADMIN), rdev);
	rnic_eq_destroy(rdev);
	rnic_cmdq_destroy(rdev);
	pci_free_irq_vectors(pdev);
	pci_iounmap(pdev, rdev->regs);
	pci_clear_master(pdev);
	pci_release_region(pdev, RNIC_BAR_REGS);
	pci_disable_device(pdev);
	dev_info(&pdev->dev, "removed\n");
	pci_set_drvdata(pdev, NULL);
	pci_dev_put(pdev);
	kfree(rdev);
}

/* No DMA into memory the next kernel (kexec) or the firmware owns. */
static void rnic_shutdown(struct pci_dev *pdev)
{
	struct rnic_dev *rdev = pci_get_drvdata(pdev);

	if (rdev)
		rnic_disable(rdev);
}

static const struct pci_device_id rnic_pci_ids[] = {
	{ PCI_DEVICE(RNIC_PCI_VENDOR_ID, RNIC_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, rnic_pci_ids);

static struct pci_driver rnic_pci_driver = {
	.name		= RNIC_DRV_NAME,
	.id_table	= rnic_pci_ids,
	.probe		= rnic_probe,
	.remove		= rnic_remove,
	.shutdown	= rnic_shutdown,
};
module_pci_driver(rnic_pci_driver);

MODULE_DESCRIPTION("rnic software iWARP RDMA NIC (QEMU) guest driver");
MODULE_LICENSE("GPL");
