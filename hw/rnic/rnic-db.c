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
 * that reads its doorbell register once after several writes.  A CQ arm
 * is mailed too, to a slot of its own whose arms add up (one for the next
 * completion stays one when a solicited-only arm follows it, as in the
 * core); a CQ's completions take up an arm mailed before them
 * (rnic_wq_cq_arm_early) and, once written, one mailed meanwhile
 * (rnic_wq_cq_arm_late), so that a guest that armed after it found its
 * ring empty is not left asleep.
 *
 * Protocol (no lock): the writer swaps its value into the slot and, only
 * if the slot was empty, sets the pending bit, then the summary bit of
 * the pending bit's word, and schedules the bottom half; the drainer
 * clears a word of summary bits, then each word of pending bits they
 * name, then swaps each of their slots back to empty.  A value swapped in
 * before the drainer's swap is applied by it; one swapped in after finds
 * the slot empty and sets the bits again.  A summary bit the drainer
 * cleared before the writer set its pending bit stays set for the next
 * drain, which then finds no pending bit: nothing is lost and nothing
 * grows.  The summary spares each run of the bottom half a read of every
 * pending word: 1026 of them with the default max-* properties.
 *
 * Doorbell pages (BAR 4) are mapped into processes: one must not
 * be able to overwrite another's pending index.  So a slot remembers the
 * page of its queue (db_owner, set by the commands that create and destroy
 * queues), a doorbell through another page is not mailed but goes the
 * locked way, which refuses and logs it, and the page a value came
 * through travels with it to the check in rnic_wq_db_apply().  A doorbell
 * that races the DESTROY of its own queue, between the owner check and
 * the swap, can still land in the slot; CREATE empties a slot, so it
 * reaches no later queue of that number (QP numbers also wait out a
 * timewait before reuse).
 */
#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/bitops.h"
#include "qemu/main-loop.h"
#include "rnic.h"
#include "trace.h"

/* A slot holds index | FULL | udb << RNIC_DB_UDB_SHIFT */
#define RNIC_DB_FULL (1u << 16)
#define RNIC_DB_UDB_SHIFT 17
QEMU_BUILD_BUG_ON(RNIC_UDB_PAGES_MAX >= 1u << (32 - RNIC_DB_UDB_SHIFT));

/* The mailbox: the slots of every SQ, then RQ, CQ, SRQ and CQ arm, by id. */
#define RNIC_DB_KINDS 5
static const hwaddr rnic_db_regs[RNIC_DB_KINDS] = {
    RNIC_REG_DB_SQ, RNIC_REG_DB_RQ, RNIC_REG_DB_CQ, RNIC_REG_DB_SRQ,
    RNIC_REG_DB_CQ_ARM,
};

static void rnic_db_counts(RnicState *s, int64_t n[RNIC_DB_KINDS])
{
    n[0] = n[1] = s->params.limits.max_qp + 1ll;
    n[2] = n[4] = s->params.limits.max_cq + 1ll;
    n[3] = s->params.limits.max_srq + 1ll;
}

/*
 * The slot of (register, id), or -1 for the locked path: another
 * register, or an id past the max-* properties.
 */
static int64_t rnic_db_slot(RnicState *s, hwaddr reg, uint32_t id)
{
    int64_t n[RNIC_DB_KINDS], base = 0;

    rnic_db_counts(s, n);
    for (int i = 0; i < RNIC_DB_KINDS; base += n[i++]) {
        if (reg == rnic_db_regs[i]) {
            return id < n[i] ? base + id : -1;
        }
    }
    return -1;
}

static hwaddr rnic_db_of_slot(RnicState *s, int64_t slot, uint32_t *id)
{
    int64_t n[RNIC_DB_KINDS];
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
    int64_t n[RNIC_DB_KINDS];

    if (!s->ctx) {
        return;                 /* the BQL serialises; no mailbox */
    }
    rnic_db_counts(s, n);
    s->db_slots = n[0] + n[1] + n[2] + n[3] + n[4];
    s->db_mail = g_new0(uint32_t, s->db_slots);
    s->db_owner = g_new0(uint16_t, s->db_slots);
    s->db_pending = bitmap_new(s->db_slots);
    s->db_summary = bitmap_new(BITS_TO_LONGS(s->db_slots));
}

void rnic_db_fini(RnicState *s)
{
    g_free(s->db_mail);
    g_free(s->db_owner);
    g_free(s->db_pending);
    g_free(s->db_summary);
    s->db_mail = NULL;
    s->db_owner = NULL;
    s->db_pending = NULL;
    s->db_summary = NULL;
}

/*
 * A vCPU, with the BQL, without the device lock: false if not mailed.
 * udb: the doorbell page + 1 the value came through, 0 for BAR 0.
 */
