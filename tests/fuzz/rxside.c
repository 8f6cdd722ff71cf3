/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <endian.h>
#include <string.h>
#include <check.h>
#include "rxside.h"

#define RXS_RECV_OFF    0x70000u    /* receive i at + i * EPF_PAGE */
#define RXS_EV_RECV_OFF 0x78000u    /* rxs_event()'s receive k at + k * 2 KiB */
#define RXS_EV_RECV_LEN 1024u
#define RXS_SINK_OFF    0x80000u    /* our Read's sink */
#define RXS_ATOM_OFF    0x81000u    /* our Atomic's result */
#define RXS_SEND_OFF    0x82000u    /* our Send's payload */
#define RXS_PBL_OFF     0x84000u    /* the page list of rxs_event()'s FAST_REG */
#define RXS_READ_LEN    3000u
#define RXS_SEND_LEN    300u
#define RXS_MAX_PAGES   4
#define RXS_REBIND_STEP 256u        /* a re-bound type 1 window moves on */

/*
 * Contiguous regions: odd offsets and lengths, some across page
 * boundaries, TO = guest address.  Page-list regions: pages apart and out
 * of order, a first-byte offset, and a TO space of their own.
 */
static const struct rxs_region_spec {
    uint64_t off, len;              /* contiguous: guest offset */
    unsigned access;
    enum rnic_stag_policy policy;
    bool remote_inv;
    uint32_t npages;                /* page list: 0 for contiguous */
    uint32_t pages[RXS_MAX_PAGES];  /* guest offsets, in list order */
    uint32_t fbo;
    uint64_t to;
} regions[RXS_NREGIONS] = {
    [RXS_WRITE] = { .off = 0x10000 + 100, .len = 8000,
                    .access = RNIC_ACCESS_REMOTE_WRITE |
                              RNIC_ACCESS_LOCAL_WRITE,
                    .policy = RNIC_STAG_PERSISTENT, .remote_inv = true },
    [RXS_READ] = { .off = 0x20000, .len = 6000,
                   .access = RNIC_ACCESS_REMOTE_READ,
                   .policy = RNIC_STAG_PERSISTENT },
    [RXS_READ_WRITE] = { .off = 0x30000 + 8, .len = 3000,
                         .access = RNIC_ACCESS_REMOTE_READ |
                                   RNIC_ACCESS_REMOTE_WRITE |
                                   RNIC_ACCESS_LOCAL_WRITE,
                         .policy = RNIC_STAG_PERSISTENT,
                         .remote_inv = true },
    [RXS_ONE_SHOT] = { .off = 0x40000, .len = 4096,
                       .access = RNIC_ACCESS_REMOTE_WRITE |
                                 RNIC_ACCESS_LOCAL_WRITE,
                       .policy = RNIC_STAG_ONE_SHOT, .remote_inv = true },
    [RXS_LINKED] = { .off = 0x50000 + 4000, .len = 4096,
                     .access = RNIC_ACCESS_REMOTE_WRITE |
                               RNIC_ACCESS_LOCAL_WRITE,
                     .policy = RNIC_STAG_PERSISTENT },
    [RXS_ATOMIC] = { .off = 0x60000, .len = 64,
                     .access = RNIC_ACCESS_REMOTE_ATOMIC |
                               RNIC_ACCESS_LOCAL_WRITE,
                     .policy = RNIC_STAG_PERSISTENT },
    [RXS_PAGES] = { .len = 4 * EPF_PAGE - 0x123 - 77,
                    .access = RNIC_ACCESS_REMOTE_READ |
                              RNIC_ACCESS_REMOTE_WRITE |
                              RNIC_ACCESS_LOCAL_WRITE,
                    .policy = RNIC_STAG_PERSISTENT, .remote_inv = true,
                    .npages = 4,
                    .pages = { 0xa3000, 0xa0000, 0xa6000, 0xa9000 },
                    .fbo = 0x123, .to = 0x400000000123ull },
    [RXS_WIN_HOST] = { .len = 3 * EPF_PAGE - 0x40 - 100,
                       .access = RNIC_ACCESS_LOCAL_WRITE |
                                 RNIC_ACCESS_MW_BIND,
                       .policy = RNIC_STAG_PERSISTENT, .npages = 3,
                       .pages = { 0xb4000, 0xb0000, 0xb2000 },
                       .fbo = 0x40, .to = 0x600000000040ull },
    [RXS_FAST] = { .len = 3 * EPF_PAGE - 0x80 - 33,
                   .access = RNIC_ACCESS_REMOTE_READ |
                             RNIC_ACCESS_REMOTE_WRITE |
                             RNIC_ACCESS_LOCAL_WRITE,
                   .policy = RNIC_STAG_PERSISTENT, .remote_inv = true,
                   .npages = 3, .pages = { 0xc2000, 0xc0000, 0xc5000 },
                   .fbo = 0x80, .to = 0x800000000080ull },
};

