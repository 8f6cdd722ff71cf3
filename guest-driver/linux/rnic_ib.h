/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic as a Linux RDMA device: an iWARP ib_device (RDMA_NODE_RNIC) with one
 * port bound to a netdev (the VM's NIC of the same MAC, or one of its own:
 * rnic_netdev.c), kernel verbs, the uverbs write()
 * commands for user space, and iw_cm ops mapped onto the device's
 * host-side connections (docs/driver-guide.md, "The ib_device").
 *
 * rnic_ib_main.c registers the device and its netdev, answers the
 * queries and queues the device's events; rnic_ib_mr.c has PDs, MRs and
 * MWs, rnic_ib_cq.c CQs, rnic_ib_qp.c QPs and the data path,
 * rnic_ib_srq.c SRQs, rnic_ib_cm.c the iw_cm ops and the queued events;
 * rnic_ib_umap.c is what a process maps, rnic_ib_dv.c rnic's own verbs
 * (rnic_ib_dv.h).
 */
#ifndef RNIC_IB_H
#define RNIC_IB_H

#include <linux/netdevice.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/iw_cm.h>
#include <rdma/uverbs_ioctl.h>
#include "rnic_dev.h"
#include "../rnic-ib-uapi.h"
#include "rnic_ib_dv.h"

struct rnic_ib_dev {
	struct ib_device ibdev;
	struct rnic_dev *rdev;
	struct net_device __rcu *netdev;	/* the port's; RTNL, RCU */
	struct notifier_block nb;	/* finds the companion netdev */
	u8 mac[ETH_ALEN];
	/* Device numbers -> objects, for completions and events. */
	struct xarray qps;		/* qpn -> struct rnic_ib_qp */
	struct xarray cqs;		/* cqn -> struct rnic_ib_cq */
	struct xarray srqs;		/* srqn -> struct rnic_ib_srq; writers
					 * and event readers under cm_lock */
	struct xarray listeners;	/* device listener id -> rnic_ib_lep */
	struct xarray ceps;		/* device conn id -> rnic_ib_cep */
	/*
	 * Connection events are taken off the event ring in the admin
	 * interrupt and handled here in order, where commands may sleep.
	 */
	struct workqueue_struct *cm_wq;
	spinlock_t ev_lock;		/* ev_list */
	struct list_head ev_list;
	struct work_struct ev_work;
	struct mutex cm_lock;		/* every cep and lep, and qp->cep */
	struct list_head leps;		/* listening cm_ids */
	atomic_t next_key;		/* STag keys, round robin */
	/* Doorbell pages of BAR 4 for direct contexts (rnic_ib_umap.c). */
	u32 udb_pages;
	struct ida udb_ida;
	bool dead;			/* unregistering: no more iw_cm events */
};

/* A direct context's doorbell page: udb = page + 1; 0: not direct. */
struct rnic_ib_umap;
struct rnic_ib_ucontext {
	struct ib_ucontext ibuc;
	u32 udb;
	struct rnic_ib_umap *udb_map;
};

struct rnic_ib_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

struct rnic_ib_mr {
	struct ib_mr ibmr;
	u32 stag;			/* as allocated: DEREG_MR names it */
	struct ib_umem *umem;		/* user MRs only */
	/* alloc_mr: the page list FAST_REG reads, filled by map_mr_sg */
	__le64 *pbl;
	dma_addr_t pbl_dma;
	u32 max_pages, npages;
	int access;			/* IB_ACCESS_*, for rereg */
	u32 flags;			/* RNIC_IB_MR_*, for rereg */
};

/* A window is the device's alone: ibmw.rkey is the STag it was made with. */
struct rnic_ib_mw {
	struct ib_mw ibmw;
};

/*
 * What a process maps (rnic_ib_umap.c): a ring's own pages, which live
 * until the mapping is gone and the entry removed, whichever is last; or
 * a doorbell page of BAR 4 (io), whose number is free again only then.
 */
struct rnic_ib_umap {
	struct rdma_user_mmap_entry rdma;
	void *va;
	size_t len;
	bool writable;			/* direct mode: the process writes */
	bool inserted;			/* an mmap entry: removal frees it */
	phys_addr_t io;			/* a doorbell page, or 0 */
	struct rnic_ib_dev *dev;	/* io: whose udb_ida */
	u32 udb;
};

struct rnic_ib_cq {
	struct ib_cq ibcq;
	u32 cqn;
	u8 vector;			/* MSI-X vector 1..7 */
	struct rnic_ring ring;
	struct rnic_ib_umap *umap;	/* user CQs: the ring's own pages */
	u32 *ucons;			/* user CQs: cons, for (direct: by) the
					 * process */
	bool direct;			/* the process polls (rnic-ib-uapi.h) */
	spinlock_t lock;		/* cons, and polling */
	u32 cons;			/* entries consumed (free-running) */
	u32 db_cons;			/* cons as last told to the device */
	bool armed;			/* req_notify_cq since the last call */
	bool arm_solicited;		/* for solicited or failed entries only */
	u32 arm_prod;			/* the first entry not yet written then */
};

