/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command queue: descriptors fetched by DMA, executed in order in a
 * bottom half (never on the vCPU that rang the doorbell), results written
 * back into the same slot with the status last.
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/units.h"
#include "rnic.h"
#include "trace.h"


/*
 * Per bottom-half run: at most this many commands, and no further command
 * once this many page-list bytes were copied (one REG_MR of 2^20 pages,
 * 8 MiB, then runs alone).  Measured: 64 small commands take well under a
 * millisecond; an 8 MiB page list some tens of milliseconds.
 */
#define RNIC_CMDQ_BUDGET        64
#define RNIC_CMDQ_BUDGET_BYTES  (1 * MiB)

typedef struct RnicCmdDesc {
    const char *name;
    RnicCmdFn *fn;
} RnicCmdDesc;

static uint16_t rnic_cmd_query_device(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_query_device *in = (void *)cmd->u.raw;
    struct rnic_device_attr attr = {
        .abi_version = cpu_to_le32(RNIC_VERSION_VALUE),
        .max_pd = cpu_to_le32(s->limits.max_pd),
        .max_mr = cpu_to_le32(s->limits.max_mr),
        .max_mw = cpu_to_le32(s->limits.max_mw),
        .max_cq = cpu_to_le32(s->limits.max_cq),
        .max_cqe = cpu_to_le32(s->limits.max_cqe),
        .max_qp = cpu_to_le32(s->limits.max_qp),
        .max_qp_wr = cpu_to_le32(s->limits.max_qp_wr),
        .max_srq = cpu_to_le32(s->limits.max_srq),
        .max_srq_wr = cpu_to_le32(s->limits.max_srq_wr),
        .max_sge = cpu_to_le32(RNIC_WQE_MAX_SGE),
        .max_ird = cpu_to_le32(s->limits.max_ird),
        .max_ord = cpu_to_le32(s->limits.max_ord),
        .max_pdata = cpu_to_le32(RNIC_MAX_PDATA),
        .max_mr_size = cpu_to_le64(RNIC_DEV_MAX_MR_SIZE),
        .max_page_list_bytes = cpu_to_le64(s->limits.max_page_list_bytes),
        .page_size_cap = cpu_to_le32(MAKE_64BIT_MASK(RNIC_MR_MIN_PAGE_SHIFT,
                                     RNIC_MR_MAX_PAGE_SHIFT -
                                     RNIC_MR_MIN_PAGE_SHIFT + 1)),
        .msix_vectors = cpu_to_le32(RNIC_MSIX_VECTORS),
        .mpa_rev = cpu_to_le32(s->mpa_rev),
        .flags = cpu_to_le32(
            (s->mpa_crc == RNIC_MPA_CRC_REQUIRED ? RNIC_DEV_CRC_REQUIRED : 0) |
            (s->mpa_markers ? RNIC_DEV_MARKERS : 0) |
            (s->stag_one_shot ? RNIC_DEV_STAG_ONE_SHOT : 0) |
            (s->mpa_p2p ? RNIC_DEV_MPA_P2P : 0)),
        .mpa_rtr = s->mpa_rtr,
        .max_fast_reg_pages = cpu_to_le32(RNIC_FAST_REG_MAX_PAGES),
        .udb_pages = cpu_to_le32(s->udb_pages),
    };

    memcpy(attr.mac, s->mac.a, sizeof(attr.mac));
    if (rnic_pci_write(s, le64_to_cpu(in->attr_addr), &attr, sizeof(attr))) {
        return RNIC_CMD_ERR_DMA;
    }
    return RNIC_CMD_OK;
}

static const RnicCmdDesc rnic_cmds[] = {
    [RNIC_CMD_QUERY_DEVICE] = { "QUERY_DEVICE", rnic_cmd_query_device },
    [RNIC_CMD_CREATE_PD] = { "CREATE_PD", rnic_cmd_create_pd },
    [RNIC_CMD_DESTROY_PD] = { "DESTROY_PD", rnic_cmd_destroy_pd },
    [RNIC_CMD_REG_MR] = { "REG_MR", rnic_cmd_reg_mr },
    [RNIC_CMD_DEREG_MR] = { "DEREG_MR", rnic_cmd_dereg_mr },
    [RNIC_CMD_ALLOC_MW] = { "ALLOC_MW", rnic_cmd_alloc_mw },
    [RNIC_CMD_BIND_MW] = { "BIND_MW", rnic_cmd_bind_mw },
    [RNIC_CMD_DEALLOC_MW] = { "DEALLOC_MW", rnic_cmd_dealloc_mw },
    [RNIC_CMD_CREATE_CQ] = { "CREATE_CQ", rnic_cmd_create_cq },
    [RNIC_CMD_DESTROY_CQ] = { "DESTROY_CQ", rnic_cmd_destroy_cq },
    [RNIC_CMD_CREATE_QP] = { "CREATE_QP", rnic_cmd_create_qp },
    [RNIC_CMD_MODIFY_QP] = { "MODIFY_QP", rnic_cmd_modify_qp },
    [RNIC_CMD_QUERY_QP] = { "QUERY_QP", rnic_cmd_query_qp },
    [RNIC_CMD_DESTROY_QP] = { "DESTROY_QP", rnic_cmd_destroy_qp },
    [RNIC_CMD_CREATE_SRQ] = { "CREATE_SRQ", rnic_cmd_create_srq },
    [RNIC_CMD_DESTROY_SRQ] = { "DESTROY_SRQ", rnic_cmd_destroy_srq },
    [RNIC_CMD_LISTEN] = { "LISTEN", rnic_cmd_listen },
    [RNIC_CMD_UNLISTEN] = { "UNLISTEN", rnic_cmd_unlisten },
    [RNIC_CMD_CONNECT] = { "CONNECT", rnic_cmd_connect },
    [RNIC_CMD_ACCEPT] = { "ACCEPT", rnic_cmd_accept },
    [RNIC_CMD_REJECT] = { "REJECT", rnic_cmd_reject },
    [RNIC_CMD_DISCONNECT] = { "DISCONNECT", rnic_cmd_disconnect },
    [RNIC_CMD_QUERY_CONN] = { "QUERY_CONN", rnic_cmd_query_conn },
    [RNIC_CMD_INVALIDATE] = { "INVALIDATE", rnic_cmd_invalidate },
    [RNIC_CMD_ALLOC_MR] = { "ALLOC_MR", rnic_cmd_alloc_mr },
    [RNIC_CMD_MODIFY_SRQ] = { "MODIFY_SRQ", rnic_cmd_modify_srq },
};

