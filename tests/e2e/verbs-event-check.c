// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * verbs-event-check: completion events, between two guests over rdma_cm.
 * librdmacm gives a QP a send CQ and a receive CQ with a completion
 * channel each, both on completion vector 0, so the device interrupts
 * both on one MSI-X vector.  The client checks that an interrupt for the
 * send CQ brings no event on the receive CQ unless it has a new entry its
 * arm asked for:
 *  1. armed for solicited entries, an unsolicited one must not wake it,
 *     nor a send completion after it; a solicited one does;
 *  2. armed after its entry was taken (perftest -e's order: wait, ack,
 *     arm, poll once), a later send completion must not wake it.
 *   verbs-event-check -s ADDR PORT   server: answers each one-byte
 *                                    message: 'u' with an unsolicited
 *                                    Send, 's' with a solicited one, 'n'
 *                                    with nothing; 'd' ends it
 *   verbs-event-check -c ADDR PORT   client: the checks
 * Exit 0 and "verbs-event-check: ok" when all is right.
 */
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define DEPTH 8
#define QUIET_MS 300            /* no event within this: none is coming */
#define WAIT_MS 10000

static int fail(const char *what)
{
	fprintf(stderr, "verbs-event-check: %s\n", what);
	return 1;
}

/* One completion, a success, or -1; busy polling. */
static int take_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0)
		;
	return n == 1 && wc->status == IBV_WC_SUCCESS ? 0 : -1;
}

/* An event on @ch within @ms: 1 (acked), 0 none, -1 error. */
static int event(struct ibv_comp_channel *ch, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;
	int n = poll(&p, 1, ms);

	if (n <= 0)
		return n;
	if (ibv_get_cq_event(ch, &cq, &ctx))
		return -1;
	ibv_ack_cq_events(cq, 1);
	return 1;
}

static struct rdma_cm_id *endpoint(const char *addr, const char *port,
				   int passive)
{
	struct rdma_addrinfo hints = {
		.ai_port_space = RDMA_PS_TCP,
		.ai_flags = passive ? RAI_PASSIVE : 0,
	};
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
	};
	struct rdma_addrinfo *res;
	struct rdma_cm_id *id;

	if (rdma_getaddrinfo(addr, port, &hints, &res))
		return NULL;
	if (rdma_create_ep(&id, res, NULL, &attr))
		id = NULL;
	rdma_freeaddrinfo(res);
	return id;
}

static int server(const char *addr, const char *port)
{
	struct rdma_cm_id *listen_id, *id;
	char in[DEPTH], out = 'r';
	struct ibv_mr *imr, *omr;
	struct ibv_wc wc;

	listen_id = endpoint(addr, port, 1);
	if (!listen_id || rdma_listen(listen_id, 1))
		return fail("listen failed");
	if (rdma_get_request(listen_id, &id))
		return fail("no connection request");
	imr = rdma_reg_msgs(id, in, sizeof(in));
	omr = rdma_reg_msgs(id, &out, 1);
	if (!imr || !omr)
		return fail("server setup failed");
	for (int i = 0; i < DEPTH; i++)
		if (rdma_post_recv(id, (void *)(uintptr_t)i, in + i, 1, imr))
			return fail("server post_recv failed");
	if (rdma_accept(id, NULL))
		return fail("accept failed");
	for (;;) {
		int i;
		char c;

		if (take_wc(id->recv_cq, &wc))
			return fail("server receive failed");
		i = (int)wc.wr_id;
		c = in[i];
		if (rdma_post_recv(id, (void *)(uintptr_t)i, in + i, 1, imr))
			return fail("server post_recv failed");
		if (c == 'd')
			break;
		if (c == 'n')
			continue;
		if (rdma_post_send(id, NULL, &out, 1, omr,
				   c == 's' ? IBV_SEND_SOLICITED : 0) ||
		    take_wc(id->send_cq, &wc))
			return fail("server send failed");
	}
	printf("verbs-event-check: ok (server)\n");
	rdma_disconnect(id);
	return 0;
}

struct client {
	struct rdma_cm_id *id;
	struct ibv_mr *omr, *imr;
	char out, in[DEPTH];
};

/* Sends @c; its completion interrupts the send CQ, armed first. */
static int say(struct client *cl, char c)
{
	struct ibv_wc wc;

	cl->out = c;
	if (ibv_req_notify_cq(cl->id->send_cq, 0) ||
	    rdma_post_send(cl->id, NULL, &cl->out, 1, cl->omr, 0))
		return fail("post_send failed");
	if (event(cl->id->send_cq_channel, WAIT_MS) != 1)
		return fail("no event for the send completion");
	return take_wc(cl->id->send_cq, &wc) ? fail("send failed") : 0;
}

/* The next receive completion, busy polled, reposted. */
static int heard(struct client *cl)
{
	struct ibv_wc wc;
	int i;

	if (take_wc(cl->id->recv_cq, &wc))
		return fail("receive failed");
	i = (int)wc.wr_id;
	return rdma_post_recv(cl->id, (void *)(uintptr_t)i, cl->in + i, 1,
			      cl->imr) ? fail("post_recv failed") : 0;
}

static int quiet(struct client *cl, const char *what)
{
	int n = event(cl->id->recv_cq_channel, QUIET_MS);

	if (n == 0)
		return 0;
	fprintf(stderr, "verbs-event-check: %s: %s\n", what,
		n > 0 ? "a spurious event on the receive CQ" : "poll failed");
	return 1;
}

static int client(const char *addr, const char *port)
{
	struct client cl = { .id = endpoint(addr, port, 0) };
	struct rdma_cm_id *id = cl.id;

	if (!id || !id->recv_cq_channel || !id->send_cq_channel)
		return fail("no endpoint with completion channels");
	cl.omr = rdma_reg_msgs(id, &cl.out, 1);
	cl.imr = rdma_reg_msgs(id, cl.in, sizeof(cl.in));
	if (!cl.omr || !cl.imr)
		return fail("client setup failed");
	for (int i = 0; i < DEPTH; i++)
		if (rdma_post_recv(id, (void *)(uintptr_t)i, cl.in + i, 1,
				   cl.imr))
			return fail("client post_recv failed");
	if (rdma_connect(id, NULL))
		return fail("connect failed");

	/* 1: armed for solicited entries (never armed before). */
	if (ibv_req_notify_cq(id->recv_cq, 1) || say(&cl, 'u') ||
	    heard(&cl) || say(&cl, 'n') ||
	    quiet(&cl, "armed for solicited, an unsolicited entry came"))
		return 1;
	if (say(&cl, 's'))
		return 1;
	if (event(id->recv_cq_channel, WAIT_MS) != 1)
		return fail("no event for a solicited receive completion");
	if (heard(&cl))
		return 1;

	/* 2: wait, ack, arm, take: the send completion is not ours. */
	if (ibv_req_notify_cq(id->recv_cq, 0) || say(&cl, 'u'))
		return 1;
	if (event(id->recv_cq_channel, WAIT_MS) != 1)
		return fail("no event for the receive completion");
	if (ibv_req_notify_cq(id->recv_cq, 0) || heard(&cl) ||
	    say(&cl, 'n') || quiet(&cl, "armed after its entry was taken") ||
	    say(&cl, 'd'))
		return 1;
	printf("verbs-event-check: ok (client: no spurious events, "
	       "solicited heard)\n");
	rdma_disconnect(id);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "-s"))
		return server(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "-c"))
		return client(argv[2], argv[3]);
	fprintf(stderr, "usage: verbs-event-check -s|-c ADDR PORT\n");
	return 2;
}
