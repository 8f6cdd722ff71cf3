/* SPDX-License-Identifier: GPL-2.0-or-later */
/* listen-allow / peer-allow rules: see addr_policy.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "addr_policy.h"

/* A decimal number in [lo, hi] filling all of @s. */
static bool parse_num(const char *s, unsigned long hi, unsigned long *out)
{
    char *end;

    if (*s < '0' || *s > '9') {
        return false;
    }
    errno = 0;
    *out = strtoul(s, &end, 10);
    return !errno && !*end && *out <= hi;
}

/*
 * "PORT" or "PORT-PORT".  A rule for port 0 alone would match nothing:
 * port 0 (the host picks one) is allowed only by a rule without a port.
 */
static bool parse_ports(char *s, struct rnic_addr_rule *r)
{
    char *dash = strchr(s, '-');
    unsigned long lo, hi;

    if (dash) {
        *dash++ = '\0';
    }
    if (!parse_num(s, 65535, &lo) || (dash && !parse_num(dash, 65535, &hi))) {
        return false;
    }
    r->port_lo = (uint16_t)lo;
    r->port_hi = dash ? (uint16_t)hi : (uint16_t)lo;
    return r->port_lo <= r->port_hi && r->port_hi != 0;
}

/* "ADDR[/BITS]" */
static bool parse_prefix(char *s, struct rnic_addr_rule *r)
{
    char *slash = strchr(s, '/');
    unsigned long bits;
    unsigned max;

    if (slash) {
        *slash++ = '\0';
    }
    if (inet_pton(AF_INET, s, r->addr) == 1) {
        r->family = RNIC_ADDR_IPV4;
        max = 32;
    } else if (inet_pton(AF_INET6, s, r->addr) == 1) {
        r->family = RNIC_ADDR_IPV6;
        max = 128;
    } else {
        return false;
    }
    if (slash && !parse_num(slash, max, &bits)) {
        return false;
    }
    r->bits = slash ? (unsigned)bits : max;
    return true;
}

static bool parse_rule(char *s, struct rnic_addr_rule *r)
{
    char *ports = NULL;

    memset(r, 0, sizeof(*r));
    r->port_hi = 65535;
    if (*s == '[') {
        char *close = strchr(s, ']');

        if (!close) {
            return false;
        }
        *close = '\0';
        /* "[v6]/bits:ports": the prefix length may follow the bracket */
        if (close[1] == '/') {
            char *colon = strchr(close + 2, ':');

            if (colon) {
                *colon = '\0';
                ports = colon + 1;
            }
            memmove(close, close + 1, strlen(close + 1) + 1);
        } else if (close[1] == ':') {
            ports = close + 2;
        } else if (close[1]) {
            return false;
        }
        s++;
        if (!parse_prefix(s, r) || r->family != RNIC_ADDR_IPV6) {
            return false;
        }
    } else {
        char *colon = strchr(s, ':');

        /* one colon: IPv4 with a port; more: a bare IPv6 address */
        if (colon && !strchr(colon + 1, ':')) {
            *colon = '\0';
            ports = colon + 1;
        }
        if (!parse_prefix(s, r) || (ports && r->family != RNIC_ADDR_IPV4)) {
            return false;
        }
    }
    return !ports || parse_ports(ports, r);
}

static void strip(char **s)
{
    char *e;

    while (**s == ' ' || **s == '\t') {
        (*s)++;
    }
    e = *s + strlen(*s);
    while (e > *s && (e[-1] == ' ' || e[-1] == '\t')) {
        *--e = '\0';
    }
}

int rnic_addr_policy_parse(const char *list, struct rnic_addr_policy *p,
                           char *bad, size_t bad_len)
{
    char *copy = strdup(list ? list : "");
    char *save = NULL;
    size_t n = 1;

    p->rules = NULL;
    p->count = 0;
    if (!copy) {
        return -ENOMEM;
    }
    for (const char *c = copy; *c; c++) {
        n += *c == ',';
    }
    p->rules = calloc(n, sizeof(*p->rules));
    if (!p->rules) {
        free(copy);
        return -ENOMEM;
    }
    for (char *it = strtok_r(copy, ",", &save); it;
         it = strtok_r(NULL, ",", &save)) {
        char item[128];

        strip(&it);
        if (!*it) {
            continue;
        }
        snprintf(item, sizeof(item), "%s", it);
        if (!parse_rule(it, &p->rules[p->count])) {
            if (bad && bad_len) {
                snprintf(bad, bad_len, "%s", item);
            }
            rnic_addr_policy_free(p);
            free(copy);
            return -EINVAL;
        }
        p->count++;
    }
    free(copy);
    return 0;
}

void rnic_addr_policy_free(struct rnic_addr_policy *p)
{
    free(p->rules);
    p->rules = NULL;
    p->count = 0;
}

static bool prefix_match(const struct rnic_addr_rule *r, const uint8_t *addr)
{
    unsigned full = r->bits / 8, rest = r->bits % 8;

    if (memcmp(r->addr, addr, full)) {
        return false;
    }
    return !rest || !((r->addr[full] ^ addr[full]) & (0xff << (8 - rest)));
}

bool rnic_addr_policy_allows(const struct rnic_addr_policy *p,
                             enum rnic_addr_family family,
                             const uint8_t *addr, uint16_t port)
{
    for (size_t i = 0; i < p->count; i++) {
        const struct rnic_addr_rule *r = &p->rules[i];
        bool any_port = r->port_lo == 0 && r->port_hi == 65535;

        if (r->family == family && prefix_match(r, addr) &&
            (any_port || (port && port >= r->port_lo &&
                          port <= r->port_hi))) {
            return true;
        }
    }
    return false;
}

const char *rnic_addr_str(enum rnic_addr_family family, const uint8_t *addr,
                          uint16_t port, char *buf, size_t len)
{
    char a[INET6_ADDRSTRLEN] = "?";

    inet_ntop(family == RNIC_ADDR_IPV4 ? AF_INET : AF_INET6, addr, a,
              sizeof(a));
    snprintf(buf, len, family == RNIC_ADDR_IPV4 ? "%s:%u" : "[%s]:%u", a,
             port);
    return buf;
}
