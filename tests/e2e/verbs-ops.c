// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * verbs-ops: every operation rnic offers, between two guests over rdma_cm,
 * each checked byte for byte against the peer's memory: standard verbs for
 * what every RNIC has, rnicdv.h for what only rnic has (one-shot and
 * receive-linked STags, the RTR type per connection, the connection's
 * details and the Terminates a QP saw).
 *   verbs-ops -s ADDR PORT   server: two connections, then exits
 *   verbs-ops -c ADDR PORT   client
 * Connection 1: Send, RDMA Write and Read, fetch-add and compare-swap,
 * Write with immediate data, Send with Invalidate of a region made
 * remotely invalidatable, then a one-shot region written once (verified)
 * and again (refused by a Terminate, the region unchanged).
 * Connection 2: an RTR type chosen per QP (client offers a Write RTR,
 * the server takes Write or Read), then a receive linked to a region: the
 * region is written, the Send that lands in that receive invalidates it
 * (silently: only a Send with Invalidate is reported in the completion),
 * and the next Write to it is refused.
 * Each check prints "PASS what" or "FAIL what" (lib/guest-lib.sh's
 * e2e_tool counts them); the exit status is the number of FAILs.
 */
#include <endian.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/rnicdv.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define REGION_LEN	65536
#define SLOTS		8		/* control receives posted */
#define TIMEOUT_S	20
#define PDATA_CLIENT	"verbs-ops client"
#define PDATA_SERVER	"verbs-ops server"
#define IMM_VALUE	0x1234abcdu

enum region { R_DATA, R_INV, R_ONESHOT, R_LINKED, R_COUNT };
static const char *const region_names[] = {
	"data", "remotely invalidatable", "one-shot", "receive-linked"
};

enum msg_type {
	MSG_ADVERT,	/* server: its regions */
	MSG_PAYLOAD,	/* client: len bytes of pattern seed follow */
	MSG_CHECK,	/* client: region [off, off + len) is pattern seed? */
	MSG_FILL,	/* client: fill region [off, off + len) with seed */
	MSG_GET64,	/* client: the u64 at region + off */
	MSG_INV,	/* client: a Send with Invalidate */
	MSG_BYE,	/* client: this connection is done */
	MSG_RESULT,	/* server: ok, val */
};

struct remote {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

struct msg {
	uint32_t type;
	uint32_t region;
	uint64_t off, len;
	uint32_t seed;
	uint32_t ok;
	uint64_t val;
	struct remote r[R_COUNT];	/* MSG_ADVERT */
	uint8_t payload[4096];		/* MSG_PAYLOAD */
};

struct ep {
	struct rdma_cm_id *id;
	struct msg *slots, *out;	/* SLOTS receive slots, one to send */
	struct ibv_mr *slots_mr, *out_mr;
	uint8_t *local;			/* REGION_LEN, source and sink */
	struct ibv_mr *local_mr;
	uint64_t *atomic_out;
	struct ibv_mr *atomic_mr;
	struct remote r[R_COUNT];	/* client: the server's regions */
};

static int failures;

static void result(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s ", ok ? "PASS" : "FAIL");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	failures += !ok;
}

static void die(const char *what)
{
	fprintf(stderr, "verbs-ops: %s\n", what);
	exit(100);
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* The first byte that differs from pattern @seed, or -1. */
static long check(const uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 8)))
			return (long)i;
	return -1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The next completion of @cq, or status IBV_WC_GENERAL_ERR after a while. */
static struct ibv_wc wait_wc(struct ibv_cq *cq)
{
	struct ibv_wc wc = { .status = IBV_WC_GENERAL_ERR };
	double end = now() + TIMEOUT_S;

	while (now() < end) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			die("ibv_poll_cq failed");
		if (n)
			return wc;
	}
	fprintf(stderr, "verbs-ops: no completion in %d s\n", TIMEOUT_S);
	wc.status = IBV_WC_GENERAL_ERR;
	return wc;
}

