/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnicdv: what the rnic device can do beyond the common verbs, for programs
 * that know they run on it (as mlx5dv.h and efadv.h are for theirs).  Link
 * with -lrnic; every call first checks the object is rnic's and returns
 * EOPNOTSUPP (or NULL with errno so) if not.  docs/driver-guide.md
 * "rnicdv" says more.
 */
#ifndef RNICDV_H
#define RNICDV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Whether @device is an rnic. */
bool rnicdv_is_supported(struct ibv_device *device);

/*
 * How a region's STag may be invalidated.  ibv_reg_mr's regions are
 * persistent: only deregistration ends them.
 */
enum rnicdv_mr_flags {
	/* Invalid after the first remote Write, Read or atomic on it. */
	RNICDV_MR_ONE_SHOT = 1 << 0,
	/* A peer's Send with Invalidate naming it may end it. */
	RNICDV_MR_REMOTE_INV = 1 << 1,
};

struct ibv_mr *rnicdv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			     int access, uint32_t flags);

/*
 * One receive (@wr->next must be NULL) whose use invalidates @stag, the
 * rkey of a region or window: the peer may use the STag until a message
 * lands in this receive, then no more (the receive's completion does not
 * say so: only a peer's Send with Invalidate is reported there).  A
 * flushed receive leaves the STag valid.  Needs librnic's direct mode.
 */
int rnicdv_post_recv_linked(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			    uint32_t stag, struct ibv_recv_wr **bad_wr);

/* RFC 6581 peer-to-peer mode: the ready-to-receive message types. */
enum rnicdv_rtr {
	RNICDV_RTR_SEND = 1 << 0,	/* zero-length Send */
	RNICDV_RTR_WRITE = 1 << 1,	/* zero-length RDMA Write */
	RNICDV_RTR_READ = 1 << 2,	/* zero-length RDMA Read */
	RNICDV_RTR_DEVICE = 1 << 7,	/* the device's properties decide */
};

/*
 * The RTR types the QP's next connection offers (rdma_connect) or takes
 * if the peer asks (rdma_accept); 0: client-server mode only.  Until
 * called, or with RNICDV_RTR_DEVICE, the device's mpa-p2p and mpa-rtr
 * properties decide.
 */
int rnicdv_modify_qp_rtr(struct ibv_qp *qp, uint32_t rtr);

enum rnicdv_conn_flags {
	RNICDV_CONN_LIVE = 1 << 0,	/* connected: mpa_rev to pdata hold */
	RNICDV_CONN_CRC = 1 << 1,	/* MPA CRC32c in use */
	RNICDV_CONN_MARKERS_TX = 1 << 2,	/* we insert MPA markers */
	RNICDV_CONN_MARKERS_RX = 1 << 3,	/* the peer does */
	RNICDV_CONN_TERM_RX = 1 << 4,	/* term_rx holds a Terminate */
	RNICDV_CONN_TERM_TX = 1 << 5,	/* term_tx holds a Terminate */
};

/* A Terminate message (RFC 5040 §7): where and why. */
struct rnicdv_term {
	uint8_t layer;			/* 0 RDMAP, 1 DDP, 2 LLP (MPA) */
	uint8_t etype;			/* error type */
	uint8_t ecode;			/* error code */
};

#define RNICDV_PDATA_MAX 512

struct rnicdv_conn {
	uint32_t flags;			/* RNICDV_CONN_* */
	uint8_t mpa_rev;		/* 1 or 2 */
	uint8_t rtr;			/* the RNICDV_RTR_* type agreed, 0:
					 * client-server mode */
	uint8_t peer_rtr;		/* the types the peer's Request offered
					 * (peer_p2p) */
	bool peer_p2p;			/* the peer's Request asked for
					 * peer-to-peer mode */
	uint16_t ird, ord;		/* the peer's, from RFC 6581 data */
	uint16_t pdata_len;		/* the peer's private data */
	/* The last Terminate the QP received and sent; they stay after the
	 * connection ends. */
	struct rnicdv_term term_rx, term_tx;
	uint8_t pdata[RNICDV_PDATA_MAX];
};

/* What the QP's connection agreed, and the Terminates it saw. */
int rnicdv_query_conn(struct ibv_qp *qp, struct rnicdv_conn *conn);

#ifdef __cplusplus
}
#endif

#endif /* RNICDV_H */
