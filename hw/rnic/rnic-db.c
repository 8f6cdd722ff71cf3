/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Doorbells without the device lock, with an IOThread.  A vCPU that took
 * the device lock for a doorbell waited whenever the IOThread was placing
 * or sending (it holds the lock for a whole run), and on two host cores
 * every such wait was a context switch of the vCPU (perf sched: a quarter
 * of them, in ib_write_bw between two guests).  So a work-queue or CQ
 * doorbell only leaves its index in a mailbox: one slot per queue, sized
 * by the max-* properties, and one pending bit per slot.  The IOThread
 * drains the mailbox at the start of each work-queue run, under the lock,
 * and applies each index as the doorbell would have (rnic-wq.c checks it
 * there).  Indexes are absolute, so a newer one written before the drain
 * replaces the older: the device acts on the latest, as a hardware RNIC
 * that reads its doorbell register once after several writes.
 *
 * Protocol (no lock): the writer swaps its value into the slot and, only
 * if the slot was empty, sets the pending bit and schedules the bottom
 * half; the drainer clears a word of pending bits, then swaps each of
 * their slots back to empty.  A value swapped in before the drainer's
 * swap is applied by it; one swapped in after finds the slot empty and
 * sets the bit again.  Nothing is lost and nothing grows.
 */
#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/bitops.h"
#include "qemu/main-loop.h"
#include "rnic.h"
#include "trace.h"

#define RNIC_DB_FULL (1u << 16)     /* a slot holds index | FULL */

/* The mailbox: the slots of every SQ, then RQ, CQ and SRQ, by id. */
static const hwaddr rnic_db_regs[] = {
    RNIC_REG_DB_SQ, RNIC_REG_DB_RQ, RNIC_REG_DB_CQ, RNIC_REG_DB_SRQ,
};

static void rnic_db_counts(RnicState *s, int64_t n[4])
{
    n[0] = n[1] = s->limits.max_qp + 1ll;
    n[2] = s->limits.max_cq + 1ll;
    n[3] = s->limits.max_srq + 1ll;
}

/* The slot of (register, id), or -1 for the locked path (CQ_ARM, ...). */
static int64_t rnic_db_slot(RnicState *s, hwaddr reg, uint32_t id)
{
    int64_t n[4], base = 0;

    rnic_db_counts(s, n);
    for (int i = 0; i < 4; base += n[i++]) {
        if (reg == rnic_db_regs[i]) {
            return id < n[i] ? base + id : -1;
        }
    }
    return -1;
}

static hwaddr rnic_db_of_slot(RnicState *s, int64_t slot, uint32_t *id)
{
    int64_t n[4];
    int i = 0;

    rnic_db_counts(s, n);
    while (slot >= n[i]) {
        slot -= n[i++];
    }
    *id = slot;
    return rnic_db_regs[i];
}

void rnic_db_init(RnicState *s)
{
    int64_t n[4];

    if (!s->ctx) {
        return;                 /* the BQL serialises; no mailbox */
    }
    rnic_db_counts(s, n);
    s->db_slots = n[0] + n[1] + n[2] + n[3];
    s->db_mail = g_new0(uint32_t, s->db_slots);
    s->db_pending = bitmap_new(s->db_slots);
}

void rnic_db_fini(RnicState *s)
{
    g_free(s->db_mail);
    g_free(s->db_pending);
    s->db_mail = NULL;
    s->db_pending = NULL;
}

/* A vCPU, with the BQL, without the device lock: false if not mailed. */
bool rnic_db_post(RnicState *s, hwaddr reg, uint32_t val)
{
    int64_t slot;

    if (!s->db_mail) {
        return false;           /* no IOThread, or torn down with wq_bh */
    }
    slot = rnic_db_slot(s, reg, RNIC_DB_ID(val));
    if (slot < 0) {
        return false;
    }
    trace_rnic_doorbell(reg, RNIC_DB_ID(val), RNIC_DB_INDEX(val));
    if (!qatomic_xchg(&s->db_mail[slot], RNIC_DB_INDEX(val) | RNIC_DB_FULL)) {
        qatomic_or(&s->db_pending[BIT_WORD(slot)], BIT_MASK(slot));
        qemu_bh_schedule(s->wq_bh);
    }
    return true;
}

/* The IOThread, under the lock: every mailed index, applied or dropped. */
void rnic_db_drain(RnicState *s, bool apply)
{
    if (!s->db_mail) {
        return;
    }
    for (uint64_t w = 0; w < BITS_TO_LONGS(s->db_slots); w++) {
        unsigned long bits;

        /* A plain read first: most words are empty, a swap is not free. */
        if (!qatomic_read(&s->db_pending[w])) {
            continue;
        }
        bits = qatomic_xchg(&s->db_pending[w], 0);
        while (bits) {
            uint64_t slot = w * BITS_PER_LONG + ctzl(bits);
            uint32_t v = qatomic_xchg(&s->db_mail[slot], 0);
            hwaddr reg;
            uint32_t id;

            bits &= bits - 1;
            if (v && apply) {
                reg = rnic_db_of_slot(s, slot, &id);
                rnic_wq_db_apply(s, reg, RNIC_DB_VALUE(id, v & 0xffff));
            }
        }
    }
}
