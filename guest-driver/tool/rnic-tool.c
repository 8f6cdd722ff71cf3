// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * rnic-tool: drives /dev/rnicN (guest-driver/rnic-uapi.h) from user space.
 *
 *   rnic-tool info
 *   rnic-tool server [-p PORT] [-n CONNECTIONS]
 *   rnic-tool client -a ADDR -p PORT     every operation, bytes verified
 *   rnic-tool bw     -a ADDR -p PORT [-S SIZE] [-C COUNT]
 *   rnic-tool lat    -a ADDR -p PORT [-S SIZE] [-C COUNT]
 *   rnic-tool rping  -s|-c -a ADDR -p PORT [-C N] [-S SIZE] [-v]
 *
 * The device makes its TCP connections on the host: ADDR and PORT are host
 * addresses (the device's default allow-lists are loopback only).  The
 * server listens on ADDR:PORT; clients connect there.  Each operation of
 * the client prints one line starting with PASS or FAIL.  rping follows
 * rdma-core's rping message flow, so either side can be Linux's rping.
 *
 * Build (static, for a busybox initramfs):
 *   gcc -static -O2 -Wall -Iinclude -Iguest-driver -o rnic-tool rnic-tool.c
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "rnic-uapi.h"

#define TIMEOUT_MS	20000
#define CTRL_SLOTS	16
#define CTRL_SLOT_SIZE	8192
#define DATA_SIZE	(1024 * 1024)
#define ACC_ALL		(RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_READ | \
			 RNIC_ACC_REMOTE_WRITE | RNIC_ACC_REMOTE_ATOMIC)

static const char *dev_path = "/dev/rnic0";
static int failures;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "rnic-tool: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

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

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- the device ---- */

static int fd = -1;

static int ioc(unsigned long req, void *arg, const char *what, bool fatal)
{
	if (ioctl(fd, req, arg) == 0)
		return 0;
	if (fatal)
		die("%s: %s", what, strerror(errno));
	return -errno;
}

static void dev_open(void)
{
	fd = open(dev_path, O_RDWR);
	if (fd < 0)
		die("%s: %s", dev_path, strerror(errno));
}

static const char *event_name(unsigned int t)
{
	static const char *const n[] = RNIC_EVENT_NAMES;

	return t < sizeof(n) / sizeof(n[0]) && n[t] ? n[t] : "?";
}

static const char *cqe_status_name(unsigned int s)
{
	static const char *const n[] = RNIC_CQE_STATUS_NAMES;

	return s < sizeof(n) / sizeof(n[0]) && n[s] ? n[s] : "?";
}

/*
 * Connection requests that arrive while a server still finishes the
 * previous connection wait here for ep_accept().
 */
static struct rnic_event held[16];
static unsigned int nheld;

static void hold_event(const struct rnic_event *ev)
{
	if (nheld < sizeof(held) / sizeof(held[0]))
		held[nheld++] = *ev;
}

/* The device's next event, or false after @ms milliseconds. */
static bool read_event(struct rnic_event *ev, unsigned int ms)
{
	struct rnic_u_event u = { .timeout_ms = ms };
	int err = ioc(RNIC_IOC_GET_EVENT, &u, "GET_EVENT", false);

	if (err == -ETIMEDOUT)
		return false;
	if (err)
		die("GET_EVENT: %s", strerror(-err));
	*ev = u.ev;
	return true;
}

/* The next event, held ones first. */
static bool get_event(struct rnic_event *ev, unsigned int ms)
{
	if (nheld) {
		*ev = held[0];
		memmove(held, held + 1, --nheld * sizeof(held[0]));
		return true;
	}
	return read_event(ev, ms);
}

static struct rnic_event wait_event(unsigned int type, const char *why)
{
	struct rnic_event ev;

	for (;;) {
		if (!get_event(&ev, TIMEOUT_MS))
			die("%s: no %s event", why, event_name(type));
		if (ev.type == type)
			return ev;
		printf("event %s id %u arg0 0x%x arg1 0x%x (waiting for %s)\n",
		       event_name(ev.type), ev.id, ev.arg0, ev.arg1,
		       event_name(type));
		if (ev.type == RNIC_EV_FATAL || ev.type == RNIC_EV_CONN_ERROR ||
		    ev.type == RNIC_EV_CONN_REJECTED)
			die("%s: %s", why, event_name(ev.type));
	}
}

/* ---- one endpoint: PD, CQs, QP and registered buffers ---- */

struct buf {
	uint8_t *p;
	size_t len;
	uint32_t stag;
};

struct ep {
	uint32_t pdn, scq, rcq, qpn, conn;
	struct buf ctrl_rx, ctrl_tx, data;
	uint64_t wr_id;
};

static void *alloc_pages(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap %zu: %s", len, strerror(errno));
	memset(p, 0, len);
	return p;
}

static int reg_mr(struct ep *e, struct buf *b, size_t len, uint32_t access,
		  uint8_t policy)
{
	struct rnic_u_reg_mr u = {
		.length = len, .pdn = e->pdn, .access = access, .key = 0x5a,
		.policy = policy,
	};
	int err;

	if (!b->p)
		b->p = alloc_pages(len);
	b->len = len;
	u.addr = (uintptr_t)b->p;
	err = ioc(RNIC_IOC_REG_MR, &u, "REG_MR", false);
	b->stag = u.stag;
	return err;
}

static void buf_new(struct ep *e, struct buf *b, size_t len, uint32_t access)
{
	int err = reg_mr(e, b, len, access, RNIC_MR_POLICY_PERSISTENT);

	if (err)
		die("REG_MR %zu bytes: %s", len, strerror(-err));
}

static void ep_init(struct ep *e, unsigned int log_wr)
{
	struct rnic_u_pd pd = { 0 };
	struct rnic_u_cq cq = { .log_size = log_wr + 1 };
	struct rnic_u_qp qp = { 0 };

	memset(e, 0, sizeof(*e));
	ioc(RNIC_IOC_CREATE_PD, &pd, "CREATE_PD", true);
	e->pdn = pd.pdn;
	ioc(RNIC_IOC_CREATE_CQ, &cq, "CREATE_CQ", true);
	e->scq = cq.cqn;
	ioc(RNIC_IOC_CREATE_CQ, &cq, "CREATE_CQ", true);
	e->rcq = cq.cqn;
	qp = (struct rnic_u_qp){
		.pdn = e->pdn, .send_cqn = e->scq, .recv_cqn = e->rcq,
		.sq_log_size = log_wr, .rq_log_size = log_wr,
	};
	ioc(RNIC_IOC_CREATE_QP, &qp, "CREATE_QP", true);
	e->qpn = qp.qpn;
}

