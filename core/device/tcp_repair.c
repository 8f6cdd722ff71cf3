/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Moving one connected TCP socket with Linux's TCP repair mode: see
 * tcp_repair.h.  The kernel's side of it is net/ipv4/tcp.c (TCP_REPAIR*,
 * tcp_peek_sndq, tcp_send_rcvq) and tcp_output.c (the repair branch of
 * tcp_write_xmit); CRIU's soccr/soccr.c is the other user.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include "tcp_repair.h"

#define RNIC_TCPR_MAGIC         "RNTR"
/* Bits of struct rnic_tcpr_state.flags. */
#define RNIC_TCPR_NODELAY       1u
#define RNIC_TCPR_NONBLOCK      2u
#define RNIC_TCPR_FLAGS         (RNIC_TCPR_NODELAY | RNIC_TCPR_NONBLOCK)
/* The negotiated options TCP_REPAIR_OPTIONS can set again. */
#define RNIC_TCPR_OPTS \
    (TCPI_OPT_TIMESTAMPS | TCPI_OPT_SACK | TCPI_OPT_WSCALE)
#define RNIC_TCPR_WSCALE_MAX    14      /* RFC 7323 2.3 */
/*
 * The most the timestamp clock moves on at a restore: less than half its
 * range (2^31), or the peer would see it go back.  12 days in ms, 17
 * minutes in the microseconds of usec timestamps.
 */
#define RNIC_TCPR_TS_STEP_MAX   (1u << 30)
/* Saving again when the socket moved while it was read (see the caller). */
#define RNIC_TCPR_TRIES         8

/*
 * Everything a blob holds but the queues' bytes.  The blob is this, field
 * by field in RNIC_TCPR_FIELDS order as 32-bit little-endian numbers,
 * then the two addresses, behind an 8-byte magic, version and header
 * length.
 */
struct rnic_tcpr_state {
    uint32_t family;            /* 4 or 6 */
    uint32_t opts;              /* TCPI_OPT_* within RNIC_TCPR_OPTS */
    uint32_t snd_wscale, rcv_wscale;
    uint32_t flags;             /* RNIC_TCPR_* */
    uint32_t lport, rport;
    uint32_t scope_id;          /* IPv6: the interface of a link-local */
    uint32_t mss;               /* the MSS clamp: the peer's MSS option */
    uint32_t tstamp;            /* TCP_TIMESTAMP: the timestamp clock */
    uint32_t saved_lo, saved_hi; /* CLOCK_REALTIME at the save, in ms */
    uint32_t snd_wl1, snd_wnd, max_window, rcv_wnd, rcv_wup;
    uint32_t sndbuf, rcvbuf;    /* as getsockopt reads them: doubled */
    uint32_t send_seq;          /* snd_una: the send queue's first byte */
    uint32_t send_len, unsent_len;
    uint32_t recv_seq;          /* copied_seq: the receive queue's first */
    uint32_t recv_len;
    uint8_t laddr[16], raddr[16];   /* IPv4: the first 4 bytes */
};

#define RNIC_TCPR_FIELDS(X) \
    X(family) X(opts) X(snd_wscale) X(rcv_wscale) X(flags) X(lport) \
    X(rport) X(scope_id) X(mss) X(tstamp) X(saved_lo) X(saved_hi) \
    X(snd_wl1) X(snd_wnd) \
    X(max_window) X(rcv_wnd) X(rcv_wup) X(sndbuf) X(rcvbuf) X(send_seq) \
    X(send_len) X(unsent_len) X(recv_seq) X(recv_len)
/* The list as a struct, to check it against the header's length. */
#define RNIC_TCPR_MEMBER(m) uint32_t m;
struct rnic_tcpr_fields {
    RNIC_TCPR_FIELDS(RNIC_TCPR_MEMBER)
};
#undef RNIC_TCPR_MEMBER

_Static_assert(RNIC_TCP_REPAIR_HDR_LEN ==
               8 + sizeof(struct rnic_tcpr_fields) + 2 * 16,
               "RNIC_TCP_REPAIR_HDR_LEN is the encoded header's length");
_Static_assert(offsetof(struct rnic_tcpr_state, laddr) ==
               sizeof(struct rnic_tcpr_fields),
               "RNIC_TCPR_FIELDS lists every number of the state");

