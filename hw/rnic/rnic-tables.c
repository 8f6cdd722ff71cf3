/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Handle lookups (a leaf: reads the device's tables and the core's QP
 * numbers, calls nothing of the device).  A guest-chosen number that
 * names no live object gives NULL; connection ids carry a generation, so
 * a stale one never finds a newer connection.
 */
#include "qemu/osdep.h"
#include "rnic.h"

RnicCq *rnic_dev_cq_get(RnicState *s, uint32_t cqn)
{
    return cqn && cqn <= s->params.limits.max_cq ? s->cqs[cqn - 1] : NULL;
}

RnicSrq *rnic_dev_srq_get(RnicState *s, uint32_t srqn)
{
    return srqn && srqn <= s->params.limits.max_srq ? s->srqs[srqn - 1] : NULL;
}

RnicQp *rnic_dev_qp_get(RnicState *s, uint32_t qpn)
{
    void *qp = NULL;

    if (rnic_qpn_lookup(s->qpns, qpn, &qp) != RNIC_QPN_LIVE) {
        return NULL;
    }
    return qp;
}

RnicConn *rnic_conn_get(RnicState *s, uint32_t id)
{
    return g_hash_table_lookup(s->conn_ids, GUINT_TO_POINTER(id));
}
