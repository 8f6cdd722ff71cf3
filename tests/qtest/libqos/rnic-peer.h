/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The test's end of an iWARP connection, for every qtest that plays the
 * remote peer over TCP on 127.0.0.1: MPA frames (RFC 5044 section 7.1,
 * RFC 6581), FPDUs with CRC32c (RFC 5044 section 4), DDP headers
 * (RFC 5041 section 5) and RDMAP messages (RFC 5040 section 4), and the
 * device's frames read back.  The layouts are written out here from the
 * RFCs, not taken from the core: an independent reading.
 *
 * Each layer has its lower-level call (a frame or header into a buffer),
 * so that a test can change a field and send what no peer should.
 */
#ifndef LIBQOS_RNIC_PEER_H
#define LIBQOS_RNIC_PEER_H

#include "rnic.h"

/* ---- MPA ---- */

#define QRNIC_MPA_REQ_KEY   "MPA ID Req Frame"
#define QRNIC_MPA_REP_KEY   "MPA ID Rep Frame"
#define QRNIC_MPA_HDR       20      /* key, flags, revision, PD_Length */
#define QRNIC_MPA_PD_MAX    512
#define QRNIC_MPA_FLAG_M    0x80    /* markers, please */
#define QRNIC_MPA_FLAG_C    0x40    /* CRC */
#define QRNIC_MPA_FLAG_R    0x20    /* rejected */
#define QRNIC_MPA_FLAG_S    0x10    /* RFC 6581: IRD and ORD words first */
/* The high bits of RFC 6581's IRD and ORD words. */
#define QRNIC_MPA_IRD_P2P   0x8000
#define QRNIC_MPA_IRD_SEND  0x4000  /* a zero-length Send as RTR */
#define QRNIC_MPA_ORD_WRITE 0x8000  /* a zero-length Write as RTR */
#define QRNIC_MPA_ORD_READ  0x4000  /* a zero-length Read as RTR */

/* An MPA frame as read. */
typedef struct QRnicMpa {
    uint8_t flags;
    uint8_t rev;
    uint16_t pd_len;                /* RFC 6581's words included */
    uint16_t ird, ord;              /* with QRNIC_MPA_FLAG_S */
    uint8_t pd[QRNIC_MPA_PD_MAX + 1];   /* NUL-terminated */
} QRnicMpa;

/* A frame of any @flags and @rev, then @pd_len octets of @pd: its length. */
size_t qrnic_peer_mpa_raw(uint8_t *buf, const char *key, uint8_t flags,
                          uint8_t rev, const void *pd, uint16_t pd_len);
/*
 * A revision 2 frame as siw sends it: @flags with QRNIC_MPA_FLAG_S, the
 * RFC 6581 words @ird and @ord, then the string @pd: its length, at
 * most QRNIC_MPA_HDR + 4 + strlen(@pd) octets of @buf.
 */
size_t qrnic_peer_mpa_frame(uint8_t *buf, const char *key, uint8_t flags,
                            uint16_t ird, uint16_t ord, const char *pd);
/* The same, written to @fd. */
void qrnic_peer_mpa_send(int fd, const char *key, uint8_t flags,
                         uint16_t ird, uint16_t ord, const char *pd);
/* Reads one revision 2 frame with @key into @m; returns m->pd_len. */
uint16_t qrnic_peer_mpa_read(int fd, const char *key, QRnicMpa *m);

/* ---- FPDUs, DDP and RDMAP ---- */

#define QRNIC_DDP_TAGGED_HDR    14
#define QRNIC_DDP_UNTAGGED_HDR  18
#define QRNIC_READ_REQ_LEN      (QRNIC_DDP_UNTAGGED_HDR + 28)
#define QRNIC_TERM_LEN          (QRNIC_DDP_UNTAGGED_HDR + 4)  /* no copies */

/* RDMAP opcodes (RFC 5040 section 4.3, RFC 7306) */
#define QRNIC_RDMAP_WRITE       0x0
#define QRNIC_RDMAP_READ_REQ    0x1
#define QRNIC_RDMAP_READ_RESP   0x2
#define QRNIC_RDMAP_SEND        0x3
#define QRNIC_RDMAP_SEND_INV    0x4
#define QRNIC_RDMAP_TERMINATE   0x7
#define QRNIC_RDMAP_IMM         0x8
#define QRNIC_RDMAP_ATOMIC_REQ  0xa
#define QRNIC_RDMAP_ATOMIC_RESP 0xb