/* What moves while the state is read: compared before and after. */
struct rnic_tcpr_seqs {
    uint32_t outq, notsent, inq;    /* SIOCOUTQ, SIOCOUTQNSD, SIOCINQ */
    uint32_t write_seq, rcv_nxt;    /* TCP_QUEUE_SEQ of each queue */
    struct tcp_repair_window win;
};

static uint8_t *rnic_tcpr_put32(uint8_t *p, uint32_t v)
{
    p[0] = v;
    p[1] = v >> 8;
    p[2] = v >> 16;
    p[3] = v >> 24;
    return p + 4;
}

static uint32_t rnic_tcpr_get32(const uint8_t **p)
{
    const uint8_t *q = *p;

    *p += 4;
    return q[0] | q[1] << 8 | q[2] << 16 | (uint32_t)q[3] << 24;
}

static int rnic_tcpr_setint(int fd, int level, int name, int val)
{
    return setsockopt(fd, level, name, &val, sizeof(val)) < 0 ? -errno : 0;
}

static int rnic_tcpr_getint(int fd, int level, int name, uint32_t *val)
{
    int v = 0;
    socklen_t l = sizeof(v);

    if (getsockopt(fd, level, name, &v, &l) < 0) {
        return -errno;
    }
    *val = v;
    return 0;
}

static int rnic_tcpr_ioctl(int fd, unsigned long req, uint32_t *val)
{
    int v = 0;

    if (ioctl(fd, req, &v) < 0) {
        return -errno;
    }
    *val = v;
    return 0;
}

/* Selects the queue that TCP_QUEUE_SEQ, send() and recv() act on. */
static int rnic_tcpr_queue(int fd, int queue)
{
    return rnic_tcpr_setint(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, queue);
}

/*
 * The caller's own filter would be lost to ours and detached by cancel;
 * a socket with one, or one saved already, is refused.  An eBPF filter
 * cannot be read back: getsockopt fails then.
 */
static bool rnic_tcpr_has_filter(int fd)
{
    struct sock_filter none;
    socklen_t n = 0;

    return getsockopt(fd, SOL_SOCKET, SO_GET_FILTER, &none, &n) < 0 || n;
}

/*
 * Repair mode alone does not stop the receive path: the kernel would go
 * on taking in and acknowledging segments, and bytes acknowledged after
 * the save would be lost with the old socket.  A filter that drops
 * everything makes them unacknowledged instead: the peer sends them
 * again to the new socket.  It runs before the segment reaches TCP.
 */
static int rnic_tcpr_drop_all(int fd)
{
    struct sock_filter drop[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
    struct sock_fprog prog = { .len = 1, .filter = drop };

    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
                   sizeof(prog)) < 0) {
        return -errno;
    }
    return 0;
}

/* The state check, before repair mode and on every read in it. */
static int rnic_tcpr_info(int fd, struct tcp_info *ti)
{
    socklen_t l = sizeof(*ti);

    memset(ti, 0, sizeof(*ti));
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &l) < 0) {
        return errno == ENOPROTOOPT ? -EOPNOTSUPP : -errno;
    }
    if (l < offsetof(struct tcp_info, tcpi_rto)) {
        return -EIO;
    }
    switch (ti->tcpi_state) {
    case TCP_ESTABLISHED:
        return 0;
    case TCP_FIN_WAIT1:
    case TCP_FIN_WAIT2:
    case TCP_CLOSE_WAIT:
    case TCP_CLOSING:
    case TCP_LAST_ACK:
        return -EOPNOTSUPP;
    default:
        return -ENOTCONN;
    }
}

/* One end of the 4-tuple, as getsockname() or getpeername() gave it. */
static void rnic_tcpr_addr_from(const struct sockaddr_storage *ss,
                                uint8_t *addr, uint32_t *port)
{
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

        memcpy(addr, &s4->sin_addr, 4);
        *port = ntohs(s4->sin_port);
    } else {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

        memcpy(addr, &s6->sin6_addr, 16);
        *port = ntohs(s6->sin6_port);
    }
}

