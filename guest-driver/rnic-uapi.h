/* SPDX-License-Identifier: GPL-2.0-or-later WITH Linux-syscall-note */
/*
 * The ioctl interface of /dev/rnicN, shared by the Linux driver
 * (guest-driver/linux) and user programs (guest-driver/tool).
 *
 * Objects carry the device's own numbers (pdn, STag, cqn, qpn, listener
 * and connection ids); the driver checks that each one belongs to the open
 * file that names it.  Work requests, completions, events and addresses
 * are the device's structures of include/rnic/rnic-abi.h, passed through
 * as they are: nothing here restates a device layout.
 *
 * Everything an open file created is destroyed when it is closed.
 */
#ifndef RNIC_UAPI_H
#define RNIC_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>
#ifndef __KERNEL__
#include <stdint.h>		/* for rnic-abi.h */
#endif
#include <rnic/rnic-abi.h>

#define RNIC_UAPI_VERSION	1

/* RNIC_IOC_CREATE_PD (out), RNIC_IOC_DESTROY_PD (in). */
struct rnic_u_pd {
	__u32 pdn;
	__u32 rsvd;
};

/*
 * RNIC_IOC_REG_MR: pins [addr, addr + length) of the caller and registers
 * it with tagged offsets equal to the virtual addresses (as verbs do).
 */
struct rnic_u_reg_mr {
	__u64 addr;			/* in: user virtual address */
	__u64 length;		/* in: bytes */
	__u32 pdn;			/* in */
	__u32 access;		/* in: RNIC_ACC_* */
	__u8  key;			/* in: low 8 bits of the STag */
	__u8  policy;		/* in: RNIC_MR_POLICY_* | flags */
	__u8  rsvd[2];
	__u32 stag;			/* out */
};

/* RNIC_IOC_DEREG_MR, RNIC_IOC_INVALIDATE (in). */
struct rnic_u_stag {
	__u32 stag;
	__u32 rsvd;
};

/* RNIC_IOC_CREATE_CQ (log_size in, cqn out), RNIC_IOC_DESTROY_CQ (cqn). */
struct rnic_u_cq {
	__u32 log_size;		/* log2(entries) */
	__u32 cqn;
};

/* RNIC_IOC_CREATE_QP (qpn out), RNIC_IOC_DESTROY_QP (qpn in). */
struct rnic_u_qp {
	__u32 pdn;
	__u32 send_cqn;
	__u32 recv_cqn;
	__u8  sq_log_size;		/* log2(send queue entries) */
	__u8  rq_log_size;		/* log2(receive queue entries) */
	__u16 rsvd;
	__u32 qpn;
	__u32 rsvd1;
};

/* RNIC_IOC_LISTEN (listener_id and the chosen port out), RNIC_IOC_UNLISTEN. */
struct rnic_u_listen {
	struct rnic_sockaddr local;
	__u32 backlog;
	__u32 listener_id;
};

/*
 * RNIC_IOC_CONNECT (qpn, peer, ird/ord, private data in; conn_id out),
 * RNIC_IOC_ACCEPT (conn_id, qpn, ird/ord, private data),
 * RNIC_IOC_REJECT (conn_id, private data).
 */
struct rnic_u_conn {
	__u32 qpn;
	__u32 conn_id;
	struct rnic_sockaddr peer;
	__u16 ird;
	__u16 ord;
	__u16 pdata_len;		/* <= RNIC_MAX_PDATA */
	__u8  rtr;			/* RNIC_RTR_* (rnic-abi.h), 0: mpa-rtr */
	__u8  rsvd;
	__u64 pdata;			/* user pointer */
};

/*
 * RNIC_IOC_QUERY_CONN: struct rnic_conn_info written to @info; out, the
 * RFC 6581 RTR type agreed and what the peer's Request offered.
 */
struct rnic_u_query_conn {
	__u32 conn_id;
	__u8  rtr;
	__u8  peer_rtr;
	__u16 rsvd;
	__u64 info;			/* user pointer */
};

/*
 * RNIC_IOC_POST_SEND (struct rnic_sq_wqe[]), RNIC_IOC_POST_RECV
 * (struct rnic_rq_wqe[]): @count entries in; out, how many were posted
 * (fewer when the queue is full: poll the CQ and post the rest).
 */
struct rnic_u_post {
	__u32 qpn;
	__u32 count;
	__u64 wqes;			/* user pointer */
};

