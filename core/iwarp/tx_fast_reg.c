/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A FAST_REG work request, run in send-queue order: the page
 * list is read from guest memory when the WR reaches the head of the
 * queue, not when it was posted, so a WR behind it sees the registration
 * and a WR before it does not.  Only a kernel QP may post one; a user QP's
 * attempt, a page list too long for the region or a bad page size fail
 * the WR (and, as for every local operation, the QP).
 */
#include <endian.h>
#include <stdlib.h>
#include "engine_internal.h"

static enum rnic_wc_status fast_reg_status(enum rnic_stag_status st)
{
    switch (st) {
    case RNIC_STAG_OK:
        return RNIC_WC_SUCCESS;
    case RNIC_STAG_ERR_DMA:
        return RNIC_WC_LOC_ACCESS_ERR;
    case RNIC_STAG_ERR_INVALID_ARG:
        return RNIC_WC_LOC_QP_OP_ERR;
    default:
        return RNIC_WC_LOC_PROT_ERR;
    }
}

enum rnic_wc_status rnic_tx_fast_reg(struct rnic_ep *ep,
                                     const struct rnic_fast_reg_params *p)
{
    struct rnic_fast_reg_attr a = {
        .stag = p->stag, .pd = ep->pd, .access = p->access,
        .npages = p->npages, .page_shift = p->page_shift,
        .first_byte_offset = p->first_byte_offset, .length = p->length,
        .base_to = p->iova,
    };
    enum rnic_stag_status st = RNIC_STAG_ERR_INVALID_ARG;
    uint64_t *pages;

    if (!ep->qp->attr.privileged) {
        return RNIC_WC_LOC_QP_OP_ERR;
    }
    /* The bound before the allocation: the guest's count is untrusted. */
    if (p->npages == 0 || p->npages > RNIC_MR_FAST_MAX_PAGES) {
        return RNIC_WC_LOC_QP_OP_ERR;
    }
    pages = malloc((size_t)p->npages * sizeof(*pages));
    if (!pages) {
        return RNIC_WC_GENERAL_ERR;
    }
    if (rnic_dma_read(ep->dma, p->pbl_addr, pages,
                      (size_t)p->npages * sizeof(*pages)) < 0) {
        st = RNIC_STAG_ERR_DMA;
    } else {
        for (uint32_t i = 0; i < p->npages; i++) {
            pages[i] = le64toh(pages[i]);
        }
        a.pages = pages;
        st = rnic_mr_fast_reg(ep->stags, &a);
    }
    free(pages);
    return fast_reg_status(st);
}