static void post_slot(struct ep *e, unsigned int i)
{
	if (rdma_post_recv(e->id, (void *)(uintptr_t)i, &e->slots[i],
			   sizeof(e->slots[i]), e->slots_mr))
		die("rdma_post_recv failed");
}

static struct ibv_send_wr rdma_wr(struct ep *e, enum ibv_wr_opcode op,
				  struct ibv_sge *sge, enum region r,
				  uint64_t off)
{
	struct ibv_send_wr wr = {
		.opcode = op,
		.sg_list = sge,
		.num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
	};

	wr.wr.rdma.remote_addr = e->r[r].addr + off;
	wr.wr.rdma.rkey = e->r[r].rkey;
	return wr;
}

/* Posts @wr and returns its completion. */
static struct ibv_wc run_wr(struct ep *e, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc = { .status = IBV_WC_GENERAL_ERR };

	if (ibv_post_send(e->id->qp, wr, &bad))
		return wc;
	return wait_wc(e->id->send_cq);
}

/* Sends e->out (its first @len bytes), with @inv: Send with Invalidate. */
static struct ibv_wc send_out(struct ep *e, size_t len, uint32_t inv)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->out, .length = len,
		.lkey = e->out_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.opcode = inv ? IBV_WR_SEND_WITH_INV : IBV_WR_SEND,
		.sg_list = &sge, .num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
		.invalidate_rkey = inv,
	};

	return run_wr(e, &wr);
}

/* The next message from the peer; its slot is posted again. */
static bool recv_msg(struct ep *e, struct msg *m, struct ibv_wc *out)
{
	struct ibv_wc wc = wait_wc(e->id->recv_cq);

	if (out)
		*out = wc;
	if (wc.status != IBV_WC_SUCCESS)
		return false;
	*m = e->slots[wc.wr_id];
	post_slot(e, wc.wr_id);
	return true;
}

/* Client: sends @m and waits for the server's MSG_RESULT. */
static struct msg ask(struct ep *e, const struct msg *m, size_t len)
{
	struct msg r = { .type = MSG_RESULT };

	memcpy(e->out, m, len);
	if (send_out(e, len, 0).status != IBV_WC_SUCCESS ||
	    !recv_msg(e, &r, NULL))
		r.ok = 0;
	return r;
}

static struct ibv_mr *reg(struct ep *e, void *p, size_t len, int acc)
{
	struct ibv_mr *mr = ibv_reg_mr(e->id->pd, p, len, acc);

	if (!mr)
		die("ibv_reg_mr failed");
	return mr;
}

/* Buffers of either side; the slots are posted before the connection. */
static void ep_init(struct ep *e, struct rdma_cm_id *id)
{
	e->id = id;
	e->slots = calloc(SLOTS, sizeof(*e->slots));
	e->out = calloc(1, sizeof(*e->out));
	e->local = aligned_alloc(4096, REGION_LEN);
	e->atomic_out = aligned_alloc(8, 8);
	if (!e->slots || !e->out || !e->local || !e->atomic_out)
		die("out of memory");
	e->slots_mr = reg(e, e->slots, SLOTS * sizeof(*e->slots),
			  IBV_ACCESS_LOCAL_WRITE);
	e->out_mr = reg(e, e->out, sizeof(*e->out), 0);
	e->local_mr = reg(e, e->local, REGION_LEN, IBV_ACCESS_LOCAL_WRITE);
	e->atomic_mr = reg(e, e->atomic_out, 8, IBV_ACCESS_LOCAL_WRITE);
}

static void ep_fini(struct ep *e)
{
	ibv_dereg_mr(e->slots_mr);
	ibv_dereg_mr(e->out_mr);
	ibv_dereg_mr(e->local_mr);
	ibv_dereg_mr(e->atomic_mr);
	free(e->slots);
	free(e->out);
	free(e->local);
	free(e->atomic_out);
}

