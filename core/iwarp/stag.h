/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The protection tables: protection domains, memory regions, memory windows
 * and the STag checks every tagged placement and every local SGE goes
 * through.
 *
 * An STag is a 24-bit index into a preallocated table plus an 8-bit key the
 * consumer chooses; re-registering or re-binding changes the key so that an
 * STag the peer still holds from before is refused.  The tagged offset (TO)
 * space of a region is the one the consumer registered (iWARP uses the
 * virtual address); a window lives in the TO space of its region.
 *
 * STags are ONE_SHOT (the RNIC invalidates them itself after the last DDP
 * segment of the first RDMAP message that targets them) or PERSISTENT (only
 * the consumer or an accepted Send with Invalidate invalidates them).  Any
 * STag can also be linked to one posted receive buffer and is invalidated
 * when that buffer is consumed.
 *
 * Single-threaded: the caller serialises every call on one table.  A
 * struct rnic_mem_ref stays usable until the next call that modifies the
 * table.
 */
#ifndef RNIC_STAG_H
#define RNIC_STAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dma.h"
#include "stag_entry.h"

#define RNIC_STAG_INDEX_BITS    24
#define RNIC_STAG_MAX_INDEX     ((1u << RNIC_STAG_INDEX_BITS) - 1)

/* Smallest and largest page size of a region's page list. */
#define RNIC_MR_MIN_PAGE_SHIFT  12
#define RNIC_MR_MAX_PAGE_SHIFT  21

static inline uint32_t rnic_stag_make(uint32_t index, uint8_t key)
{
    return (index << 8) | key;
}

static inline uint32_t rnic_stag_index(uint32_t stag)
{
    return stag >> 8;
}

static inline uint8_t rnic_stag_key(uint32_t stag)
{
    return stag & 0xff;
}

/*
 * The same index with the next key: what a consumer passes to a
 * re-registration or re-bind so that the previous STag goes stale.
 */
static inline uint32_t rnic_stag_next_key(uint32_t stag)
{
    return rnic_stag_make(rnic_stag_index(stag),
                          (uint8_t)(rnic_stag_key(stag) + 1));
}

enum rnic_access {
    RNIC_ACCESS_LOCAL_READ    = 1u << 0,
    RNIC_ACCESS_LOCAL_WRITE   = 1u << 1,
    RNIC_ACCESS_REMOTE_READ   = 1u << 2,
    RNIC_ACCESS_REMOTE_WRITE  = 1u << 3,
    RNIC_ACCESS_REMOTE_ATOMIC = 1u << 4,
    RNIC_ACCESS_MW_BIND       = 1u << 5,
    /*
     * Not a right one registers: a caller of rnic_stag_resolve() adds it
     * for a kernel QP's local access.  Only such an access reaches a
     * physical STag; anything else (user QPs, the wire) is told the STag
     * does not exist.
     */
    RNIC_ACCESS_PRIVILEGED    = 1u << 6,
};

#define RNIC_ACCESS_REMOTE_ALL  (RNIC_ACCESS_REMOTE_READ | \
                                 RNIC_ACCESS_REMOTE_WRITE | \
                                 RNIC_ACCESS_REMOTE_ATOMIC)

enum rnic_stag_policy {
    RNIC_STAG_POLICY_DEFAULT,       /* the table's default */
    RNIC_STAG_ONE_SHOT,
    RNIC_STAG_PERSISTENT,
};

enum rnic_stag_kind {
    RNIC_STAG_MR,
    RNIC_STAG_MW_TYPE1,             /* bound by command, PD-scoped */
    RNIC_STAG_MW_TYPE2,             /* bound through a send queue, one QP */
};

/*
 * Result of every call.  The first group are the tagged-buffer errors of
 * RFC 5040 §7 / RFC 5041 §7, one value per RFC error code; see
 * rnic_stag_ddp_ecode() and rnic_stag_rdmap_error() for the numbers.  The
 * second group are errors of the local consumer's commands; they never go
 * on the wire.
 */