/* An SRQ (rnic_ib_srq.c): wr_id tags, free in any order. */
struct rnic_ib_srq {
	struct ib_srq ibsrq;
	u32 srqn;
	struct rnic_ring ring;
	struct rnic_ib_umap *umap;	/* direct: the process posts */
	spinlock_t lock;		/* prod, the tables */
	u32 prod;			/* posted (free-running) */
	u64 *wr_id;			/* the consumer's, per tag */
	u32 *free, nfree;		/* a stack of free tags */
	u32 limit;			/* armed at; 0: not (modify_srq) */
};

struct rnic_ib_cep;

struct rnic_ib_qp {
	struct ib_qp ibqp;
	u32 qpn;
	struct rnic_ring sq, rq;
	struct rnic_ib_umap *sq_map, *rq_map;	/* direct: the process posts */
	spinlock_t sq_lock, rq_lock;
	u32 sq_prod, rq_prod;		/* posted (free-running) */
	u32 sq_done, rq_done;		/* completed, set by poll */
	u64 *sq_wr_id, *rq_wr_id;	/* the user's wr_id per slot */
	struct rnic_ib_srq *srq;	/* receives from it, no RQ */
	bool sig_all;
	enum ib_qp_state state;		/* as the verbs consumer set it */
	refcount_t ref;			/* iw_add_ref/iw_rem_ref, and ours */
	struct completion free;		/* the last reference is gone */
	struct rnic_ib_cep *cep;	/* under cm_lock */
	/* Under cm_lock too (rnic_ib_dv.c): */
	u32 rtr;			/* CONNECT/ACCEPT's rtr byte */
	u32 term_flags;			/* RNIC_IB_CONN_TERM_* */
	struct rnic_ib_term term_rx, term_tx;
};

/*
 * A send queue holds two WQEs for each work request it is sized for: an
 * RDMA Write with immediate data takes two (the Write, then the RFC 7306
 * Immediate Data message), and a consumer may post only those.
 */
#define RNIC_IB_SQ_WQES_PER_WR	2

/* A connection: the device's conn id and the iw_cm_id it reports to. */
enum rnic_ib_cep_state {
	RNIC_CEP_REQUEST,		/* passive: CONNECT_REQUEST delivered */
	RNIC_CEP_CONNECTING,		/* active: CONNECT sent */
	RNIC_CEP_ACCEPTING,		/* passive: ACCEPT sent */
	RNIC_CEP_ESTABLISHED,
	RNIC_CEP_DONE,			/* final event delivered */
};

struct rnic_ib_cep {
	u32 conn_id;
	enum rnic_ib_cep_state state;
	struct iw_cm_id *cm_id;		/* with a reference while set */
	struct rnic_ib_qp *qp;		/* with a reference while set */
	struct sockaddr_storage local, remote;	/* as the guest sees them */
	u8 ird, ord;
};

/* A listening iw_cm_id: one device listener per local address. */
#define RNIC_IB_LEP_MAX	8
struct rnic_ib_lep {
	struct list_head node;
	struct iw_cm_id *cm_id;
	int n;
	u32 ids[RNIC_IB_LEP_MAX];
	struct sockaddr_storage local[RNIC_IB_LEP_MAX];
};

static inline struct rnic_ib_dev *to_rdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct rnic_ib_dev, ibdev);
}

static inline struct rnic_ib_pd *to_rpd(struct ib_pd *pd)
{
	return container_of(pd, struct rnic_ib_pd, ibpd);
}

static inline struct rnic_ib_mr *to_rmr(struct ib_mr *mr)
{
	return container_of(mr, struct rnic_ib_mr, ibmr);
}

static inline struct rnic_ib_cq *to_rnic_ib_cq(struct ib_cq *cq)
{
	return container_of(cq, struct rnic_ib_cq, ibcq);
}

static inline struct rnic_ib_srq *to_rnic_ib_srq(struct ib_srq *srq)
{
	return container_of(srq, struct rnic_ib_srq, ibsrq);
}

static inline struct rnic_ib_qp *to_rnic_ib_qp(struct ib_qp *qp)
{
	return container_of(qp, struct rnic_ib_qp, ibqp);
}

/* A command naming one object, with its handle where its payload has it. */
int rnic_ib_cmd(struct rnic_ib_dev *dev, u8 opcode, const void *in,
		size_t len, struct rnic_cmd *out);
int rnic_ib_cmd_handle(struct rnic_ib_dev *dev, u8 opcode, u32 handle);

int rnic_ib_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int rnic_ib_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
struct ib_mr *rnic_ib_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *rnic_ib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				  u64 virt, int access, struct ib_udata *udata);
int rnic_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *rnic_ib_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			       u32 max_num_sg);
int rnic_ib_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg,
		      int sg_nents, unsigned int *sg_offset);
