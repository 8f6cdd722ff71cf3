/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic guest driver: the state shared by its parts.
 *
 * rnic_main.c binds the PCI function, brings the device up and down and
 * keeps the rings' DMA memory; rnic_cmd.c owns the command queue,
 * rnic_eq.c the event queue.  Both queues are signalled on MSI-X vector
 * RNIC_MSIX_VEC_ADMIN.  The ib_device (rnic_ib_*.c) is the only interface
 * to the rest of the kernel and to user space.
 */
#ifndef RNIC_DEV_H
#define RNIC_DEV_H

#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <rnic/rnic-abi.h>

#define RNIC_DRV_NAME		"rnic"

struct rnic_ib_dev;

/* A ring of fixed-size entries in coherent DMA memory. */
/* The oldest minor of device ABI RNIC_ABI_MAJOR this driver runs on. */
#define RNIC_DRV_ABI_MINOR	0

struct rnic_ring {
	void *va;
	dma_addr_t dma;
	size_t bytes;
	u32 log_size;
};

struct rnic_cmdq {
	struct rnic_ring ring;
	struct mutex lock;		/* one command in flight at a time */
	struct completion done;		/* completed from the admin vector */
	u32 prod;			/* commands posted (free-running) */
	bool dead;			/* timed out or FATAL: no more posts */
};

struct rnic_eq {
	struct rnic_ring ring;
	u32 cons;			/* events consumed (free-running) */
	bool overflow_seen;
};

struct rnic_dev {
	struct pci_dev *pdev;
	void __iomem *regs;
	struct rnic_cmdq cmdq;
	struct rnic_eq eq;
	struct rnic_device_attr attr;	/* from QUERY_DEVICE, little-endian */
	bool dead;			/* removed: no more commands */
	atomic_t next_vector;		/* CQ vectors, round robin */
	struct rnic_ib_dev *ib;		/* the ib_device (rnic_ib_main.c) */
	struct rnic_vec {		/* request_irq() data of CQ vectors */
		struct rnic_dev *rdev;
		unsigned int v;
	} vecs[RNIC_MSIX_VECTORS];
};

static inline u32 rnic_read(struct rnic_dev *rdev, u32 reg)
{
	return readl(rdev->regs + reg);
}

static inline void rnic_write(struct rnic_dev *rdev, u32 reg, u32 val)
{
	writel(val, rdev->regs + reg);
}

/* For logs: the name of @v in a table indexed by value. */
static inline const char *rnic_name(const char * const *names, size_t n,
				    unsigned int v)
{
	return v < n && names[v] ? names[v] : "UNKNOWN";
}

int rnic_ring_alloc(struct rnic_dev *rdev, struct rnic_ring *ring,
		    u32 log_size, size_t entry_size);
void rnic_ring_free(struct rnic_dev *rdev, struct rnic_ring *ring);
void rnic_ring_program(struct rnic_dev *rdev, const struct rnic_ring *ring,
		       u32 reg_base_lo, u32 reg_base_hi, u32 reg_log_size);

int rnic_cmdq_create(struct rnic_dev *rdev);
void rnic_cmdq_destroy(struct rnic_dev *rdev);
void rnic_cmdq_irq(struct rnic_dev *rdev);
void rnic_cmdq_abort(struct rnic_dev *rdev);
int rnic_cmd_exec(struct rnic_dev *rdev, struct rnic_cmd *cmd);

/* The payload of a command that names one object by its handle. */
/* The same without logging the device's refusals: for user requests. */
int rnic_cmd_exec_quiet(struct rnic_dev *rdev, struct rnic_cmd *cmd);
const char *rnic_cmd_status_name(u16 status);

int rnic_eq_create(struct rnic_dev *rdev);
void rnic_eq_destroy(struct rnic_dev *rdev);
void rnic_eq_irq(struct rnic_dev *rdev);

int rnic_ib_register(struct rnic_dev *rdev);
void rnic_ib_unregister(struct rnic_dev *rdev);
void rnic_ib_event(struct rnic_dev *rdev, const struct rnic_event *ev);
void rnic_ib_cq_irq(struct rnic_dev *rdev, unsigned int vector);

#endif /* RNIC_DEV_H */
