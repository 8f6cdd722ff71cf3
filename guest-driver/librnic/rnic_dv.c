// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * rnicdv.h: rnic's own verbs.  The STag policy rides in reg_mr's driver
 * data, a linked receive is a receive WQE with its linked_stag set, and
 * the RTR type and the connection's details are ioctl methods of the
 * driver's own namespace on the QP object (rnic-ib-uapi.h).
 */
#include <config.h>
#include <errno.h>
#include <string.h>
#include <infiniband/cmd_ioctl.h>
#include "librnic.h"
#include "rnicdv.h"

_Static_assert(RNICDV_RTR_SEND == RNIC_RTR_SEND &&
	       RNICDV_RTR_WRITE == RNIC_RTR_WRITE &&
	       RNICDV_RTR_READ == RNIC_RTR_READ &&
	       RNICDV_RTR_DEVICE == RNIC_RTR_GIVEN, "rtr");
_Static_assert(RNICDV_CONN_LIVE == RNIC_IB_CONN_LIVE &&
	       RNICDV_CONN_CRC == RNIC_IB_CONN_CRC &&
	       RNICDV_CONN_MARKERS_TX == RNIC_IB_CONN_MARKERS_TX &&
	       RNICDV_CONN_MARKERS_RX == RNIC_IB_CONN_MARKERS_RX &&
	       RNICDV_CONN_TERM_RX == RNIC_IB_CONN_TERM_RX &&
	       RNICDV_CONN_TERM_TX == RNIC_IB_CONN_TERM_TX, "conn flags");
_Static_assert(RNICDV_MR_ONE_SHOT == RNIC_IB_MR_ONE_SHOT &&
	       RNICDV_MR_REMOTE_INV == RNIC_IB_MR_REMOTE_INV, "mr flags");
_Static_assert(RNICDV_PDATA_MAX == sizeof(((struct rnic_ib_conn *)0)->pdata),
	       "pdata");

bool rnicdv_is_supported(struct ibv_device *device)
{
	return rnic_is_ours(device);
}

struct ibv_mr *rnicdv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			     int access, uint32_t flags)
{
	if (!rnic_is_ours(pd->context->device) ||
	    flags & ~(RNICDV_MR_ONE_SHOT | RNICDV_MR_REMOTE_INV)) {
		errno = rnic_is_ours(pd->context->device) ? EINVAL :
							    EOPNOTSUPP;
		return NULL;
	}
	return rnic_reg_mr_flags(pd, addr, length, (uintptr_t)addr, access,
				 flags);
}

int rnicdv_post_recv_linked(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			    uint32_t stag, struct ibv_recv_wr **bad_wr)
{
	*bad_wr = wr;
	if (!rnic_is_ours(qp->context->device))
		return EOPNOTSUPP;
	if (wr->next || !stag)
		return EINVAL;
	return rnic_post_recv_link(qp, wr, bad_wr, stag);
}

int rnicdv_modify_qp_rtr(struct ibv_qp *qp, uint32_t rtr)
{
	DECLARE_COMMAND_BUFFER(cmd, UVERBS_OBJECT_QP,
			       RNIC_IB_METHOD_QP_SET_RTR, 2);

	if (!rnic_is_ours(qp->context->device))
		return EOPNOTSUPP;
	if (rtr & ~(RNICDV_RTR_SEND | RNICDV_RTR_WRITE | RNICDV_RTR_READ |
		    RNICDV_RTR_DEVICE))
		return EINVAL;
	/* The device's byte: RNIC_RTR_GIVEN with types, or 0 for its own. */
	rtr = rtr & RNICDV_RTR_DEVICE ? 0 : RNIC_RTR_GIVEN | rtr;
	fill_attr_in_obj(cmd, RNIC_IB_ATTR_SET_RTR_QP, qp->handle);
	fill_attr_in_uint32(cmd, RNIC_IB_ATTR_SET_RTR_VALUE, rtr);
	return execute_ioctl(qp->context, cmd);
}

int rnicdv_query_conn(struct ibv_qp *qp, struct rnicdv_conn *conn)
{
	DECLARE_COMMAND_BUFFER(cmd, UVERBS_OBJECT_QP,
			       RNIC_IB_METHOD_QP_QUERY_CONN, 2);
	struct rnic_ib_conn c;
	int err;

	if (!rnic_is_ours(qp->context->device))
		return EOPNOTSUPP;
	fill_attr_in_obj(cmd, RNIC_IB_ATTR_QUERY_CONN_QP, qp->handle);
	fill_attr_out_ptr(cmd, RNIC_IB_ATTR_QUERY_CONN_RESP, &c);
	err = execute_ioctl(qp->context, cmd);
	if (err)
		return err;
	memset(conn, 0, sizeof(*conn));
	conn->flags = c.flags;
	conn->mpa_rev = c.mpa_rev;
	conn->rtr = c.rtr;
	conn->peer_rtr = c.peer_rtr & RNIC_RTR_TYPES;
	conn->peer_p2p = c.peer_rtr & RNIC_RTR_P2P;
	conn->ird = c.ird;
	conn->ord = c.ord;
	conn->pdata_len = c.pdata_len;
	conn->term_rx = (struct rnicdv_term) { c.term_rx.layer,
					       c.term_rx.etype,
					       c.term_rx.ecode };
	conn->term_tx = (struct rnicdv_term) { c.term_tx.layer,
					       c.term_tx.etype,
					       c.term_tx.ecode };
	memcpy(conn->pdata, c.pdata, c.pdata_len);
	return 0;
}