enum rnic_stag_status {
    RNIC_STAG_OK = 0,
    RNIC_STAG_ERR_INVALID_STAG,     /* unknown index, wrong key, invalid */
    RNIC_STAG_ERR_BASE_BOUNDS,      /* [to, to + len) outside the buffer */
    RNIC_STAG_ERR_ACCESS,           /* rights do not allow the operation */
    RNIC_STAG_ERR_NOT_ASSOCIATED,   /* other PD, or type 2 MW of other QP */
    RNIC_STAG_ERR_TO_WRAP,          /* to + len passes 2^64 */
    RNIC_STAG_ERR_CANNOT_INVALIDATE,

    RNIC_STAG_ERR_INVALID_ARG,      /* malformed request */
    RNIC_STAG_ERR_NO_RESOURCES,     /* table, PD or link pool full */
    RNIC_STAG_ERR_BUSY,             /* still referenced, or wrong state */
    RNIC_STAG_ERR_KEY_REUSED,       /* same key twice in a row on an index */
    RNIC_STAG_ERR_DMA,              /* guest memory not accessible */
    RNIC_STAG_ERR_IOV_FULL,         /* more iovec entries needed */
};

/* A short name for traces and test messages. */
const char *rnic_stag_status_name(enum rnic_stag_status st);

/*
 * DDP layer, error type 1 (tagged buffer error) code of @st, RFC 5041 §7.2,
 * or -1 when @st is not a DDP tagged-buffer error (access rights and
 * invalidation are RDMAP's).
 */
int rnic_stag_ddp_ecode(enum rnic_stag_status st);

/*
 * RDMAP layer error type and code of @st, RFC 5040 §7.2 (as registered in
 * the IANA RDDP registry).  Protection errors map to Remote Protection
 * Error; "STag cannot be invalidated" to Remote Operation Error.  Returns
 * false for local-only statuses.
 */
bool rnic_stag_rdmap_error(enum rnic_stag_status st, uint8_t *etype,
                           uint8_t *ecode);

struct rnic_stag_table_params {
    uint32_t max_stags;             /* 1 .. RNIC_STAG_MAX_INDEX */
    uint32_t max_pds;               /* 1 .. 2^24 */
    /* regions and windows at once, each capped on its own (0 allows
     * none); both 0: no separate caps, either up to max_stags */
    uint32_t max_mrs;
    uint32_t max_mws;
    /* heap held by page lists (regions not contiguous); 0: no limit */
    size_t max_page_list_bytes;
    uint32_t max_recv_links;        /* 0: 65536, or max_stags if fewer */
    enum rnic_stag_policy default_policy;   /* DEFAULT means ONE_SHOT */
};

struct rnic_stag_table;

struct rnic_stag_table *rnic_stag_table_new(
    const struct rnic_stag_table_params *params);
void rnic_stag_table_free(struct rnic_stag_table *t);

/* Bytes the table holds on the heap, page lists included. */
size_t rnic_stag_table_footprint(const struct rnic_stag_table *t);
/* Bytes held by page lists now, as max_page_list_bytes counts them. */
size_t rnic_stag_page_list_bytes(const struct rnic_stag_table *t);

/* ---- protection domains ---- */

enum rnic_stag_status rnic_pd_alloc(struct rnic_stag_table *t, uint32_t *pd);
/* BUSY while MRs, MWs or QPs (rnic_pd_get) still use @pd. */
enum rnic_stag_status rnic_pd_free(struct rnic_stag_table *t, uint32_t pd);
/* A QP (or anything else outside this table) takes and drops a reference. */
enum rnic_stag_status rnic_pd_get(struct rnic_stag_table *t, uint32_t pd);
void rnic_pd_put(struct rnic_stag_table *t, uint32_t pd);

/* ---- memory regions ---- */