/* Windows over RXS_WIN_HOST: offset into it, length, rights. */
static const struct rxs_window_spec {
    enum rnic_stag_kind kind;
    uint64_t off, len;
    unsigned access;
} windows[RXS_NWINDOWS] = {
    [RXS_MW1] = { RNIC_STAG_MW_TYPE1, 16, 6000,
                  RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_WRITE },
    [RXS_MW2] = { RNIC_STAG_MW_TYPE2, 6400, 4096,
                  RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_ATOMIC },
};

uint64_t rxs_region_to(enum rxs_region i)
{
    return regions[i].npages ? regions[i].to : epf_addr(regions[i].off);
}

uint64_t rxs_region_len(enum rxs_region i)
{
    return regions[i].len;
}

uint64_t rxs_window_to(enum rxs_window i)
{
    return rxs_region_to(RXS_WIN_HOST) + windows[i].off;
}

uint64_t rxs_window_len(enum rxs_window i)
{
    return windows[i].len;
}

static void rxs_add(struct rxs_range *list, int *n, uint64_t addr,
                    uint64_t len, uint32_t stag, uint64_t wr_id)
{
    ck_assert_int_lt(*n, RXS_MAX_RANGES);
    list[(*n)++] = (struct rxs_range) { addr, len, stag, wr_id, false };
}

/*
 * The guest pieces of region @i's TO range [to, to + len), each allowed
 * through @stag for what @access grants the peer.
 */
static void rxs_allow_to(struct rxs *r, enum rxs_region i, uint64_t to,
                         uint64_t len, uint32_t stag, unsigned access)
{
    const struct rxs_region_spec *g = &regions[i];
    uint64_t off = to - rxs_region_to(i) + g->fbo;
    bool wr = access & (RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_ATOMIC);
    bool rd = access & (RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC);

    while (len) {
        uint64_t in_page = g->npages ? off % EPF_PAGE : 0;
        uint64_t take = g->npages ? EPF_PAGE - in_page : len;
        uint64_t addr;

        ck_assert(!g->npages || off / EPF_PAGE < g->npages);
        addr = g->npages ? epf_addr(g->pages[off / EPF_PAGE]) + in_page
                         : epf_addr(g->off) + off;
        take = take < len ? take : len;
        if (wr) {
            rxs_add(r->wr_ok, &r->nwr_ok, addr, take, stag, 0);
        }
        if (rd) {
            rxs_add(r->rd_ok, &r->nrd_ok, addr, take, stag, 0);
        }
        off += take;
        len -= take;
    }
}

/* Registers (or, @old != 0, re-registers) region @i with key @key. */
static enum rnic_stag_status rxs_register(struct rxs *r, enum rxs_region i,
                                          uint8_t key, uint32_t old,
                                          uint32_t *stag)
{
    const struct rxs_region_spec *g = &regions[i];
    uint64_t pages[RXS_MAX_PAGES];
    struct rnic_mr_attr a = {
        .pd = r->s.pd, .key = key, .access = g->access, .policy = g->policy,
        .remote_invalidate = g->remote_inv, .pages = pages,
        .npages = g->npages, .page_shift = 12, .first_byte_offset = g->fbo,
        .length = g->len, .base_to = rxs_region_to(i),
    };

    if (!g->npages) {
        uint64_t first = g->off & ~(uint64_t)(EPF_PAGE - 1);

        a.first_byte_offset = (uint32_t)(g->off - first);
        a.npages = (uint32_t)((g->off + g->len - first + EPF_PAGE - 1) /
                              EPF_PAGE);
        ck_assert_uint_le(a.npages, RXS_MAX_PAGES);
        for (uint32_t k = 0; k < a.npages; k++) {
            pages[k] = epf_addr(first) + (uint64_t)k * EPF_PAGE;
        }
    } else {
        for (uint32_t k = 0; k < a.npages; k++) {
            pages[k] = epf_addr(g->pages[k]);
        }
    }
    return old ? rnic_mr_reregister(r->s.stags, old, &a, stag)
               : rnic_mr_register(r->s.stags, &a, stag);
}