const char *rnic_cmd_name(uint8_t opcode)
{
    if (opcode < ARRAY_SIZE(rnic_cmds) && rnic_cmds[opcode].name) {
        return rnic_cmds[opcode].name;
    }
    return "UNKNOWN";
}

uint16_t rnic_cmd_fail(const char *cmd, uint16_t status, const char *why)
{
    qemu_log_mask(LOG_GUEST_ERROR, "rnic: %s failed: %s\n", cmd, why);
    trace_rnic_err_cmd(cmd, status, why);
    return status;
}

static uint16_t rnic_cmd_execute(RnicState *s, struct rnic_cmd *cmd)
{
    const RnicCmdDesc *d = cmd->opcode < ARRAY_SIZE(rnic_cmds) ?
                           &rnic_cmds[cmd->opcode] : NULL;

    if (!d || !d->fn) {
        qemu_log_mask(LOG_GUEST_ERROR, "rnic: command opcode 0x%02x (%s) "
                      "not supported\n", cmd->opcode,
                      rnic_cmd_name(cmd->opcode));
        return RNIC_CMD_ERR_OPCODE;
    }
    return d->fn(s, cmd);
}

/* A descriptor we cannot even read leaves nowhere to put a status. */
static void rnic_cmdq_fatal(RnicState *s, uint64_t addr)
{
    qemu_log_mask(LOG_GUEST_ERROR, "rnic: command descriptor at 0x%" PRIx64
                  " is not readable by DMA; command queue stopped\n", addr);
    trace_rnic_err_cmd_dma(addr);
    s->status |= RNIC_STATUS_FATAL;
    rnic_eq_post(s, RNIC_EV_FATAL, 0, RNIC_CMD_ERR_DMA, 0);
}

/*
 * One command of ring @r (a copy of the queue's geometry, read once):
 * fetch, execute, write back.  False when the queue stopped (a descriptor
 * not readable or its result not writable).
 */
static bool rnic_cmdq_one(RnicState *s, const RnicRing *r, bool *irq)
{
    uint32_t index = s->cmdq.cons;
    struct rnic_cmd cmd;
    uint16_t status;

    if (rnic_ring_read(s, r, index, &cmd)) {
        rnic_cmdq_fatal(s, rnic_ring_addr(r, index));
        return false;
    }
    status = rnic_cmd_execute(s, &cmd);
    trace_rnic_cmd(index, rnic_cmd_name(cmd.opcode), cmd.opcode, status);
    cmd.status = cpu_to_le16(status);
    /* Outputs first, status last: the driver polls the status. */
    if (rnic_pci_write(s, rnic_ring_addr(r, index) + 8, cmd.u.raw,
                       sizeof(cmd.u.raw)) ||
        rnic_pci_write(s, rnic_ring_addr(r, index) + 2, &cmd.status,
                       sizeof(cmd.status))) {
        rnic_cmdq_fatal(s, rnic_ring_addr(r, index));
        return false;
    }
    s->cmdq.cons++;
    *irq |= cmd.flags & RNIC_CMD_FLAG_IRQ;
    return true;
}

/*
 * Runs commands up to a budget of count and of cost (page-list bytes
 * copied), then yields the main loop and goes on in the next run, so a
 * flood of doorbells or one huge REG_MR after another cannot hold QEMU
 * (and its monitor) for long.
 */
void rnic_cmdq_run(void *opaque)
{
    RnicState *s = opaque;
    RnicRing r = s->cmdq;   /* geometry fixed while READY: read once */
    uint32_t n = 0;
    bool irq = false;

    if (!(s->status & RNIC_STATUS_READY) ||
        (s->status & RNIC_STATUS_FATAL)) {
        return;     /* disabled since the doorbell: the ring is not ours */
    }
    s->cmdq_cost = 0;
    while (s->cmdq.cons != s->cmdq.prod && n++ < RNIC_CMDQ_BUDGET &&
           s->cmdq_cost < RNIC_CMDQ_BUDGET_BYTES &&
           (s->status & RNIC_STATUS_READY) &&
           !(s->status & RNIC_STATUS_FATAL)) {
        if (!rnic_cmdq_one(s, &r, &irq)) {
            break;
        }
    }
    if (irq) {
        rnic_irq(s, RNIC_MSIX_VEC_ADMIN);
    }
    if (s->cmdq.cons != s->cmdq.prod && (s->status & RNIC_STATUS_READY) &&
        !(s->status & RNIC_STATUS_FATAL)) {
        trace_rnic_cmdq_yield(s->cmdq.cons, s->cmdq.prod, s->cmdq_cost);
        qemu_bh_schedule(s->cmdq_bh);
    }
}

void rnic_cmdq_kick(RnicState *s)
{
    qemu_bh_schedule(s->cmdq_bh);
}
