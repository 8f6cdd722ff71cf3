/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic programming model: PCI identity, BAR layout and registers.
 *
 * The single source of truth for everything a driver sees of the device.
 * The QEMU device model, the Linux guest driver and the tests include this
 * file; docs/spec.md describes the same layout in prose.  All multi-byte
 * fields are little-endian.
 */
#ifndef RNIC_ABI_H
#define RNIC_ABI_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

/* PCI identity (docs/spec.md "Identity") */
#define RNIC_PCI_VENDOR_ID      0x1234
#define RNIC_PCI_DEVICE_ID      0x7269
#define RNIC_PCI_SUBSYS_ID      0x0001
#define RNIC_PCI_REVISION       0x01
#define RNIC_PCI_CLASS          0x0280  /* network controller, other */

/* BAR 0: registers, 32-bit accesses only */
#define RNIC_BAR_REGS           0
#define RNIC_BAR_REGS_SIZE      0x1000

#define RNIC_REG_ID             0x000   /* RO: RNIC_ID_MAGIC */
#define RNIC_REG_VERSION        0x004   /* RO: ABI version, see below */
#define RNIC_REG_SCRATCH        0x008   /* RW: no effect; reset value 0 */

#define RNIC_ID_MAGIC           0x43494e52u     /* "RNIC" in memory order */
#define RNIC_ABI_MAJOR          0
#define RNIC_ABI_MINOR          1
#define RNIC_VERSION_VALUE      ((RNIC_ABI_MAJOR << 16) | RNIC_ABI_MINOR)

#endif /* RNIC_ABI_H */
