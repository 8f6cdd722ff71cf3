/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * BAR 0 of rnic: identification, control, the command and event rings and
 * the doorbells; BAR 4: the doorbell pages a driver maps into processes
 * (layout: include/rnic/rnic-abi.h, docs/spec.md).
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "rnic.h"
#include "trace.h"


static void rnic_guest_error(uint64_t addr, uint64_t val, const char *why)
{
    qemu_log_mask(LOG_GUEST_ERROR, "rnic: register 0x%03" PRIx64
                  " value 0x%" PRIx64 ": %s\n", addr, val, why);
    trace_rnic_ub_reg(addr, val, why);
}

static void rnic_set_control(RnicState *s, uint32_t val)
{
    if (val & RNIC_CONTROL_RESET) {
        rnic_soft_reset(s);
        return;
    }
    if (!(val & RNIC_CONTROL_ENABLE)) {
        s->control = 0;
        s->status &= ~RNIC_STATUS_READY;
        return;
    }
    if (!rnic_ring_ok(s->cmdq.base, s->cmdq.log_size, RNIC_ADMIN_LOG_MAX) ||
        !rnic_ring_ok(s->eq.base, s->eq.log_size, RNIC_ADMIN_LOG_MAX)) {
        rnic_guest_error(RNIC_REG_CONTROL, val,
                         "enable refused: CMDQ_BASE or EQ_BASE is 0 or not "
                         "4 KiB aligned, or CMDQ_LOG_SIZE or EQ_LOG_SIZE "
                         "is not 1..12");
        return;
    }
    s->cmdq.entry_size = RNIC_CMD_SIZE;
    s->eq.entry_size = RNIC_EVENT_SIZE;
    s->control = RNIC_CONTROL_ENABLE;
    s->status |= RNIC_STATUS_READY;
    trace_rnic_enable(s->cmdq.base, s->cmdq.log_size, s->eq.base,
                      s->eq.log_size);
}

/* Ring geometry may change only while the device is disabled. */
static void rnic_ring_reg_write(RnicState *s, hwaddr addr, uint32_t val)
{
    RnicRing *r = addr < RNIC_REG_EQ_BASE_LO ? &s->cmdq : &s->eq;
    hwaddr reg = addr < RNIC_REG_EQ_BASE_LO ? addr - RNIC_REG_CMDQ_BASE_LO
                                            : addr - RNIC_REG_EQ_BASE_LO;

    if (s->status & RNIC_STATUS_READY) {
        rnic_guest_error(addr, val, "ring registers are fixed while enabled");
        return;
    }
    switch (reg) {
    case 0:
        r->base = deposit64(r->base, 0, 32, val);
        break;
    case 4:
        r->base = deposit64(r->base, 32, 32, val);
        break;
    case 8:
        r->log_size = val;
        break;
    }
}

static uint64_t rnic_reg_load(RnicState *s, hwaddr addr)
{
    uint64_t val = 0;

    switch (addr) {
    case RNIC_REG_ID:
        val = RNIC_ID_MAGIC;
        break;
    case RNIC_REG_VERSION:
        val = RNIC_VERSION_VALUE;
        break;
    case RNIC_REG_SCRATCH:
        val = s->scratch;
        break;
    case RNIC_REG_STATUS:
        val = s->status;
        break;
    case RNIC_REG_CONTROL:
        val = s->control;
        break;
    case RNIC_REG_CMDQ_BASE_LO:
        val = (uint32_t)s->cmdq.base;
        break;
    case RNIC_REG_CMDQ_BASE_HI:
        val = s->cmdq.base >> 32;
        break;
    case RNIC_REG_CMDQ_LOG_SIZE:
        val = s->cmdq.log_size;
        break;
    case RNIC_REG_CMDQ_CONS:
        val = s->cmdq.cons;
        break;
    case RNIC_REG_EQ_BASE_LO:
        val = (uint32_t)s->eq.base;
        break;
    case RNIC_REG_EQ_BASE_HI:
        val = s->eq.base >> 32;
        break;
    case RNIC_REG_EQ_LOG_SIZE:
        val = s->eq.log_size;
        break;
    case RNIC_REG_EQ_CONS:
        val = s->eq.cons;
        break;
    case RNIC_REG_EQ_PROD:
        val = s->eq.prod;
        break;
    default:
        rnic_guest_error(addr, 0, "read of a write-only or unknown "
                         "register returns 0");
        break;
    }
    trace_rnic_reg_read(addr, val);
    return val;
}

