/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Commands that create and destroy verbs objects: PDs, MRs, MWs, CQs, SRQs
 * and QPs.  Each checks its parameters, calls the protocol core and maps
 * the core's result onto a command status.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "rnic.h"
#include "trace.h"

/* CREATE_CQ, CREATE_QP and CREATE_SRQ: a doorbell page the device lacks. */
#define RNIC_UDB_BAD "udb is above the doorbell pages (udb-pages)"

static uint16_t rnic_dev_stag_status_to_cmd(enum rnic_stag_status st)
{
    switch (st) {
    case RNIC_STAG_OK:
        return RNIC_CMD_OK;
    case RNIC_STAG_ERR_INVALID_STAG:
        return RNIC_CMD_ERR_HANDLE;
    case RNIC_STAG_ERR_NO_RESOURCES:
        return RNIC_CMD_ERR_RESOURCE;
    case RNIC_STAG_ERR_BUSY:
    case RNIC_STAG_ERR_CANNOT_INVALIDATE:
        return RNIC_CMD_ERR_BUSY;
    case RNIC_STAG_ERR_DMA:
        return RNIC_CMD_ERR_DMA;
    case RNIC_STAG_ERR_ACCESS:
    case RNIC_STAG_ERR_NOT_ASSOCIATED:
        return RNIC_CMD_ERR_ACCESS;
    default:
        return RNIC_CMD_ERR_PARAM;
    }
}

/*
 * The command's status for @st, logged with the payload @fields it is
 * about: a reused key is always the payload's key.
 */
static uint16_t rnic_dev_stag_result(uint8_t opcode, const char *fields,
                                     enum rnic_stag_status st)
{
    g_autofree char *why = NULL;

    if (st == RNIC_STAG_OK) {
        return RNIC_CMD_OK;
    }
    why = g_strdup_printf("%s: %s", st == RNIC_STAG_ERR_KEY_REUSED ? "key" :
                          fields, rnic_stag_status_name(st));
    return rnic_cmd_fail(opcode, rnic_dev_stag_status_to_cmd(st), why);
}

static bool rnic_dev_pd_exists(RnicState *s, uint32_t pdn)
{
    if (rnic_pd_get(s->stags, pdn) != RNIC_STAG_OK) {
        return false;
    }
    rnic_pd_put(s->stags, pdn);
    return true;
}

uint16_t rnic_cmd_create_pd(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_pd *p = (void *)cmd->u.raw;
    uint32_t pd;
    enum rnic_stag_status st = rnic_pd_alloc(s->stags, &pd);

    if (st == RNIC_STAG_OK) {
        p->pdn = cpu_to_le32(pd);
    }
    return rnic_dev_stag_result(RNIC_CMD_CREATE_PD, "pdn", st);
}

uint16_t rnic_cmd_destroy_pd(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_pd *p = (void *)cmd->u.raw;

    return rnic_dev_stag_result(RNIC_CMD_DESTROY_PD, "pdn",
                                rnic_pd_free(s->stags, le32_to_cpu(p->pdn)));
}

static enum rnic_stag_policy rnic_policy(uint8_t policy)
{
    switch (policy & 0x7f) {
    case RNIC_MR_POLICY_PERSISTENT:
        return RNIC_STAG_PERSISTENT;
    case RNIC_MR_POLICY_ONE_SHOT:
        return RNIC_STAG_ONE_SHOT;
    default:
        return RNIC_STAG_POLICY_DEFAULT;
    }
}

/* The field of REG_MR's payload that is out of range, as the spec names it. */
static const char *rnic_reg_mr_bad_field(const struct rnic_cmd_reg_mr *p)
{
    uint32_t npages = le32_to_cpu(p->npages);

    if (!npages || npages > RNIC_MR_MAX_PAGES) {
        return "npages is 0 or above RNIC_MR_MAX_PAGES";
    }
    if (le32_to_cpu(p->access) & ~RNIC_ACC_ALL) {
        return "access has a bit above RNIC_ACC_MW_BIND";
    }
    if ((p->policy & ~RNIC_MR_NO_REMOTE_INV) > RNIC_MR_POLICY_ONE_SHOT) {
        return "policy is not DEFAULT, PERSISTENT or ONE_SHOT";
    }
    if (le64_to_cpu(p->length) > RNIC_DEV_MAX_MR_SIZE) {
        return "length is above max_mr_size";
    }
    return NULL;
}

