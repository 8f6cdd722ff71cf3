/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the device does on the PCI bus: DMA into guest memory and MSI-X
 * messages.  A leaf: nothing here calls back into the rest of the device.
 *
 * Every address used here comes from the guest.  Three rules keep that
 * safe: once the device is unplugged nothing touches the bus (its address
 * space is being freed); zero-copy mappings are only taken of RAM, so a
 * write aimed at MMIO goes through the copy path and fails visibly instead
 * of vanishing in a bounce buffer; and an MSI-X message aimed at the
 * device's own BARs is refused before it is sent (the re-entrancy guard,
 * rnic-entry.c, refuses any other DMA into them).
 *
 * With an IOThread (rnic-thread.c) nothing here may take the BQL, which
 * the main thread can hold while it waits for the IOThread (reset,
 * unplug): DMA then reaches RAM only, by mapping (an access to MMIO
 * would take the BQL, and is refused as a guest error instead), and an
 * MSI-X message is left to the main loop (rnic_irq_bh), as virtio
 * dataplane without KVM's irqfd leaves it to the main loop's handler of
 * its guest notifier.  A CQE written before its interrupt is in RAM
 * before the main loop sends the message.
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/rcu.h"
#include "exec/memory.h"
#include "hw/pci/msi.h"
#include "hw/pci/msix.h"
#include "rnic.h"
#include "trace.h"

static void rnic_dma_refused(RnicState *s, const char *dir, uint64_t addr,
                             size_t len)
{
    if (s->unplugged) {
        return;     /* the guest has no device to be told about */
    }
    qemu_log_mask(LOG_GUEST_ERROR, "rnic: DMA %s of %zu bytes at 0x%" PRIx64
                  " failed: not RAM, bus mastering off, or the device's own "
                  "registers\n", dir, len, addr);
    trace_rnic_ub_dma(dir, addr, len);
}

static void *rnic_dma_map_cb(void *opaque, uint64_t addr, size_t *len,
                             bool is_write);
static void rnic_dma_unmap_cb(void *opaque, void *host, size_t len,
                              bool is_write, size_t written);

static DMADirection rnic_dma_dir(bool is_write)
{
    return is_write ? DMA_DIRECTION_FROM_DEVICE : DMA_DIRECTION_TO_DEVICE;
}

/* IOThread: a copy through RAM mappings only; nonzero if not all RAM. */
static int rnic_ram_copy_mapped(RnicState *s, uint64_t addr, void *buf,
                                size_t len, bool is_write)
{
    while (len) {
        size_t l = len;
        void *p = rnic_dma_map_cb(s, addr, &l, is_write);

        if (!p) {
            return -1;
        }
        if (is_write) {
            memcpy(p, buf, l);
        } else {
            memcpy(buf, p, l);
        }
        rnic_dma_unmap_cb(s, p, l, is_write, is_write ? l : 0);
        addr += l;
        buf = (uint8_t *)buf + l;
        len -= l;
    }
    return 0;
}

/*
 * Not through the cache: the main loop may reach any memory (the
 * re-entrancy guard refuses its own BARs), the IOThread RAM only.
 */
static int rnic_dma_slow(RnicState *s, uint64_t addr, void *buf, size_t len,
                         bool is_write)
{
    if (s->ctx) {
        return rnic_ram_copy_mapped(s, addr, buf, len, is_write);
    }
    return dma_memory_rw(s->dma_as, addr, buf, len, rnic_dma_dir(is_write),
                         MEMTXATTRS_UNSPECIFIED) == MEMTX_OK ? 0 : -1;
}

/*
 * Guest RAM through one MemoryRegionCache, made at the first copy of an
 * entry into the device (rnic-entry.c) from that address to the end of
 * its RAM section, and dropped when the entry ends, so it holds its
 * references for one bounded run.  A map and unmap per WQE, CQE and run
 * of placed pages cost the IOThread up to a tenth of its time
 * (translation, references, and finding the RAM block again from the
 * host pointer); a hit costs a range check and a pointer compare.  The
 * cache is good while the address space's flat view is the one it was
 * made from (every topology change makes a new one, and the cache's
 * reference keeps the old one from being reused).  One translation
 * decides RAM or not, as with a map; the rest goes the slow way.  The
 * cache only ever holds RAM, so ram.ptr is set whenever ram_live is.
 */
