// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The ib_device: registration with its netdev (rnic_netdev.c), the device
 * and port queries, user contexts, and the hand-off of events from the admin
 * interrupt.  Every op ib_register_device() calls mandatory is here or in
 * the files named in rnic_ib.h, so the device is a kernel-verbs provider
 * and rdma_cm uses it.
 */
#include <linux/etherdevice.h>
#include <net/addrconf.h>
#include <rdma/ib_cache.h>
#include "rnic_ib.h"

/* The uverbs ABI of this driver (no driver-specific udata yet). */
#define RNIC_IB_UVERBS_ABI	1

int rnic_ib_cmd(struct rnic_ib_dev *dev, u8 opcode, const void *in,
		size_t len, struct rnic_cmd *out)
{
	struct rnic_cmd cmd = { .opcode = opcode };
	int err;

	if (READ_ONCE(dev->rdev->dead))
		return -ENODEV;
	if (in)
		memcpy(cmd.u.raw, in, min_t(size_t, len, sizeof(cmd.u.raw)));
	err = rnic_cmd_exec_quiet(dev->rdev, &cmd);
	if (out)
		*out = cmd;
	return err;
}

/* A command on one object: its handle is the payload's first word. */
int rnic_ib_cmd_handle(struct rnic_ib_dev *dev, u8 opcode, u32 handle)
{
	__le32 h = cpu_to_le32(handle);

	return rnic_ib_cmd(dev, opcode, &h, sizeof(h), NULL);
}

static int rnic_ib_query_device(struct ib_device *ibdev,
				struct ib_device_attr *a, struct ib_udata *udata)
{
	struct rnic_ib_dev *dev = to_rdev(ibdev);
	const struct rnic_device_attr *d = &dev->rdev->attr;

	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->fw_ver = le32_to_cpu(d->abi_version);
	a->sys_image_guid = ibdev->node_guid;
	a->max_mr_size = le64_to_cpu(d->max_mr_size);
	a->page_size_cap = le32_to_cpu(d->page_size_cap);
	a->vendor_id = RNIC_PCI_VENDOR_ID;
	a->vendor_part_id = RNIC_PCI_DEVICE_ID;
	a->hw_ver = dev->rdev->pdev->revision;
	a->max_qp = le32_to_cpu(d->max_qp);
	a->max_qp_wr = le32_to_cpu(d->max_qp_wr) / RNIC_IB_SQ_WQES_PER_WR;
	a->max_send_sge = le32_to_cpu(d->max_sge);
	a->max_recv_sge = le32_to_cpu(d->max_sge);
	a->max_sge_rd = le32_to_cpu(d->max_sge);
	a->max_cq = le32_to_cpu(d->max_cq);
	a->max_cqe = le32_to_cpu(d->max_cqe);
	a->max_mr = le32_to_cpu(d->max_mr);
	a->max_mw = le32_to_cpu(d->max_mw);
	a->max_srq = le32_to_cpu(d->max_srq);
	a->max_srq_wr = le32_to_cpu(d->max_srq_wr);
	a->max_srq_sge = le32_to_cpu(d->max_sge);
	a->max_pd = le32_to_cpu(d->max_pd);
	a->max_qp_rd_atom = le32_to_cpu(d->max_ird);
	a->max_qp_init_rd_atom = le32_to_cpu(d->max_ord);
	a->max_res_rd_atom = le32_to_cpu(d->max_ird) * a->max_qp;
	/* RFC 7306 atomics, executed by the responder's device. */
	a->atomic_cap = IB_ATOMIC_HCA;
	/*
	 * ALLOC_MR and FAST_REG (local_dma_lkey is each PD's physical STag);
	 * windows of type 1 and 2B (a type 2 window is invalidated before it
	 * is bound again).
	 */
	a->device_cap_flags = IB_DEVICE_MEM_MGT_EXTENSIONS |
			      IB_DEVICE_MEM_WINDOW |
			      IB_DEVICE_MEM_WINDOW_TYPE_2B;
	a->max_fast_reg_page_list_len = le32_to_cpu(d->max_fast_reg_pages);
	return 0;
}

