/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where the device's work runs: QEMU's main loop (the default), or the
 * AioContext of an IOThread (-device rnic,iothread=ID), as virtio-blk and
 * virtio-scsi dataplane do it.  Every socket handler, timer and bottom
 * half of the device is made here, on the device's context.
 *
 * With an IOThread the device state has one lock (RnicState.lock, taken
 * by rnic_enter): the IOThread holds it while it runs commands, work
 * queues and connections; a vCPU holds it only while it decodes a
 * register access other than a work-queue or CQ doorbell (those go to a
 * mailbox without it, rnic-db.c) and kicks a bottom half.  The
 * IOThread never takes the BQL (see rnic-bus.c: RAM-only DMA, MSI-X sent
 * by the main loop), so a thread holding the BQL may wait for it: reset
 * and unplug run in the IOThread as a bottom half, between two of its
 * callbacks, never under one, while the caller waits on an event.
 *
 * The threading contract (asserted where marked, checked as a whole by
 * `make check-tsan`):
 *  1. Every way into the device state takes rnic_enter(): MMIO, bottom
 *     halves, fd handlers, timers, QOM getters and setters (state, stat-*,
 *     capture), QEMU's exit notifier.  Only the mailbox (rnic-db.c:
 *     atomics) and the irq_mask (atomic) are touched without it.
 *     [rnic_capture_stop() asserts it for the capture writer.]
 *  2. The IOThread never holds the BQL inside the device, and never
 *     dispatches an MMIO access of it (its DMA reaches RAM only).
 *     [rnic_enter() and rnic-regs.c assert both.]
 *  3. A thread holding the BQL may wait for the device lock; the
 *     IOThread never waits for the BQL.  Reset and unplug reach the
 *     IOThread through rnic_run_on_ctx(), never under a callback.
 *  4. owner_tid is written only by the thread inside, read atomically by
 *     others (rnic_inside()); entry_depth, running_deferred and in_mmio
 *     only under the lock.
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qemu/thread.h"
#include "block/aio-wait.h"
#include "rnic.h"

/* Rule 2: the IOThread is in the device without the BQL. */
bool rnic_in_iothread(RnicState *s)
{
    return s->ctx && in_aio_context_home_thread(s->ctx);
}

void rnic_set_fd_handler(RnicState *s, int fd, IOHandler *rd, IOHandler *wr,
                         void *opaque)
{
    if (s->frozen && (rd || wr)) {
        return;     /* the owner's record of it is what thaw registers */
    }
    if (s->ctx) {
        aio_set_fd_handler(s->ctx, fd, rd, wr, NULL, NULL, opaque);
    } else {
        qemu_set_fd_handler(fd, rd, wr, opaque);
    }
}

QEMUTimer *rnic_timer_new_ms(RnicState *s, QEMUTimerCB *cb, void *opaque)
{
    if (s->ctx) {
        return aio_timer_new(s->ctx, QEMU_CLOCK_REALTIME, SCALE_MS, cb,
                             opaque);
    }
    return timer_new_ms(QEMU_CLOCK_REALTIME, cb, opaque);
}

QEMUBH *rnic_bh_new(RnicState *s, QEMUBHFunc *cb, void *opaque)
{
    if (s->ctx) {
        /*
         * No re-entrancy guard on the BH: engaged by the IOThread it would
         * refuse the vCPUs' register accesses (the guard is per device,
         * not per thread).  rnic_enter() serialises instead.
         */
        return aio_bh_new(s->ctx, cb, opaque);
    }
    return qemu_bh_new_guarded(cb, opaque,
                               &DEVICE(s)->mem_reentrancy_guard);
}

/*
 * Shared by the waiter and the bottom half, freed by whichever lets go
 * last: the waiter may wake while qemu_event_set() is still at work, so
 * the event must not live on the waiter's stack.  The atomic count also
 * gives ThreadSanitizer the ordering that QemuEvent's fences hide from it.
 */
typedef struct RnicOnCtx {
    RnicState *s;
    void (*fn)(RnicState *s);
    QemuEvent done;
    int refs;
} RnicOnCtx;

static void rnic_on_ctx_put(RnicOnCtx *o)
{
    if (qatomic_fetch_dec(&o->refs) == 1) {
        qemu_event_destroy(&o->done);
        g_free(o);
    }
}

static void rnic_on_ctx_bh(void *opaque)
{
    RnicOnCtx *o = opaque;

    rnic_enter(o->s);
    o->s->running_deferred = true;
    o->fn(o->s);
    o->s->running_deferred = false;
    rnic_leave(o->s);
    qemu_event_set(&o->done);
    rnic_on_ctx_put(o);
}

/*
 * @fn (reset, teardown) on the device's context, waiting until it is done.
 * Main thread or a vCPU, with the BQL, outside any device callback.
 *
 * Not aio_wait_bh_oneshot(): it polls the main AioContext while it waits,
 * which its contract allows the main loop thread only.  From a vCPU that
 * poll ran beside the main loop's own, their unlocked updates of the
 * context's notify_me could lose one, and the main loop then slept
 * through the bottom half that sends MSI-X: a guest waiting for a command
 * completion froze (driver-probe.sh's 300 load/unload cycles did, 3 runs
 * of 3; rnic-rnic-iothread.sh now and then).
 */
void rnic_run_on_ctx(RnicState *s, void (*fn)(RnicState *s))
{
    RnicOnCtx *o;

    if (!s->ctx) {
        fn(s);
        return;
    }
    assert(!in_aio_context_home_thread(s->ctx));
    o = g_new0(RnicOnCtx, 1);
    o->s = s;
    o->fn = fn;
    o->refs = 2;
    qemu_event_init(&o->done, false);
    aio_bh_schedule_oneshot(s->ctx, rnic_on_ctx_bh, o);
    qemu_event_wait(&o->done);
    rnic_on_ctx_put(o);
}
