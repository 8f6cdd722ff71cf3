/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pcap/pcap.h>
#include "iwarp/iwarp.h"
#include "support/pcap_stream.h"

#define ETH_HLEN        14
#define ETHERTYPE_IPV4  0x0800
#define ETHERTYPE_VLAN  0x8100
#define IPPROTO_TCP_NUM 6
#define TCP_FLAG_SYN    0x02
#define TCP_FLAG_ACK    0x10

/* What one packet carries, once its headers are peeled off. */
struct tcp_pkt {
    uint32_t src_ip, dst_ip;
    uint16_t sport, dport;
    uint32_t seq;
    uint8_t flags;
    const uint8_t *payload;
    size_t len;
};

static bool parse_packet(const uint8_t *p, size_t caplen, struct tcp_pkt *t)
{
    size_t off = ETH_HLEN, ihl, ip_len, thl;
    uint16_t type;

    if (caplen < ETH_HLEN) {
        return false;
    }
    type = rnic_ld_be16(p + 12);
    while (type == ETHERTYPE_VLAN && caplen >= off + 4) {
        type = rnic_ld_be16(p + off + 2);
        off += 4;
    }
    if (type != ETHERTYPE_IPV4 || caplen < off + 20 || p[off] >> 4 != 4) {
        return false;
    }
    ihl = (p[off] & 0xf) * 4;
    ip_len = rnic_ld_be16(p + off + 2);     /* excludes Ethernet padding */
    if (p[off + 9] != IPPROTO_TCP_NUM || ip_len > caplen - off ||
        ip_len < ihl + 20 || (rnic_ld_be16(p + off + 6) & 0x3fff)) {
        return false;       /* not TCP, truncated, or a fragment */
    }
    t->src_ip = rnic_ld_be32(p + off + 12);
    t->dst_ip = rnic_ld_be32(p + off + 16);
    p += off + ihl;
    ip_len -= ihl;
    thl = (p[12] >> 4) * 4;
    if (thl < 20 || thl > ip_len) {
        return false;
    }
    t->sport = rnic_ld_be16(p);
    t->dport = rnic_ld_be16(p + 2);
    t->seq = rnic_ld_be32(p + 4);
    t->flags = p[13];
    t->payload = p + thl;
    t->len = ip_len - thl;
    return true;
}

static bool dir_matches(const struct pcap_tcp_dir *d, const struct tcp_pkt *t)
{
    return d->src_ip == t->src_ip && d->dst_ip == t->dst_ip &&
           d->sport == t->sport && d->dport == t->dport;
}

static struct pcap_tcp_conn *new_conn(struct pcap_capture *cap,
                                      const struct tcp_pkt *t)
{
    struct pcap_tcp_conn *c;

    if (cap->nconns == cap->cap) {
        cap->cap = cap->cap ? 2 * cap->cap : 8;
        cap->conns = realloc(cap->conns, cap->cap * sizeof(*cap->conns));
    }
    c = &cap->conns[cap->nconns++];
    memset(c, 0, sizeof(*c));
    c->dir[0] = (struct pcap_tcp_dir) {
        .src_ip = t->src_ip, .dst_ip = t->dst_ip,
        .sport = t->sport, .dport = t->dport,
    };
    c->dir[1] = (struct pcap_tcp_dir) {
        .src_ip = t->dst_ip, .dst_ip = t->src_ip,
        .sport = t->dport, .dport = t->sport,
    };
    return c;
}

/* The newest connection of this 4-tuple; a fresh SYN starts another. */
static struct pcap_tcp_dir *find_dir(struct pcap_capture *cap,
                                     const struct tcp_pkt *t)
{
    bool pure_syn = (t->flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) == TCP_FLAG_SYN;

    for (size_t i = cap->nconns; i-- > 0;) {
        struct pcap_tcp_conn *c = &cap->conns[i];

        for (int d = 0; d < 2; d++) {
            if (!dir_matches(&c->dir[d], t)) {
                continue;
            }
            if (pure_syn && c->dir[d].syn_seen && c->dir[d].isn != t->seq) {
                return &new_conn(cap, t)->dir[0];
            }
            return &c->dir[d];
        }
    }
    return &new_conn(cap, t)->dir[0];
}

static void add_segment(struct pcap_tcp_dir *d, const struct tcp_pkt *t)
{
    struct pcap_tcp_seg *s;

    if (d->nsegs == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 64;
        d->segs = realloc(d->segs, d->cap * sizeof(*d->segs));
    }
    s = &d->segs[d->nsegs++];
    s->seq = t->seq;
    s->len = t->len;
    s->data = malloc(t->len);
    memcpy(s->data, t->payload, t->len);
}