/* The 4-tuple and what is read once, outside repair mode. */
static int rnic_tcpr_save_socket(int fd, struct rnic_tcpr_state *st)
{
    struct sockaddr_storage ls, rs;
    socklen_t ll = sizeof(ls), rl = sizeof(rs);
    uint32_t proto = 0, nodelay = 0;
    int fl, ret;

    if (getsockname(fd, (struct sockaddr *)&ls, &ll) < 0 ||
        getpeername(fd, (struct sockaddr *)&rs, &rl) < 0) {
        return -errno;
    }
    if (ls.ss_family != rs.ss_family ||
        (ls.ss_family != AF_INET && ls.ss_family != AF_INET6)) {
        return -EAFNOSUPPORT;
    }
    /* Not SCTP or MPTCP on a stream socket either: TCP itself. */
    ret = rnic_tcpr_getint(fd, SOL_SOCKET, SO_PROTOCOL, &proto);
    if (ret) {
        return ret;
    }
    if (proto != IPPROTO_TCP) {
        return -EOPNOTSUPP;
    }
    st->family = ls.ss_family == AF_INET ? 4 : 6;
    rnic_tcpr_addr_from(&ls, st->laddr, &st->lport);
    rnic_tcpr_addr_from(&rs, st->raddr, &st->rport);
    if (ls.ss_family == AF_INET6) {
        st->scope_id = ((const struct sockaddr_in6 *)&ls)->sin6_scope_id;
    }
    fl = fcntl(fd, F_GETFL);
    if (fl < 0) {
        return -errno;
    }
    ret = rnic_tcpr_getint(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay);
    if (!ret) {
        ret = rnic_tcpr_getint(fd, SOL_SOCKET, SO_SNDBUF, &st->sndbuf);
    }
    if (!ret) {
        ret = rnic_tcpr_getint(fd, SOL_SOCKET, SO_RCVBUF, &st->rcvbuf);
    }
    if (ret) {
        return ret;
    }
    st->flags = (nodelay ? RNIC_TCPR_NODELAY : 0) |
                (fl & O_NONBLOCK ? RNIC_TCPR_NONBLOCK : 0);
    /* A tuning value, not state: the bound, rather than no migration. */
    if (st->sndbuf > RNIC_TCP_REPAIR_QUEUE_MAX) {
        st->sndbuf = RNIC_TCP_REPAIR_QUEUE_MAX;
    }
    if (st->rcvbuf > RNIC_TCP_REPAIR_QUEUE_MAX) {
        st->rcvbuf = RNIC_TCP_REPAIR_QUEUE_MAX;
    }
    return 0;
}

static uint64_t rnic_tcpr_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Negotiated options; in repair mode TCP_MAXSEG reads the MSS clamp. */
static int rnic_tcpr_save_options(int fd, struct rnic_tcpr_state *st)
{
    struct tcp_info ti;
    int ret = rnic_tcpr_info(fd, &ti);

    if (ret) {
        return ret;
    }
    st->opts = ti.tcpi_options & RNIC_TCPR_OPTS;
    if (st->opts & TCPI_OPT_WSCALE) {
        st->snd_wscale = ti.tcpi_snd_wscale;
        st->rcv_wscale = ti.tcpi_rcv_wscale;
    }
    ret = rnic_tcpr_getint(fd, IPPROTO_TCP, TCP_MAXSEG, &st->mss);
    if (!ret && (st->opts & TCPI_OPT_TIMESTAMPS)) {
        uint64_t now = rnic_tcpr_wall_ms();

        ret = rnic_tcpr_getint(fd, IPPROTO_TCP, TCP_TIMESTAMP, &st->tstamp);
        st->saved_lo = now;
        st->saved_hi = now >> 32;
    }
    return ret;
}

/*
 * The timestamp clock at a restore: as saved, plus the time the move
 * took.  The old socket may still send after the save (a retransmission
 * before it is closed) with later timestamps; a new socket that went on
 * from the saved value would be behind them, and the peer's PAWS check
 * would drop its segments until it caught up.  Wall-clock time, so that
 * it holds across hosts as far as their clocks agree.
 */
static uint32_t rnic_tcpr_tstamp_now(const struct rnic_tcpr_state *st)
{
    uint64_t saved = (uint64_t)st->saved_hi << 32 | st->saved_lo;
    uint64_t now = rnic_tcpr_wall_ms(), step;

    /*
     * Two ms more: the two clocks tick in other phases, and the step is
     * made even below; a clock a little ahead does no harm.
     */
    step = (now > saved ? now - saved : 0) + 2;
    /* Bit 0 says the clock counts microseconds (Linux 6.7 on). */
    if (st->tstamp & 1) {
        step = step < RNIC_TCPR_TS_STEP_MAX / 1000 ? step * 1000 :
               RNIC_TCPR_TS_STEP_MAX;
    }
    if (step > RNIC_TCPR_TS_STEP_MAX) {
        step = RNIC_TCPR_TS_STEP_MAX;
    }
    /* Even: the step must not flip bit 0. */
    return st->tstamp + (uint32_t)(step & ~(uint64_t)1);
}