static struct rdma_cm_id *endpoint(const char *addr, const char *port,
				   bool passive)
{
	struct rdma_addrinfo hints = {
		.ai_port_space = RDMA_PS_TCP,
		.ai_flags = passive ? RAI_PASSIVE : 0,
	};
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 16, .max_recv_wr = SLOTS + 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
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

static const char *rtr_name(unsigned int rtr)
{
	switch (rtr) {
	case 0: return "none";
	case RNICDV_RTR_SEND: return "send";
	case RNICDV_RTR_WRITE: return "write";
	case RNICDV_RTR_READ: return "read";
	default: return "?";
	}
}

/*
 * rnicdv_query_conn once connected: the MPA mode, the RTR type agreed
 * (@want_rtr) and the peer's private data (@pdata) must be as expected.
 */
static void check_conn(struct ep *e, const char *who, unsigned int want_rtr,
		       const char *pdata)
{
	struct rnicdv_conn c;
	int err = rnicdv_query_conn(e->id->qp, &c);

	if (err) {
		result(false, "rnicdv_query_conn: %s", strerror(err));
		return;
	}
	printf("%s: connection: MPA rev %u, CRC %s, markers %s/%s, RTR %s, peer IRD %u ORD %u, peer private data \"%.*s\"\n",
	       who, c.mpa_rev, c.flags & RNICDV_CONN_CRC ? "on" : "off",
	       c.flags & RNICDV_CONN_MARKERS_TX ? "tx" : "-",
	       c.flags & RNICDV_CONN_MARKERS_RX ? "rx" : "-",
	       rtr_name(c.rtr), c.ird, c.ord, c.pdata_len, c.pdata);
	result((c.flags & RNICDV_CONN_LIVE) && c.mpa_rev == 2 &&
	       c.rtr == want_rtr && c.pdata_len == strlen(pdata) &&
	       !memcmp(c.pdata, pdata, c.pdata_len) &&
	       !(c.flags & (RNICDV_CONN_TERM_RX | RNICDV_CONN_TERM_TX)),
	       "rnicdv_query_conn: MPA rev 2, RTR %s as chosen, the peer's private data \"%s\" byte for byte",
	       rtr_name(want_rtr), pdata);
}

/* Polls rnicdv_query_conn until the QP saw a Terminate (@flag). */
static bool wait_term(struct ep *e, uint32_t flag, struct rnicdv_term *t)
{
	double end = now() + TIMEOUT_S;
	struct rnicdv_conn c;

	while (now() < end) {
		if (rnicdv_query_conn(e->id->qp, &c))
			return false;
		if (c.flags & flag) {
			*t = flag == RNICDV_CONN_TERM_RX ? c.term_rx : c.term_tx;
			return true;
		}
		usleep(10000);
	}
	return false;
}

/* ---- the server ---- */

struct server {
	struct ep e;
	uint8_t *region[R_COUNT];
	struct ibv_mr *mr[R_COUNT];
};

static void server_regions(struct server *s)
{
	static const uint32_t flags[R_COUNT] = {
		[R_INV] = RNICDV_MR_REMOTE_INV,
		[R_ONESHOT] = RNICDV_MR_ONE_SHOT,
	};
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

	for (int r = 0; r < R_COUNT; r++) {
		s->region[r] = aligned_alloc(4096, REGION_LEN);
		if (!s->region[r])
			die("out of memory");
		memset(s->region[r], 0, REGION_LEN);
		s->mr[r] = flags[r] ?
			rnicdv_reg_mr(s->e.id->pd, s->region[r], REGION_LEN,
				      acc, flags[r]) :
			ibv_reg_mr(s->e.id->pd, s->region[r], REGION_LEN, acc);
		if (!s->mr[r])
			die("registering a region failed");
		s->e.out->r[r] = (struct remote) {
			.addr = (uintptr_t)s->region[r],
			.rkey = s->mr[r]->rkey, .len = REGION_LEN,
		};
	}
}

static void server_reply(struct server *s, bool ok, uint64_t val)
{
	s->e.out->type = MSG_RESULT;
	s->e.out->ok = ok;
	s->e.out->val = val;
	if (send_out(&s->e, offsetof(struct msg, r), 0).status !=
	    IBV_WC_SUCCESS)
		die("sending a result failed");
}

static bool region_ok(const struct msg *m)
{
	return m->region < R_COUNT && m->off <= REGION_LEN &&
	       m->len <= REGION_LEN - m->off;
}

/* One message of the client; false at MSG_BYE or a failed receive. */
static bool server_msg(struct server *s, const struct msg *m,
		       const struct ibv_wc *wc)
{
	uint8_t *p = region_ok(m) ? s->region[m->region] + m->off : NULL;
	long bad;

	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		result(wc->wc_flags & IBV_WC_WITH_IMM,
		       "Write with immediate data 0x%08x arrived",
		       be32toh(wc->imm_data));
		server_reply(s, true, be32toh(wc->imm_data));
		return true;
	}
	switch (m->type) {
	case MSG_PAYLOAD:
		bad = m->len <= sizeof(m->payload) ?
		      check(m->payload, m->len, m->seed) : 0;
		result(bad < 0 && wc->byte_len == offsetof(struct msg, payload) + m->len,
		       "Send of %" PRIu64 " bytes verified", m->len);
		server_reply(s, bad < 0, 0);
		break;
	case MSG_CHECK:
		bad = p ? check(p, m->len, m->seed) : 0;
		result(bad < 0, "%s region, %" PRIu64 " bytes at %" PRIu64 " verified%s",
		       region_names[m->region % R_COUNT], m->len, m->off,
		       bad < 0 ? "" : " (differ)");
		server_reply(s, bad < 0,
			     wc->wc_flags & IBV_WC_WITH_INV ?
			     wc->invalidated_rkey : 0);
		break;
	case MSG_FILL:
		if (p)
			fill(p, m->len, m->seed);
		server_reply(s, p, 0);
		break;
	case MSG_GET64:
		server_reply(s, p && m->len == 8, p ? le64toh(*(uint64_t *)p) : 0);
		break;
	case MSG_INV:
		server_reply(s, wc->wc_flags & IBV_WC_WITH_INV,
			     wc->invalidated_rkey);
		break;
	case MSG_BYE:
		return false;
	default:
		result(false, "message of type %u", m->type);
		return false;
	}
	return true;
}

