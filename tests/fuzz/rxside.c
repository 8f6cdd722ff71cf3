/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>
#include <check.h>
#include "rxside.h"

#define RXS_RECV_OFF    0x70000u    /* receive i at + i * EPF_PAGE */
#define RXS_SINK_OFF    0x80000u    /* our Read's sink */
#define RXS_ATOM_OFF    0x81000u    /* our Atomic's result */
#define RXS_SEND_OFF    0x82000u    /* our Send's payload */
#define RXS_READ_LEN    3000u
#define RXS_SEND_LEN    300u

/* Odd offsets and lengths, some across page boundaries. */
static const struct rxs_region_spec {
    uint64_t off, len;
    unsigned access;
    enum rnic_stag_policy policy;
    bool remote_inv;
} regions[RXS_NREGIONS] = {
    [RXS_WRITE] = { 0x10000 + 100, 8000, RNIC_ACCESS_REMOTE_WRITE |
                    RNIC_ACCESS_LOCAL_WRITE, RNIC_STAG_PERSISTENT, true },
    [RXS_READ] = { 0x20000, 6000, RNIC_ACCESS_REMOTE_READ,
                   RNIC_STAG_PERSISTENT, false },
    [RXS_READ_WRITE] = { 0x30000 + 8, 3000, RNIC_ACCESS_REMOTE_READ |
                         RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_LOCAL_WRITE,
                         RNIC_STAG_PERSISTENT, true },
    [RXS_ONE_SHOT] = { 0x40000, 4096, RNIC_ACCESS_REMOTE_WRITE |
                       RNIC_ACCESS_LOCAL_WRITE, RNIC_STAG_ONE_SHOT, true },
    [RXS_LINKED] = { 0x50000 + 4000, 4096, RNIC_ACCESS_REMOTE_WRITE |
                     RNIC_ACCESS_LOCAL_WRITE, RNIC_STAG_PERSISTENT, false },
    [RXS_ATOMIC] = { 0x60000, 64, RNIC_ACCESS_REMOTE_ATOMIC |
                     RNIC_ACCESS_LOCAL_WRITE, RNIC_STAG_PERSISTENT, false },
};

uint64_t rxs_region_addr(enum rxs_region i)
{
    return epf_addr(regions[i].off);
}

uint64_t rxs_region_len(enum rxs_region i)
{
    return regions[i].len;
}

static void rxs_allow(struct rxs_range *list, int *n, uint64_t off,
                      uint64_t len, uint32_t stag)
{
    list[(*n)++] = (struct rxs_range) { epf_addr(off), len, stag };
}

/* Our own work: the peer's regions are laid out as ours are. */
static void rxs_post_sq_work(struct rxs *r)
{
    struct rnic_send_wr rd = epf_wr(200, RNIC_WR_READ, r->s.lkey,
                                    RXS_SINK_OFF, RXS_READ_LEN);
    struct rnic_send_wr at = epf_wr(201, RNIC_WR_ATOMIC_FETCH_ADD,
                                    r->s.lkey, RXS_ATOM_OFF, 8);
    struct rnic_send_wr send = epf_wr(202, RNIC_WR_SEND, r->s.lkey,
                                      RXS_SEND_OFF, RXS_SEND_LEN);

    rd.remote_stag = r->stag[RXS_READ];
    rd.remote_to = rxs_region_addr(RXS_READ) + 17;
    at.remote_stag = r->stag[RXS_ATOMIC];
    at.remote_to = rxs_region_addr(RXS_ATOMIC) + 8;
    at.atomic_add_or_compare = 5;
    epf_post(&r->s, &rd);
    epf_post(&r->s, &at);
    epf_post(&r->s, &send);
    rxs_allow(r->wr_ok, &r->nwr_ok, RXS_SINK_OFF, RXS_READ_LEN, 0);
    rxs_allow(r->wr_ok, &r->nwr_ok, RXS_ATOM_OFF, 8, 0);
    rxs_allow(r->rd_ok, &r->nrd_ok, RXS_SEND_OFF, RXS_SEND_LEN, 0);
}

void rxs_setup(struct rxs *r, uint8_t cfg, bool peer)
{
    bool initiator = peer != !!(cfg & RXS_CFG_INITIATOR);
    static const uint8_t rtr[4] = {
        0, RNIC_MPA_RTR_SEND, RNIC_MPA_RTR_WRITE, RNIC_MPA_RTR_READ,
    };
    struct rnic_mpa_result mpa[2];
    struct rnic_recv_owner owner;

    memset(r, 0, sizeof(*r));
    r->cfg = cfg;
    epf_mpa_pair(cfg & RXS_CFG_CRC, false, rtr[cfg >> RXS_CFG_RTR_SHIFT & 3],
                 4, &mpa[0], &mpa[1]);
    r->p = (struct epf_params) {
        .initiator = initiator, .mpa = mpa[!initiator], .atomics = true,
        .srq = cfg & RXS_CFG_SRQ,
        .mulpdu = cfg & RXS_CFG_SMALL_MULPDU ? RNIC_EP_MULPDU_MIN : 0,
    };
    epf_init(&r->s, &r->p, peer ? 10 : 20);
    for (int i = 0; i < RXS_NREGIONS; i++) {
        const struct rxs_region_spec *g = &regions[i];
        bool written = g->access & (RNIC_ACCESS_REMOTE_WRITE |
                                    RNIC_ACCESS_REMOTE_ATOMIC);

        r->stag[i] = epf_mr(&r->s, g->off, g->len, g->access, g->policy,
                            g->remote_inv);
        memset(epf_ptr(&r->s, g->off), 0x40 + i, g->len);
        if (written) {
            rxs_allow(r->wr_ok, &r->nwr_ok, g->off, g->len, r->stag[i]);
        }
        if (g->access & (RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC)) {
            rxs_allow(r->rd_ok, &r->nrd_ok, g->off, g->len, r->stag[i]);
        }
    }
    for (int i = 0; i < RXS_NRECV; i++) {
        uint32_t len = 1024u << (i & 1);

        epf_post_recv(&r->s, RXS_RECV_ID + i, RXS_RECV_OFF + i * EPF_PAGE,
                      len);
        rxs_allow(r->wr_ok, &r->nwr_ok, RXS_RECV_OFF + i * EPF_PAGE, len, 0);
    }
    /* the last receive: seeds.c writes to the region before using it */
    owner = (struct rnic_recv_owner) {
        rnic_qp_recv_queue(r->s.qp), r->s.pd, r->s.qp->qpn,
    };
    if (rnic_stag_link_to_recv(r->s.stags, r->stag[RXS_LINKED], &owner,
                               RXS_RECV_ID + RXS_NRECV - 1) != RNIC_STAG_OK) {
        ck_abort_msg("cannot link the region to a receive");
    }
    if (cfg & RXS_CFG_SQ_WORK) {
        rxs_post_sq_work(r);
    }
}

void rxs_teardown(struct rxs *r)
{
    epf_fini(&r->s);
}
