/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The test's end of an iWARP connection (see rnic-peer.h).
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/crc32c.h"
#include "rnic-peer.h"

/* ---- MPA (RFC 5044 section 7.1, RFC 6581) ---- */

size_t qrnic_peer_mpa_raw(uint8_t *buf, const char *key, uint8_t flags,
                          uint8_t rev, const void *pd, uint16_t pd_len)
{
    memcpy(buf, key, 16);
    buf[16] = flags;
    buf[17] = rev;
    stw_be_p(buf + 18, pd_len);
    if (pd_len) {
        memcpy(buf + QRNIC_MPA_HDR, pd, pd_len);
    }
    return QRNIC_MPA_HDR + pd_len;
}

size_t qrnic_peer_mpa_frame(uint8_t *buf, const char *key, uint8_t flags,
                            uint16_t ird, uint16_t ord, const char *pd)
{
    uint8_t words[4 + QRNIC_MPA_PD_MAX];
    size_t len = strlen(pd);

    g_assert_cmpuint(len, <=, QRNIC_MPA_PD_MAX);
    stw_be_p(words, ird);
    stw_be_p(words + 2, ord);
    memcpy(words + 4, pd, len);
    return qrnic_peer_mpa_raw(buf, key, flags | QRNIC_MPA_FLAG_S, 2, words,
                              4 + len);
}

void qrnic_peer_mpa_send(int fd, const char *key, uint8_t flags,
                         uint16_t ird, uint16_t ord, const char *pd)
{
    uint8_t f[QRNIC_MPA_HDR + 4 + QRNIC_MPA_PD_MAX];

    qrnic_write_full(fd, f, qrnic_peer_mpa_frame(f, key, flags, ird, ord,
                                                 pd));
}

uint16_t qrnic_peer_mpa_read(int fd, const char *key, QRnicMpa *m)
{
    uint8_t hdr[QRNIC_MPA_HDR];

    memset(m, 0, sizeof(*m));
    qrnic_read_full(fd, hdr, sizeof(hdr));
    g_assert_cmpmem(hdr, 16, key, 16);
    m->flags = hdr[16];
    m->rev = hdr[17];
    g_assert_cmpuint(m->rev, ==, 2);
    m->pd_len = lduw_be_p(hdr + 18);
    g_assert_cmpuint(m->pd_len, <=, QRNIC_MPA_PD_MAX);
    qrnic_read_full(fd, m->pd, m->pd_len);
    if (m->flags & QRNIC_MPA_FLAG_S) {
        g_assert_cmpuint(m->pd_len, >=, 4);
        m->ird = lduw_be_p(m->pd);
        m->ord = lduw_be_p(m->pd + 2);
    }
    return m->pd_len;
}

/* ---- the connection ---- */

void qrnic_peer_init(QRnicPeer *p, int fd, bool crc)
{
    *p = (QRnicPeer) { .fd = fd, .crc = crc, .msn = { 1, 1, 1 } };
}

/* The next event of @type; with @strict, no other may come first. */
static void qrnic_peer_event(QRnic *t, uint8_t type, bool strict,
                             struct rnic_event *ev)
{
    if (strict) {
        qrnic_expect_event(t, type, ev);
        return;
    }
    do {
        qrnic_wait_event(t, ev);
    } while (ev->type != type);
}

void qrnic_peer_accept(QRnicPeer *p, QRnic *t, uint32_t qpn, bool strict)
{
    struct rnic_cmd_accept a = {
        .param = { .ird = cpu_to_le16(1), .ord = cpu_to_le16(1) },
    };
    struct rnic_event ev;
    QRnicMpa rep;

    qrnic_peer_mpa_send(p->fd, QRNIC_MPA_REQ_KEY,
                        p->crc ? QRNIC_MPA_FLAG_C : 0, 1, 1, "");
    qrnic_peer_event(t, RNIC_EV_CONN_REQUEST, strict, &ev);
    a.conn_id = ev.id;
    a.qpn = cpu_to_le32(qpn);
    qrnic_cmd_ok(t, RNIC_CMD_ACCEPT, &a, sizeof(a));
    qrnic_peer_mpa_read(p->fd, QRNIC_MPA_REP_KEY, &rep);
    g_assert_cmphex(rep.flags & QRNIC_MPA_FLAG_C, ==,
                    p->crc ? QRNIC_MPA_FLAG_C : 0);
    qrnic_peer_event(t, RNIC_EV_CONN_ESTABLISHED, strict, &ev);
}

/* ---- FPDUs (RFC 5044 section 4: length, ULPDU, pad, CRC) ---- */

size_t qrnic_peer_fpdu_size(size_t len)
{
    return ROUND_UP(2 + len, 4) + 4;
}

size_t qrnic_peer_fpdu(QRnicPeer *p, const uint8_t *ulpdu, size_t len,
                       uint8_t *f, size_t size)
{
    size_t n = qrnic_peer_fpdu_size(len) - 4;

    g_assert_cmpuint(n + 4, <=, size);
    g_assert_cmpuint(len, <=, UINT16_MAX);
    stw_be_p(f, len);
    memcpy(f + 2, ulpdu, len);
    memset(f + 2 + len, 0, n - 2 - len);
    /* The CRC goes out least significant octet first. */
    stl_le_p(f + n, p->crc ? crc32c(0xffffffff, f, n) : 0);
    return n + 4;
}

