/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include "memdma.h"

bool memdma_has(const struct memdma *m, uint64_t addr, size_t len)
{
    return addr >= m->base && addr - m->base <= m->size &&
           len <= m->size - (addr - m->base);
}

uint8_t *memdma_ptr(const struct memdma *m, uint64_t addr)
{
    ck_assert(memdma_has(m, addr, 0));
    return m->mem + (addr - m->base);
}

static int memdma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    struct memdma *m = opaque;

    if (!memdma_has(m, addr, len)) {
        m->faults++;
        return -1;
    }
    memcpy(buf, m->mem + (addr - m->base), len);
    return 0;
}

static int memdma_write(void *opaque, uint64_t addr, const void *buf,
                        size_t len)
{
    struct memdma *m = opaque;

    if (!memdma_has(m, addr, len)) {
        m->faults++;
        return -1;
    }
    memcpy(m->mem + (addr - m->base), buf, len);
    return 0;
}

static void *memdma_map(void *opaque, uint64_t addr, size_t *len,
                        bool is_write)
{
    struct memdma *m = opaque;
    size_t avail;

    (void)is_write;
    if (!m->can_map || !memdma_has(m, addr, 1)) {
        return NULL;
    }
    avail = m->size - (addr - m->base);
    if (*len > avail) {
        *len = avail;
    }
    if (m->map_limit && *len > m->map_limit) {
        *len = m->map_limit;
    }
    m->mapped++;
    m->maps++;
    return m->mem + (addr - m->base);
}

static void memdma_unmap(void *opaque, void *host, size_t len, bool is_write,
                         size_t written)
{
    struct memdma *m = opaque;
    uint8_t *p = host;

    (void)is_write;
    ck_assert(p >= m->mem && len <= m->size - (size_t)(p - m->mem));
    /* Never more than a map handed out. */
    ck_assert(!m->map_limit || len <= m->map_limit);
    ck_assert_uint_le(written, len);
    m->mapped--;
}

void memdma_init(struct memdma *m, uint64_t base, size_t size)
{
    *m = (struct memdma) {
        .mem = calloc(1, size), .base = base, .size = size, .can_map = true,
    };
    ck_assert_ptr_nonnull(m->mem);
    m->dma = (struct rnic_dma) {
        .opaque = m, .read = memdma_read, .write = memdma_write,
        .map = memdma_map, .unmap = memdma_unmap,
    };
}

void memdma_free(struct memdma *m)
{
    free(m->mem);
    m->mem = NULL;
}
