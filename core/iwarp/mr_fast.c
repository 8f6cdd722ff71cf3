/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fast registration and the physical STag, what the kernel's
 * RDMA users (rdma_rw, NVMe-oF, iSER) build on.
 *
 * ALLOC_MR makes a region with a page-list slot and no pages; a FAST_REG
 * work request fills it in send-queue order, a LOCAL_INV (or a peer's Send
 * with Invalidate) empties it again, and the slot stays allocated so that
 * the next FAST_REG never allocates.  The physical STag is one region per
 * PD spanning the whole bus address space: tagged offset = bus address.
 * Only a privileged (kernel QP) local access reaches it; to every other
 * caller, the wire included, it does not exist.
 */
#include <stdlib.h>
#include <string.h>
#include "stag_internal.h"

#define FAST_REG_ACCESS (RNIC_ACCESS_LOCAL_READ | RNIC_ACCESS_LOCAL_WRITE | \
                         RNIC_ACCESS_REMOTE_ALL)

static bool pd_ok(const struct rnic_stag_table *t, uint32_t pd)
{
    return pd != 0 && pd <= t->max_pds && t->pds[pd].used;
}

/* A fresh MR entry of @pd at a new index with @key; the caller fills it. */
static enum rnic_stag_status mr_new(struct rnic_stag_table *t, uint32_t pd,
                                    uint8_t key, uint32_t *index)
{
    enum rnic_stag_status st;

    if (!pd_ok(t, pd)) {
        return RNIC_STAG_ERR_INVALID_ARG;
    }
    if (t->mrs >= t->max_mrs) {
        return RNIC_STAG_ERR_NO_RESOURCES;
    }
    st = rnic_stag_index_alloc(t, key, index);
    if (st != RNIC_STAG_OK) {
        return st;
    }
    t->mrs++;
    memset(&t->entries[*index], 0, sizeof(t->entries[*index]));
    t->entries[*index].kind = RNIC_STAG_MR;
    t->entries[*index].pd = pd;
    rnic_stag_set_key(t, &t->entries[*index], key);
    rnic_stag_set_state(t, &t->entries[*index], RNIC_ENTRY_INVALID);
    rnic_pd_get(t, pd);
    return RNIC_STAG_OK;
}

enum rnic_stag_status rnic_mr_alloc(struct rnic_stag_table *t, uint32_t pd,
                                    uint32_t max_pages, uint8_t key,
                                    uint32_t *stag)
{
    size_t size = rnic_page_list_size(max_pages);
    struct rnic_page_list *l;
    enum rnic_stag_status st;
    uint32_t index;

    if (max_pages == 0 || max_pages > RNIC_MR_FAST_MAX_PAGES) {
        return RNIC_STAG_ERR_INVALID_ARG;
    }
    if (!rnic_page_list_fits(t, size, 0)) {
        return RNIC_STAG_ERR_NO_RESOURCES;
    }
    l = calloc(1, size);
    if (!l) {
        return RNIC_STAG_ERR_NO_RESOURCES;
    }
    st = mr_new(t, pd, key, &index);
    if (st != RNIC_STAG_OK) {
        free(l);
        return st;
    }
    l->capacity = max_pages;
    t->entries[index].u.mr.list = l;
    t->entries[index].flags = RNIC_ENTRY_PAGE_LIST | RNIC_ENTRY_FAST_REG;
    t->page_list_bytes += size;
    *stag = rnic_stag_make(index, key);
    return RNIC_STAG_OK;
}

enum rnic_stag_status rnic_mr_alloc_phys(struct rnic_stag_table *t,
                                         uint32_t pd, uint8_t key,
                                         uint32_t *stag)
{
    enum rnic_stag_status st;
    struct rnic_stag_entry *e;
    uint32_t index;

    st = mr_new(t, pd, key, &index);
    if (st != RNIC_STAG_OK) {
        return st;
    }
    e = &t->entries[index];
    e->base_to = 0;
    e->length = UINT64_MAX;         /* every bus address but the last */
    e->u.mr.addr = 0;               /* contiguous: guest address = TO */
    e->access = RNIC_ACCESS_LOCAL_READ | RNIC_ACCESS_LOCAL_WRITE |
                RNIC_ACCESS_PRIVILEGED;
    e->flags = RNIC_ENTRY_PHYS;
    rnic_stag_set_state(t, e, RNIC_ENTRY_VALID);
    *stag = rnic_stag_make(index, key);
    return RNIC_STAG_OK;
}

struct rnic_stag_entry *rnic_mr_fast_entry(struct rnic_stag_table *t,
                                           uint32_t stag)
{
    struct rnic_stag_entry *e = rnic_stag_entry_at(t, stag);

    return e && e->kind == RNIC_STAG_MR && (e->flags & RNIC_ENTRY_FAST_REG) ?
           e : NULL;
}

static bool fast_reg_attr_ok(const struct rnic_fast_reg_attr *a,
                             const struct rnic_page_list *l)
{
    uint64_t page_size, span;

    if (a->page_shift < RNIC_MR_MIN_PAGE_SHIFT ||
        a->page_shift > RNIC_MR_MAX_PAGE_SHIFT || (a->access & ~FAST_REG_ACCESS)
        || a->npages == 0 || a->npages > l->capacity || a->length == 0 ||
        a->length - 1 > UINT64_MAX - a->base_to) {
        return false;
    }
    /* As in the verbs: a peer may only write where the consumer may. */
    if ((a->access & (RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_ATOMIC)) &&
        !(a->access & RNIC_ACCESS_LOCAL_WRITE)) {
        return false;
    }
    page_size = 1ull << a->page_shift;
    if (a->first_byte_offset >= page_size ||
        a->length > UINT64_MAX - a->first_byte_offset) {
        return false;
    }
    /* The pages must cover the bytes; more than needed is refused too. */
    span = a->first_byte_offset + a->length;
    if (((span - 1) >> a->page_shift) + 1 != a->npages) {
        return false;
    }
    for (uint32_t i = 0; i < a->npages; i++) {
        if (a->pages[i] & (page_size - 1)) {
            return false;
        }
    }
    return true;
}

enum rnic_stag_status rnic_mr_fast_reg(struct rnic_stag_table *t,
                                       const struct rnic_fast_reg_attr *a)
{
    struct rnic_stag_entry *e = rnic_mr_fast_entry(t, a->stag);
    struct rnic_page_list *l;

    if (!e) {
        return RNIC_STAG_ERR_INVALID_STAG;
    }
    if (e->pd != a->pd) {
        return RNIC_STAG_ERR_NOT_ASSOCIATED;
    }
    if (rnic_stag_tag(t, e)->state == RNIC_ENTRY_VALID) {
        return RNIC_STAG_ERR_BUSY;
    }
    l = e->u.mr.list;
    if (!fast_reg_attr_ok(a, l)) {
        return RNIC_STAG_ERR_INVALID_ARG;
    }
    memcpy(l->addr, a->pages, (size_t)a->npages * sizeof(uint64_t));
    l->npages = a->npages;
    l->page_shift = a->page_shift;
    l->first_byte_offset = a->first_byte_offset;
    e->base_to = a->base_to;
    e->length = a->length;
    e->access = a->access | RNIC_ACCESS_LOCAL_READ;
    e->flags = RNIC_ENTRY_PAGE_LIST | RNIC_ENTRY_FAST_REG |
               RNIC_ENTRY_REMOTE_INV;
    rnic_stag_set_key(t, e, rnic_stag_key(a->stag));
    rnic_stag_set_state(t, e, RNIC_ENTRY_VALID);
    return RNIC_STAG_OK;
}