static void ep_new_qp(struct ep *e, unsigned int log_wr)
{
	struct rnic_u_qp qp = { .qpn = e->qpn };

	ioc(RNIC_IOC_DESTROY_QP, &qp, "DESTROY_QP", true);
	qp = (struct rnic_u_qp){
		.pdn = e->pdn, .send_cqn = e->scq, .recv_cqn = e->rcq,
		.sq_log_size = log_wr, .rq_log_size = log_wr,
	};
	ioc(RNIC_IOC_CREATE_QP, &qp, "CREATE_QP", true);
	e->qpn = qp.qpn;
}

static struct rnic_wqe_sge sge(const struct buf *b, size_t off, size_t len)
{
	return (struct rnic_wqe_sge){
		.addr = (uintptr_t)(b->p + off), .length = len,
		.stag = b->stag,
	};
}

static void post_send(struct ep *e, struct rnic_sq_wqe *w)
{
	struct rnic_u_post u = { .qpn = e->qpn, .count = 1,
				 .wqes = (uintptr_t)w };

	w->flags |= RNIC_WQE_FLAG_SIGNALED;
	if (!w->wr_id)
		w->wr_id = ++e->wr_id;
	ioc(RNIC_IOC_POST_SEND, &u, "POST_SEND", true);
	if (u.count != 1)
		die("POST_SEND: send queue full");
}

static void post_recv(struct ep *e, uint64_t wr_id, struct rnic_wqe_sge s)
{
	struct rnic_rq_wqe w = { .wr_id = wr_id, .num_sge = 1, .sge[0] = s };
	struct rnic_u_post u = { .qpn = e->qpn, .count = 1,
				 .wqes = (uintptr_t)&w };

	ioc(RNIC_IOC_POST_RECV, &u, "POST_RECV", true);
	if (u.count != 1)
		die("POST_RECV: receive queue full");
}

/* Receive slot i of the control buffer has wr_id i. */
static void post_ctrl_recv(struct ep *e, unsigned int slot)
{
	post_recv(e, slot, sge(&e->ctrl_rx, slot * CTRL_SLOT_SIZE,
			       CTRL_SLOT_SIZE));
}

/* One completion of @cqn, or false after @ms. */
static bool poll_cq(uint32_t cqn, struct rnic_cq_entry *c, unsigned int ms)
{
	struct rnic_u_poll u = { .cqn = cqn, .count = 1,
				 .cqes = (uintptr_t)c, .timeout_ms = ms };

	ioc(RNIC_IOC_POLL_CQ, &u, "POLL_CQ", true);
	return u.count == 1;
}

static struct rnic_cq_entry wait_cqe(uint32_t cqn, const char *why)
{
	struct rnic_cq_entry c;

	if (!poll_cq(cqn, &c, TIMEOUT_MS))
		die("%s: no completion after %d ms", why, TIMEOUT_MS);
	return c;
}

/* Posts @w and waits for its completion; returns its status. */
static struct rnic_cq_entry do_send(struct ep *e, struct rnic_sq_wqe *w,
				    const char *why)
{
	struct rnic_cq_entry c;

	post_send(e, w);
	c = wait_cqe(e->scq, why);
	if (c.wr_id != w->wr_id)
		die("%s: completion of wr_id %" PRIu64 ", expected %" PRIu64,
		    why, (uint64_t)c.wr_id, (uint64_t)w->wr_id);
	return c;
}

static void sockaddr_of(struct rnic_sockaddr *a, const char *addr, int port)
{
	memset(a, 0, sizeof(*a));
	a->family = RNIC_AF_INET;
	a->port = port;
	if (inet_pton(AF_INET, addr, a->addr) != 1)
		die("bad IPv4 address %s", addr);
}

/* -R: RNIC_RTR_GIVEN and the RFC 6581 RTR types for CONNECT and ACCEPT. */
static uint8_t rtr_opt;

static const char *const rtr_names[] = { "send", "write", "read" };

/* "none", or RTR type names separated by commas. */
static const char *rtr_str(uint8_t types, char *buf, size_t size)
{
	size_t n = 0;

	snprintf(buf, size, "none");
	for (unsigned int i = 0; i < 3; i++)
		if (types & (1u << i))
			n += snprintf(buf + n, size - n, "%s%s", n ? "," : "",
				      rtr_names[i]);
	return buf;
}

static uint8_t rtr_parse(const char *s)
{
	uint8_t types = 0;
	char *copy = strdup(s), *save = NULL, *tok;

	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned int i = 0;

		while (i < 3 && strcmp(tok, rtr_names[i]))
			i++;
		if (i == 3 && strcmp(tok, "none"))
			die("-R takes none, or send, write, read separated by commas");
		types |= i < 3 ? 1u << i : 0;
	}
	free(copy);
	return RNIC_RTR_GIVEN | types;
}

static void print_conn(uint32_t conn, const char *who)
{
	struct rnic_conn_info info;
	struct rnic_u_query_conn q = { .conn_id = conn,
				       .info = (uintptr_t)&info };
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN], r[24], o[24];

	if (ioc(RNIC_IOC_QUERY_CONN, &q, "QUERY_CONN", false))
		return;
	inet_ntop(AF_INET, info.local.addr, a, sizeof(a));
	inet_ntop(AF_INET, info.peer.addr, b, sizeof(b));
	printf("%s: connection %u %s:%u <-> %s:%u, MPA rev %u, CRC %s, RTR %s, peer IRD/ORD %u/%u%s%s, peer private data \"%.*s\"\n",
	       who, conn, a, info.local.port, b, info.peer.port, info.mpa_rev,
	       info.mpa_crc ? "on" : "off", rtr_str(q.rtr, r, sizeof(r)),
	       info.ird, info.ord,
	       q.peer_rtr & RNIC_RTR_P2P ? ", peer asked p2p with RTR " : "",
	       q.peer_rtr & RNIC_RTR_P2P ? rtr_str(q.peer_rtr, o, sizeof(o)) :
	       "", info.pdata_len, (const char *)info.pdata);
}

/*
 * Active side: CONNECT until the server listens (CONN_ERROR with
 * ECONNREFUSED means not yet), then CONN_ESTABLISHED.
 */
