/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test support: read a pcap file and rebuild each TCP connection's two
 * byte streams in sequence order, as the receiving TCP would have seen
 * them (retransmissions, duplicates and reordering resolved).
 * IPv4 over Ethernet (with or without VLAN tags) only.
 */
#ifndef RNIC_TEST_PCAP_STREAM_H
#define RNIC_TEST_PCAP_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pcap_tcp_seg {
    uint32_t seq;
    size_t len;
    uint8_t *data;
};

/* One direction of a connection. */
struct pcap_tcp_dir {
    uint32_t src_ip, dst_ip;        /* host order */
    uint16_t sport, dport;
    bool syn_seen;
    uint32_t isn;
    struct pcap_tcp_seg *segs;
    size_t nsegs, cap;
    /* filled by reassembly */
    uint8_t *data;
    size_t len;
    size_t dup_segs;                /* wholly seen before */
    bool gap;                       /* a hole: octets never captured */
};

/* dir[0] sent the first SYN (or the first packet seen). */
struct pcap_tcp_conn {
    struct pcap_tcp_dir dir[2];
};

struct pcap_capture {
    struct pcap_tcp_conn *conns;
    size_t nconns, cap;
    size_t packets, skipped;        /* skipped: not IPv4/TCP */
};

/* 0, or -1 with a message in @err. */
int pcap_capture_load(const char *path, struct pcap_capture *cap,
                      char *err, size_t errlen);
void pcap_capture_free(struct pcap_capture *cap);

/*
 * The folder of siw captures: $RNIC_CAPTURES, else the first
 * tests/data/siw-captures (the repository's copy) found walking up from
 * the current directory.  NULL if neither exists.
 */
const char *pcap_captures_dir(void);

#endif /* RNIC_TEST_PCAP_STREAM_H */