/*
 * RNIC_IOC_POLL_CQ: up to @count struct rnic_cq_entry into @cqes; out,
 * how many.  With @timeout_ms the call sleeps until at least one entry is
 * there (the CQ is armed), or returns 0 entries when the time is up.
 * Send work requests posted without RNIC_WQE_FLAG_SIGNALED produce no
 * entry unless they fail, as in verbs.
 */
struct rnic_u_poll {
	__u32 cqn;
	__u32 count;
	__u64 cqes;			/* user pointer */
	__u32 timeout_ms;
	__u32 rsvd;
};

/*
 * RNIC_IOC_GET_EVENT: the next event for this file (connection requests
 * on its listeners, its QPs' and CQs' events, FATAL), waiting up to
 * @timeout_ms.  -ETIMEDOUT when none came.  @lost counts events dropped
 * because the file's queue was full.
 */
struct rnic_u_event {
	__u32 timeout_ms;
	__u32 lost;
	struct rnic_event ev;
};

#define RNIC_IOC_MAGIC		'R'
#define RNIC_IOC_QUERY_DEVICE	_IOR(RNIC_IOC_MAGIC, 0x00, struct rnic_device_attr)
#define RNIC_IOC_CREATE_PD	_IOR(RNIC_IOC_MAGIC, 0x01, struct rnic_u_pd)
#define RNIC_IOC_DESTROY_PD	_IOW(RNIC_IOC_MAGIC, 0x02, struct rnic_u_pd)
#define RNIC_IOC_REG_MR		_IOWR(RNIC_IOC_MAGIC, 0x03, struct rnic_u_reg_mr)
#define RNIC_IOC_DEREG_MR	_IOW(RNIC_IOC_MAGIC, 0x04, struct rnic_u_stag)
#define RNIC_IOC_INVALIDATE	_IOW(RNIC_IOC_MAGIC, 0x05, struct rnic_u_stag)
#define RNIC_IOC_CREATE_CQ	_IOWR(RNIC_IOC_MAGIC, 0x06, struct rnic_u_cq)
#define RNIC_IOC_DESTROY_CQ	_IOW(RNIC_IOC_MAGIC, 0x07, struct rnic_u_cq)
#define RNIC_IOC_CREATE_QP	_IOWR(RNIC_IOC_MAGIC, 0x08, struct rnic_u_qp)
#define RNIC_IOC_DESTROY_QP	_IOW(RNIC_IOC_MAGIC, 0x09, struct rnic_u_qp)
#define RNIC_IOC_MODIFY_QP	_IOW(RNIC_IOC_MAGIC, 0x0a, struct rnic_cmd_modify_qp)
#define RNIC_IOC_QUERY_QP	_IOWR(RNIC_IOC_MAGIC, 0x0b, struct rnic_cmd_query_qp)
#define RNIC_IOC_LISTEN		_IOWR(RNIC_IOC_MAGIC, 0x0c, struct rnic_u_listen)
#define RNIC_IOC_UNLISTEN	_IOW(RNIC_IOC_MAGIC, 0x0d, struct rnic_u_listen)
#define RNIC_IOC_CONNECT	_IOWR(RNIC_IOC_MAGIC, 0x0e, struct rnic_u_conn)
#define RNIC_IOC_ACCEPT		_IOW(RNIC_IOC_MAGIC, 0x0f, struct rnic_u_conn)
#define RNIC_IOC_REJECT		_IOW(RNIC_IOC_MAGIC, 0x10, struct rnic_u_conn)
#define RNIC_IOC_DISCONNECT	_IOW(RNIC_IOC_MAGIC, 0x11, struct rnic_cmd_disconnect)
#define RNIC_IOC_QUERY_CONN	_IOWR(RNIC_IOC_MAGIC, 0x12, struct rnic_u_query_conn)
#define RNIC_IOC_POST_SEND	_IOWR(RNIC_IOC_MAGIC, 0x13, struct rnic_u_post)
#define RNIC_IOC_POST_RECV	_IOWR(RNIC_IOC_MAGIC, 0x14, struct rnic_u_post)
#define RNIC_IOC_POLL_CQ	_IOWR(RNIC_IOC_MAGIC, 0x15, struct rnic_u_poll)
#define RNIC_IOC_GET_EVENT	_IOWR(RNIC_IOC_MAGIC, 0x16, struct rnic_u_event)

#endif /* RNIC_UAPI_H */