#define RNIC_RAM_SPAN (1ull << 40)

void rnic_ram_drop(RnicState *s)
{
    if (s->ram_live) {
        address_space_cache_destroy(&s->ram);
        s->ram_live = false;
    }
}

/* A miss that is not RAM leaves the cache as it is: the next hit checks. */
static uint8_t *rnic_ram_at(RnicState *s, uint64_t addr, size_t *len)
{
    uint64_t off = addr - s->ram_base;
    MemoryRegionCache c;

    if (!s->ram_live || off >= s->ram.len ||
        address_space_to_flatview(s->dma_as) != s->ram.fv) {
        if (!rnic_inside(s)) {
            return NULL;        /* no entry of ours would drop it */
        }
        address_space_cache_init(&c, s->dma_as, addr, RNIC_RAM_SPAN, true);
        if (!c.ptr) {
            address_space_cache_destroy(&c);
            return NULL;
        }
        rnic_ram_drop(s);
        s->ram = c;
        s->ram_live = true;
        s->ram_base = addr;
        off = 0;
    }
    *len = MIN(*len, s->ram.len - off);
    return s->ram.ptr + off;
}

static int rnic_dma_copy(RnicState *s, uint64_t addr, void *buf, size_t len,
                         bool is_write)
{
    /*
     * Ordered after every earlier access, as dma_memory_rw() orders them:
     * a CQE must not be seen before the data it announces, also on hosts
     * that reorder stores.
     */
    smp_mb();
    while (len) {
        size_t l = len;
        uint8_t *p;

        if (qatomic_read(&s->unplugged)) {
            return -1;
        }
        p = rnic_ram_at(s, addr, &l);
        if (!p) {
            return rnic_dma_slow(s, addr, buf, len, is_write);
        }
        if (is_write) {
            memcpy(p, buf, l);
            address_space_cache_invalidate(&s->ram, addr - s->ram_base, l);
        } else {
            memcpy(buf, p, l);
        }
        addr += l;
        buf = (uint8_t *)buf + l;
        len -= l;
    }
    return 0;
}

int rnic_pci_read(RnicState *s, uint64_t addr, void *buf, size_t len)
{
    if (rnic_dma_copy(s, addr, buf, len, false)) {
        rnic_dma_refused(s, "read", addr, len);
        return -1;
    }
    return 0;
}

int rnic_pci_write(RnicState *s, uint64_t addr, const void *buf, size_t len)
{
    if (rnic_dma_copy(s, addr, (void *)buf, len, true)) {
        rnic_dma_refused(s, "write", addr, len);
        return -1;
    }
    return 0;
}

/* ---- DMA for the protocol core (core/iwarp/dma.h) ---- */

static int rnic_dma_read_cb(void *opaque, uint64_t addr, void *buf,
                            size_t len)
{
    return rnic_pci_read(opaque, addr, buf, len);
}

static int rnic_dma_write_cb(void *opaque, uint64_t addr, const void *buf,
                             size_t len)
{
    return rnic_pci_write(opaque, addr, buf, len);
}

static bool rnic_dma_is_ram(RnicState *s, uint64_t addr, bool is_write)
{
    MemTxAttrs attrs = MEMTXATTRS_UNSPECIFIED;
    hwaddr xlat, len = 1;
    MemoryRegion *mr;

    RCU_READ_LOCK_GUARD();
    mr = address_space_translate(s->dma_as, addr, &xlat, &len, is_write,
                                 attrs);
    return memory_access_is_direct(mr, is_write, attrs);
}

/*
 * IOThread: one translation, RAM or nothing.  A check followed by
 * dma_memory_map() would translate twice, and if the guest remapped memory
 * in between, map would fall back to a bounce buffer whose MMIO access
 * takes the BQL.  The unmap callback releases what this takes.
 */
