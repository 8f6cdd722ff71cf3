/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Synthesized Ethernet, IPv4/IPv6 and TCP headers around one segment of
 * a captured stream, with correct IP and TCP checksums so that readers
 * that check them find nothing to complain about.
 */
#include <string.h>
#include <sys/socket.h>
#include "capture_internal.h"
#include "iwarp/iwarp.h"

/* Locally administered MACs: "rnic" for the device, "peer" for the other. */
static const uint8_t mac_local[6] = { 0x02, 'r', 'n', 'i', 'c', 0 };
static const uint8_t mac_peer[6] = { 0x02, 'p', 'e', 'e', 'r', 0 };

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
    size_t i;

    for (i = 0; i + 1 < len; i += 2) {
        sum += (uint32_t)p[i] << 8 | p[i + 1];
    }
    if (len & 1) {
        sum += (uint32_t)p[len - 1] << 8;
    }
    return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)~sum;
}

/*
 * A payload split into pieces of odd length would need the byte-swapping
 * dance; the payload here is one contiguous buffer, summed once.
 */
static void put_ipv4(uint8_t *ip, const struct rnic_cap_addr *src,
                     const struct rnic_cap_addr *dst, uint16_t id,
                     size_t tcp_len)
{
    ip[0] = 0x45;
    ip[1] = 0;
    rnic_st_be16(ip + 2, (uint16_t)(20 + tcp_len));
    rnic_st_be16(ip + 4, id);
    rnic_st_be16(ip + 6, 0x4000);          /* don't fragment */
    ip[8] = 64;
    ip[9] = 6;                              /* TCP */
    rnic_st_be16(ip + 10, 0);
    memcpy(ip + 12, src->addr, 4);
    memcpy(ip + 16, dst->addr, 4);
    rnic_st_be16(ip + 10, csum_fold(csum_add(0, ip, 20)));
}

static void put_ipv6(uint8_t *ip, const struct rnic_cap_addr *src,
                     const struct rnic_cap_addr *dst, size_t tcp_len)
{
    rnic_st_be32(ip, 0x60000000);
    rnic_st_be16(ip + 4, (uint16_t)tcp_len);
    ip[6] = 6;                              /* TCP */
    ip[7] = 64;
    memcpy(ip + 8, src->addr, 16);
    memcpy(ip + 24, dst->addr, 16);
}

static uint32_t pseudo_sum(const struct rnic_cap_addr *src,
                           const struct rnic_cap_addr *dst, size_t tcp_len)
{
    size_t alen = src->family == AF_INET ? 4 : 16;
    uint32_t sum = csum_add(0, src->addr, alen);

    sum = csum_add(sum, dst->addr, alen);
    return sum + 6 + (uint32_t)(tcp_len & 0xffff) + (uint32_t)(tcp_len >> 16);
}

bool cap_frame(struct rnic_cap *cap, struct cap_stream *s, bool tx,
               uint8_t flags, uint32_t seq, uint32_t ack,
               const uint8_t *payload, size_t len, uint64_t ts,
               const char *comment)
{
    struct cap_dir *d = &s->dir[tx];
    const struct rnic_cap_addr *src = tx ? &s->local : &s->peer;
    const struct rnic_cap_addr *dst = tx ? &s->peer : &s->local;
    bool v4 = s->local.family == AF_INET;
    uint8_t hdr[14 + 40 + 20];
    size_t iplen = v4 ? 20 : 40;
    uint8_t *tcp = hdr + 14 + iplen;
    size_t tcp_len = 20 + len;

    memcpy(hdr, tx ? mac_peer : mac_local, 6);
    memcpy(hdr + 6, tx ? mac_local : mac_peer, 6);
    rnic_st_be16(hdr + 12, v4 ? 0x0800 : 0x86dd);
    if (v4) {
        put_ipv4(hdr + 14, src, dst, d->ip_id++, tcp_len);
    } else {
        put_ipv6(hdr + 14, src, dst, tcp_len);
    }
    rnic_st_be16(tcp, src->port);
    rnic_st_be16(tcp + 2, dst->port);
    rnic_st_be32(tcp + 4, seq);
    rnic_st_be32(tcp + 8, (flags & CAP_TCP_ACK) ? ack : 0);
    tcp[12] = 5 << 4;                       /* 20 octets, no options */
    tcp[13] = flags;
    rnic_st_be16(tcp + 14, 0xffff);         /* window */
    rnic_st_be16(tcp + 16, 0);
    rnic_st_be16(tcp + 18, 0);
    rnic_st_be16(tcp + 16,
                 csum_fold(csum_add(csum_add(pseudo_sum(src, dst, tcp_len),
                                             tcp, 20), payload, len)));
    return rnic_pcapng_write(cap->file, ts, hdr, 14 + iplen + 20, payload, len,
                             comment);
}
