/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QP number allocation with timewait.
 *
 * Two FIFOs threaded through one array, linked by number (0, never a valid
 * QPN, ends a list): the free list, and the timewait list in order of
 * freeing.  With one fixed interval that is also the order of expiry, so
 * expired numbers are always at the timewait head and move to the free
 * tail: each number moves once per use, hence O(1) amortised.  Taking from
 * the free head and appending at its tail is what makes the rotation.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include "qpn.h"
#include "save.h"

enum rnic_qpn_state {
    QPN_FREE,
    QPN_LIVE,
    QPN_TIMEWAIT,
};

struct rnic_qpn_entry {
    void *qp;
    uint64_t expires;           /* ms, while in timewait */
    uint32_t next;
    uint8_t state;
};

struct rnic_qpn_list {
    uint32_t head;
    uint32_t tail;
};

struct rnic_qpn_table {
    struct rnic_qpn_entry *e;
    uint32_t max;
    uint32_t timewait_ms;
    rnic_clock_ms_fn *clock;
    void *opaque;
    struct rnic_qpn_list free;
    struct rnic_qpn_list timewait;
};

static void rnic_qpn_append(struct rnic_qpn_table *t, struct rnic_qpn_list *l,
                            uint32_t qpn)
{
    t->e[qpn].next = 0;
    if (l->tail) {
        t->e[l->tail].next = qpn;
    } else {
        l->head = qpn;
    }
    l->tail = qpn;
}

static uint32_t rnic_qpn_take(struct rnic_qpn_table *t,
                              struct rnic_qpn_list *l)
{
    uint32_t qpn = l->head;

    if (qpn) {
        l->head = t->e[qpn].next;
        if (!l->head) {
            l->tail = 0;
        }
    }
    return qpn;
}

struct rnic_qpn_table *rnic_qpn_table_new(uint32_t max, uint32_t timewait_ms,
                                          rnic_clock_ms_fn *clock,
                                          void *opaque)
{
    struct rnic_qpn_table *t;

    if (max < 2 || !clock) {
        return NULL;
    }
    t = calloc(1, sizeof(*t));
    if (!t) {
        return NULL;
    }
    t->e = calloc(max, sizeof(*t->e));
    if (!t->e) {
        free(t);
        return NULL;
    }
    t->max = max;
    t->timewait_ms = timewait_ms;
    t->clock = clock;
    t->opaque = opaque;
    for (uint32_t qpn = 1; qpn < max; qpn++) {
        rnic_qpn_append(t, &t->free, qpn);
    }
    return t;
}

void rnic_qpn_table_free(struct rnic_qpn_table *t)
{
    if (t) {
        free(t->e);
        free(t);
    }
}

static bool rnic_qpn_expired(const struct rnic_qpn_table *t, uint32_t qpn,
                             uint64_t now)
{
    return now >= t->e[qpn].expires;
}

static void rnic_qpn_expire(struct rnic_qpn_table *t, uint64_t now)
{
    while (t->timewait.head && rnic_qpn_expired(t, t->timewait.head, now)) {
        uint32_t qpn = rnic_qpn_take(t, &t->timewait);

        t->e[qpn].state = QPN_FREE;
        rnic_qpn_append(t, &t->free, qpn);
    }
}

int rnic_qpn_alloc(struct rnic_qpn_table *t, void *qp, uint32_t *qpn)
{
    uint32_t n;

    rnic_qpn_expire(t, t->clock(t->opaque));
    n = rnic_qpn_take(t, &t->free);
    if (!n) {
        return t->timewait.head ? -EAGAIN : -ENOSPC;
    }
    t->e[n].state = QPN_LIVE;
    t->e[n].qp = qp;
    *qpn = n;
    return 0;
}

int rnic_qpn_free(struct rnic_qpn_table *t, uint32_t qpn)
{
    if (qpn == 0 || qpn >= t->max || t->e[qpn].state != QPN_LIVE) {
        return -EINVAL;
    }
    t->e[qpn].state = QPN_TIMEWAIT;
    t->e[qpn].qp = NULL;
    t->e[qpn].expires = t->clock(t->opaque) + t->timewait_ms;
    rnic_qpn_append(t, &t->timewait, qpn);
    return 0;
}

enum rnic_qpn_lookup rnic_qpn_lookup(struct rnic_qpn_table *t, uint32_t qpn,
                                     void **qp)
{
    *qp = NULL;
    if (qpn == 0 || qpn >= t->max) {
        return RNIC_QPN_FREE;
    }
    switch (t->e[qpn].state) {
    case QPN_LIVE:
        *qp = t->e[qpn].qp;
        return RNIC_QPN_LIVE;
    case QPN_TIMEWAIT:
        /* Still queued for recycling, but the interval is what counts. */
        return rnic_qpn_expired(t, qpn, t->clock(t->opaque))
               ? RNIC_QPN_FREE : RNIC_QPN_TIMEWAIT;
    default:
        return RNIC_QPN_FREE;
    }
}

