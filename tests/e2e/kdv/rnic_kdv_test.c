// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * rnic's own verbs from a kernel consumer (rnic_ib_dv.h), tested in a
 * guest: the module connects the rnic ib_device to itself through
 * rdma_cm (a passive id listening on addr:port, an active id connecting
 * to it, each side with its own PD, CQ and RC QP) and checks, printing
 * "KDV PASS name" or "KDV FAIL name: why" for each and then
 * "KDV DONE passed=N failed=M":
 *
 *   set-rtr          rnic_ib_qp_set_rtr refuses a type without
 *                    RNIC_RTR_GIVEN and an unknown type, takes
 *                    GIVEN | WRITE on the active QP before rdma_connect
 *   established      both ids reach ESTABLISHED
 *   conn-live        rnic_ib_qp_query_conn on both QPs: a live connection
 *   mpa-rev          MPA revision 2 on both
 *   rtr              both report the Write RTR agreed; the passive side
 *                    that the Request asked for peer-to-peer mode
 *                    offering Write alone
 *   ird-ord          each side reports the peer's IRD and ORD: the
 *                    passive side the active's conn params, the active
 *                    side the passive's IRD and min(its ORD, the active's
 *                    IRD) (docs/spec.md "IRD and ORD")
 *   pdata            each side reports the private data the other gave
 *                    rdma_connect or rdma_accept
 *   write-unlinked   control: the passive side fast-registers a page for
 *                    remote Write (ib_alloc_mr, IB_WR_REG_MR); after a
 *                    plain receive took a Send, the active side's Write
 *                    to it lands
 *   recv-linked-args rnic_ib_post_recv_linked refuses STag 0 and a chain
 *   recv-linked      a receive linked to that STag takes the next Send
 *   linked-stag-gone the same Write as in the control then lands nothing
 *                    and draws the passive side's Terminate, DDP tagged
 *                    buffer error, invalid STag (1/1/0x00), which both
 *                    QPs report (docs/spec.md "Receive-linked STags")
 *   disconnected     both ids then get DISCONNECTED
 *
 * A check whose premise failed fails too, saying so, so that the count
 * stays KDV_CHECKS.  Every wait has a timeout (timeout_ms).  Init returns
 * 0 once the results are printed; an error only when the setup before
 * the connection failed (the device, addresses, PD, CQ, QP).
 *
 * tests/e2e/rdma-rnic-kdv.sh builds it and loads it after rnic.ko.
 */
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/wait.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rnic/rnic-abi.h>
#include "rnic_ib_dv.h"

static char *addr;
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "IPv4 address of the rnic's netdev to listen on");
static ushort port = 7174;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "TCP port to listen on (default 7174)");
static char *ibdev = "rnic0";
module_param(ibdev, charp, 0444);
MODULE_PARM_DESC(ibdev, "the ib_device addr must be on (default rnic0)");
static uint timeout_ms = 20000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "longest wait for one event (default 20000)");

#define KDV_CHECKS	12

/* What the connection asks for, and so what each side must report. */
#define KDV_RTR		(RNIC_RTR_GIVEN | RNIC_RTR_WRITE)
#define KDV_A_IRD	4
#define KDV_A_ORD	3
#define KDV_P_IRD	6
#define KDV_P_ORD	5
static const char kdv_apdata[] = "kdv: the active side's rdma_connect";
static const char kdv_ppdata[] = "kdv: rdma_accept's";

/* Each side's page: what it sends, writes and receives. */
#define KDV_SEND_OFF	0
#define KDV_WSRC_OFF	256
#define KDV_RECV_OFF	1024
#define KDV_RECV_LEN	256
#define KDV_WRITE_LEN	64
#define KDV_QP_WRS	16
#define KDV_CQES	64	/* both queues, two WQEs per send WR */

struct kdv;

/* One work request and its completion. */
struct kdv_wr {
	struct ib_cqe cqe;
	struct completion done;
	enum ib_wc_status status;
	u32 byte_len;
};

struct kdv_side {
	const char *name;
	struct kdv *k;
	struct rdma_cm_id *id;	/* the active id, or the accepted one */
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	void *buf;		/* one page, mapped both ways */
	u64 dma;
	unsigned long events;	/* BIT(RDMA_CM_EVENT_*) seen, under k->lock */
	int status;		/* the last event's non-zero status */
	bool qp_fatal;		/* IB_EVENT_QP_FATAL seen */
};

struct kdv {
	struct kdv_side a, p;	/* active, passive */
	struct rdma_cm_id *listen;
	struct sockaddr_in sin;
	spinlock_t lock;
	wait_queue_head_t wq;
	bool closing;		/* refuse connection requests */
	struct ib_mr *mr;	/* the passive side's region */
	struct page *region;
	struct scatterlist sg;
	bool sg_mapped;
	struct kdv_wr wr[8];
	int passed, failed;
};

