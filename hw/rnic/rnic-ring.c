/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Guest rings, one type for all of them (a leaf: calls only the bus).
 * The command and event queues, CQs, SQs, RQs and SRQs are each
 * 2^log_size entries at a 4 KiB aligned base; the device counts entries
 * free-running in 32 bits, and widens the 16-bit indices of doorbells
 * against its own count, so one check decides "more than a ring ahead".
 */
#include "qemu/osdep.h"
#include "rnic.h"

bool rnic_ring_ok(uint64_t base, uint32_t log_size, uint32_t max_log)
{
    return base && !(base & 0xfff) && log_size >= RNIC_RING_LOG_MIN &&
           log_size <= max_log;
}

void rnic_ring_init(RnicRing *r, uint64_t base, uint32_t log_size,
                    uint32_t entry_size)
{
    *r = (RnicRing) {
        .base = base, .log_size = log_size, .entry_size = entry_size,
    };
}

uint64_t rnic_ring_addr(const RnicRing *r, uint32_t index)
{
    return r->base + (uint64_t)(index & (rnic_ring_entries(r) - 1)) *
           r->entry_size;
}

uint8_t rnic_ring_phase(const RnicRing *r, uint32_t index)
{
    return ((index >> r->log_size) & 1) ^ 1;
}

int rnic_ring_read(RnicState *s, const RnicRing *r, uint32_t index,
                   void *buf)
{
    return rnic_pci_read(s, rnic_ring_addr(r, index), buf, r->entry_size);
}

int rnic_ring_write(RnicState *s, const RnicRing *r, uint32_t index,
                    const void *buf, size_t len, size_t phase_off,
                    size_t phase_len)
{
    uint64_t addr = rnic_ring_addr(r, index);
    const uint8_t *b = buf;
    size_t end = phase_off + phase_len;

    assert(len <= r->entry_size && end <= len);
    /*
     * Each rnic_pci_write() is ordered after the one before, so the part
     * holding the phase, written last, is never seen before the rest.
     */
    if ((phase_off && rnic_pci_write(s, addr, b, phase_off)) ||
        (end < len && rnic_pci_write(s, addr + end, b + end, len - end))) {
        return -1;
    }
    return rnic_pci_write(s, addr + phase_off, b + phase_off, phase_len);
}

bool rnic_ring_db_prod(RnicRing *r, uint16_t idx)
{
    uint16_t ahead = idx - (uint16_t)r->cons;

    if (ahead > rnic_ring_entries(r)) {
        return false;
    }
    r->prod = r->cons + ahead;
    return true;
}

void rnic_ring_db_cons(RnicRing *r, uint16_t idx)
{
    r->cons = r->prod - (uint16_t)((uint16_t)r->prod - idx);
}