static void ep_connect(struct ep *e, const char *addr, int port,
		       const char *pdata, uint16_t ird, uint16_t ord)
{
	struct rnic_u_conn u;
	struct rnic_event ev;
	int tries;

	for (tries = 0;; tries++) {
		u = (struct rnic_u_conn){
			.qpn = e->qpn, .ird = ird, .ord = ord, .rtr = rtr_opt,
			.pdata = (uintptr_t)pdata,
			.pdata_len = pdata ? strlen(pdata) : 0,
		};
		sockaddr_of(&u.peer, addr, port);
		ioc(RNIC_IOC_CONNECT, &u, "CONNECT", true);
		e->conn = u.conn_id;
		if (!get_event(&ev, TIMEOUT_MS))
			die("CONNECT: no answer from %s:%d", addr, port);
		if (ev.type == RNIC_EV_CONN_ESTABLISHED)
			break;
		/* EPROTO: the MPA exchange failed; retrying will not help */
		if (ev.type == RNIC_EV_CONN_ERROR && ev.arg0 != EPROTO &&
		    tries < 120) {
			usleep(500000);
			continue;
		}
		die("CONNECT to %s:%d: %s (arg0 %u)", addr, port,
		    event_name(ev.type), ev.arg0);
	}
	print_conn(e->conn, "client");
}

static uint32_t ep_listen(const char *addr, int port)
{
	struct rnic_u_listen l = { .backlog = 4 };

	sockaddr_of(&l.local, addr, port);
	ioc(RNIC_IOC_LISTEN, &l, "LISTEN", true);
	printf("server: listening on %s:%u (listener %u)\n", addr,
	       l.local.port, l.listener_id);
	fflush(stdout);
	return l.listener_id;
}

/* Passive side: the next CONN_REQUEST, accepted on the endpoint's QP. */
static void ep_accept(struct ep *e, const char *pdata, uint16_t ird,
		      uint16_t ord)
{
	struct rnic_event ev;
	struct rnic_u_conn u;

	for (;;) {
		if (!get_event(&ev, 3600 * 1000))
			continue;
		if (ev.type == RNIC_EV_CONN_REQUEST)
			break;
		printf("server: event %s id %u arg0 0x%x (waiting for a connection)\n",
		       event_name(ev.type), ev.id, ev.arg0);
	}
	e->conn = ev.id;
	u = (struct rnic_u_conn){
		.qpn = e->qpn, .conn_id = e->conn, .ird = ird, .ord = ord,
		.rtr = rtr_opt, .pdata = (uintptr_t)pdata,
		.pdata_len = pdata ? strlen(pdata) : 0,
	};
	ioc(RNIC_IOC_ACCEPT, &u, "ACCEPT", true);
	wait_event(RNIC_EV_CONN_ESTABLISHED, "ACCEPT");
	print_conn(e->conn, "server");
}

static void ep_disconnect(struct ep *e)
{
	struct rnic_cmd_disconnect d = { .qpn = e->qpn };

	if (!ioc(RNIC_IOC_DISCONNECT, &d, "DISCONNECT", false))
		wait_event(RNIC_EV_CONN_CLOSED, "DISCONNECT");
}

/* ---- server and client: control messages over Sends ---- */

enum msg_type {
	MSG_ADVERT = 1,		/* server -> client: its buffers */
	MSG_STATUS,		/* server -> client: ok, and a value */
	MSG_SEND_DATA,		/* payload follows the header */
	MSG_CHECK,		/* verify data[off, off+len) against seed */
	MSG_FILL,		/* fill data[off, off+len) from seed */
	MSG_SET_U64,		/* data[off] = val */
	MSG_CHECK_U64,		/* data[off] == val ? */
	MSG_CHECK_ONESHOT,	/* verify the one-shot buffer */
	MSG_CHECK_INV,		/* did the last receive invalidate b.stag */
	MSG_PING,		/* answered by MSG_STATUS at once */
	MSG_BYE,
};

struct region {
	uint64_t addr;
	uint32_t stag;
	uint32_t len;
};

struct msg {
	uint32_t type;
	uint32_t status;	/* MSG_STATUS: 0 = ok */
	uint64_t off;
	uint64_t len;
	uint64_t val;
	uint32_t seed;
	uint32_t rsvd;
	struct region data, inv, oneshot;	/* MSG_ADVERT */
};

static uint8_t pattern(uint32_t seed, size_t i)
{
	return (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(seed, i);
}

/* Index of the first wrong byte, or -1. */
static long check(const uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern(seed, i))
			return i;
	return -1;
}

static void send_msg(struct ep *e, const struct msg *m, size_t extra)
{
	struct rnic_sq_wqe w = { .opcode = RNIC_WQE_SEND, .num_sge = 1 };
	struct rnic_cq_entry c;

	memcpy(e->ctrl_tx.p, m, sizeof(*m));
	w.sge[0] = sge(&e->ctrl_tx, 0, sizeof(*m) + extra);
	c = do_send(e, &w, "Send");
	if (c.status)
		die("Send: %s", cqe_status_name(c.status));
}

/* The message of receive completion @c; its slot is posted again. */
static bool recv_msg_done(struct ep *e, const struct rnic_cq_entry *c,
			  struct msg *m, uint8_t *payload, size_t max)
{
	const uint8_t *slot;

	if (c->status)
		return false;
	slot = e->ctrl_rx.p + c->wr_id * CTRL_SLOT_SIZE;
	memset(m, 0, sizeof(*m));
	memcpy(m, slot, c->byte_len < sizeof(*m) ? c->byte_len : sizeof(*m));
	if (payload && c->byte_len > sizeof(*m))
		memcpy(payload, slot + sizeof(*m),
		       c->byte_len - sizeof(*m) < max ?
		       c->byte_len - sizeof(*m) : max);
	post_ctrl_recv(e, c->wr_id);
	return true;
}

/* The next received message, and its completion. */
static bool recv_msg(struct ep *e, struct msg *m, struct rnic_cq_entry *c,
		     uint8_t *payload, size_t max)
{
	if (!poll_cq(e->rcq, c, TIMEOUT_MS))
		die("no message after %d ms", TIMEOUT_MS);
	return recv_msg_done(e, c, m, payload, max);
}

static struct msg expect_status(struct ep *e, const char *why)
{
	struct rnic_cq_entry c;
	struct msg m;

	if (!recv_msg(e, &m, &c, NULL, 0))
		die("%s: receive completed with %s", why,
		    cqe_status_name(c.status));
	if (m.type != MSG_STATUS)
		die("%s: message type %u, expected a status", why, m.type);
	return m;
}

/* Client: one request, and the server's verdict. */
static bool ask(struct ep *e, struct msg *m, uint64_t *val)
{
	struct msg r;

	send_msg(e, m, 0);
	r = expect_status(e, "request");
	if (val)
		*val = r.val;
	return r.status == 0;
}