static int rnic_tcpr_read_seqs(int fd, struct rnic_tcpr_seqs *s)
{
    socklen_t l = sizeof(s->win);
    int ret;

    memset(s, 0, sizeof(*s));
    if (getsockopt(fd, IPPROTO_TCP, TCP_REPAIR_WINDOW, &s->win, &l) < 0) {
        return -errno;
    }
    ret = rnic_tcpr_ioctl(fd, SIOCOUTQ, &s->outq);
    if (!ret) {
        ret = rnic_tcpr_ioctl(fd, SIOCOUTQNSD, &s->notsent);
    }
    if (!ret) {
        ret = rnic_tcpr_ioctl(fd, SIOCINQ, &s->inq);
    }
    if (!ret) {
        ret = rnic_tcpr_queue(fd, TCP_SEND_QUEUE);
    }
    if (!ret) {
        ret = rnic_tcpr_getint(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, &s->write_seq);
    }
    if (!ret) {
        ret = rnic_tcpr_queue(fd, TCP_RECV_QUEUE);
    }
    if (!ret) {
        ret = rnic_tcpr_getint(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, &s->rcv_nxt);
    }
    return ret;
}

/*
 * The @n bytes of @queue, read without taking them.  One byte more is
 * asked for: getting it means the queue grew since it was measured.
 */
static int rnic_tcpr_peek(int fd, int queue, uint32_t n, uint8_t **out)
{
    uint8_t *p;
    ssize_t r;
    int ret;

    *out = NULL;
    if (!n) {
        return 0;
    }
    ret = rnic_tcpr_queue(fd, queue);
    if (ret) {
        return ret;
    }
    p = malloc((size_t)n + 1);
    if (!p) {
        return -ENOMEM;
    }
    r = recv(fd, p, (size_t)n + 1, MSG_PEEK | MSG_DONTWAIT);
    if (r != (ssize_t)n) {
        ret = r < 0 && errno != EAGAIN ? -errno : -EAGAIN;
        free(p);
        return ret;
    }
    *out = p;
    return 0;
}

/*
 * One consistent reading of the socket in repair mode, or -EAGAIN.  The
 * filter stops new segments, but one a softirq was already handling may
 * still land, and a timer may still send (a loss probe moves bytes from
 * unsent to sent): what was read is kept only if nothing moved meanwhile.
 */
static int rnic_tcpr_snapshot(int fd, struct rnic_tcpr_state *st,
                              uint8_t **sendq, uint8_t **recvq)
{
    struct rnic_tcpr_seqs a, b;
    int ret;

    *sendq = *recvq = NULL;
    ret = rnic_tcpr_save_options(fd, st);
    if (!ret) {
        ret = rnic_tcpr_read_seqs(fd, &a);
    }
    if (ret) {
        return ret;
    }
    if (a.outq > RNIC_TCP_REPAIR_QUEUE_MAX ||
        a.inq > RNIC_TCP_REPAIR_QUEUE_MAX) {
        return -E2BIG;
    }
    if (a.notsent > a.outq) {
        return -EAGAIN;
    }
    ret = rnic_tcpr_peek(fd, TCP_RECV_QUEUE, a.inq, recvq);
    if (!ret) {
        ret = rnic_tcpr_peek(fd, TCP_SEND_QUEUE, a.outq, sendq);
    }
    if (!ret) {
        ret = rnic_tcpr_read_seqs(fd, &b);
    }
    if (!ret && memcmp(&a, &b, sizeof(a))) {
        ret = -EAGAIN;
    }
    if (ret) {
        free(*sendq);
        free(*recvq);
        *sendq = *recvq = NULL;
        return ret;
    }
    st->send_seq = a.write_seq - a.outq;
    st->send_len = a.outq;
    st->unsent_len = a.notsent;
    st->recv_seq = a.rcv_nxt - a.inq;
    st->recv_len = a.inq;
    st->snd_wl1 = a.win.snd_wl1;
    st->snd_wnd = a.win.snd_wnd;
    st->max_window = a.win.max_window;
    st->rcv_wnd = a.win.rcv_wnd;
    st->rcv_wup = a.win.rcv_wup;
    return 0;
}

