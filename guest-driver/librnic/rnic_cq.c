// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * CQs.  When the kernel driver offers a CQ's ring (rnic-ib-uapi.h), it is
 * mapped read-only and a poll first looks at the entry after the driver's
 * consumer count itself: the POLL_CQ system call, which consumes and
 * translates entries, is made only once the device has written one.
 * Under TCG a guest system call costs microseconds, and a busy poll of an
 * empty CQ (perftest, rping) made one per look.
 */
#include <config.h>

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "rnic.h"

struct rnic_cq {
	struct ibv_cq ibcq;
	const uint8_t *ring;		/* NULL: every poll is a system call */
	const uint32_t *cons;		/* the page after the ring */
	size_t map_len;
	uint32_t log_size;
};

static struct rnic_cq *to_rcq(struct ibv_cq *cq)
{
	return container_of(cq, struct rnic_cq, ibcq);
}

struct ibv_cq *rnic_create_cq(struct ibv_context *ctx, int cqe,
			      struct ibv_comp_channel *channel, int vector)
{
	struct {
		struct ib_uverbs_create_cq_resp ibv;
		struct rnic_ib_create_cq_resp drv;
	} resp = {};
	struct ibv_create_cq cmd;
	struct rnic_cq *cq = calloc(1, sizeof(*cq));
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	if (!cq)
		return NULL;
	if (ibv_cmd_create_cq(ctx, cqe, channel, vector, &cq->ibcq, &cmd,
			      sizeof(cmd), &resp.ibv, sizeof(resp))) {
		free(cq);
		return NULL;
	}
	/* An older driver, or no mapping: every poll asks the kernel. */
	if (!resp.drv.mmap_len || resp.drv.mmap_len <= page)
		return &cq->ibcq;
	p = mmap(NULL, resp.drv.mmap_len, PROT_READ, MAP_SHARED, ctx->cmd_fd,
		 resp.drv.mmap_key);
	if (p == MAP_FAILED)
		return &cq->ibcq;
	cq->ring = p;
	cq->map_len = resp.drv.mmap_len;
	cq->cons = (const uint32_t *)(cq->ring + cq->map_len - page);
	cq->log_size = resp.drv.log_size;
	return &cq->ibcq;
}

int rnic_destroy_cq(struct ibv_cq *ibcq)
{
	struct rnic_cq *cq = to_rcq(ibcq);
	int ret = ibv_cmd_destroy_cq(ibcq);

	if (ret)
		return ret;
	if (cq->ring)
		munmap((void *)cq->ring, cq->map_len);
	free(cq);
	return 0;
}

/* Has the device written the entry the driver will consume next? */
static int rnic_cq_ready(const struct rnic_cq *cq)
{
	uint32_t cons = __atomic_load_n(cq->cons, __ATOMIC_ACQUIRE);
	uint32_t mask = (1u << cq->log_size) - 1;
	const struct rnic_cq_entry *e = (const void *)(cq->ring +
		(size_t)(cons & mask) * RNIC_CQE_SIZE);
	uint8_t phase = ((cons >> cq->log_size) & 1) ^ 1;

	return (__atomic_load_n(&e->phase, __ATOMIC_ACQUIRE) & 1) == phase;
}

int rnic_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc)
{
	struct rnic_cq *cq = to_rcq(ibcq);

	if (cq->ring && !rnic_cq_ready(cq))
		return 0;
	return ibv_cmd_poll_cq(ibcq, num, wc);
}