static void kdv_pass(struct kdv *k, const char *name)
{
	k->passed++;
	pr_info("KDV PASS %s\n", name);
}

static __printf(3, 4) void kdv_fail(struct kdv *k, const char *name,
				    const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	k->failed++;
	pr_info("KDV FAIL %s: %pV\n", name, &vaf);
	va_end(args);
}

static unsigned long kdv_timeout(void)
{
	return msecs_to_jiffies(timeout_ms);
}

static int kdv_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct kdv_side *s = id->context;	/* a child takes its listener's */
	struct kdv *k = s->k;
	int ret = 0;

	pr_info("kdv: %s: %s (status %d)\n", s->name, rdma_event_msg(ev->event),
		ev->status);
	spin_lock(&k->lock);
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		/* One connection; returning an error destroys any other. */
		if (k->closing || s->id)
			ret = -ECONNREFUSED;
		else
			s->id = id;
	}
	if (!ret) {
		s->events |= BIT(ev->event);
		if (ev->status)
			s->status = ev->status;
	}
	spin_unlock(&k->lock);
	wake_up(&k->wq);
	return ret;
}

static unsigned long kdv_events(struct kdv_side *s)
{
	unsigned long ev;

	spin_lock(&s->k->lock);
	ev = s->events;
	spin_unlock(&s->k->lock);
	return ev;
}

/* Waits for one of the events in @mask; returns those seen (0: none). */
static unsigned long kdv_wait_event(struct kdv_side *s, unsigned long mask)
{
	wait_event_timeout(s->k->wq, kdv_events(s) & mask, kdv_timeout());
	return kdv_events(s) & mask;
}

/* From the driver's event work, under its locks: only note it. */
static void kdv_qp_event(struct ib_event *ev, void *ctx)
{
	struct kdv_side *s = ctx;

	pr_info("kdv: %s QP: %s\n", s->name, ib_event_msg(ev->event));
	if (ev->event == IB_EVENT_QP_FATAL) {
		WRITE_ONCE(s->qp_fatal, true);
		wake_up(&s->k->wq);
	}
}

static bool kdv_wait_fatal(struct kdv_side *s)
{
	return wait_event_timeout(s->k->wq, READ_ONCE(s->qp_fatal),
				  kdv_timeout()) > 0;
}

static void kdv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kdv_wr *w = container_of(wc->wr_cqe, struct kdv_wr, cqe);

	w->status = wc->status;
	w->byte_len = wc->byte_len;
	complete(&w->done);
}

static struct kdv_wr *kdv_wr(struct kdv *k, int i)
{
	struct kdv_wr *w = &k->wr[i];

	w->cqe.done = kdv_done;
	init_completion(&w->done);
	w->status = IB_WC_GENERAL_ERR;
	w->byte_len = 0;
	return w;
}

/* 0 once @w completed successfully; else why not, in @why. */
static int kdv_wait_wr(struct kdv_wr *w, const char **why)
{
	if (!wait_for_completion_timeout(&w->done, kdv_timeout())) {
		*why = "no completion";
		return -ETIMEDOUT;
	}
	if (w->status != IB_WC_SUCCESS) {
		*why = ib_wc_status_msg(w->status);
		return -EIO;
	}
	return 0;
}

static struct ib_device *kdv_dev(struct kdv_side *s)
{
	return s->pd->device;
}

static void kdv_sync_cpu(struct kdv_side *s, u32 off, u32 len)
{
	ib_dma_sync_single_for_cpu(kdv_dev(s), s->dma + off, len,
				   DMA_BIDIRECTIONAL);
}

static void kdv_sync_dev(struct kdv_side *s, u32 off, u32 len)
{
	ib_dma_sync_single_for_device(kdv_dev(s), s->dma + off, len,
				      DMA_BIDIRECTIONAL);
}

static int kdv_post_recv(struct kdv_side *s, struct kdv_wr *w, u32 off,
			 u32 linked)
{
	struct ib_sge sge = {
		.addr = s->dma + off,
		.length = KDV_RECV_LEN,
		.lkey = s->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_cqe = &w->cqe, .sg_list = &sge,
				 .num_sge = 1 };
	const struct ib_recv_wr *bad;

	memset(s->buf + off, 0, KDV_RECV_LEN);
	kdv_sync_dev(s, off, KDV_RECV_LEN);
	if (linked)
		return rnic_ib_post_recv_linked(s->qp, &wr, linked, &bad);
	return ib_post_recv(s->qp, &wr, &bad);
}