static void rnic_ib_fw_str(struct ib_device *ibdev, char *str)
{
	u32 abi = le32_to_cpu(to_rdev(ibdev)->rdev->attr.abi_version);

	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u", abi >> 16, abi & 0xffff);
}

/* The core has set state, MTUs and phys_state from the netdev already. */
static int rnic_ib_query_port(struct ib_device *ibdev, u32 port,
			      struct ib_port_attr *attr)
{
	ib_get_eth_speed(ibdev, port, &attr->active_speed,
			 &attr->active_width);
	attr->gid_tbl_len = 1;
	attr->max_msg_sz = le64_to_cpu(to_rdev(ibdev)->rdev->attr.max_mr_size);
	attr->port_cap_flags = IB_PORT_CM_SUP | IB_PORT_DEVICE_MGMT_SUP;
	return 0;
}

static int rnic_ib_port_immutable(struct ib_device *ibdev, u32 port,
				  struct ib_port_immutable *imm)
{
	imm->gid_tbl_len = 1;
	imm->core_cap_flags = RDMA_CORE_PORT_IWARP;
	return 0;
}

/* iWARP's GID: the MAC, then zeros (as siw, cxgb4, irdma). */
static int rnic_ib_query_gid(struct ib_device *ibdev, u32 port, int idx,
			     union ib_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	memcpy(gid->raw, to_rdev(ibdev)->mac, ETH_ALEN);
	return 0;
}

/*
 * A context asks for direct mode (rnic-ib-uapi.h) and gets it if a
 * doorbell page is free; otherwise its verbs go through the kernel.
 */
static int rnic_ib_alloc_ucontext(struct ib_ucontext *ibuc,
				  struct ib_udata *udata)
{
	struct rnic_ib_ucontext *uc = container_of(ibuc, struct rnic_ib_ucontext,
						   ibuc);
	struct rnic_ib_alloc_ucontext_req req = { };
	struct rnic_ib_alloc_ucontext_resp resp = { };
	int err;

	if (ib_copy_from_udata(&req, udata, min(udata->inlen, sizeof(req))))
		return -EFAULT;
	if (req.flags & RNIC_IB_DIRECT) {
		err = rnic_ib_udb_get(to_rdev(ibuc->device), uc);
		if (err)
			return err;
	}
	if (uc->udb) {
		resp.udb_key = rdma_user_mmap_get_offset(&uc->udb_map->rdma);
		resp.udb_len = uc->udb_map->len;
		resp.flags = RNIC_IB_DIRECT;
	}
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (err)
		rnic_ib_udb_put(uc);
	return err;
}

static void rnic_ib_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	rnic_ib_udb_put(container_of(ibuc, struct rnic_ib_ucontext, ibuc));
}

/*
 * Hot-unplug with a context open: the core has destroyed every object of
 * the context through the ops above, and zaps its mappings: rings are
 * pages the mappings held, which the device no longer writes, and the
 * doorbell page is no longer reachable.  Nothing is left to take away.
 */
static void rnic_ib_disassociate_ucontext(struct ib_ucontext *uctx)
{
}

