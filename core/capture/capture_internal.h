/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What capture.c and capture_frame.c share. */
#ifndef RNIC_CAPTURE_INTERNAL_H
#define RNIC_CAPTURE_INTERNAL_H

#include "capture.h"
#include "iwarp/mpa.h"

#define CAP_TCP_FIN 0x01
#define CAP_TCP_SYN 0x02
#define CAP_TCP_RST 0x04
#define CAP_TCP_PSH 0x08
#define CAP_TCP_ACK 0x10

/* The most one frame carries: an IPv4 datagram is at most 65535 octets. */
#define CAP_SEG_MAX (65535 - 20 - 20)
/* The largest unit: an MPA frame with the largest PD_Length field. */
#define CAP_UNIT_MAX (20 + 0xffff)

enum cap_mode {
    CAP_MODE_MPA,           /* the MPA Request or Reply comes next */
    CAP_MODE_FPDU,          /* one frame per FPDU */
    CAP_MODE_RAW,           /* markers, reject, or not MPA: as it came */
};

/* One direction of a connection. */
struct cap_dir {
    uint32_t isn;
    uint32_t next;          /* sequence number of the next octet */
    uint16_t ip_id;
    enum cap_mode mode;
    uint8_t *buf;           /* the unit in progress */
    size_t len;
    uint8_t frame[RNIC_MPA_FRAME_MAX];  /* the MPA frame, for a new file */
    size_t frame_len;
    bool ended;             /* FIN or RST written */
};

struct cap_stream {
    uint64_t key;
    struct rnic_cap_addr local, peer;
    bool local_active;
    bool reset;
    struct cap_dir dir[2];  /* [0] from the peer, [1] from us */
    struct cap_stream *next;
};

struct rnic_cap {
    struct rnic_pcapng *file;
    struct cap_stream *streams;
    unsigned nstreams;
    uint64_t now;           /* timestamp of the call in progress */
};

bool cap_frame(struct rnic_cap *cap, struct cap_stream *s, bool tx,
               uint8_t flags, uint32_t seq, uint32_t ack,
               const uint8_t *payload, size_t len, uint64_t ts,
               const char *comment);

#endif /* RNIC_CAPTURE_INTERNAL_H */