/* RXS_FAST's registration as FAST_REG makes it (@pages: room for it). */
static struct rnic_fast_reg_attr rxs_fast_attr(const struct rxs *r,
                                               uint32_t stag, uint64_t *pages)
{
    const struct rxs_region_spec *g = &regions[RXS_FAST];

    for (uint32_t k = 0; k < g->npages; k++) {
        pages[k] = epf_addr(g->pages[k]);
    }
    return (struct rnic_fast_reg_attr) {
        .stag = stag, .pd = r->s.pd, .access = g->access, .pages = pages,
        .npages = g->npages, .page_shift = 12, .first_byte_offset = g->fbo,
        .length = g->len, .base_to = g->to,
    };
}

/* ALLOC_MR, then the first fast registration, done directly. */
static enum rnic_stag_status rxs_fast_alloc(struct rxs *r, uint8_t key,
                                            uint32_t *stag)
{
    uint64_t pages[RXS_MAX_PAGES];
    struct rnic_fast_reg_attr a;
    enum rnic_stag_status st;

    st = rnic_mr_alloc(r->s.stags, r->s.pd, RXS_MAX_PAGES, key, stag);
    if (st != RNIC_STAG_OK) {
        return st;
    }
    a = rxs_fast_attr(r, *stag, pages);
    /* rxs_event()'s FAST_REGs read this copy: written now, before the
     * harness takes its picture of guest memory. */
    for (uint32_t k = 0; k < a.npages; k++) {
        uint64_t le = htole64(pages[k]);

        memcpy(epf_ptr(&r->s, RXS_PBL_OFF + 8u * k), &le, sizeof(le));
    }
    return rnic_mr_fast_reg(r->s.stags, &a);
}

static void rxs_region(struct rxs *r, enum rxs_region i)
{
    const struct rxs_region_spec *g = &regions[i];
    enum rnic_stag_status st;
    uint8_t key = 0x5a;

    do {
        st = i == RXS_FAST ? rxs_fast_alloc(r, key++, &r->stag[i])
                           : rxs_register(r, i, key++, 0, &r->stag[i]);
    } while (st == RNIC_STAG_ERR_KEY_REUSED);
    ck_assert_int_eq(st, RNIC_STAG_OK);
    if (g->npages) {
        for (uint32_t k = 0; k < g->npages; k++) {
            memset(epf_ptr(&r->s, g->pages[k]), 0x40 + i, EPF_PAGE);
        }
    } else {
        memset(epf_ptr(&r->s, g->off), 0x40 + i, g->len);
    }
    rxs_allow_to(r, i, rxs_region_to(i), g->len, r->stag[i], g->access);
}

/* Binds window @i at @to with @key, as the BIND_MW command or WR would. */
static enum rnic_stag_status rxs_bind(struct rxs *r, enum rxs_window i,
                                      uint64_t to, uint8_t key)
{
    const struct rxs_window_spec *w = &windows[i];
    struct rnic_mw_bind_attr a = {
        .mr_stag = r->stag[RXS_WIN_HOST], .pd = r->s.pd, .qpn = r->s.qp->qpn,
        .key = key, .access = w->access, .policy = RNIC_STAG_PERSISTENT,
        .remote_invalidate = w->kind == RNIC_STAG_MW_TYPE2,
        .to = to, .length = w->len,
    };
    enum rnic_stag_status st = rnic_mw_bind(r->s.stags, r->mw[i], &a,
                                            &r->mw[i]);

    if (st == RNIC_STAG_OK) {
        rxs_allow_to(r, RXS_WIN_HOST, to, w->len, r->mw[i], w->access);
    }
    return st;
}

static void rxs_window(struct rxs *r, enum rxs_window i)
{
    const struct rxs_window_spec *w = &windows[i];

    ck_assert_int_eq(rnic_mw_alloc(r->s.stags, r->s.pd, w->kind, 0x70,
                                   &r->mw[i]), RNIC_STAG_OK);
    ck_assert_int_eq(rxs_bind(r, i, rxs_window_to(i), 0x71), RNIC_STAG_OK);
}

