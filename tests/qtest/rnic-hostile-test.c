/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest: a hostile TCP peer, for the socket handlers generic-fuzz cannot
 * reach.  Over several connections to one device it sends, from a fixed
 * seed (printed; RNIC_HOSTILE_SEED=N runs another), streams of FPDUs
 * built from valid templates of every RDMAP opcode and then mutated:
 * wrong STags, TOs past the buffer, bad DDP/RDMAP versions, unknown
 * opcodes and queues, wrong MSN/MO, Sends too long, our own Terminate,
 * broken CRCs, garbage, and a truncated FPDU at the end; all written in
 * random pieces, and each connection ends with a FIN, a close, or a RST.
 *
 * Every item's outcome is known by construction: a clean item is valid
 * where it stands; a poisoned one is invalid whatever came before.  After
 * each connection QEMU must be alive and the device READY; the guard
 * pages around the registered buffer untouched; every clean Write before
 * the first poisoned item placed (or, when the peer cut the connection,
 * placed whole or not at all) and nothing else placed anywhere; the
 * connection over, with the device's Terminate when the peer half-closed
 * after a poisoned item.  Clean Writes use disjoint slices of the buffer
 * and a pattern of their own, so a misplaced byte shows.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "libqos/rnic-peer.h"

#define NCONN       64
#define MAX_ITEMS   16
#define QP_LOG      4
#define CQ_LOG      6
#define GUARD       4096
#define BUF_LEN     16384
#define RECV_LEN    256
#define NRECV       4
#define PREFILL     0xee
#define GUARD_BYTE  0x5a
#define IOVA        QRNIC_MR_IOVA

enum ending { END_FIN, END_CLOSE, END_RST };

typedef struct CleanWrite {
    uint32_t off, len;
    uint8_t salt;
    bool before_poison;
} CleanWrite;

typedef struct Hostile {
    QRnic t;
    GRand *rand;                    /* what is sent */
    GRand *split;                   /* how it is cut: timing may vary */
    uint32_t pdn, stag, recv_stag;
    uint64_t mem, recv_mem;         /* guard, buffer, guard */
    uint16_t port;
    /* the connection */
    QRnicPeer wire;
    bool broken, poisoned, our_term, got_term;
    unsigned read_resps;            /* whole Read Responses not waited for */
    QRnicQp qp;
    uint64_t cq_ring;
    unsigned recvs_left;
    uint32_t next_off;
    GByteArray *out, *in;
    CleanWrite w[MAX_ITEMS];
    int nw;
} Hostile;

static uint32_t rnd(Hostile *h, uint32_t n)
{
    return g_rand_int_range(h->rand, 0, n);
}

static uint8_t pattern(uint32_t off, uint8_t salt)
{
    return (uint8_t)(off * 131 + salt * 29 + 7);
}

/* ---- the wire: libqos's peer, and what no peer should send ---- */

/* Appends one FPDU to h->out; @bad_crc: a CRC that cannot match. */
static void fpdu(Hostile *h, const uint8_t *ulpdu, size_t len, bool bad_crc)
{
    uint8_t f[2048];
    size_t n = qrnic_peer_fpdu(&h->wire, ulpdu, len, f, sizeof(f));

    if (bad_crc) {
        stl_le_p(f + n - 4, ~ldl_le_p(f + n - 4));
    }
    g_byte_array_append(h->out, f, n);
}

static size_t tagged(uint8_t *u, uint8_t opcode, uint32_t stag, uint64_t to)
{
    return qrnic_peer_tagged_hdr(u, true, opcode, stag, to);
}

static size_t untagged(Hostile *h, uint8_t *u, uint8_t opcode, uint32_t inv,
                       uint32_t qn)
{
    return qrnic_peer_untagged_hdr(&h->wire, u, opcode, inv, qn, 0);
}

/* A Read Request naming @len octets at @to, into our STag 0x1234. */
static size_t read_req(Hostile *h, uint8_t *u, uint32_t stag, uint64_t to,
                       uint32_t len)
{
    return qrnic_peer_read_req(&h->wire, u, 0x1234, 0, len, stag, to);
}

/* ---- talking ---- */

/*
 * Takes what the device sent; notes Read Responses and a Terminate.
 * Returns recv()'s result.
 */
