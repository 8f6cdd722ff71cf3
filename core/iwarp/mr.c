/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Memory regions: registration from a guest page list, and the moves of
 * bytes between a checked range (struct rnic_mem_ref) and guest memory.
 */
#include <stdlib.h>
#include <string.h>
#include "stag_internal.h"

#define RNIC_ACCESS_ALL (RNIC_ACCESS_LOCAL_READ | RNIC_ACCESS_LOCAL_WRITE | \
                         RNIC_ACCESS_REMOTE_ALL | RNIC_ACCESS_MW_BIND)

/* ---- registration ---- */

static bool mr_pages_ok(const struct rnic_mr_attr *a)
{
    uint64_t page_size = 1ull << a->page_shift;
    uint64_t span, needed;

    if (a->first_byte_offset >= page_size || !a->pages) {
        return false;
    }
    if (a->length > UINT64_MAX - a->first_byte_offset) {
        return false;
    }
    span = a->first_byte_offset + a->length;
    needed = ((span - 1) >> a->page_shift) + 1;
    if (a->npages != needed) {
        return false;
    }
    for (uint32_t i = 0; i < a->npages; i++) {
        if (a->pages[i] & (page_size - 1)) {
            return false;
        }
    }
    return true;
}

static enum rnic_stag_status mr_attr_check(struct rnic_stag_table *t,
                                           const struct rnic_mr_attr *a)
{
    /* As in the verbs: a peer may only write where the consumer may. */
    unsigned needs_local_write = RNIC_ACCESS_REMOTE_WRITE |
                                 RNIC_ACCESS_REMOTE_ATOMIC;

    if (a->pd == 0 || a->pd > t->max_pds || !t->pds[a->pd].used) {
        return RNIC_STAG_ERR_INVALID_ARG;
    }
    if ((a->access & ~RNIC_ACCESS_ALL) ||
        ((a->access & needs_local_write) &&
         !(a->access & RNIC_ACCESS_LOCAL_WRITE))) {
        return RNIC_STAG_ERR_INVALID_ARG;
    }
    if (a->page_shift < RNIC_MR_MIN_PAGE_SHIFT ||
        a->page_shift > RNIC_MR_MAX_PAGE_SHIFT || a->length == 0 ||
        a->length - 1 > UINT64_MAX - a->base_to || !mr_pages_ok(a)) {
        return RNIC_STAG_ERR_INVALID_ARG;
    }
    return RNIC_STAG_OK;
}

static bool pages_contiguous(const struct rnic_mr_attr *a)
{
    uint64_t page_size = 1ull << a->page_shift;

    for (uint32_t i = 1; i < a->npages; i++) {
        if (a->pages[i - 1] > UINT64_MAX - page_size ||
            a->pages[i - 1] + page_size != a->pages[i]) {
            return false;
        }
    }
    return true;
}

size_t rnic_page_list_size(uint32_t npages)
{
    return sizeof(struct rnic_page_list) + (size_t)npages * sizeof(uint64_t);
}

/* Guest address storage of a region: inline if contiguous, else a list. */
struct mr_pages {
    bool is_list;
    uint64_t addr;
    struct rnic_page_list *list;
};

bool rnic_page_list_fits(const struct rnic_stag_table *t, size_t add,
                           size_t drop)
{
    size_t held = t->page_list_bytes - drop;

    return !t->max_page_list_bytes ||
           (add <= t->max_page_list_bytes &&
            held <= t->max_page_list_bytes - add);
}

enum rnic_stag_status rnic_mr_admit(const struct rnic_stag_table *t,
                                    uint32_t npages)
{
    if (t->mrs >= t->max_mrs) {
        return RNIC_STAG_ERR_NO_RESOURCES;
    }
    if (npages > 1 &&
        !rnic_page_list_fits(t, rnic_page_list_size(npages), 0)) {
        return RNIC_STAG_ERR_NO_RESOURCES;
    }
    return RNIC_STAG_OK;
}

