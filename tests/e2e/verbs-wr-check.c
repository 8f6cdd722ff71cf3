// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * verbs-wr-check: librnic's ibv_wr_* send API end to end, between two
 * guests over rdma_cm (Debian's perftest does not use that API on rnic).
 *   verbs-wr-check -s ADDR PORT   server: a 4 KiB buffer the client may
 *                                 write and read, its address and rkey sent
 *                                 in a Send; then waits for "done"
 *   verbs-wr-check -c ADDR PORT   client: one ibv_wr_start..wr_complete
 *                                 batch of an RDMA Write, an RDMA Read of
 *                                 the same bytes back, and a Send of
 *                                 "done" as inline data, their completions
 *                                 read from an ibv_create_cq_ex CQ in one
 *                                 start_poll..end_poll session
 * Both check every byte; exit 0 and "verbs-wr-check: ok" when all is right.
 * Built against the guests' own libibverbs-dev and librdmacm-dev.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define BUF_LEN 4096

struct peer_buf {
	uint64_t addr;
	uint32_t rkey;
};

static struct ibv_cq_ex *client_cqx;	/* the client's send CQ */

static int fail(const char *what)
{
	fprintf(stderr, "verbs-wr-check: %s\n", what);
	return 1;
}

/* One completion, which must be a success with wr_id @want. */
static int wait_wc(struct ibv_cq *cq, uint64_t want)
{
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		;
	if (n < 0 || wc.status != IBV_WC_SUCCESS || wc.wr_id != want) {
		fprintf(stderr, "verbs-wr-check: wr_id %llu status %s, wanted %llu\n",
			(unsigned long long)wc.wr_id,
			ibv_wc_status_str(wc.status), (unsigned long long)want);
		return 1;
	}
	return 0;
}

/*
 * The three send completions of the client's batch, in one poll session
 * of an extended CQ: each a success of the WR and opcode expected, with
 * the QP's number and, for the Read, its length.
 */
static int wait_wcx(struct ibv_cq_ex *cqx, uint32_t qpn)
{
	static const enum ibv_wc_opcode op[] = {
		IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_SEND
	};
	struct ibv_poll_cq_attr attr = {};
	int ret, bad = 0;

	while ((ret = ibv_start_poll(cqx, &attr)) == ENOENT)
		;
	if (ret)
		return fail("ibv_start_poll failed");
	for (unsigned int i = 0; i < 3; i++) {
		while (i && (ret = ibv_next_poll(cqx)) == ENOENT)
			;
		if (ret || cqx->status != IBV_WC_SUCCESS ||
		    cqx->wr_id != i + 1 || ibv_wc_read_opcode(cqx) != op[i] ||
		    ibv_wc_read_qp_num(cqx) != qpn ||
		    (i == 1 && ibv_wc_read_byte_len(cqx) != BUF_LEN)) {
			fprintf(stderr, "verbs-wr-check: cq_ex completion %u: wr_id %llu status %s\n",
				i, (unsigned long long)cqx->wr_id,
				ibv_wc_status_str(cqx->status));
			bad = 1;
			break;
		}
	}
	ibv_end_poll(cqx);
	return bad;
}

static struct rdma_cm_id *endpoint(const char *addr, const char *port,
				   int passive, int wr_api)
{
	struct rdma_addrinfo hints = {
		.ai_port_space = RDMA_PS_TCP,
		.ai_flags = passive ? RAI_PASSIVE : 0,
	};
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 16 },
		.sq_sig_all = 1,
	};
	struct rdma_addrinfo *res;
	struct rdma_cm_id *id;

	if (rdma_getaddrinfo(addr, port, &hints, &res))
		return NULL;
	if (rdma_create_ep(&id, res, NULL, passive ? &attr : NULL))
		id = NULL;
	rdma_freeaddrinfo(res);
	if (id && !passive) {
		struct ibv_cq_init_attr_ex cqa = {
			.cqe = 16,
			.wc_flags = IBV_WC_EX_WITH_BYTE_LEN |
				    IBV_WC_EX_WITH_QP_NUM,
		};
		struct ibv_qp_init_attr_ex ex = {
			.cap = attr.cap,
			.sq_sig_all = 1,
			.qp_type = IBV_QPT_RC,
			.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.send_ops_flags = IBV_QP_EX_WITH_SEND |
					  IBV_QP_EX_WITH_RDMA_WRITE |
					  IBV_QP_EX_WITH_RDMA_READ,
		};
		struct ibv_cq_ex *cqx = ibv_create_cq_ex(id->verbs, &cqa);

		/* The send CQ an extended one; rdma_cm makes the other. */
		if (cqx)
			ex.send_cq = ibv_cq_ex_to_cq(cqx);
		client_cqx = cqx;
		if (!wr_api || !cqx || rdma_create_qp_ex(id, &ex)) {
			rdma_destroy_ep(id);
			id = NULL;
		}
	}
	return id;
}

