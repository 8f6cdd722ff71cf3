/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The STag table to bytes and back (save.h).  Every index below `fresh`
 * is saved, free ones by key alone: the order of the free list and the
 * keys left on free slots decide which STag the next allocation returns,
 * which the guest sees.  Window counts, region and window totals and
 * page-list bytes are recomputed on load, never read.
 */
#include <errno.h>
#include <stdlib.h>
#include "save.h"
#include "stag_internal.h"

#define ENTRY_FLAGS_ALL (RNIC_ENTRY_ONE_SHOT | RNIC_ENTRY_REMOTE_INV | \
                         RNIC_ENTRY_PAGE_LIST | RNIC_ENTRY_FAST_REG | \
                         RNIC_ENTRY_PHYS)
#define ENTRY_ACCESS_ALL (RNIC_ACCESS_LOCAL_READ | RNIC_ACCESS_LOCAL_WRITE | \
                          RNIC_ACCESS_REMOTE_ALL | RNIC_ACCESS_MW_BIND | \
                          RNIC_ACCESS_PRIVILEGED)

static void entry_save(struct rnic_sv *s, const struct rnic_stag_entry *e)
{
    rnic_sv_u64(s, e->base_to);
    rnic_sv_u64(s, e->length);
    rnic_sv_u32(s, e->pd);
    rnic_sv_u8(s, e->kind);
    rnic_sv_u8(s, e->flags);
    rnic_sv_u8(s, e->access);
    if (e->kind != RNIC_STAG_MR) {
        rnic_sv_u32(s, e->u.mw.mr_index);
        rnic_sv_u32(s, e->u.mw.qpn);
    } else if (e->flags & RNIC_ENTRY_PAGE_LIST) {
        const struct rnic_page_list *l = e->u.mr.list;

        rnic_sv_u32(s, l->capacity);
        rnic_sv_u32(s, l->npages);
        rnic_sv_u32(s, l->first_byte_offset);
        rnic_sv_u8(s, l->page_shift);
        for (uint32_t i = 0; i < l->npages; i++) {
            rnic_sv_u64(s, l->addr[i]);
        }
    } else {
        rnic_sv_u64(s, e->u.mr.addr);
    }
}

void rnic_stag_table_save(struct rnic_sv *s, const struct rnic_stag_table *t)
{
    uint32_t nfree = 0, nlinks = 0;

    rnic_sv_u32(s, t->max_stags);
    rnic_sv_u32(s, t->max_pds);
    rnic_sv_u32(s, t->fresh);
    for (uint32_t i = 1; i < t->fresh; i++) {
        rnic_sv_u8(s, t->tags[i].key);
        rnic_sv_u8(s, t->tags[i].state);
        if (t->tags[i].state != RNIC_ENTRY_FREE) {
            entry_save(s, &t->entries[i]);
            nlinks += t->cold[i].link != 0;
        }
    }
    for (uint32_t i = t->free_head; i; i = t->cold[i].link) {
        nfree++;
    }
    rnic_sv_u32(s, nfree);
    for (uint32_t i = t->free_head; i; i = t->cold[i].link) {
        rnic_sv_u32(s, i);
    }
    rnic_sv_u32(s, t->pd_cursor);
    for (uint32_t pd = 1; pd <= t->max_pds; pd++) {
        rnic_sv_u8(s, t->pds[pd].used);
        rnic_sv_u32(s, t->pds[pd].refs);
    }
    rnic_sv_u32(s, nlinks);
    for (uint32_t i = 1; i < t->fresh; i++) {
        uint32_t link = t->cold[i].link;

        if (t->tags[i].state != RNIC_ENTRY_FREE && link) {
            const struct rnic_recv_link *l = &t->links[link - 1];

            rnic_sv_u64(s, l->queue);
            rnic_sv_u64(s, l->recv_id);
            rnic_sv_u32(s, l->stag);
        }
    }
}

/*
 * A page list that covers [first_byte_offset, + length) of its pages:
 * REG_MR's as long as its pages, ALLOC_MR's a slot of at most
 * RNIC_MR_FAST_MAX_PAGES that holds no page until a FAST_REG.
 */