static const struct ib_device_ops rnic_ib_ops = {
	.owner			= THIS_MODULE,
	.driver_id		= RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver		= RNIC_IB_UVERBS_ABI,

	.query_device		= rnic_ib_query_device,
	.get_dev_fw_str		= rnic_ib_fw_str,
	.query_port		= rnic_ib_query_port,
	.get_port_immutable	= rnic_ib_port_immutable,
	.query_gid		= rnic_ib_query_gid,
	.alloc_ucontext		= rnic_ib_alloc_ucontext,
	.dealloc_ucontext	= rnic_ib_dealloc_ucontext,
	.disassociate_ucontext	= rnic_ib_disassociate_ucontext,
	.alloc_pd		= rnic_ib_alloc_pd,
	.dealloc_pd		= rnic_ib_dealloc_pd,
	.get_dma_mr		= rnic_ib_get_dma_mr,
	.reg_user_mr		= rnic_ib_reg_user_mr,
	.rereg_user_mr		= rnic_ib_rereg_user_mr,
	.dereg_mr		= rnic_ib_dereg_mr,
	.alloc_mw		= rnic_ib_alloc_mw,
	.dealloc_mw		= rnic_ib_dealloc_mw,
	.alloc_mr		= rnic_ib_alloc_mr,
	.map_mr_sg		= rnic_ib_map_mr_sg,
	.create_cq		= RNIC_IB_CREATE_CQ,
	.mmap			= rnic_ib_mmap,
	.mmap_free		= rnic_ib_mmap_free,
	.destroy_cq		= rnic_ib_destroy_cq,
	.poll_cq		= rnic_ib_poll_cq,
	.req_notify_cq		= rnic_ib_req_notify_cq,
	.create_qp		= rnic_ib_create_qp,
	.modify_qp		= rnic_ib_modify_qp,
	.query_qp		= rnic_ib_query_qp,
	.destroy_qp		= rnic_ib_destroy_qp,
	.post_send		= rnic_ib_post_send,
	.post_recv		= rnic_ib_post_recv,
	.create_srq		= rnic_ib_create_srq,
	.destroy_srq		= rnic_ib_destroy_srq,
	.modify_srq		= rnic_ib_modify_srq,
	.query_srq		= rnic_ib_query_srq,
	.post_srq_recv		= rnic_ib_post_srq_recv,

	.iw_add_ref		= rnic_ib_qp_get,
	.iw_rem_ref		= rnic_ib_qp_put,
	.iw_get_qp		= rnic_ib_get_qp,
	.iw_connect		= rnic_ib_connect,
	.iw_accept		= rnic_ib_accept,
	.iw_reject		= rnic_ib_reject,
	.iw_create_listen	= rnic_ib_create_listen,
	.iw_destroy_listen	= rnic_ib_destroy_listen,

	INIT_RDMA_OBJ_SIZE(ib_pd, rnic_ib_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_cq, rnic_ib_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, rnic_ib_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_qp, rnic_ib_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, rnic_ib_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, rnic_ib_ucontext, ibuc),
};

/* From the admin interrupt: anything but FATAL goes to the work queue. */
struct rnic_ib_ev {
	struct list_head node;
	struct rnic_event ev;
};

void rnic_ib_event(struct rnic_dev *rdev, const struct rnic_event *ev)
{
	struct rnic_ib_dev *dev = READ_ONCE(rdev->ib);
	struct rnic_ib_ev *e;

	if (!dev || ev->type == RNIC_EV_FATAL)
		return;
	e = kmalloc(sizeof(*e), GFP_ATOMIC);
	if (!e) {
		dev_warn_ratelimited(&rdev->pdev->dev,
				     "no memory: event 0x%02x lost\n", ev->type);
		return;
	}
	e->ev = *ev;
	spin_lock(&dev->ev_lock);
	list_add_tail(&e->node, &dev->ev_list);
	spin_unlock(&dev->ev_lock);
	queue_work(dev->cm_wq, &dev->ev_work);
}

/* Takes the queued events in order; rnic_ib_cm.c handles each. */
void rnic_ib_cm_work(struct work_struct *work)
{
	struct rnic_ib_dev *dev = container_of(work, struct rnic_ib_dev,
					       ev_work);
	struct rnic_ib_ev *e;

	for (;;) {
		spin_lock_irq(&dev->ev_lock);
		e = list_first_entry_or_null(&dev->ev_list, struct rnic_ib_ev,
					     node);
		if (e)
			list_del(&e->node);
		spin_unlock_irq(&dev->ev_lock);
		if (!e)
			return;
		rnic_ib_cm_event(dev, &e->ev);
		kfree(e);
	}
}

/* A CQ's vector fired: every armed CQ on it with an entry is told. */
void rnic_ib_cq_irq(struct rnic_dev *rdev, unsigned int vector)
{
	struct rnic_ib_dev *dev = READ_ONCE(rdev->ib);

	if (dev)
		rnic_ib_cq_vector(dev, vector);
}