static void rnic_tcpr_encode(const struct rnic_tcpr_state *st, uint8_t *buf,
                             const uint8_t *sendq, const uint8_t *recvq)
{
    uint8_t *p = buf;

    memcpy(p, RNIC_TCPR_MAGIC, 4);
    p[4] = RNIC_TCP_REPAIR_VERSION;
    p[5] = RNIC_TCP_REPAIR_VERSION >> 8;
    p[6] = RNIC_TCP_REPAIR_HDR_LEN;
    p[7] = RNIC_TCP_REPAIR_HDR_LEN >> 8;
    p += 8;
#define RNIC_TCPR_PUT(m) p = rnic_tcpr_put32(p, st->m);
    RNIC_TCPR_FIELDS(RNIC_TCPR_PUT)
#undef RNIC_TCPR_PUT
    memcpy(p, st->laddr, 16);
    memcpy(p + 16, st->raddr, 16);
    p += 32;
    if (st->send_len) {
        memcpy(p, sendq, st->send_len);
    }
    if (st->recv_len) {
        memcpy(p + st->send_len, recvq, st->recv_len);
    }
}

int rnic_tcp_repair_save(int fd, uint8_t **buf, size_t *len)
{
    struct rnic_tcpr_state st;
    struct tcp_info ti;
    uint8_t *sendq = NULL, *recvq = NULL, *out;
    int ret;

    if (!buf || !len) {
        return -EINVAL;
    }
    memset(&st, 0, sizeof(st));
    ret = rnic_tcpr_save_socket(fd, &st);
    if (!ret) {
        ret = rnic_tcpr_info(fd, &ti);
    }
    if (ret) {
        return ret;
    }
    if (rnic_tcpr_has_filter(fd)) {
        return -EBUSY;
    }
    ret = rnic_tcpr_setint(fd, IPPROTO_TCP, TCP_REPAIR, TCP_REPAIR_ON);
    if (ret) {
        return ret;
    }
    ret = rnic_tcpr_drop_all(fd);
    if (!ret) {
        int tries = RNIC_TCPR_TRIES;

        do {
            ret = rnic_tcpr_snapshot(fd, &st, &sendq, &recvq);
        } while (ret == -EAGAIN && --tries);
    }
    if (!ret) {
        ret = rnic_tcpr_queue(fd, TCP_NO_QUEUE);
    }
    out = ret ? NULL : malloc(RNIC_TCP_REPAIR_HDR_LEN + (size_t)st.send_len +
                              st.recv_len);
    if (!ret && !out) {
        ret = -ENOMEM;
    }
    if (ret) {
        free(sendq);
        free(recvq);
        rnic_tcp_repair_cancel(fd);
        return ret;
    }
    rnic_tcpr_encode(&st, out, sendq, recvq);
    free(sendq);
    free(recvq);
    *buf = out;
    *len = RNIC_TCP_REPAIR_HDR_LEN + (size_t)st.send_len + st.recv_len;
    return 0;
}

int rnic_tcp_repair_cancel(int fd)
{
    int ret = rnic_tcpr_queue(fd, TCP_NO_QUEUE);

    if (ret) {
        return ret;
    }
    /* The filter first: the window probe's answer must get in. */
    ret = rnic_tcpr_setint(fd, SOL_SOCKET, SO_DETACH_FILTER, 0);
    if (ret && ret != -ENOENT) {
        return ret;
    }
    /* TCP_REPAIR_OFF sends a window probe: the peer's ACK resumes it. */
    return rnic_tcpr_setint(fd, IPPROTO_TCP, TCP_REPAIR, TCP_REPAIR_OFF);
}

/* Everything checked that can be before a socket is made. */
static int rnic_tcpr_parse(const uint8_t *buf, size_t len,
                           struct rnic_tcpr_state *st)
{
    const uint8_t *p = buf + 8;
    static const uint8_t zero[12];

