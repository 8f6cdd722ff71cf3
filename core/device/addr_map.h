/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Guest-visible addresses to host endpoints (the device's addr-map
 * property, docs/spec.md "Addresses").  A guest gives its rnic port an
 * address and names peers by theirs; the device's host side listens and
 * connects on host addresses.  A map is a list of rules GUEST/BITS=HOST:
 * an address within GUEST/BITS keeps its low bits and takes the high BITS
 * from HOST.  The first rule that matches wins; an address no rule
 * matches is used as it is.  The default takes 10.0.0.0/8 to the host's
 * 127.0.0.0/8, all of which is local on Linux: two guests on one host
 * reach each other by nothing but their addresses, without root.
 */
#ifndef RNIC_ADDR_MAP_H
#define RNIC_ADDR_MAP_H

#include <stddef.h>
#include <stdint.h>

#define RNIC_ADDR_MAP_DEFAULT   "10.0.0.0/8=127.0.0.0"
#define RNIC_ADDR_MAP_MAX       16

struct rnic_addr_map_rule {
    uint8_t family;                 /* 4 or 6 */
    uint8_t bits;                   /* prefix length, both sides */
    uint8_t guest[16];
    uint8_t host[16];
};

struct rnic_addr_map {
    unsigned n;
    struct rnic_addr_map_rule rule[RNIC_ADDR_MAP_MAX];
};

/*
 * Parses a comma-separated list of rules ("" is no rule).  Returns 0, or
 * -1 with a message in @err naming the bad rule.
 */
int rnic_addr_map_parse(struct rnic_addr_map *m, const char *spec,
                        char *err, size_t errlen);

/*
 * Maps @addr (family 4: bytes 0..3, network order; family 6: 16 bytes) in
 * place.  Returns the index of the rule applied, or -1 for none.
 */
int rnic_addr_map_to_host(const struct rnic_addr_map *m, uint8_t family,
                          uint8_t *addr);

#endif
