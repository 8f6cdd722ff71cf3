/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device's sockets on an IOThread, as one handler that can be polled.
 * QEMU polls an AioContext (poll-max-ns) only while every handler on it
 * has an io_poll callback, and a socket has nothing in memory to look
 * at: its io_poll would be a system call per socket per turn, a thousand
 * with the soak's connections.  So the device keeps its sockets in an
 * epoll set of its own and puts only that set on the context, with an
 * io_poll that asks the set once.  An IOThread named with iothread= then
 * polls as its poll-max-ns says, for rnic and for the other devices on
 * it.  On the device's own IOThread the set has no io_poll, so that
 * IOThread does not poll and QEMU looks at the set in every turn: on two
 * host cores a polling IOThread takes the vCPUs' time, and latency grew
 * (docs/protocol.md, "Small messages in a guest").  Polling is for an
 * IOThread the user names, and tunes.
 *
 * Once every handler of a context can be polled, QEMU's loop does not
 * look at its descriptors in a turn that has a bottom half to run (it
 * would poll them instead, but not while its polling time is 0, as it is
 * at first).  So on a named IOThread work that goes on by itself does not
 * come back as a bottom half: the pump of a long Send waits for its socket
 * to be writable (rnic-conn.c), and the device's bottom halves look at
 * the sockets on their way out when nothing has for RNIC_POLL_LOOK_NS
 * (rnic_poll_turn), as a guest that rings doorbells without pause keeps
 * one pending in every turn.  Without that the peer's Sends and Writes
 * waited in the socket while the device sent: 87 ms of perftest's send
 * credits, and ib_send_bw -e stopped for good.
 *
 * The set's entries are found by fd under the device lock.  An event
 * carries its entry's generation too: one for a socket closed earlier in
 * the same batch does not reach the socket that got its number.  The set
 * outlives the device by a turn of its IOThread's loop, which may still
 * be asking it when the device is finalized (from another thread).
 */
#include "qemu/osdep.h"
#include <sys/epoll.h>
#include "qemu/error-report.h"
#include "rnic.h"

/* Events taken per dispatch; more wait for the next turn of the loop. */
#define RNIC_POLL_BATCH 64

/* Longest the sockets wait while bottom halves run turn after turn. */
#define RNIC_POLL_LOOK_NS (50 * SCALE_US)

typedef struct RnicPoller {
    RnicState *s;
    int fd;                 /* the epoll set */
    GHashTable *fds;        /* fd -> RnicPollFd, under the lock */
    uint32_t gen;
    bool polled;            /* the set has an io_poll: a named IOThread */
    bool on_ctx;            /* the set's handler is on the context */
    int64_t looked;         /* polled: when the sockets were last asked */
} RnicPoller;

typedef struct RnicPollFd {
    IOHandler *rd;
    IOHandler *wr;
    void *opaque;
    uint32_t gen;
} RnicPollFd;

static RnicPollFd *rnic_poll_fd(RnicPoller *p, uint64_t key)
{
    RnicPollFd *f = g_hash_table_lookup(p->fds,
                                        GINT_TO_POINTER((int)(uint32_t)key));

    return f && f->gen == key >> 32 ? f : NULL;
}

/* io_poll: without the lock, as the set is the kernel's. */
static bool rnic_poll_any(void *opaque)
{
    RnicPoller *p = opaque;
    struct epoll_event ev;

    return epoll_wait(p->fd, &ev, 1, 0) > 0;
}

/*
 * One ready socket's handlers, in one entry: no command frees the
 * socket's owner between the lookup and the call (the handlers enter
 * again, nested).  An entry per socket, as QEMU's own dispatch would
 * make: the completions of each go out before the next is served.
 */
