/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device's state on request: the read-only QOM property "state" is a
 * JSON object (QPs, CQs, SRQs, STags, connections, listeners, capture).
 * QMP `qom-get` returns it as JSON for scripts and HMP `qom-get` prints it
 * indented for people.  A QOM property is what an out-of-tree device can
 * offer: a new QMP command or HMP `info` subcommand would mean editing
 * QEMU's QAPI schema and command tables, which rnic does not fork.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qbool.h"
#include "qobject/qnull.h"
#include "qemu/sockets.h"
#include "rnic.h"
#include "capture/capture.h"

static const char *const rnic_conn_state_names[] = {
    [RNIC_CONN_CONNECTING] = "connecting",
    [RNIC_CONN_WAIT_REPLY] = "wait-reply",
    [RNIC_CONN_WAIT_REQUEST] = "wait-request",
    [RNIC_CONN_PENDING] = "pending",
    [RNIC_CONN_REJECTING] = "rejecting",
    [RNIC_CONN_RTS] = "rts",
    [RNIC_CONN_DRAINING] = "draining",
    [RNIC_CONN_FIN_WAIT] = "fin-wait",
};

static void rnic_put_hex(QDict *d, const char *key, uint64_t v)
{
    g_autofree char *s = g_strdup_printf("0x%" PRIx64, v);

    qdict_put_str(d, key, s);
}

/* "127.0.0.1:4791" or "[::1]:4791" */
static void rnic_put_addr(QDict *d, const char *key,
                          const struct rnic_sockaddr *a)
{
    char host[INET6_ADDRSTRLEN] = "";
    int af = a->family == RNIC_AF_INET ? AF_INET : AF_INET6;
    g_autofree char *s = NULL;

    if (a->family != RNIC_AF_INET && a->family != RNIC_AF_INET6) {
        qdict_put_null(d, key);
        return;
    }
    inet_ntop(af, a->addr, host, sizeof(host));
    s = g_strdup_printf(af == AF_INET ? "%s:%u" : "[%s]:%u", host,
                        le16_to_cpu(a->port));
    qdict_put_str(d, key, s);
}

static QDict *rnic_ring_dict(const RnicRing *r)
{
    QDict *d = qdict_new();

    rnic_put_hex(d, "base", r->base);
    /*
     * A disabled device's CMDQ and EQ registers hold whatever the guest
     * wrote: only a size the ring could have is reported.
     */
    qdict_put_int(d, "size", r->base && r->log_size < 32 ?
                  1ull << r->log_size : 0);
    qdict_put_int(d, "prod", r->prod);
    qdict_put_int(d, "cons", r->cons);
    return d;
}

static QObject *rnic_last_term(const RnicQp *qp)
{
    QDict *d;

    if (qp->term == RNIC_QP_TERM_NONE) {
        return QOBJECT(qnull());
    }
    d = qdict_new();
    qdict_put_str(d, "direction", qp->term == RNIC_QP_TERM_RECEIVED ?
                  "received" : "sent");
    qdict_put_int(d, "layer", qp->term_layer);
    qdict_put_int(d, "etype", qp->term_etype);
    rnic_put_hex(d, "ecode", qp->term_ecode);
    return QOBJECT(d);
}

static QDict *rnic_dev_qp_dict(RnicQp *qp)
{
    const struct rnic_qp *c = qp->core;
    QDict *d = qdict_new(), *q;

    qdict_put_int(d, "qpn", qp->qpn);
    qdict_put_str(d, "state", rnic_qp_state_str(c->state));
    qdict_put_int(d, "pd", qp->pdn);
    qdict_put_bool(d, "kernel", c->attr.privileged);
    qdict_put_int(d, "send-cq", qp->scq->cqn);
    qdict_put_int(d, "recv-cq", qp->rcq->cqn);
    if (qp->srq) {
        qdict_put_int(d, "srq", qp->srq->srqn);
    }
    q = rnic_ring_dict(&qp->sq);
    qdict_put_int(q, "outstanding", c->sq.count);
    qdict_put(d, "sq", q);
    if (!qp->srq) {
        q = rnic_ring_dict(&qp->rq);
        qdict_put_int(q, "posted", c->rq.count);
        qdict_put(d, "rq", q);
    }
    qdict_put_int(d, "ird", c->ird);
    qdict_put_int(d, "ord", c->ord);
    qdict_put_int(d, "reads-outstanding", c->ord_used);
    qdict_put_int(d, "reads-inbound", c->irq.count);
    if (qp->conn) {
        rnic_put_hex(d, "conn", qp->conn->id);
        rnic_put_addr(d, "peer", &qp->conn->peer);
    } else {
        qdict_put_null(d, "conn");
    }
    qdict_put_obj(d, "last-terminate", rnic_last_term(qp));
    return d;
}

