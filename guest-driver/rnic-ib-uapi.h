/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the kernel driver's ib_device and librnic pass each other beyond
 * the uverbs commands: the driver data of CREATE_CQ's response.  A user
 * CQ's ring is mapped read-only into the process, followed by one page
 * whose first 32-bit word is the driver's count of entries consumed, so
 * that librnic can look at the next entry itself and make the POLL_CQ
 * system call only once the device has written it (a busy poll of an
 * empty CQ costs no system call).  Both sides build from this header.
 */
#ifndef RNIC_IB_UAPI_H
#define RNIC_IB_UAPI_H

#include <linux/types.h>

struct rnic_ib_create_cq_resp {
	__aligned_u64 mmap_key;		/* the mmap() offset */
	__u32 mmap_len;			/* the ring, then the page; 0: no map */
	__u32 log_size;			/* the ring holds 1 << log_size CQEs */
};

#endif /* RNIC_IB_UAPI_H */