uint16_t rnic_cmd_reg_mr(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_reg_mr *p = (void *)cmd->u.raw;
    uint32_t npages = le32_to_cpu(p->npages);
    const char *bad = rnic_reg_mr_bad_field(p);
    g_autofree uint64_t *pages = NULL;
    struct rnic_mr_attr attr;
    enum rnic_stag_status st;
    uint32_t stag;

    if (bad) {
        return rnic_cmd_fail(RNIC_CMD_REG_MR, RNIC_CMD_ERR_PARAM, bad);
    }
    if (!rnic_dev_pd_exists(s, le32_to_cpu(p->pdn))) {
        return rnic_cmd_fail(RNIC_CMD_REG_MR, RNIC_CMD_ERR_HANDLE,
                             "pdn: no such PD");
    }
    /* Every limit before the page list costs a byte or a cycle. */
    st = rnic_mr_admit(s->stags, npages);
    if (st != RNIC_STAG_OK) {
        return rnic_cmd_fail(RNIC_CMD_REG_MR, RNIC_CMD_ERR_RESOURCE,
                             "max-mrs regions exist, or the page list would "
                             "pass max-page-list-bytes");
    }
    s->cmdq_cost += (uint64_t)npages * sizeof(uint64_t);
    pages = g_new(uint64_t, npages);
    if (rnic_pci_read(s, le64_to_cpu(p->pbl_addr), pages,
                      npages * sizeof(uint64_t))) {
        return rnic_cmd_fail(RNIC_CMD_REG_MR, RNIC_CMD_ERR_DMA,
                             "pbl_addr: page list not readable");
    }
    for (uint32_t i = 0; i < npages; i++) {
        pages[i] = le64_to_cpu(pages[i]);
    }
    attr = (struct rnic_mr_attr) {
        .pd = le32_to_cpu(p->pdn),
        .key = p->key,
        .access = le32_to_cpu(p->access),
        .policy = rnic_policy(p->policy),
        .remote_invalidate = !(p->policy & RNIC_MR_NO_REMOTE_INV),
        .pages = pages,
        .npages = npages,
        .page_shift = p->page_shift,
        .first_byte_offset = le32_to_cpu(p->first_byte_offset),
        .length = le64_to_cpu(p->length),
        .base_to = le64_to_cpu(p->iova),
    };
    st = rnic_mr_register(s->stags, &attr, &stag);
    if (st == RNIC_STAG_OK) {
        p->stag = cpu_to_le32(stag);
    }
    return rnic_dev_stag_result(RNIC_CMD_REG_MR,
                                "page_shift, first_byte_offset or the page list",
                                st);
}

/*
 * A fast-registration region (pages come with FAST_REG), or the
 * PD's physical STag.  Both only serve QPs created RNIC_QP_FLAG_KERNEL
 * (FAST_REG is refused on others; the physical STag does not exist for
 * them), which is why the driver never lets user space set that flag.
 */
uint16_t rnic_cmd_alloc_mr(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_alloc_mr *p = (void *)cmd->u.raw;
    uint32_t pdn = le32_to_cpu(p->pdn);
    uint32_t max_pages = le32_to_cpu(p->max_pages);
    bool phys = p->flags & RNIC_ALLOC_MR_PHYS;
    enum rnic_stag_status st;
    uint32_t stag;

    if (p->flags & ~RNIC_ALLOC_MR_PHYS) {
        return rnic_cmd_fail(RNIC_CMD_ALLOC_MR, RNIC_CMD_ERR_PARAM,
                             "flags has a bit other than PHYS");
    }
    if (phys ? max_pages != 0
             : !max_pages || max_pages > RNIC_FAST_REG_MAX_PAGES) {
        return rnic_cmd_fail(RNIC_CMD_ALLOC_MR, RNIC_CMD_ERR_PARAM, phys ?
                             "max_pages is not 0 with PHYS" :
                             "max_pages is 0 or above RNIC_FAST_REG_MAX_PAGES");
    }
    if (!rnic_dev_pd_exists(s, pdn)) {
        return rnic_cmd_fail(RNIC_CMD_ALLOC_MR, RNIC_CMD_ERR_HANDLE,
                             "pdn: no such PD");
    }
    st = phys ? rnic_mr_alloc_phys(s->stags, pdn, p->key, &stag)
              : rnic_mr_alloc(s->stags, pdn, max_pages, p->key, &stag);
    if (st == RNIC_STAG_OK) {
        p->stag = cpu_to_le32(stag);
    }
    return rnic_dev_stag_result(RNIC_CMD_ALLOC_MR, "stag", st);
}

uint16_t rnic_cmd_dereg_mr(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_stag *p = (void *)cmd->u.raw;
    uint32_t stag = le32_to_cpu(p->stag);

    return rnic_dev_stag_result(RNIC_CMD_DEREG_MR, "stag",
                                rnic_mr_deregister(s->stags, stag));
}

