// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What rnic can do beyond the common verbs, for librnic's rnicdv.h (uverbs
 * ioctl methods of the driver's namespace, rnic-ib-uapi.h) and for kernel
 * consumers (the exported functions): the RTR type a QP's connection
 * offers or takes, what a connection agreed and the Terminates a QP saw,
 * and receives that invalidate an STag when they are used.
 */
#define UVERBS_MODULE_NAME rnic_ib
#include <rdma/uverbs_named_ioctl.h>
#include <rdma/uverbs_std_types.h>
#include "rnic_ib.h"

/*
 * The rtr byte of the QP's next CONNECT or ACCEPT: RNIC_RTR_GIVEN and the
 * types to offer or take (none: no peer-to-peer mode), or 0 for the
 * device's properties (mpa-p2p, mpa-rtr).
 */
int rnic_ib_qp_set_rtr(struct ib_qp *ibqp, u32 rtr)
{
	struct rnic_ib_dev *dev = to_rdev(ibqp->device);

	if (rtr & ~(RNIC_RTR_GIVEN | RNIC_RTR_TYPES) ||
	    (rtr && !(rtr & RNIC_RTR_GIVEN)))
		return -EINVAL;
	mutex_lock(&dev->cm_lock);
	to_rnic_ib_qp(ibqp)->rtr = rtr;
	mutex_unlock(&dev->cm_lock);
	return 0;
}
EXPORT_SYMBOL_GPL(rnic_ib_qp_set_rtr);

/* A live connection's MPA mode, RTR type and the peer's parameters. */
static int rnic_ib_conn_live(struct rnic_ib_dev *dev, u32 conn_id,
			     struct rnic_ib_conn *out)
{
	struct rnic_cmd_query_conn *r;
	struct rnic_conn_info *info;
	struct rnic_cmd cmd;
	dma_addr_t dma;

	info = rnic_ib_query_conn(dev, conn_id, 0, &dma, &cmd);
	if (!info)
		return -ENOTCONN;
	r = (void *)cmd.u.raw;
	out->flags |= RNIC_IB_CONN_LIVE |
		(info->mpa_crc ? RNIC_IB_CONN_CRC : 0) |
		(r->flags & RNIC_CONN_MARKERS_TX ? RNIC_IB_CONN_MARKERS_TX : 0) |
		(r->flags & RNIC_CONN_MARKERS_RX ? RNIC_IB_CONN_MARKERS_RX : 0);
	out->mpa_rev = info->mpa_rev;
	out->rtr = r->rtr;
	out->peer_rtr = r->peer_rtr;
	out->ird = le16_to_cpu(info->ird);
	out->ord = le16_to_cpu(info->ord);
	out->pdata_len = min_t(u16, le16_to_cpu(info->pdata_len),
			       sizeof(out->pdata));
	memcpy(out->pdata, info->pdata, out->pdata_len);
	rnic_ib_info_put(dev, info, dma);
	return 0;
}

/*
 * What the QP's connection agreed, while it has one (RNIC_IB_CONN_LIVE),
 * and the last Terminates it received and sent, which stay after.
 */
int rnic_ib_qp_query_conn(struct ib_qp *ibqp, struct rnic_ib_conn *out)
{
	struct rnic_ib_dev *dev = to_rdev(ibqp->device);
	struct rnic_ib_qp *qp = to_rnic_ib_qp(ibqp);
	int err = 0;

	memset(out, 0, sizeof(*out));
	mutex_lock(&dev->cm_lock);
	if (qp->cep && qp->cep->state == RNIC_CEP_ESTABLISHED)
		err = rnic_ib_conn_live(dev, qp->cep->conn_id, out);
	out->flags |= qp->term_flags;
	out->term_rx = qp->term_rx;
	out->term_tx = qp->term_tx;
	mutex_unlock(&dev->cm_lock);
	/* The connection ended while asking: what stays is the answer. */
	return err == -ENOTCONN ? 0 : err;
}
EXPORT_SYMBOL_GPL(rnic_ib_qp_query_conn);

/* TERM_RECEIVED or TERM_SENT of a QP (arg0: layer << 8 | etype). */
void rnic_ib_qp_note_term(struct rnic_ib_qp *qp, bool received, u32 arg0,
			  u32 arg1)
{
	struct rnic_ib_term t = {
		.layer = (arg0 >> 8) & 0xf,
		.etype = arg0 & 0xf,
		.ecode = arg1 & 0xff,
	};

	if (received) {
		qp->term_rx = t;
		qp->term_flags |= RNIC_IB_CONN_TERM_RX;
	} else {
		qp->term_tx = t;
		qp->term_flags |= RNIC_IB_CONN_TERM_TX;
	}
}

static int UVERBS_HANDLER(RNIC_IB_METHOD_QP_SET_RTR)(
	struct uverbs_attr_bundle *attrs)
{
	struct ib_qp *qp = uverbs_attr_get_obj(attrs, RNIC_IB_ATTR_SET_RTR_QP);
	u32 rtr;
	int err;

	if (IS_ERR(qp))
		return PTR_ERR(qp);
	err = uverbs_copy_from(&rtr, attrs, RNIC_IB_ATTR_SET_RTR_VALUE);
	return err ?: rnic_ib_qp_set_rtr(qp, rtr);
}

static int UVERBS_HANDLER(RNIC_IB_METHOD_QP_QUERY_CONN)(
	struct uverbs_attr_bundle *attrs)
{
	struct ib_qp *qp = uverbs_attr_get_obj(attrs,
					       RNIC_IB_ATTR_QUERY_CONN_QP);
	struct rnic_ib_conn *c;
	int err;

	if (IS_ERR(qp))
		return PTR_ERR(qp);
	c = kmalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	err = rnic_ib_qp_query_conn(qp, c);
	if (!err)
		err = uverbs_copy_to(attrs, RNIC_IB_ATTR_QUERY_CONN_RESP, c,
				     sizeof(*c));
	kfree(c);
	return err;
}

DECLARE_UVERBS_NAMED_METHOD(
	RNIC_IB_METHOD_QP_SET_RTR,
	UVERBS_ATTR_IDR(RNIC_IB_ATTR_SET_RTR_QP, UVERBS_OBJECT_QP,
			UVERBS_ACCESS_WRITE, UA_MANDATORY),
	UVERBS_ATTR_PTR_IN(RNIC_IB_ATTR_SET_RTR_VALUE, UVERBS_ATTR_TYPE(u32),
			   UA_MANDATORY));

DECLARE_UVERBS_NAMED_METHOD(
	RNIC_IB_METHOD_QP_QUERY_CONN,
	UVERBS_ATTR_IDR(RNIC_IB_ATTR_QUERY_CONN_QP, UVERBS_OBJECT_QP,
			UVERBS_ACCESS_READ, UA_MANDATORY),
	UVERBS_ATTR_PTR_OUT(RNIC_IB_ATTR_QUERY_CONN_RESP,
			    UVERBS_ATTR_STRUCT(struct rnic_ib_conn, pdata),
			    UA_MANDATORY));

ADD_UVERBS_METHODS(rnic_ib_qp_methods, UVERBS_OBJECT_QP,
		   &UVERBS_METHOD(RNIC_IB_METHOD_QP_SET_RTR),
		   &UVERBS_METHOD(RNIC_IB_METHOD_QP_QUERY_CONN));

const struct uapi_definition rnic_ib_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_QP, &rnic_ib_qp_methods),
	{},
};
