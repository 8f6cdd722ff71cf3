/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The rnic protocol core: iWARP (MPA, DDP, RDMAP) and the protection tables,
 * with no dependency on QEMU.
 */
#ifndef RNIC_CORE_H
#define RNIC_CORE_H

/* Version string of the protocol core, e.g. "0.1". */
const char *rnic_core_version(void);

#endif /* RNIC_CORE_H */
