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

enum rnic_entry_state {
    RNIC_ENTRY_FREE = 0,            /* on the free list, or never used */
    RNIC_ENTRY_INVALID,             /* allocated, refused by resolve */
    RNIC_ENTRY_VALID,
};

enum rnic_entry_flags {
    RNIC_ENTRY_ONE_SHOT   = 1u << 0,
    RNIC_ENTRY_REMOTE_INV = 1u << 1,
    RNIC_ENTRY_PAGE_LIST  = 1u << 2, /* u.mr.list, else u.mr.addr */
    RNIC_ENTRY_FAST_REG   = 1u << 3, /* ALLOC_MR: list kept while invalid */
    RNIC_ENTRY_PHYS       = 1u << 4, /* the physical STag */
};

/*
 * What a lookup reads, one pair per slot and kept apart from the entries:
 * 1,048,576 of them are 2 MiB, which stays in cache where the 32 MiB of
 * entries cannot, so rnic_stag_lookup() answers at a plain array's speed.
 * Each entry carries a copy (rnic_stag_entry.tag) for resolve, which then
 * reads one cache line and not two; rnic_stag_set_key() and
 * rnic_stag_set_state() write both, and nothing else writes either (but
 * the memset of a slot being set up, followed by both).
 */
struct rnic_stag_tag {
    uint8_t key;
    uint8_t state;                  /* enum rnic_entry_state */
};

/*
 * The last eight octets of an entry, which resolve compares with what it
 * expects as one word (union rnic_stag_id) where it can.
 */
#define RNIC_STAG_ID_FIELDS \
    uint32_t pd; \
    struct rnic_stag_tag tag;       /* copy of this slot's t->tags[] */ \
    uint8_t kind : 2;               /* enum rnic_stag_kind */ \
    uint8_t flags : 6;              /* enum rnic_entry_flags */ \
    uint8_t access;                 /* enum rnic_access */

/* The same fields, the same layout: a word to compare entry.id with. */
union rnic_stag_id {
    struct { RNIC_STAG_ID_FIELDS };
    uint64_t word;
};

_Static_assert(sizeof(union rnic_stag_id) == sizeof(uint64_t),
               "the ID fields make one word");

/*
 * One slot of the STag table: what rnic_stag_resolve() reads and no more,
 * in 32 octets aligned to 32, so that a resolve costs one cache line
 * (docs/protocol.md section 10).  A million of them is the expected size,
 * so a region whose pages are contiguous (the common one-page case
 * included) stores its guest address inline instead of a list.  What
 * resolve never reads is in struct rnic_stag_cold.
 */
struct rnic_stag_entry {
    uint64_t base_to;
    uint64_t length;
    union {
        union {                     /* region */
            uint64_t addr;          /* guest address of the first byte */
            struct rnic_page_list *list;
        } mr;
        struct {                    /* window */
            uint32_t mr_index;
            uint32_t qpn;           /* type 2 only */
        } mw;
    } u;
    union {
        struct { RNIC_STAG_ID_FIELDS };
        uint64_t id;                /* all of them as one word */
    };
} __attribute__((aligned(32)));

_Static_assert(sizeof(struct rnic_stag_entry) == 32,
               "a resolve reads one 32-octet entry");

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
    struct rnic_stag_entry *entries;    /* [0] never used: STag 0 invalid */
    struct rnic_stag_tag *tags;         /* same index as entries */
    struct rnic_stag_cold *cold;        /* same index as entries */
    uint32_t max_stags;
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