/* @drop: page-list bytes the registration replaces (re-registration). */
static enum rnic_stag_status mr_pages_build(const struct rnic_stag_table *t,
                                            const struct rnic_mr_attr *a,
                                            size_t drop, struct mr_pages *p)
{
    memset(p, 0, sizeof(*p));
    if (pages_contiguous(a)) {
        p->addr = a->pages[0] + a->first_byte_offset;
        return RNIC_STAG_OK;
    }
    if (!rnic_page_list_fits(t, rnic_page_list_size(a->npages), drop)) {
        return RNIC_STAG_ERR_NO_RESOURCES;
    }
    p->list = malloc(rnic_page_list_size(a->npages));
    if (!p->list) {
        return RNIC_STAG_ERR_NO_RESOURCES;
    }
    p->is_list = true;
    p->list->capacity = a->npages;
    p->list->npages = a->npages;
    p->list->first_byte_offset = a->first_byte_offset;
    p->list->page_shift = a->page_shift;
    memcpy(p->list->addr, a->pages, (size_t)a->npages * sizeof(uint64_t));
    return RNIC_STAG_OK;
}

static void mr_pages_drop(struct rnic_stag_table *t, struct rnic_stag_entry *e)
{
    if (e->flags & RNIC_ENTRY_PAGE_LIST) {
        t->page_list_bytes -= rnic_page_list_size(e->u.mr.list->capacity);
        free(e->u.mr.list);
        e->u.mr.list = NULL;
    }
}

static void mr_fill(struct rnic_stag_table *t, struct rnic_stag_entry *e,
                    const struct rnic_mr_attr *a, const struct mr_pages *p)
{
    e->base_to = a->base_to;
    e->length = a->length;
    rnic_stag_cold(t, e)->windows = 0;
    e->pd = a->pd;
    rnic_stag_set_key(t, e, a->key);
    e->kind = RNIC_STAG_MR;
    /* Reading one's own registered memory is always allowed (verbs). */
    e->access = a->access | RNIC_ACCESS_LOCAL_READ;
    e->flags = rnic_stag_policy_flags(t, a->policy, a->remote_invalidate);
    if (p->is_list) {
        e->u.mr.list = p->list;
        e->flags |= RNIC_ENTRY_PAGE_LIST;
        t->page_list_bytes += rnic_page_list_size(p->list->capacity);
    } else {
        e->u.mr.addr = p->addr;
    }
    rnic_stag_set_state(t, e, RNIC_ENTRY_VALID);
    rnic_pd_get(t, a->pd);
}

enum rnic_stag_status rnic_mr_register(struct rnic_stag_table *t,
                                       const struct rnic_mr_attr *attr,
                                       uint32_t *stag)
{
    enum rnic_stag_status st = mr_attr_check(t, attr);
    struct mr_pages p;
    uint32_t index;

    if (st != RNIC_STAG_OK) {
        return st;
    }
    if (t->mrs >= t->max_mrs) {
        return RNIC_STAG_ERR_NO_RESOURCES;
    }
    st = mr_pages_build(t, attr, 0, &p);
    if (st != RNIC_STAG_OK) {
        return st;
    }
    st = rnic_stag_index_alloc(t, attr->key, &index);
    if (st != RNIC_STAG_OK) {
        free(p.list);
        return st;
    }
    t->mrs++;
    mr_fill(t, &t->entries[index], attr, &p);
    *stag = rnic_stag_make(index, attr->key);
    return RNIC_STAG_OK;
}

static struct rnic_stag_entry *mr_get(struct rnic_stag_table *t,
                                      uint32_t stag)
{
    struct rnic_stag_entry *e = rnic_stag_entry_get(t, stag);

    return e && e->kind == RNIC_STAG_MR ? e : NULL;
}

/* Everything but the index goes: windows must be unbound first. */
static void mr_release(struct rnic_stag_table *t, struct rnic_stag_entry *e)
{
    rnic_stag_entry_gone(t, e);
    rnic_stag_unlink_recv(t, e);
    mr_pages_drop(t, e);
    rnic_pd_put(t, e->pd);
    rnic_stag_set_state(t, e, RNIC_ENTRY_INVALID);
}