uint16_t rnic_cmd_alloc_mw(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_alloc_mw *p = (void *)cmd->u.raw;
    enum rnic_stag_status st;
    uint32_t stag;

    if (p->type != 1 && p->type != 2) {
        return rnic_cmd_fail(RNIC_CMD_ALLOC_MW, RNIC_CMD_ERR_PARAM,
                             "type is not 1 or 2");
    }
    if (!rnic_dev_pd_exists(s, le32_to_cpu(p->pdn))) {
        return rnic_cmd_fail(RNIC_CMD_ALLOC_MW, RNIC_CMD_ERR_HANDLE,
                             "pdn: no such PD");
    }
    st = rnic_mw_alloc(s->stags, le32_to_cpu(p->pdn),
                       p->type == 1 ? RNIC_STAG_MW_TYPE1 : RNIC_STAG_MW_TYPE2,
                       p->key, &stag);
    if (st == RNIC_STAG_OK) {
        p->stag = cpu_to_le32(stag);
    }
    return rnic_dev_stag_result(RNIC_CMD_ALLOC_MW, "stag", st);
}

uint16_t rnic_cmd_bind_mw(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_bind_mw *p = (void *)cmd->u.raw;
    uint32_t mw = le32_to_cpu(p->mw_stag);
    struct rnic_stag_info info;
    struct rnic_mw_bind_attr attr;
    enum rnic_stag_status st;
    uint32_t new_stag;

    st = rnic_stag_query(s->stags, mw, &info);
    if (st != RNIC_STAG_OK) {
        return rnic_dev_stag_result(RNIC_CMD_BIND_MW, "mw_stag", st);
    }
    if (info.kind != RNIC_STAG_MW_TYPE1) {
        return rnic_cmd_fail(RNIC_CMD_BIND_MW, RNIC_CMD_ERR_PARAM,
                             "mw_stag is not a type 1 window (type 2 windows "
                             "are bound by the BIND_MW work request)");
    }
    if (p->policy > RNIC_MR_POLICY_ONE_SHOT) {
        return rnic_cmd_fail(RNIC_CMD_BIND_MW, RNIC_CMD_ERR_PARAM,
                             "policy is not DEFAULT, PERSISTENT or ONE_SHOT");
    }
    attr = (struct rnic_mw_bind_attr) {
        .mr_stag = le32_to_cpu(p->mr_stag),
        .pd = info.pd,
        .key = p->key,
        .access = le32_to_cpu(p->access),
        .policy = rnic_policy(p->policy),
        .remote_invalidate = false,
        .to = le64_to_cpu(p->addr),
        .length = le64_to_cpu(p->length),
    };
    st = rnic_mw_bind(s->stags, mw, &attr, &new_stag);
    if (st == RNIC_STAG_OK) {
        p->new_stag = cpu_to_le32(new_stag);
    }
    return rnic_dev_stag_result(RNIC_CMD_BIND_MW, "mr_stag, addr or length",
                                st);
}

uint16_t rnic_cmd_dealloc_mw(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_stag *p = (void *)cmd->u.raw;
    uint32_t stag = le32_to_cpu(p->stag);

    return rnic_dev_stag_result(RNIC_CMD_DEALLOC_MW, "stag",
                                rnic_mw_dealloc(s->stags, stag));
}

uint16_t rnic_cmd_invalidate(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_stag *p = (void *)cmd->u.raw;
    uint32_t stag = le32_to_cpu(p->stag);
    struct rnic_stag_info info;
    enum rnic_stag_status st = rnic_stag_query(s->stags, stag, &info);

    if (st == RNIC_STAG_OK) {
        st = rnic_stag_invalidate_local(s->stags, stag, info.pd);
    }
    return rnic_dev_stag_result(RNIC_CMD_INVALIDATE, "stag", st);
}

/* ---- CQs ---- */

static void rnic_dev_cq_notify(void *opaque, struct rnic_cq *core)
{
    RnicCq *cq = opaque;

    cq->irq_pending = true;
}

/* A CQ or work queue ring of at most @max entries (a max-* property). */
static bool rnic_wq_ring_ok(uint64_t base, uint32_t log_size, uint32_t max)
{
    return rnic_ring_ok(base, log_size, RNIC_WQ_LOG_MAX) &&
           (1u << log_size) <= max;
}

/* A queue's doorbell page: 0 (BAR 0 only) or a page of BAR 4, + 1. */
static bool rnic_udb_ok(RnicState *s, uint32_t udb_le)
{
    return le32_to_cpu(udb_le) <= s->params.udb_pages;
}

