/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What stag.c, mr.c, mr_fast.c and mw.c share about the protection
 * table; nothing outside those four files includes this.
 */
#ifndef RNIC_STAG_INTERNAL_H
#define RNIC_STAG_INTERNAL_H

#include "stag.h"

/* A page list that is not one contiguous guest range. */
struct rnic_page_list {
    uint32_t capacity;              /* entries allocated (fast-reg slot) */
    uint32_t npages;
    uint32_t first_byte_offset;
    uint8_t page_shift;
    uint64_t addr[];
};

/* The rest of a slot, at the same index: resolve never reads it. */
struct rnic_stag_cold {
    uint32_t windows;               /* region: bound windows, pin it */
    /* free: next free index (0 ends); in use: receive link node + 1 */
    uint32_t link;
};

struct rnic_pd_slot {
    uint32_t refs;
    bool used;
};

/* A receive buffer's claim on an STag; chained per hash bucket. */
struct rnic_recv_link {
    uint64_t queue;                 /* rnic_recv_queue_qp() / _srq() */
    uint64_t recv_id;
    uint32_t stag;
    uint32_t next;                  /* node + 1, 0 ends */
};

struct rnic_stag_table {
    union {                         /* first: stag.h's resolve reads it */
        struct { RNIC_STAG_HOT_FIELDS };
        struct rnic_stag_hot hot;
    };
    struct rnic_stag_tag *tags;         /* same index as entries */
    struct rnic_stag_cold *cold;        /* same index as entries */
    uint32_t fresh;                 /* lowest index never handed out */
    uint32_t free_head;             /* released indices, oldest first */
    uint32_t free_tail;
    bool default_one_shot;

    struct rnic_pd_slot *pds;       /* [0] never used */
    uint32_t max_pds;
    uint32_t pd_cursor;

    struct rnic_recv_link *links;
    uint32_t max_links;
    uint32_t link_free;             /* node + 1, 0 when exhausted */
    uint32_t *buckets;              /* node + 1, 0 when empty */
    uint32_t bucket_mask;

    uint32_t max_mrs, max_mws;
    uint32_t mrs, mws;              /* regions and windows allocated */
    size_t page_list_bytes;
    size_t max_page_list_bytes;     /* 0: no limit */

    struct rnic_stag_watcher *watchers;
};

static inline uint32_t rnic_stag_entry_index(const struct rnic_stag_table *t,
                                             const struct rnic_stag_entry *e)
{
    return (uint32_t)(e - t->entries);
}

/* The key and state of entry @e (an element of t->entries). */
static inline const struct rnic_stag_tag *rnic_stag_tag(
    const struct rnic_stag_table *t, const struct rnic_stag_entry *e)
{
    return &t->tags[rnic_stag_entry_index(t, e)];
}

/* The only writers of a slot's key and state: the tag and its copy. */
static inline void rnic_stag_set_key(struct rnic_stag_table *t,
                                     struct rnic_stag_entry *e, uint8_t key)
{
    t->tags[rnic_stag_entry_index(t, e)].key = key;
    e->tag.key = key;
}

static inline void rnic_stag_set_state(struct rnic_stag_table *t,
                                       struct rnic_stag_entry *e,
                                       enum rnic_entry_state state)
{
    t->tags[rnic_stag_entry_index(t, e)].state = (uint8_t)state;
    e->tag.state = (uint8_t)state;
}

/* Bound windows and the receive link or free-list link of entry @e. */
static inline struct rnic_stag_cold *rnic_stag_cold(
    const struct rnic_stag_table *t, const struct rnic_stag_entry *e)
{
    return &t->cold[rnic_stag_entry_index(t, e)];
}

/* The allocated entry @stag names (any state but FREE), key checked. */
struct rnic_stag_entry *rnic_stag_entry_get(const struct rnic_stag_table *t,
                                            uint32_t stag);
/*
 * The allocated entry at @stag's index, whatever its key: for freeing an
 * object whose key changes without its owner hearing (FAST_REG, binds).
 */
struct rnic_stag_entry *rnic_stag_entry_at(const struct rnic_stag_table *t,
                                           uint32_t stag);
enum rnic_stag_status rnic_stag_index_alloc(struct rnic_stag_table *t,
                                            uint8_t key, uint32_t *index);
void rnic_stag_index_release(struct rnic_stag_table *t, uint32_t index);
/* A VALID entry stops being valid: the watchers hear of it. */
void rnic_stag_entry_gone(struct rnic_stag_table *t,
                          const struct rnic_stag_entry *e);
/* Drops the entry's receive link and window binding; state INVALID. */
void rnic_stag_entry_invalidate(struct rnic_stag_table *t,
                                struct rnic_stag_entry *e);
void rnic_stag_unlink_recv(struct rnic_stag_table *t,
                           struct rnic_stag_entry *e);
uint8_t rnic_stag_policy_flags(const struct rnic_stag_table *t,
                               enum rnic_stag_policy policy,
                               bool remote_invalidate);
/* Heap bytes of a page list of @capacity entries. */
size_t rnic_page_list_size(uint32_t capacity);
/* Whether @add more bytes of page list fit, @drop of them being freed. */
bool rnic_page_list_fits(const struct rnic_stag_table *t, size_t add,
                         size_t drop);

/* TO wrap and base/bounds of [to, to + len) against entry @e. */
enum rnic_stag_status rnic_stag_range_check(const struct rnic_stag_entry *e,
                                            uint64_t to, uint64_t len);

/* The ALLOC_MR region @stag's index names, whatever its key (mr_fast.c). */
struct rnic_stag_entry *rnic_mr_fast_entry(struct rnic_stag_table *t,
                                           uint32_t stag);

#endif /* RNIC_STAG_INTERNAL_H */