static void ep_ctrl_buffers(struct ep *e)
{
	unsigned int i;

	buf_new(e, &e->ctrl_rx, CTRL_SLOTS * CTRL_SLOT_SIZE,
		RNIC_ACC_LOCAL_WRITE);
	buf_new(e, &e->ctrl_tx, CTRL_SLOT_SIZE, RNIC_ACC_LOCAL_WRITE);
	buf_new(e, &e->data, DATA_SIZE, ACC_ALL);
	for (i = 0; i < CTRL_SLOTS; i++)
		post_ctrl_recv(e, i);
}

static struct region region_of(const struct buf *b)
{
	return (struct region){ (uintptr_t)b->p, b->stag, b->len };
}

/* ---- server ---- */

struct server {
	struct ep e;
	struct buf inv, oneshot;
	uint32_t last_invalidated;
};

static void server_reply(struct server *s, bool ok, uint64_t val)
{
	struct msg r = { .type = MSG_STATUS, .status = !ok, .val = val };

	send_msg(&s->e, &r, 0);
}

/* Events between messages; true once the connection is closed. */
static bool server_events(struct server *s)
{
	struct rnic_event ev;
	bool closed = false;

	while (read_event(&ev, 0)) {
		if (ev.type == RNIC_EV_CONN_REQUEST) {
			hold_event(&ev);	/* the next connection */
			continue;
		}
		printf("server: event %s arg0 0x%x arg1 0x%x\n",
		       event_name(ev.type), ev.arg0, ev.arg1);
		if (ev.type == RNIC_EV_TERM_SENT)
			result(check(s->oneshot.p, 1000, 77) < 0,
			       "server: Terminate sent (layer/etype 0x%x ecode 0x%x); one-shot region unchanged by the refused Write",
			       ev.arg0, ev.arg1);
		closed |= ev.type == RNIC_EV_CONN_CLOSED;
	}
	return closed;
}

/* Answers the client's requests until its connection goes away. */
static void server_session(struct server *s)
{
	static uint8_t payload[CTRL_SLOT_SIZE];
	struct ep *e = &s->e;
	struct rnic_cq_entry c;
	struct msg m = { .type = MSG_ADVERT };
	uint64_t *u64;
	long bad;

	m.data = region_of(&e->data);
	m.inv = region_of(&s->inv);
	m.oneshot = region_of(&s->oneshot);
	send_msg(e, &m, 0);
	for (;;) {
		if (!poll_cq(e->rcq, &c, 200)) {
			if (server_events(s))
				break;
			continue;
		}
		if (!recv_msg_done(e, &c, &m, payload, sizeof(payload))) {
			printf("server: receive completed with %s\n",
			       cqe_status_name(c.status));
			continue;
		}
		switch (m.type) {
		case MSG_SEND_DATA:
			bad = check(payload, c.byte_len - sizeof(m), m.seed);
			result(bad < 0 && c.byte_len - sizeof(m) == m.len,
			       "server: send received %u bytes, payload verified",
			       c.byte_len);
			server_reply(s, bad < 0, 0);
			break;
		case MSG_CHECK:
			bad = m.off + m.len <= DATA_SIZE ?
			      check(e->data.p + m.off, m.len, m.seed) : 0;
			result(bad < 0, "server: %" PRIu64 " bytes at offset %" PRIu64 " verified",
			       (uint64_t)m.len, (uint64_t)m.off);
			server_reply(s, bad < 0, 0);
			break;
		case MSG_FILL:
			if (m.off + m.len <= DATA_SIZE)
				fill(e->data.p + m.off, m.len, m.seed);
			server_reply(s, m.off + m.len <= DATA_SIZE, 0);
			break;
		case MSG_SET_U64:
			u64 = (uint64_t *)(e->data.p + (m.off & ~7ull));
			*u64 = m.val;
			server_reply(s, true, 0);
			break;
		case MSG_CHECK_U64:
			u64 = (uint64_t *)(e->data.p + (m.off & ~7ull));
			result(*u64 == m.val, "server: atomic target holds %" PRIu64 " (expected %" PRIu64 ")",
			       *u64, (uint64_t)m.val);
			server_reply(s, *u64 == m.val, *u64);
			break;
		case MSG_CHECK_ONESHOT:
			bad = check(s->oneshot.p, m.len, m.seed);
			result(bad < 0, "server: one-shot region written once, %" PRIu64 " bytes verified",
			       (uint64_t)m.len);
			server_reply(s, bad < 0, 0);
			break;
		case MSG_CHECK_INV:
			result(c.flags & RNIC_CQE_FLAG_WITH_INV &&
			       c.invalidated_stag == s->inv.stag,
			       "server: send-with-invalidate received, STag 0x%08x invalidated",
			       c.invalidated_stag);
			server_reply(s, c.flags & RNIC_CQE_FLAG_WITH_INV &&
				     c.invalidated_stag == s->inv.stag,
				     c.invalidated_stag);
			break;
		case MSG_PING:
			server_reply(s, true, m.val);
			break;
		case 0:		/* Immediate Data: no payload */
			if (c.flags & RNIC_CQE_FLAG_WITH_IMM) {
				result(c.imm == m.val || c.imm == 0xfeedf00d,
				       "server: immediate data 0x%08x received%s",
				       c.imm, c.flags & RNIC_CQE_FLAG_SOLICITED ?
				       " (solicited)" : "");
				server_reply(s, true, c.imm);
			}
			break;
		case MSG_BYE:
			break;
		default:
			printf("server: unknown message type %u\n", m.type);
		}
	}
}

static int cmd_server(const char *addr, int port, int conns)
{
	struct server s;
	int i;

	dev_open();
	ep_init(&s.e, 6);
	ep_listen(addr, port);
	for (i = 0; !conns || i < conns; i++) {
		if (i)
			ep_new_qp(&s.e, 6);
		memset(&s.inv, 0, sizeof(s.inv));
		memset(&s.oneshot, 0, sizeof(s.oneshot));
		if (!s.e.data.p)
			ep_ctrl_buffers(&s.e);
		else
			for (unsigned int k = 0; k < CTRL_SLOTS; k++)
				post_ctrl_recv(&s.e, k);
		buf_new(&s.e, &s.inv, 4096, RNIC_ACC_LOCAL_WRITE |
			RNIC_ACC_REMOTE_WRITE | RNIC_ACC_REMOTE_READ);
		if (reg_mr(&s.e, &s.oneshot, 4096, RNIC_ACC_LOCAL_WRITE |
			   RNIC_ACC_REMOTE_WRITE, RNIC_MR_POLICY_ONE_SHOT))
			die("REG_MR one-shot failed");
		ep_accept(&s.e, "rnic-tool server", 8, 8);
		printf("server: connection %d established\n", i + 1);
		server_session(&s);
		/* The regions of this connection go; the next gets new ones. */
		{
			struct rnic_u_stag st = { .stag = s.inv.stag };

			ioc(RNIC_IOC_DEREG_MR, &st, "DEREG_MR", false);
			st.stag = s.oneshot.stag;
			ioc(RNIC_IOC_DEREG_MR, &st, "DEREG_MR", false);
			munmap(s.inv.p, 4096);
			munmap(s.oneshot.p, 4096);
		}
		fflush(stdout);
	}
	close(fd);
	printf("server: %d connection(s) served, %d failure(s)\n", i, failures);
	return failures ? 1 : 0;
}

