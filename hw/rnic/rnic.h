/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic device state shared by the files of hw/rnic/.
 *
 * rnic-pci.c is the QEMU citizen (PCI, BARs, MSI-X, properties, reset);
 * rnic-regs.c decodes BAR 0; rnic-cmdq.c runs the command queue;
 * rnic-eq.c writes events.
 */
#ifndef HW_RNIC_H
#define HW_RNIC_H

#include "hw/pci/pci_device.h"
#include "qom/object.h"
#include "rnic/rnic-abi.h"

#define TYPE_RNIC "rnic"
OBJECT_DECLARE_SIMPLE_TYPE(RnicState, RNIC)

/* A ring in guest memory described by base/log-size registers. */
typedef struct RnicRing {
    uint64_t base;
    uint32_t log_size;
    uint32_t prod;          /* free-running */
    uint32_t cons;          /* free-running */
} RnicRing;

typedef struct RnicLimits {
    uint32_t max_pd;
    uint32_t max_mr;
    uint32_t max_mw;
    uint32_t max_cq;
    uint32_t max_cqe;
    uint32_t max_qp;
    uint32_t max_qp_wr;
    uint32_t max_srq;
    uint32_t max_ird;
    uint32_t max_ord;
} RnicLimits;

struct RnicState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    QEMUBH *cmdq_bh;

    uint32_t scratch;
    uint32_t status;
    uint32_t control;
    RnicRing cmdq;
    RnicRing eq;
    uint64_t eq_dropped;

    /* properties */
    RnicLimits limits;
    uint32_t mpa_rev;
};

/* rnic-regs.c */
extern const MemoryRegionOps rnic_reg_ops;

/* rnic-cmdq.c */
void rnic_cmdq_kick(RnicState *s);
void rnic_cmdq_run(void *opaque);
const char *rnic_cmd_name(uint8_t opcode);

/* rnic-eq.c */
void rnic_eq_post(RnicState *s, uint8_t type, uint32_t id, uint32_t arg0,
                  uint32_t arg1);

/* rnic-pci.c */
void rnic_irq(RnicState *s, unsigned vector);
void rnic_soft_reset(RnicState *s);

static inline uint32_t rnic_ring_entries(const RnicRing *r)
{
    return 1u << r->log_size;
}

#endif /* HW_RNIC_H */