    if (!buf || len < 8 || memcmp(buf, RNIC_TCPR_MAGIC, 4)) {
        return -EINVAL;
    }
    if ((buf[4] | buf[5] << 8) != RNIC_TCP_REPAIR_VERSION) {
        return -EPROTONOSUPPORT;
    }
    if ((buf[6] | buf[7] << 8) != RNIC_TCP_REPAIR_HDR_LEN ||
        len < RNIC_TCP_REPAIR_HDR_LEN) {
        return -EINVAL;
    }
#define RNIC_TCPR_GET(m) st->m = rnic_tcpr_get32(&p);
    RNIC_TCPR_FIELDS(RNIC_TCPR_GET)
#undef RNIC_TCPR_GET
    memcpy(st->laddr, p, 16);
    memcpy(st->raddr, p + 16, 16);
    if (st->family != 4 && st->family != 6) {
        return -EAFNOSUPPORT;
    }
    if (st->send_len > RNIC_TCP_REPAIR_QUEUE_MAX ||
        st->recv_len > RNIC_TCP_REPAIR_QUEUE_MAX ||
        st->sndbuf > RNIC_TCP_REPAIR_QUEUE_MAX ||
        st->rcvbuf > RNIC_TCP_REPAIR_QUEUE_MAX) {
        return -E2BIG;
    }
    /* Each term is at most 32 MiB: no overflow. */
    if (len != RNIC_TCP_REPAIR_HDR_LEN + (size_t)st->send_len +
               st->recv_len ||
        st->unsent_len > st->send_len ||
        (st->flags & ~RNIC_TCPR_FLAGS) || (st->opts & ~RNIC_TCPR_OPTS) ||
        st->snd_wscale > RNIC_TCPR_WSCALE_MAX ||
        st->rcv_wscale > RNIC_TCPR_WSCALE_MAX ||
        (!(st->opts & TCPI_OPT_WSCALE) &&
         (st->snd_wscale || st->rcv_wscale)) ||
        (!(st->opts & TCPI_OPT_TIMESTAMPS) &&
         (st->tstamp || st->saved_lo || st->saved_hi)) ||
        !st->lport || st->lport > 0xffff || !st->rport ||
        st->rport > 0xffff || !st->mss || st->mss > 0xffff ||
        st->max_window < st->snd_wnd) {
        return -EINVAL;
    }
    if (st->family == 4 && (st->scope_id || memcmp(st->laddr + 4, zero, 12) ||
                            memcmp(st->raddr + 4, zero, 12))) {
        return -EINVAL;
    }
    return 0;
}

int rnic_tcp_repair_queues(const uint8_t *buf, size_t len,
                           size_t *send_len, size_t *unsent_len,
                           size_t *recv_len)
{
    struct rnic_tcpr_state st;
    int ret = rnic_tcpr_parse(buf, len, &st);

    if (ret) {
        return ret;
    }
    if (send_len) {
        *send_len = st.send_len;
    }
    if (unsent_len) {
        *unsent_len = st.unsent_len;
    }
    if (recv_len) {
        *recv_len = st.recv_len;
    }
    return 0;
}

static socklen_t rnic_tcpr_sockaddr(const struct rnic_tcpr_state *st,
                                    bool local, struct sockaddr_storage *ss)
{
    const uint8_t *addr = local ? st->laddr : st->raddr;
    uint16_t port = htons(local ? st->lport : st->rport);

    memset(ss, 0, sizeof(*ss));
    if (st->family == 4) {
        struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

        s4->sin_family = AF_INET;
        s4->sin_port = port;
        memcpy(&s4->sin_addr, addr, 4);
        return sizeof(*s4);
    } else {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

        s6->sin6_family = AF_INET6;
        s6->sin6_port = port;
        memcpy(&s6->sin6_addr, addr, 16);
        s6->sin6_scope_id = st->scope_id;
        return sizeof(*s6);
    }
}

/*
 * Queues @n bytes with send(): in repair mode into the queue chosen, out
 * of it as ordinary data.  Never waits (a socket in repair mode would
 * wait for ever); the buffers are made large enough first.
 */
static int rnic_tcpr_fill(int fd, const uint8_t *p, size_t n)
{
    size_t chunk = n;

    while (n) {
        ssize_t r = send(fd, p, chunk < n ? chunk : n,
                         MSG_DONTWAIT | MSG_NOSIGNAL);

        if (r > 0) {
            p += r;
            n -= r;
        } else if (r < 0 && errno == ENOMEM && chunk > 4096) {
            /*
             * Older kernels put a receive queue write into one linear
             * skb, which a large write cannot get: smaller ones can.
             */
            chunk /= 2;
        } else {
            return r < 0 && errno != EAGAIN ? -errno : -ENOBUFS;
        }
    }
    return 0;
}