/* ---- client ---- */

struct client {
	struct ep e;
	struct msg adv;		/* the server's buffers */
};

static void client_start(struct client *cl, const char *addr, int port,
			 const char *mode)
{
	struct rnic_cq_entry c;
	char pdata[64];

	dev_open();
	ep_init(&cl->e, 6);
	ep_ctrl_buffers(&cl->e);
	snprintf(pdata, sizeof(pdata), "rnic-tool %s", mode);
	ep_connect(&cl->e, addr, port, pdata, 8, 8);
	if (!recv_msg(&cl->e, &cl->adv, &c, NULL, 0) ||
	    cl->adv.type != MSG_ADVERT)
		die("no advertisement from the server");
	printf("client: server buffer 0x%" PRIx64 " STag 0x%08x %u bytes; invalidate STag 0x%08x; one-shot STag 0x%08x\n",
	       (uint64_t)cl->adv.data.addr, cl->adv.data.stag,
	       cl->adv.data.len, cl->adv.inv.stag, cl->adv.oneshot.stag);
}

static struct rnic_sq_wqe rdma_wqe(uint8_t op, const struct buf *lb,
				   size_t loff, const struct region *r,
				   size_t roff, size_t len)
{
	struct rnic_sq_wqe w = { .opcode = op, .num_sge = 1 };

	w.sge[0] = sge(lb, loff, len);
	w.remote_stag = r->stag;
	w.remote_addr = r->addr + roff;
	return w;
}

static void client_send(struct client *cl, size_t len, uint32_t seed)
{
	struct msg m = { .type = MSG_SEND_DATA, .len = len, .seed = seed };
	struct msg r;

	fill(cl->e.ctrl_tx.p + sizeof(m), len, seed);
	send_msg(&cl->e, &m, len);
	r = expect_status(&cl->e, "send");
	result(r.status == 0, "send %zu bytes (+%zu header): delivered, server verified every byte",
	       len, sizeof(m));
}

static void client_write(struct client *cl, size_t off, size_t len,
			 uint32_t seed)
{
	struct ep *e = &cl->e;
	struct rnic_sq_wqe w = rdma_wqe(RNIC_WQE_WRITE, &e->data, 0,
					&cl->adv.data, off, len);
	struct msg m = { .type = MSG_CHECK, .off = off, .len = len,
			 .seed = seed };
	struct rnic_cq_entry c;

	fill(e->data.p, len, seed);
	c = do_send(e, &w, "RDMA Write");
	result(c.status == 0 && ask(e, &m, NULL),
	       "rdma-write %zu bytes to STag 0x%08x: completion %s, server verified every byte",
	       len, cl->adv.data.stag, cqe_status_name(c.status));
}

static void client_read(struct client *cl, size_t off, size_t len,
			uint32_t seed)
{
	struct ep *e = &cl->e;
	struct rnic_sq_wqe w = rdma_wqe(RNIC_WQE_READ, &e->data, DATA_SIZE / 2,
					&cl->adv.data, off, len);
	struct msg m = { .type = MSG_FILL, .off = off, .len = len,
			 .seed = seed };
	struct rnic_cq_entry c;
	long bad;

	memset(e->data.p + DATA_SIZE / 2, 0, len);
	if (!ask(e, &m, NULL))
		die("server could not fill its buffer");
	c = do_send(e, &w, "RDMA Read");
	bad = check(e->data.p + DATA_SIZE / 2, len, seed);
	result(c.status == 0 && c.byte_len == len && bad < 0,
	       "rdma-read %zu bytes from STag 0x%08x: completion %s, %u bytes, every byte verified",
	       len, cl->adv.data.stag, cqe_status_name(c.status), c.byte_len);
}

static void client_atomics(struct client *cl)
{
	struct ep *e = &cl->e;
	const size_t off = 8192;
	struct msg m = { .type = MSG_SET_U64, .off = off, .val = 1000 };
	struct rnic_sq_wqe w;
	struct rnic_cq_entry c;
	uint64_t *res = (uint64_t *)(e->data.p + 4096), val = 0;
	bool ok;

	if (!ask(e, &m, NULL))
		die("server could not set its atomic target");
	*res = 0;
	w = rdma_wqe(RNIC_WQE_ATOMIC_FADD, &e->data, 4096, &cl->adv.data,
		     off, 8);
	w.atomic_arg0 = 42;
	c = do_send(e, &w, "fetch-add");
	m = (struct msg){ .type = MSG_CHECK_U64, .off = off, .val = 1042 };
	ok = c.status == 0 && *res == 1000 && ask(e, &m, &val);
	result(ok, "fetch-add 42 on 1000: completion %s, returned %" PRIu64 ", target now %" PRIu64,
	       cqe_status_name(c.status), *res, val);

	*res = 0;
	w = rdma_wqe(RNIC_WQE_ATOMIC_CSWAP, &e->data, 4096, &cl->adv.data,
		     off, 8);
	w.atomic_arg0 = 1042;
	w.atomic_arg1 = 7;
	c = do_send(e, &w, "compare-swap");
	m.val = 7;
	ok = c.status == 0 && *res == 1042 && ask(e, &m, &val);
	result(ok, "compare-swap (1042 -> 7) matching: completion %s, returned %" PRIu64 ", target now %" PRIu64,
	       cqe_status_name(c.status), *res, val);

	*res = 0;
	w.wr_id = 0;
	w.atomic_arg0 = 1;
	w.atomic_arg1 = 9;
	c = do_send(e, &w, "compare-swap");
	ok = c.status == 0 && *res == 7 && ask(e, &m, &val);
	result(ok, "compare-swap (1 -> 9) not matching: completion %s, returned %" PRIu64 ", target unchanged %" PRIu64,
	       cqe_status_name(c.status), *res, val);
}