static void rnic_poll_one(RnicPoller *p, const struct epoll_event *ev)
{
    RnicPollFd *f;

    rnic_enter(p->s);
    f = rnic_poll_fd(p, ev->data.u64);
    if (f && f->rd && (ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
        f->rd(f->opaque);
        f = rnic_poll_fd(p, ev->data.u64);     /* may be gone */
    }
    if (f && f->wr && (ev->events & (EPOLLOUT | EPOLLHUP | EPOLLERR))) {
        f->wr(f->opaque);
    }
    rnic_leave(p->s);
}

/* The set is readable, or polling found it so (the IOThread). */
static void rnic_poll_dispatch(void *opaque)
{
    RnicPoller *p = opaque;
    struct epoll_event ev[RNIC_POLL_BATCH];
    int n = epoll_wait(p->fd, ev, ARRAY_SIZE(ev), 0);

    if (p->polled) {
        p->looked = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    }
    for (int i = 0; i < n; i++) {
        rnic_poll_one(p, &ev[i]);
    }
}

/* A bottom half ends: the sockets, if nothing has looked at them lately. */
void rnic_poll_turn(RnicState *s)
{
    RnicPoller *p = s->poller;

    if (p && p->polled && qemu_clock_get_ns(QEMU_CLOCK_REALTIME) -
                          p->looked >= RNIC_POLL_LOOK_NS) {
        rnic_poll_dispatch(p);
    }
}

void rnic_poll_init(RnicState *s)
{
    RnicPoller *p = g_new0(RnicPoller, 1);

    p->s = s;
    p->fd = epoll_create1(EPOLL_CLOEXEC);
    if (p->fd < 0) {
        /* a process out of descriptors: fail the way QEMU does for those */
        error_report("rnic: epoll_create1: %s", strerror(errno));
        abort();
    }
    p->fds = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    p->polled = !s->own_iothread;
    p->on_ctx = true;
    s->poller = p;
    aio_set_fd_handler(s->ctx, p->fd, rnic_poll_dispatch, NULL,
                       p->polled ? rnic_poll_any : NULL,
                       p->polled ? rnic_poll_dispatch : NULL, p);
}

/* Under the lock: @fd's handlers, or none (both NULL). */
void rnic_poll_set(RnicState *s, int fd, IOHandler *rd, IOHandler *wr,
                   void *opaque)
{
    RnicPoller *p = s->poller;
    RnicPollFd *f = g_hash_table_lookup(p->fds, GINT_TO_POINTER(fd));
    struct epoll_event ev = {
        .events = (rd ? EPOLLIN : 0) | (wr ? EPOLLOUT : 0),
    };
    int op;

    assert(rnic_inside(s));
    if (!rd && !wr) {
        if (f) {
            epoll_ctl(p->fd, EPOLL_CTL_DEL, fd, NULL);
            g_hash_table_remove(p->fds, GINT_TO_POINTER(fd));
        }
        return;
    }
    op = f ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (!f) {
        f = g_new0(RnicPollFd, 1);
        f->gen = ++p->gen;
        g_hash_table_insert(p->fds, GINT_TO_POINTER(fd), f);
    }
    f->rd = rd;
    f->wr = wr;
    f->opaque = opaque;
    ev.data.u64 = (uint64_t)f->gen << 32 | (uint32_t)fd;
    if (epoll_ctl(p->fd, op, fd, &ev) < 0) {
        error_report("rnic: epoll_ctl(%d): %s", fd, strerror(errno));
    }
}

/*
 * The teardown, every socket gone: the set leaves the context, on the
 * IOThread when there is one, so that no later dispatch of this turn or
 * poll of the next reaches a device about to be finalized.
 */
void rnic_poll_stop(RnicState *s)
{
    RnicPoller *p = s->poller;

    if (p && p->on_ctx) {
        p->on_ctx = false;
        aio_set_fd_handler(s->ctx, p->fd, NULL, NULL, NULL, NULL, NULL);
    }
}

static void rnic_poll_free(void *opaque)
{
    RnicPoller *p = opaque;

    close(p->fd);
    g_hash_table_destroy(p->fds);
    g_free(p);
}

/* At finalize: freed by the IOThread, after the turns that knew the set. */
void rnic_poll_fini(RnicState *s)
{
    RnicPoller *p = s->poller;

    if (!p) {
        return;
    }
    rnic_poll_stop(s);      /* a realize that failed before the teardown */
    s->poller = NULL;
    aio_bh_schedule_oneshot(s->ctx, rnic_poll_free, p);
}
