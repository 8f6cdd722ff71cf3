/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic programming model: PCI identity, BARs, registers, the command queue,
 * work queues, completions and events.
 *
 * The single source of truth for everything a driver sees of the device.
 * The QEMU device model, the Linux guest driver and the tests include this
 * file; docs/spec.md describes the same layout in prose.  All multi-byte
 * fields are little-endian; every structure has a fixed size that is
 * checked at compile time at the end of this file.
 */
#ifndef RNIC_ABI_H
#define RNIC_ABI_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

/* ---- PCI identity (docs/spec.md "Identity") ---------------------------- */
#define RNIC_PCI_VENDOR_ID      0x1234
#define RNIC_PCI_DEVICE_ID      0x7269
#define RNIC_PCI_SUBSYS_ID      0x0001
#define RNIC_PCI_REVISION       0x01
#define RNIC_PCI_CLASS          0x0280  /* network controller, other */

/* ---- BARs --------------------------------------------------------------- */
#define RNIC_BAR_REGS           0       /* registers and doorbells */
#define RNIC_BAR_REGS_SIZE      0x1000
#define RNIC_BAR_MSIX           2       /* MSI-X table and PBA */

/* MSI-X vector 0 signals command completions and events; CQs name theirs. */
#define RNIC_MSIX_VEC_ADMIN     0
#define RNIC_MSIX_VECTORS       8

/* ---- BAR 0 registers: 32-bit accesses only ------------------------------ */
#define RNIC_REG_ID             0x000   /* RO: RNIC_ID_MAGIC */
#define RNIC_REG_VERSION        0x004   /* RO: ABI version, see below */
#define RNIC_REG_SCRATCH        0x008   /* RW: no effect; reset value 0 */
#define RNIC_REG_STATUS         0x00c   /* RO: RNIC_STATUS_* */
#define RNIC_REG_CONTROL        0x010   /* RW: RNIC_CONTROL_* */

#define RNIC_REG_CMDQ_BASE_LO   0x020   /* RW: ring address, 4 KiB aligned */
#define RNIC_REG_CMDQ_BASE_HI   0x024
#define RNIC_REG_CMDQ_LOG_SIZE  0x028   /* RW: log2(entries), 1..12 */
#define RNIC_REG_CMDQ_PROD      0x02c   /* WO doorbell: producer index */
#define RNIC_REG_CMDQ_CONS      0x030   /* RO: commands completed */

#define RNIC_REG_EQ_BASE_LO     0x040   /* RW: event ring, 4 KiB aligned */
#define RNIC_REG_EQ_BASE_HI     0x044
#define RNIC_REG_EQ_LOG_SIZE    0x048   /* RW: log2(entries), 1..12 */
#define RNIC_REG_EQ_CONS        0x04c   /* RW: driver's consumer index */
#define RNIC_REG_EQ_PROD        0x050   /* RO: events written */

#define RNIC_REG_DB_SQ          0x100   /* WO: qpn | producer index << 16 */
#define RNIC_REG_DB_RQ          0x104   /* WO: qpn | producer index << 16 */
#define RNIC_REG_DB_CQ          0x108   /* WO: cqn | consumer index << 16 */
#define RNIC_REG_DB_CQ_ARM      0x10c   /* WO: cqn | RNIC_CQ_ARM_* */
#define RNIC_REG_DB_SRQ         0x110   /* WO: srqn | producer index << 16 */

#define RNIC_DB_ID(v)           ((v) & 0xffff)
#define RNIC_DB_INDEX(v)        ((v) >> 16)
#define RNIC_DB_VALUE(id, idx)  (((uint32_t)(idx) << 16) | ((id) & 0xffff))

#define RNIC_ID_MAGIC           0x43494e52u     /* "RNIC" in memory order */
#define RNIC_ABI_MAJOR          0
#define RNIC_ABI_MINOR          1
#define RNIC_VERSION_VALUE      ((RNIC_ABI_MAJOR << 16) | RNIC_ABI_MINOR)

#define RNIC_STATUS_READY       (1u << 0)   /* enabled, rings accepted */
#define RNIC_STATUS_FATAL       (1u << 1)   /* see the FATAL event */
#define RNIC_STATUS_EQ_OVERFLOW (1u << 2)   /* events were dropped */