/* CREATE_CQ's checks and work, at slot @i (cqn i + 1). */
uint16_t rnic_dev_cq_make(RnicState *s, struct rnic_cmd_cq *p, uint32_t i)
{
    uint64_t ring = le64_to_cpu(p->ring_addr);
    RnicCq *cq;

    if (!rnic_wq_ring_ok(ring, p->log_size, s->params.limits.max_cqe)) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_CQ, RNIC_CMD_ERR_PARAM,
                             "ring_addr is 0 or not 4 KiB aligned, or "
                             "2^log_size is above max_cqe");
    }
    if (p->msix_vector == RNIC_MSIX_VEC_ADMIN ||
        p->msix_vector >= RNIC_MSIX_VECTORS) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_CQ, RNIC_CMD_ERR_PARAM,
                             "msix_vector is not 1..7");
    }
    if (!rnic_udb_ok(s, p->udb)) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_CQ, RNIC_CMD_ERR_PARAM,
                             RNIC_UDB_BAD);
    }
    cq = g_new0(RnicCq, 1);
    cq->cqn = i + 1;
    rnic_ring_init(&cq->ring, ring, p->log_size, RNIC_CQE_SIZE);
    cq->vector = p->msix_vector;
    cq->udb = le32_to_cpu(p->udb);
    rnic_db_own(s, RNIC_REG_DB_CQ, cq->cqn, cq->udb);
    rnic_db_own(s, RNIC_REG_DB_CQ_ARM, cq->cqn, cq->udb);
    cq->s = s;
    cq->core = rnic_cq_new(1u << p->log_size, rnic_dev_cq_notify, cq);
    rnic_cq_set_changed(cq->core, rnic_dev_cq_changed, cq);
    s->cqs[i] = cq;
    p->cqn = cpu_to_le32(cq->cqn);
    return RNIC_CMD_OK;
}

uint16_t rnic_cmd_create_cq(RnicState *s, struct rnic_cmd *cmd)
{
    uint32_t i;

    for (i = 0; i < s->params.limits.max_cq && s->cqs[i]; i++) {
        continue;
    }
    if (i == s->params.limits.max_cq) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_CQ, RNIC_CMD_ERR_RESOURCE,
                             "all CQs in use");
    }
    return rnic_dev_cq_make(s, (void *)cmd->u.raw, i);
}

static void rnic_dev_cq_free(RnicState *s, RnicCq *cq)
{
    if (cq->kicked) {
        QTAILQ_REMOVE(&s->kicked_cqs, cq, kick_link);
    }
    s->cqs[cq->cqn - 1] = NULL;
    rnic_db_own(s, RNIC_REG_DB_CQ, cq->cqn, 0);
    rnic_db_own(s, RNIC_REG_DB_CQ_ARM, cq->cqn, 0);
    rnic_cq_destroy(cq->core);
    g_free(cq);
}

uint16_t rnic_cmd_destroy_cq(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_cq *p = (void *)cmd->u.raw;
    RnicCq *cq = rnic_dev_cq_get(s, le32_to_cpu(p->cqn));

    if (!cq) {
        return rnic_cmd_fail(RNIC_CMD_DESTROY_CQ, RNIC_CMD_ERR_HANDLE,
                             "cqn: no such CQ");
    }
    if (rnic_cq_refcount(cq->core)) {
        return rnic_cmd_fail(RNIC_CMD_DESTROY_CQ, RNIC_CMD_ERR_BUSY,
                             "QPs still use the CQ");
    }
    rnic_dev_cq_free(s, cq);
    return RNIC_CMD_OK;
}

/* ---- SRQs ---- */

/* CREATE_SRQ's checks and work, at slot @i (srqn i + 1). */
uint16_t rnic_dev_srq_make(RnicState *s, struct rnic_cmd_srq *p, uint32_t i)
{
    uint64_t ring = le64_to_cpu(p->ring_addr);
    uint32_t pdn = le32_to_cpu(p->pdn);
    RnicSrq *srq;

    if (!rnic_wq_ring_ok(ring, p->log_size, s->params.limits.max_srq_wr)) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_SRQ, RNIC_CMD_ERR_PARAM,
                             "ring_addr is 0 or not 4 KiB aligned, or "
                             "2^log_size is above max_srq_wr");
    }
    if (!rnic_udb_ok(s, p->udb)) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_SRQ, RNIC_CMD_ERR_PARAM,
                             RNIC_UDB_BAD);
    }
    if (rnic_pd_get(s->stags, pdn) != RNIC_STAG_OK) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_SRQ, RNIC_CMD_ERR_HANDLE,
                             "pdn: no such PD");
    }
    srq = g_new0(RnicSrq, 1);
    srq->srqn = i + 1;
    srq->pdn = pdn;
    srq->udb = le32_to_cpu(p->udb);
    rnic_db_own(s, RNIC_REG_DB_SRQ, srq->srqn, srq->udb);
    rnic_ring_init(&srq->ring, ring, p->log_size, RNIC_RQ_WQE_SIZE);
    srq->core = rnic_srq_new(srq->srqn, 1u << p->log_size, RNIC_WQE_MAX_SGE);
    s->srqs[i] = srq;
    p->srqn = cpu_to_le32(srq->srqn);
    return RNIC_CMD_OK;
}