static struct rnic_page_list *list_load(struct rnic_ld *l,
                                        const struct rnic_stag_entry *e,
                                        bool valid)
{
    bool fast = e->flags & RNIC_ENTRY_FAST_REG;
    uint32_t capacity = rnic_ld_u32(l);
    uint32_t npages = rnic_ld_u32(l);
    uint32_t fbo = rnic_ld_u32(l);
    uint8_t shift = rnic_ld_u8(l);
    struct rnic_page_list *list;

    if (l->failed || !capacity || npages > capacity ||
        (fast ? capacity > RNIC_MR_FAST_MAX_PAGES : capacity != npages) ||
        npages > (l->len - l->off) / sizeof(uint64_t) ||
        (valid && !npages)) {
        l->failed = true;
        return NULL;
    }
    if (npages && (shift < RNIC_MR_MIN_PAGE_SHIFT ||
                   shift > RNIC_MR_MAX_PAGE_SHIFT ||
                   fbo >= (1u << shift) ||
                   e->length > ((uint64_t)npages << shift) - fbo)) {
        l->failed = true;
        return NULL;
    }
    list = calloc(1, rnic_page_list_size(capacity));
    if (!list) {
        l->failed = true;
        return NULL;
    }
    list->capacity = capacity;
    list->npages = npages;
    list->first_byte_offset = fbo;
    list->page_shift = shift;
    for (uint32_t i = 0; i < npages; i++) {
        list->addr[i] = rnic_ld_u64(l);
    }
    return list;
}

/*
 * Entry @i, allocated: its fields, checked on their own.  Kind and flags
 * are checked before they are stored: the entry's bit-fields would drop
 * the bits that make a damaged value wrong.
 */
static bool entry_load(struct rnic_ld *l, struct rnic_stag_table *t,
                       uint32_t i, bool valid)
{
    struct rnic_stag_entry *e = &t->entries[i];
    uint64_t base_to = rnic_ld_u64(l);
    uint64_t length = rnic_ld_u64(l);
    uint32_t pd = rnic_ld_u32(l);
    uint8_t kind = rnic_ld_u8(l);
    uint8_t flags = rnic_ld_u8(l);
    uint8_t access = rnic_ld_u8(l);
    bool in_to_space;

    if (l->failed || pd == 0 || pd > t->max_pds ||
        kind > RNIC_STAG_MW_TYPE2 || (flags & ~ENTRY_FLAGS_ALL) ||
        (access & ~ENTRY_ACCESS_ALL)) {
        return false;
    }
    e->base_to = base_to;
    e->length = length;
    e->pd = pd;
    e->kind = kind;
    e->flags = flags;
    e->access = access;
    if (e->kind != RNIC_STAG_MR) {
        e->u.mw.mr_index = rnic_ld_u32(l);
        e->u.mw.qpn = rnic_ld_u32(l);
        t->mws++;
        return !(e->flags & (RNIC_ENTRY_PAGE_LIST | RNIC_ENTRY_FAST_REG |
                             RNIC_ENTRY_PHYS));
    }
    t->mrs++;
    /*
     * A region's TOs are checked against base and length alone, and it
     * ends by the end of the TO space (resolve's common case counts on
     * it); the physical STag spans all of it.
     */
    in_to_space = e->length == 0 || e->length - 1 <= UINT64_MAX - e->base_to;
    if (!(e->flags & RNIC_ENTRY_PAGE_LIST)) {
        e->u.mr.addr = rnic_ld_u64(l);
        return !(e->flags & RNIC_ENTRY_FAST_REG) &&
               (in_to_space || (e->flags & RNIC_ENTRY_PHYS));
    }
    e->u.mr.list = list_load(l, e, valid);
    if (!e->u.mr.list) {
        e->flags &= ~RNIC_ENTRY_PAGE_LIST;
        return false;
    }
    t->page_list_bytes += rnic_page_list_size(e->u.mr.list->capacity);
    return in_to_space && !(e->flags & RNIC_ENTRY_PHYS);
}

