/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The STag table itself: allocation of indices and PDs, the check every
 * access goes through, and every way an STag is invalidated.  Regions are
 * registered in mr.c, windows bound in mw.c.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include "stag_internal.h"

#define RNIC_DEFAULT_RECV_LINKS 65536u

/* ---- status codes ---- */

const char *rnic_stag_status_name(enum rnic_stag_status st)
{
    static const char *const names[] = {
        [RNIC_STAG_OK] = "ok",
        [RNIC_STAG_ERR_INVALID_STAG] = "invalid STag",
        [RNIC_STAG_ERR_BASE_BOUNDS] = "base or bounds violation",
        [RNIC_STAG_ERR_ACCESS] = "access rights violation",
        [RNIC_STAG_ERR_NOT_ASSOCIATED] = "STag not associated with stream",
        [RNIC_STAG_ERR_TO_WRAP] = "TO wrap",
        [RNIC_STAG_ERR_CANNOT_INVALIDATE] = "STag cannot be invalidated",
        [RNIC_STAG_ERR_INVALID_ARG] = "invalid argument",
        [RNIC_STAG_ERR_NO_RESOURCES] = "no resources",
        [RNIC_STAG_ERR_BUSY] = "busy",
        [RNIC_STAG_ERR_KEY_REUSED] = "key reused",
        [RNIC_STAG_ERR_DMA] = "DMA error",
        [RNIC_STAG_ERR_IOV_FULL] = "iovec full",
    };

    if ((unsigned)st < sizeof(names) / sizeof(names[0]) && names[st]) {
        return names[st];
    }
    return "unknown";
}

int rnic_stag_ddp_ecode(enum rnic_stag_status st)
{
    /* RFC 5041 §7.2, error type 1 "Tagged Buffer Error". */
    switch (st) {
    case RNIC_STAG_ERR_INVALID_STAG:
        return 0x00;
    case RNIC_STAG_ERR_BASE_BOUNDS:
        return 0x01;
    case RNIC_STAG_ERR_NOT_ASSOCIATED:
        return 0x02;
    case RNIC_STAG_ERR_TO_WRAP:
        return 0x03;
    default:
        return -1;
    }
}

bool rnic_stag_rdmap_error(enum rnic_stag_status st, uint8_t *etype,
                           uint8_t *ecode)
{
    /* RFC 5040 §7.2: 0x1 Remote Protection Error, 0x2 Remote Operation. */
    static const struct {
        uint8_t etype;
        uint8_t ecode;
        bool wire;
    } map[] = {
        [RNIC_STAG_ERR_INVALID_STAG] = { 0x1, 0x00, true },
        [RNIC_STAG_ERR_BASE_BOUNDS] = { 0x1, 0x01, true },
        [RNIC_STAG_ERR_ACCESS] = { 0x1, 0x02, true },
        [RNIC_STAG_ERR_NOT_ASSOCIATED] = { 0x1, 0x03, true },
        [RNIC_STAG_ERR_TO_WRAP] = { 0x1, 0x04, true },
        [RNIC_STAG_ERR_CANNOT_INVALIDATE] = { 0x2, 0x09, true },
    };

    if ((unsigned)st >= sizeof(map) / sizeof(map[0]) || !map[st].wire) {
        return false;
    }
    *etype = map[st].etype;
    *ecode = map[st].ecode;
    return true;
}

/* ---- the table ---- */

/*
 * The slot arrays: anonymous memory, zero and not committed until a slot
 * is first written (as calloc gave), asked for in huge pages.  A resolve
 * lands on a random slot of up to 32 MiB: with 4 KiB pages nearly every
 * one is a TLB miss as well as a cache miss, and a huge page spares the
 * page walk where the kernel grants one.  The cache miss stays; what a
 * lookup and a resolve cost is in docs/protocol.md section 10.  mmap's
 * pages are aligned: no 32-octet entry straddles two cache lines.
 */
static void *entries_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    /* Only advice: where huge pages are off, plain pages still work. */
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