uint16_t rnic_cmd_create_srq(RnicState *s, struct rnic_cmd *cmd)
{
    uint32_t i;

    for (i = 0; i < s->params.limits.max_srq && s->srqs[i]; i++) {
        continue;
    }
    if (i == s->params.limits.max_srq) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_SRQ, RNIC_CMD_ERR_RESOURCE,
                             "all SRQs in use");
    }
    return rnic_dev_srq_make(s, (void *)cmd->u.raw, i);
}

uint16_t rnic_cmd_modify_srq(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_modify_srq *p = (void *)cmd->u.raw;
    RnicSrq *srq = rnic_dev_srq_get(s, le32_to_cpu(p->srqn));
    uint32_t limit = le32_to_cpu(p->limit);

    if (!srq) {
        return rnic_cmd_fail(RNIC_CMD_MODIFY_SRQ, RNIC_CMD_ERR_HANDLE,
                             "srqn: no such SRQ");
    }
    if (limit > rnic_ring_entries(&srq->ring)) {
        return rnic_cmd_fail(RNIC_CMD_MODIFY_SRQ, RNIC_CMD_ERR_PARAM,
                             "limit: more than the SRQ's entries");
    }
    srq->limit = limit;
    return RNIC_CMD_OK;
}

/*
 * The SRQ limit, checked as each receive taken from the SRQ completes:
 * what is left is what the core holds and the ring has not yet given it.
 */
void rnic_dev_srq_check_limit(RnicState *s, RnicSrq *srq)
{
    uint32_t left;

    if (!srq->limit) {
        return;
    }
    left = rnic_srq_count(srq->core) + rnic_ring_used(&srq->ring);
    if (left < srq->limit) {
        srq->limit = 0;
        rnic_eq_post(s, RNIC_EV_SRQ_LIMIT, srq->srqn, left, 0);
    }
}

/* After the core's SRQ is gone. */
static void rnic_dev_srq_release(RnicState *s, RnicSrq *srq)
{
    if (srq->kicked) {
        QTAILQ_REMOVE(&s->kicked_srqs, srq, kick_link);
    }
    s->srqs[srq->srqn - 1] = NULL;
    rnic_db_own(s, RNIC_REG_DB_SRQ, srq->srqn, 0);
    rnic_stag_recv_forget_queue(s->stags, rnic_recv_queue_srq(srq->srqn));
    rnic_pd_put(s->stags, srq->pdn);
    g_free(srq);
}

uint16_t rnic_cmd_destroy_srq(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_srq *p = (void *)cmd->u.raw;
    RnicSrq *srq = rnic_dev_srq_get(s, le32_to_cpu(p->srqn));

    if (!srq) {
        return rnic_cmd_fail(RNIC_CMD_DESTROY_SRQ, RNIC_CMD_ERR_HANDLE,
                             "srqn: no such SRQ");
    }
    if (rnic_srq_destroy(srq->core) == -EBUSY) {
        return rnic_cmd_fail(RNIC_CMD_DESTROY_SRQ, RNIC_CMD_ERR_BUSY,
                             "QPs still use the SRQ");
    }
    rnic_dev_srq_release(s, srq);
    return RNIC_CMD_OK;
}

/* ---- QPs ---- */

static uint16_t rnic_dev_qp_check(RnicState *s, struct rnic_cmd_qp *p,
                                  RnicCq **scq, RnicCq **rcq, RnicSrq **srq)
{
    uint32_t srqn = le32_to_cpu(p->srqn);

    *scq = rnic_dev_cq_get(s, le32_to_cpu(p->send_cqn));
    *rcq = rnic_dev_cq_get(s, le32_to_cpu(p->recv_cqn));
    *srq = srqn == RNIC_NO_SRQ ? NULL : rnic_dev_srq_get(s, srqn);
    if (!*scq || !*rcq) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_QP, RNIC_CMD_ERR_HANDLE,
                             "send_cqn or recv_cqn: no such CQ");
    }
    if (srqn != RNIC_NO_SRQ && !*srq) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_QP, RNIC_CMD_ERR_HANDLE,
                             "srqn: no such SRQ");
    }
    if (!rnic_wq_ring_ok(le64_to_cpu(p->sq_addr), p->sq_log_size,
                         s->params.limits.max_qp_wr)) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_QP, RNIC_CMD_ERR_PARAM,
                             "sq_addr is 0 or not 4 KiB aligned, or "
                             "2^sq_log_size is above max_qp_wr");
    }
    if (!*srq && !rnic_wq_ring_ok(le64_to_cpu(p->rq_addr), p->rq_log_size,
                                  s->params.limits.max_qp_wr)) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_QP, RNIC_CMD_ERR_PARAM,
                             "rq_addr is 0 or not 4 KiB aligned, or "
                             "2^rq_log_size is above max_qp_wr");
    }
    if (le16_to_cpu(p->flags) & ~RNIC_QP_FLAG_KERNEL) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_QP, RNIC_CMD_ERR_PARAM,
                             "flags has a bit other than KERNEL");
    }
    if (!rnic_udb_ok(s, p->udb)) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_QP, RNIC_CMD_ERR_PARAM,
                             RNIC_UDB_BAD);
    }
    if (*srq && (*srq)->pdn != le32_to_cpu(p->pdn)) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_QP, RNIC_CMD_ERR_ACCESS,
                             "srqn: the SRQ belongs to another PD");
    }
    return RNIC_CMD_OK;
}

