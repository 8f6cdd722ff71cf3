/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test support: "guest memory" as one plain buffer at a chosen guest
 * address, behind the callbacks of core/iwarp/dma.h.  Every access outside the
 * buffer is refused and counted, so a placement computed wrongly fails or
 * shows in a byte-exact comparison instead of landing quietly elsewhere.
 */
#ifndef RNIC_TEST_MEMDMA_H
#define RNIC_TEST_MEMDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "iwarp/dma.h"

struct memdma {
    uint8_t *mem;
    uint64_t base;                  /* guest address of mem[0] */
    size_t size;
    bool can_map;                   /* offer zero-copy maps */
    size_t map_limit;               /* 0: map as much as asked */
    int mapped;                     /* maps not yet unmapped */
    unsigned maps;
    unsigned faults;                /* accesses refused */
    struct rnic_dma dma;            /* callbacks with opaque = this */
};

/* Allocates @size zeroed bytes at guest address @base; aborts on failure. */
void memdma_init(struct memdma *m, uint64_t base, size_t size);
void memdma_free(struct memdma *m);

bool memdma_has(const struct memdma *m, uint64_t addr, size_t len);
/* Host pointer of guest address @addr, which must be inside. */
uint8_t *memdma_ptr(const struct memdma *m, uint64_t addr);

#endif /* RNIC_TEST_MEMDMA_H */