/* Consuming receive @recv_id of our receive queue invalidates @stag. */
static enum rnic_stag_status rxs_link(struct rxs *r, uint32_t stag,
                                      uint64_t recv_id)
{
    struct rnic_recv_owner owner = {
        rnic_qp_recv_queue(r->s.qp), r->s.pd, r->s.qp->qpn,
    };

    return rnic_stag_link_to_recv(r->s.stags, stag, &owner, recv_id);
}

/* Our own work: the peer's regions are laid out as ours are. */
static void rxs_post_sq_work(struct rxs *r)
{
    struct rnic_send_wr rd = epf_wr(RXS_SQ_ID, RNIC_WR_READ, r->s.lkey,
                                    RXS_SINK_OFF, RXS_READ_LEN);
    struct rnic_send_wr at = epf_wr(RXS_SQ_ID + 1, RNIC_WR_ATOMIC_FETCH_ADD,
                                    r->s.lkey, RXS_ATOM_OFF, 8);
    struct rnic_send_wr send = epf_wr(RXS_SQ_ID + 2, RNIC_WR_SEND, r->s.lkey,
                                      RXS_SEND_OFF, RXS_SEND_LEN);

    rd.remote_stag = r->stag[RXS_READ];
    rd.remote_to = rxs_region_to(RXS_READ) + 17;
    at.remote_stag = r->stag[RXS_ATOMIC];
    at.remote_to = rxs_region_to(RXS_ATOMIC) + 8;
    at.atomic_add_or_compare = 5;
    epf_post(&r->s, &rd);
    epf_post(&r->s, &at);
    epf_post(&r->s, &send);
    rxs_add(r->wr_ok, &r->nwr_ok, epf_addr(RXS_SINK_OFF), RXS_READ_LEN,
            r->s.lkey, rd.wr_id);
    rxs_add(r->wr_ok, &r->nwr_ok, epf_addr(RXS_ATOM_OFF), 8, r->s.lkey,
            at.wr_id);
    rxs_add(r->rd_ok, &r->nrd_ok, epf_addr(RXS_SEND_OFF), RXS_SEND_LEN,
            r->s.lkey, 0);
}

