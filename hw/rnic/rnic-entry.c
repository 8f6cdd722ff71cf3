/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Every way into the device: MMIO, bottom halves, socket handlers, timers
 * and QOM setters all run between rnic_enter() and rnic_leave().
 *
 * Code inside may write guest-chosen addresses (CQEs, events, placed data,
 * MSI-X messages).  Two things can then happen that would pull the device
 * from under its own feet:
 *  - the write lands in one of the device's own BARs (CONTROL.RESET, say):
 *    the device's re-entrancy guard is engaged for the whole call, so the
 *    memory core refuses it and the DMA fails like any other bad address;
 *  - the write lands elsewhere and resets or unplugs the device (a root
 *    port's bridge control or slot power in PCIe config space): the reset
 *    or the freeing of the device's objects is deferred until the
 *    outermost entry returns, and a reference keeps the object itself
 *    alive until then.  Once unplugged, the device touches the bus no more
 *    (rnic-bus.c).
 */
#include "qemu/osdep.h"
#include "rnic.h"
#include "trace.h"

void rnic_enter(RnicState *s)
{
    MemReentrancyGuard *g = &DEVICE(s)->mem_reentrancy_guard;

    object_ref(OBJECT(s));
    if (!s->entry_depth++) {
        s->guard_saved = g->engaged_in_io;
        g->engaged_in_io = true;
    }
}

void rnic_leave(RnicState *s)
{
    MemReentrancyGuard *g = &DEVICE(s)->mem_reentrancy_guard;

    assert(s->entry_depth);
    if (s->entry_depth == 1) {
        /* Completions this callback produced, before anything else. */
        rnic_cqs_deliver(s);
        /* Still guarded: the deferred work runs as part of this entry. */
        s->running_deferred = true;
        if (s->teardown_deferred) {
            rnic_teardown(s);
        } else if (s->reset_deferred) {
            rnic_soft_reset(s);
        }
        s->teardown_deferred = s->reset_deferred = false;
        s->running_deferred = false;
        g->engaged_in_io = s->guard_saved;
    }
    s->entry_depth--;
    object_unref(OBJECT(s));
}

void rnic_guarded(RnicState *s, void (*fn)(void *), void *opaque)
{
    rnic_enter(s);
    fn(opaque);
    rnic_leave(s);
}

bool rnic_defer(RnicState *s, bool *flag, const char *what)
{
    if (!s->entry_depth || s->running_deferred) {
        return false;
    }
    trace_rnic_deferred(what, s->entry_depth);
    *flag = true;
    return true;
}
