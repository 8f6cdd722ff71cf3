// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * iw_cm ops on the device's host-side connections.  The guest never opens
 * a TCP connection: LISTEN, CONNECT, ACCEPT, REJECT and DISCONNECT ask the
 * device to do it, and the QP adopts the device's connection, already
 * MPA-negotiated, when CONNECT or ACCEPT takes it to RTS: a QP has no
 * state of its own for connection setup.  Each device connection event
 * becomes exactly one iw_cm event, in the order iw_cm requires:
 *
 *   CONN_REQUEST                 -> CONNECT_REQUEST (on the listening id)
 *   CONN_ESTABLISHED  (active)   -> CONNECT_REPLY 0
 *   CONN_ESTABLISHED  (passive)  -> ESTABLISHED
 *   CONN_REJECTED                -> CONNECT_REPLY -ECONNREFUSED, with
 *                                   the Reject's private data
 *   CONN_ERROR        (active)   -> CONNECT_REPLY -errno
 *   CONN_CLOSED       (up)       -> CLOSE
 *
 * A connection (cep) holds a reference on its iw_cm_id and its QP from
 * CONNECT or ACCEPT to its final event (CONNECT_REPLY with an error, or
 * CLOSE); a QP destroyed before that gets the final event then.  Events
 * run in order on one work queue under cm_lock, which every op takes too.
 *
 * Addresses are the guest's: the device maps them to host endpoints
 * (its addr-map property, docs/spec.md "Addresses").
 */
#include <linux/inetdevice.h>
#include <linux/in6.h>
#include "rnic_ib.h"

static void rnic_ib_sa_from(struct sockaddr_storage *ss,
			    const struct rnic_sockaddr *a)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == RNIC_AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(le16_to_cpu(a->port));
		memcpy(&in->sin_addr, a->addr, 4);
	} else if (a->family == RNIC_AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(le16_to_cpu(a->port));
		memcpy(&in6->sin6_addr, a->addr, 16);
	}
}