#define RNIC_CONTROL_ENABLE     (1u << 0)
#define RNIC_CONTROL_RESET      (1u << 1)   /* self-clearing */

#define RNIC_CQ_ARM_NEXT        (1u << 16)  /* interrupt on next CQE */
#define RNIC_CQ_ARM_SOLICITED   (1u << 17)  /* ... on next solicited CQE */

/* ---- Command queue (docs/spec.md "Command queue") ---------------------- */
/*
 * A ring of 64-byte descriptors in guest memory.  The driver fills the slot
 * at its producer index, sets status to RNIC_CMD_STATUS_PENDING and writes
 * the new producer index to CMDQ_PROD.  The device executes commands in
 * order, writes outputs into the same slot, writes status last, advances
 * CMDQ_CONS and, if RNIC_CMD_FLAG_IRQ is set, signals RNIC_MSIX_VEC_ADMIN.
 */
enum rnic_cmd_opcode {
    RNIC_CMD_QUERY_DEVICE   = 0x01,
    RNIC_CMD_CREATE_PD      = 0x02,
    RNIC_CMD_DESTROY_PD     = 0x03,
    RNIC_CMD_REG_MR         = 0x04,
    RNIC_CMD_DEREG_MR       = 0x05,
    RNIC_CMD_ALLOC_MW       = 0x06,
    RNIC_CMD_BIND_MW        = 0x07,
    RNIC_CMD_DEALLOC_MW     = 0x08,
    RNIC_CMD_CREATE_CQ      = 0x09,
    RNIC_CMD_DESTROY_CQ     = 0x0a,
    RNIC_CMD_CREATE_QP      = 0x0b,
    RNIC_CMD_MODIFY_QP      = 0x0c,
    RNIC_CMD_QUERY_QP       = 0x0d,
    RNIC_CMD_DESTROY_QP     = 0x0e,
    RNIC_CMD_CREATE_SRQ     = 0x0f,
    RNIC_CMD_DESTROY_SRQ    = 0x10,
    RNIC_CMD_LISTEN         = 0x11,
    RNIC_CMD_UNLISTEN       = 0x12,
    RNIC_CMD_CONNECT        = 0x13,
    RNIC_CMD_ACCEPT         = 0x14,
    RNIC_CMD_REJECT         = 0x15,
    RNIC_CMD_DISCONNECT     = 0x16,
    RNIC_CMD_QUERY_CONN     = 0x17,
    RNIC_CMD_INVALIDATE     = 0x18,
};

enum rnic_cmd_status {
    RNIC_CMD_OK             = 0x0000,
    RNIC_CMD_ERR_OPCODE     = 0x0001,   /* unknown opcode */
    RNIC_CMD_ERR_PARAM      = 0x0002,   /* a field out of range */
    RNIC_CMD_ERR_RESOURCE   = 0x0003,   /* a table or limit is full */
    RNIC_CMD_ERR_HANDLE     = 0x0004,   /* no such PD/MR/MW/CQ/QP/conn */
    RNIC_CMD_ERR_BUSY       = 0x0005,   /* object still in use */
    RNIC_CMD_ERR_STATE      = 0x0006,   /* not allowed in this state */
    RNIC_CMD_ERR_DMA        = 0x0007,   /* a guest address was not readable */
    RNIC_CMD_ERR_ACCESS     = 0x0008,   /* access flags or PD do not match */
    RNIC_CMD_ERR_DENIED     = 0x0009,   /* address not allowed by the host */
    RNIC_CMD_ERR_ADDRINUSE  = 0x000a,   /* host could not bind the address */
    RNIC_CMD_STATUS_PENDING = 0xffff,   /* written by the driver */
};

#define RNIC_CMD_FLAG_IRQ       (1u << 0)

#define RNIC_CMD_SIZE           64
#define RNIC_CMD_PAYLOAD        56

struct rnic_cmd {
    uint8_t  opcode;
    uint8_t  flags;
    uint16_t status;
    uint32_t cookie;            /* echoed; for the driver's bookkeeping */
    union {
        uint8_t raw[RNIC_CMD_PAYLOAD];
        uint32_t w[RNIC_CMD_PAYLOAD / 4];
    } u;
};

#endif /* RNIC_ABI_H */