struct rnic_mr_attr {
    uint32_t pd;
    uint8_t key;                    /* consumer-chosen key byte */
    unsigned access;                /* enum rnic_access; LOCAL_READ implied */
    enum rnic_stag_policy policy;
    bool remote_invalidate;         /* Send with Invalidate may name it */
    const uint64_t *pages;          /* guest page addresses, page aligned */
    uint32_t npages;                /* exactly what fbo + length covers */
    uint8_t page_shift;             /* RNIC_MR_{MIN,MAX}_PAGE_SHIFT */
    uint32_t first_byte_offset;     /* into pages[0], below the page size */
    uint64_t length;                /* at least 1 */
    uint64_t base_to;               /* TO of the first byte */
};

/*
 * Whether a region of @npages pages fits now: NO_RESOURCES when max_mrs
 * regions exist, or when a list of @npages (any @npages > 1 is counted as
 * a list, contiguous or not) would pass max_page_list_bytes.  A caller
 * asks before it copies a page list in, so that a refused one costs
 * nothing; rnic_mr_register() checks the same again.
 */
enum rnic_stag_status rnic_mr_admit(const struct rnic_stag_table *t,
                                    uint32_t npages);

/*
 * Registers a region and returns its STag: a table-chosen index with
 * attr->key.  KEY_REUSED when the index to be handed out is a released one
 * that last carried this key; retry with another key.
 */
enum rnic_stag_status rnic_mr_register(struct rnic_stag_table *t,
                                       const struct rnic_mr_attr *attr,
                                       uint32_t *stag);
/*
 * Re-registers the region @stag (valid or invalidated) in place.  The key
 * must differ from the current one (KEY_REUSED otherwise); BUSY while
 * windows are bound.  *new_stag is @stag with attr->key.
 */
enum rnic_stag_status rnic_mr_reregister(struct rnic_stag_table *t,
                                         uint32_t stag,
                                         const struct rnic_mr_attr *attr,
                                         uint32_t *new_stag);
/* BUSY while windows are bound. */
enum rnic_stag_status rnic_mr_deregister(struct rnic_stag_table *t,
                                         uint32_t stag);

/* ---- fast registration and the physical STag (mr_fast.c) ---- */

/* Page-list entries one fast-registration region may hold, at most. */
#define RNIC_MR_FAST_MAX_PAGES  4096

/*
 * A region of @pd with room for @max_pages page addresses and no pages:
 * invalid until rnic_mr_fast_reg().  The slot counts against max_mrs and
 * max_page_list_bytes from now until deregistration.
 */
enum rnic_stag_status rnic_mr_alloc(struct rnic_stag_table *t, uint32_t pd,
                                    uint32_t max_pages, uint8_t key,
                                    uint32_t *stag);

/*
 * The physical STag of @pd: valid at once, its tagged offsets are guest
 * bus addresses (all of them), local read and write only, and only an
 * access with RNIC_ACCESS_PRIVILEGED reaches it.  Cannot be invalidated;
 * rnic_mr_deregister() frees it.
 */
enum rnic_stag_status rnic_mr_alloc_phys(struct rnic_stag_table *t,
                                         uint32_t pd, uint8_t key,
                                         uint32_t *stag);

struct rnic_fast_reg_attr {
    uint32_t stag;                  /* the region's index, the new key */
    uint32_t pd;                    /* of the QP that posted it */
    unsigned access;                /* enum rnic_access, no MW_BIND */
    const uint64_t *pages;
    uint32_t npages;                /* <= the region's max_pages */
    uint8_t page_shift;
    uint32_t first_byte_offset;
    uint64_t length;
    uint64_t base_to;
};

/*
 * Fills an ALLOC_MR region, in send-queue order.  The region must be
 * invalid (never registered, or invalidated since): BUSY otherwise.
 * INVALID_STAG when @stag's index is no such region, NOT_ASSOCIATED for
 * another PD, INVALID_ARG for a page list, page size or range that does
 * not fit.  Persistent, and Send with Invalidate may name it.
 */
enum rnic_stag_status rnic_mr_fast_reg(struct rnic_stag_table *t,
                                       const struct rnic_fast_reg_attr *a);