static void rnic_ib_setup(struct rnic_ib_dev *dev)
{
	struct ib_device *ibdev = &dev->ibdev;

	xa_init_flags(&dev->qps, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->cqs, XA_FLAGS_LOCK_IRQ);
	xa_init(&dev->listeners);
	xa_init(&dev->srqs);
	xa_init(&dev->ceps);
	spin_lock_init(&dev->ev_lock);
	INIT_LIST_HEAD(&dev->ev_list);
	INIT_WORK(&dev->ev_work, rnic_ib_cm_work);
	mutex_init(&dev->cm_lock);
	INIT_LIST_HEAD(&dev->leps);
	ida_init(&dev->udb_ida);
	/* A process maps whole pages: one must be one doorbell page. */
	if (PAGE_SIZE == RNIC_UDB_PAGE_SIZE)
		dev->udb_pages = min_t(u64, le32_to_cpu(dev->rdev->attr.udb_pages),
				       pci_resource_len(dev->rdev->pdev,
							RNIC_BAR_UDB) /
				       RNIC_UDB_PAGE_SIZE);

	ibdev->node_type = RDMA_NODE_RNIC;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = RNIC_MSIX_VECTORS - 1;
	addrconf_addr_eui48((u8 *)&ibdev->node_guid, dev->mac);
	strscpy(ibdev->node_desc, "rnic software iWARP (QEMU)",
		sizeof(ibdev->node_desc));
	/* Posts and polls of user space not in direct mode (write()). */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POLL_CQ) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_SRQ_RECV);
	ibdev->dev.parent = &dev->rdev->pdev->dev;
	ib_set_device_ops(ibdev, &rnic_ib_ops);
	ibdev->driver_def = rnic_ib_uapi_defs;	/* rnic_ib_dv.c */
}

int rnic_ib_register(struct rnic_dev *rdev)
{
	struct rnic_ib_dev *dev;
	int err;

	dev = ib_alloc_device(rnic_ib_dev, ibdev);
	if (!dev)
		return -ENOMEM;
	dev->rdev = rdev;
	dev->cm_wq = alloc_ordered_workqueue("rnic_cm", WQ_MEM_RECLAIM);
	if (!dev->cm_wq) {
		err = -ENOMEM;
		goto err_dealloc;
	}
	memcpy(dev->mac, rdev->attr.mac, ETH_ALEN);
	rnic_ib_setup(dev);
	err = rnic_netdev_attach(dev);
	if (err)
		goto err_wq;
	/* The host owns the TCP ports: no iwpmd mapping. */
	dev->ibdev.iw_driver_flags = IW_F_NO_PORT_MAP;
	WRITE_ONCE(rdev->ib, dev);
	err = ib_register_device(&dev->ibdev, "rnic%d", &rdev->pdev->dev);
	if (err) {
		WRITE_ONCE(rdev->ib, NULL);
		goto err_netdev;
	}
	dev_info(&rdev->pdev->dev, "ib_device %s on %s\n",
		 dev_name(&dev->ibdev.dev), rnic_netdev_name(dev));
	return 0;

err_netdev:
	rnic_netdev_detach(dev);
err_wq:
	destroy_workqueue(dev->cm_wq);
err_dealloc:
	ib_dealloc_device(&dev->ibdev);
	return err;
}

/* Remove, with the device still up: every object is destroyed first. */
void rnic_ib_unregister(struct rnic_dev *rdev)
{
	struct rnic_ib_dev *dev = rdev->ib;
	struct rnic_ib_ev *e, *tmp;
	struct rnic_ib_cep *cep;
	unsigned long id;

	if (!dev)
		return;
	rnic_ib_cm_unplug(dev);
	ib_unregister_device(&dev->ibdev);
	WRITE_ONCE(rdev->ib, NULL);
	synchronize_irq(pci_irq_vector(rdev->pdev, RNIC_MSIX_VEC_ADMIN));
	destroy_workqueue(dev->cm_wq);
	list_for_each_entry_safe(e, tmp, &dev->ev_list, node)
		kfree(e);
	/* Requests nobody answered: their connections went with the reset. */
	xa_for_each(&dev->ceps, id, cep)
		kfree(cep);
	rnic_netdev_detach(dev);
	xa_destroy(&dev->qps);
	xa_destroy(&dev->cqs);
	xa_destroy(&dev->listeners);
	xa_destroy(&dev->srqs);
	xa_destroy(&dev->ceps);
	/* Disassociation let go of every mapping, doorbell pages too. */
	ida_destroy(&dev->udb_ida);
	ib_dealloc_device(&dev->ibdev);
}
