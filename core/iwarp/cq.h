/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Completion queues: a fixed-depth ring of struct rnic_cqe with verbs
 * arm/notify semantics.
 *
 * Overflow is sticky: the CQE that did not fit is lost, so the CQ can no
 * longer be trusted and refuses every later push.  The device reports this
 * to the guest as a CQ error async event.
 */
#ifndef RNIC_CQ_H
#define RNIC_CQ_H

#include <stdbool.h>
#include <stdint.h>
#include "wr.h"

#define RNIC_CQ_MAX_DEPTH (1u << 16)

struct rnic_cq;

/*
 * Called from rnic_cq_push() when an armed CQ receives a CQE that matches
 * its arming; the CQ is disarmed first, so this fires once per arm.
 */
typedef void rnic_cq_notify_fn(void *opaque, struct rnic_cq *cq);

enum rnic_cq_arm {
    RNIC_CQ_ARM_NEXT,           /* any next CQE */
    RNIC_CQ_ARM_SOLICITED,      /* next solicited or unsuccessful CQE */
};

/* NULL if @depth is 0 or above RNIC_CQ_MAX_DEPTH, or allocation failed. */
struct rnic_cq *rnic_cq_new(uint32_t depth, rnic_cq_notify_fn *notify,
                            void *opaque);

/*
 * @changed is called after every rnic_cq_push() (a CQE added, or the CQ
 * overflowed), so that its owner learns which CQs have news without
 * scanning them all.  NULL: nobody listens.
 */
void rnic_cq_set_changed(struct rnic_cq *cq, rnic_cq_notify_fn *changed,
                         void *opaque);

/* -EBUSY (and nothing freed) while a QP still references the CQ. */
int rnic_cq_destroy(struct rnic_cq *cq);

/* QPs hold a reference for as long as they complete into the CQ. */
void rnic_cq_ref(struct rnic_cq *cq);
void rnic_cq_unref(struct rnic_cq *cq);
uint32_t rnic_cq_refcount(const struct rnic_cq *cq);

/*
 * Appends @cqe.  -ENOSPC if the ring was full (the CQ becomes overflowed),
 * -EIO if it had already overflowed; the CQE is dropped in both cases.
 */
int rnic_cq_push(struct rnic_cq *cq, const struct rnic_cqe *cqe);

/* Moves up to @max oldest CQEs to @out; returns how many. */
uint32_t rnic_cq_poll(struct rnic_cq *cq, struct rnic_cqe *out, uint32_t max);

/*
 * Requests one notification.  ARM_NEXT wins over ARM_SOLICITED when both
 * are requested before a CQE arrives, as in verbs.
 */
void rnic_cq_arm(struct rnic_cq *cq, enum rnic_cq_arm how);
/*
 * The same, as if it had come before the CQEs @cq still holds (made, not
 * yet polled): true when one of them is what it asks for, which uses the
 * arm up (the caller notifies), false when the CQ stays armed.
 */
bool rnic_cq_arm_held(struct rnic_cq *cq, enum rnic_cq_arm how);
/*
 * Whether @cqe is what an arm of @how waits for (an unsuccessful one
 * counts as solicited, so that an application asleep on solicited events
 * still learns of errors).
 */
bool rnic_cq_arm_wants(enum rnic_cq_arm how, const struct rnic_cqe *cqe);

uint32_t rnic_cq_depth(const struct rnic_cq *cq);
uint32_t rnic_cq_count(const struct rnic_cq *cq);
bool rnic_cq_overflowed(const struct rnic_cq *cq);
/* "no", "next" or "solicited": what the next CQE would signal. */
const char *rnic_cq_armed_str(const struct rnic_cq *cq);

#endif /* RNIC_CQ_H */