static int server(const char *addr, const char *port)
{
	struct rdma_cm_id *listen_id, *id;
	char *buf = malloc(BUF_LEN), done[16] = "";
	struct peer_buf pb;
	struct ibv_mr *mr, *dmr, *pmr;
	int rc = 1;

	listen_id = endpoint(addr, port, 1, 0);
	if (!listen_id || rdma_listen(listen_id, 1))
		return fail("listen failed");
	if (rdma_get_request(listen_id, &id))
		return fail("no connection request");
	memset(buf, 'S', BUF_LEN);
	mr = ibv_reg_mr(id->pd, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	dmr = rdma_reg_msgs(id, done, sizeof(done));
	pmr = rdma_reg_msgs(id, &pb, sizeof(pb));
	if (!mr || !dmr || !pmr || rdma_post_recv(id, (void *)1, done,
						  sizeof(done), dmr))
		return fail("server setup failed");
	if (rdma_accept(id, NULL))
		return fail("accept failed");
	pb.addr = (uintptr_t)buf;
	pb.rkey = mr->rkey;
	if (rdma_post_send(id, (void *)2, &pb, sizeof(pb), pmr, 0) ||
	    wait_wc(id->send_cq, 2) || wait_wc(id->recv_cq, 1))
		goto out;
	if (strcmp(done, "done")) {
		fail("the client's Send is not \"done\"");
		goto out;
	}
	for (int i = 0; i < BUF_LEN; i++)
		if (buf[i] != (char)('a' + i % 26)) {
			fail("the RDMA Write did not land");
			goto out;
		}
	printf("verbs-wr-check: ok (server: Write landed, inline Send read)\n");
	rc = 0;
out:
	rdma_disconnect(id);
	return rc;
}

static int client(const char *addr, const char *port)
{
	struct rdma_cm_id *id = endpoint(addr, port, 0, 1);
	char *wbuf = malloc(BUF_LEN), *rbuf = calloc(1, BUF_LEN);
	struct ibv_mr *wmr, *rmr, *pmr;
	struct ibv_qp_ex *qpx;
	struct peer_buf pb;
	char done[] = "done";

	if (!id)
		return fail("no QP with the ibv_wr_* API");
	qpx = ibv_qp_to_qp_ex(id->qp);
	if (!qpx)
		return fail("ibv_qp_to_qp_ex: NULL");
	for (int i = 0; i < BUF_LEN; i++)
		wbuf[i] = 'a' + i % 26;
	wmr = rdma_reg_msgs(id, wbuf, BUF_LEN);
	rmr = rdma_reg_msgs(id, rbuf, BUF_LEN);
	pmr = rdma_reg_msgs(id, &pb, sizeof(pb));
	if (!wmr || !rmr || !pmr ||
	    rdma_post_recv(id, (void *)9, &pb, sizeof(pb), pmr))
		return fail("client setup failed");
	if (rdma_connect(id, NULL))
		return fail("connect failed");
	if (wait_wc(id->recv_cq, 9))
		return 1;

	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	ibv_wr_rdma_write(qpx, pb.rkey, pb.addr);
	ibv_wr_set_sge(qpx, wmr->lkey, (uintptr_t)wbuf, BUF_LEN);
	qpx->wr_id = 2;
	ibv_wr_rdma_read(qpx, pb.rkey, pb.addr);
	ibv_wr_set_sge(qpx, rmr->lkey, (uintptr_t)rbuf, BUF_LEN);
	qpx->wr_id = 3;
	ibv_wr_send(qpx);
	ibv_wr_set_inline_data(qpx, done, sizeof(done));
	/* Inline: the bytes are taken now, the buffer is the caller's again. */
	strcpy(done, "XXXX");
	if (ibv_wr_complete(qpx))
		return fail("ibv_wr_complete failed");
	if (wait_wcx(client_cqx, id->qp->qp_num))
		return 1;
	if (memcmp(rbuf, wbuf, BUF_LEN))
		return fail("the RDMA Read did not return the written bytes");
	printf("verbs-wr-check: ok (client: Write, Read, inline Send in one batch; completions from an ibv_cq_ex)\n");
	rdma_disconnect(id);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "-s"))
		return server(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "-c"))
		return client(argv[2], argv[3]);
	fprintf(stderr, "usage: verbs-wr-check -s|-c ADDR PORT\n");
	return 2;
}