static void *rnic_ram_map(RnicState *s, uint64_t addr, size_t *len,
                          bool is_write)
{
    MemTxAttrs attrs = MEMTXATTRS_UNSPECIFIED;
    hwaddr xlat, l = *len;
    MemoryRegion *mr;

    *len = 0;
    if (qatomic_read(&s->unplugged)) {
        return NULL;
    }
    RCU_READ_LOCK_GUARD();
    mr = address_space_translate(s->dma_as, addr, &xlat, &l, is_write,
                                 attrs);
    if (!l || !memory_access_is_direct(mr, is_write, attrs)) {
        return NULL;
    }
    memory_region_ref(mr);
    *len = l;
    return qemu_map_ram_ptr(mr->ram_block, xlat);
}

static void *rnic_dma_map_cb(void *opaque, uint64_t addr, size_t *len,
                             bool is_write)
{
    RnicState *s = opaque;
    dma_addr_t l = *len;
    void *p = NULL;

    if (s->ctx) {
        return rnic_ram_map(s, addr, len, is_write);
    }
    if (!s->unplugged && rnic_dma_is_ram(s, addr, is_write)) {
        p = dma_memory_map(s->dma_as, addr, &l, rnic_dma_dir(is_write),
                           MEMTXATTRS_UNSPECIFIED);
    }
    *len = p ? l : 0;
    return p;
}

static void rnic_dma_unmap_cb(void *opaque, void *host, size_t len,
                              bool is_write, size_t written)
{
    RnicState *s = opaque;

    dma_memory_unmap(s->dma_as, host, len, rnic_dma_dir(is_write), written);
}

void rnic_dma_init(RnicState *s)
{
    s->dma_as = pci_get_address_space(PCI_DEVICE(s));
    s->dma = (struct rnic_dma) {
        .opaque = s,
        .read = rnic_dma_read_cb,
        .write = rnic_dma_write_cb,
        .map = rnic_dma_map_cb,
        .unmap = rnic_dma_unmap_cb,
    };
}

/* ---- MSI-X ---- */

static bool rnic_hits_own_bar(PCIDevice *pdev, uint64_t addr)
{
    for (int bar = 0; bar < PCI_NUM_REGIONS; bar++) {
        pcibus_t base = pci_get_bar_addr(pdev, bar);
        pcibus_t size = pdev->io_regions[bar].size;

        if (size && base != PCI_BAR_UNMAPPED && addr - base < size) {
            return true;
        }
    }
    return false;
}

static void rnic_irq_send(RnicState *s, unsigned vector)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    MSIMessage msg;

    if (s->unplugged || !msix_enabled(pdev)) {
        return;
    }
    msg = msix_get_message(pdev, vector);
    if (!msix_is_masked(pdev, vector) &&
        rnic_hits_own_bar(pdev, msg.address)) {
        qemu_log_mask(LOG_GUEST_ERROR, "rnic: MSI-X vector %u points at the "
                      "device's own BAR (0x%" PRIx64 "); message not sent\n",
                      vector, msg.address);
        trace_rnic_ub_msix_target(vector, msg.address);
        return;
    }
    trace_rnic_irq(vector);
    msix_notify(pdev, vector);
}

/* From the IOThread: the main loop sends it, under the BQL. */
void rnic_irq(RnicState *s, unsigned vector)
{
    if (s->ctx && !bql_locked()) {
        qatomic_or(&s->irq_mask, 1u << vector);
        qemu_bh_schedule(s->irq_bh);
        return;
    }
    rnic_irq_send(s, vector);
}

void rnic_irq_bh(void *opaque)
{
    RnicState *s = opaque;
    uint32_t mask = qatomic_xchg(&s->irq_mask, 0);

    for (unsigned v = 0; mask; v++, mask >>= 1) {
        if (mask & 1) {
            rnic_irq_send(s, v);
        }
    }
}
