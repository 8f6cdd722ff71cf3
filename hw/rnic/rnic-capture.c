/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device records its own traffic: property "capture" names a pcapng
 * file (settable with -device and at run time with qom-set; "" stops),
 * "capture-limit" bounds each file and "capture-files" chooses between
 * stopping at the limit (1) and rotating over that many files.  Every
 * octet the device writes to or reads from a connection's socket is
 * handed to the core's writer (core/capture/capture.c), which frames it for
 * Wireshark.  Connections that were already open when the capture began
 * are not recorded: their FPDU boundaries are unknown.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/timer.h"
#include "qom/object.h"
#include "system/system.h"
#include "rnic.h"
#include "rnic-capture.h"
#include "capture/capture.h"
#include "trace.h"

#define RNIC_CAPTURE_LIMIT_DEFAULT  (64 * 1024 * 1024)

typedef struct RnicCapture {
    char *path;             /* "" or NULL: off */
    uint64_t limit;
    uint32_t files;
    GHashTable *skip;       /* ids of connections older than the capture */
    bool reported;          /* the limit or an error was reported */
    Notifier exit;          /* QEMU exits: finish the file */
    RnicState *s;
} RnicCapture;

static uint64_t rnic_capture_now(void)
{
    return qemu_clock_get_ns(QEMU_CLOCK_HOST);
}

/*
 * "rnic-stats stat-tx-fpdus=6 ...": the device's non-zero counters (since
 * it started), for the file's closing statistics block, so that a reader
 * can compare the capture with what the device counted.
 */
static char *rnic_capture_stats_comment(RnicState *s)
{
    GString *out = g_string_new("rnic-stats");
    ObjectPropertyIterator iter;
    ObjectProperty *prop;

    object_property_iter_init(&iter, OBJECT(s));
    while ((prop = object_property_iter_next(&iter))) {
        uint64_t v;

        if (!g_str_has_prefix(prop->name, "stat-") ||
            strcmp(prop->type, "uint64")) {
            continue;
        }
        v = object_property_get_uint(OBJECT(s), prop->name, NULL);
        if (v) {
            g_string_append_printf(out, " %s=%" PRIu64, prop->name, v);
        }
    }
    return g_string_free(out, false);
}

/*
 * The writer is the data path's (an IOThread's, maybe): it is stopped
 * only inside an entry, or once the device has no thread left to run.
 */
static void rnic_capture_stop(RnicState *s)
{
    assert(rnic_inside(s) || !DEVICE(s)->realized);
    if (s->capture) {
        g_autofree char *stats = rnic_capture_stats_comment(s);

        trace_rnic_capture(rnic_cap_path(s->capture), "stopped",
                           rnic_cap_stats(s->capture)->packets);
        rnic_cap_free(s->capture, rnic_capture_now(), stats);
        s->capture = NULL;
    }
    g_hash_table_remove_all(s->capture_cfg->skip);
}

static bool rnic_capture_start(RnicState *s, const char *path, Error **errp)
{
    RnicCapture *cfg = s->capture_cfg;
    struct rnic_pcapng_config pc = {
        .path = path,
        .limit = cfg->limit,
        .files = cfg->files,
        .appl = "QEMU rnic device",
    };

    s->capture = rnic_cap_new(&pc);
    if (!s->capture) {
        error_setg_errno(errp, errno, "rnic: capture: cannot create '%s'",
                         path);
        return false;
    }
    cfg->reported = false;
    for (uint32_t i = 0; s->conns && i < s->max_conns; i++) {
        if (s->conns[i]) {
            g_hash_table_add(cfg->skip, GUINT_TO_POINTER(s->conns[i]->id));
        }
    }
    trace_rnic_capture(path, "started", g_hash_table_size(cfg->skip));
    return true;
}

static char *rnic_capture_get(Object *obj, Error **errp)
{
    RnicState *s = RNIC(obj);

    return g_strdup(s->capture_cfg->path ?: "");
}

/*
 * Before realize the path is kept, so that capture-limit and capture-files
 * given on the same -device line apply whatever their order.
 */
static void rnic_capture_set(Object *obj, const char *value, Error **errp)
{
    RnicState *s = RNIC(obj);

    /* With an IOThread, never while one of its callbacks records. */
    rnic_enter(s);
    rnic_capture_stop(s);
    g_free(s->capture_cfg->path);
    s->capture_cfg->path = g_strdup(value);
    if (*value && DEVICE(obj)->realized &&
        !rnic_capture_start(s, value, errp)) {
        g_free(s->capture_cfg->path);
        s->capture_cfg->path = NULL;
    }
    rnic_leave(s);
}

bool rnic_capture_realize(RnicState *s, Error **errp)
{
    const char *path = s->capture_cfg->path;

    return !path || !*path || rnic_capture_start(s, path, errp);
}

static void rnic_sockaddr_to_cap(const struct sockaddr_storage *ss,
                                 struct rnic_cap_addr *a)
{
    memset(a, 0, sizeof(*a));
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)ss;

        a->family = AF_INET;
        memcpy(a->addr, &in->sin_addr, 4);
        a->port = ntohs(in->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const void *)ss;

        a->port = ntohs(in6->sin6_port);
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
            a->family = AF_INET;
            memcpy(a->addr, &in6->sin6_addr.s6_addr[12], 4);
        } else {
            a->family = AF_INET6;
            memcpy(a->addr, &in6->sin6_addr, 16);
        }
    }
}