static QList *rnic_qps_list(RnicState *s)
{
    QList *l = qlist_new();

    for (uint32_t qpn = 1; qpn <= s->params.limits.max_qp; qpn++) {
        RnicQp *qp = rnic_dev_qp_get(s, qpn);

        if (qp) {
            qlist_append(l, rnic_dev_qp_dict(qp));
        }
    }
    return l;
}

static QList *rnic_cqs_list(RnicState *s)
{
    QList *l = qlist_new();

    for (uint32_t i = 0; i < s->params.limits.max_cq; i++) {
        RnicCq *cq = s->cqs[i];
        QDict *d;

        if (!cq) {
            continue;
        }
        d = rnic_ring_dict(&cq->ring);
        qdict_put_int(d, "cqn", cq->cqn);
        qdict_put_int(d, "vector", cq->vector);
        qdict_put_str(d, "armed", rnic_cq_armed_str(cq->core));
        qdict_put_int(d, "staged", rnic_cq_count(cq->core));
        qdict_put_bool(d, "overflow", rnic_cq_overflowed(cq->core));
        qlist_append(l, d);
    }
    return l;
}

static QList *rnic_srqs_list(RnicState *s)
{
    QList *l = qlist_new();

    for (uint32_t i = 0; i < s->params.limits.max_srq; i++) {
        RnicSrq *srq = s->srqs[i];
        QDict *d;

        if (!srq) {
            continue;
        }
        d = rnic_ring_dict(&srq->ring);
        qdict_put_int(d, "srqn", srq->srqn);
        qdict_put_int(d, "pd", srq->pdn);
        qdict_put_int(d, "posted", rnic_srq_count(srq->core));
        qlist_append(l, d);
    }
    return l;
}

static QList *rnic_access_list(unsigned access)
{
    static const char *const names[] = {
        "local-read", "local-write", "remote-read", "remote-write",
        "remote-atomic", "mw-bind", "kernel-qps-only",
    };
    QList *l = qlist_new();

    for (unsigned i = 0; i < ARRAY_SIZE(names); i++) {
        if (access & (1u << i)) {
            qlist_append_str(l, names[i]);
        }
    }
    return l;
}

static QDict *rnic_dev_stag_dict(uint32_t stag, const struct rnic_stag_info *in)
{
    static const char *const kinds[] = { "mr", "mw1", "mw2" };
    QDict *d = qdict_new();

    rnic_put_hex(d, "stag", stag);
    qdict_put_str(d, "type", kinds[in->kind]);
    qdict_put_bool(d, "valid", in->valid);
    qdict_put_int(d, "pd", in->pd);
    rnic_put_hex(d, "base", in->base_to);
    qdict_put_int(d, "length", in->length);
    qdict_put(d, "access", rnic_access_list(in->access));
    qdict_put_str(d, "policy", in->one_shot ? "one-shot" : "persistent");
    qdict_put_bool(d, "remote-invalidate", in->remote_invalidate);
    qdict_put_bool(d, "recv-linked", in->recv_linked);
    if (in->kind == RNIC_STAG_MR) {
        qdict_put_int(d, "bound-windows", in->bound_windows);
    } else if (in->mr_stag) {
        rnic_put_hex(d, "mr", in->mr_stag);
    }
    if (in->kind == RNIC_STAG_MW_TYPE2 && in->qpn) {
        qdict_put_int(d, "qpn", in->qpn);
    }
    return d;
}

static QList *rnic_stags_list(RnicState *s)
{
    QList *l = qlist_new();
    uint32_t index = 0, stag;

    while ((stag = rnic_stag_next_used(s->stags, &index))) {
        struct rnic_stag_info info;

        if (rnic_stag_query(s->stags, stag, &info) == RNIC_STAG_OK) {
            qlist_append(l, rnic_dev_stag_dict(stag, &info));
        }
    }
    return l;
}

