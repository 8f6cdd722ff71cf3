/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How the protocol core reaches "guest memory".
 *
 * The core never dereferences a guest address itself: the QEMU device maps
 * these calls to PCI DMA (honouring bus mastering), the unit tests and the
 * fuzzers to plain buffers.  Every call can fail; the core turns a failure
 * into an error completion or a Terminate, never into a crash.
 */
#ifndef RNIC_DMA_H
#define RNIC_DMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rnic_dma {
    void *opaque;
    /* Copy between guest address @addr and @buf; 0 on success, -1 if any
     * byte of the range is not accessible. */
    int (*read)(void *opaque, uint64_t addr, void *buf, size_t len);
    int (*write)(void *opaque, uint64_t addr, const void *buf, size_t len);
    /*
     * Zero-copy access for the bulk paths (optional: NULL means "copy
     * only").  Maps at most *len bytes at @addr, sets *len to the length
     * actually mapped (it may be shorter, e.g. at a RAM block boundary) and
     * returns the host pointer, or NULL when nothing can be mapped.  Every
     * successful map is paired with one unmap; @written says how many bytes
     * were stored through a writable mapping.
     */
    void *(*map)(void *opaque, uint64_t addr, size_t *len, bool is_write);
    void (*unmap)(void *opaque, void *host, size_t len, bool is_write,
                  size_t written);
};

static inline int rnic_dma_read(const struct rnic_dma *d, uint64_t addr,
                                void *buf, size_t len)
{
    return d->read(d->opaque, addr, buf, len);
}

static inline int rnic_dma_write(const struct rnic_dma *d, uint64_t addr,
                                 const void *buf, size_t len)
{
    return d->write(d->opaque, addr, buf, len);
}

#endif /* RNIC_DMA_H */