struct ib_mr *rnic_ib_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				    u64 length, u64 virt, int access,
				    struct ib_pd *ibpd, struct ib_udata *udata);
int rnic_ib_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int rnic_ib_dealloc_mw(struct ib_mw *ibmw);
int rnic_ib_fast_reg_wqe(const struct ib_reg_wr *wr, struct rnic_sq_wqe *w);

int rnic_ib_umap_ring(struct rnic_ib_dev *dev, struct rnic_ring *r, u32 log,
		      u32 esize, size_t extra, bool writable,
		      struct rnic_ib_umap **out);
void rnic_ib_umap_ring_free(struct rnic_ib_dev *dev, struct rnic_ring *r,
			    struct rnic_ib_umap *m);
int rnic_ib_umap_insert(struct ib_udata *udata, struct rnic_ib_umap *m,
			u64 *key);
struct rnic_ib_ucontext *rnic_ib_uctx(struct ib_udata *udata);
int rnic_ib_udb_get(struct rnic_ib_dev *dev, struct rnic_ib_ucontext *uc);
void rnic_ib_udb_put(struct rnic_ib_ucontext *uc);
int rnic_ib_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma);
void rnic_ib_mmap_free(struct rdma_user_mmap_entry *entry);

int rnic_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		      struct uverbs_attr_bundle *attrs);
int rnic_ib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int rnic_ib_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int rnic_ib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
void rnic_ib_cq_vector(struct rnic_ib_dev *dev, unsigned int vector);

int rnic_ib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		      struct ib_udata *udata);
int rnic_ib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		      struct ib_udata *udata);
int rnic_ib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		     struct ib_qp_init_attr *init);
int rnic_ib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int rnic_ib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		      const struct ib_send_wr **bad);
int rnic_ib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad);
void rnic_ib_rq_wqe(struct rnic_rq_wqe *w, const struct ib_recv_wr *wr,
		    u32 tag, u32 linked);
int rnic_ib_qp_error(struct rnic_ib_dev *dev, struct rnic_ib_qp *qp);
void rnic_ib_qp_get(struct ib_qp *ibqp);
void rnic_ib_qp_put(struct ib_qp *ibqp);
struct ib_qp *rnic_ib_get_qp(struct ib_device *ibdev, int qpn);
void rnic_ib_qp_async(struct rnic_ib_dev *dev, u32 qpn,
		      enum ib_event_type type);

int rnic_ib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		       struct ib_udata *udata);
int rnic_ib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int rnic_ib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		       enum ib_srq_attr_mask mask, struct ib_udata *udata);
int rnic_ib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int rnic_ib_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			  const struct ib_recv_wr **bad);
bool rnic_ib_srq_done(struct rnic_ib_srq *srq, u32 tag, u64 *wr_id);
void rnic_ib_srq_limit(struct rnic_ib_dev *dev, u32 srqn);

int rnic_ib_connect(struct iw_cm_id *cm_id, struct iw_cm_conn_param *p);
int rnic_ib_accept(struct iw_cm_id *cm_id, struct iw_cm_conn_param *p);
int rnic_ib_reject(struct iw_cm_id *cm_id, const void *pdata, u8 len);
int rnic_ib_create_listen(struct iw_cm_id *cm_id, int backlog);
int rnic_ib_destroy_listen(struct iw_cm_id *cm_id);
void rnic_ib_cm_event(struct rnic_ib_dev *dev, const struct rnic_event *ev);
void rnic_ib_cm_work(struct work_struct *work);
void rnic_ib_cm_qp_gone(struct rnic_ib_dev *dev, struct rnic_ib_qp *qp);
int rnic_ib_cm_disconnect(struct rnic_ib_dev *dev, struct rnic_ib_qp *qp,
			  bool abort);
void rnic_ib_cm_unplug(struct rnic_ib_dev *dev);
struct rnic_conn_info *rnic_ib_query_conn(struct rnic_ib_dev *dev,
					  u32 conn_id, u32 qpn,
					  dma_addr_t *dma,
					  struct rnic_cmd *out);
void rnic_ib_info_put(struct rnic_ib_dev *dev, struct rnic_conn_info *info,
		      dma_addr_t dma);

extern const struct uapi_definition rnic_ib_uapi_defs[];
void rnic_ib_qp_note_term(struct rnic_ib_qp *qp, bool received, u32 arg0,
			  u32 arg1);

int rnic_netdev_attach(struct rnic_ib_dev *dev);
void rnic_netdev_detach(struct rnic_ib_dev *dev);
const char *rnic_netdev_name(struct rnic_ib_dev *dev);

/* Older kernels' shapes of the ops above. */
#include "rnic_compat.h"

#endif /* RNIC_IB_H */