/*
 * The client's last Write of a connection goes to an STag that is no
 * longer valid: we send a Terminate, and the region keeps the bytes of
 * the Write before it (pattern @seed over @len).
 */
static void server_refused(struct server *s, enum region r, size_t len,
			   uint32_t seed)
{
	struct rnicdv_term t;

	if (!wait_term(&s->e, RNICDV_CONN_TERM_TX, &t)) {
		result(false, "no Terminate sent for the Write to the %s region",
		       region_names[r]);
		return;
	}
	result(t.layer == 1 && t.etype == 1 && check(s->region[r], len, seed) < 0,
	       "Terminate sent (layer %u etype %u ecode 0x%02x: DDP tagged buffer error); %s region unchanged by the refused Write",
	       t.layer, t.etype, t.ecode, region_names[r]);
}

static void server_conn(struct rdma_cm_id *listen, int n)
{
	struct rdma_conn_param param = {
		.private_data = PDATA_SERVER,
		.private_data_len = sizeof(PDATA_SERVER) - 1,
		.responder_resources = 4, .initiator_depth = 4,
	};
	struct server s = { 0 };
	struct ibv_recv_wr *bad, wr = { .num_sge = 1 };
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct msg m;
	struct rdma_cm_id *id;

	if (rdma_get_request(listen, &id))
		die("no connection request");
	ep_init(&s.e, id);
	server_regions(&s);
	if (n == 2) {
		/* Takes a Write or Read RTR; the first receive is linked. */
		if (rnicdv_modify_qp_rtr(id->qp, RNICDV_RTR_WRITE |
					 RNICDV_RTR_READ))
			die("rnicdv_modify_qp_rtr failed");
		sge = (struct ibv_sge) {
			.addr = (uintptr_t)&s.e.slots[0],
			.length = sizeof(s.e.slots[0]),
			.lkey = s.e.slots_mr->lkey,
		};
		wr.sg_list = &sge;
		if (rnicdv_post_recv_linked(id->qp, &wr,
					    s.mr[R_LINKED]->rkey, &bad))
			die("rnicdv_post_recv_linked failed");
	}
	for (unsigned int i = n == 2; i < SLOTS; i++)
		post_slot(&s.e, i);
	if (rdma_accept(id, &param))
		die("rdma_accept failed");
	check_conn(&s.e, "server", n == 2 ? RNICDV_RTR_WRITE : 0,
		   PDATA_CLIENT);
	s.e.out->type = MSG_ADVERT;
	if (send_out(&s.e, sizeof(*s.e.out) - sizeof(s.e.out->payload),
		     0).status != IBV_WC_SUCCESS)
		die("sending the regions failed");
	while (recv_msg(&s.e, &m, &wc) && server_msg(&s, &m, &wc))
		;
	if (n == 1)
		server_refused(&s, R_ONESHOT, 1000, 77);
	else
		server_refused(&s, R_LINKED, 2000, 88);
	rdma_disconnect(id);
	rdma_destroy_ep(id);
}