/*
 * CREATE_QP's checks and work; @qpn 0: a new number, else one the QP
 * number table holds live with no QP (a migration's).
 */
uint16_t rnic_dev_qp_make(RnicState *s, struct rnic_cmd_qp *p, uint32_t qpn)
{
    uint32_t pdn = le32_to_cpu(p->pdn);
    struct rnic_qp_attr attr;
    RnicCq *scq, *rcq;
    RnicSrq *srq;
    uint16_t status = rnic_dev_qp_check(s, p, &scq, &rcq, &srq);
    RnicQp *qp;
    int ret;

    if (status != RNIC_CMD_OK) {
        return status;
    }
    if (rnic_pd_get(s->stags, pdn) != RNIC_STAG_OK) {
        return rnic_cmd_fail(RNIC_CMD_CREATE_QP, RNIC_CMD_ERR_HANDLE,
                             "pdn: no such PD");
    }
    qp = g_new0(RnicQp, 1);
    qp->qpn = qpn;
    ret = qpn ? rnic_qpn_attach(s->qpns, qpn, qp)
              : rnic_qpn_alloc(s->qpns, qp, &qp->qpn);
    if (ret) {
        rnic_pd_put(s->stags, pdn);
        g_free(qp);
        return rnic_cmd_fail(RNIC_CMD_CREATE_QP, RNIC_CMD_ERR_RESOURCE,
                             ret == -EAGAIN ? "free QP numbers are all in "
                             "timewait" : "all QPs in use");
    }
    attr = (struct rnic_qp_attr) {
        .sq_depth = 1u << p->sq_log_size,
        .rq_depth = srq ? 0 : 1u << p->rq_log_size,
        .max_send_sge = RNIC_WQE_MAX_SGE,
        .max_recv_sge = RNIC_WQE_MAX_SGE,
        .max_ord = s->params.limits.max_ord,
        .max_ird = s->params.limits.max_ird,
        .atomics = true,
        .privileged = le16_to_cpu(p->flags) & RNIC_QP_FLAG_KERNEL,
        .send_cq = scq->core,
        .recv_cq = rcq->core,
        .srq = srq ? srq->core : NULL,
    };
    qp->core = rnic_qp_new(qp->qpn, &attr);
    g_assert(qp->core);     /* every attribute was checked above */
    qp->pdn = pdn;
    qp->scq = scq;
    qp->rcq = rcq;
    qp->srq = srq;
    qp->udb = le32_to_cpu(p->udb);
    rnic_db_own(s, RNIC_REG_DB_SQ, qp->qpn, qp->udb);
    rnic_db_own(s, RNIC_REG_DB_RQ, qp->qpn, qp->udb);
    rnic_ring_init(&qp->sq, le64_to_cpu(p->sq_addr), p->sq_log_size,
                   RNIC_SQ_WQE_SIZE);
    rnic_ring_init(&qp->rq, le64_to_cpu(p->rq_addr), p->rq_log_size,
                   RNIC_RQ_WQE_SIZE);
    p->qpn = cpu_to_le32(qp->qpn);
    return RNIC_CMD_OK;
}

uint16_t rnic_cmd_create_qp(RnicState *s, struct rnic_cmd *cmd)
{
    return rnic_dev_qp_make(s, (void *)cmd->u.raw, 0);
}

static void rnic_dev_qp_release(RnicState *s, RnicQp *qp)
{
    rnic_conn_qp_gone(qp);
    if (qp->kicked) {
        QTAILQ_REMOVE(&s->kicked, qp, kick_link);
    }
    rnic_db_own(s, RNIC_REG_DB_SQ, qp->qpn, 0);
    rnic_db_own(s, RNIC_REG_DB_RQ, qp->qpn, 0);
    rnic_qp_free(qp->core);
    /* Links of receives it still held go: the QP number comes back. */
    rnic_stag_recv_forget_queue(s->stags, rnic_recv_queue_qp(qp->qpn));
    rnic_pd_put(s->stags, qp->pdn);
    rnic_qpn_free(s->qpns, qp->qpn);
    g_free(qp->rejected);
    g_free(qp);
}

uint16_t rnic_cmd_destroy_qp(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_qp *p = (void *)cmd->u.raw;
    RnicQp *qp = rnic_dev_qp_get(s, le32_to_cpu(p->qpn));

    if (!qp) {
        return rnic_cmd_fail(RNIC_CMD_DESTROY_QP, RNIC_CMD_ERR_HANDLE,
                             "qpn: no such QP");
    }
    rnic_dev_qp_release(s, qp);
    return RNIC_CMD_OK;
}

