/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Guest-visible addresses to host endpoints: see addr_map.h. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "addr_map.h"

static int rnic_addr_parse(const char *s, uint8_t *family, uint8_t *out)
{
    memset(out, 0, 16);
    if (inet_pton(AF_INET, s, out) == 1) {
        *family = 4;
        return 0;
    }
    if (inet_pton(AF_INET6, s, out) == 1) {
        *family = 6;
        return 0;
    }
    return -1;
}

/* One GUEST/BITS=HOST rule in @s (modified in place). */
static int rnic_addr_rule_parse(struct rnic_addr_map_rule *r, char *s)
{
    char *eq = strchr(s, '='), *slash = strchr(s, '/'), *end;
    uint8_t hfam;
    unsigned long bits;

    if (!eq || !slash || slash > eq) {
        return -1;
    }
    *eq = '\0';
    *slash = '\0';
    if (rnic_addr_parse(s, &r->family, r->guest) ||
        rnic_addr_parse(eq + 1, &hfam, r->host) || hfam != r->family) {
        return -1;
    }
    bits = strtoul(slash + 1, &end, 10);
    if (end == slash + 1 || *end || bits > (r->family == 4 ? 32u : 128u)) {
        return -1;
    }
    r->bits = bits;
    return 0;
}

int rnic_addr_map_parse(struct rnic_addr_map *m, const char *spec,
                        char *err, size_t errlen)
{
    char *copy = strdup(spec ? spec : ""), *save = NULL, *item;
    int ret = 0;

    m->n = 0;
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (item = strtok_r(copy, ",", &save); item;
         item = strtok_r(NULL, ",", &save)) {
        char rule[128];

        snprintf(rule, sizeof(rule), "%s", item);
        if (m->n == RNIC_ADDR_MAP_MAX) {
            snprintf(err, errlen, "more than %d rules", RNIC_ADDR_MAP_MAX);
            ret = -1;
            break;
        }
        if (rnic_addr_rule_parse(&m->rule[m->n], item)) {
            snprintf(err, errlen, "'%s' is not GUEST/BITS=HOST with two "
                     "addresses of one family", rule);
            ret = -1;
            break;
        }
        m->n++;
    }
    free(copy);
    return ret;
}

/* Byte @i of the mask of a /@bits prefix. */
static uint8_t rnic_mask_byte(unsigned bits, unsigned i)
{
    if (bits >= 8 * (i + 1)) {
        return 0xff;
    }
    if (bits <= 8 * i) {
        return 0;
    }
    return (uint8_t)(0xff << (8 - (bits - 8 * i)));
}

int rnic_addr_map_to_host(const struct rnic_addr_map *m, uint8_t family,
                          uint8_t *addr)
{
    unsigned len = family == 4 ? 4 : 16;

    for (unsigned r = 0; r < m->n; r++) {
        const struct rnic_addr_map_rule *rule = &m->rule[r];
        unsigned i;

        if (rule->family != family) {
            continue;
        }
        for (i = 0; i < len; i++) {
            if ((addr[i] ^ rule->guest[i]) & rnic_mask_byte(rule->bits, i)) {
                break;
            }
        }
        if (i < len) {
            continue;
        }
        for (i = 0; i < len; i++) {
            uint8_t mask = rnic_mask_byte(rule->bits, i);

            addr[i] = (rule->host[i] & mask) | (addr[i] & ~mask);
        }
        return (int)r;
    }
    return -1;
}
