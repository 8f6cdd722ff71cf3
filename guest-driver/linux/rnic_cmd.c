// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The command queue: post a descriptor, ring CMDQ_PROD, sleep until the
 * admin vector reports CMDQ_CONS caught up, read the status the device
 * wrote last.  One command is in flight at a time; callers sleep.
 */
#include <linux/io.h>
#include <linux/jiffies.h>
#include "rnic_dev.h"

/* Commands run in a QEMU bottom half: far below this even under TCG. */
#define RNIC_CMD_TIMEOUT_MS	5000
#define RNIC_CMDQ_LOG_SIZE	6	/* 64 entries of 64 bytes: one page */

static const char * const rnic_cmd_status_names[] = RNIC_CMD_STATUS_NAMES;

const char *rnic_cmd_status_name(u16 status)
{
	if (status == RNIC_CMD_STATUS_PENDING)
		return "PENDING";
	return rnic_name(rnic_cmd_status_names,
			 ARRAY_SIZE(rnic_cmd_status_names), status);
}

static int rnic_cmd_errno(u16 status)
{
	switch (status) {
	case RNIC_CMD_OK:
		return 0;
	case RNIC_CMD_ERR_OPCODE:
		return -EOPNOTSUPP;
	case RNIC_CMD_ERR_PARAM:
		return -EINVAL;
	case RNIC_CMD_ERR_RESOURCE:
		return -ENOSPC;
	case RNIC_CMD_ERR_HANDLE:
		return -ENOENT;
	case RNIC_CMD_ERR_BUSY:
		return -EBUSY;
	case RNIC_CMD_ERR_STATE:
		return -EINVAL;
	case RNIC_CMD_ERR_ACCESS:
	case RNIC_CMD_ERR_DENIED:
		return -EACCES;
	case RNIC_CMD_ERR_ADDRINUSE:
		return -EADDRINUSE;
	default:
		return -EIO;
	}
}

/* Allocates the ring and hands it to the device, ENABLE still clear. */
int rnic_cmdq_create(struct rnic_dev *rdev)
{
	struct rnic_cmdq *cq = &rdev->cmdq;
	int err;

	mutex_init(&cq->lock);
	init_completion(&cq->done);
	err = rnic_ring_alloc(rdev, &cq->ring, RNIC_CMDQ_LOG_SIZE,
			      RNIC_CMD_SIZE);
	if (err)
		return err;
	cq->prod = 0;
	cq->dead = false;
	rnic_ring_program(rdev, &cq->ring, RNIC_REG_CMDQ_BASE_LO,
			  RNIC_REG_CMDQ_BASE_HI, RNIC_REG_CMDQ_LOG_SIZE);
	return 0;
}

void rnic_cmdq_destroy(struct rnic_dev *rdev)
{
	rnic_ring_free(rdev, &rdev->cmdq.ring);
}

/* Admin vector: wake the waiter once the device consumed every command. */
void rnic_cmdq_irq(struct rnic_dev *rdev)
{
	struct rnic_cmdq *cq = &rdev->cmdq;

	if (rnic_read(rdev, RNIC_REG_CMDQ_CONS) == READ_ONCE(cq->prod))
		complete(&cq->done);
}

/* The device stopped the queue (FATAL): fail the waiter now, not later. */
void rnic_cmdq_abort(struct rnic_dev *rdev)
{
	WRITE_ONCE(rdev->cmdq.dead, true);
	complete(&rdev->cmdq.done);
}

/*
 * Runs @cmd (opcode and inputs filled in) and copies the slot, with the
 * device's outputs, back into it.  Returns 0, a negative errno for the
 * device's status, or -ETIMEDOUT.
 */
static int __rnic_cmd_exec(struct rnic_dev *rdev, struct rnic_cmd *cmd,
			   bool quiet)
{
	struct rnic_cmdq *cq = &rdev->cmdq;
	struct rnic_cmd *slot;
	u16 status;
	int err;

	mutex_lock(&cq->lock);
	if (READ_ONCE(cq->dead)) {
		err = -EIO;
		goto out;
	}
	slot = (struct rnic_cmd *)cq->ring.va +
	       (cq->prod & ((1u << cq->ring.log_size) - 1));
	cmd->flags |= RNIC_CMD_FLAG_IRQ;
	cmd->status = cpu_to_le16(RNIC_CMD_STATUS_PENDING);
	cmd->cookie = cpu_to_le32(cq->prod);
	memcpy(slot, cmd, sizeof(*slot));
	reinit_completion(&cq->done);
	WRITE_ONCE(cq->prod, cq->prod + 1);
	/* writel() orders the descriptor stores before the doorbell. */
	rnic_write(rdev, RNIC_REG_CMDQ_PROD, cq->prod);

	if (!wait_for_completion_timeout(&cq->done,
					 msecs_to_jiffies(RNIC_CMD_TIMEOUT_MS))) {
		/* The slot may still be written later: never reuse the queue. */
		WRITE_ONCE(cq->dead, true);
		dev_err(&rdev->pdev->dev,
			"command 0x%02x timed out after %d ms (CMDQ_CONS %u, posted %u)\n",
			cmd->opcode, RNIC_CMD_TIMEOUT_MS,
			rnic_read(rdev, RNIC_REG_CMDQ_CONS), cq->prod);
		err = -ETIMEDOUT;
		goto out;
	}
	/* The status is written last: read it before the outputs. */
	status = le16_to_cpu(READ_ONCE(slot->status));
	dma_rmb();
	memcpy(cmd, slot, sizeof(*cmd));
	err = READ_ONCE(cq->dead) && status == RNIC_CMD_STATUS_PENDING ?
	      -EIO : rnic_cmd_errno(status);
	if (err && !quiet)
		dev_err(&rdev->pdev->dev, "command 0x%02x failed: %s (0x%04x)\n",
			cmd->opcode, rnic_cmd_status_name(status), status);
	else if (err)
		dev_dbg(&rdev->pdev->dev, "command 0x%02x failed: %s (0x%04x)\n",
			cmd->opcode, rnic_cmd_status_name(status), status);
out:
	mutex_unlock(&cq->lock);
	return err;
}

int rnic_cmd_exec(struct rnic_dev *rdev, struct rnic_cmd *cmd)
{
	return __rnic_cmd_exec(rdev, cmd, false);
}

int rnic_cmd_exec_quiet(struct rnic_dev *rdev, struct rnic_cmd *cmd)
{
	return __rnic_cmd_exec(rdev, cmd, true);
}
