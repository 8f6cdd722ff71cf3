/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic's own verbs for kernel consumers of an rnic ib_device (the same as
 * librnic's infiniband/rnicdv.h gives processes; rnic_ib_dv.c, and
 * rnic_ib_qp.c for the linked receive).  A
 * consumer checks the device is rnic's (ib_device's driver_id is
 * RDMA_DRIVER_UNKNOWN, its name rnicN) before calling them.
 */
#ifndef RNIC_IB_DV_H
#define RNIC_IB_DV_H

#include <rdma/ib_verbs.h>
#include "../rnic-ib-uapi.h"

/* The RTR byte (rnic-abi.h RNIC_RTR_GIVEN | types; 0: the device's). */
int rnic_ib_qp_set_rtr(struct ib_qp *qp, u32 rtr);
int rnic_ib_qp_query_conn(struct ib_qp *qp, struct rnic_ib_conn *out);
int rnic_ib_post_recv_linked(struct ib_qp *qp, const struct ib_recv_wr *wr,
			     u32 stag, const struct ib_recv_wr **bad);

#endif /* RNIC_IB_DV_H */