/* Indices 1 .. fresh - 1, then the free list in its order. */
static bool entries_load(struct rnic_ld *l, struct rnic_stag_table *t)
{
    uint32_t fresh = rnic_ld_u32(l), nfree;

    if (l->failed || fresh == 0 || fresh > t->max_stags + 1) {
        return false;
    }
    t->fresh = fresh;
    for (uint32_t i = 1; i < fresh; i++) {
        struct rnic_stag_entry *e = &t->entries[i];
        uint8_t key = rnic_ld_u8(l);
        uint8_t state = rnic_ld_u8(l);

        if (state > RNIC_ENTRY_VALID) {
            return false;
        }
        rnic_stag_set_key(t, e, key);
        rnic_stag_set_state(t, e, state);
        if (state != RNIC_ENTRY_FREE &&
            !entry_load(l, t, i, state == RNIC_ENTRY_VALID)) {
            return false;
        }
    }
    nfree = rnic_ld_count(l, fresh - 1);
    for (uint32_t n = 0; n < nfree; n++) {
        uint32_t i = rnic_ld_u32(l);

        /* each free index once: link is 0 until it is on the list */
        if (l->failed || i == 0 || i >= fresh ||
            t->tags[i].state != RNIC_ENTRY_FREE || t->cold[i].link ||
            i == t->free_tail) {
            return false;
        }
        rnic_stag_index_release(t, i);
    }
    return t->mrs <= t->max_mrs && t->mws <= t->max_mws &&
           (!t->max_page_list_bytes ||
            t->page_list_bytes <= t->max_page_list_bytes);
}

/* A bound window names a region of the table; the region counts it. */
static bool windows_load(struct rnic_stag_table *t)
{
    for (uint32_t i = 1; i < t->fresh; i++) {
        const struct rnic_stag_entry *e = &t->entries[i];
        const struct rnic_stag_entry *mr;

        if (t->tags[i].state != RNIC_ENTRY_VALID || e->kind == RNIC_STAG_MR) {
            continue;
        }
        if (e->u.mw.mr_index == 0 || e->u.mw.mr_index >= t->fresh ||
            t->tags[e->u.mw.mr_index].state != RNIC_ENTRY_VALID) {
            return false;
        }
        mr = &t->entries[e->u.mw.mr_index];
        if (mr->kind != RNIC_STAG_MR ||
            rnic_stag_range_check(mr, e->base_to, e->length) != RNIC_STAG_OK) {
            return false;
        }
        t->cold[e->u.mw.mr_index].windows++;
    }
    return true;
}

static bool pds_load(struct rnic_ld *l, struct rnic_stag_table *t)
{
    t->pd_cursor = rnic_ld_u32(l);
    if (t->pd_cursor == 0 || t->pd_cursor > t->max_pds) {
        return false;
    }
    for (uint32_t pd = 1; pd <= t->max_pds; pd++) {
        t->pds[pd].used = rnic_ld_u8(l);
        t->pds[pd].refs = rnic_ld_u32(l);
    }
    for (uint32_t i = 1; i < t->fresh; i++) {
        if (t->tags[i].state != RNIC_ENTRY_FREE &&
            !t->pds[t->entries[i].pd].used) {
            return false;
        }
    }
    return !l->failed;
}

/* Through the call that made them: it checks the STag and its owner. */
static bool links_load(struct rnic_ld *l, struct rnic_stag_table *t)
{
    uint32_t n = rnic_ld_count(l, t->max_links);

    for (uint32_t k = 0; k < n && !l->failed; k++) {
        struct rnic_recv_owner o = { .queue = rnic_ld_u64(l) };
        uint64_t recv_id = rnic_ld_u64(l);
        uint32_t stag = rnic_ld_u32(l);
        const struct rnic_stag_entry *e = rnic_stag_entry_get(t, stag);

        if (!e) {
            return false;
        }
        o.pd = e->pd;
        o.qpn = e->kind == RNIC_STAG_MW_TYPE2 ? e->u.mw.qpn : 0;
        if (rnic_stag_link_to_recv(t, stag, &o, recv_id) != RNIC_STAG_OK) {
            return false;
        }
    }
    return !l->failed;
}

int rnic_stag_table_load(struct rnic_ld *l, struct rnic_stag_table *t)
{
    uint32_t max_stags = rnic_ld_u32(l);
    uint32_t max_pds = rnic_ld_u32(l);

    if (l->failed || t->fresh != 1 || max_stags != t->max_stags ||
        max_pds != t->max_pds) {
        return -EINVAL;
    }
    if (!entries_load(l, t) || !pds_load(l, t) || !windows_load(t) ||
        !links_load(l, t)) {
        return -EINVAL;
    }
    return 0;
}
