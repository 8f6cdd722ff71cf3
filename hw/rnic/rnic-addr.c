/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The addr-map property: the guest's addresses to host endpoints at LISTEN
 * and CONNECT (docs/spec.md "Addresses").  The mapping itself is the
 * core's (core/device/addr_map.c, unit-tested); this is its QEMU glue.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/sockets.h"
#include "rnic.h"
#include "trace.h"

bool rnic_addr_map_init(RnicState *s, Error **errp)
{
    char err[160];

    if (rnic_addr_map_parse(&s->params.addr_map, s->params.addr_map_str ?:
                            RNIC_ADDR_MAP_DEFAULT, err, sizeof(err))) {
        error_setg(errp, "rnic: addr-map: %s", err);
        return false;
    }
    return true;
}

/* The host endpoint of guest address @guest. */
struct rnic_sockaddr rnic_addr_to_host(RnicState *s,
                                       const struct rnic_sockaddr *guest)
{
    struct rnic_sockaddr host = *guest;
    int af = guest->family == RNIC_AF_INET ? AF_INET : AF_INET6;
    char g[INET6_ADDRSTRLEN] = "?", h[INET6_ADDRSTRLEN] = "?";
    int rule = rnic_addr_map_to_host(&s->params.addr_map, guest->family,
                                     host.addr);

    if (trace_event_get_state_backends(TRACE_RNIC_ADDR_MAP)) {
        inet_ntop(af, guest->addr, g, sizeof(g));
        inet_ntop(af, host.addr, h, sizeof(h));
        trace_rnic_addr_map(g, h, le16_to_cpu(guest->port), rule);
    }
    return host;
}
