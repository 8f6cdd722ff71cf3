// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The event queue: the device writes 32-byte events into a ring with a
 * phase bit (1 on the first pass, 0 on the second, ...) and signals the
 * admin vector.  Events are consumed in the interrupt handler and the
 * consumer index written back so the device never has to drop one.
 */
#include <linux/io.h>
#include "rnic_dev.h"

#define RNIC_EQ_LOG_SIZE	7	/* 128 entries of 32 bytes: one page */

static const char * const rnic_event_names[] = RNIC_EVENT_NAMES;

int rnic_eq_create(struct rnic_dev *rdev)
{
	struct rnic_eq *eq = &rdev->eq;
	int err;

	/* dma_alloc_coherent() zeroes: no entry looks valid on pass one. */
	err = rnic_ring_alloc(rdev, &eq->ring, RNIC_EQ_LOG_SIZE,
			      RNIC_EVENT_SIZE);
	if (err)
		return err;
	eq->cons = 0;
	eq->overflow_seen = false;
	rnic_ring_program(rdev, &eq->ring, RNIC_REG_EQ_BASE_LO,
			  RNIC_REG_EQ_BASE_HI, RNIC_REG_EQ_LOG_SIZE);
	rnic_write(rdev, RNIC_REG_EQ_CONS, 0);
	return 0;
}

void rnic_eq_destroy(struct rnic_dev *rdev)
{
	rnic_ring_free(rdev, &rdev->eq.ring);
}

/* Events go to the ib_device's connections and QPs (rnic_ib_cm.c). */
static void rnic_eq_handle(struct rnic_dev *rdev, const struct rnic_event *ev)
{
	struct device *dev = &rdev->pdev->dev;
	u32 id = le32_to_cpu(ev->id), arg0 = le32_to_cpu(ev->arg0);
	u32 arg1 = le32_to_cpu(ev->arg1);

	if (ev->type == RNIC_EV_FATAL) {
		dev_err(dev, "FATAL event: %s (0x%04x); command queue stopped\n",
			rnic_cmd_status_name(arg0), arg0);
		rnic_cmdq_abort(rdev);
	} else {
		dev_dbg(dev, "event %s (0x%02x) id %u arg0 0x%x arg1 0x%x\n",
			rnic_name(rnic_event_names,
				  ARRAY_SIZE(rnic_event_names), ev->type),
			ev->type, id, arg0, arg1);
	}
	rnic_ib_event(rdev, ev);
}

/* The phase the device writes on the pass the consumer index is in. */
static u8 rnic_eq_phase(const struct rnic_eq *eq)
{
	return ((eq->cons >> eq->ring.log_size) & 1) ^ 1;
}

void rnic_eq_irq(struct rnic_dev *rdev)
{
	struct rnic_eq *eq = &rdev->eq;
	u32 mask = (1u << eq->ring.log_size) - 1;
	u32 start = eq->cons;
	struct rnic_event *ev;

	for (;;) {
		ev = (struct rnic_event *)eq->ring.va + (eq->cons & mask);
		if ((READ_ONCE(ev->phase) & 1) != rnic_eq_phase(eq))
			break;
		dma_rmb();	/* the phase before the rest of the entry */
		rnic_eq_handle(rdev, ev);
		eq->cons++;
	}
	if (eq->cons != start)
		rnic_write(rdev, RNIC_REG_EQ_CONS, eq->cons);

	if (!eq->overflow_seen &&
	    (rnic_read(rdev, RNIC_REG_STATUS) & RNIC_STATUS_EQ_OVERFLOW)) {
		eq->overflow_seen = true;
		dev_warn(&rdev->pdev->dev,
			 "event queue overflowed: events were dropped\n");
	}
}
