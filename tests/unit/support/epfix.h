/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test support for the engine: one side of a connection (guest memory,
 * STag table, CQs, QP and endpoint), helpers to post work and check
 * completions, an in-memory byte pipe between two sides with seeded
 * random chunking, and a decoder of what a side sends.
 */
#ifndef RNIC_TEST_EPFIX_H
#define RNIC_TEST_EPFIX_H

#include <stdbool.h>
#include <stdint.h>
#include "iwarp/cq.h"
#include "iwarp/engine.h"
#include "iwarp/fpdu.h"
#include "support/memdma.h"

#define EPF_BASE        0x7f0000000000ull   /* guest address of memory */
#define EPF_SIZE        ((size_t)8 << 20)
#define EPF_PAGE        4096u
#define EPF_MAX_ULPDUS  64

struct epf_side {
    struct memdma mem;
    struct rnic_stag_table *stags;
    uint32_t pd;
    uint32_t lkey;          /* all memory, local rights, persistent */
    struct rnic_cq *scq, *rcq;
    struct rnic_srq *srq;
    struct rnic_qp *qp;
    struct rnic_ep *ep;
    /* what the callbacks saw */
    unsigned term_sent, term_received, stream_lost, state_changes;
    unsigned need_recv;
    /* a receive of 64 octets at @late_off the consumer posted late */
    bool late_recv;
    uint64_t late_id, late_off;
    struct rnic_term_code sent_code, recv_code;
};

struct epf_params {
    bool initiator;
    struct rnic_mpa_result mpa;
    uint32_t mulpdu;
    bool atomics;
    bool srq;
    uint32_t max_rd;        /* QP max ORD and IRD; 0: 4 */
    enum rnic_stag_policy policy;   /* the table's default */
};

/* A matching pair of MPA results for initiator and responder. */
void epf_mpa_pair(bool crc, bool markers, uint8_t rtr, uint16_t ord_ird,
                  struct rnic_mpa_result *init, struct rnic_mpa_result *resp);

void epf_init(struct epf_side *s, const struct epf_params *p, uint32_t qpn);
/* Creates the endpoint (epf_init does; after rnic_ep_free, again). */
void epf_new_ep(struct epf_side *s, const struct epf_params *p);
void epf_fini(struct epf_side *s);

static inline uint64_t epf_addr(uint64_t off)
{
    return EPF_BASE + off;
}

static inline uint8_t *epf_ptr(struct epf_side *s, uint64_t off)
{
    return s->mem.mem + off;
}

/* A region over [off, off + len) of guest memory, TO = guest address. */
uint32_t epf_mr(struct epf_side *s, uint64_t off, uint64_t len,
                unsigned access, enum rnic_stag_policy policy,
                bool remote_inv);

struct rnic_send_wr epf_wr(uint64_t id, enum rnic_wr_opcode op,
                           uint32_t lkey, uint64_t off, uint32_t len);
void epf_post(struct epf_side *s, const struct rnic_send_wr *wr);
void epf_post_recv(struct epf_side *s, uint64_t id, uint64_t off,
                   uint32_t len);
/* The next CQE, which must exist. */
struct rnic_cqe epf_cqe(struct rnic_cq *cq);
void epf_no_cqe(struct rnic_cq *cq);

/* Deterministic random numbers (xorshift64*). */
struct epf_rng {
    uint64_t s;
};
uint32_t epf_rand(struct epf_rng *r, uint32_t bound);
void epf_fill(uint8_t *p, size_t len, struct epf_rng *r);

/*
 * Moves what @from sends into @to, written and read in random pieces of
 * 1..@max_chunk octets; returns how many octets moved.
 */
size_t epf_pump(struct epf_side *from, struct epf_side *to,
                struct epf_rng *rng, size_t max_chunk);
/* Pumps both ways until neither side sends; total octets moved. */
size_t epf_run(struct epf_side *a, struct epf_side *b, struct epf_rng *rng,
               size_t max_chunk);

/* Every ULPDU a side sends, decoded from its byte stream. */
struct epf_capture {
    struct rnic_fpdu_rx rx;
    uint8_t buf[RNIC_MPA_ULPDU_MAX + 4];
    int count;
    size_t len[EPF_MAX_ULPDUS];
    uint8_t ulpdu[EPF_MAX_ULPDUS][256];     /* first octets of each */
    int err;
};

void epf_capture_init(struct epf_capture *c, bool crc, bool markers);
/* Drains @s's transmitter into @c; octets drained. */
size_t epf_capture(struct epf_side *s, struct epf_capture *c);
/* Index of the first captured ULPDU with @opcode, or -1. */
int epf_find(const struct epf_capture *c, uint8_t opcode);

#endif /* RNIC_TEST_EPFIX_H */
