/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The driver is written against the kernel API of 6.12.  What an older
 * kernel it must still build on (Debian 12's 6.1) spells differently is
 * given the 6.12 shape here, and nowhere else.  Included at the end of
 * rnic_ib.h, whose prototypes it wraps.
 */
#ifndef RNIC_COMPAT_H
#define RNIC_COMPAT_H

#include <linux/mm.h>
#include <linux/version.h>
#include <rdma/uverbs_ioctl.h>

/* Before 6.3 vm_flags was written directly. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void vm_flags_clear(struct vm_area_struct *vma,
				  vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/*
 * Before 6.11 ib_device_ops.create_cq was given the bundle's driver_udata
 * (NULL for a kernel CQ) instead of the bundle.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 11, 0)
static inline int rnic_compat_create_cq(struct ib_cq *ibcq,
					const struct ib_cq_init_attr *attr,
					struct ib_udata *udata)
{
	struct uverbs_attr_bundle *attrs = NULL;

	if (udata)
		attrs = container_of(udata, struct uverbs_attr_bundle,
				     driver_udata);
	return rnic_ib_create_cq(ibcq, attr, attrs);
}
#define RNIC_IB_CREATE_CQ	rnic_compat_create_cq
#else
#define RNIC_IB_CREATE_CQ	rnic_ib_create_cq
#endif

#endif /* RNIC_COMPAT_H */