/* ---- the client ---- */

static void client_send(struct ep *e, size_t len, uint32_t seed)
{
	struct msg m = { .type = MSG_PAYLOAD, .len = len, .seed = seed };
	struct msg r;

	fill(m.payload, len, seed);
	r = ask(e, &m, offsetof(struct msg, payload) + len);
	result(r.ok, "send %zu bytes: server verified", len);
}

static void client_write(struct ep *e, enum region rg, size_t off,
			 size_t len, uint32_t seed)
{
	struct ibv_sge sge = { (uintptr_t)e->local, len, e->local_mr->lkey };
	struct ibv_send_wr wr = rdma_wr(e, IBV_WR_RDMA_WRITE, &sge, rg, off);
	struct msg m = { .type = MSG_CHECK, .region = rg, .off = off,
			 .len = len, .seed = seed };
	struct ibv_wc wc;

	fill(e->local, len, seed);
	wc = run_wr(e, &wr);
	result(wc.status == IBV_WC_SUCCESS && ask(e, &m, sizeof(m)).ok,
	       "rdma-write %zu bytes to the %s region: %s, server verified",
	       len, region_names[rg], ibv_wc_status_str(wc.status));
}

static void client_read(struct ep *e, size_t off, size_t len, uint32_t seed)
{
	struct ibv_sge sge = { (uintptr_t)e->local, len, e->local_mr->lkey };
	struct ibv_send_wr wr = rdma_wr(e, IBV_WR_RDMA_READ, &sge, R_DATA,
					off);
	struct msg m = { .type = MSG_FILL, .region = R_DATA, .off = off,
			 .len = len, .seed = seed };
	struct ibv_wc wc;

	memset(e->local, 0, len);
	if (!ask(e, &m, sizeof(m)).ok)
		die("the server did not fill its region");
	wc = run_wr(e, &wr);
	result(wc.status == IBV_WC_SUCCESS && check(e->local, len, seed) < 0,
	       "rdma-read %zu bytes: %s, every byte as the server wrote it",
	       len, ibv_wc_status_str(wc.status));
}

/* The 8 bytes at @off of the data region, as the server sees them. */
static uint64_t server_u64(struct ep *e, size_t off)
{
	struct msg m = { .type = MSG_GET64, .region = R_DATA, .off = off,
			 .len = 8 };

	return ask(e, &m, sizeof(m)).val;
}

