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
#include "iwarp/iwarp.h"
#include "iwarp/qp.h"
#include "iwarp/stag.h"
#include "iwarp/wr.h"

/*
 * Where the ABI passes a core number through unchanged, the two are
 * equal: this is the one place that says so.
 */
#define RNIC_ABI_SAME(abi, core) \
    _Static_assert((int)(abi) == (int)(core), #abi " is " #core)
RNIC_ABI_SAME(RNIC_ACC_LOCAL_READ, RNIC_ACCESS_LOCAL_READ);
RNIC_ABI_SAME(RNIC_ACC_LOCAL_WRITE, RNIC_ACCESS_LOCAL_WRITE);
RNIC_ABI_SAME(RNIC_ACC_REMOTE_READ, RNIC_ACCESS_REMOTE_READ);
RNIC_ABI_SAME(RNIC_ACC_REMOTE_WRITE, RNIC_ACCESS_REMOTE_WRITE);
RNIC_ABI_SAME(RNIC_ACC_REMOTE_ATOMIC, RNIC_ACCESS_REMOTE_ATOMIC);
RNIC_ABI_SAME(RNIC_ACC_MW_BIND, RNIC_ACCESS_MW_BIND);
RNIC_ABI_SAME(RNIC_ACC_ALL, RNIC_ACCESS_LOCAL_READ | RNIC_ACCESS_LOCAL_WRITE |
              RNIC_ACCESS_REMOTE_ALL | RNIC_ACCESS_MW_BIND);
RNIC_ABI_SAME(RNIC_QPS_IDLE, RNIC_QP_IDLE);
RNIC_ABI_SAME(RNIC_QPS_RTS, RNIC_QP_RTS);
RNIC_ABI_SAME(RNIC_QPS_CLOSING, RNIC_QP_CLOSING);
RNIC_ABI_SAME(RNIC_QPS_TERMINATE, RNIC_QP_TERMINATE);
RNIC_ABI_SAME(RNIC_QPS_ERROR, RNIC_QP_ERROR);
RNIC_ABI_SAME(RNIC_RTR_SEND, RNIC_MPA_RTR_SEND);
RNIC_ABI_SAME(RNIC_RTR_WRITE, RNIC_MPA_RTR_WRITE);
RNIC_ABI_SAME(RNIC_RTR_READ, RNIC_MPA_RTR_READ);
RNIC_ABI_SAME(RNIC_MPA_PDATA_MAX, RNIC_MPA_PD_MAX);
RNIC_ABI_SAME(RNIC_FAST_REG_MAX_PAGES, RNIC_MR_FAST_MAX_PAGES);

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
