/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Completions to the guest (a leaf but for one call: it uses the bus,
 * the rings, events and traces, and rnic_wq_schedule()).  The core CQ
 * says which CQs changed; they wait on a list and are written to the
 * guest rings when the device callback that changed them ends
 * (rnic_leave), so no code path has to remember to flush, and nothing
 * ever scans every CQ.  A vCPU's register write only schedules the
 * work-queue bottom half, which delivers them.
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "rnic.h"
#include "device/abi_wr.h"
#include "trace.h"

/*
 * Moves completions from the core's staging ring to the guest's while the
 * guest ring has room; what does not fit waits in the core ring, which
 * reports an overflow when it is full too.
 */
void rnic_dev_cq_deliver(RnicState *s, RnicCq *cq)
{
    RnicRing *r = &cq->ring;
    uint32_t prod = r->prod;
    bool solicited = false;
    struct rnic_cqe c;

    if (rnic_cq_count(cq->core)) {
        rnic_wq_cq_arm_early(s, cq);
    }
    while (rnic_ring_used(r) < rnic_ring_entries(r) &&
           rnic_cq_poll(cq->core, &c, 1)) {
        struct rnic_cq_entry e;

        rnic_abi_cqe(&c, rnic_ring_phase(r, r->prod), &e);
        if (rnic_ring_write(s, r, r->prod, &e, sizeof(e),
                            offsetof(struct rnic_cq_entry, status),
                            sizeof(e) - offsetof(struct rnic_cq_entry,
                                                 status))) {
            qemu_log_mask(LOG_GUEST_ERROR, "rnic: CQ %u ring at 0x%" PRIx64
                          " not writable; completion of wr_id 0x%" PRIx64
                          " lost\n", cq->cqn, rnic_ring_addr(r, r->prod),
                          c.wr_id);
            continue;
        }
        trace_rnic_cqe(cq->cqn, c.qpn, rnic_wc_status_str(c.status),
                       rnic_wc_opcode_str(c.opcode), c.byte_len);
        s->stats.cqe[e.status & 15]++;
        solicited |= rnic_cq_arm_wants(RNIC_CQ_ARM_SOLICITED, &c);
        r->prod++;
    }
    if (r->prod != prod) {
        rnic_wq_cq_arm_late(s, cq, solicited);
    }
    if (rnic_cq_overflowed(cq->core) && !cq->overflow_reported) {
        cq->overflow_reported = true;
        rnic_eq_post(s, RNIC_EV_CQ_OVERFLOW, cq->cqn, 0, 0);
    }
    /*
     * The interrupt an arm asked for follows the completion into the
     * ring: a guest interrupted before it is there finds nothing new, and
     * a driver that then waits for the entry with its arm already used up
     * is never woken (the ring full, the completion staged here).
     */
    if (cq->irq_pending && r->prod != prod) {
        cq->irq_pending = false;
        rnic_irq(s, cq->vector);
    }
}

/* A CQ to deliver when the current callback ends. */
void rnic_dev_cq_kick(RnicState *s, RnicCq *cq)
{
    if (!cq->kicked) {
        cq->kicked = true;
        QTAILQ_INSERT_TAIL(&s->kicked_cqs, cq, kick_link);
    }
}

/* The core CQ's changed-callback (rnic_cq_set_changed). */
void rnic_dev_cq_changed(void *opaque, struct rnic_cq *core)
{
    RnicCq *cq = opaque;

    rnic_dev_cq_kick(cq->s, cq);
}

/* Every CQ that changed since the last delivery, and only those. */
void rnic_cqs_deliver(RnicState *s)
{
    RnicCq *cq;

    if (s->in_mmio) {
        if (!QTAILQ_EMPTY(&s->kicked_cqs)) {
            rnic_wq_schedule(s);
        }
        return;
    }
    while ((cq = QTAILQ_FIRST(&s->kicked_cqs))) {
        QTAILQ_REMOVE(&s->kicked_cqs, cq, kick_link);
        cq->kicked = false;
        rnic_dev_cq_deliver(s, cq);
    }
}
