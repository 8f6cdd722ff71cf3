// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * verbs-abi-check: the parts of librnic whose correctness depends on the
 * provider agreeing with the guest's libibverbs about struct layouts
 * (librnic is built in a newer rdma-core's source than the guests run,
 * tests/e2e/lib/librnic.sh).  Debian's perftest does not use the ibv_wr_*
 * API on rnic (it enables it only for a few vendors' devices), so nothing
 * else would notice a QP whose VERBS_QP_EX flag the library cannot see.
 * Built against the guests' own libibverbs-dev headers and library; runs
 * in the guest, prints what it found, exits non-zero on the first failure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <infiniband/verbs.h>
#include <rnic/rnic-abi.h>

static int fail(const char *what)
{
	fprintf(stderr, "verbs-abi-check: %s\n", what);
	return 1;
}

/* A QP with the ibv_wr_* API must be visible as one to the library. */
static int check_qp_ex(struct ibv_context *ctx, struct ibv_pd *pd,
		       struct ibv_cq *cq)
{
	struct ibv_qp_init_attr_ex attr = {
		.qp_type = IBV_QPT_RC,
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND |
				  IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_RDMA_READ,
	};
	struct ibv_qp_ex *qpx;
	struct ibv_qp *qp;
	int rc = 0;

	qp = ibv_create_qp_ex(ctx, &attr);
	if (!qp)
		return fail("ibv_create_qp_ex with send_ops_flags failed");
	qpx = ibv_qp_to_qp_ex(qp);
	if (!qpx)
		rc = fail("ibv_qp_to_qp_ex: NULL (the library does not see VERBS_QP_EX)");
	else if (!qpx->wr_start || !qpx->wr_send || !qpx->wr_rdma_write ||
		 !qpx->wr_rdma_read || !qpx->wr_set_sge || !qpx->wr_complete)
		rc = fail("ibv_qp_ex: an ibv_wr_* function is missing");
	else
		printf("verbs-abi-check: qp 0x%x has the ibv_wr_* API\n",
		       qp->qp_num);
	if (ibv_destroy_qp(qp))
		rc = fail("ibv_destroy_qp failed");
	return rc;
}

static int check_port(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;

	/* Guard bytes after the caller's struct must stay untouched. */
	struct {
		struct ibv_port_attr pa;
		unsigned char guard[16];
	} s;

	memset(&s, 0xa5, sizeof(s));
	if (ibv_query_port(ctx, 1, &s.pa))
		return fail("ibv_query_port failed");
	for (size_t i = 0; i < sizeof(s.guard); i++)
		if (s.guard[i] != 0xa5)
			return fail("ibv_query_port wrote past struct ibv_port_attr");
	pa = s.pa;
	if (pa.state != IBV_PORT_ACTIVE)
		return fail("port 1 is not ACTIVE");
	printf("verbs-abi-check: port 1 ACTIVE, gid_tbl_len %d\n",
	       pa.gid_tbl_len);
	return 0;
}

/*
 * rnic only: what librnic maps of the uverbs file (guest-driver/
 * rnic-ib-uapi.h).  In direct mode (the default): the doorbell page,
 * write-only, and the CQ's ring writable, since the process consumes it.
 * With RNIC_DIRECT=0: no doorbell page, and the CQ's ring r--s, which the
 * driver refuses to make writable by mprotect() or a second mmap(): there
 * only the device and the kernel write it.
 */
static int uverbs_maps(char perms[][8], unsigned long *len,
		       unsigned long *lo, unsigned long *off, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long hi;
	char line[512];
	int n = 0;

	while (f && n < max && fgets(line, sizeof(line), f)) {
		if (strstr(line, "uverbs") &&
		    sscanf(line, "%lx-%lx %7s %lx", &lo[n], &hi, perms[n],
			   &off[n]) == 4) {
			len[n] = hi - lo[n];
			n++;
		}
	}
	if (f)
		fclose(f);
	return n;
}

static int check_ro_map(struct ibv_context *ctx, unsigned long lo,
			unsigned long len, unsigned long off)
{
	void *p;

	if (!mprotect((void *)lo, len, PROT_READ | PROT_WRITE))
		return fail("mprotect made the CQ ring writable");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
		 (off_t)off);
	if (p != MAP_FAILED)
		return fail("a writable mmap of the CQ ring succeeded");
	if (errno != EPERM)
		return fail("a writable mmap of the CQ ring: not EPERM");
	return 0;
}

static int check_maps(struct ibv_context *ctx, struct ibv_cq *cq)
{
	const char *env = getenv("RNIC_DIRECT");
	int direct = !env || strcmp(env, "0");
	unsigned long len[4], lo[4], off[4];
	char perms[4][8];
	int n = uverbs_maps(perms, len, lo, off, 4), i = 0;
	struct ibv_wc wc;

	/* Mapped later, the CQ ring is usually below the page: by perms. */
	if (direct) {
		if (n != 2)
			return fail("direct mode: not two uverbs mappings");
		i = !strcmp(perms[0], "-w-s");
		if (strcmp(perms[!i], "-w-s") || len[!i] != RNIC_UDB_PAGE_SIZE)
			return fail("direct mode: no doorbell page mapped -w-s");
		printf("verbs-abi-check: doorbell page mapped -w-s\n");
	} else if (n != 1) {
		return fail("CQ ring not mapped, or more than it");
	}
	if (strcmp(perms[i], direct ? "rw-s" : "r--s"))
		return fail("the CQ ring is mapped other than rw-s/r--s");
	if (!direct && check_ro_map(ctx, lo[i], len[i], off[i]))
		return 1;
	if (ibv_poll_cq(cq, 1, &wc))
		return fail("ibv_poll_cq of an empty CQ found an entry");
	printf("verbs-abi-check: cq ring mapped %s, %lu octets\n", perms[i],
	       len[i]);
	return 0;
}

/* What a busy poll of an empty CQ costs here (printed, not judged). */
static void time_empty_poll(struct ibv_cq *cq)
{
	struct timespec a, b;
	struct ibv_wc wc;
	int n = 20000;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++)
		ibv_poll_cq(cq, 1, &wc);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("verbs-abi-check: empty ibv_poll_cq %.0f ns\n",
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
}

/* The driver reports the device's PCI ids. */
static int is_rnic(struct ibv_context *ctx)
{
	struct ibv_device_attr a;

	return !ibv_query_device(ctx, &a) &&
	       a.vendor_id == RNIC_PCI_VENDOR_ID &&
	       a.vendor_part_id == RNIC_PCI_DEVICE_ID;
}

int main(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int n, rc;

	list = ibv_get_device_list(&n);
	if (!list || n < 1)
		return fail("no RDMA device");
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		return fail("ibv_open_device failed");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (!pd || !cq)
		return fail("ibv_alloc_pd or ibv_create_cq failed");
	time_empty_poll(cq);
	rc = check_port(ctx) || check_qp_ex(ctx, pd, cq) ||
	     (is_rnic(ctx) && check_maps(ctx, cq));
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	if (!rc)
		printf("verbs-abi-check: ok\n");
	return rc;
}