/* A Terminate's layer << 8 | error type, as events' arg0 carry them. */
#define QRNIC_TERM_RDMAP_CATASTROPHIC   0x000
#define QRNIC_TERM_RDMAP_REMOTE_OP      0x002
#define QRNIC_TERM_DDP_CATASTROPHIC     0x100
#define QRNIC_TERM_DDP_TAGGED           0x101
#define QRNIC_TERM_DDP_UNTAGGED         0x102
#define QRNIC_TERM_LLP_MPA              0x200

/* One connection, our end. */
typedef struct QRnicPeer {
    int fd;
    bool crc;               /* the FPDUs we frame carry CRC32c */
    uint32_t msn[3];        /* next MSN per untagged queue we send on */
} QRnicPeer;

/* Our end on connected socket @fd, MSNs from 1. */
void qrnic_peer_init(QRnicPeer *p, int fd, bool crc);
/*
 * @p, connected to a listener of @t, asks for MPA revision 2 with RFC 6581
 * IRD/ORD 1/1 (and CRC with p->crc); @t ACCEPTs on @qpn; returns once @t
 * saw CONN_ESTABLISHED.  @strict: no other event may come first.
 */
void qrnic_peer_accept(QRnicPeer *p, QRnic *t, uint32_t qpn, bool strict);

/* The octets an FPDU of a @len octet ULPDU takes: length, pad, CRC. */
size_t qrnic_peer_fpdu_size(size_t len);
/* Frames @ulpdu into @f (room for @size octets); the FPDU's length. */
size_t qrnic_peer_fpdu(QRnicPeer *p, const uint8_t *ulpdu, size_t len,
                       uint8_t *f, size_t size);
void qrnic_peer_send_fpdu(QRnicPeer *p, const uint8_t *ulpdu, size_t len);
/* Reads one FPDU; its ULPDU (at most @size octets) into @ulpdu, length. */
size_t qrnic_peer_recv_fpdu(QRnicPeer *p, uint8_t *ulpdu, size_t size);

/* A DDP tagged header (RFC 5041 section 5.1) with RDMAP's control. */
size_t qrnic_peer_tagged_hdr(uint8_t *h, bool last, uint8_t opcode,
                             uint32_t stag, uint64_t to);
/* An untagged one on queue @qn, with its next MSN (1 for queues > 2). */
size_t qrnic_peer_untagged_hdr(QRnicPeer *p, uint8_t *h, uint8_t opcode,
                               uint32_t inv, uint32_t qn, uint32_t mo);
/* A Read Request (RFC 5040 section 4.4) on queue 1: its ULPDU's length. */
size_t qrnic_peer_read_req(QRnicPeer *p, uint8_t *u, uint32_t sink_stag,
                           uint64_t sink_to, uint32_t len,
                           uint32_t src_stag, uint64_t src_to);
/* Appends to @f at *@n one tagged message of @len octets of @data. */
void qrnic_peer_add_tagged(QRnicPeer *p, uint8_t *f, size_t *n, size_t size,
                           uint8_t opcode, uint32_t stag, uint64_t to,
                           const void *data, size_t len);
/* Sends one: a zero-length RTR Write, a Read Response... */
void qrnic_peer_send_tagged(QRnicPeer *p, uint8_t opcode, uint32_t stag,
                            uint64_t to, const void *data, size_t len);
/* Sends an RDMA Write. */
void qrnic_peer_write(QRnicPeer *p, uint32_t stag, uint64_t to,
                      const void *data, size_t len);
/*
 * Reads the device's Terminate (RFC 5040 section 4.8): the first message
 * on queue 2 with @layer_etype and @ecode.  Returns its ULPDU's length.
 */
size_t qrnic_peer_expect_terminate(QRnicPeer *p, uint32_t layer_etype,
                                   uint8_t ecode);

#endif /* LIBQOS_RNIC_PEER_H */