static size_t entries_bytes(const struct rnic_stag_table *t)
{
    return ((size_t)t->max_stags + 1) * sizeof(*t->entries);
}

static size_t tags_bytes(const struct rnic_stag_table *t)
{
    return ((size_t)t->max_stags + 1) * sizeof(*t->tags);
}

static size_t cold_bytes(const struct rnic_stag_table *t)
{
    return ((size_t)t->max_stags + 1) * sizeof(*t->cold);
}

static uint32_t round_up_pow2(uint32_t v)
{
    uint32_t p = 16;

    while (p < v && p < (1u << 31)) {
        p <<= 1;
    }
    return p;
}

struct rnic_stag_table *rnic_stag_table_new(
    const struct rnic_stag_table_params *params)
{
    struct rnic_stag_table *t;
    uint32_t links = params->max_recv_links;

    if (params->max_stags == 0 || params->max_stags > RNIC_STAG_MAX_INDEX ||
        params->max_pds == 0 || params->max_pds > (1u << 24)) {
        return NULL;
    }
    if (links == 0) {
        links = params->max_stags < RNIC_DEFAULT_RECV_LINKS ?
                params->max_stags : RNIC_DEFAULT_RECV_LINKS;
    }
    t = calloc(1, sizeof(*t));
    if (!t) {
        return NULL;
    }
    t->max_stags = params->max_stags;
    if (params->max_mrs || params->max_mws) {
        t->max_mrs = params->max_mrs;
        t->max_mws = params->max_mws;
    } else {
        t->max_mrs = t->max_mws = params->max_stags;
    }
    t->max_page_list_bytes = params->max_page_list_bytes;
    t->fresh = 1;
    t->default_one_shot = params->default_policy != RNIC_STAG_PERSISTENT;
    t->max_pds = params->max_pds;
    t->pd_cursor = 1;
    t->max_links = links;
    t->bucket_mask = round_up_pow2(links) - 1;
    /* Untouched slots of a big table cost no memory until used. */
    t->entries = entries_alloc(entries_bytes(t));
    t->tags = entries_alloc(tags_bytes(t));
    t->cold = entries_alloc(cold_bytes(t));
    t->pds = calloc((size_t)t->max_pds + 1, sizeof(*t->pds));
    t->links = calloc(links, sizeof(*t->links));
    t->buckets = calloc((size_t)t->bucket_mask + 1, sizeof(*t->buckets));
    if (!t->entries || !t->tags || !t->cold || !t->pds || !t->links ||
        !t->buckets) {
        rnic_stag_table_free(t);
        return NULL;
    }
    for (uint32_t i = 0; i < links; i++) {
        t->links[i].next = i + 2 <= links ? i + 2 : 0;
    }
    t->link_free = 1;
    return t;
}

void rnic_stag_table_free(struct rnic_stag_table *t)
{
    if (!t) {
        return;
    }
    if (t->entries && t->tags) {
        for (uint32_t i = 1; i < t->fresh; i++) {
            struct rnic_stag_entry *e = &t->entries[i];

            if (t->tags[i].state != RNIC_ENTRY_FREE &&
                e->kind == RNIC_STAG_MR &&
                (e->flags & RNIC_ENTRY_PAGE_LIST)) {
                free(e->u.mr.list);
            }
        }
    }
    if (t->entries) {
        munmap(t->entries, entries_bytes(t));
    }
    if (t->tags) {
        munmap(t->tags, tags_bytes(t));
    }
    if (t->cold) {
        munmap(t->cold, cold_bytes(t));
    }
    free(t->pds);
    free(t->links);
    free(t->buckets);
    free(t);
}

size_t rnic_stag_table_footprint(const struct rnic_stag_table *t)
{
    return sizeof(*t) +
           entries_bytes(t) + tags_bytes(t) + cold_bytes(t) +
           ((size_t)t->max_pds + 1) * sizeof(*t->pds) +
           (size_t)t->max_links * sizeof(*t->links) +
           ((size_t)t->bucket_mask + 1) * sizeof(*t->buckets) +
           t->page_list_bytes;
}