static ssize_t take_input(Hostile *h, bool wait)
{
    uint8_t b[4096];
    ssize_t n = recv(h->wire.fd, b, sizeof(b), wait ? 0 : MSG_DONTWAIT);

    if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            h->broken = true;
        }
        return n;
    }
    g_byte_array_append(h->in, b, n);
    while (h->in->len >= 2) {
        size_t len = lduw_be_p(h->in->data);
        size_t whole = qrnic_peer_fpdu_size(len);

        if (h->in->len < whole) {
            break;
        }
        if (len >= 2 && (h->in->data[3] & 0x0f) == QRNIC_RDMAP_READ_RESP &&
            (h->in->data[2] & 0x40)) {
            h->read_resps++;
        }
        if (len >= 2 && (h->in->data[3] & 0x0f) == QRNIC_RDMAP_TERMINATE) {
            h->got_term = true;
            if (len >= 22) {
                g_test_message("device Terminate %02x %02x", h->in->data[20],
                               h->in->data[21]);
            }
        }
        g_byte_array_remove_range(h->in, 0, whole);
    }
    return n;
}

/* Writes h->out in random pieces; a dead socket ends the writing. */
static void flush(Hostile *h)
{
    static const uint32_t max_piece[] = { 1, 8, 64, 1500 };
    uint32_t max = max_piece[g_rand_int_range(h->split, 0,
                                              G_N_ELEMENTS(max_piece))];
    size_t off = 0;

    while (off < h->out->len && !h->broken) {
        size_t n = MIN(g_rand_int_range(h->split, 1, max + 1),
                       h->out->len - off);
        ssize_t w = send(h->wire.fd, h->out->data + off, n, MSG_NOSIGNAL);

        if (w < 0) {
            /*
             * The device closed first (a Terminate, then FIN): what it
             * sent before is still to be read.  On a loaded host the
             * test can be this far behind.
             */
            h->broken = true;
            while (take_input(h, false) > 0) {
                continue;
            }
            break;
        }
        off += w;
        take_input(h, false);
    }
    g_byte_array_set_size(h->out, 0);
}