static void client_atomics(struct ep *e)
{
	struct ibv_sge sge = { (uintptr_t)e->atomic_out, 8,
			       e->atomic_mr->lkey };
	struct ibv_send_wr wr = rdma_wr(e, IBV_WR_ATOMIC_FETCH_AND_ADD, &sge,
					R_DATA, 0);
	uint64_t before = server_u64(e, 512), after;
	struct ibv_wc wc;

	wr.wr.atomic.remote_addr = e->r[R_DATA].addr + 512;
	wr.wr.atomic.rkey = e->r[R_DATA].rkey;
	wr.wr.atomic.compare_add = 5;
	wc = run_wr(e, &wr);
	after = server_u64(e, 512);
	result(wc.status == IBV_WC_SUCCESS && *e->atomic_out == before &&
	       after == before + 5,
	       "fetch-add 5: returned 0x%" PRIx64 ", server now has 0x%" PRIx64,
	       *e->atomic_out, after);

	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = after;
	wr.wr.atomic.swap = 0x0123456789abcdefull;
	wc = run_wr(e, &wr);
	result(wc.status == IBV_WC_SUCCESS && *e->atomic_out == after &&
	       server_u64(e, 512) == 0x0123456789abcdefull,
	       "compare-swap: matched 0x%" PRIx64 ", server now has 0x0123456789abcdef",
	       after);
}

static void client_immediate(struct ep *e)
{
	struct ibv_sge sge = { (uintptr_t)e->local, 3000, e->local_mr->lkey };
	struct ibv_send_wr wr = rdma_wr(e, IBV_WR_RDMA_WRITE_WITH_IMM, &sge,
					R_DATA, 8192);
	struct msg m = { .type = MSG_CHECK, .region = R_DATA, .off = 8192,
			 .len = 3000, .seed = 9 };
	struct ibv_wc wc;
	struct msg r = { 0 };

	fill(e->local, 3000, 9);
	wr.imm_data = htobe32(IMM_VALUE);
	wc = run_wr(e, &wr);
	if (wc.status == IBV_WC_SUCCESS && !recv_msg(e, &r, NULL))
		r.ok = 0;
	result(wc.status == IBV_WC_SUCCESS && r.ok && r.val == IMM_VALUE &&
	       ask(e, &m, sizeof(m)).ok,
	       "rdma-write with immediate 0x%08x: the server's receive has it, 3000 bytes verified",
	       IMM_VALUE);
}

static void client_send_inv(struct ep *e)
{
	struct msg m = { .type = MSG_INV }, r = { 0 };
	struct ibv_wc wc;

	memcpy(e->out, &m, sizeof(m));
	wc = send_out(e, offsetof(struct msg, r), e->r[R_INV].rkey);
	if (wc.status == IBV_WC_SUCCESS && !recv_msg(e, &r, NULL))
		r.ok = 0;
	result(wc.status == IBV_WC_SUCCESS && r.ok &&
	       r.val == e->r[R_INV].rkey,
	       "send-with-invalidate of STag 0x%08x: the server's receive says STag 0x%08" PRIx64 " invalidated",
	       e->r[R_INV].rkey, r.val);
}

/*
 * A Write to an STag that is no longer valid: it completes here (Writes
 * are not acknowledged), the peer answers with a Terminate, and the QP's
 * next work request is flushed.
 */
static void client_refused(struct ep *e, enum region rg, size_t len)
{
	struct ibv_sge sge = { (uintptr_t)e->local, len, e->local_mr->lkey };
	struct ibv_send_wr wr = rdma_wr(e, IBV_WR_RDMA_WRITE, &sge, rg, 0);
	struct rnicdv_term t;
	struct ibv_wc wc;
	bool term;

	fill(e->local, len, 99);
	run_wr(e, &wr);
	term = wait_term(e, RNICDV_CONN_TERM_RX, &t);
	result(term && t.layer == 1 && t.etype == 1 && t.ecode == 0,
	       "rdma-write to the %s region again: refused, Terminate received (layer %u etype %u ecode 0x%02x: DDP tagged buffer, invalid STag)",
	       region_names[rg], term ? t.layer : 0, term ? t.etype : 0,
	       term ? t.ecode : 0);
	wc = run_wr(e, &wr);
	result(wc.status == IBV_WC_WR_FLUSH_ERR,
	       "the next work request completes with %s",
	       ibv_wc_status_str(wc.status));
}

/*
 * The server's first receive is linked to its receive-linked region: a
 * Write to the region, then the Send asking the server to check it, which
 * lands in that receive and so invalidates the region's STag.
 */
