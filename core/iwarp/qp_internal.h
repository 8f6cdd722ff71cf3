/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What qp.c and qp_save.c share about queues; nothing else includes it. */
#ifndef RNIC_QP_INTERNAL_H
#define RNIC_QP_INTERNAL_H

#include <stdlib.h>
#include "qp.h"

struct rnic_srq {
    uint32_t srqn;
    struct rnic_recv_ring ring;
    uint32_t max_sge;
    uint32_t refs;
};

/*
 * The shadow slots of a queue are allocated by its first post, not when
 * the queue is made: an idle QP (a device may hold 10,000) then holds only
 * its fixed part on the host, whatever the depth of its rings.
 */
#define RNIC_SHADOW(slots, n) \
    ((slots) ? (slots) : ((slots) = calloc((n), sizeof(*(slots)))))

#endif /* RNIC_QP_INTERNAL_H */
