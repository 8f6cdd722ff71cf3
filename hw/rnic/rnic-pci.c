/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic: a software iWARP RDMA NIC as a PCI Express device.
 *
 * This file is the QEMU citizen only: PCI identity, BARs, properties,
 * reset.  The programming model is include/rnic/rnic-abi.h and
 * docs/spec.md; the wire protocol lives in the protocol core (core/).
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "qom/object.h"
#include "rnic/rnic-abi.h"
#include "rnic-core.h"
#include "trace.h"

#define TYPE_RNIC "rnic"
OBJECT_DECLARE_SIMPLE_TYPE(RnicState, RNIC)

#define RNIC_PCIE_CAP_OFFSET 0xe0

struct RnicState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    uint32_t scratch;
};

static uint64_t rnic_reg_read(void *opaque, hwaddr addr, unsigned size)
{
    RnicState *s = opaque;
    uint64_t val;

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
    default:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "rnic: read of unknown register 0x%" HWADDR_PRIx
                      ", returning 0\n", addr);
        trace_rnic_err_reg_unknown("read", addr);
        val = 0;
        break;
    }
    trace_rnic_reg_read(addr, val);
    return val;
}

static void rnic_reg_write(void *opaque, hwaddr addr, uint64_t val,
                           unsigned size)
{
    RnicState *s = opaque;

    trace_rnic_reg_write(addr, val);
    switch (addr) {
    case RNIC_REG_SCRATCH:
        s->scratch = val;
        break;
    case RNIC_REG_ID:
    case RNIC_REG_VERSION:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "rnic: write 0x%" PRIx64 " to read-only register 0x%"
                      HWADDR_PRIx " ignored\n", val, addr);
        trace_rnic_err_reg_readonly(addr, val);
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "rnic: write 0x%" PRIx64 " to unknown register 0x%"
                      HWADDR_PRIx " ignored\n", val, addr);
        trace_rnic_err_reg_unknown("write", addr);
        break;
    }
}

static const MemoryRegionOps rnic_reg_ops = {
    .read = rnic_reg_read,
    .write = rnic_reg_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 4 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};

static void rnic_realize(PCIDevice *pdev, Error **errp)
{
    RnicState *s = RNIC(pdev);

    memory_region_init_io(&s->regs, OBJECT(s), &rnic_reg_ops, s,
                          "rnic-regs", RNIC_BAR_REGS_SIZE);
    pci_register_bar(pdev, RNIC_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->regs);
    if (pcie_endpoint_cap_init(pdev, RNIC_PCIE_CAP_OFFSET) < 0) {
        error_setg(errp, "rnic: cannot add the PCI Express capability");
        return;
    }
    trace_rnic_realize(rnic_core_version());
}

static void rnic_exit(PCIDevice *pdev)
{
    pcie_cap_exit(pdev);
}

static void rnic_reset_hold(Object *obj, ResetType type)
{
    RnicState *s = RNIC(obj);

    s->scratch = 0;
    trace_rnic_reset();
}

static const VMStateDescription rnic_vmstate = {
    .name = "rnic",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, RnicState),
        VMSTATE_UINT32(scratch, RnicState),
        VMSTATE_END_OF_LIST()
    },
};

static void rnic_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = rnic_realize;
    k->exit = rnic_exit;
    k->vendor_id = RNIC_PCI_VENDOR_ID;
    k->device_id = RNIC_PCI_DEVICE_ID;
    k->subsystem_vendor_id = RNIC_PCI_VENDOR_ID;
    k->subsystem_id = RNIC_PCI_SUBSYS_ID;
    k->revision = RNIC_PCI_REVISION;
    k->class_id = RNIC_PCI_CLASS;
    dc->desc = "Software iWARP RDMA NIC";
    dc->vmsd = &rnic_vmstate;
    rc->phases.hold = rnic_reset_hold;
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static const TypeInfo rnic_info = {
    .name = TYPE_RNIC,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(RnicState),
    .class_init = rnic_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void rnic_register_types(void)
{
    type_register_static(&rnic_info);
}

type_init(rnic_register_types)
