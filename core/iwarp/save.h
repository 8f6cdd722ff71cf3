/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The core's tables and queues as bytes, for the device's migration
 * stream: the STag table (PDs, regions, windows, receive links), the QP
 * number table (timewait included), and each CQ, SRQ and QP with the work
 * it holds.  The device creates each object on the destination with the
 * parameters it saved itself, then loads the object's contents into it.
 *
 * Little-endian and versioned by the caller.  A load reads untrusted
 * input: every count, index, enum and range is checked against the object
 * it is loaded into, and against the invariants the object's own calls
 * keep (a page list covers its region, a window names a region of the
 * table, a queue holds no more than its depth), so a damaged or hostile
 * stream fails the load (-EINVAL) and cannot make a later call read or
 * write outside an allocation.
 *
 * What a live connection's stream holds (an endpoint's FPDUs in flight,
 * a partial FPDU received) is not here: see rnic_ep_save() in engine.h.
 */
#ifndef RNIC_SAVE_H
#define RNIC_SAVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rnic_cq;
struct rnic_qp;
struct rnic_srq;
struct rnic_qpn_table;
struct rnic_stag_table;

/* A growing buffer; @failed once an allocation failed (nothing after it). */
struct rnic_sv {
    uint8_t *buf;
    size_t len, cap;
    bool failed;
};

/* A reader; @failed once it ran past the end (every read after gives 0). */
struct rnic_ld {
    const uint8_t *buf;
    size_t len, off;
    bool failed;
};

void rnic_sv_bytes(struct rnic_sv *s, const void *p, size_t n);
void rnic_sv_u8(struct rnic_sv *s, uint8_t v);
void rnic_sv_u16(struct rnic_sv *s, uint16_t v);
void rnic_sv_u32(struct rnic_sv *s, uint32_t v);
void rnic_sv_u64(struct rnic_sv *s, uint64_t v);
/* Frees the buffer; the struct may be used again. */
void rnic_sv_free(struct rnic_sv *s);

void rnic_ld_init(struct rnic_ld *l, const void *buf, size_t len);
bool rnic_ld_bytes(struct rnic_ld *l, void *p, size_t n);
uint8_t rnic_ld_u8(struct rnic_ld *l);
uint16_t rnic_ld_u16(struct rnic_ld *l);
uint32_t rnic_ld_u32(struct rnic_ld *l);
uint64_t rnic_ld_u64(struct rnic_ld *l);
/* A count read from @l, refused (l->failed) above @max. */
uint32_t rnic_ld_count(struct rnic_ld *l, uint32_t max);

/*
 * Each load returns 0, or -EINVAL when the bytes do not fit the object
 * (which is then left in a state only its free/destroy call may use).
 */
void rnic_stag_table_save(struct rnic_sv *s, const struct rnic_stag_table *t);
/* Into a table just made by rnic_stag_table_new() with the same limits. */
int rnic_stag_table_load(struct rnic_ld *l, struct rnic_stag_table *t);

void rnic_qpn_table_save(struct rnic_sv *s, const struct rnic_qpn_table *t);
/*
 * Into a table just made with the same size.  Numbers that were live are
 * live again with no QP: rnic_qpn_attach() gives each its QP.
 */
int rnic_qpn_table_load(struct rnic_ld *l, struct rnic_qpn_table *t);
/* -EINVAL unless @qpn is live and has no QP yet. */
int rnic_qpn_attach(struct rnic_qpn_table *t, uint32_t qpn, void *qp);

void rnic_cq_save(struct rnic_sv *s, const struct rnic_cq *cq);
/* Into a CQ of the same depth, before any QP completes into it. */
int rnic_cq_load(struct rnic_ld *l, struct rnic_cq *cq);

void rnic_srq_save(struct rnic_sv *s, const struct rnic_srq *srq);
int rnic_srq_load(struct rnic_ld *l, struct rnic_srq *srq);

/*
 * A QP's state, queued work, Read accounting and MSNs; into a QP just made
 * with the same attributes.  Nothing of a connection: a QP saved in RTS or
 * CLOSING without its endpoint is for the caller to move on (to ERROR).
 */
void rnic_qp_save(struct rnic_sv *s, const struct rnic_qp *qp);
int rnic_qp_load(struct rnic_ld *l, struct rnic_qp *qp);

#endif /* RNIC_SAVE_H */
