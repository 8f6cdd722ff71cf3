/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The event queue: asynchronous events (connections, QP errors,
 * Terminates, CQ overflow) written to a ring in guest memory with a phase
 * bit, signalled on the admin MSI-X vector.
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "rnic.h"
#include "trace.h"

static const char *const rnic_event_names[] = RNIC_EVENT_NAMES;

void rnic_eq_post(RnicState *s, uint8_t type, uint32_t id, uint32_t arg0,
                  uint32_t arg1)
{
    RnicRing *eq = &s->eq;
    struct rnic_event ev = {
        .type = type,
        .id = cpu_to_le32(id),
        .arg0 = cpu_to_le32(arg0),
        .arg1 = cpu_to_le32(arg1),
        .timestamp_ns = cpu_to_le64(qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL)),
    };
    RnicRing r;

    trace_rnic_event(type < ARRAY_SIZE(rnic_event_names) &&
                     rnic_event_names[type] ? rnic_event_names[type] : "?",
                     id, arg0, arg1);
    /*
     * The ring's geometry is the guest's to change while the device is
     * disabled: only a READY device's (validated at enable) is used, and
     * read once (a copy).
     */
    if (!(s->status & RNIC_STATUS_READY)) {
        return;
    }
    r = *eq;
    ev.phase = rnic_ring_phase(&r, r.prod);
    if (rnic_ring_used(&r) >= rnic_ring_entries(&r)) {
        /* The driver has not consumed: keep what it has not read yet. */
        s->status |= RNIC_STATUS_EQ_OVERFLOW;
        s->eq_dropped++;
        trace_rnic_ub_eq_overflow(type, id);
        return;
    }
    if (rnic_ring_write(s, &r, r.prod, &ev, sizeof(ev), 0,
                        offsetof(struct rnic_event, id))) {
        qemu_log_mask(LOG_GUEST_ERROR, "rnic: event ring at 0x%" PRIx64
                      " is not writable by DMA; event dropped\n",
                      rnic_ring_addr(&r, r.prod));
        s->eq_dropped++;
        return;
    }
    eq->prod++;
    rnic_irq(s, RNIC_MSIX_VEC_ADMIN);
}