size_t rnic_stag_page_list_bytes(const struct rnic_stag_table *t)
{
    return t->page_list_bytes;
}

/*
 * Never-used indices go first and released ones queue up behind them, so
 * an index comes back as late as possible: an STag a peer kept from before
 * meets a free slot or a different key for as long as we can make it.  A
 * released index still holds its last key and is not handed out again
 * with that same key: the next released index is taken instead, and only
 * when there is none the caller must retry with another key.
 */
enum rnic_stag_status rnic_stag_index_alloc(struct rnic_stag_table *t,
                                            uint8_t key, uint32_t *index)
{
    uint32_t *prev = &t->free_head;
    uint32_t i;

    if (t->fresh <= t->max_stags) {
        *index = t->fresh++;
        return RNIC_STAG_OK;
    }
    i = *prev;
    if (i && t->tags[i].key == key) {
        prev = &t->cold[i].link;
        i = *prev;
    }
    if (!i) {
        return t->free_head ? RNIC_STAG_ERR_KEY_REUSED
                            : RNIC_STAG_ERR_NO_RESOURCES;
    }
    if (t->tags[i].key == key) {
        return RNIC_STAG_ERR_KEY_REUSED;
    }
    *prev = t->cold[i].link;
    if (t->free_tail == i) {
        t->free_tail = prev == &t->free_head ? 0 : t->free_head;
    }
    t->cold[i].link = 0;
    *index = i;
    return RNIC_STAG_OK;
}

void rnic_stag_index_release(struct rnic_stag_table *t, uint32_t index)
{
    rnic_stag_set_state(t, &t->entries[index], RNIC_ENTRY_FREE);
    t->cold[index].link = 0;
    if (t->free_tail) {
        t->cold[t->free_tail].link = index;
    } else {
        t->free_head = index;
    }
    t->free_tail = index;
}

/* The tag @stag names if its index is in range and its key matches. */
static const struct rnic_stag_tag *tag_get(const struct rnic_stag_table *t,
                                           uint32_t stag)
{
    uint32_t index = rnic_stag_index(stag);
    const struct rnic_stag_tag *g;

    if (index == 0 || index > t->max_stags) {
        return NULL;
    }
    g = &t->tags[index];
    return g->key == rnic_stag_key(stag) ? g : NULL;
}

struct rnic_stag_entry *rnic_stag_entry_get(const struct rnic_stag_table *t,
                                            uint32_t stag)
{
    const struct rnic_stag_tag *g = tag_get(t, stag);

    if (!g || g->state == RNIC_ENTRY_FREE) {
        return NULL;
    }
    return &t->entries[rnic_stag_index(stag)];
}

struct rnic_stag_entry *rnic_stag_entry_at(const struct rnic_stag_table *t,
                                           uint32_t stag)
{
    uint32_t index = rnic_stag_index(stag);

    if (index == 0 || index > t->max_stags ||
        t->tags[index].state == RNIC_ENTRY_FREE) {
        return NULL;
    }
    return &t->entries[index];
}

uint8_t rnic_stag_policy_flags(const struct rnic_stag_table *t,
                               enum rnic_stag_policy policy,
                               bool remote_invalidate)
{
    bool one_shot = policy == RNIC_STAG_ONE_SHOT ||
                    (policy == RNIC_STAG_POLICY_DEFAULT && t->default_one_shot);

    return (one_shot ? RNIC_ENTRY_ONE_SHOT : 0) |
           (remote_invalidate ? RNIC_ENTRY_REMOTE_INV : 0);
}

/* ---- protection domains ---- */

enum rnic_stag_status rnic_pd_alloc(struct rnic_stag_table *t, uint32_t *pd)
{
    for (uint32_t n = 0; n < t->max_pds; n++) {
        uint32_t h = t->pd_cursor;

        t->pd_cursor = h == t->max_pds ? 1 : h + 1;
        if (!t->pds[h].used) {
            t->pds[h].used = true;
            t->pds[h].refs = 0;
            *pd = h;
            return RNIC_STAG_OK;
        }
    }
    return RNIC_STAG_ERR_NO_RESOURCES;
}

