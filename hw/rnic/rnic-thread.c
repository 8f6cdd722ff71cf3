/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where the device's work runs: the AioContext of an IOThread, as
 * virtio-blk and virtio-scsi dataplane do it -- the one iothread=ID names,
 * else one the device makes for itself -- or, with main-loop=on, QEMU's
 * main loop (ctx NULL).  Every socket handler, timer and bottom half of
 * the device is made here, on the device's context.
 *
 * With an IOThread the device state has one lock (RnicState.lock, taken
 * by rnic_enter): the IOThread holds it while it runs commands, work
 * queues and connections; a vCPU holds it only while it decodes a
 * register access other than a work-queue or CQ doorbell or a CQ arm
 * (those go to a mailbox without it, rnic-db.c) and kicks a bottom half.
 * The IOThread never takes the BQL (see rnic-bus.c: RAM-only DMA, MSI-X
 * sent by the main loop), so a thread holding the BQL may wait for it: reset
 * and unplug run in the IOThread as a bottom half, between two of its
 * callbacks, never under one, while the caller waits on an event.
 *
 * The threading contract (asserted where marked, checked as a whole by
 * `make check-tsan`):
 *  1. Every way into the device state takes rnic_enter(): MMIO, bottom
 *     halves, fd handlers, timers, QOM getters and setters (state, stat-*,
 *     capture), QEMU's exit notifier.  Only the mailbox (rnic-db.c:
 *     atomics) and the irq_mask (atomic) are touched without it.
 *     [rnic_capture_stop() asserts it for the capture writer,
 *     rnic_poll_set() for the sockets' table.]
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
#include "qapi/error.h"
#include "system/iothread.h"
#include "rnic.h"

/*
 * At realize: the device's context.  Without iothread= the device makes
 * an IOThread of its own, an internal one as the monitor's is (QMP's
 * query-iothreads does not list it).  Its name "rnicN", N counting the
 * devices made so far, is unique in the process and short enough for
 * -name debug-threads=on to name the thread "IO rnicN" (15 characters at
 * most, or Linux keeps the process's name).
 */
bool rnic_thread_init(RnicState *s, Error **errp)
{
    static unsigned made;
    IOThread *io = s->params.iothread;

    if (s->params.main_loop) {
        if (io) {
            error_setg(errp, "rnic: iothread and main-loop=on exclude each "
                       "other");
            return false;
        }
        return true;        /* ctx stays NULL: the main loop */
    }
    if (io) {
        object_ref(OBJECT(io));
    } else {
        g_autofree char *name = g_strdup_printf("rnic%u", made++);

        io = iothread_create(name, errp);
        if (!io) {
            return false;
        }
        s->own_iothread = io;
    }
    s->ctx = iothread_get_aio_context(io);
    qemu_rec_mutex_init(&s->lock);
    rnic_poll_init(s);
    s->irq_bh = qemu_bh_new(rnic_irq_bh, s);
    return true;
}

static void rnic_iothread_destroy_bh(void *opaque)
{
    iothread_destroy(opaque);
}

/*
 * At finalize: the last entry (maybe a deferred unplug's) is over, and
 * the teardown deleted every bottom half, timer and handler it had on
 * the context.  The device's own IOThread stops with it; the thread
 * cannot join itself, so if the IOThread let go of the device last, the
 * main loop stops it.
 */
void rnic_thread_fini(RnicState *s)
{
    if (!s->irq_bh) {
        return;
    }
    qemu_bh_delete(s->irq_bh);
    s->irq_bh = NULL;
    rnic_poll_fini(s);
    qemu_rec_mutex_destroy(&s->lock);
    if (!s->own_iothread) {
        object_unref(OBJECT(s->params.iothread));
    } else if (in_aio_context_home_thread(s->ctx)) {
        aio_bh_schedule_oneshot(qemu_get_aio_context(),
                                rnic_iothread_destroy_bh, s->own_iothread);
    } else {
        iothread_destroy(s->own_iothread);
    }
    s->own_iothread = NULL;
    s->ctx = NULL;
}

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
        rnic_poll_set(s, fd, rd, wr, opaque);
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
 * of 3; rnic-rnic.sh on an IOThread now and then).
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
