/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The layout of one slot of the protection table, and of the part of the
 * table that finds it: what the inline rnic_stag_resolve() in stag.h
 * reads.  The rest of the table is stag_internal.h's.
 */
#ifndef RNIC_STAG_ENTRY_H
#define RNIC_STAG_ENTRY_H

#include <stdint.h>

struct rnic_page_list;

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

/*
 * The word rnic_stag_entry.id holds for a slot of @pd with @key in
 * @state, of @kind, with @flags and @access: resolve's common case
 * compares with it in one go.
 */
static inline uint64_t rnic_stag_id_word(uint32_t pd, uint8_t key,
                                         uint8_t state, uint8_t kind,
                                         uint8_t flags, uint8_t access)
{
    union rnic_stag_id x = { .word = 0 };

    x.pd = pd;
    x.tag.key = key;
    x.tag.state = state;
    x.kind = kind;
    x.flags = flags;
    x.access = access;
    return x.word;
}

/*
 * The first member of struct rnic_stag_table: the entries, by STag index
 * ([0] never used: STag 0 is invalid), and how many there are.
 */
#define RNIC_STAG_HOT_FIELDS \
    struct rnic_stag_entry *entries; \
    uint32_t max_stags;

struct rnic_stag_hot {
    RNIC_STAG_HOT_FIELDS
};

#endif /* RNIC_STAG_ENTRY_H */