static struct rnic_pd_slot *pd_slot(struct rnic_stag_table *t, uint32_t pd)
{
    if (pd == 0 || pd > t->max_pds || !t->pds[pd].used) {
        return NULL;
    }
    return &t->pds[pd];
}

enum rnic_stag_status rnic_pd_free(struct rnic_stag_table *t, uint32_t pd)
{
    struct rnic_pd_slot *s = pd_slot(t, pd);

    if (!s) {
        return RNIC_STAG_ERR_INVALID_ARG;
    }
    if (s->refs) {
        return RNIC_STAG_ERR_BUSY;
    }
    s->used = false;
    return RNIC_STAG_OK;
}

enum rnic_stag_status rnic_pd_get(struct rnic_stag_table *t, uint32_t pd)
{
    struct rnic_pd_slot *s = pd_slot(t, pd);

    if (!s) {
        return RNIC_STAG_ERR_INVALID_ARG;
    }
    s->refs++;
    return RNIC_STAG_OK;
}

void rnic_pd_put(struct rnic_stag_table *t, uint32_t pd)
{
    struct rnic_pd_slot *s = pd_slot(t, pd);

    if (s && s->refs) {
        s->refs--;
    }
}

/* ---- the check on every access ---- */

enum rnic_stag_status rnic_stag_range_check(const struct rnic_stag_entry *e,
                                            uint64_t to, uint64_t len)
{
    uint64_t off;

    /* The last byte is to + len - 1; compare instead of adding. */
    if (len && len - 1 > UINT64_MAX - to) {
        return RNIC_STAG_ERR_TO_WRAP;
    }
    if (to < e->base_to) {
        return RNIC_STAG_ERR_BASE_BOUNDS;
    }
    off = to - e->base_to;
    if (off > e->length || len > e->length - off) {
        return RNIC_STAG_ERR_BASE_BOUNDS;
    }
    return RNIC_STAG_OK;
}

static bool entry_serves(const struct rnic_stag_entry *e, uint32_t pd,
                         uint32_t qpn)
{
    return e->pd == pd &&
           (e->kind != RNIC_STAG_MW_TYPE2 || e->u.mw.qpn == qpn);
}

_Static_assert(offsetof(struct rnic_stag_table, hot) == 0,
               "stag.h's rnic_stag_resolve() reads the table as its hot part");

/*
 * A window reads its own entry and its region's tag (in cache), not its
 * region: the offset into the region is worked out when bytes move
 * (rnic_mem_place() and the others read the region there anyway).
 */
enum rnic_stag_status rnic_stag_resolve_checked(
    const struct rnic_stag_table *t, uint32_t stag, uint32_t pd,
    uint32_t qpn, uint64_t to, uint64_t len, unsigned access,
    struct rnic_mem_ref *ref)
{
    uint32_t index = rnic_stag_index(stag);
    const struct rnic_stag_entry *e;
    enum rnic_stag_status st;

    if (index == 0 || index > t->max_stags) {
        return RNIC_STAG_ERR_INVALID_STAG;
    }
    e = &t->entries[index];
    /* The physical STag exists for a kernel QP's local access only. */
    if (e->tag.key != rnic_stag_key(stag) ||
        e->tag.state != RNIC_ENTRY_VALID ||
        ((e->flags & RNIC_ENTRY_PHYS) &&
         (!(access & RNIC_ACCESS_PRIVILEGED) ||
          (access & RNIC_ACCESS_REMOTE_ALL)))) {
        return RNIC_STAG_ERR_INVALID_STAG;
    }
    if (!entry_serves(e, pd, qpn)) {
        return RNIC_STAG_ERR_NOT_ASSOCIATED;
    }
    access &= ~(unsigned)RNIC_ACCESS_PRIVILEGED;
    if ((e->access & access) != access) {
        return RNIC_STAG_ERR_ACCESS;
    }
    st = rnic_stag_range_check(e, to, len);
    if (st != RNIC_STAG_OK) {
        return st;
    }
    ref->mr = e;
    if (e->kind != RNIC_STAG_MR) {
        /* Bound windows pin their region valid; this only guards that. */
        if (t->tags[e->u.mw.mr_index].state != RNIC_ENTRY_VALID) {
            return RNIC_STAG_ERR_INVALID_STAG;
        }
        ref->mr = &t->entries[e->u.mw.mr_index];
    }
    ref->to = to;
    ref->len = len;
    ref->stag = stag;
    return RNIC_STAG_OK;
}

