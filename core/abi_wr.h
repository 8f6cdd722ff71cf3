/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device's programming model (include/rnic/rnic-abi.h) to the core's
 * work requests and back: send and receive queue entries as the guest
 * writes them become struct rnic_send_wr / rnic_recv_wr, and the core's
 * completions become guest CQ entries.  Pure translation and validation
 * of what the core does not check itself (opcode, flags, SGE counts); no
 * QEMU dependency, unit-tested under AddressSanitizer.
 */
#ifndef RNIC_ABI_WR_H
#define RNIC_ABI_WR_H

#include <stdbool.h>
#include <stdint.h>
#include "rnic/rnic-abi.h"
#include "wr.h"

/*
 * NULL, or why the entry is malformed (the core never sees it).  Even then
 * @wr holds the entry's wr_id, and its opcode if that is known (else SEND).
 */
const char *rnic_abi_send_wr(const struct rnic_sq_wqe *w,
                             struct rnic_send_wr *wr);
const char *rnic_abi_recv_wr(const struct rnic_rq_wqe *w,
                             struct rnic_recv_wr *wr);
/* The guest's CQ entry for @c, with @phase. */
void rnic_abi_cqe(const struct rnic_cqe *c, uint8_t phase,
                  struct rnic_cq_entry *e);

#endif /* RNIC_ABI_WR_H */