static void client_linked(struct ep *e)
{
	struct ibv_sge sge = { (uintptr_t)e->local, 2000, e->local_mr->lkey };
	struct ibv_send_wr wr = rdma_wr(e, IBV_WR_RDMA_WRITE, &sge, R_LINKED,
					0);
	struct msg m = { .type = MSG_CHECK, .region = R_LINKED, .len = 2000,
			 .seed = 88 };
	struct ibv_wc wc;
	struct msg r;

	fill(e->local, 2000, 88);
	wc = run_wr(e, &wr);
	r = ask(e, &m, sizeof(m));
	result(wc.status == IBV_WC_SUCCESS && r.ok,
	       "rdma-write 2000 bytes to the receive-linked region; the Send that asks the server to check them lands in the linked receive: verified");
}

static struct ep client_connect(const char *addr, const char *port, int n)
{
	struct rdma_conn_param param = {
		.private_data = PDATA_CLIENT,
		.private_data_len = sizeof(PDATA_CLIENT) - 1,
		.responder_resources = 4, .initiator_depth = 4,
		.retry_count = 7,
	};
	struct rdma_cm_id *id;
	struct ep e = { 0 };
	struct msg m;

	/* The server may not listen yet: retry for a while. */
	for (int i = 0;; i++) {
		id = endpoint(addr, port, false);
		if (id) {
			ep_init(&e, id);
			for (unsigned int s = 0; s < SLOTS; s++)
				post_slot(&e, s);
			if (n == 2 &&
			    rnicdv_modify_qp_rtr(id->qp, RNICDV_RTR_WRITE))
				die("rnicdv_modify_qp_rtr failed");
			if (!rdma_connect(id, &param))
				break;
			ep_fini(&e);
			rdma_destroy_ep(id);
		}
		if (i == 60)
			die("no connection to the server");
		sleep(1);
	}
	check_conn(&e, "client", n == 2 ? RNICDV_RTR_WRITE : 0, PDATA_SERVER);
	if (!recv_msg(&e, &m, NULL) || m.type != MSG_ADVERT)
		die("no regions from the server");
	memcpy(e.r, m.r, sizeof(e.r));
	return e;
}

static void client_bye(struct ep *e)
{
	e->out->type = MSG_BYE;
	if (send_out(e, offsetof(struct msg, r), 0).status != IBV_WC_SUCCESS)
		die("sending bye failed");
}

static void client(const char *addr, const char *port)
{
	struct ep e = client_connect(addr, port, 1);

	client_send(&e, 1, 1);
	client_send(&e, 4096, 2);
	client_write(&e, R_DATA, 0, 65536, 3);
	client_write(&e, R_DATA, 100, 1, 4);
	client_read(&e, 0, 65536, 5);
	client_read(&e, 4000, 333, 6);
	client_atomics(&e);
	client_immediate(&e);
	client_send_inv(&e);
	client_write(&e, R_ONESHOT, 0, 1000, 77);
	client_bye(&e);
	client_refused(&e, R_ONESHOT, 1000);
	rdma_disconnect(e.id);
	rdma_destroy_ep(e.id);

	e = client_connect(addr, port, 2);
	client_linked(&e);
	client_bye(&e);
	client_refused(&e, R_LINKED, 2000);
	rdma_disconnect(e.id);
	rdma_destroy_ep(e.id);
}

int main(int argc, char **argv)
{
	struct rdma_cm_id *listen;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 4 || (strcmp(argv[1], "-s") && strcmp(argv[1], "-c"))) {
		fprintf(stderr, "usage: verbs-ops -s|-c ADDR PORT\n");
		return 2;
	}
	if (!strcmp(argv[1], "-c")) {
		client(argv[2], argv[3]);
	} else {
		listen = endpoint(argv[2], argv[3], true);
		if (!listen || rdma_listen(listen, 2))
			die("listen failed");
		if (!rnicdv_is_supported(listen->verbs->device))
			die("not an rnic device");
		server_conn(listen, 1);
		server_conn(listen, 2);
		rdma_destroy_ep(listen);
	}
	return failures;
}