/*
 * The kernel doubles what SO_*BUF is given; the FORCE variants (we have
 * CAP_NET_ADMIN) are not capped at wmem_max/rmem_max, so the size comes
 * back exactly as it was read on the source.
 */
static int rnic_tcpr_set_buf(int fd, int name, uint32_t doubled)
{
    return rnic_tcpr_setint(fd, SOL_SOCKET, name, doubled / 2);
}

/*
 * Room for @n queued bytes: what the kernel charges per byte differs
 * from the source's (other skb sizes), and a refill that does not fit
 * would fail, as nothing drains a socket in repair mode.
 */
static uint32_t rnic_tcpr_room(uint32_t buf, uint32_t n)
{
    uint32_t want = 2 * n + (64u << 10);

    return want > buf ? want : buf;
}

/* Turns the blob's state into @fd; the caller closes @fd on failure. */
static int rnic_tcpr_rebuild(int fd, const struct rnic_tcpr_state *st,
                             const uint8_t *sendq, const uint8_t *recvq)
{
    struct sockaddr_storage la, ra;
    socklen_t len = rnic_tcpr_sockaddr(st, true, &la);
    struct tcp_repair_opt opt[4];
    struct tcp_repair_window win = {
        .snd_wl1 = st->snd_wl1, .snd_wnd = st->snd_wnd,
        .max_window = st->max_window, .rcv_wnd = st->rcv_wnd,
        .rcv_wup = st->rcv_wup,
    };
    uint32_t sent = st->send_len - st->unsent_len, inq, outq, notsent;
    int n = 0, ret;

    rnic_tcpr_sockaddr(st, false, &ra);
    ret = rnic_tcpr_setint(fd, IPPROTO_TCP, TCP_REPAIR, TCP_REPAIR_ON);
    if (ret) {
        return ret;
    }
    /* SO_RCVBUF before connect(): it computes the window clamp from it. */
    ret = rnic_tcpr_set_buf(fd, SO_RCVBUFFORCE, st->rcvbuf);
    if (!ret) {
        ret = rnic_tcpr_set_buf(fd, SO_SNDBUFFORCE,
                                rnic_tcpr_room(st->sndbuf, st->send_len));
    }
    if (!ret && st->family == 6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&la;

        ret = rnic_tcpr_setint(fd, IPPROTO_IPV6, IPV6_V6ONLY,
                               !IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr));
    }
    if (ret) {
        return ret;
    }
    /*
     * In repair mode bind() may share the port with a listener (the
     * source's, on one host), and connect() sends no SYN: it takes the
     * sequence numbers set here, which the queues' refill moves on.
     */
    if (bind(fd, (struct sockaddr *)&la, len) < 0) {
        return -errno;
    }
    ret = rnic_tcpr_queue(fd, TCP_RECV_QUEUE);
    if (!ret) {
        ret = rnic_tcpr_setint(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, st->recv_seq);
    }
    if (!ret) {
        ret = rnic_tcpr_queue(fd, TCP_SEND_QUEUE);
    }
    if (!ret) {
        ret = rnic_tcpr_setint(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, st->send_seq);
    }
    if (ret) {
        return ret;
    }
    if (connect(fd, (struct sockaddr *)&ra, len) < 0) {
        return -errno;
    }
    /* Options before any byte is queued: the kernel refuses them after. */
    opt[n].opt_code = TCPOPT_MAXSEG;
    opt[n++].opt_val = st->mss;
    if (st->opts & TCPI_OPT_WSCALE) {
        opt[n].opt_code = TCPOPT_WINDOW;
        opt[n++].opt_val = st->snd_wscale | st->rcv_wscale << 16;
    }
    if (st->opts & TCPI_OPT_SACK) {
        opt[n].opt_code = TCPOPT_SACK_PERMITTED;
        opt[n++].opt_val = 0;
    }
    if (st->opts & TCPI_OPT_TIMESTAMPS) {
        opt[n].opt_code = TCPOPT_TIMESTAMP;
        opt[n++].opt_val = 0;
    }
    if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_OPTIONS, opt,
                   n * sizeof(opt[0])) < 0) {
        return -errno;
    }
    if (st->opts & TCPI_OPT_TIMESTAMPS) {
        ret = rnic_tcpr_setint(fd, IPPROTO_TCP, TCP_TIMESTAMP,
                               rnic_tcpr_tstamp_now(st));
    }
    /* The receive queue: bytes the peer sent and we acknowledged. */
    if (!ret) {
        ret = rnic_tcpr_set_buf(fd, SO_RCVBUFFORCE,
                                rnic_tcpr_room(st->rcvbuf, st->recv_len));
    }
    if (!ret) {
        ret = rnic_tcpr_queue(fd, TCP_RECV_QUEUE);
    }
    if (!ret) {
        ret = rnic_tcpr_fill(fd, recvq, st->recv_len);
    }
    if (!ret) {
        ret = rnic_tcpr_set_buf(fd, SO_RCVBUFFORCE, st->rcvbuf);
    }
    /* The sent part of the send queue: queued as sent, not transmitted. */
    if (!ret) {
        ret = rnic_tcpr_queue(fd, TCP_SEND_QUEUE);
    }
    if (!ret) {
        ret = rnic_tcpr_fill(fd, sendq, sent);
    }
    if (ret) {
        return ret;
    }
    /* The kernel checks the windows against rcv_nxt: after the refill. */
    if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_WINDOW, &win,
                   sizeof(win)) < 0) {
        return -errno;
    }
    ret = rnic_tcpr_queue(fd, TCP_NO_QUEUE);
    if (!ret) {
        ret = rnic_tcpr_ioctl(fd, SIOCINQ, &inq);
    }
    if (!ret) {
        ret = rnic_tcpr_ioctl(fd, SIOCOUTQ, &outq);
    }
    if (!ret) {
        ret = rnic_tcpr_ioctl(fd, SIOCOUTQNSD, &notsent);
    }
    if (ret) {
        return ret;
    }
    if (inq != st->recv_len || outq != sent || notsent) {
        return -EIO;
    }
    ret = rnic_tcpr_setint(fd, IPPROTO_TCP, TCP_NODELAY,
                           !!(st->flags & RNIC_TCPR_NODELAY));
    if (!ret && (st->flags & RNIC_TCPR_NONBLOCK)) {
        int fl = fcntl(fd, F_GETFL);

        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
            ret = -errno;
        }
    }
    return ret;
}