/* The first octet of a connection seen: its SYN exchange, from its names. */
static bool rnic_capture_open(RnicConn *c)
{
    RnicState *s = c->s;
    struct sockaddr_storage ls, ps;
    socklen_t ll = sizeof(ls), pl = sizeof(ps);
    struct rnic_cap_addr local, peer;
    /* CONNECT made the TCP connection; a handed-in one: assume MPA role */
    bool active = c->listener_id == 0 ||
                  (c->listener_id == RNIC_LISTENER_HANDED_IN && c->initiator);
    g_autofree char *comment = NULL;

    if (getsockname(c->fd, (struct sockaddr *)&ls, &ll) ||
        getpeername(c->fd, (struct sockaddr *)&ps, &pl)) {
        memset(&ls, 0, sizeof(ls));
        memset(&ps, 0, sizeof(ps));
    }
    rnic_sockaddr_to_cap(&ls, &local);
    rnic_sockaddr_to_cap(&ps, &peer);
    if (!local.family || local.family != peer.family) {
        return false;       /* not connected (any more): nothing to draw */
    }
    comment = g_strdup_printf("rnic %s: connection 0x%x (%s)",
                              DEVICE(s)->id ?: "(no id)", c->id,
                              c->listener_id == 0 ? "CONNECT" :
                              c->listener_id == RNIC_LISTENER_HANDED_IN ?
                              "handed in" : "accepted");
    rnic_cap_open(s->capture, c->id, &local, &peer, active, comment,
                  rnic_capture_now());
    return true;
}

static void rnic_capture_check(RnicState *s)
{
    const struct rnic_pcapng_stats *st = rnic_cap_stats(s->capture);

    rnic_cap_flush(s->capture);
    if (!s->capture_cfg->reported && (st->dropped || st->error)) {
        s->capture_cfg->reported = true;
        warn_report("rnic: capture '%s': %s; later packets are not written",
                    rnic_cap_path(s->capture),
                    st->error ? strerror(st->error) : "capture-limit reached");
    }
}

void rnic_capture_io(RnicConn *c, bool tx, const struct iovec *iov, int cnt,
                     ssize_t n)
{
    RnicState *s = c->s;
    int err = errno;        /* the caller looks at it after us */

    if (!rnic_cap_known(s->capture, c->id) &&
        (g_hash_table_contains(s->capture_cfg->skip,
                               GUINT_TO_POINTER(c->id)) ||
         !rnic_capture_open(c))) {
        errno = err;
        return;
    }
    if (n > 0) {
        rnic_cap_data(s->capture, c->id, tx, iov, cnt, n, rnic_capture_now());
    } else if (!tx && (n == 0 || (err != EAGAIN && err != EINTR))) {
        /* recv() saw the peer's FIN, or its reset */
        rnic_cap_end(s->capture, c->id, false,
                     n == 0 ? RNIC_CAP_FIN : RNIC_CAP_RST,
                     rnic_capture_now());
    }
    rnic_capture_check(s);
    errno = err;
}

void rnic_capture_gone(RnicConn *c, bool abortive)
{
    RnicState *s = c->s;
    uint64_t now = rnic_capture_now();

    g_hash_table_remove(s->capture_cfg->skip, GUINT_TO_POINTER(c->id));
    if (!rnic_cap_known(s->capture, c->id)) {
        return;
    }
    if (abortive) {
        rnic_cap_end(s->capture, c->id, true, RNIC_CAP_RST, now);
    }
    rnic_cap_close(s->capture, c->id, now);
    rnic_capture_check(s);
}

static void rnic_capture_exit(Notifier *n, void *data)
{
    RnicCapture *cfg = container_of(n, RnicCapture, exit);

    /* The IOThread may still be writing: finish the file under its lock. */
    rnic_enter(cfg->s);
    rnic_capture_stop(cfg->s);
    rnic_leave(cfg->s);
}

void rnic_capture_init(RnicState *s)
{
    Object *obj = OBJECT(s);
    RnicCapture *cfg = g_new0(RnicCapture, 1);

    cfg->limit = RNIC_CAPTURE_LIMIT_DEFAULT;
    cfg->files = 1;
    cfg->skip = g_hash_table_new(g_direct_hash, g_direct_equal);
    cfg->s = s;
    cfg->exit.notify = rnic_capture_exit;
    qemu_add_exit_notifier(&cfg->exit);
    s->capture_cfg = cfg;
    object_property_add_str(obj, "capture", rnic_capture_get,
                            rnic_capture_set);
    object_property_set_description(obj, "capture",
        "pcapng file the device writes its TCP streams to (MPA, FPDUs, "
        "Terminates, open and close), for Wireshark; \"\" stops. Settable "
        "at run time (qom-set)");
    object_property_add_uint64_ptr(obj, "capture-limit", &cfg->limit,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_set_description(obj, "capture-limit",
        "octets per capture file (default 64 MiB; 0: no limit); applies "
        "when the capture (re)starts");
    object_property_add_uint32_ptr(obj, "capture-files", &cfg->files,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_set_description(obj, "capture-files",
        "1 (default): stop writing at capture-limit; N > 1: rotate, "
        "keeping FILE, FILE.1 .. FILE.N-1");
}

void rnic_capture_fini(RnicState *s)
{
    rnic_capture_stop(s);
    qemu_remove_exit_notifier(&s->capture_cfg->exit);
    g_hash_table_destroy(s->capture_cfg->skip);
    g_free(s->capture_cfg->path);
    g_free(s->capture_cfg);
    s->capture_cfg = NULL;
}