static int rnic_ib_sa_to(struct rnic_sockaddr *a,
			 const struct sockaddr_storage *ss)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		a->family = RNIC_AF_INET;
		a->port = cpu_to_le16(ntohs(in->sin_port));
		memcpy(a->addr, &in->sin_addr, 4);
		return 0;
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		a->family = RNIC_AF_INET6;
		a->port = cpu_to_le16(ntohs(in6->sin6_port));
		memcpy(a->addr, &in6->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

static void rnic_ib_deliver(struct rnic_ib_cep *cep, struct iw_cm_id *cm_id,
			    enum iw_cm_event_type type, int status,
			    const void *pdata, u16 len)
{
	struct iw_cm_event ev = {
		.event = type,
		.status = status,
		.local_addr = cep->local,
		.remote_addr = cep->remote,
		.private_data = len ? (void *)pdata : NULL,
		/* iw_cm carries at most 255 bytes: rdma_cm never sends more. */
		.private_data_len = min_t(u16, len, U8_MAX),
		.ird = cep->ird,
		.ord = cep->ord,
	};

	if (type == IW_CM_EVENT_CONNECT_REQUEST)
		ev.provider_data = cep;
	cm_id->event_handler(cm_id, &ev);
}

/*
 * The cep's last event, with the peer's private data when @info has it: it
 * lets go of its QP and iw_cm_id and is freed.
 */
static void rnic_ib_cep_last(struct rnic_ib_dev *dev, struct rnic_ib_cep *cep,
			     enum iw_cm_event_type type, int status,
			     const struct rnic_conn_info *info)
{
	if (cep->cm_id) {
		rnic_ib_deliver(cep, cep->cm_id, type, status,
				info ? info->pdata : NULL,
				info ? le16_to_cpu(info->pdata_len) : 0);
		cep->cm_id->rem_ref(cep->cm_id);
	}
	if (cep->qp) {
		cep->qp->cep = NULL;
		rnic_ib_qp_put(&cep->qp->ibqp);
	}
	xa_erase(&dev->ceps, cep->conn_id);
	kfree(cep);
}

static void rnic_ib_cep_final(struct rnic_ib_dev *dev, struct rnic_ib_cep *cep,
			      enum iw_cm_event_type type, int status)
{
	rnic_ib_cep_last(dev, cep, type, status, NULL);
}

/* Private data into coherent memory for CONNECT, ACCEPT and REJECT. */
struct rnic_ib_pdata {
	void *va;
	dma_addr_t dma;
	u16 len;
};

static int rnic_ib_pdata_get(struct rnic_ib_dev *dev, struct rnic_ib_pdata *pd,
			     const void *data, u16 len)
{
	pd->len = len;
	pd->va = NULL;
	pd->dma = 0;
	if (!len)
		return 0;
	if (len > le32_to_cpu(dev->rdev->attr.max_pdata))
		return -EINVAL;
	pd->va = dma_alloc_coherent(&dev->rdev->pdev->dev, len, &pd->dma,
				    GFP_KERNEL);
	if (!pd->va)
		return -ENOMEM;
	memcpy(pd->va, data, len);
	return 0;
}

static void rnic_ib_pdata_put(struct rnic_ib_dev *dev, struct rnic_ib_pdata *pd)
{
	if (pd->va)
		dma_free_coherent(&dev->rdev->pdev->dev, pd->len, pd->va,
				  pd->dma);
}

/* CONNECT, ACCEPT or REJECT with its parameters; returns the conn id. */
static int rnic_ib_conn_cmd(struct rnic_ib_dev *dev, u8 opcode,
			    struct rnic_ib_qp *qp, u32 conn_id,
			    const struct rnic_sockaddr *peer, u32 ird, u32 ord,
			    const void *pdata, u16 len, u32 *out_conn)
{
	const struct rnic_device_attr *a = &dev->rdev->attr;
	union {
		struct rnic_cmd_connect connect;
		struct rnic_cmd_accept accept;	/* ACCEPT, REJECT */
	} p = { };
	struct rnic_conn_param *param;
	struct rnic_ib_pdata pd;
	struct rnic_cmd cmd;
	int err;

	err = rnic_ib_pdata_get(dev, &pd, pdata, len);
	if (err)
		return err;
	if (opcode == RNIC_CMD_CONNECT) {
		p.connect.qpn = cpu_to_le32(qp->qpn);
		p.connect.peer = *peer;
		param = &p.connect.param;
	} else {
		p.accept.conn_id = cpu_to_le32(conn_id);
		p.accept.qpn = cpu_to_le32(qp ? qp->qpn : 0);
		param = &p.accept.param;
	}
	param->rtr = qp ? qp->rtr : 0;
	param->ird = cpu_to_le16(min_t(u32, ird, le32_to_cpu(a->max_ird)));
	param->ord = cpu_to_le16(min_t(u32, ord, le32_to_cpu(a->max_ord)));
	param->pdata_len = cpu_to_le16(len);
	param->pdata_addr = cpu_to_le64(pd.dma);
	err = rnic_ib_cmd(dev, opcode, &p, sizeof(p), &cmd);
	rnic_ib_pdata_put(dev, &pd);
	if (!err && out_conn)
		*out_conn = le32_to_cpu(((struct rnic_cmd_connect *)
					 cmd.u.raw)->conn_id);
	return err;
}

/* The QP named by iw_cm, not yet in a connection. */
static struct rnic_ib_qp *rnic_ib_free_qp(struct rnic_ib_dev *dev, u32 qpn)
{
	struct rnic_ib_qp *qp = xa_load(&dev->qps, qpn);

	return qp && !qp->cep ? qp : NULL;
}

static void rnic_ib_cep_bind(struct rnic_ib_cep *cep, struct iw_cm_id *cm_id,
			     struct rnic_ib_qp *qp)
{
	cm_id->add_ref(cm_id);
	cep->cm_id = cm_id;
	rnic_ib_qp_get(&qp->ibqp);
	cep->qp = qp;
	qp->cep = cep;
}

static void rnic_ib_cep_unbind(struct rnic_ib_cep *cep)
{
	cep->cm_id->rem_ref(cep->cm_id);
	cep->cm_id = NULL;
	cep->qp->cep = NULL;
	rnic_ib_qp_put(&cep->qp->ibqp);
	cep->qp = NULL;
}

int rnic_ib_connect(struct iw_cm_id *cm_id, struct iw_cm_conn_param *param)
{
	struct rnic_ib_dev *dev = to_rdev(cm_id->device);
	struct rnic_sockaddr peer;
	struct rnic_ib_cep *cep;
	struct rnic_ib_qp *qp;
	int err;

	err = rnic_ib_sa_to(&peer, &cm_id->m_remote_addr);
	if (err)
		return err;
	cep = kzalloc(sizeof(*cep), GFP_KERNEL);
	if (!cep)
		return -ENOMEM;
	cep->local = cm_id->m_local_addr;
	cep->remote = cm_id->m_remote_addr;
	cep->state = RNIC_CEP_CONNECTING;
	mutex_lock(&dev->cm_lock);
	qp = rnic_ib_free_qp(dev, param->qpn);
	if (!qp) {
		err = -EINVAL;
		goto out;
	}
	rnic_ib_cep_bind(cep, cm_id, qp);
	err = rnic_ib_conn_cmd(dev, RNIC_CMD_CONNECT, qp, 0, &peer,
			       param->ird, param->ord, param->private_data,
			       param->private_data_len, &cep->conn_id);
	if (!err)
		err = xa_err(xa_store(&dev->ceps, cep->conn_id, cep,
				      GFP_KERNEL));
	if (err) {
		/* iw_cm expects no event after a failed connect. */
		rnic_ib_cep_unbind(cep);
		goto out;
	}
	cep = NULL;
out:
	mutex_unlock(&dev->cm_lock);
	kfree(cep);
	return err;
}

int rnic_ib_accept(struct iw_cm_id *cm_id, struct iw_cm_conn_param *param)
{
	struct rnic_ib_dev *dev = to_rdev(cm_id->device);
	struct rnic_ib_cep *cep = cm_id->provider_data;
	struct rnic_ib_qp *qp;
	int err;

	mutex_lock(&dev->cm_lock);
	qp = rnic_ib_free_qp(dev, param->qpn);
	if (!qp || cep->state != RNIC_CEP_REQUEST) {
		err = -EINVAL;
		goto out;
	}
	rnic_ib_cep_bind(cep, cm_id, qp);
	cep->state = RNIC_CEP_ACCEPTING;
	err = rnic_ib_conn_cmd(dev, RNIC_CMD_ACCEPT, qp, cep->conn_id,
			       NULL, param->ird, param->ord,
			       param->private_data, param->private_data_len,
			       NULL);
	if (err) {
		/* No event follows a failed accept; the peer is refused. */
		rnic_ib_cep_unbind(cep);
		rnic_ib_conn_cmd(dev, RNIC_CMD_REJECT, NULL, cep->conn_id, NULL,
				 0, 0, NULL, 0, NULL);
		xa_erase(&dev->ceps, cep->conn_id);
		kfree(cep);
	}
out:
	mutex_unlock(&dev->cm_lock);
	return err;
}

int rnic_ib_reject(struct iw_cm_id *cm_id, const void *pdata, u8 len)
{
	struct rnic_ib_dev *dev = to_rdev(cm_id->device);
	struct rnic_ib_cep *cep = cm_id->provider_data;
	int err;

	mutex_lock(&dev->cm_lock);
	err = rnic_ib_conn_cmd(dev, RNIC_CMD_REJECT, NULL, cep->conn_id, NULL,
			       0, 0, pdata, len, NULL);
	xa_erase(&dev->ceps, cep->conn_id);
	kfree(cep);
	mutex_unlock(&dev->cm_lock);
	/* The connection is gone either way. */
	return err == -ENODEV || err == -ENOENT ? 0 : err;
}

/* SQD (graceful) or ERR (abortive) of a QP: DISCONNECT, if connected. */
int rnic_ib_cm_disconnect(struct rnic_ib_dev *dev, struct rnic_ib_qp *qp,
			  bool abort)
{
	struct rnic_cmd_disconnect p = {
		.qpn = cpu_to_le32(qp->qpn),
		.flags = cpu_to_le32(abort ? RNIC_DISCONNECT_ABORT : 0),
	};
	int err = -ENOTCONN;

	mutex_lock(&dev->cm_lock);
	if (qp->cep && qp->cep->state == RNIC_CEP_ESTABLISHED) {
		err = rnic_ib_cmd(dev, RNIC_CMD_DISCONNECT, &p, sizeof(p),
				  NULL);
		/* Already closing (the peer was first): CLOSE will come. */
		if (err == -EINVAL || err == -ENODEV)
			err = 0;
	}
	mutex_unlock(&dev->cm_lock);
	return err;
}

/* destroy_qp: a connection still on the QP ends now, for iw_cm too. */
void rnic_ib_cm_qp_gone(struct rnic_ib_dev *dev, struct rnic_ib_qp *qp)
{
	struct rnic_ib_cep *cep;

	mutex_lock(&dev->cm_lock);
	cep = qp->cep;
	if (cep && cep->state == RNIC_CEP_CONNECTING)
		rnic_ib_cep_final(dev, cep, IW_CM_EVENT_CONNECT_REPLY,
				  -ECONNRESET);
	else if (cep)
		rnic_ib_cep_final(dev, cep, cep->state == RNIC_CEP_ACCEPTING ?
				  IW_CM_EVENT_ESTABLISHED : IW_CM_EVENT_CLOSE,
				  0);
	xa_erase_irq(&dev->qps, qp->qpn);
	mutex_unlock(&dev->cm_lock);
}

/* ---- listening ---- */

static bool rnic_ib_wildcard(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return ss->ss_family == AF_INET6 &&
	       ipv6_addr_any(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

/* Whether another listen already holds this IPv4 address and port. */
static bool rnic_ib_listened(struct rnic_ib_dev *dev, __be32 addr,
			     __be16 port)
{
	const struct sockaddr_in *in;
	struct rnic_ib_lep *lep;
	int i;

	list_for_each_entry(lep, &dev->leps, node) {
		for (i = 0; i < lep->n; i++) {
			in = (const struct sockaddr_in *)&lep->local[i];
			if (in->sin_family == AF_INET &&
			    in->sin_addr.s_addr == addr && in->sin_port == port)
				return true;
		}
	}
	return false;
}

/*
 * The addresses a listen covers: the one given, or for a wildcard every
 * IPv4 address of the port's netdev (as siw confines a wildcard listen to
 * its netdev).  An IPv6 wildcard takes them too, as a dual-stack socket
 * would, but not those another listen holds on its port: rdma_cm lets
 * nfsd listen on both wildcards of one port ("rdma" and "rdma6").  None
 * is fine: rdma_cm listens on every device.  Under cm_lock.
 */
static void rnic_ib_listen_addrs(struct rnic_ib_dev *dev,
				 struct rnic_ib_lep *lep,
				 const struct sockaddr_storage *ss)
{
	__be16 port = ((const struct sockaddr_in *)ss)->sin_port;
	bool v6 = ss->ss_family == AF_INET6;
	const struct in_ifaddr *ifa;
	struct in_device *in_dev;
	struct net_device *nd;
	struct sockaddr_in *in;

	if (!rnic_ib_wildcard(ss)) {
		lep->local[lep->n++] = *ss;
		return;
	}
	rcu_read_lock();
	nd = rcu_dereference(dev->netdev);
	in_dev = nd ? __in_dev_get_rcu(nd) : NULL;
	if (in_dev) {
		in_dev_for_each_ifa_rcu(ifa, in_dev) {
			if (lep->n == RNIC_IB_LEP_MAX)
				break;
			if (v6 && rnic_ib_listened(dev, ifa->ifa_local, port))
				continue;
			in = (struct sockaddr_in *)&lep->local[lep->n++];
			memset(in, 0, sizeof(lep->local[0]));
			in->sin_family = AF_INET;
			in->sin_addr.s_addr = ifa->ifa_local;
			in->sin_port = port;	/* same offset in sockaddr_in6 */
		}
	}
	rcu_read_unlock();
}

static void rnic_ib_unlisten(struct rnic_ib_dev *dev, struct rnic_ib_lep *lep,
			     int n)
{
	while (n-- > 0) {
		rnic_ib_cmd_handle(dev, RNIC_CMD_UNLISTEN, lep->ids[n]);
		xa_erase(&dev->listeners, lep->ids[n]);
	}
}

int rnic_ib_create_listen(struct iw_cm_id *cm_id, int backlog)
{
	struct rnic_ib_dev *dev = to_rdev(cm_id->device);
	struct rnic_cmd_listen p;
	struct rnic_ib_lep *lep;
	struct rnic_cmd cmd;
	int i, err = 0;

	lep = kzalloc(sizeof(*lep), GFP_KERNEL);
	if (!lep)
		return -ENOMEM;
	lep->cm_id = cm_id;
	mutex_lock(&dev->cm_lock);
	rnic_ib_listen_addrs(dev, lep, &cm_id->m_local_addr);
	for (i = 0; i < lep->n && !err; i++) {
		memset(&p, 0, sizeof(p));
		err = rnic_ib_sa_to(&p.local, &lep->local[i]);
		p.backlog = cpu_to_le32(backlog);
		if (!err)
			err = rnic_ib_cmd(dev, RNIC_CMD_LISTEN, &p, sizeof(p),
					  &cmd);
		if (err)
			break;
		lep->ids[i] = le32_to_cpu(((struct rnic_cmd_listen *)
					   cmd.u.raw)->listener_id);
		err = xa_err(xa_store(&dev->listeners, lep->ids[i], lep,
				      GFP_KERNEL));
		if (err)
			rnic_ib_cmd_handle(dev, RNIC_CMD_UNLISTEN, lep->ids[i]);
	}
	if (err) {
		rnic_ib_unlisten(dev, lep, i);
		mutex_unlock(&dev->cm_lock);
		kfree(lep);
		return err;
	}
	list_add_tail(&lep->node, &dev->leps);
	cm_id->add_ref(cm_id);
	cm_id->provider_data = lep;
	mutex_unlock(&dev->cm_lock);
	return 0;
}

int rnic_ib_destroy_listen(struct iw_cm_id *cm_id)
{
	struct rnic_ib_dev *dev = to_rdev(cm_id->device);
	struct rnic_ib_lep *lep = cm_id->provider_data;

	mutex_lock(&dev->cm_lock);
	rnic_ib_unlisten(dev, lep, lep->n);
	list_del(&lep->node);
	mutex_unlock(&dev->cm_lock);
	cm_id->provider_data = NULL;
	cm_id->rem_ref(cm_id);
	kfree(lep);
	return 0;
}

/* ---- device events ---- */

/*
 * QUERY_CONN: the peer's address, its IRD/ORD and private data of
 * connection @conn_id; @qpn (0: none) also finds one that ended in a
 * Reject, whose private data stays until the QP's next CONNECT.  @out
 * (or NULL): the command as the device completed it (rtr, flags).
 */
struct rnic_conn_info *rnic_ib_query_conn(struct rnic_ib_dev *dev,
					  u32 conn_id, u32 qpn,
					  dma_addr_t *dma,
					  struct rnic_cmd *out)
{
	struct rnic_cmd_query_conn p = {
		.conn_id = cpu_to_le32(conn_id),
		.qpn = cpu_to_le32(qpn),
	};
	struct rnic_conn_info *info;

	info = dma_alloc_coherent(&dev->rdev->pdev->dev, RNIC_CONN_INFO_SIZE,
				  dma, GFP_KERNEL);
	if (!info)
		return NULL;
	p.info_addr = cpu_to_le64(*dma);
	if (rnic_ib_cmd(dev, RNIC_CMD_QUERY_CONN, &p, sizeof(p), out)) {
		dma_free_coherent(&dev->rdev->pdev->dev, RNIC_CONN_INFO_SIZE,
				  info, *dma);
		return NULL;
	}
	return info;
}

void rnic_ib_info_put(struct rnic_ib_dev *dev, struct rnic_conn_info *info,
		      dma_addr_t dma)
{
	dma_free_coherent(&dev->rdev->pdev->dev, RNIC_CONN_INFO_SIZE, info,
			  dma);
}

static void rnic_ib_conn_request(struct rnic_ib_dev *dev, u32 conn_id,
				 u32 listener)
{
	struct rnic_ib_lep *lep = xa_load(&dev->listeners, listener);
	struct rnic_conn_info *info;
	struct rnic_ib_cep *cep;
	dma_addr_t dma;
	int i;

	/*
	 * No listening iw_cm_id: a connection handed in by the host (the
	 * device's fd hand-in), which no iw_cm_id listens for, is refused.
	 */
	if (!lep)
		goto refuse;
	info = rnic_ib_query_conn(dev, conn_id, 0, &dma, NULL);
	if (!info)
		goto refuse;
	cep = kzalloc(sizeof(*cep), GFP_KERNEL);
	if (!cep || xa_err(xa_store(&dev->ceps, conn_id, cep, GFP_KERNEL))) {
		kfree(cep);
		rnic_ib_info_put(dev, info, dma);
		goto refuse;
	}
	cep->conn_id = conn_id;
	cep->state = RNIC_CEP_REQUEST;
	for (i = 0; i < lep->n; i++)
		if (lep->ids[i] == listener)
			cep->local = lep->local[i];
	rnic_ib_sa_from(&cep->remote, &info->peer);
	cep->ird = min_t(u16, le16_to_cpu(info->ird), U8_MAX);
	cep->ord = min_t(u16, le16_to_cpu(info->ord), U8_MAX);
	rnic_ib_deliver(cep, lep->cm_id, IW_CM_EVENT_CONNECT_REQUEST, 0,
			info->pdata, le16_to_cpu(info->pdata_len));
	rnic_ib_info_put(dev, info, dma);
	return;

refuse:
	rnic_ib_conn_cmd(dev, RNIC_CMD_REJECT, NULL, conn_id, NULL, 0, 0, NULL, 0,
			 NULL);
}

static void rnic_ib_conn_established(struct rnic_ib_dev *dev,
				     struct rnic_ib_cep *cep)
{
	struct rnic_conn_info *info;
	dma_addr_t dma;

	WRITE_ONCE(cep->qp->state, IB_QPS_RTS);
	if (cep->state == RNIC_CEP_ACCEPTING) {
		cep->state = RNIC_CEP_ESTABLISHED;
		rnic_ib_deliver(cep, cep->cm_id, IW_CM_EVENT_ESTABLISHED, 0,
				NULL, 0);
		return;
	}
	if (cep->state != RNIC_CEP_CONNECTING)
		return;
	cep->state = RNIC_CEP_ESTABLISHED;
	/* The responder's private data and IRD/ORD, from its MPA Reply. */
	info = rnic_ib_query_conn(dev, cep->conn_id, 0, &dma, NULL);
	if (info) {
		cep->ird = min_t(u16, le16_to_cpu(info->ird), U8_MAX);
		cep->ord = min_t(u16, le16_to_cpu(info->ord), U8_MAX);
	}
	rnic_ib_deliver(cep, cep->cm_id, IW_CM_EVENT_CONNECT_REPLY, 0,
			info ? info->pdata : NULL,
			info ? le16_to_cpu(info->pdata_len) : 0);
	if (info)
		rnic_ib_info_put(dev, info, dma);
}

static int rnic_ib_errno(u32 err)
{
	switch (err) {
	case ECONNREFUSED:
	case ETIMEDOUT:
	case ENETUNREACH:
	case EHOSTUNREACH:
		return -err;
	default:
		return -ECONNRESET;
	}
}

static void rnic_ib_conn_end(struct rnic_ib_dev *dev, struct rnic_ib_cep *cep,
			     int status)
{
	switch (cep->state) {
	case RNIC_CEP_CONNECTING:
		rnic_ib_cep_final(dev, cep, IW_CM_EVENT_CONNECT_REPLY, status);
		break;
	case RNIC_CEP_ESTABLISHED:
		/*
		 * After its own DISCONNECT the device leaves a QP without
		 * send work in IDLE, its receives still posted; iw_cm's
		 * users expect them flushed once the connection is closed.
		 */
		rnic_ib_qp_error(dev, cep->qp);
		WRITE_ONCE(cep->qp->state, IB_QPS_ERR);
		rnic_ib_cep_final(dev, cep, IW_CM_EVENT_CLOSE, 0);
		break;
	default:	/* a pending request: accept or reject will fail */
		break;
	}
}

/* The peer's Reject, with its private data for rdma_cm's REJECTED. */
static void rnic_ib_conn_rejected(struct rnic_ib_dev *dev,
				  struct rnic_ib_cep *cep, u32 qpn)
{
	dma_addr_t dma;
	struct rnic_conn_info *info = rnic_ib_query_conn(dev, cep->conn_id,
							 qpn, &dma, NULL);

	rnic_ib_cep_last(dev, cep, IW_CM_EVENT_CONNECT_REPLY, -ECONNREFUSED,
			 info);
	if (info)
		rnic_ib_info_put(dev, info, dma);
}

void rnic_ib_cm_event(struct rnic_ib_dev *dev, const struct rnic_event *ev)
{
	u32 id = le32_to_cpu(ev->id), arg0 = le32_to_cpu(ev->arg0);
	struct rnic_ib_cep *cep = NULL;
	struct rnic_ib_qp *qp;

	mutex_lock(&dev->cm_lock);
	qp = xa_load(&dev->qps, id);
	if (qp)
		cep = qp->cep;
	switch (ev->type) {
	case RNIC_EV_CONN_REQUEST:
		rnic_ib_conn_request(dev, id, arg0);
		break;
	case RNIC_EV_CONN_ESTABLISHED:
		if (cep)
			rnic_ib_conn_established(dev, cep);
		break;
	case RNIC_EV_CONN_REJECTED:
		if (cep && cep->state == RNIC_CEP_CONNECTING)
			rnic_ib_conn_rejected(dev, cep, id);
		break;
	case RNIC_EV_CONN_ERROR:
		if (!cep)
			cep = xa_load(&dev->ceps, id);
		if (cep)
			rnic_ib_conn_end(dev, cep, rnic_ib_errno(arg0));
		break;
	case RNIC_EV_CONN_CLOSED:
		if (cep)
			rnic_ib_conn_end(dev, cep, -ECONNRESET);
		break;
	case RNIC_EV_TERM_RECEIVED:
	case RNIC_EV_TERM_SENT:
		if (qp)
			rnic_ib_qp_note_term(qp,
					     ev->type == RNIC_EV_TERM_RECEIVED,
					     arg0, le32_to_cpu(ev->arg1));
		fallthrough;
	case RNIC_EV_QP_ERROR:
		rnic_ib_qp_async(dev, id, IB_EVENT_QP_FATAL);
		break;
	case RNIC_EV_SRQ_LIMIT:
		rnic_ib_srq_limit(dev, id);
		break;
	}
	mutex_unlock(&dev->cm_lock);
}

/*
 * Before unregistering: a connect still waiting for the device would
 * leave its iw_cm_id in CONN_SENT, which iw_cm cannot destroy.
 */
void rnic_ib_cm_unplug(struct rnic_ib_dev *dev)
{
	struct rnic_ib_cep *cep;
	unsigned long id;

	flush_workqueue(dev->cm_wq);
	mutex_lock(&dev->cm_lock);
	xa_for_each(&dev->ceps, id, cep)
		if (cep->state == RNIC_CEP_CONNECTING)
			rnic_ib_cep_final(dev, cep, IW_CM_EVENT_CONNECT_REPLY,
					  -ECONNRESET);
	mutex_unlock(&dev->cm_lock);
}