uint16_t rnic_cmd_modify_qp(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_modify_qp *p = (void *)cmd->u.raw;
    uint32_t mask = le32_to_cpu(p->mask);
    RnicQp *qp = rnic_dev_qp_get(s, le32_to_cpu(p->qpn));
    int ret;

    if (!qp) {
        return rnic_cmd_fail(RNIC_CMD_MODIFY_QP, RNIC_CMD_ERR_HANDLE,
                             "qpn: no such QP");
    }
    if (mask & ~RNIC_MODIFY_STATE) {
        return rnic_cmd_fail(RNIC_CMD_MODIFY_QP, RNIC_CMD_ERR_PARAM,
                             "mask has bits other than STATE (IRD/ORD are "
                             "CONNECT's and ACCEPT's param.ird, param.ord)");
    }
    if (!(mask & RNIC_MODIFY_STATE)) {
        return RNIC_CMD_OK;
    }
    if (p->state != RNIC_QPS_IDLE && p->state != RNIC_QPS_ERROR) {
        return rnic_cmd_fail(RNIC_CMD_MODIFY_QP, RNIC_CMD_ERR_PARAM,
                             "state is not IDLE or ERROR");
    }
    if (qp->conn && p->state == RNIC_QPS_ERROR) {
        /* An errored QP cannot keep its stream: reset the connection. */
        rnic_conn_abort(qp->conn);
        return RNIC_CMD_OK;
    }
    if (p->state == RNIC_QPS_ERROR && qp->core->state == RNIC_QP_ERROR) {
        /* As in the verbs: ib_drain_qp() asks again after a close. */
        return RNIC_CMD_OK;
    }
    ret = rnic_qp_modify(qp->core, (enum rnic_qp_state)p->state);
    if (ret == -EINVAL || ret == -EBUSY) {
        return rnic_cmd_fail(RNIC_CMD_MODIFY_QP, RNIC_CMD_ERR_STATE,
                             "transition not allowed from this state");
    }
    return RNIC_CMD_OK;
}

uint16_t rnic_cmd_query_qp(RnicState *s, struct rnic_cmd *cmd)
{
    struct rnic_cmd_query_qp *p = (void *)cmd->u.raw;
    RnicQp *qp = rnic_dev_qp_get(s, le32_to_cpu(p->qpn));

    if (!qp) {
        return rnic_cmd_fail(RNIC_CMD_QUERY_QP, RNIC_CMD_ERR_HANDLE,
                             "qpn: no such QP");
    }
    p->state = qp->core->state;     /* same numbering as the ABI */
    p->ird = cpu_to_le16(qp->core->ird);
    p->ord = cpu_to_le16(qp->core->ord);
    /* as the 16-bit indices of the doorbells */
    p->sq_cons = cpu_to_le32((uint16_t)qp->sq.cons);
    p->rq_cons = cpu_to_le32((uint16_t)qp->rq.cons);
    p->term_received = qp->term;
    p->term_layer_etype = qp->term_layer << 4 | (qp->term_etype & 0xf);
    p->term_ecode = qp->term_ecode;
    p->conn_id = cpu_to_le32(qp->conn ? qp->conn->id : 0);
    return RNIC_CMD_OK;
}

void rnic_dev_qp_note_term(RnicQp *qp, bool sent, uint8_t layer, uint8_t etype,
                           uint8_t ecode)
{
    qp->term = sent ? RNIC_QP_TERM_SENT : RNIC_QP_TERM_RECEIVED;
    qp->term_layer = layer;
    qp->term_etype = etype;
    qp->term_ecode = ecode;
}

/* ---- the tables ---- */

static uint64_t rnic_clock_ms(void *opaque)
{
    return qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL);
}

static struct rnic_stag_table *rnic_dev_stag_table_for(RnicState *s)
{
    struct rnic_stag_table_params params = {
        .max_stags = s->params.limits.max_mr + s->params.limits.max_mw,
        .max_pds = s->params.limits.max_pd,
        .max_mrs = s->params.limits.max_mr,
        .max_mws = s->params.limits.max_mw,
        .max_page_list_bytes = s->params.limits.max_page_list_bytes,
        .default_policy = s->params.stag_one_shot ? RNIC_STAG_ONE_SHOT
                                                  : RNIC_STAG_PERSISTENT,
    };

    return rnic_stag_table_new(&params);
}

/*
 * Every max-* property against what the tables and the 16-bit ring
 * indices can hold: a ring of 65536 entries could not tell full from
 * empty, so CQs and work queues stop at RNIC_WQ_LOG_MAX.
 */