static void rnic_reg_store(RnicState *s, hwaddr addr, uint64_t val)
{
    trace_rnic_reg_write(addr, val);
    switch (addr) {
    case RNIC_REG_SCRATCH:
        s->scratch = val;
        return;
    case RNIC_REG_CONTROL:
        rnic_set_control(s, val);
        return;
    case RNIC_REG_CMDQ_PROD:
        if (!(s->status & RNIC_STATUS_READY)) {
            rnic_guest_error(addr, val, "command doorbell while disabled "
                             "ignored");
            return;
        }
        /* A bad write is dropped alone: commands posted before it stand. */
        if ((uint32_t)val - s->cmdq.cons > rnic_ring_entries(&s->cmdq)) {
            rnic_guest_error(addr, val, "command producer index more than "
                             "a ring ahead of CMDQ_CONS ignored");
            return;
        }
        s->cmdq.prod = val;
        rnic_cmdq_kick(s);
        return;
    case RNIC_REG_EQ_CONS:
        s->eq.cons = val;
        return;
    case RNIC_REG_DB_SQ ... RNIC_REG_DB_SRQ:
        rnic_wq_doorbell(s, addr, val, 0);
        return;
    case RNIC_REG_CMDQ_BASE_LO ... RNIC_REG_CMDQ_LOG_SIZE:
    case RNIC_REG_EQ_BASE_LO ... RNIC_REG_EQ_LOG_SIZE:
        rnic_ring_reg_write(s, addr, val);
        return;
    case RNIC_REG_ID:
    case RNIC_REG_VERSION:
    case RNIC_REG_STATUS:
    case RNIC_REG_CMDQ_CONS:
    case RNIC_REG_EQ_PROD:
        rnic_guest_error(addr, val, "write to a read-only register ignored");
        return;
    default:
        rnic_guest_error(addr, val, "write to an unknown register ignored");
        return;
    }
}

/*
 * A register access only schedules work (CQs, too, go out in the BH), and
 * schedules it once the device lock is dropped: woken while the vCPU
 * still held the lock, an IOThread would block on it at once and hand the
 * core back and forth twice per doorbell.
 */
static void rnic_mmio_enter(RnicState *s)
{
    assert(!rnic_in_iothread(s));   /* rnic-thread.c, rule 2 */
    rnic_enter(s);
    s->in_mmio = true;
}

static void rnic_mmio_leave(RnicState *s)
{
    rnic_leave(s);      /* clears in_mmio */
    /* s->wq_bh is stable here: the vCPU holds the BQL. */
    if (qatomic_xchg(&s->wq_kick, false) && s->wq_bh) {
        qemu_bh_schedule(s->wq_bh);
    }
}

static uint64_t rnic_reg_read(void *opaque, hwaddr addr, unsigned size)
{
    RnicState *s = opaque;
    uint64_t val;

    rnic_mmio_enter(s);
    val = rnic_reg_load(s, addr);
    rnic_mmio_leave(s);
    return val;
}

static void rnic_reg_write(void *opaque, hwaddr addr, uint64_t val,
                           unsigned size)
{
    RnicState *s = opaque;

    if (rnic_db_post(s, addr, val, 0)) {
        return;         /* with an IOThread: rnic-db.c */
    }
    rnic_mmio_enter(s);
    rnic_reg_store(s, addr, val);
    rnic_mmio_leave(s);
}

const MemoryRegionOps rnic_reg_ops = {
    .read = rnic_reg_read,
    .write = rnic_reg_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 4 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};

/*
 * BAR 4: page n holds the work-queue and CQ doorbells at their BAR 0
 * offsets, for the queues created with udb n + 1 only (rnic-wq.c checks
 * that, rnic-db.c before it mails one).  Nothing there reads back.
 */
static uint64_t rnic_udb_read(void *opaque, hwaddr addr, unsigned size)
{
    rnic_guest_error(addr, 0, "read of a doorbell page returns 0");
    return 0;
}

static void rnic_udb_write(void *opaque, hwaddr addr, uint64_t val,
                           unsigned size)
{
    RnicState *s = opaque;
    hwaddr reg = addr & (RNIC_UDB_PAGE_SIZE - 1);
    uint16_t udb = addr / RNIC_UDB_PAGE_SIZE + 1;

    if (reg < RNIC_REG_DB_SQ || reg > RNIC_REG_DB_SRQ) {
        rnic_guest_error(addr, val, "write outside a page's doorbells "
                         "ignored");
        return;
    }
    if (rnic_db_post(s, reg, val, udb)) {
        return;
    }
    rnic_mmio_enter(s);
    rnic_wq_doorbell(s, reg, val, udb);
    rnic_mmio_leave(s);
}

const MemoryRegionOps rnic_udb_ops = {
    .read = rnic_udb_read,
    .write = rnic_udb_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 4 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};
