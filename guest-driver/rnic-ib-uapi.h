/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the kernel driver's ib_device and librnic pass each other beyond
 * the uverbs commands (driver data of the commands and their responses).
 * Both sides build from this header.
 *
 * A user CQ's ring is mapped into the process, followed by one page whose
 * first 32-bit word is the count of entries consumed.
 *
 * Direct mode (docs/driver-guide.md "Direct mode"): a
 * process that asks for it in ALLOC_UCONTEXT and gets a doorbell page
 * writes its own WQEs into its QPs' rings, rings them through that page,
 * and consumes its own CQEs: posting and polling make no system call.
 * Only req_notify_cq still goes through the kernel (it keeps the arm
 * state its interrupt handler needs).  In direct mode:
 *  - a CQ's ring and page are mapped writable; the process writes its
 *    consumer count into the page's first word after each poll (the kernel
 *    reads it when arming and in the interrupt) and tells the device with
 *    DB_CQ through its page at least every half ring;
 *  - a QP's rings are mapped writable; a WQE's wr_id is the process's own
 *    index of its slot (the kernel's POST_SEND, POST_RECV and POLL_CQ
 *    refuse direct objects with EINVAL).
 * Without a page (an older librnic, or every page taken), everything goes
 * through the kernel as before and the CQ mapping is read-only.
 */
#ifndef RNIC_IB_UAPI_H
#define RNIC_IB_UAPI_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

#define RNIC_IB_DIRECT		(1u << 0)

struct rnic_ib_alloc_ucontext_req {
	__u32 flags;			/* RNIC_IB_DIRECT: asked for */
	__u32 rsvd;
};

struct rnic_ib_alloc_ucontext_resp {
	__aligned_u64 udb_key;		/* mmap() offset of the doorbell page */
	__u32 udb_len;			/* 0: no page, no direct mode */
	__u32 flags;			/* RNIC_IB_DIRECT: granted */
};

struct rnic_ib_create_cq_resp {
	__aligned_u64 mmap_key;		/* the mmap() offset */
	__u32 mmap_len;			/* the ring, then the page; 0: no map */
	__u32 log_size;			/* the ring holds 1 << log_size CQEs */
	__u32 cqn;			/* the device's number, for DB_CQ */
	__u32 flags;			/* RNIC_IB_DIRECT */
};

struct rnic_ib_create_qp_resp {
	__aligned_u64 sq_key;		/* mmap() offsets of the rings */
	__aligned_u64 rq_key;
	__u32 sq_len, rq_len;		/* bytes to map */
	__u32 sq_log_size, rq_log_size;	/* 1 << n WQEs of 128 bytes */
	__u32 flags;			/* RNIC_IB_DIRECT; 0: kernel posts */
	__u32 rsvd;
};

/*
 * A direct SRQ's ring, which the process posts to through its doorbell
 * page (DB_SRQ); the tags that stand for its wr_ids are the process's
 * own.  flags 0: the kernel posts and the process's CQs are the kernel's.
 */
struct rnic_ib_create_srq_resp {
	__aligned_u64 srq_key;		/* mmap() offset of the ring */
	__u32 srq_len;			/* bytes to map */
	__u32 log_size;			/* 1 << n WQEs of 128 bytes */
	__u32 srqn;			/* the device's number, for DB_SRQ */
	__u32 flags;			/* RNIC_IB_DIRECT */
};

/*
 * reg_mr's driver data (rnicdv_reg_mr): how the region's STag may be
 * invalidated.  Without it (ibv_reg_mr) a region is persistent and only a
 * local invalidate ends it.
 */
#define RNIC_IB_MR_ONE_SHOT	(1u << 0)	/* invalid after one remote
						 * Write, Read or atomic */
#define RNIC_IB_MR_REMOTE_INV	(1u << 1)	/* Send with Invalidate may
						 * end it */

struct rnic_ib_reg_mr_req {
	__u32 flags;			/* RNIC_IB_MR_* */
	__u32 rsvd;
};

/*
 * rnic's own methods on a QP (uverbs ioctl, driver namespace): the RTR
 * type its connection offers or takes, and what its connection agreed.
 */
enum rnic_ib_qp_methods {
	RNIC_IB_METHOD_QP_SET_RTR = (1U << UVERBS_ID_NS_SHIFT),
	RNIC_IB_METHOD_QP_QUERY_CONN,
};

enum rnic_ib_qp_set_rtr_attrs {
	RNIC_IB_ATTR_SET_RTR_QP = (1U << UVERBS_ID_NS_SHIFT),
	RNIC_IB_ATTR_SET_RTR_VALUE,	/* u32: CONNECT/ACCEPT's rtr byte
					 * (rnic-abi.h RNIC_RTR_*); 0: the
					 * device's properties decide */
};

enum rnic_ib_qp_query_conn_attrs {
	RNIC_IB_ATTR_QUERY_CONN_QP = (1U << UVERBS_ID_NS_SHIFT),
	RNIC_IB_ATTR_QUERY_CONN_RESP,	/* struct rnic_ib_conn */
};

#define RNIC_IB_CONN_LIVE	(1u << 0)	/* connected: all below */
#define RNIC_IB_CONN_CRC	(1u << 1)	/* MPA CRC32c in use */
#define RNIC_IB_CONN_MARKERS_TX	(1u << 2)	/* we insert MPA markers */
#define RNIC_IB_CONN_MARKERS_RX	(1u << 3)	/* the peer inserts them */
#define RNIC_IB_CONN_TERM_RX	(1u << 4)	/* term_rx is valid */
#define RNIC_IB_CONN_TERM_TX	(1u << 5)	/* term_tx is valid */

/* A Terminate (RFC 5040 §7): its layer, error type and error code. */
struct rnic_ib_term {
	__u8 layer;			/* 0 RDMAP, 1 DDP, 2 LLP (MPA) */
	__u8 etype;
	__u8 ecode;
	__u8 rsvd;
};

struct rnic_ib_conn {
	__u32 flags;			/* RNIC_IB_CONN_* */
	__u8 mpa_rev;			/* 1 or 2 */
	__u8 rtr;			/* RNIC_RTR_* type agreed, 0: none */
	__u8 peer_rtr;			/* RNIC_RTR_P2P | types offered, when
					 * the peer's Request asked */
	__u8 rsvd;
	__u16 ird, ord;			/* the peer's, RFC 6581 */
	__u16 pdata_len;
	__u16 rsvd1;
	/* The last Terminate the QP received and sent, connected or not. */
	struct rnic_ib_term term_rx, term_tx;
	__u8 pdata[512];		/* the peer's MPA private data */
};

#endif /* RNIC_IB_UAPI_H */
