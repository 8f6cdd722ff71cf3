/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device's own capture of its TCP streams, for Wireshark.
 *
 * The device hands over every octet it wrote to or read from a
 * connection's socket; this turns them into Ethernet/IP/TCP frames in a
 * pcapng file (pcapng.h).  Addresses and ports are the connection's own;
 * sequence numbers count the real stream's octets from a synthesized SYN
 * (the kernel's initial sequence number cannot be read without
 * CAP_NET_ADMIN), so Wireshark's relative sequence numbers are the real
 * ones.  SYN, FIN and RST are synthesized when the connection opens and
 * closes.  Each frame carries one MPA Request/Reply or one FPDU, however
 * the octets were split by the system calls, because Wireshark's
 * iwarp_mpa dissector does not reassemble FPDUs across TCP segments.
 * Streams that use MPA markers, or that are not MPA, are written as
 * they came.
 */
#ifndef RNIC_CAPTURE_H
#define RNIC_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "pcapng.h"

struct rnic_cap_addr {
    int family;             /* AF_INET or AF_INET6 */
    uint8_t addr[16];       /* network order */
    uint16_t port;          /* host order */
};

enum rnic_cap_end {
    RNIC_CAP_FIN,
    RNIC_CAP_RST,
};

struct rnic_cap;

/* NULL and errno when the file cannot be created. */
struct rnic_cap *rnic_cap_new(const struct rnic_pcapng_config *cfg);
/*
 * Writes what streams still hold (partial FPDUs), then the file's
 * statistics with @comment (may be NULL), and closes the file.
 */
void rnic_cap_free(struct rnic_cap *cap, uint64_t ts_ns, const char *comment);

/*
 * Connection @key opens: SYN, SYN-ACK, ACK from the side that connected
 * (@local_active: we did).  @comment goes on the SYN.  Unknown keys in
 * the calls below are ignored.
 */
void rnic_cap_open(struct rnic_cap *cap, uint64_t key,
                   const struct rnic_cap_addr *local,
                   const struct rnic_cap_addr *peer, bool local_active,
                   const char *comment, uint64_t ts_ns);
bool rnic_cap_known(const struct rnic_cap *cap, uint64_t key);
/* @len octets of @iov were sent (@tx) or received. */
void rnic_cap_data(struct rnic_cap *cap, uint64_t key, bool tx,
                   const struct iovec *iov, int cnt, size_t len,
                   uint64_t ts_ns);
/* FIN (from us if @tx, else from the peer), or RST. */
void rnic_cap_end(struct rnic_cap *cap, uint64_t key, bool tx,
                  enum rnic_cap_end how, uint64_t ts_ns);
/* The connection is gone: our FIN unless a FIN or RST was written. */
void rnic_cap_close(struct rnic_cap *cap, uint64_t key, uint64_t ts_ns);

void rnic_cap_flush(struct rnic_cap *cap);
const struct rnic_pcapng_stats *rnic_cap_stats(const struct rnic_cap *cap);
const char *rnic_cap_path(const struct rnic_cap *cap);
unsigned rnic_cap_streams(const struct rnic_cap *cap);

#endif /* RNIC_CAPTURE_H */