bool rnic_stag_lookup(const struct rnic_stag_table *t, uint32_t stag)
{
    const struct rnic_stag_tag *g = tag_get(t, stag);

    /* The tag alone answers: the entry is not read. */
    return g && g->state == RNIC_ENTRY_VALID;
}

enum rnic_stag_status rnic_stag_query(const struct rnic_stag_table *t,
                                      uint32_t stag,
                                      struct rnic_stag_info *info)
{
    const struct rnic_stag_entry *e = rnic_stag_entry_get(t, stag);
    bool mr;

    if (!e) {
        return RNIC_STAG_ERR_INVALID_STAG;
    }
    mr = e->kind == RNIC_STAG_MR;
    info->kind = e->kind;
    /* The entry's copy: a test that lookup (the tag) agrees checks both. */
    info->valid = e->tag.state == RNIC_ENTRY_VALID;
    info->one_shot = e->flags & RNIC_ENTRY_ONE_SHOT;
    info->remote_invalidate = e->flags & RNIC_ENTRY_REMOTE_INV;
    info->pd = e->pd;
    info->qpn = e->kind == RNIC_STAG_MW_TYPE2 ? e->u.mw.qpn : 0;
    info->access = e->access;
    info->base_to = e->base_to;
    info->length = e->length;
    info->bound_windows = mr ? rnic_stag_cold(t, e)->windows : 0;
    info->mr_stag = 0;
    if (!mr && info->valid) {
        uint32_t mri = e->u.mw.mr_index;

        info->mr_stag = rnic_stag_make(mri, t->tags[mri].key);
    }
    info->recv_linked = rnic_stag_cold(t, e)->link != 0;
    return RNIC_STAG_OK;
}

uint32_t rnic_stag_next_used(const struct rnic_stag_table *t,
                             uint32_t *index)
{
    uint32_t i = *index ? *index : 1;

    for (; i < t->fresh; i++) {
        if (t->tags[i].state != RNIC_ENTRY_FREE) {
            *index = i + 1;
            return rnic_stag_make(i, t->tags[i].key);
        }
    }
    *index = i;
    return 0;
}

/* ---- invalidation ---- */

void rnic_stag_watch(struct rnic_stag_table *t, struct rnic_stag_watcher *w)
{
    w->next = t->watchers;
    t->watchers = w;
}

void rnic_stag_unwatch(struct rnic_stag_table *t,
                       struct rnic_stag_watcher *w)
{
    struct rnic_stag_watcher **p = &t->watchers;

    while (*p && *p != w) {
        p = &(*p)->next;
    }
    if (*p) {
        *p = w->next;
    }
}

void rnic_stag_entry_gone(struct rnic_stag_table *t,
                          const struct rnic_stag_entry *e)
{
    uint32_t index = rnic_stag_entry_index(t, e);

    if (rnic_stag_tag(t, e)->state != RNIC_ENTRY_VALID) {
        return;
    }
    for (struct rnic_stag_watcher *w = t->watchers; w; w = w->next) {
        w->gone(w, index);
    }
}

void rnic_stag_entry_invalidate(struct rnic_stag_table *t,
                                struct rnic_stag_entry *e)
{
    rnic_stag_entry_gone(t, e);
    rnic_stag_unlink_recv(t, e);
    if (e->kind != RNIC_STAG_MR &&
        rnic_stag_tag(t, e)->state == RNIC_ENTRY_VALID) {
        t->cold[e->u.mw.mr_index].windows--;
    }
    rnic_stag_set_state(t, e, RNIC_ENTRY_INVALID);
}