const char *rnic_qpn_lookup_str(enum rnic_qpn_lookup result)
{
    switch (result) {
    case RNIC_QPN_FREE:
        return "FREE";
    case RNIC_QPN_LIVE:
        return "LIVE";
    case RNIC_QPN_TIMEWAIT:
        return "TIMEWAIT";
    default:
        return "?";
    }
}

/* ---- migration (save.h) ---- */

/*
 * The numbers in use (live, or in timewait with their expiry on the
 * caller's clock, which for the device is the guest's and moves with it),
 * then the free and the timewait lists in their order, as runs of
 * consecutive numbers: a free list is mostly one run, so a table of
 * 65535 numbers takes a few bytes, not 9 a number.
 */
void rnic_qpn_table_save(struct rnic_sv *s, const struct rnic_qpn_table *t)
{
    const struct rnic_qpn_list *lists[] = { &t->free, &t->timewait };
    uint32_t used = 0;

    rnic_sv_u32(s, t->max);
    for (uint32_t qpn = 1; qpn < t->max; qpn++) {
        used += t->e[qpn].state != QPN_FREE;
    }
    rnic_sv_u32(s, used);
    for (uint32_t qpn = 1; qpn < t->max; qpn++) {
        if (t->e[qpn].state != QPN_FREE) {
            rnic_sv_u32(s, qpn);
            rnic_sv_u8(s, t->e[qpn].state);
            rnic_sv_u64(s, t->e[qpn].expires);
        }
    }
    for (int k = 0; k < 2; k++) {
        uint32_t runs = 0;

        for (uint32_t q = lists[k]->head; q; q = t->e[q].next) {
            runs += t->e[q].next != q + 1;
        }
        rnic_sv_u32(s, runs);
        for (uint32_t q = lists[k]->head; q; q = t->e[q].next) {
            uint32_t first = q;

            while (t->e[q].next == q + 1) {
                q++;
            }
            rnic_sv_u32(s, first);
            rnic_sv_u32(s, q - first + 1);
        }
    }
}

/* The numbers of @l, each of @state and on no list yet, in order. */
static bool rnic_qpn_list_load(struct rnic_ld *l, struct rnic_qpn_table *t,
                               struct rnic_qpn_list *list, uint8_t state,
                               bool *listed)
{
    uint32_t runs = rnic_ld_count(l, t->max - 1);

    *list = (struct rnic_qpn_list) { 0 };
    for (uint32_t r = 0; r < runs; r++) {
        uint32_t first = rnic_ld_u32(l), n = rnic_ld_u32(l);

        if (l->failed || first == 0 || first >= t->max || n == 0 ||
            n > t->max - first) {
            return false;
        }
        for (uint32_t qpn = first; qpn < first + n; qpn++) {
            if (t->e[qpn].state != state || listed[qpn]) {
                return false;
            }
            listed[qpn] = true;
            rnic_qpn_append(t, list, qpn);
        }
    }
    return true;
}

int rnic_qpn_table_load(struct rnic_ld *l, struct rnic_qpn_table *t)
{
    uint32_t used;
    bool *listed;
    bool ok;

    if (rnic_ld_u32(l) != t->max || l->failed) {
        return -EINVAL;
    }
    for (uint32_t qpn = 1; qpn < t->max; qpn++) {
        t->e[qpn] = (struct rnic_qpn_entry) { .state = QPN_FREE };
    }
    used = rnic_ld_count(l, t->max - 1);
    for (uint32_t i = 0; i < used; i++) {
        uint32_t qpn = rnic_ld_u32(l);
        uint8_t state = rnic_ld_u8(l);
        uint64_t expires = rnic_ld_u64(l);

        if (l->failed || qpn == 0 || qpn >= t->max ||
            t->e[qpn].state != QPN_FREE ||
            (state != QPN_LIVE && state != QPN_TIMEWAIT)) {
            return -EINVAL;
        }
        t->e[qpn].state = state;
        t->e[qpn].expires = expires;
    }
    listed = calloc(t->max, sizeof(*listed));
    if (!listed) {
        return -ENOMEM;
    }
    ok = rnic_qpn_list_load(l, t, &t->free, QPN_FREE, listed) &&
         rnic_qpn_list_load(l, t, &t->timewait, QPN_TIMEWAIT, listed);
    /* every free or timewait number is on its list, or it would be lost */
    for (uint32_t qpn = 1; ok && qpn < t->max; qpn++) {
        ok = listed[qpn] || t->e[qpn].state == QPN_LIVE;
    }
    free(listed);
    return ok && !l->failed ? 0 : -EINVAL;
}

int rnic_qpn_attach(struct rnic_qpn_table *t, uint32_t qpn, void *qp)
{
    if (qpn == 0 || qpn >= t->max || t->e[qpn].state != QPN_LIVE ||
        t->e[qpn].qp) {
        return -EINVAL;
    }
    t->e[qpn].qp = qp;
    return 0;
}