/* A signaled Send of @msg from the active side. */
static int kdv_post_send(struct kdv_side *s, struct kdv_wr *w,
			 const char *msg)
{
	u32 len = strlen(msg);
	struct ib_sge sge = {
		.addr = s->dma + KDV_SEND_OFF,
		.length = len,
		.lkey = s->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = { .wr_cqe = &w->cqe, .sg_list = &sge,
				 .num_sge = 1, .opcode = IB_WR_SEND,
				 .send_flags = IB_SEND_SIGNALED };
	const struct ib_send_wr *bad;

	memcpy(s->buf + KDV_SEND_OFF, msg, len);
	kdv_sync_dev(s, KDV_SEND_OFF, len);
	return ib_post_send(s->qp, &wr, &bad);
}

/* The Write of both phases: KDV_WRITE_LEN bytes of 0xa5 to the region. */
static int kdv_post_write(struct kdv *k, struct kdv_wr *w)
{
	struct kdv_side *s = &k->a;
	struct ib_sge sge = {
		.addr = s->dma + KDV_WSRC_OFF,
		.length = KDV_WRITE_LEN,
		.lkey = s->pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = { .wr_cqe = &w->cqe, .sg_list = &sge, .num_sge = 1,
			.opcode = IB_WR_RDMA_WRITE,
			.send_flags = IB_SEND_SIGNALED },
		.remote_addr = k->mr->iova,
		.rkey = k->mr->rkey,
	};
	const struct ib_send_wr *bad;

	memset(s->buf + KDV_WSRC_OFF, 0xa5, KDV_WRITE_LEN);
	kdv_sync_dev(s, KDV_WSRC_OFF, KDV_WRITE_LEN);
	return ib_post_send(s->qp, &wr.wr, &bad);
}

/* A receive took @msg: completed, with its bytes. */
static bool kdv_received(struct kdv *k, const char *name, struct kdv_wr *w,
			 u32 off, const char *msg)
{
	struct kdv_side *s = &k->p;
	u32 len = strlen(msg);
	const char *why;
	int err;

	err = kdv_wait_wr(w, &why);
	if (err) {
		kdv_fail(k, name, "passive receive: %s", why);
		return false;
	}
	kdv_sync_cpu(s, off, KDV_RECV_LEN);
	if (w->byte_len != len || memcmp(s->buf + off, msg, len)) {
		kdv_fail(k, name, "received %u bytes '%.*s', sent '%s'",
			 w->byte_len, (int)min_t(u32, w->byte_len, len),
			 (char *)s->buf + off, msg);
		return false;
	}
	return true;
}

static void kdv_region_sync_cpu(struct kdv *k)
{
	ib_dma_sync_single_for_cpu(kdv_dev(&k->p), sg_dma_address(&k->sg),
				   PAGE_SIZE, DMA_BIDIRECTIONAL);
}

static void kdv_region_sync_dev(struct kdv *k)
{
	ib_dma_sync_single_for_device(kdv_dev(&k->p), sg_dma_address(&k->sg),
				      PAGE_SIZE, DMA_BIDIRECTIONAL);
}

/* How many of the region's first KDV_WRITE_LEN bytes are @c. */
static int kdv_region_count(struct kdv *k, u8 c)
{
	const u8 *b = page_address(k->region);
	int i, n = 0;

	kdv_region_sync_cpu(k);
	for (i = 0; i < KDV_WRITE_LEN; i++)
		n += b[i] == c;
	return n;
}

/* ---- setup ---- */

static int kdv_side_alloc(struct kdv_side *s, struct ib_device *dev)
{
	s->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(s->pd)) {
		int err = PTR_ERR(s->pd);

		s->pd = NULL;
		return err;
	}
	s->cq = ib_alloc_cq(dev, s, KDV_CQES, 0, IB_POLL_WORKQUEUE);
	if (IS_ERR(s->cq)) {
		int err = PTR_ERR(s->cq);

		s->cq = NULL;
		return err;
	}
	s->buf = (void *)get_zeroed_page(GFP_KERNEL);
	if (!s->buf)
		return -ENOMEM;
	s->dma = ib_dma_map_single(dev, s->buf, PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, s->dma)) {
		free_page((unsigned long)s->buf);
		s->buf = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int kdv_create_qp(struct kdv_side *s, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr attr = {
		.event_handler = kdv_qp_event,
		.qp_context = s,
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.cap = {
			.max_send_wr = KDV_QP_WRS,
			.max_recv_wr = KDV_QP_WRS,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};
	int err = rdma_create_qp(id, s->pd, &attr);

	if (!err)
		s->qp = id->qp;
	return err;
}

/* rnic_ib_dv.h: its functions are for an rnic ib_device only. */
static int kdv_check_dev(struct ib_device *dev)
{
	if (!dev) {
		pr_err("kdv: %s is on no RDMA device\n", addr);
		return -ENODEV;
	}
	if (strcmp(dev_name(&dev->dev), ibdev)) {
		pr_err("kdv: %s is on %s, not %s\n", addr,
		       dev_name(&dev->dev), ibdev);
		return -ENODEV;
	}
	return 0;
}

static int kdv_listen(struct kdv *k)
{
	struct rdma_cm_id *id;
	int err;

	id = rdma_create_id(&init_net, kdv_cm_handler, &k->p, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	k->listen = id;
	err = rdma_bind_addr(id, (struct sockaddr *)&k->sin);
	if (err) {
		pr_err("kdv: rdma_bind_addr %pISpc: %d\n", &k->sin, err);
		return err;
	}
	err = kdv_check_dev(id->device) ?: kdv_side_alloc(&k->p, id->device);
	if (err)
		return err;
	err = rdma_listen(id, 1);
	if (err)
		pr_err("kdv: rdma_listen: %d\n", err);
	return err;
}

/* A resolve call @err returned, then its event: @good, or @bad. */
static int kdv_resolved(struct kdv_side *s, const char *what, int err,
			enum rdma_cm_event_type good,
			enum rdma_cm_event_type bad)
{
	if (err) {
		pr_err("kdv: %s: %d\n", what, err);
		return err;
	}
	if (!(kdv_wait_event(s, BIT(good) | BIT(bad)) & BIT(good))) {
		pr_err("kdv: %s: no %s (status %d)\n", what,
		       rdma_event_msg(good), s->status);
		return -EHOSTUNREACH;
	}
	return 0;
}

static int kdv_resolve(struct kdv *k)
{
	struct kdv_side *s = &k->a;
	struct rdma_cm_id *id;
	int err;

	id = rdma_create_id(&init_net, kdv_cm_handler, s, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	s->id = id;
	err = kdv_resolved(s, "rdma_resolve_addr",
			   rdma_resolve_addr(id, NULL,
					     (struct sockaddr *)&k->sin,
					     timeout_ms),
			   RDMA_CM_EVENT_ADDR_RESOLVED,
			   RDMA_CM_EVENT_ADDR_ERROR) ?:
	      kdv_resolved(s, "rdma_resolve_route",
			   rdma_resolve_route(id, timeout_ms),
			   RDMA_CM_EVENT_ROUTE_RESOLVED,
			   RDMA_CM_EVENT_ROUTE_ERROR);
	if (err)
		return err;
	if (id->device != k->listen->device) {
		pr_err("kdv: the route leaves %s\n", ibdev);
		return -ENODEV;
	}
	err = kdv_side_alloc(s, id->device) ?: kdv_create_qp(s, id);
	if (err)
		pr_err("kdv: active PD, CQ or QP: %d\n", err);
	return err;
}

/* ---- (a) the connection rnic_ib_qp_set_rtr asked for ---- */

static void kdv_check_set_rtr(struct kdv *k)
{
	int none = rnic_ib_qp_set_rtr(k->a.qp, RNIC_RTR_WRITE);
	int bad = rnic_ib_qp_set_rtr(k->a.qp, RNIC_RTR_GIVEN | 0x08);
	int ok = rnic_ib_qp_set_rtr(k->a.qp, KDV_RTR);

	if (none != -EINVAL || bad != -EINVAL || ok)
		kdv_fail(k, "set-rtr",
			 "without GIVEN %d, unknown type %d (want -EINVAL), 0x%x %d",
			 none, bad, KDV_RTR, ok);
	else
		kdv_pass(k, "set-rtr");
}

/* The passive side takes the request: QP, then rdma_accept. */
static int kdv_accept(struct kdv *k)
{
	struct rdma_conn_param param = {
		.private_data = kdv_ppdata,
		.private_data_len = sizeof(kdv_ppdata),
		.responder_resources = KDV_P_IRD,
		.initiator_depth = KDV_P_ORD,
	};
	struct kdv_side *s = &k->p;
	struct rdma_cm_id *id;
	int err;

	if (!kdv_wait_event(s, BIT(RDMA_CM_EVENT_CONNECT_REQUEST))) {
		pr_err("kdv: no connection request\n");
		return -ETIMEDOUT;
	}
	spin_lock(&k->lock);
	id = s->id;
	spin_unlock(&k->lock);
	if (id->device != k->listen->device)
		return -ENODEV;
	err = kdv_create_qp(s, id);
	if (err) {
		pr_err("kdv: passive rdma_create_qp: %d\n", err);
		return err;
	}
	rdma_lock_handler(id);
	err = rdma_accept(id, &param);
	rdma_unlock_handler(id);
	if (err)
		pr_err("kdv: rdma_accept: %d\n", err);
	return err;
}

static bool kdv_connect(struct kdv *k)
{
	struct rdma_conn_param param = {
		.private_data = kdv_apdata,
		.private_data_len = sizeof(kdv_apdata),
		.responder_resources = KDV_A_IRD,
		.initiator_depth = KDV_A_ORD,
	};
	unsigned long end = BIT(RDMA_CM_EVENT_ESTABLISHED) |
			    BIT(RDMA_CM_EVENT_REJECTED) |
			    BIT(RDMA_CM_EVENT_UNREACHABLE) |
			    BIT(RDMA_CM_EVENT_CONNECT_ERROR) |
			    BIT(RDMA_CM_EVENT_DISCONNECTED);
	unsigned long a, p;
	int err;

	err = rdma_connect(k->a.id, &param);
	if (err) {
		kdv_fail(k, "established", "rdma_connect: %d", err);
		return false;
	}
	err = kdv_accept(k);
	if (err) {
		kdv_fail(k, "established", "accepting: %d", err);
		return false;
	}
	a = kdv_wait_event(&k->a, end);
	p = kdv_wait_event(&k->p, end);
	if (!(a & p & BIT(RDMA_CM_EVENT_ESTABLISHED))) {
		kdv_fail(k, "established",
			 "active events 0x%lx, passive 0x%lx (status %d, %d)",
			 a, p, k->a.status, k->p.status);
		return false;
	}
	kdv_pass(k, "established");
	return true;
}

static void kdv_check_conn(struct kdv *k, bool up)
{
	static const char * const n[] = {
		"conn-live", "mpa-rev", "rtr", "ird-ord", "pdata",
	};
	struct rnic_ib_conn *ca, *cp;
	u16 ord = min(KDV_P_ORD, KDV_A_IRD);
	int ea = -ENOTCONN, ep = -ENOTCONN, i;

	ca = kzalloc(sizeof(*ca), GFP_KERNEL);
	cp = kzalloc(sizeof(*cp), GFP_KERNEL);
	if (!ca || !cp) {
		ea = -ENOMEM;
		ep = -ENOMEM;
	} else if (up) {
		ea = rnic_ib_qp_query_conn(k->a.qp, ca);
		ep = rnic_ib_qp_query_conn(k->p.qp, cp);
	}
	if (ea || ep) {
		for (i = 0; i < ARRAY_SIZE(n); i++)
			kdv_fail(k, n[i], "no query: active %d, passive %d",
				 ea, ep);
		goto out;
	}
	if ((ca->flags & cp->flags & RNIC_IB_CONN_LIVE))
		kdv_pass(k, "conn-live");
	else
		kdv_fail(k, "conn-live", "flags active 0x%x, passive 0x%x",
			 ca->flags, cp->flags);

	if (ca->mpa_rev == 2 && cp->mpa_rev == 2)
		kdv_pass(k, "mpa-rev");
	else
		kdv_fail(k, "mpa-rev", "active %u, passive %u", ca->mpa_rev,
			 cp->mpa_rev);

	if (ca->rtr == (KDV_RTR & RNIC_RTR_TYPES) && cp->rtr == ca->rtr &&
	    cp->peer_rtr == (RNIC_RTR_P2P | (KDV_RTR & RNIC_RTR_TYPES)))
		kdv_pass(k, "rtr");
	else
		kdv_fail(k, "rtr",
			 "agreed: active 0x%x, passive 0x%x; offered 0x%x; want 0x%x, offered 0x%x",
			 ca->rtr, cp->rtr, cp->peer_rtr,
			 KDV_RTR & RNIC_RTR_TYPES,
			 RNIC_RTR_P2P | (KDV_RTR & RNIC_RTR_TYPES));

	if (cp->ird == KDV_A_IRD && cp->ord == KDV_A_ORD &&
	    ca->ird == KDV_P_IRD && ca->ord == ord)
		kdv_pass(k, "ird-ord");
	else
		kdv_fail(k, "ird-ord",
			 "passive sees %u/%u (want %u/%u), active %u/%u (want %u/%u)",
			 cp->ird, cp->ord, KDV_A_IRD, KDV_A_ORD, ca->ird,
			 ca->ord, KDV_P_IRD, ord);

	if (cp->pdata_len == sizeof(kdv_apdata) &&
	    !memcmp(cp->pdata, kdv_apdata, sizeof(kdv_apdata)) &&
	    ca->pdata_len == sizeof(kdv_ppdata) &&
	    !memcmp(ca->pdata, kdv_ppdata, sizeof(kdv_ppdata)))
		kdv_pass(k, "pdata");
	else
		kdv_fail(k, "pdata",
			 "passive got %u bytes '%.*s', active %u '%.*s'",
			 cp->pdata_len, (int)min_t(u16, cp->pdata_len, 64),
			 cp->pdata, ca->pdata_len,
			 (int)min_t(u16, ca->pdata_len, 64), ca->pdata);
out:
	kfree(ca);
	kfree(cp);
}

/* ---- (b) a receive-linked STag ---- */

/* The passive side's page for remote Write, fast-registered. */
static int kdv_fast_reg(struct kdv *k, const char **why)
{
	struct kdv_side *s = &k->p;
	struct ib_device *dev = kdv_dev(s);
	struct kdv_wr *w = kdv_wr(k, 0);
	struct ib_reg_wr wr = {
		.wr = { .wr_cqe = &w->cqe, .opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED },
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE,
	};
	const struct ib_send_wr *bad;
	int n, err;

	*why = "ib_alloc_mr";
	k->mr = ib_alloc_mr(s->pd, IB_MR_TYPE_MEM_REG, 1);
	if (IS_ERR(k->mr)) {
		err = PTR_ERR(k->mr);
		k->mr = NULL;
		return err;
	}
	*why = "alloc_page";
	k->region = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!k->region)
		return -ENOMEM;
	sg_init_table(&k->sg, 1);
	sg_set_page(&k->sg, k->region, PAGE_SIZE, 0);
	*why = "ib_dma_map_sg";
	if (ib_dma_map_sg(dev, &k->sg, 1, DMA_BIDIRECTIONAL) != 1)
		return -ENOMEM;
	k->sg_mapped = true;
	*why = "ib_map_mr_sg";
	n = ib_map_mr_sg(k->mr, &k->sg, 1, NULL, PAGE_SIZE);
	if (n != 1)
		return n < 0 ? n : -EINVAL;
	ib_update_fast_reg_key(k->mr, ib_inc_rkey(k->mr->rkey));
	wr.mr = k->mr;
	wr.key = k->mr->rkey;
	*why = "IB_WR_REG_MR";
	err = ib_post_send(s->qp, &wr.wr, &bad);
	return err ?: kdv_wait_wr(w, why);
}

/* Control: a plain receive takes a Send, and the Write then lands. */
static bool kdv_check_unlinked(struct kdv *k)
{
	static const char msg[] = "kdv: a Send to a plain receive";
	struct kdv_wr *rw, *ww, *sw;
	const char *why;
	int err, n;

	err = kdv_fast_reg(k, &why);
	if (err) {
		kdv_fail(k, "write-unlinked", "fast registration: %s (%d)",
			 why, err);
		return false;
	}
	rw = kdv_wr(k, 1);
	ww = kdv_wr(k, 2);
	sw = kdv_wr(k, 3);
	err = kdv_post_recv(&k->p, rw, KDV_RECV_OFF, 0);
	if (err) {
		kdv_fail(k, "write-unlinked", "ib_post_recv: %d", err);
		return false;
	}
	err = kdv_post_send(&k->a, sw, msg);
	if (err) {
		kdv_fail(k, "write-unlinked", "ib_post_send (Send): %d", err);
		return false;
	}
	if (!kdv_received(k, "write-unlinked", rw, KDV_RECV_OFF, msg))
		return false;
	if (kdv_wait_wr(sw, &why)) {
		kdv_fail(k, "write-unlinked", "Send: %s", why);
		return false;
	}
	/* The Write, then a Send behind it: its receive says it is placed. */
	rw = kdv_wr(k, 1);
	sw = kdv_wr(k, 3);
	err = kdv_post_recv(&k->p, rw, KDV_RECV_OFF, 0) ?:
	      kdv_post_write(k, ww) ?: kdv_post_send(&k->a, sw, msg);
	if (err) {
		kdv_fail(k, "write-unlinked", "posting the Write: %d", err);
		return false;
	}
	if (kdv_wait_wr(ww, &why)) {
		kdv_fail(k, "write-unlinked", "Write: %s", why);
		return false;
	}
	if (!kdv_received(k, "write-unlinked", rw, KDV_RECV_OFF, msg))
		return false;
	n = kdv_region_count(k, 0xa5);
	if (n != KDV_WRITE_LEN) {
		kdv_fail(k, "write-unlinked", "%d of %d bytes written", n,
			 KDV_WRITE_LEN);
		return false;
	}
	kdv_pass(k, "write-unlinked");
	return true;
}

static void kdv_check_linked_args(struct kdv *k)
{
	struct ib_sge sge = {
		.addr = k->p.dma + KDV_RECV_OFF,
		.length = KDV_RECV_LEN,
		.lkey = k->p.pd->local_dma_lkey,
	};
	/* Refused, never posted; were one posted, it would complete here. */
	struct kdv_wr *w = kdv_wr(k, 7);
	struct ib_recv_wr w2 = { .wr_cqe = &w->cqe, .sg_list = &sge,
				 .num_sge = 1 };
	struct ib_recv_wr w1 = { .wr_cqe = &w->cqe, .sg_list = &sge,
				 .num_sge = 1 };
	const struct ib_recv_wr *bad0 = NULL, *bad1 = NULL;
	int e0, e1;

	e0 = rnic_ib_post_recv_linked(k->p.qp, &w1, 0, &bad0);
	w1.next = &w2;
	e1 = rnic_ib_post_recv_linked(k->p.qp, &w1, k->mr->rkey, &bad1);
	if (e0 == -EINVAL && bad0 == &w1 && e1 == -EINVAL && bad1 == &w1)
		kdv_pass(k, "recv-linked-args");
	else
		kdv_fail(k, "recv-linked-args",
			 "STag 0: %d, a chain: %d (want -EINVAL and bad_wr set)",
			 e0, e1);
}

/*
 * A receive linked to the region's STag takes a Send; the STag is then
 * invalid, so the control's Write draws the passive side's Terminate.
 */
static void kdv_check_linked(struct kdv *k, bool ready)
{
	static const char msg[] = "kdv: a Send to the linked receive";
	struct rnic_ib_conn *ca = NULL, *cp = NULL;
	struct kdv_wr *rw, *sw, *ww;
	const char *why;
	int err, n;

	if (!ready) {
		kdv_fail(k, "recv-linked", "no registered region");
		kdv_fail(k, "linked-stag-gone", "no registered region");
		return;
	}
	/* The region zeroed: what the Write would land is seen. */
	memset(page_address(k->region), 0, PAGE_SIZE);
	kdv_region_sync_dev(k);
	rw = kdv_wr(k, 4);
	sw = kdv_wr(k, 5);
	ww = kdv_wr(k, 6);
	err = kdv_post_recv(&k->p, rw, KDV_RECV_OFF + KDV_RECV_LEN,
			    k->mr->rkey);
	if (err) {
		kdv_fail(k, "recv-linked", "rnic_ib_post_recv_linked: %d",
			 err);
		kdv_fail(k, "linked-stag-gone", "no linked receive");
		return;
	}
	err = kdv_post_send(&k->a, sw, msg);
	if (err) {
		kdv_fail(k, "recv-linked", "ib_post_send: %d", err);
		kdv_fail(k, "linked-stag-gone", "no Send");
		return;
	}
	if (!kdv_received(k, "recv-linked", rw, KDV_RECV_OFF + KDV_RECV_LEN,
			  msg)) {
		kdv_fail(k, "linked-stag-gone", "no linked receive taken");
		return;
	}
	if (kdv_wait_wr(sw, &why)) {
		kdv_fail(k, "recv-linked", "Send: %s", why);
		kdv_fail(k, "linked-stag-gone", "no linked receive taken");
		return;
	}
	kdv_pass(k, "recv-linked");

	err = kdv_post_write(k, ww);
	if (err) {
		kdv_fail(k, "linked-stag-gone", "ib_post_send (Write): %d", err);
		return;
	}
	/* Handed to TCP, the Write completes; the Terminate comes after. */
	if (!wait_for_completion_timeout(&ww->done, kdv_timeout())) {
		kdv_fail(k, "linked-stag-gone", "the Write did not complete");
		return;
	}
	pr_info("kdv: the Write completed: %s\n", ib_wc_status_msg(ww->status));
	if (!kdv_wait_fatal(&k->a) || !kdv_wait_fatal(&k->p)) {
		n = kdv_region_count(k, 0xa5);
		kdv_fail(k, "linked-stag-gone",
			 "no QP error (active %d, passive %d); %d of %d bytes landed",
			 READ_ONCE(k->a.qp_fatal), READ_ONCE(k->p.qp_fatal), n,
			 KDV_WRITE_LEN);
		return;
	}
	ca = kzalloc(sizeof(*ca), GFP_KERNEL);
	cp = kzalloc(sizeof(*cp), GFP_KERNEL);
	if (!ca || !cp) {
		kdv_fail(k, "linked-stag-gone", "no memory");
		goto out;
	}
	err = rnic_ib_qp_query_conn(k->a.qp, ca) ?:
	      rnic_ib_qp_query_conn(k->p.qp, cp);
	n = kdv_region_count(k, 0);
	if (err || !(ca->flags & RNIC_IB_CONN_TERM_RX) ||
	    !(cp->flags & RNIC_IB_CONN_TERM_TX) ||
	    ca->term_rx.layer != 1 || ca->term_rx.etype != 1 ||
	    ca->term_rx.ecode != 0 ||
	    memcmp(&ca->term_rx, &cp->term_tx, sizeof(ca->term_rx)) ||
	    n != KDV_WRITE_LEN)
		kdv_fail(k, "linked-stag-gone",
			 "query %d; active flags 0x%x received %u/%u/0x%02x, passive flags 0x%x sent %u/%u/0x%02x (want 1/1/0x00); %d of %d bytes untouched",
			 err, ca->flags, ca->term_rx.layer, ca->term_rx.etype,
			 ca->term_rx.ecode, cp->flags, cp->term_tx.layer,
			 cp->term_tx.etype, cp->term_tx.ecode, n,
			 KDV_WRITE_LEN);
	else
		kdv_pass(k, "linked-stag-gone");
out:
	kfree(ca);
	kfree(cp);
}

static void kdv_check_disconnected(struct kdv *k, bool up)
{
	unsigned long a, p, dis = BIT(RDMA_CM_EVENT_DISCONNECTED);

	if (!up) {
		kdv_fail(k, "disconnected", "never connected");
		return;
	}
	a = kdv_wait_event(&k->a, dis);
	p = kdv_wait_event(&k->p, dis);
	if (a && p)
		kdv_pass(k, "disconnected");
	else
		kdv_fail(k, "disconnected", "active %s, passive %s",
			 a ? "yes" : "no", p ? "yes" : "no");
}

/* ---- teardown: whatever the setup made ---- */

static void kdv_side_free(struct kdv_side *s)
{
	if (s->buf) {
		ib_dma_unmap_single(kdv_dev(s), s->dma, PAGE_SIZE,
				    DMA_BIDIRECTIONAL);
		free_page((unsigned long)s->buf);
	}
	if (s->cq)
		ib_free_cq(s->cq);
	if (s->pd)
		ib_dealloc_pd(s->pd);
}

static void kdv_teardown(struct kdv *k)
{
	struct kdv_side *sides[] = { &k->a, &k->p };
	struct rdma_cm_id *id;
	int i, err;

	spin_lock(&k->lock);
	k->closing = true;
	spin_unlock(&k->lock);
	if (k->listen)
		rdma_destroy_id(k->listen);
	for (i = 0; i < ARRAY_SIZE(sides); i++) {
		struct kdv_side *s = sides[i];

		spin_lock(&k->lock);
		id = s->id;
		spin_unlock(&k->lock);
		if (!id)
			continue;
		/* Still connected (a check failed first): close it. */
		if ((kdv_events(s) & BIT(RDMA_CM_EVENT_ESTABLISHED)) &&
		    !(kdv_events(s) & BIT(RDMA_CM_EVENT_DISCONNECTED))) {
			err = rdma_disconnect(id);
			if (err)
				pr_info("kdv: %s rdma_disconnect: %d\n",
					s->name, err);
		}
		if (id->qp)
			rdma_destroy_qp(id);
		rdma_destroy_id(id);
	}
	if (k->mr) {
		err = ib_dereg_mr(k->mr);
		if (err)
			pr_err("kdv: ib_dereg_mr: %d\n", err);
	}
	if (k->sg_mapped)
		ib_dma_unmap_sg(kdv_dev(&k->p), &k->sg, 1, DMA_BIDIRECTIONAL);
	if (k->region)
		__free_page(k->region);
	for (i = 0; i < ARRAY_SIZE(sides); i++)
		kdv_side_free(sides[i]);
}

static int __init kdv_init(void)
{
	struct kdv *k;
	bool up, ready;
	int err;

	k = kzalloc(sizeof(*k), GFP_KERNEL);
	if (!k)
		return -ENOMEM;
	spin_lock_init(&k->lock);
	init_waitqueue_head(&k->wq);
	k->a = (struct kdv_side) { .name = "active", .k = k };
	k->p = (struct kdv_side) { .name = "passive", .k = k };
	k->sin.sin_family = AF_INET;
	k->sin.sin_port = htons(port);
	if (!addr || !in4_pton(addr, -1, (u8 *)&k->sin.sin_addr.s_addr, -1,
			       NULL)) {
		pr_err("kdv: addr=%s is no IPv4 address\n", addr ?: "(none)");
		kfree(k);
		return -EINVAL;
	}
	err = kdv_listen(k) ?: kdv_resolve(k);
	if (err) {
		pr_err("kdv: setup failed: %d\n", err);
		goto out;
	}

	kdv_check_set_rtr(k);
	up = kdv_connect(k);
	kdv_check_conn(k, up);

	if (up) {
		ready = kdv_check_unlinked(k);
	} else {
		ready = false;
		kdv_fail(k, "write-unlinked", "not connected");
	}
	if (ready)
		kdv_check_linked_args(k);
	else
		kdv_fail(k, "recv-linked-args", "no registered region");
	kdv_check_linked(k, ready);
	kdv_check_disconnected(k, up);

	if (k->passed + k->failed != KDV_CHECKS)
		pr_info("kdv: %d checks reported, %d expected\n",
			k->passed + k->failed, KDV_CHECKS);
	pr_info("KDV DONE passed=%d failed=%d\n", k->passed, k->failed);
out:
	kdv_teardown(k);
	kfree(k);
	return err;
}

static void __exit kdv_exit(void)
{
}

module_init(kdv_init);
module_exit(kdv_exit);
MODULE_DESCRIPTION("rnic's own verbs (rnic_ib_dv.h) from a kernel consumer");
MODULE_LICENSE("GPL");
