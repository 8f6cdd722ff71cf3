/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QP numbers, with timewait.
 *
 * Segments of a closed connection can still arrive after its QP is gone.
 * If the number were handed to a new QP at once, that late traffic would
 * be delivered to the new QP.  So a freed number sits in timewait for a
 * configurable interval, during which a lookup says so and the caller
 * drops the traffic; and numbers are handed out in rotation (the least
 * recently freed first, never LIFO), so reuse is late even after timewait.
 *
 * Numbers are 1 .. max-1; 0 is never valid.  Every operation is O(1)
 * amortised; memory is fixed at creation.
 */
#ifndef RNIC_QPN_H
#define RNIC_QPN_H

#include <stdint.h>

#define RNIC_QPN_TIMEWAIT_MS_DEFAULT 1000

struct rnic_qpn_table;

/* Monotonic milliseconds; injected so that tests control time. */
typedef uint64_t rnic_clock_ms_fn(void *opaque);

enum rnic_qpn_lookup {
    RNIC_QPN_FREE,              /* not allocated (or out of range) */
    RNIC_QPN_LIVE,              /* allocated; *qp is set */
    RNIC_QPN_TIMEWAIT,          /* freed recently: drop its traffic */
};

/* NULL if @max < 2, @clock is NULL or allocation failed. */
struct rnic_qpn_table *rnic_qpn_table_new(uint32_t max, uint32_t timewait_ms,
                                          rnic_clock_ms_fn *clock,
                                          void *opaque);
void rnic_qpn_table_free(struct rnic_qpn_table *t);

/*
 * Allocates a number for @qp.  -ENOSPC: every number is in use; -EAGAIN:
 * the only free numbers are still in timewait (try again later).
 */
int rnic_qpn_alloc(struct rnic_qpn_table *t, void *qp, uint32_t *qpn);

/* Starts timewait for @qpn; -EINVAL if it is not allocated. */
int rnic_qpn_free(struct rnic_qpn_table *t, uint32_t qpn);

/* Classifies @qpn; *qp is set (else NULL) only for RNIC_QPN_LIVE. */
enum rnic_qpn_lookup rnic_qpn_lookup(struct rnic_qpn_table *t, uint32_t qpn,
                                     void **qp);

const char *rnic_qpn_lookup_str(enum rnic_qpn_lookup result);

#endif /* RNIC_QPN_H */