static void client_immediate(struct client *cl)
{
	struct rnic_sq_wqe w = { .opcode = RNIC_WQE_IMM_DATA,
				 .flags = RNIC_WQE_FLAG_SOLICITED,
				 .imm_or_stag = 0xfeedf00d };
	struct rnic_cq_entry c;
	struct msg r;

	c = do_send(&cl->e, &w, "immediate data");
	r = expect_status(&cl->e, "immediate data");
	result(c.status == 0 && r.status == 0 && r.val == 0xfeedf00d,
	       "immediate data 0x%08x (solicited): completion %s, server received 0x%08" PRIx64,
	       w.imm_or_stag, cqe_status_name(c.status), (uint64_t)r.val);
}

static void client_send_inv(struct client *cl)
{
	struct ep *e = &cl->e;
	struct msg m = { .type = MSG_CHECK_INV };
	struct rnic_sq_wqe w = { .opcode = RNIC_WQE_SEND_INV, .num_sge = 1,
				 .imm_or_stag = cl->adv.inv.stag };
	struct rnic_cq_entry c;
	struct msg r;

	memcpy(e->ctrl_tx.p, &m, sizeof(m));
	w.sge[0] = sge(&e->ctrl_tx, 0, sizeof(m));
	c = do_send(e, &w, "send-with-invalidate");
	r = expect_status(e, "send-with-invalidate");
	result(c.status == 0 && r.status == 0 && r.val == cl->adv.inv.stag,
	       "send-with-invalidate of STag 0x%08x: completion %s, server's receive says STag 0x%08" PRIx64 " invalidated",
	       cl->adv.inv.stag, cqe_status_name(c.status), (uint64_t)r.val);
}

/* The last test: it ends the connection. */
static void client_oneshot(struct client *cl)
{
	struct ep *e = &cl->e;
	struct rnic_sq_wqe w = rdma_wqe(RNIC_WQE_WRITE, &e->data, 0,
					&cl->adv.oneshot, 0, 1000);
	struct msg m = { .type = MSG_CHECK_ONESHOT, .len = 1000, .seed = 77 };
	struct rnic_cmd_query_qp q = { .qpn = e->qpn };
	struct rnic_cq_entry c;
	struct rnic_event ev;
	bool term = false, closed = false;

	fill(e->data.p, 1000, 77);
	c = do_send(e, &w, "one-shot Write");
	result(c.status == 0 && ask(e, &m, NULL),
	       "rdma-write 1000 bytes to one-shot STag 0x%08x: completion %s, server verified",
	       cl->adv.oneshot.stag, cqe_status_name(c.status));

	fill(e->data.p, 1000, 78);
	w.wr_id = 0;
	c = do_send(e, &w, "second one-shot Write");
	/* iWARP Writes are not acknowledged: it completes; the peer refuses. */
	while (!term || !closed) {
		if (!get_event(&ev, TIMEOUT_MS))
			break;
		printf("client: event %s arg0 0x%x arg1 0x%x\n",
		       event_name(ev.type), ev.arg0, ev.arg1);
		if (ev.type == RNIC_EV_TERM_RECEIVED) {
			term = true;
			result(ev.arg0 == 0x101,
			       "second rdma-write to the one-shot STag refused: Terminate received (layer/etype 0x%x ecode 0x%x: DDP tagged buffer, invalid STag)",
			       ev.arg0, ev.arg1);
		}
		closed |= ev.type == RNIC_EV_CONN_CLOSED;
	}
	if (!term)
		result(false, "second rdma-write to the one-shot STag: no Terminate");
	ioc(RNIC_IOC_QUERY_QP, &q, "QUERY_QP", true);
	w.wr_id = 0;
	post_send(e, &w);
	c = wait_cqe(e->scq, "Write after Terminate");
	while (c.wr_id != w.wr_id)
		c = wait_cqe(e->scq, "Write after Terminate");
	result(q.state >= RNIC_QPS_TERMINATE &&
	       c.status == RNIC_CQE_WR_FLUSH_ERR,
	       "QP terminated (state %u); the next work request completes with %s",
	       q.state, cqe_status_name(c.status));
}

static int cmd_client(const char *addr, int port)
{
	struct client cl;

	client_start(&cl, addr, port, "client");
	client_send(&cl, 1, 1);
	client_send(&cl, 4000, 2);
	client_write(&cl, 0, 65536, 3);
	client_write(&cl, 100000, 300000, 4);
	client_read(&cl, 4096, 65536, 5);
	client_read(&cl, 300000, 200000, 6);
	client_atomics(&cl);
	client_immediate(&cl);
	client_send_inv(&cl);
	client_oneshot(&cl);
	close(fd);
	printf("client: %s (%d failure(s))\n", failures ? "FAILED" : "all operations passed",
	       failures);
	return failures ? 1 : 0;
}

/* RDMA Writes (or Reads) of @size, @count of them, 16 in flight. */
static double stream(struct client *cl, uint8_t op, size_t size, int count)
{
	struct ep *e = &cl->e;
	struct rnic_cq_entry c;
	int posted = 0, done = 0;
	double t0 = now_s();

	while (done < count) {
		while (posted < count && posted - done < 16) {
			struct rnic_sq_wqe w = rdma_wqe(op, &e->data,
				op == RNIC_WQE_READ ? DATA_SIZE / 2 : 0,
				&cl->adv.data, 0, size);

			post_send(e, &w);
			posted++;
		}
		c = wait_cqe(e->scq, "stream");
		if (c.status)
			die("stream: %s", cqe_status_name(c.status));
		done++;
	}
	return now_s() - t0;
}

static int cmd_bw(const char *addr, int port, size_t size, int count)
{
	struct msg m = { .type = MSG_CHECK, .len = size, .seed = 9 };
	struct client cl;
	double t;
	bool ok;

	if (size > DATA_SIZE / 2)
		die("-S at most %d", DATA_SIZE / 2);
	client_start(&cl, addr, port, "bw");
	fill(cl.e.data.p, size, 9);
	t = now_s();
	stream(&cl, RNIC_WQE_WRITE, size, count);
	ok = ask(&cl.e, &m, NULL);	/* the Writes have landed */
	t = now_s() - t;
	result(ok, "bw rdma-write: %d x %zu bytes = %.1f MB in %.3f s: %.2f MB/s (server verified the data)",
	       count, size, count * (double)size / 1e6, t,
	       count * (double)size / 1e6 / t);
	m = (struct msg){ .type = MSG_FILL, .len = size, .seed = 10 };
	ask(&cl.e, &m, NULL);
	t = stream(&cl, RNIC_WQE_READ, size, count);
	result(check(cl.e.data.p + DATA_SIZE / 2, size, 10) < 0,
	       "bw rdma-read: %d x %zu bytes = %.1f MB in %.3f s: %.2f MB/s (data verified)",
	       count, size, count * (double)size / 1e6, t,
	       count * (double)size / 1e6 / t);
	ep_disconnect(&cl.e);
	close(fd);
	return failures ? 1 : 0;
}