int rnic_tcp_repair_rebuild(const uint8_t *buf, size_t len)
{
    struct rnic_tcpr_state st;
    const uint8_t *sendq;
    int fd, ret = rnic_tcpr_parse(buf, len, &st);

    if (ret) {
        return ret;
    }
    sendq = buf + RNIC_TCP_REPAIR_HDR_LEN;
    fd = socket(st.family == 4 ? AF_INET : AF_INET6,
                SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0) {
        return -errno;
    }
    ret = rnic_tcpr_rebuild(fd, &st, sendq, sendq + st.send_len);
    if (ret) {
        close(fd);
        return ret;
    }
    return fd;
}

int rnic_tcp_repair_resume(int fd, const uint8_t *buf, size_t len)
{
    struct rnic_tcpr_state st;
    const uint8_t *sendq;
    int ret = rnic_tcpr_parse(buf, len, &st);

    if (ret) {
        return ret;
    }
    sendq = buf + RNIC_TCP_REPAIR_HDR_LEN;
    /* Live from here on; the probe makes the peer tell its window. */
    ret = rnic_tcpr_setint(fd, IPPROTO_TCP, TCP_REPAIR, TCP_REPAIR_OFF);
    if (ret) {
        return ret;
    }
    /* Never sent: ordinary data, sent when the window allows. */
    ret = rnic_tcpr_fill(fd, sendq + st.send_len - st.unsent_len,
                         st.unsent_len);
    if (!ret) {
        ret = rnic_tcpr_set_buf(fd, SO_SNDBUFFORCE, st.sndbuf);
    }
    if (ret) {
        /* So that the caller's close() sends nothing either. */
        rnic_tcpr_setint(fd, IPPROTO_TCP, TCP_REPAIR, TCP_REPAIR_ON);
    }
    return ret;
}

int rnic_tcp_repair_restore(const uint8_t *buf, size_t len)
{
    int fd = rnic_tcp_repair_rebuild(buf, len), ret;

    if (fd < 0) {
        return fd;
    }
    ret = rnic_tcp_repair_resume(fd, buf, len);
    if (ret) {
        close(fd);
        return ret;
    }
    return fd;
}