bool rnic_db_post(RnicState *s, hwaddr reg, uint32_t val, uint16_t udb)
{
    uint32_t v = RNIC_DB_INDEX(val) | RNIC_DB_FULL | udb << RNIC_DB_UDB_SHIFT;
    int64_t slot;

    if (!s->db_mail) {
        return false;           /* no IOThread, or torn down with wq_bh */
    }
    slot = rnic_db_slot(s, reg, RNIC_DB_ID(val));
    if (slot < 0 || (udb && qatomic_read(&s->db_owner[slot]) != udb)) {
        return false;
    }
    trace_rnic_doorbell(reg, RNIC_DB_ID(val), RNIC_DB_INDEX(val));
    if (!(reg == RNIC_REG_DB_CQ_ARM ? qatomic_fetch_or(&s->db_mail[slot], v)
                                    : qatomic_xchg(&s->db_mail[slot], v))) {
        uint64_t w = BIT_WORD(slot);

        qatomic_or(&s->db_pending[w], BIT_MASK(slot));
        qatomic_or(&s->db_summary[BIT_WORD(w)], BIT_MASK(w));
        qemu_bh_schedule(s->wq_bh);
    }
    return true;
}

/*
 * Under the lock, from CREATE and DESTROY of a queue: which page may mail
 * its doorbells, and nothing mailed for an earlier queue of that id.
 */
void rnic_db_own(RnicState *s, hwaddr reg, uint32_t id, uint16_t udb)
{
    int64_t slot = s->db_mail ? rnic_db_slot(s, reg, id) : -1;

    if (slot >= 0) {
        qatomic_set(&s->db_owner[slot], udb);
        qatomic_set(&s->db_mail[slot], 0);
    }
}

/* A slot's value @v as the doorbell it stands for and the page it used. */
static void rnic_db_decode(uint32_t id, uint32_t v, uint32_t *val,
                           uint16_t *udb)
{
    *val = RNIC_DB_VALUE(id, v & (RNIC_DB_FULL - 1));
    *udb = v >> RNIC_DB_UDB_SHIFT;
}

/* A slot's value @v, taken from the mailbox, applied. */
static void rnic_db_apply_mail(RnicState *s, hwaddr reg, uint32_t id,
                               uint32_t v)
{
    uint32_t val;
    uint16_t udb;

    rnic_db_decode(id, v, &val, &udb);
    rnic_wq_db_apply(s, reg, val, udb);
}

/*
 * The IOThread, under the lock: what is mailed for one queue, taken ahead
 * of the drain: true if there was a doorbell, its value in *@val and the
 * page it came through in *@udb.  Its pending bit stays; the drain finds
 * the slot empty.
 */
bool rnic_db_take_value(RnicState *s, hwaddr reg, uint32_t id,
                        uint32_t *val, uint16_t *udb)
{
    int64_t slot = s->db_mail ? rnic_db_slot(s, reg, id) : -1;
    uint32_t v = 0;

    /* A plain read first: most slots are empty, a swap is not free. */
    if (slot >= 0 && qatomic_read(&s->db_mail[slot])) {
        v = qatomic_xchg(&s->db_mail[slot], 0);
    }
    rnic_db_decode(id, v, val, udb);
    return v;
}

/* The same, applied. */
void rnic_db_take(RnicState *s, hwaddr reg, uint32_t id)
{
    uint32_t val;
    uint16_t udb;

    if (rnic_db_take_value(s, reg, id, &val, &udb)) {
        rnic_wq_db_apply(s, reg, val, udb);
    }
}

/* The IOThread, under the lock: the mailed indexes of one pending word. */
static void rnic_db_drain_word(RnicState *s, uint64_t w, bool apply)
{
    unsigned long bits = qatomic_xchg(&s->db_pending[w], 0);

    while (bits) {
        uint64_t slot = w * BITS_PER_LONG + ctzl(bits);
        uint32_t v = qatomic_xchg(&s->db_mail[slot], 0);
        uint32_t id;

        bits &= bits - 1;
        if (v && apply) {
            hwaddr reg = rnic_db_of_slot(s, slot, &id);

            rnic_db_apply_mail(s, reg, id, v);
        }
    }
}

/* The IOThread, under the lock: every mailed index, applied or dropped. */
void rnic_db_drain(RnicState *s, bool apply)
{
    if (!s->db_mail) {
        return;
    }
    for (uint64_t sw = 0; sw < BITS_TO_LONGS(BITS_TO_LONGS(s->db_slots));
         sw++) {
        unsigned long words;

        /* A plain read first: most words are empty, a swap is not free. */
        if (!qatomic_read(&s->db_summary[sw])) {
            continue;
        }
        words = qatomic_xchg(&s->db_summary[sw], 0);
        while (words) {
            rnic_db_drain_word(s, sw * BITS_PER_LONG + ctzl(words), apply);
            words &= words - 1;
        }
    }
}