static int cmd_lat(const char *addr, int port, size_t size, int count)
{
	struct msg m = { .type = MSG_PING };
	struct rnic_cq_entry c;
	struct client cl;
	double t0, t;
	int i;

	if (size < sizeof(m))
		size = sizeof(m);
	if (size > CTRL_SLOT_SIZE)
		die("-S at most %d", CTRL_SLOT_SIZE);
	client_start(&cl, addr, port, "lat");
	t0 = now_s();
	for (i = 0; i < count; i++) {
		m.val = i;
		send_msg(&cl.e, &m, size - sizeof(m));
		if (expect_status(&cl.e, "ping").val != (uint64_t)i)
			die("pong %d out of order", i);
	}
	t = now_s() - t0;
	result(true, "lat send/recv ping-pong: %d x %zu bytes: %.1f us per round trip, %.1f us one way",
	       count, size, t * 1e6 / count, t * 1e6 / count / 2);
	t0 = now_s();
	for (i = 0; i < count; i++) {
		struct rnic_sq_wqe w = rdma_wqe(RNIC_WQE_READ, &cl.e.data,
						DATA_SIZE / 2, &cl.adv.data,
						0, 8);

		c = do_send(&cl.e, &w, "Read");
		if (c.status)
			die("Read: %s", cqe_status_name(c.status));
	}
	t = now_s() - t0;
	result(true, "lat rdma-read 8 bytes: %d reads: %.1f us each", count,
	       t * 1e6 / count);
	ep_disconnect(&cl.e);
	close(fd);
	return failures ? 1 : 0;
}

/* ---- rping: rdma-core's librdmacm/examples/rping.c message flow ---- */

struct rping_info {		/* big-endian on the wire */
	uint64_t buf;
	uint32_t rkey;
	uint32_t size;
};

#define RPING_MSG_FMT	"rdma-ping-%d: "

/* What rping's client puts in its buffer for ping @n. */
static void rping_fill(char *p, size_t size, int n, int *start)
{
	int cc = snprintf(p, size, RPING_MSG_FMT, n);
	int c = *start;

	for (size_t i = cc; i < size; i++) {
		p[i] = c;
		if (++c > 122)
			c = 65;
	}
	if (++*start > 122)
		*start = 65;
	p[size - 1] = 0;
}

struct rping {
	struct ep e;
	struct buf recv, send, rdma, start;
	size_t size;
	int count;
	bool verbose;
};

static void rping_post_recv(struct rping *r)
{
	post_recv(&r->e, 1, sge(&r->recv, 0, sizeof(struct rping_info)));
}

static void rping_send_info(struct rping *r, const struct buf *b)
{
	struct rping_info *i = (void *)r->send.p;
	struct rnic_sq_wqe w = { .opcode = RNIC_WQE_SEND, .num_sge = 1 };
	struct rnic_cq_entry c;

	i->buf = htobe64((uintptr_t)(b ? b->p : 0));
	i->rkey = htobe32(b ? b->stag : 0);
	i->size = htobe32(b ? r->size : 0);
	w.sge[0] = sge(&r->send, 0, sizeof(*i));
	c = do_send(&r->e, &w, "rping Send");
	if (c.status)
		die("rping Send: %s", cqe_status_name(c.status));
}

/*
 * A receive completion, or false once the connection is gone: a peer's
 * graceful close takes the QP to IDLE with its receives still posted, so
 * no flush completion says so; CONN_CLOSED does (and stays held).
 */
static bool poll_recv_or_closed(struct ep *e, struct rnic_cq_entry *c)
{
	struct rnic_event ev;

	for (unsigned int waited = 0; waited < TIMEOUT_MS; waited += 200) {
		if (poll_cq(e->rcq, c, 200))
			return true;
		while (read_event(&ev, 0)) {
			hold_event(&ev);
			if ((ev.type == RNIC_EV_CONN_CLOSED ||
			     ev.type == RNIC_EV_CONN_ERROR) && ev.id == e->qpn) {
				printf("rping: connection closed by the peer (%s)\n",
				       event_name(ev.type));
				c->status = RNIC_CQE_WR_FLUSH_ERR;
				return true;
			}
		}
	}
	return false;
}

/* The peer's 16-byte message; false when the connection ended. */
static bool rping_recv_info(struct rping *r, struct rping_info *out)
{
	struct rnic_cq_entry c;

	if (!poll_recv_or_closed(&r->e, &c))
		die("rping: no message from the peer");
	if (c.status)
		return false;
	if (c.byte_len != sizeof(*out))
		die("rping: received bogus data, size %u", c.byte_len);
	memcpy(out, r->recv.p, sizeof(*out));
	out->buf = be64toh(out->buf);
	out->rkey = be32toh(out->rkey);
	out->size = be32toh(out->size);
	rping_post_recv(r);
	return true;
}

static void rping_setup(struct rping *r)
{
	dev_open();
	ep_init(&r->e, 4);
	buf_new(&r->e, &r->recv, sizeof(struct rping_info),
		RNIC_ACC_LOCAL_WRITE);
	buf_new(&r->e, &r->send, sizeof(struct rping_info),
		RNIC_ACC_LOCAL_WRITE);
	buf_new(&r->e, &r->rdma, r->size, RNIC_ACC_LOCAL_WRITE |
		RNIC_ACC_REMOTE_READ | RNIC_ACC_REMOTE_WRITE);
	buf_new(&r->e, &r->start, r->size, RNIC_ACC_LOCAL_WRITE |
		RNIC_ACC_REMOTE_READ | RNIC_ACC_REMOTE_WRITE);
	rping_post_recv(r);
}

static int rping_client(struct rping *r, const char *addr, int port)
{
	struct rping_info go;
	int ping, start = 65, ok = 0;

	rping_setup(r);
	ep_connect(&r->e, addr, port, NULL, 1, 1);
	for (ping = 0; !r->count || ping < r->count; ping++) {
		rping_fill((char *)r->start.p, r->size, ping, &start);
		rping_send_info(r, &r->start);		/* read my source */
		if (!rping_recv_info(r, &go))
			break;
		rping_send_info(r, &r->rdma);		/* write my sink */
		if (!rping_recv_info(r, &go))
			break;
		if (memcmp(r->start.p, r->rdma.p, r->size)) {
			fprintf(stderr, "data mismatch!\n");
			break;
		}
		ok++;
		if (r->verbose)
			printf("ping data: %s\n", r->rdma.p);
		memset(r->rdma.p, 0, r->size);
	}
	ep_disconnect(&r->e);
	result(ok == r->count, "rping client: %d of %d pings verified (%zu bytes each)",
	       ok, r->count, r->size);
	return ok == r->count ? 0 : 1;
}