static void add_packet(struct pcap_capture *cap, const struct tcp_pkt *t)
{
    struct pcap_tcp_dir *d = find_dir(cap, t);

    if (t->flags & TCP_FLAG_SYN) {
        d->syn_seen = true;
        d->isn = t->seq;
    }
    if (t->len) {
        add_segment(d, t);
    }
}

static uint32_t sort_base;

static int cmp_seg(const void *a, const void *b)
{
    uint32_t x = ((const struct pcap_tcp_seg *)a)->seq - sort_base;
    uint32_t y = ((const struct pcap_tcp_seg *)b)->seq - sort_base;

    return x < y ? -1 : x > y;
}

/* Lay the segments out from the first data octet, dropping repeats. */
static void reassemble(struct pcap_tcp_dir *d)
{
    uint32_t base;
    size_t total = 0;

    if (!d->nsegs) {
        return;
    }
    base = d->syn_seen ? d->isn + 1 : d->segs[0].seq;
    for (size_t i = 0; !d->syn_seen && i < d->nsegs; i++) {
        if ((int32_t)(d->segs[i].seq - base) < 0) {
            base = d->segs[i].seq;
        }
    }
    sort_base = base;
    qsort(d->segs, d->nsegs, sizeof(*d->segs), cmp_seg);
    for (size_t i = 0; i < d->nsegs; i++) {
        total += d->segs[i].len;
    }
    d->data = malloc(total ? total : 1);
    for (size_t i = 0; i < d->nsegs; i++) {
        const struct pcap_tcp_seg *s = &d->segs[i];
        size_t off = s->seq - base;

        if (off + s->len <= d->len) {
            d->dup_segs++;
            continue;
        }
        if (off > d->len) {
            d->gap = true;
            break;
        }
        memcpy(d->data + d->len, s->data + (d->len - off),
               off + s->len - d->len);
        d->len = off + s->len;
    }
}

int pcap_capture_load(const char *path, struct pcap_capture *cap,
                      char *err, size_t errlen)
{
    char perr[PCAP_ERRBUF_SIZE];
    pcap_t *pc = pcap_open_offline(path, perr);
    struct pcap_pkthdr *h;
    const uint8_t *data;
    int ret;

    memset(cap, 0, sizeof(*cap));
    if (!pc) {
        snprintf(err, errlen, "%s", perr);
        return -1;
    }
    if (pcap_datalink(pc) != DLT_EN10MB) {
        snprintf(err, errlen, "%s: link type %d, want Ethernet", path,
                 pcap_datalink(pc));
        pcap_close(pc);
        return -1;
    }
    while ((ret = pcap_next_ex(pc, &h, &data)) == 1) {
        struct tcp_pkt t;

        cap->packets++;
        if (parse_packet(data, h->caplen, &t)) {
            add_packet(cap, &t);
        } else {
            cap->skipped++;
        }
    }
    if (ret == -1) {
        snprintf(err, errlen, "%s: %s", path, pcap_geterr(pc));
    }
    pcap_close(pc);
    for (size_t i = 0; i < cap->nconns; i++) {
        reassemble(&cap->conns[i].dir[0]);
        reassemble(&cap->conns[i].dir[1]);
    }
    return ret == -1 ? -1 : 0;
}

void pcap_capture_free(struct pcap_capture *cap)
{
    for (size_t i = 0; i < cap->nconns; i++) {
        for (int d = 0; d < 2; d++) {
            struct pcap_tcp_dir *dir = &cap->conns[i].dir[d];

            for (size_t s = 0; s < dir->nsegs; s++) {
                free(dir->segs[s].data);
            }
            free(dir->segs);
            free(dir->data);
        }
    }
    free(cap->conns);
    memset(cap, 0, sizeof(*cap));
}

static bool is_dir(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *pcap_captures_dir(void)
{
    static char path[PATH_MAX + 64];
    char cwd[PATH_MAX];
    const char *env = getenv("RNIC_CAPTURES");

    if (env && *env) {
        return is_dir(env) ? env : NULL;
    }
    if (!getcwd(cwd, sizeof(cwd))) {
        return NULL;
    }
    for (;;) {
        char *slash = strrchr(cwd, '/');

        snprintf(path, sizeof(path), "%s/tests/data/siw-captures",
                 strcmp(cwd, "/") ? cwd : "");
        if (is_dir(path)) {
            return path;
        }
        if (!slash || !strcmp(cwd, "/")) {
            return NULL;
        }
        slash[slash == cwd] = '\0';     /* "/a" becomes "/" */
    }
}
