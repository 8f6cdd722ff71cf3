/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command queue: descriptors fetched by DMA, executed in order in a
 * bottom half (never on the vCPU that rang the doorbell), results written
 * back into the same slot with the status last.
 */
#include "qemu/osdep.h"
#include "qemu/cutils.h"
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

/*
 * One entry of the command table (rnic_cmds below), the device's one list
 * of commands: the opcode's name for logs and traces, its handler, and the
 * size of its payload struct (what the payload trace shows).
 */
typedef struct RnicCmdDesc {
    const char *name;
    RnicCmdFn *fn;
    size_t payload;
} RnicCmdDesc;

/*
 * RNIC_CMD_ENTRY(REG_MR, reg_mr, reg_mr): opcode RNIC_CMD_REG_MR, named
 * "REG_MR", runs rnic_cmd_reg_mr() on a struct rnic_cmd_reg_mr, which the
 * build checks fits the descriptor's payload.
 */
#define RNIC_CMD_ENTRY(op, handler, pl)                                     \
    [RNIC_CMD_##op] = {                                                     \
        .name = #op,                                                        \
        .fn = rnic_cmd_##handler,                                           \
        .payload = sizeof(struct rnic_cmd_##pl) +                           \
            QEMU_BUILD_BUG_ON_ZERO(sizeof(struct rnic_cmd_##pl) >           \
                                   RNIC_CMD_PAYLOAD),                       \
    }

static uint16_t rnic_cmd_query_device(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_query_device *in = (void *)cmd->u.raw;
    const RnicParams *p = &s->params;
    struct rnic_device_attr attr = {
        .abi_version = cpu_to_le32(RNIC_VERSION_VALUE),
        .max_pd = cpu_to_le32(p->limits.max_pd),
        .max_mr = cpu_to_le32(p->limits.max_mr),
        .max_mw = cpu_to_le32(p->limits.max_mw),
        .max_cq = cpu_to_le32(p->limits.max_cq),
        .max_cqe = cpu_to_le32(p->limits.max_cqe),
        .max_qp = cpu_to_le32(p->limits.max_qp),
        .max_qp_wr = cpu_to_le32(p->limits.max_qp_wr),
        .max_srq = cpu_to_le32(p->limits.max_srq),
        .max_srq_wr = cpu_to_le32(p->limits.max_srq_wr),
        .max_sge = cpu_to_le32(RNIC_WQE_MAX_SGE),
        .max_ird = cpu_to_le32(p->limits.max_ird),
        .max_ord = cpu_to_le32(p->limits.max_ord),
        .max_pdata = cpu_to_le32(RNIC_MAX_PDATA),
        .max_mr_size = cpu_to_le64(RNIC_DEV_MAX_MR_SIZE),
        .max_page_list_bytes = cpu_to_le64(p->limits.max_page_list_bytes),
        .page_size_cap = cpu_to_le32(MAKE_64BIT_MASK(RNIC_MR_MIN_PAGE_SHIFT,
                                     RNIC_MR_MAX_PAGE_SHIFT -
                                     RNIC_MR_MIN_PAGE_SHIFT + 1)),
        .msix_vectors = cpu_to_le32(RNIC_MSIX_VECTORS),
        .mpa_rev = cpu_to_le32(p->mpa_rev),
        .flags = cpu_to_le32(
            (p->mpa_crc == RNIC_MPA_CRC_REQUIRED ? RNIC_DEV_CRC_REQUIRED : 0) |
            (p->mpa_markers ? RNIC_DEV_MARKERS : 0) |
            (p->stag_one_shot ? RNIC_DEV_STAG_ONE_SHOT : 0) |
            (p->mpa_p2p ? RNIC_DEV_MPA_P2P : 0)),
        .mpa_rtr = p->mpa_rtr,
        .max_fast_reg_pages = cpu_to_le32(RNIC_FAST_REG_MAX_PAGES),
        .udb_pages = cpu_to_le32(p->udb_pages),
    };

    memcpy(attr.mac, p->mac.a, sizeof(attr.mac));
    if (rnic_pci_write(s, le64_to_cpu(in->attr_addr), &attr, sizeof(attr))) {
        return RNIC_CMD_ERR_DMA;
    }
    return RNIC_CMD_OK;
}

static const RnicCmdDesc rnic_cmds[] = {
    RNIC_CMD_ENTRY(QUERY_DEVICE, query_device, query_device),
    RNIC_CMD_ENTRY(CREATE_PD, create_pd, pd),
    RNIC_CMD_ENTRY(DESTROY_PD, destroy_pd, pd),
    RNIC_CMD_ENTRY(REG_MR, reg_mr, reg_mr),
    RNIC_CMD_ENTRY(DEREG_MR, dereg_mr, stag),
    RNIC_CMD_ENTRY(ALLOC_MW, alloc_mw, alloc_mw),
    RNIC_CMD_ENTRY(BIND_MW, bind_mw, bind_mw),
    RNIC_CMD_ENTRY(DEALLOC_MW, dealloc_mw, stag),
    RNIC_CMD_ENTRY(CREATE_CQ, create_cq, cq),
    RNIC_CMD_ENTRY(DESTROY_CQ, destroy_cq, cq),
    RNIC_CMD_ENTRY(CREATE_QP, create_qp, qp),
    RNIC_CMD_ENTRY(MODIFY_QP, modify_qp, modify_qp),
    RNIC_CMD_ENTRY(QUERY_QP, query_qp, query_qp),
    RNIC_CMD_ENTRY(DESTROY_QP, destroy_qp, qp),
    RNIC_CMD_ENTRY(CREATE_SRQ, create_srq, srq),
    RNIC_CMD_ENTRY(DESTROY_SRQ, destroy_srq, srq),
    RNIC_CMD_ENTRY(LISTEN, listen, listen),
    RNIC_CMD_ENTRY(UNLISTEN, unlisten, listen),
    RNIC_CMD_ENTRY(CONNECT, connect, connect),
    RNIC_CMD_ENTRY(ACCEPT, accept, accept),
    RNIC_CMD_ENTRY(REJECT, reject, accept),
    RNIC_CMD_ENTRY(DISCONNECT, disconnect, disconnect),
    RNIC_CMD_ENTRY(QUERY_CONN, query_conn, query_conn),
    RNIC_CMD_ENTRY(INVALIDATE, invalidate, stag),
    RNIC_CMD_ENTRY(ALLOC_MR, alloc_mr, alloc_mr),
    RNIC_CMD_ENTRY(MODIFY_SRQ, modify_srq, modify_srq),
};

const char *rnic_cmd_name(uint8_t opcode)
{
    if (opcode < ARRAY_SIZE(rnic_cmds) && rnic_cmds[opcode].name) {
        return rnic_cmds[opcode].name;
    }
    return "UNKNOWN";
}

uint16_t rnic_cmd_fail(uint8_t opcode, uint16_t status, const char *why)
{
    const char *name = rnic_cmd_name(opcode);

    qemu_log_mask(LOG_GUEST_ERROR, "rnic: %s failed: %s\n", name, why);
    switch (status) {
    case RNIC_CMD_ERR_RESOURCE:     /* a limit the host set, or its sockets */
    case RNIC_CMD_ERR_DENIED:       /* the host's listen-allow, peer-allow */
    case RNIC_CMD_ERR_ADDRINUSE:    /* the host could not bind */
        trace_rnic_err_cmd(name, status, why);
        break;
    default:                        /* a field, handle, state or address */
        trace_rnic_ub_cmd(name, status, why);
    }
    return status;
}

static uint16_t rnic_cmd_execute(RnicState *s, uint32_t index,
                                 struct rnic_cmd *cmd)
{
    const RnicCmdDesc *d = cmd->opcode < ARRAY_SIZE(rnic_cmds) ?
                           &rnic_cmds[cmd->opcode] : NULL;

    if (!d || !d->fn) {
        return rnic_cmd_fail(cmd->opcode, RNIC_CMD_ERR_OPCODE,
                             "opcode not supported");
    }
    if (trace_event_get_state_backends(TRACE_RNIC_CMD_PAYLOAD)) {
        g_autoptr(GString) hex = qemu_hexdump_line(NULL, cmd->u.raw,
                                                   d->payload, 4, 0);

        trace_rnic_cmd_payload(index, d->name, hex->str);
    }
    return d->fn(s, cmd);
}

/* A descriptor we cannot even read leaves nowhere to put a status. */
static void rnic_cmdq_fatal(RnicState *s, uint64_t addr)
{
    qemu_log_mask(LOG_GUEST_ERROR, "rnic: command descriptor at 0x%" PRIx64
                  " is not readable by DMA; command queue stopped\n", addr);
    trace_rnic_ub_cmd_dma(addr);
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
    status = rnic_cmd_execute(s, index, &cmd);
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