/* ---- memory windows ---- */

/* Allocates an unbound (invalid) window of @kind in @pd; KEY_REUSED as for
 * rnic_mr_register(). */
enum rnic_stag_status rnic_mw_alloc(struct rnic_stag_table *t, uint32_t pd,
                                    enum rnic_stag_kind kind, uint8_t key,
                                    uint32_t *stag);

struct rnic_mw_bind_attr {
    uint32_t mr_stag;
    uint32_t pd;                    /* PD of the binding QP / consumer */
    uint32_t qpn;                   /* type 2: the only QP it serves */
    uint8_t key;                    /* new key, must differ */
    unsigned access;                /* RNIC_ACCESS_REMOTE_* only */
    enum rnic_stag_policy policy;
    bool remote_invalidate;
    uint64_t to;                    /* in the region's TO space */
    uint64_t length;
};

/*
 * Binds (type 1: also re-binds) window @mw_stag.  The region must allow
 * MW_BIND, be persistent and not linked to a receive, contain the range,
 * and have LOCAL_WRITE when the window grants remote write or atomic.
 * A type 2 window must be invalid (unbound) first.
 */
enum rnic_stag_status rnic_mw_bind(struct rnic_stag_table *t,
                                   uint32_t mw_stag,
                                   const struct rnic_mw_bind_attr *attr,
                                   uint32_t *new_stag);
/* Unbinds if bound and frees the window @stag's index names, any key. */
enum rnic_stag_status rnic_mw_dealloc(struct rnic_stag_table *t,
                                      uint32_t stag);

/* ---- the check on every access ---- */

/*
 * A resolved, checked range; valid until the table is next modified.  The
 * range is [to, to + len) in the TO space of the region @mr (a window's
 * is its region's): region byte to - base TO is the first one.
 */
struct rnic_mem_ref {
    const struct rnic_stag_entry *mr;   /* the region holding the bytes */
    uint64_t to;                    /* tagged offset of the first byte */
    uint64_t len;
    uint32_t stag;                  /* the STag that was resolved */
};

/*
 * Checks that [to, to + len) may be accessed through @stag by a QP @qpn
 * of @pd with all of @access (enum rnic_access), in this order: STag
 * valid with this key, PD (and for a type 2 window, QP) association,
 * access rights, TO wrap, base and bounds.  len 0 is accepted anywhere in
 * [base, base + length], including at the very end of the TO space.
 */
enum rnic_stag_status rnic_stag_resolve_checked(
    const struct rnic_stag_table *t, uint32_t stag, uint32_t pd,
    uint32_t qpn, uint64_t to, uint64_t len, unsigned access,
    struct rnic_mem_ref *ref);

/*
 * Inline, so that the processor overlaps the cache misses of many
 * resolves (each STag's entry is one): the common case, a valid region
 * that is not the physical STag, of this PD, with the rights asked for
 * and the range inside it, in as few instructions as will do.  Whatever
 * fails there goes through every check in the order above
 * (rnic_stag_resolve_checked()), which names the error (docs/protocol.md
 * section 10).  A range inside a region cannot pass the end of the TO
 * space (base + length <= 2^64 for every region but the physical STag:
 * registration, fast registration and loading a saved table check it),
 * so the common case does not test TO wrap apart.
 */