static int rping_server(struct rping *r, const char *addr, int port)
{
	struct rping_info info;
	struct rnic_sq_wqe w;
	struct rnic_cq_entry c;
	struct rnic_event ev;
	char *expect = malloc(r->size);
	int ping, start = 65, verified = 0;

	rping_setup(r);
	ep_listen(addr, port);
	ep_accept(&r->e, NULL, 1, 1);
	for (ping = 0; !r->count || ping < r->count; ping++) {
		if (!rping_recv_info(r, &info))	/* the client's source */
			break;
		if (info.size > r->size)
			die("rping: client buffer of %u bytes, mine %zu",
			    info.size, r->size);
		w = (struct rnic_sq_wqe){ .opcode = RNIC_WQE_READ,
					  .num_sge = 1,
					  .remote_stag = info.rkey,
					  .remote_addr = info.buf };
		w.sge[0] = sge(&r->rdma, 0, info.size);
		c = do_send(&r->e, &w, "rping RDMA Read");
		if (c.status)
			die("rping RDMA Read: %s", cqe_status_name(c.status));
		rping_fill(expect, info.size, ping, &start);
		if (!memcmp(expect, r->rdma.p, info.size))
			verified++;
		else
			fprintf(stderr, "rping: ping %d: data differs from rping's pattern\n",
				ping);
		if (r->verbose)
			printf("server ping data: %s\n", r->rdma.p);
		rping_send_info(r, NULL);		/* go ahead */
		if (!rping_recv_info(r, &info))	/* the client's sink */
			break;
		w = (struct rnic_sq_wqe){ .opcode = RNIC_WQE_WRITE,
					  .num_sge = 1,
					  .remote_stag = info.rkey,
					  .remote_addr = info.buf };
		w.sge[0] = sge(&r->rdma, 0,
			       strnlen((char *)r->rdma.p, r->size - 1) + 1);
		c = do_send(&r->e, &w, "rping RDMA Write");
		if (c.status)
			die("rping RDMA Write: %s", cqe_status_name(c.status));
		rping_send_info(r, NULL);		/* begin again */
	}
	/* rping's client disconnects after its last ping. */
	while (get_event(&ev, TIMEOUT_MS))
		if (ev.type == RNIC_EV_CONN_CLOSED)
			break;
	result(verified == ping && (!r->count || ping == r->count),
	       "rping server: %d pings, %d verified against rping's pattern (%zu-byte buffer)",
	       ping, verified, r->size);
	free(expect);
	return failures ? 1 : 0;
}

/* ---- info ---- */

static int cmd_info(void)
{
	struct rnic_device_attr a;
	char r[24];

	dev_open();
	ioc(RNIC_IOC_QUERY_DEVICE, &a, "QUERY_DEVICE", true);
	printf("%s: rnic ABI %u.%u, MPA rev %u%s%s%s, RTR %s\n", dev_path,
	       a.abi_version >> 16, a.abi_version & 0xffff, a.mpa_rev,
	       a.flags & RNIC_DEV_CRC_REQUIRED ? ", CRC required" : "",
	       a.flags & RNIC_DEV_STAG_ONE_SHOT ? ", STags one-shot" : "",
	       a.flags & RNIC_DEV_MPA_P2P ? ", p2p" : "",
	       rtr_str(a.mpa_rtr, r, sizeof(r)));
	printf("  max_pd %u max_mr %u max_mw %u max_cq %u max_cqe %u\n",
	       a.max_pd, a.max_mr, a.max_mw, a.max_cq, a.max_cqe);
	printf("  max_qp %u max_qp_wr %u max_srq %u max_srq_wr %u max_sge %u\n",
	       a.max_qp, a.max_qp_wr, a.max_srq, a.max_srq_wr, a.max_sge);
	printf("  max_ird %u max_ord %u max_pdata %u max_mr_size %" PRIu64 " page_size_cap 0x%x msix %u\n",
	       a.max_ird, a.max_ord, a.max_pdata, (uint64_t)a.max_mr_size,
	       a.page_size_cap, a.msix_vectors);
	close(fd);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rnic-tool [-d /dev/rnicN] info\n"
		"  (-R none|TYPE,...: RFC 6581 RTR types CONNECT offers and\n"
		"   ACCEPT takes, TYPE send, write or read; default: mpa-rtr)\n"
		"       rnic-tool server [-a ADDR] [-p PORT] [-n CONNECTIONS]\n"
		"       rnic-tool client|bw|lat -a ADDR -p PORT [-S SIZE] [-C COUNT]\n"
		"       rnic-tool rping -s|-c -a ADDR -p PORT [-C N] [-S SIZE] [-v]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *cmd, *addr = "127.0.0.1";
	int port = 7174, count = 0, conns = 0, opt;
	bool server = false, client = false, verbose = false;
	size_t size = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2 && !strcmp(argv[1], "-d")) {
		dev_path = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc < 2)
		usage();
	cmd = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "a:p:n:S:C:R:scvV")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'n': conns = atoi(optarg); break;
		case 'S': size = strtoul(optarg, NULL, 0); break;
		case 'C': count = atoi(optarg); break;
		case 'R': rtr_opt = rtr_parse(optarg); break;
		case 's': server = true; break;
		case 'c': client = true; break;
		case 'v': verbose = true; break;
		case 'V': break;	/* rping's validate: always done */
		default: usage();
		}
	}
	if (!strcmp(cmd, "info"))
		return cmd_info();
	if (!strcmp(cmd, "server"))
		return cmd_server(addr, port, conns);
	if (!strcmp(cmd, "client"))
		return cmd_client(addr, port);
	if (!strcmp(cmd, "bw"))
		return cmd_bw(addr, port, size ? size : 65536,
			      count ? count : 200);
	if (!strcmp(cmd, "lat"))
		return cmd_lat(addr, port, size ? size : 64,
			       count ? count : 200);
	if (!strcmp(cmd, "rping") && server != client) {
		struct rping r = { .size = size ? size : 64, .count = count,
				   .verbose = verbose };

		if (r.size < 32)
			die("-S at least 32");
		return server ? rping_server(&r, addr, port)
			      : rping_client(&r, addr, port);
	}
	usage();
	return 2;
}