void qrnic_peer_send_fpdu(QRnicPeer *p, const uint8_t *ulpdu, size_t len)
{
    g_autofree uint8_t *f = g_malloc(qrnic_peer_fpdu_size(len));

    qrnic_write_full(p->fd, f, qrnic_peer_fpdu(p, ulpdu, len, f,
                                               qrnic_peer_fpdu_size(len)));
}

size_t qrnic_peer_recv_fpdu(QRnicPeer *p, uint8_t *ulpdu, size_t size)
{
    uint8_t hdr[2], tail[8];
    size_t len;

    qrnic_read_full(p->fd, hdr, 2);
    len = lduw_be_p(hdr);
    g_assert_cmpuint(len, <=, size);
    qrnic_read_full(p->fd, ulpdu, len);
    qrnic_read_full(p->fd, tail, qrnic_peer_fpdu_size(len) - 2 - len);
    return len;
}

/* ---- DDP (RFC 5041 section 5) and RDMAP (RFC 5040 section 4) ---- */

size_t qrnic_peer_tagged_hdr(uint8_t *h, bool last, uint8_t opcode,
                             uint32_t stag, uint64_t to)
{
    h[0] = 0x80 | (last ? 0x40 : 0) | 0x01;     /* T, L, DV 1 */
    h[1] = 0x40 | opcode;                       /* RV 1 */
    stl_be_p(h + 2, stag);
    stq_be_p(h + 6, to);
    return QRNIC_DDP_TAGGED_HDR;
}

size_t qrnic_peer_untagged_hdr(QRnicPeer *p, uint8_t *h, uint8_t opcode,
                               uint32_t inv, uint32_t qn, uint32_t mo)
{
    h[0] = 0x40 | 0x01;                         /* L, DV 1 */
    h[1] = 0x40 | opcode;
    stl_be_p(h + 2, inv);
    stl_be_p(h + 6, qn);
    stl_be_p(h + 10, qn < G_N_ELEMENTS(p->msn) ? p->msn[qn]++ : 1);
    stl_be_p(h + 14, mo);
    return QRNIC_DDP_UNTAGGED_HDR;
}

size_t qrnic_peer_read_req(QRnicPeer *p, uint8_t *u, uint32_t sink_stag,
                           uint64_t sink_to, uint32_t len,
                           uint32_t src_stag, uint64_t src_to)
{
    size_t n = qrnic_peer_untagged_hdr(p, u, QRNIC_RDMAP_READ_REQ, 0, 1, 0);

    stl_be_p(u + n, sink_stag);
    stq_be_p(u + n + 4, sink_to);
    stl_be_p(u + n + 12, len);
    stl_be_p(u + n + 16, src_stag);
    stq_be_p(u + n + 20, src_to);
    return QRNIC_READ_REQ_LEN;
}

void qrnic_peer_add_tagged(QRnicPeer *p, uint8_t *f, size_t *n, size_t size,
                           uint8_t opcode, uint32_t stag, uint64_t to,
                           const void *data, size_t len)
{
    g_autofree uint8_t *u = g_malloc(QRNIC_DDP_TAGGED_HDR + len);
    size_t h = qrnic_peer_tagged_hdr(u, true, opcode, stag, to);

    if (len) {
        memcpy(u + h, data, len);
    }
    *n += qrnic_peer_fpdu(p, u, h + len, f + *n, size - *n);
}

void qrnic_peer_send_tagged(QRnicPeer *p, uint8_t opcode, uint32_t stag,
                            uint64_t to, const void *data, size_t len)
{
    size_t size = qrnic_peer_fpdu_size(QRNIC_DDP_TAGGED_HDR + len), n = 0;
    g_autofree uint8_t *f = g_malloc(size);

    qrnic_peer_add_tagged(p, f, &n, size, opcode, stag, to, data, len);
    qrnic_write_full(p->fd, f, n);
}

void qrnic_peer_write(QRnicPeer *p, uint32_t stag, uint64_t to,
                      const void *data, size_t len)
{
    qrnic_peer_send_tagged(p, QRNIC_RDMAP_WRITE, stag, to, data, len);
}

/*
 * The Terminate's first word: layer(4) etype(4) ecode(8) hdrct(3)...,
 * after an untagged header on queue 2.
 */
size_t qrnic_peer_expect_terminate(QRnicPeer *p, uint32_t layer_etype,
                                   uint8_t ecode)
{
    uint8_t u[1024];
    size_t len = qrnic_peer_recv_fpdu(p, u, sizeof(u));

    g_assert_cmpuint(len, >=, QRNIC_TERM_LEN);
    g_assert_cmphex(u[1] & 0x0f, ==, QRNIC_RDMAP_TERMINATE);
    g_assert_cmpuint(ldl_be_p(u + 6), ==, 2);           /* QN 2 */
    g_assert_cmpuint(ldl_be_p(u + 10), ==, 1);          /* first MSN */
    g_assert_cmphex(((u[18] >> 4) << 8) | (u[18] & 0x0f), ==, layer_etype);
    g_assert_cmphex(u[19], ==, ecode);
    return len;
}