static inline enum rnic_stag_status
rnic_stag_resolve(const struct rnic_stag_table *t, uint32_t stag,
                  uint32_t pd, uint32_t qpn, uint64_t to, uint64_t len,
                  unsigned access, struct rnic_mem_ref *ref)
{
    const struct rnic_stag_hot *h = (const struct rnic_stag_hot *)t;
    uint32_t index = rnic_stag_index(stag);
    unsigned rights = access & ~(unsigned)RNIC_ACCESS_PRIVILEGED;
    const uint64_t mask = rnic_stag_id_word(UINT32_MAX, UINT8_MAX,
                                            UINT8_MAX, 3, RNIC_ENTRY_PHYS,
                                            0);

    if (index - 1 < h->max_stags) {
        const struct rnic_stag_entry *e = &h->entries[index];
        uint64_t off = to - e->base_to;

        if ((e->id & mask) == rnic_stag_id_word(pd, rnic_stag_key(stag),
                                                RNIC_ENTRY_VALID,
                                                RNIC_STAG_MR, 0, 0) &&
            (e->access & rights) == rights && to >= e->base_to &&
            off <= e->length && len <= e->length - off) {
            ref->mr = e;
            ref->to = to;
            ref->len = len;
            ref->stag = stag;
            return RNIC_STAG_OK;
        }
    }
    return rnic_stag_resolve_checked(t, stag, pd, qpn, to, len, access,
                                     ref);
}

/* True when @stag is currently valid: the cheap check for benchmarks. */
bool rnic_stag_lookup(const struct rnic_stag_table *t, uint32_t stag);

struct rnic_stag_info {
    enum rnic_stag_kind kind;
    bool valid;
    bool one_shot;
    bool remote_invalidate;
    uint32_t pd;
    uint32_t qpn;                   /* type 2 window */
    unsigned access;
    uint64_t base_to;
    uint64_t length;
    uint32_t bound_windows;         /* region */
    uint32_t mr_stag;               /* window: the region it is bound to */
    bool recv_linked;               /* invalidated when a receive is used */
};

/* INVALID_STAG unless @stag's index is allocated with this key. */
enum rnic_stag_status rnic_stag_query(const struct rnic_stag_table *t,
                                      uint32_t stag,
                                      struct rnic_stag_info *info);

/*
 * For listing the table: the STag of the first allocated entry at index
 * >= *index, with *index moved past it; 0 when there is none.
 */
uint32_t rnic_stag_next_used(const struct rnic_stag_table *t,
                             uint32_t *index);

/* ---- moving bytes ---- */

/* Writes ref->len bytes of @buf to guest memory; DMA on failure. */
enum rnic_stag_status rnic_mem_place(const struct rnic_dma *dma,
                                     const struct rnic_mem_ref *ref,
                                     const void *buf);
/* Reads ref->len bytes of guest memory into @buf; DMA on failure. */
enum rnic_stag_status rnic_mem_fetch(const struct rnic_dma *dma,
                                     const struct rnic_mem_ref *ref,
                                     void *buf);

struct rnic_mem_iov {
    void *base;
    size_t len;
};

/*
 * Maps the whole range for zero copy into iov[0..*n).  DMA when the
 * device offers no map or a page cannot be mapped, IOV_FULL when @max is
 * too small; on failure nothing stays mapped.  Pair with rnic_mem_unmap().
 */
enum rnic_stag_status rnic_mem_map(const struct rnic_dma *dma,
                                   const struct rnic_mem_ref *ref,
                                   bool is_write, struct rnic_mem_iov *iov,
                                   size_t max, size_t *n);
/*
 * As rnic_mem_map(), but when @max runs out first (IOV_FULL) the pieces
 * that fit stay mapped: *n of them, *mapped bytes from the start of the
 * range (0 when none fit).  Pair with rnic_mem_unmap() as well.
 */
enum rnic_stag_status rnic_mem_map_prefix(const struct rnic_dma *dma,
                                          const struct rnic_mem_ref *ref,
                                          bool is_write,
                                          struct rnic_mem_iov *iov,
                                          size_t max, size_t *n,
                                          uint64_t *mapped);
/* @written: bytes stored through the mapping, counted from iov[0]. */
void rnic_mem_unmap(const struct rnic_dma *dma, const struct rnic_mem_iov *iov,
                    size_t n, bool is_write, size_t written);

/* ---- invalidation ---- */

/*
 * Someone holding on to guest memory reached through STags (the
 * transmitter's FPDUs in flight) hears of every STag that stops being
 * valid — invalidated by any means, deregistered, re-registered,
 * unbound, deallocated — before the call that does it returns, so that
 * after it nothing reads that memory through the old STag.  @index is
 * the STag's index (rnic_stag_index()).  The callback must not call into
 * the table.
 */
