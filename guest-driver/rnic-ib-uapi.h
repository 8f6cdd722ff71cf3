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

#endif /* RNIC_IB_UAPI_H */