static QDict *rnic_conn_dict(RnicConn *c)
{
    QDict *d = qdict_new();

    rnic_put_hex(d, "id", c->id);
    qdict_put_str(d, "state", rnic_conn_state_names[c->state]);
    qdict_put_str(d, "role", c->initiator ? "initiator" : "responder");
    if (c->listener_id == RNIC_LISTENER_HANDED_IN) {
        qdict_put_str(d, "origin", "handed-in");
    } else if (c->listener_id) {
        qdict_put_int(d, "listener", c->listener_id);
    } else {
        qdict_put_str(d, "origin", "connect");
    }
    rnic_put_addr(d, "local", &c->local);
    rnic_put_addr(d, "peer", &c->peer);
    if (c->qp) {
        qdict_put_int(d, "qpn", c->qp->qpn);
    }
    if (c->state >= RNIC_CONN_RTS) {
        QDict *m = qdict_new();

        qdict_put_int(m, "rev", c->mpa.result.rev);
        qdict_put_bool(m, "crc", c->mpa.result.crc);
        qdict_put_int(m, "ird", c->mpa.result.ird);
        qdict_put_int(m, "ord", c->mpa.result.ord);
        qdict_put(d, "mpa", m);
    }
    /* both directions since RTS (the count fault-drop-after uses) */
    qdict_put_int(d, "bytes", c->bytes);
    qdict_put_bool(d, "rx-stopped", c->rx_stopped);
    return d;
}

static QList *rnic_conns_list(RnicState *s)
{
    QList *l = qlist_new();

    for (uint32_t i = 0; s->conns && i < s->max_conns; i++) {
        if (s->conns[i]) {
            qlist_append(l, rnic_conn_dict(s->conns[i]));
        }
    }
    return l;
}

static QList *rnic_listeners_list(RnicState *s)
{
    QList *l = qlist_new();

    for (int i = 0; i < RNIC_MAX_LISTENERS; i++) {
        if (s->listeners[i].id) {
            QDict *d = qdict_new();

            qdict_put_int(d, "id", s->listeners[i].id);
            rnic_put_addr(d, "local", &s->listeners[i].local);
            qlist_append(l, d);
        }
    }
    return l;
}

static QObject *rnic_capture_state(RnicState *s)
{
    const struct rnic_pcapng_stats *st;
    QDict *d;

    if (!s->capture) {
        return QOBJECT(qnull());
    }
    st = rnic_cap_stats(s->capture);
    d = qdict_new();
    qdict_put_str(d, "file", rnic_cap_path(s->capture));
    qdict_put_int(d, "packets", st->packets);
    qdict_put_int(d, "bytes", st->bytes);
    qdict_put_int(d, "dropped", st->dropped);
    qdict_put_int(d, "rotations", st->rotations);
    qdict_put_int(d, "streams", rnic_cap_streams(s->capture));
    if (st->error) {
        qdict_put_str(d, "error", strerror(st->error));
    }
    return QOBJECT(d);
}

static QDict *rnic_state_dict(RnicState *s)
{
    QDict *d = qdict_new(), *q;

    qdict_put_bool(d, "enabled", s->control & RNIC_CONTROL_ENABLE);
    rnic_put_hex(d, "status", s->status);
    qdict_put(d, "cmdq", rnic_ring_dict(&s->cmdq));
    q = rnic_ring_dict(&s->eq);
    qdict_put_int(q, "dropped", s->eq_dropped);
    qdict_put(d, "eq", q);
    if (DEVICE(s)->realized) {
        qdict_put(d, "qps", rnic_qps_list(s));
        qdict_put(d, "cqs", rnic_cqs_list(s));
        qdict_put(d, "srqs", rnic_srqs_list(s));
        qdict_put(d, "stags", rnic_stags_list(s));
        qdict_put(d, "connections", rnic_conns_list(s));
        qdict_put(d, "listeners", rnic_listeners_list(s));
    }
    qdict_put_obj(d, "capture", rnic_capture_state(s));
    return d;
}

static void rnic_get_state(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp)
{
    RnicState *s = RNIC(obj);
    QObject *o;

    /* With an IOThread: a snapshot between two of its callbacks. */
    rnic_enter(s);
    o = QOBJECT(rnic_state_dict(s));
    rnic_leave(s);
    visit_type_any(v, name, &o, errp);
    qobject_unref(o);
}

void rnic_state_init(RnicState *s)
{
    object_property_add(OBJECT(s), "state", "any", rnic_get_state, NULL,
                        NULL, NULL);
    object_property_set_description(OBJECT(s), "state",
        "read-only JSON: QPs, CQs, SRQs, STags, connections, listeners "
        "and the capture (qom-get; docs/spec.md \"State\")");
}