struct rnic_stag_watcher {
    void (*gone)(struct rnic_stag_watcher *w, uint32_t index);
    struct rnic_stag_watcher *next;
};

void rnic_stag_watch(struct rnic_stag_table *t, struct rnic_stag_watcher *w);
void rnic_stag_unwatch(struct rnic_stag_table *t,
                       struct rnic_stag_watcher *w);

/*
 * Local Invalidate by the consumer.  Invalidating an STag that is already
 * invalid is a no-op; a region with bound windows gives CANNOT_INVALIDATE.
 */
enum rnic_stag_status rnic_stag_invalidate_local(struct rnic_stag_table *t,
                                                 uint32_t stag, uint32_t pd);

/*
 * Send with Invalidate naming @stag, received on QP @qpn of @pd.  The STag
 * must be valid (INVALID_STAG), of this PD and for a type 2 window this QP
 * (NOT_ASSOCIATED), registered with remote_invalidate, not a type 1 window
 * and not a region with bound windows (CANNOT_INVALIDATE).  On success
 * *invalidated is the STag, for the receive completion.
 */
enum rnic_stag_status rnic_stag_invalidate_remote(struct rnic_stag_table *t,
                                                  uint32_t stag, uint32_t pd,
                                                  uint32_t qpn,
                                                  uint32_t *invalidated);

/*
 * The receive path placed the last DDP segment of an RDMAP message
 * through @stag: a one-shot STag is invalidated now.  Returns true if it
 * was.
 */
bool rnic_stag_message_done(struct rnic_stag_table *t, uint32_t stag);

/* @stag names a one-shot entry (valid or not). */
bool rnic_stag_one_shot(const struct rnic_stag_table *t, uint32_t stag);

/*
 * The receive queue a linked buffer is posted to: a QP's own RQ or an SRQ.
 * Links are scoped to one queue (equal WR ids on two queues never meet)
 * and to its PD (a queue links only STags of its own PD).
 */
struct rnic_recv_owner {
    uint64_t queue;                 /* rnic_recv_queue_qp() / _srq() */
    uint32_t pd;                    /* the queue's protection domain */
    uint32_t qpn;                   /* a type 2 window's QP; 0 for an SRQ */
};

static inline uint64_t rnic_recv_queue_qp(uint32_t qpn)
{
    return 1ull << 32 | qpn;
}

static inline uint64_t rnic_recv_queue_srq(uint32_t srqn)
{
    return 2ull << 32 | srqn;
}

/*
 * Links a valid STag to the receive buffer @recv_id posted to queue @o:
 * consuming that buffer invalidates it.  The STag must be of @o's PD (and
 * a type 2 window of @o's QP): NOT_ASSOCIATED otherwise.  One link per
 * STag (BUSY); a region with bound windows cannot be linked (BUSY).
 */
enum rnic_stag_status rnic_stag_link_to_recv(struct rnic_stag_table *t,
                                             uint32_t stag,
                                             const struct rnic_recv_owner *o,
                                             uint64_t recv_id);
/*
 * The receive buffer @recv_id of @queue was consumed: invalidates every
 * STag linked to it and writes up to @max of them to @stags (may be
 * NULL).  Returns how many were invalidated.
 */
size_t rnic_stag_recv_consumed(struct rnic_stag_table *t, uint64_t queue,
                               uint64_t recv_id, uint32_t *stags, size_t max);
/* The buffer was flushed, not consumed: drop its links, keep the STags. */
void rnic_stag_recv_forget(struct rnic_stag_table *t, uint64_t queue,
                           uint64_t recv_id);
/* The queue is gone: drop every link of its buffers, keep the STags. */
void rnic_stag_recv_forget_queue(struct rnic_stag_table *t, uint64_t queue);

#endif /* RNIC_STAG_H */
