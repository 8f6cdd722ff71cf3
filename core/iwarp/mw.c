/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Memory windows: a remote-access view onto part of a region, bound and
 * re-bound without registering memory again.  Type 1 windows are bound by
 * command and serve the whole PD; type 2 windows are bound through a send
 * queue and serve only that QP.
 */
#include <string.h>
#include "stag_internal.h"

enum rnic_stag_status rnic_mw_alloc(struct rnic_stag_table *t, uint32_t pd,
                                    enum rnic_stag_kind kind, uint8_t key,
                                    uint32_t *stag)
{
    struct rnic_stag_entry *e;
    enum rnic_stag_status st;
    uint32_t index;

    if (kind != RNIC_STAG_MW_TYPE1 && kind != RNIC_STAG_MW_TYPE2) {
        return RNIC_STAG_ERR_INVALID_ARG;
    }
    if (t->mws >= t->max_mws) {
        return RNIC_STAG_ERR_NO_RESOURCES;
    }
    if (rnic_pd_get(t, pd) != RNIC_STAG_OK) {
        return RNIC_STAG_ERR_INVALID_ARG;
    }
    st = rnic_stag_index_alloc(t, key, &index);
    if (st != RNIC_STAG_OK) {
        rnic_pd_put(t, pd);
        return st;
    }
    t->mws++;
    e = &t->entries[index];
    memset(e, 0, sizeof(*e));
    e->pd = pd;
    rnic_stag_set_key(t, e, key);
    e->kind = kind;
    rnic_stag_set_state(t, e, RNIC_ENTRY_INVALID);
    *stag = rnic_stag_make(index, key);
    return RNIC_STAG_OK;
}

static struct rnic_stag_entry *mw_get(struct rnic_stag_table *t,
                                      uint32_t stag)
{
    struct rnic_stag_entry *e = rnic_stag_entry_get(t, stag);

    return e && e->kind != RNIC_STAG_MR ? e : NULL;
}

/* The region a window is bound onto, and whether it may host it. */
static enum rnic_stag_status bind_check_mr(struct rnic_stag_table *t,
                                           const struct rnic_mw_bind_attr *a,
                                           uint32_t *mr_index)
{
    const struct rnic_stag_entry *mr = rnic_stag_entry_get(t, a->mr_stag);
    unsigned needs_local_write = RNIC_ACCESS_REMOTE_WRITE |
                                 RNIC_ACCESS_REMOTE_ATOMIC;

    if (!mr || mr->kind != RNIC_STAG_MR ||
        rnic_stag_tag(t, mr)->state != RNIC_ENTRY_VALID) {
        return RNIC_STAG_ERR_INVALID_STAG;
    }
    if (mr->pd != a->pd) {
        return RNIC_STAG_ERR_NOT_ASSOCIATED;
    }
    if (!(mr->access & RNIC_ACCESS_MW_BIND) ||
        ((a->access & needs_local_write) &&
         !(mr->access & RNIC_ACCESS_LOCAL_WRITE))) {
        return RNIC_STAG_ERR_ACCESS;
    }
    /*
     * A region the RNIC invalidates by itself cannot carry windows: it
     * would have to refuse that invalidation or leave windows dangling.
     */
    if ((mr->flags & RNIC_ENTRY_ONE_SHOT) || rnic_stag_cold(t, mr)->link) {
        return RNIC_STAG_ERR_BUSY;
    }
    *mr_index = rnic_stag_index(a->mr_stag);
    return rnic_stag_range_check(mr, a->to, a->length);
}

enum rnic_stag_status rnic_mw_bind(struct rnic_stag_table *t,
                                   uint32_t mw_stag,
                                   const struct rnic_mw_bind_attr *attr,
                                   uint32_t *new_stag)
{
    struct rnic_stag_entry *mw = mw_get(t, mw_stag);
    enum rnic_stag_status st;
    uint32_t mr_index;

    if (!mw) {
        return RNIC_STAG_ERR_INVALID_STAG;
    }
    if (mw->pd != attr->pd) {
        return RNIC_STAG_ERR_NOT_ASSOCIATED;
    }
    if (attr->key == rnic_stag_tag(t, mw)->key) {
        return RNIC_STAG_ERR_KEY_REUSED;
    }
    /* Type 2 windows are invalidated before they can be bound again. */
    if (mw->kind == RNIC_STAG_MW_TYPE2 &&
        rnic_stag_tag(t, mw)->state == RNIC_ENTRY_VALID) {
        return RNIC_STAG_ERR_BUSY;
    }
    if (attr->access & ~RNIC_ACCESS_REMOTE_ALL) {
        return RNIC_STAG_ERR_INVALID_ARG;
    }
    st = bind_check_mr(t, attr, &mr_index);
    if (st != RNIC_STAG_OK) {
        return st;
    }
    rnic_stag_entry_invalidate(t, mw);
    mw->base_to = attr->to;
    mw->length = attr->length;
    mw->u.mw.mr_index = mr_index;
    mw->u.mw.qpn = mw->kind == RNIC_STAG_MW_TYPE2 ? attr->qpn : 0;
    rnic_stag_set_key(t, mw, attr->key);
    mw->access = attr->access;
    mw->flags = rnic_stag_policy_flags(t, attr->policy,
                                       attr->remote_invalidate);
    rnic_stag_set_state(t, mw, RNIC_ENTRY_VALID);
    t->cold[mr_index].windows++;
    *new_stag = rnic_stag_make(rnic_stag_index(mw_stag), attr->key);
    return RNIC_STAG_OK;
}

/*
 * By index, whatever the key: a bind through a send queue gives the window
 * a key its driver may never have seen (verbs' ibv_bind_mw, a type 2 bind
 * in user space), as FAST_REG does to a region.
 */
enum rnic_stag_status rnic_mw_dealloc(struct rnic_stag_table *t,
                                      uint32_t stag)
{
    struct rnic_stag_entry *mw = rnic_stag_entry_at(t, stag);

    if (!mw || mw->kind == RNIC_STAG_MR) {
        return RNIC_STAG_ERR_INVALID_STAG;
    }
    rnic_stag_entry_invalidate(t, mw);
    rnic_pd_put(t, mw->pd);
    rnic_stag_index_release(t, rnic_stag_index(stag));
    t->mws--;
    return RNIC_STAG_OK;
}
