/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Address and port policy of the device's listen-allow and peer-allow
 * properties: a comma-separated list of rules, each
 *
 *     IPV4[/BITS][:PORT[-PORT]]
 *     [IPV6][/BITS][:PORT[-PORT]]     (brackets needed only with a port)
 *     IPV6[/BITS]
 *
 * A rule without a port allows every port.  An empty list allows nothing:
 * the device reaches only what its user named.  No QEMU dependency: the
 * unit tests build and run this under AddressSanitizer.
 */
#ifndef RNIC_ADDR_POLICY_H
#define RNIC_ADDR_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rnic_addr_family {
    RNIC_ADDR_IPV4 = 4,
    RNIC_ADDR_IPV6 = 6,
};

struct rnic_addr_rule {
    enum rnic_addr_family family;
    uint8_t addr[16];           /* network order; 4 octets for IPv4 */
    unsigned bits;              /* prefix length */
    uint16_t port_lo, port_hi;  /* inclusive; 0-65535 without a port */
};

struct rnic_addr_policy {
    struct rnic_addr_rule *rules;
    size_t count;
};

/*
 * Parses @list into @p (freed with rnic_addr_policy_free()).  0, or
 * -EINVAL with the first rule that does not parse copied to @bad (NUL
 * terminated, at most @bad_len octets) and @p left empty; -ENOMEM.
 */
int rnic_addr_policy_parse(const char *list, struct rnic_addr_policy *p,
                           char *bad, size_t bad_len);
void rnic_addr_policy_free(struct rnic_addr_policy *p);

/*
 * True when a rule covers @addr (4 or 16 octets, network order) and
 * @port.  Port 0 (the host picks one) is covered only by a rule that
 * allows every port.
 */
bool rnic_addr_policy_allows(const struct rnic_addr_policy *p,
                             enum rnic_addr_family family,
                             const uint8_t *addr, uint16_t port);

/* "a.b.c.d:port" or "[v6]:port" for messages; @buf of 64 octets. */
const char *rnic_addr_str(enum rnic_addr_family family, const uint8_t *addr,
                          uint16_t port, char *buf, size_t len);

#endif /* RNIC_ADDR_POLICY_H */