/* A clean Read Request: the Read Response must come back whole. */
static void wait_read_resp(Hostile *h)
{
    struct timeval tv = { .tv_sec = 5 };
    gint64 end = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

    flush(h);
    setsockopt(h->wire.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    while (!h->read_resps) {
        g_assert_false(h->broken);
        g_assert_false(h->got_term);
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        take_input(h, true);
    }
    h->read_resps--;
}

/* ---- items ---- */

static void clean_write(Hostile *h)
{
    uint32_t len = 1 + rnd(h, 600);
    uint8_t u[1024];
    size_t n;
    CleanWrite *w;

    if (h->next_off + len > BUF_LEN || h->nw == MAX_ITEMS) {
        return;
    }
    w = &h->w[h->nw++];
    *w = (CleanWrite) { h->next_off, len, (uint8_t)h->nw, !h->poisoned };
    h->next_off += len + rnd(h, 64);
    n = tagged(u, 0x0, h->stag, IOVA + w->off);
    if (rnd(h, 4) == 0) {
        u[0] &= ~0x40;      /* not the last segment: valid for a Write */
    }
    for (uint32_t i = 0; i < len; i++) {
        u[n + i] = pattern(w->off + i, w->salt);
    }
    fpdu(h, u, n + len, false);
}

/* Send, Send with Solicited Event, or Immediate Data into a receive. */
static void clean_send(Hostile *h)
{
    uint8_t u[RECV_LEN + 32];
    bool imm = rnd(h, 3) == 0;
    size_t n;
    uint32_t len = imm ? 8 : rnd(h, RECV_LEN + 1);

    if (!h->recvs_left) {
        return;
    }
    h->recvs_left--;
    n = untagged(h, u, imm ? QRNIC_RDMAP_IMM + rnd(h, 2)
                           : QRNIC_RDMAP_SEND + 2 * rnd(h, 2), 0, 0);
    memset(u + n, 0x77, len);
    fpdu(h, u, n + len, false);
}

static void clean_read(Hostile *h)
{
    uint8_t u[64];
    uint32_t len = 1 + rnd(h, 2048);
    uint64_t to = IOVA + rnd(h, BUF_LEN - len);

    fpdu(h, u, read_req(h, u, h->stag, to, len), false);
    if (!h->poisoned) {
        wait_read_resp(h);
    }
}

/* A random STag that is neither of ours. */
static uint32_t foreign_stag(Hostile *h)
{
    uint32_t s;

    do {
        s = rnd(h, 2) ? h->stag ^ (1 + rnd(h, 255)) : g_rand_int(h->rand);
    } while (s == h->stag || s == h->recv_stag);
    return s;
}

/* A template with one thing wrong: invalid wherever it stands. */
static void poison(Hostile *h)
{
    uint8_t u[1024] = { 0 };
    size_t n = 0;
    uint32_t k = rnd(h, 13);

    h->poisoned = true;
    switch (k) {
    case 0:     /* tagged: unknown STag or wrong key */
        n = tagged(u, 0x0, foreign_stag(h), IOVA);
        n += 1 + rnd(h, 100);
        break;
    case 1:     /* past the end of the buffer */
        n = tagged(u, 0x0, h->stag, IOVA + BUF_LEN - rnd(h, 16));
        n += 16 + rnd(h, 100);
        break;
    case 2:     /* DDP or RDMAP version */
        n = tagged(u, 0x0, h->stag, IOVA);
        if (rnd(h, 2)) {
            u[0] ^= 1 + rnd(h, 3);              /* DV 0, 2 or 3 */
        } else {
            u[1] ^= (1 + rnd(h, 3)) << 6;       /* RV 0, 2 or 3 */
        }
        n += 8;
        break;
    case 3:     /* opcodes nobody defined, tagged and untagged */
        n = rnd(h, 2) ? tagged(u, 0xc + rnd(h, 4), h->stag, IOVA)
                      : untagged(h, u, 0xc + rnd(h, 4), 0, 0);
        n += rnd(h, 32);
        break;
    case 4:     /* untagged queue 3 and up */
        n = untagged(h, u, QRNIC_RDMAP_SEND, 0, 3 + rnd(h, 100));
        break;
    case 5:     /* MSN out of order */
        n = untagged(h, u, QRNIC_RDMAP_SEND, 0, 0);
        stl_be_p(u + 10, h->wire.msn[0] + 1 + rnd(h, 1000));
        break;
    case 6:     /* MO of a message that never began */
        n = untagged(h, u, QRNIC_RDMAP_SEND, 0, 0);
        stl_be_p(u + 14, 1 + rnd(h, 4096));
        break;
    case 7:     /* longer than any receive buffer */
        n = untagged(h, u, QRNIC_RDMAP_SEND, 0, 0) + RECV_LEN + 1 +
            rnd(h, 500);
        break;
    case 8:     /* a Read Response we never asked for */
        n = tagged(u, QRNIC_RDMAP_READ_RESP, g_rand_int(h->rand),
                   rnd(h, 4096));
        n += rnd(h, 64);
        break;
    case 9:     /* Read of a STag we have no rights to */
        n = read_req(h, u, foreign_stag(h), IOVA, 1 + rnd(h, 64));
        break;
    case 10:    /* Atomic Request (no atomic rights), or a Response */
        n = untagged(h, u, rnd(h, 2) ? QRNIC_RDMAP_ATOMIC_RESP
                                     : QRNIC_RDMAP_ATOMIC_REQ, 0, 3) + 52;
        stl_be_p(u + 26, h->stag);
        stq_be_p(u + 30, IOVA);
        break;
    case 11:    /* Send with Invalidate of a STag that is not there */
        n = untagged(h, u, QRNIC_RDMAP_SEND_INV + 2 * rnd(h, 2),
                     foreign_stag(h), 0);
        break;
    default:    /* our own Terminate */
        n = untagged(h, u, QRNIC_RDMAP_TERMINATE, 0, 2) + 4;
        u[18] = 0x02;
        u[19] = 0xff;
        h->our_term = true;
        break;
    }
    fpdu(h, u, n, h->wire.crc && rnd(h, 4) == 0);
}

/* Stream octets no peer would send: a broken header, or pure noise. */
static void garbage(Hostile *h, bool last)
{
    uint8_t b[256];
    uint32_t len = 20 + rnd(h, 200);

    for (uint32_t i = 0; i < len; i++) {
        b[i] = g_rand_int(h->rand);
    }
    if (!last) {
        h->poisoned = true;
        b[0] = (b[0] & ~0x03) | 0x02;           /* DV 2 */
        fpdu(h, b, len, false);
        return;
    }
    g_byte_array_append(h->out, b, len);
}

/* The first octets of an FPDU, and nothing after. */
static void truncated(Hostile *h)
{
    uint8_t u[1024];
    size_t n = tagged(u, 0x0, h->stag, IOVA);
    guint before = h->out->len;

    memset(u + n, 0x99, 200);
    fpdu(h, u, n + 200, false);
    g_byte_array_set_size(h->out, before + 1 + rnd(h, h->out->len - before -
                                                      1));
}

static void one_item(Hostile *h, GString *log)
{
    uint32_t k = rnd(h, 20);

    g_string_append_printf(log, " %u", k);
    if (k < 8) {
        clean_write(h);
    } else if (k < 11) {
        clean_send(h);
    } else if (k < 13) {
        clean_read(h);
    } else if (k < 14) {
        uint8_t u[16];

        fpdu(h, u, tagged(u, 0x0, h->stag, IOVA + rnd(h, BUF_LEN)), false);
    } else if (k < 19) {
        poison(h);
    } else {
        garbage(h, false);
    }
}

/* ---- one connection ---- */

static void connect_peer(Hostile *h, bool crc)
{
    uint32_t cqn = qrnic_create_cq(&h->t, CQ_LOG, 1, &h->cq_ring);

    g_assert_cmphex(qrnic_try_create_qp(&h->t, h->pdn, cqn, cqn, QP_LOG,
                                        &h->qp), ==, RNIC_CMD_OK);
    for (int i = 0; i < NRECV; i++) {
        struct rnic_rq_wqe w = {
            .wr_id = cpu_to_le64(i), .num_sge = 1,
            .sge[0] = {
                .addr = cpu_to_le64(IOVA + i * RECV_LEN),
                .length = cpu_to_le32(RECV_LEN),
                .stag = cpu_to_le32(h->recv_stag),
            },
        };

        qrnic_post_recv(&h->t, &h->qp, &w);
    }
    qrnic_peer_init(&h->wire, qrnic_tcp_connect(h->port, 0), crc);
    qrnic_peer_accept(&h->wire, &h->t, h->qp.qpn, false);
}

/* FIN: the device answers and closes.  Close or RST: it notices. */
static void end_connection(Hostile *h, enum ending how)
{
    struct linger rst = { .l_onoff = 1, .l_linger = 0 };
    gint64 end = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    struct timeval tv = { .tv_sec = 5 };

    if (how == END_FIN) {
        shutdown(h->wire.fd, SHUT_WR);
        setsockopt(h->wire.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        while (!h->broken) {
            g_assert_cmpint(g_get_monotonic_time(), <, end);
            take_input(h, true);
        }
    } else if (how == END_RST) {
        setsockopt(h->wire.fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst));
    }
    close(h->wire.fd);
    while (qrnic_query_qp_state(&h->t, h->qp.qpn) == RNIC_QPS_RTS) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

/* Each clean Write placed whole (or, @maybe, not at all); nothing else. */
static void check_memory(Hostile *h, bool maybe)
{
    g_autofree uint8_t *m = g_malloc(BUF_LEN + 2 * GUARD);
    g_autofree uint8_t *want = g_malloc(BUF_LEN);
    uint8_t *buf = m + GUARD;

    qtest_memread(h->t.qts, h->mem, m, BUF_LEN + 2 * GUARD);
    for (int i = 0; i < GUARD; i++) {
        g_assert_cmphex(m[i], ==, GUARD_BYTE);
        g_assert_cmphex(m[GUARD + BUF_LEN + i], ==, GUARD_BYTE);
    }
    memset(want, PREFILL, BUF_LEN);
    for (int k = 0; k < h->nw; k++) {
        const CleanWrite *w = &h->w[k];
        uint32_t same = 0;

        for (uint32_t i = 0; i < w->len; i++) {
            same += buf[w->off + i] == pattern(w->off + i, w->salt);
        }
        if (!w->before_poison || (maybe && same < w->len)) {
            continue;       /* must be untouched */
        }
        for (uint32_t i = 0; i < w->len; i++) {
            want[w->off + i] = pattern(w->off + i, w->salt);
        }
    }
    for (uint32_t i = 0; i < BUF_LEN; i++) {
        if (buf[i] != want[i]) {
            g_test_message("the byte at offset %u of the buffer", i);
        }
        g_assert_cmphex(buf[i], ==, want[i]);
    }
}

static void one_connection(Hostile *h, int conn)
{
    enum ending how = rnd(h, 3);
    int nitems = 1 + rnd(h, MAX_ITEMS - 1);
    g_autoptr(GString) log = g_string_new("");
    struct rnic_event ev;
    bool crc;

    crc = rnd(h, 2);
    g_rand_set_seed(h->split, g_rand_int(h->rand));
    h->broken = h->poisoned = h->our_term = h->got_term = false;
    h->read_resps = 0;
    g_byte_array_set_size(h->in, 0);
    h->recvs_left = NRECV;
    h->next_off = 0;
    h->nw = 0;
    qtest_memset(h->t.qts, h->mem + GUARD, PREFILL, BUF_LEN);
    connect_peer(h, crc);
    for (int i = 0; i < nitems; i++) {
        one_item(h, log);
    }
    switch (rnd(h, 4)) {
    case 0:
        truncated(h);
        break;
    case 1:
        garbage(h, true);
        break;
    }
    flush(h);
    end_connection(h, how);
    g_test_message("connection %d: items%s, crc %d, end %d, poisoned %d, "
                   "device Terminate %d", conn, log->str, h->wire.crc, how,
                   h->poisoned, h->got_term);
    g_assert_cmphex(qrnic_rd(&h->t, RNIC_REG_STATUS), ==, RNIC_STATUS_READY);
    qtest_qmp_assert_success(h->t.qts, "{'execute': 'query-status'}");
    if (how == END_FIN && h->poisoned && !h->our_term) {
        g_assert_true(h->got_term);
    }
    check_memory(h, how != END_FIN);
    while (qrnic_next_event(&h->t, &ev)) {
        /* the connection's last events: the next one starts afresh */
    }
}

static void test_hostile_streams(void)
{
    const char *env = g_getenv("RNIC_HOSTILE_SEED");
    unsigned int seed = 20261201;
    struct rnic_cmd_listen l = {
        .local = qrnic_loopback(0),
    };
    struct rnic_cmd cmd;
    Hostile h;

    if (env) {
        g_assert_cmpint(qemu_strtoui(env, NULL, 0, &seed), ==, 0);
    }
    h = (Hostile) { .rand = g_rand_new_with_seed(seed),
                    .split = g_rand_new() };
    g_test_message("seed %u (RNIC_HOSTILE_SEED=%u repeats this run)", seed,
                   seed);
    qrnic_test_start(&h.t, ",id=dev,listen-allow=127.0.0.1");
    qrnic_test_enable(&h.t);
    h.pdn = qrnic_create_pd(&h.t);
    h.mem = guest_alloc(h.t.alloc, BUF_LEN + 2 * GUARD);
    qtest_memset(h.t.qts, h.mem, GUARD_BYTE, BUF_LEN + 2 * GUARD);
    g_assert_cmphex(qrnic_reg_mr(&h.t, h.pdn, h.mem + GUARD, BUF_LEN,
                                 RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_WRITE |
                                 RNIC_ACC_REMOTE_READ, 0x33, &h.stag), ==,
                    RNIC_CMD_OK);
    h.recv_mem = guest_alloc(h.t.alloc, NRECV * RECV_LEN);
    g_assert_cmphex(qrnic_reg_mr(&h.t, h.pdn, h.recv_mem, NRECV * RECV_LEN,
                                 RNIC_ACC_LOCAL_WRITE, 0x44, &h.recv_stag), ==,
                    RNIC_CMD_OK);
    cmd = qrnic_cmd_ok(&h.t, RNIC_CMD_LISTEN, &l, sizeof(l));
    h.port = le16_to_cpu(((struct rnic_cmd_listen *)cmd.u.raw)->local.port);
    h.out = g_byte_array_new();
    h.in = g_byte_array_new();
    for (int conn = 0; conn < NCONN; conn++) {
        one_connection(&h, conn);
    }
    g_byte_array_unref(h.out);
    g_byte_array_unref(h.in);
    g_rand_free(h.rand);
    g_rand_free(h.split);
    qrnic_test_stop(&h.t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qrnic_test_add_both("/rnic/hostile/streams", test_hostile_streams);
    return g_test_run();
}