enum rnic_stag_status rnic_stag_invalidate_local(struct rnic_stag_table *t,
                                                 uint32_t stag, uint32_t pd)
{
    struct rnic_stag_entry *e = rnic_stag_entry_get(t, stag);

    if (!e) {
        return RNIC_STAG_ERR_INVALID_STAG;
    }
    if (e->pd != pd) {
        return RNIC_STAG_ERR_NOT_ASSOCIATED;
    }
    if ((e->kind == RNIC_STAG_MR && rnic_stag_cold(t, e)->windows) ||
        (e->flags & RNIC_ENTRY_PHYS)) {
        return RNIC_STAG_ERR_CANNOT_INVALIDATE;
    }
    rnic_stag_entry_invalidate(t, e);
    return RNIC_STAG_OK;
}

enum rnic_stag_status rnic_stag_invalidate_remote(struct rnic_stag_table *t,
                                                  uint32_t stag, uint32_t pd,
                                                  uint32_t qpn,
                                                  uint32_t *invalidated)
{
    struct rnic_stag_entry *e = rnic_stag_entry_get(t, stag);

    *invalidated = 0;
    if (!e || rnic_stag_tag(t, e)->state != RNIC_ENTRY_VALID ||
        (e->flags & RNIC_ENTRY_PHYS)) {
        return RNIC_STAG_ERR_INVALID_STAG;
    }
    if (!entry_serves(e, pd, qpn)) {
        return RNIC_STAG_ERR_NOT_ASSOCIATED;
    }
    /* Type 1 windows belong to the consumer alone, as in the verbs. */
    if (!(e->flags & RNIC_ENTRY_REMOTE_INV) ||
        e->kind == RNIC_STAG_MW_TYPE1 ||
        (e->kind == RNIC_STAG_MR && rnic_stag_cold(t, e)->windows)) {
        return RNIC_STAG_ERR_CANNOT_INVALIDATE;
    }
    rnic_stag_entry_invalidate(t, e);
    *invalidated = stag;
    return RNIC_STAG_OK;
}

bool rnic_stag_one_shot(const struct rnic_stag_table *t, uint32_t stag)
{
    const struct rnic_stag_entry *e = rnic_stag_entry_get(t, stag);

    return e && (e->flags & RNIC_ENTRY_ONE_SHOT);
}

bool rnic_stag_message_done(struct rnic_stag_table *t, uint32_t stag)
{
    struct rnic_stag_entry *e = rnic_stag_entry_get(t, stag);

    if (!e || rnic_stag_tag(t, e)->state != RNIC_ENTRY_VALID ||
        !(e->flags & RNIC_ENTRY_ONE_SHOT)) {
        return false;
    }
    rnic_stag_entry_invalidate(t, e);
    return true;
}

/* ---- STags linked to a receive buffer ---- */

static uint32_t *recv_bucket(struct rnic_stag_table *t, uint64_t queue,
                             uint64_t recv_id)
{
    /* Fibonacci hashing: WR ids are often pointers or counters. */
    uint64_t h = (recv_id ^ (queue * 0xff51afd7ed558ccdull)) *
                 0x9e3779b97f4a7c15ull;

    return &t->buckets[(h >> 32) & t->bucket_mask];
}

static void link_node_free(struct rnic_stag_table *t, uint32_t node)
{
    t->links[node - 1].next = t->link_free;
    t->link_free = node;
}

void rnic_stag_unlink_recv(struct rnic_stag_table *t,
                           struct rnic_stag_entry *e)
{
    uint32_t node = rnic_stag_cold(t, e)->link;
    struct rnic_recv_link *l;
    uint32_t *p;