static bool rnic_limits_check(RnicState *s, Error **errp)
{
    const RnicLimits *l = &s->params.limits;
    const struct {
        const char *name;
        uint64_t val, min, max;
    } range[] = {
        { "max-pds", l->max_pd, 1, 1u << 24 },
        { "max-mrs", l->max_mr, 1, RNIC_STAG_MAX_INDEX - 1 },
        { "max-mws", l->max_mw, 0, RNIC_STAG_MAX_INDEX - 1 },
        { "max-cqs", l->max_cq, 1, 0xffff },
        { "max-cqes", l->max_cqe, 2, 1u << RNIC_WQ_LOG_MAX },
        { "max-qps", l->max_qp, 1, 0xffff },
        { "max-qp-wrs", l->max_qp_wr, 2, 1u << RNIC_WQ_LOG_MAX },
        { "max-srq-wrs", l->max_srq_wr, 2, 1u << RNIC_WQ_LOG_MAX },
        { "max-srqs", l->max_srq, 0, 0xffff },
        { "max-ird", l->max_ird, 0, RNIC_QP_MAX_RD },
        { "max-ord", l->max_ord, 0, RNIC_QP_MAX_RD },
        { "max-page-list-bytes", l->max_page_list_bytes, 1, SIZE_MAX },
    };

    for (size_t i = 0; i < ARRAY_SIZE(range); i++) {
        if (range[i].val < range[i].min || range[i].val > range[i].max) {
            error_setg(errp, "rnic: %s=%" PRIu64 " is out of range "
                       "(%" PRIu64 "..%" PRIu64 ")", range[i].name,
                       range[i].val, range[i].min, range[i].max);
            return false;
        }
    }
    if ((uint64_t)l->max_mr + l->max_mw > RNIC_STAG_MAX_INDEX) {
        error_setg(errp, "rnic: max-mrs + max-mws = %" PRIu64 " is more "
                   "STags than there are (%u)",
                   (uint64_t)l->max_mr + l->max_mw, RNIC_STAG_MAX_INDEX);
        return false;
    }
    return true;
}

bool rnic_verbs_init(RnicState *s, Error **errp)
{
    if (!s->params.stag_default ||
        !strcmp(s->params.stag_default, "persistent")) {
        s->params.stag_one_shot = false;
    } else if (!strcmp(s->params.stag_default, "one-shot")) {
        s->params.stag_one_shot = true;
    } else {
        error_setg(errp, "rnic: stag-default must be persistent or one-shot");
        return false;
    }
    if (!rnic_limits_check(s, errp)) {
        return false;
    }
    s->stags = rnic_dev_stag_table_for(s);
    s->qpns = rnic_qpn_table_new(s->params.limits.max_qp + 1,
                                 s->params.timewait_ms, rnic_clock_ms, s);
    if (!s->stags || !s->qpns) {
        error_setg(errp, "rnic: cannot allocate the protection or QP tables");
        rnic_stag_table_free(s->stags);
        rnic_qpn_table_free(s->qpns);
        s->stags = NULL;
        s->qpns = NULL;
        return false;
    }
    s->cqs = g_new0(RnicCq *, s->params.limits.max_cq);
    s->srqs = g_new0(RnicSrq *, s->params.limits.max_srq);
    QTAILQ_INIT(&s->kicked);
    QTAILQ_INIT(&s->kicked_cqs);
    QTAILQ_INIT(&s->kicked_srqs);
    return true;
}

/*
 * Destroys every object, QPs first since they hold the others.  QP numbers
 * go through timewait as usual, so traffic of an old QP cannot reach a QP
 * created after the reset.
 */
void rnic_verbs_reset(RnicState *s)
{
    void *qp;

    for (uint32_t n = 1; n <= s->params.limits.max_qp; n++) {
        if (rnic_qpn_lookup(s->qpns, n, &qp) != RNIC_QPN_LIVE) {
            continue;
        }
        if (qp) {
            rnic_dev_qp_release(s, qp);
        } else {
            rnic_qpn_free(s->qpns, n);  /* a failed load's, QP not made */
        }
    }
    for (uint32_t i = 0; i < s->params.limits.max_srq; i++) {
        if (s->srqs[i]) {
            rnic_srq_destroy(s->srqs[i]->core);
            rnic_dev_srq_release(s, s->srqs[i]);
        }
    }
    for (uint32_t i = 0; i < s->params.limits.max_cq; i++) {
        if (s->cqs[i]) {
            rnic_dev_cq_free(s, s->cqs[i]);
        }
    }
    rnic_stag_table_free(s->stags);
    s->stags = rnic_dev_stag_table_for(s);
}

void rnic_verbs_fini(RnicState *s)
{
    rnic_verbs_reset(s);
    rnic_stag_table_free(s->stags);
    rnic_qpn_table_free(s->qpns);
    g_free(s->cqs);
    g_free(s->srqs);
}