enum rnic_stag_status rnic_mr_reregister(struct rnic_stag_table *t,
                                         uint32_t stag,
                                         const struct rnic_mr_attr *attr,
                                         uint32_t *new_stag)
{
    struct rnic_stag_entry *e = mr_get(t, stag);
    enum rnic_stag_status st;
    struct mr_pages p;

    if (!e) {
        return RNIC_STAG_ERR_INVALID_STAG;
    }
    if (e->flags & (RNIC_ENTRY_FAST_REG | RNIC_ENTRY_PHYS)) {
        return RNIC_STAG_ERR_INVALID_ARG;   /* FAST_REG, or nothing */
    }
    if (rnic_stag_cold(t, e)->windows) {
        return RNIC_STAG_ERR_BUSY;
    }
    if (attr->key == rnic_stag_tag(t, e)->key) {
        return RNIC_STAG_ERR_KEY_REUSED;
    }
    st = mr_attr_check(t, attr);
    if (st == RNIC_STAG_OK) {
        st = mr_pages_build(t, attr, e->flags & RNIC_ENTRY_PAGE_LIST ?
                            rnic_page_list_size(e->u.mr.list->capacity) : 0,
                            &p);
    }
    if (st != RNIC_STAG_OK) {
        return st;
    }
    mr_release(t, e);
    mr_fill(t, e, attr, &p);
    *new_stag = rnic_stag_make(rnic_stag_index(stag), attr->key);
    return RNIC_STAG_OK;
}

enum rnic_stag_status rnic_mr_deregister(struct rnic_stag_table *t,
                                         uint32_t stag)
{
    struct rnic_stag_entry *e = mr_get(t, stag);

    /*
     * Fast registration gives an ALLOC_MR region a new key each time; a
     * driver whose FAST_REG failed may not know which one it has.
     */
    if (!e) {
        e = rnic_mr_fast_entry(t, stag);
    }
    if (!e) {
        return RNIC_STAG_ERR_INVALID_STAG;
    }
    if (rnic_stag_cold(t, e)->windows) {
        return RNIC_STAG_ERR_BUSY;
    }
    mr_release(t, e);
    rnic_stag_index_release(t, rnic_stag_index(stag));
    t->mrs--;
    return RNIC_STAG_OK;
}

/* ---- moving bytes ---- */

/*
 * Guest address of region byte @off, and how many of the @len bytes from
 * there are contiguous in guest memory.  Pages that follow each other in
 * guest memory make one chunk: a guest's buffers are often in runs of
 * them, and every chunk costs the device a translation of the address.
 */
static uint64_t mr_chunk(const struct rnic_stag_entry *mr, uint64_t off,
                         uint64_t len, uint64_t *addr)
{
    const struct rnic_page_list *l;
    uint64_t pos, page_size, n;
    uint32_t i;

    if (!(mr->flags & RNIC_ENTRY_PAGE_LIST)) {
        *addr = mr->u.mr.addr + off;
        return len;
    }
    l = mr->u.mr.list;
    page_size = 1ull << l->page_shift;
    pos = l->first_byte_offset + off;
    i = pos >> l->page_shift;
    *addr = l->addr[i] + (pos & (page_size - 1));
    n = page_size - (pos & (page_size - 1));
    while (n < len && i + 1 < l->npages &&
           l->addr[i] <= UINT64_MAX - page_size &&
           l->addr[i + 1] == l->addr[i] + page_size) {
        n += page_size;
        i++;
    }
    return len < n ? len : n;
}