void rxs_setup(struct rxs *r, uint8_t cfg, uint8_t cfg2, bool peer)
{
    bool initiator = peer != !!(cfg & RXS_CFG_INITIATOR);
    static const uint8_t rtr[4] = {
        0, RNIC_MPA_RTR_SEND, RNIC_MPA_RTR_WRITE, RNIC_MPA_RTR_READ,
    };
    struct rnic_mpa_result mpa[2];

    memset(r, 0, sizeof(*r));
    r->cfg = cfg;
    r->cfg2 = cfg2;
    epf_mpa_pair(cfg & RXS_CFG_CRC, cfg2 & RXS_CFG2_MARKERS,
                 rtr[cfg >> RXS_CFG_RTR_SHIFT & 3], 4, &mpa[0], &mpa[1]);
    r->p = (struct epf_params) {
        .initiator = initiator, .mpa = mpa[!initiator], .atomics = true,
        .srq = cfg & RXS_CFG_SRQ,
        .mulpdu = cfg & RXS_CFG_SMALL_MULPDU ? RNIC_EP_MULPDU_MIN : 0,
    };
    epf_init(&r->s, &r->p, peer ? 10 : 20);
    r->s.qp->attr.privileged = true;    /* a kernel QP: FAST_REG allowed */
    r->s.mem.map_limit = cfg2 & RXS_CFG2_SHORT_MAPS ? 512 : 0;
    for (int i = 0; i < RXS_NREGIONS; i++) {
        rxs_region(r, i);
    }
    for (int i = 0; i < RXS_NWINDOWS; i++) {
        rxs_window(r, i);
    }
    for (int i = 0; i < RXS_NRECV; i++) {
        uint32_t len = 1024u << (i & 1);

        epf_post_recv(&r->s, RXS_RECV_ID + i, RXS_RECV_OFF + i * EPF_PAGE,
                      len);
        rxs_add(r->wr_ok, &r->nwr_ok, epf_addr(RXS_RECV_OFF + i * EPF_PAGE),
                len, r->s.lkey, RXS_RECV_ID + i);
    }
    /* the last receive: seeds.c writes to the region before using it */
    if (rxs_link(r, r->stag[RXS_LINKED], RXS_RECV_ID + RXS_NRECV - 1) !=
        RNIC_STAG_OK) {
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

/* ---- the consumer changes STags mid-stream ---- */

/* The consumer ended @stag: nothing may reach memory through it now. */
static void rxs_kill(struct rxs *r, uint32_t stag)
{
    for (int i = 0; i < r->nwr_ok; i++) {
        if (r->wr_ok[i].stag == stag) {
            r->wr_ok[i].done = true;
        }
    }
}

static void rxs_kill_if(struct rxs *r, uint32_t stag, enum rnic_stag_status st)
{
    if (st == RNIC_STAG_OK) {
        rxs_kill(r, stag);
    }
}

/*
 * A LOCAL_INV, BIND_MW or FAST_REG WR; refused or flushed as the QP's
 * state says.  Its success ends @ends (0: nothing).
 */
static void rxs_post_local(struct rxs *r, struct rnic_send_wr *wr,
                           uint32_t ends)
{
    r->ev_stag[r->nevents] = ends;
    wr->wr_id = RXS_EV_SQ_ID + r->nevents;
    wr->flags = RNIC_WR_SIGNALED;
    rnic_qp_post_send(r->s.qp, wr);
}

/* A new receive buffer whose consumption invalidates @stag. */
static void rxs_link_recv(struct rxs *r, uint32_t stag)
{
    uint64_t off = RXS_EV_RECV_OFF + r->nevents * 2048u;
    struct rnic_recv_wr wr = {
        .wr_id = RXS_EV_RECV_ID + r->nevents, .num_sge = 1,
    };
    int ret;

    wr.sge[0] = (struct rnic_sge) { r->s.lkey, epf_addr(off),
                                    RXS_EV_RECV_LEN };
    ret = r->s.srq ? rnic_srq_post_recv(r->s.srq, &wr)
                   : rnic_qp_post_recv(r->s.qp, &wr);
    if (ret == 0) {
        rxs_add(r->wr_ok, &r->nwr_ok, epf_addr(off), RXS_EV_RECV_LEN,
                r->s.lkey, wr.wr_id);
        rxs_link(r, stag, wr.wr_id);
    }
}

static void rxs_rebind_window(struct rxs *r, enum rxs_window i)
{
    const struct rxs_window_spec *w = &windows[i];
    struct rnic_send_wr wr = { .opcode = RNIC_WR_BIND_MW };
    uint64_t to = rxs_window_to(i) + RXS_REBIND_STEP * (r->nevents % 4 + 1);

    uint32_t old = r->mw[i];

    if (w->kind == RNIC_STAG_MW_TYPE1) {
        rxs_kill_if(r, old, rxs_bind(r, i, to, rnic_stag_key(
                                         rnic_stag_next_key(old))));
        return;
    }
    /* the new STag is valid once the WR ran, so its ranges can be
     * allowed now */
    wr.bind = (struct rnic_bind_params) {
        .mw_stag = r->mw[i], .mr_stag = r->stag[RXS_WIN_HOST], .to = to,
        .length = w->len, .access = w->access,
        .key = rnic_stag_key(rnic_stag_next_key(old)),
    };
    rxs_post_local(r, &wr, old);
    r->mw[i] = rnic_stag_next_key(old);
    rxs_allow_to(r, RXS_WIN_HOST, to, w->len, r->mw[i], w->access);
}

/*
 * FAST_REG of RXS_FAST with the next key, from the page list set-up left
 * in guest memory (read when the WR runs).  It fails, and the QP with it, unless an event
 * before invalidated the region; the new STag is valid once the WR ran,
 * so its ranges can be allowed now.
 */
static void rxs_fast_reg(struct rxs *r)
{
    const struct rxs_region_spec *g = &regions[RXS_FAST];
    uint32_t stag = rnic_stag_next_key(r->stag[RXS_FAST]);
    uint64_t off = RXS_PBL_OFF, pages[RXS_MAX_PAGES];
    struct rnic_fast_reg_attr a = rxs_fast_attr(r, stag, pages);
    struct rnic_send_wr wr = { .opcode = RNIC_WR_FAST_REG };

    wr.fast_reg = (struct rnic_fast_reg_params) {
        .pbl_addr = epf_addr(off), .iova = a.base_to, .length = a.length,
        .npages = a.npages, .access = a.access, .stag = stag,
        .first_byte_offset = a.first_byte_offset, .page_shift = 12,
    };
    rxs_add(r->rd_ok, &r->nrd_ok, epf_addr(off), a.npages * 8u, 0,
            RXS_EV_SQ_ID + r->nevents);
    rxs_post_local(r, &wr, 0);
    r->stag[RXS_FAST] = stag;
    rxs_allow_to(r, RXS_FAST, g->to, g->len, stag, g->access);
}

static void rxs_rebind(struct rxs *r, unsigned target)
{
    uint32_t stag;

    if (target >= RXS_NREGIONS + RXS_NWINDOWS) {
        return;         /* the local key stays as it is */
    }
    if (target >= RXS_NREGIONS) {
        rxs_rebind_window(r, target - RXS_NREGIONS);
        return;
    }
    if (rxs_register(r, target, rnic_stag_key(
                         rnic_stag_next_key(r->stag[target])),
                     r->stag[target], &stag) == RNIC_STAG_OK) {
        rxs_kill(r, r->stag[target]);
        r->stag[target] = stag;
        rxs_allow_to(r, target, rxs_region_to(target), regions[target].len,
                     stag, regions[target].access);
    }
}

void rxs_event(struct rxs *r, uint8_t what)
{
    unsigned kind = what & 7, target = (what >> 3) % RXS_EV_TARGETS;
    uint32_t stag = target < RXS_NREGIONS ? r->stag[target] :
                    target < RXS_NREGIONS + RXS_NWINDOWS ?
                    r->mw[target - RXS_NREGIONS] : r->s.lkey;
    struct rnic_send_wr wr = { .opcode = RNIC_WR_LOCAL_INV };

    if (kind >= RXS_EV_KINDS || r->nevents == RXS_MAX_EVENTS) {
        return;
    }
    switch (kind) {
    case RXS_EV_INVALIDATE:
        rxs_kill_if(r, stag, rnic_stag_invalidate_local(r->s.stags, stag,
                                                        r->s.pd));
        break;
    case RXS_EV_LOCAL_INV:
        wr.invalidate_stag = stag;
        rxs_post_local(r, &wr, stag);
        break;
    case RXS_EV_DESTROY:
        if (target >= RXS_NREGIONS && target < RXS_NREGIONS + RXS_NWINDOWS) {
            rxs_kill_if(r, stag, rnic_mw_dealloc(r->s.stags, stag));
        } else {
            rxs_kill_if(r, stag, rnic_mr_deregister(r->s.stags, stag));
        }
        break;
    case RXS_EV_REBIND:
        rxs_rebind(r, target);
        break;
    case RXS_EV_FAST_REG:
        rxs_fast_reg(r);
        break;
    default:
        rxs_link_recv(r, stag);
        break;
    }
    r->nevents++;
}

void rxs_wr_done(struct rxs *r, uint64_t wr_id, bool success)
{
    for (int i = 0; i < r->nwr_ok; i++) {
        if (r->wr_ok[i].wr_id == wr_id) {
            r->wr_ok[i].done = true;
        }
    }
    if (success && wr_id >= RXS_EV_SQ_ID &&
        wr_id < RXS_EV_SQ_ID + r->nevents &&
        r->ev_stag[wr_id - RXS_EV_SQ_ID]) {
        rxs_kill(r, r->ev_stag[wr_id - RXS_EV_SQ_ID]);
    }
}

bool rxs_wr_known(const struct rxs *r, uint64_t wr_id)
{
    return (wr_id >= RXS_RECV_ID && wr_id < RXS_RECV_ID + RXS_NRECV) ||
           (wr_id >= RXS_EV_RECV_ID && wr_id < RXS_EV_RECV_ID + r->nevents) ||
           (r->cfg & RXS_CFG_SQ_WORK && wr_id >= RXS_SQ_ID &&
            wr_id < RXS_SQ_ID + RXS_SQ_NWORK) ||
           (wr_id >= RXS_EV_SQ_ID && wr_id < RXS_EV_SQ_ID + r->nevents);
}
