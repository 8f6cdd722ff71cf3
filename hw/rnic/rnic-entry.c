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
 *
 * With an IOThread (rnic-thread.c) the IOThread and the vCPUs both enter:
 * rnic_enter() takes the device lock (recursive: entries nest), and only
 * a thread holding the BQL engages the memory guard (engaged by the
 * IOThread it would refuse the vCPUs' register accesses; the IOThread's
 * DMA reaches RAM only, so it cannot re-enter the device).  A deferred
 * reset or unplug then runs after the lock is dropped, in the IOThread.
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "rnic.h"
#include "trace.h"

/* qemu_get_thread_id() is a system call; every entry asks. */
static int rnic_thread_id(void)
{
    static __thread int tid;

    if (!tid) {
        tid = qemu_get_thread_id();
    }
    return tid;
}

/* Whether the guard is this device's to engage from this thread. */
static bool rnic_guards(RnicState *s)
{
    return !s->ctx || bql_locked();
}

void rnic_enter(RnicState *s)
{
    MemReentrancyGuard *g = &DEVICE(s)->mem_reentrancy_guard;

    assert(!rnic_in_iothread(s) || !bql_locked());
    object_ref(OBJECT(s));
    if (s->ctx) {
        qemu_rec_mutex_lock(&s->lock);
    }
    if (!s->entry_depth++) {
        qatomic_set(&s->owner_tid, rnic_thread_id());
        if (rnic_guards(s)) {
            s->guard_saved = g->engaged_in_io;
            g->engaged_in_io = true;
        }
    }
}

/* With an IOThread: what an entry deferred, once the lock is dropped. */
static void rnic_run_deferred(RnicState *s, bool teardown, bool reset)
{
    if (teardown) {
        rnic_run_on_ctx(s, rnic_teardown);
    } else if (reset) {
        rnic_run_on_ctx(s, rnic_reset_now);
    }
}

void rnic_leave(RnicState *s)
{
    MemReentrancyGuard *g = &DEVICE(s)->mem_reentrancy_guard;
    bool teardown = false, reset = false;

    assert(s->entry_depth);
    if (s->entry_depth == 1) {
        /* Completions this callback produced, before anything else. */
        rnic_cqs_deliver(s);
        s->in_mmio = false;     /* still under the lock */
        if (s->ctx) {
            teardown = s->teardown_deferred;
            reset = s->reset_deferred;
        } else if (s->teardown_deferred) {
            /* Still guarded: the deferred work runs within this entry. */
            s->running_deferred = true;
            rnic_teardown(s);
        } else if (s->reset_deferred) {
            s->running_deferred = true;
            rnic_reset_now(s);
        }
        s->teardown_deferred = s->reset_deferred = false;
        s->running_deferred = false;
        rnic_ram_drop(s);
        if (rnic_guards(s)) {
            g->engaged_in_io = s->guard_saved;
        }
        qatomic_set(&s->owner_tid, 0);
    }
    if (s->ctx) {
        bool outer = !--s->entry_depth;

        qemu_rec_mutex_unlock(&s->lock);
        if (outer) {
            rnic_run_deferred(s, teardown, reset);
        }
    } else {
        s->entry_depth--;
    }
    object_unref(OBJECT(s));
}

void rnic_guarded(RnicState *s, void (*fn)(void *), void *opaque)
{
    rnic_enter(s);
    fn(opaque);
    rnic_leave(s);
}

/*
 * A bottom half's way in.  One that comes back turn after turn keeps
 * QEMU's loop from looking at the sockets: they get a look as it ends
 * (rnic-poll.c).
 */
void rnic_guarded_bh(RnicState *s, void (*fn)(void *), void *opaque)
{
    rnic_enter(s);
    fn(opaque);
    rnic_poll_turn(s);
    rnic_leave(s);
}

/*
 * Inside an entry of this thread?  Another thread's entry (the IOThread's)
 * is not ours to wait for here: rnic_run_on_ctx() queues behind it.
 */
bool rnic_inside(RnicState *s)
{
    if (s->ctx) {
        return qatomic_read(&s->owner_tid) == rnic_thread_id();
    }
    return s->entry_depth;
}

bool rnic_defer(RnicState *s, bool *flag, const char *what)
{
    if (!rnic_inside(s) || s->running_deferred) {
        return false;
    }
    trace_rnic_deferred(what, s->entry_depth);
    *flag = true;
    return true;
}
