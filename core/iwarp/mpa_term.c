/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * RFC 6581: an initiator that cannot take the responder's Reply (no RTR
 * type it offered, or too little IRD) says so with a Terminate, the first
 * and only FPDU it sends, framed as the Reply agreed (CRC, markers).
 */
#include <string.h>
#include "engine.h"
#include "fpdu.h"

bool rnic_mpa_err_is_term(int err)
{
    return err == RNIC_MPA_ERR_RTR || err == RNIC_MPA_ERR_IRD;
}

int rnic_mpa_build_term(const struct rnic_mpa_result *res, int err,
                        uint8_t *buf, size_t size)
{
    struct rnic_ddp_hdr h = {
        .last = true, .ddp_version = RNIC_DDP_VERSION,
        .rdmap_version = RNIC_RDMAP_VERSION, .opcode = RNIC_RDMAP_TERMINATE,
        .qn = RNIC_DDP_QN_TERMINATE, .msn = 1,
    };
    uint8_t ulpdu[sizeof(struct rnic_ddp_untagged_hdr) + RNIC_TERM_BODY_MAX];
    struct rnic_fpdu_tx tx;
    struct rnic_fpdu_out out;
    struct iovec iov = { ulpdu, rnic_ddp_hdr_encode(&h, ulpdu) };
    size_t len = 0;

    iov.iov_len += rnic_term_build(ulpdu + iov.iov_len,
                                   rnic_mpa_err_to_term(err), NULL, 0, 0);
    rnic_fpdu_tx_init(&tx, res->crc, res->markers_tx);
    if (rnic_fpdu_tx_frame(&tx, &iov, 1, &out) < 0 || out.len > size) {
        return RNIC_MPA_ERR_PARAM;
    }
    for (int i = 0; i < out.iovcnt; i++) {
        memcpy(buf + len, out.iov[i].iov_base, out.iov[i].iov_len);
        len += out.iov[i].iov_len;
    }
    return (int)len;
}