    if (!node) {
        return;
    }
    l = &t->links[node - 1];
    p = recv_bucket(t, l->queue, l->recv_id);
    while (*p != node) {
        p = &t->links[*p - 1].next;
    }
    *p = l->next;
    link_node_free(t, node);
    rnic_stag_cold(t, e)->link = 0;
}

enum rnic_stag_status rnic_stag_link_to_recv(struct rnic_stag_table *t,
                                             uint32_t stag,
                                             const struct rnic_recv_owner *o,
                                             uint64_t recv_id)
{
    struct rnic_stag_entry *e = rnic_stag_entry_get(t, stag);
    uint32_t node;
    uint32_t *bucket;

    if (!e || rnic_stag_tag(t, e)->state != RNIC_ENTRY_VALID ||
        (e->flags & RNIC_ENTRY_PHYS)) {
        return RNIC_STAG_ERR_INVALID_STAG;
    }
    if (!entry_serves(e, o->pd, o->qpn)) {
        return RNIC_STAG_ERR_NOT_ASSOCIATED;
    }
    if (rnic_stag_cold(t, e)->link ||
        (e->kind == RNIC_STAG_MR && rnic_stag_cold(t, e)->windows)) {
        return RNIC_STAG_ERR_BUSY;
    }
    node = t->link_free;
    if (!node) {
        return RNIC_STAG_ERR_NO_RESOURCES;
    }
    t->link_free = t->links[node - 1].next;
    bucket = recv_bucket(t, o->queue, recv_id);
    t->links[node - 1] = (struct rnic_recv_link) {
        .queue = o->queue, .recv_id = recv_id, .stag = stag, .next = *bucket,
    };
    *bucket = node;
    rnic_stag_cold(t, e)->link = node;
    return RNIC_STAG_OK;
}

/* Unhooks link node *p; invalidates its STag if @consume (true if so). */
static bool link_release(struct rnic_stag_table *t, uint32_t *p, bool consume)
{
    uint32_t node = *p;
    struct rnic_recv_link *l = &t->links[node - 1];
    struct rnic_stag_entry *e = &t->entries[rnic_stag_index(l->stag)];
    bool invalidated = false;

    *p = l->next;
    rnic_stag_cold(t, e)->link = 0;
    if (consume && rnic_stag_tag(t, e)->state == RNIC_ENTRY_VALID) {
        rnic_stag_entry_invalidate(t, e);
        invalidated = true;
    }
    link_node_free(t, node);
    return invalidated;
}

/* Unhooks every node of @recv_id on @queue; invalidates if @consume. */
static size_t recv_release(struct rnic_stag_table *t, uint64_t queue,
                           uint64_t recv_id, bool consume, uint32_t *stags,
                           size_t max)
{
    uint32_t *p = recv_bucket(t, queue, recv_id);
    size_t count = 0;

    while (*p) {
        struct rnic_recv_link *l = &t->links[*p - 1];
        uint32_t stag = l->stag;

        if (l->recv_id != recv_id || l->queue != queue) {
            p = &l->next;
            continue;
        }
        if (link_release(t, p, consume)) {
            if (stags && count < max) {
                stags[count] = stag;
            }
            count++;
        }
    }
    return count;
}

size_t rnic_stag_recv_consumed(struct rnic_stag_table *t, uint64_t queue,
                               uint64_t recv_id, uint32_t *stags, size_t max)
{
    return recv_release(t, queue, recv_id, true, stags, max);
}

void rnic_stag_recv_forget(struct rnic_stag_table *t, uint64_t queue,
                           uint64_t recv_id)
{
    recv_release(t, queue, recv_id, false, NULL, 0);
}

/* Every bucket once: only when a QP or SRQ is destroyed. */
void rnic_stag_recv_forget_queue(struct rnic_stag_table *t, uint64_t queue)
{
    for (uint32_t b = 0; b <= t->bucket_mask; b++) {
        uint32_t *p = &t->buckets[b];

        while (*p) {
            if (t->links[*p - 1].queue == queue) {
                link_release(t, p, false);
            } else {
                p = &t->links[*p - 1].next;
            }
        }
    }
}