static enum rnic_stag_status mem_copy(const struct rnic_dma *dma,
                                      const struct rnic_mem_ref *ref,
                                      uint8_t *to_host,
                                      const uint8_t *from_host)
{
    uint64_t off = ref->to - ref->mr->base_to;
    uint64_t left = ref->len;

    while (left) {
        uint64_t addr;
        uint64_t n = mr_chunk(ref->mr, off, left, &addr);

        if ((from_host ? rnic_dma_write(dma, addr, from_host, n)
                       : rnic_dma_read(dma, addr, to_host, n)) < 0) {
            return RNIC_STAG_ERR_DMA;
        }
        if (to_host) {
            to_host += n;
        } else {
            from_host += n;
        }
        off += n;
        left -= n;
    }
    return RNIC_STAG_OK;
}

enum rnic_stag_status rnic_mem_place(const struct rnic_dma *dma,
                                     const struct rnic_mem_ref *ref,
                                     const void *buf)
{
    return mem_copy(dma, ref, NULL, buf);
}

enum rnic_stag_status rnic_mem_fetch(const struct rnic_dma *dma,
                                     const struct rnic_mem_ref *ref,
                                     void *buf)
{
    return mem_copy(dma, ref, buf, NULL);
}

/* Maps one contiguous guest range into iov[*n..]. */
static enum rnic_stag_status map_range(const struct rnic_dma *dma,
                                       uint64_t addr, uint64_t len,
                                       bool is_write, struct rnic_mem_iov *iov,
                                       size_t max, size_t *n)
{
    while (len) {
        size_t got = len;
        void *host;

        if (*n == max) {
            return RNIC_STAG_ERR_IOV_FULL;
        }
        host = dma->map(dma->opaque, addr, &got, is_write);
        if (!host) {
            return RNIC_STAG_ERR_DMA;
        }
        got = got < len ? got : len;
        iov[(*n)++] = (struct rnic_mem_iov){ .base = host, .len = got };
        if (got == 0) {
            return RNIC_STAG_ERR_DMA;
        }
        addr += got;
        len -= got;
    }
    return RNIC_STAG_OK;
}

enum rnic_stag_status rnic_mem_map_prefix(const struct rnic_dma *dma,
                                          const struct rnic_mem_ref *ref,
                                          bool is_write,
                                          struct rnic_mem_iov *iov,
                                          size_t max, size_t *n,
                                          uint64_t *mapped)
{
    uint64_t off = ref->to - ref->mr->base_to;
    uint64_t left = ref->len;
    enum rnic_stag_status st = RNIC_STAG_OK;

    *n = 0;
    *mapped = 0;
    if (!dma->map || !dma->unmap) {
        return RNIC_STAG_ERR_DMA;
    }
    while (left && st == RNIC_STAG_OK) {
        uint64_t addr;
        uint64_t chunk = mr_chunk(ref->mr, off, left, &addr);

        st = map_range(dma, addr, chunk, is_write, iov, max, n);
        off += chunk;
        left -= chunk;
    }
    if (st != RNIC_STAG_OK && st != RNIC_STAG_ERR_IOV_FULL) {
        rnic_mem_unmap(dma, iov, *n, is_write, 0);
        *n = 0;
    }
    for (size_t i = 0; i < *n; i++) {
        *mapped += iov[i].len;
    }
    return st;
}

enum rnic_stag_status rnic_mem_map(const struct rnic_dma *dma,
                                   const struct rnic_mem_ref *ref,
                                   bool is_write, struct rnic_mem_iov *iov,
                                   size_t max, size_t *n)
{
    uint64_t mapped;
    enum rnic_stag_status st = rnic_mem_map_prefix(dma, ref, is_write, iov,
                                                   max, n, &mapped);

    if (st != RNIC_STAG_OK) {
        rnic_mem_unmap(dma, iov, *n, is_write, 0);
        *n = 0;
    }
    return st;
}

void rnic_mem_unmap(const struct rnic_dma *dma, const struct rnic_mem_iov *iov,
                    size_t n, bool is_write, size_t written)
{
    for (size_t i = 0; i < n; i++) {
        size_t w = written < iov[i].len ? written : iov[i].len;

        dma->unmap(dma->opaque, iov[i].base, iov[i].len, is_write, w);
        written -= w;
    }
}
