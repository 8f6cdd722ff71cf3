/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Guest queue entries to core work requests and back (core/device/abi_wr.c). */
#include <endian.h>
#include <string.h>
#include <check.h>
#include "device/abi_wr.h"
#include "suites.h"

START_TEST(test_send_translated)
{
    struct rnic_sq_wqe w = {
        .wr_id = htole64(0x1122334455667788ull),
        .opcode = RNIC_WQE_WRITE,
        .flags = RNIC_WQE_FLAG_SIGNALED | RNIC_WQE_FLAG_FENCE,
        .num_sge = 2,
        .remote_stag = htole32(0xabcd01),
        .remote_addr = htole64(0x1000),
        .sge = { { .stag = htole32(7), .addr = htole64(0x20),
                   .length = htole32(30) },
                 { .stag = htole32(8), .addr = htole64(0x40),
                   .length = htole32(50) } },
    };
    struct rnic_send_wr wr;

    ck_assert_ptr_null(rnic_abi_send_wr(&w, &wr));
    ck_assert_uint_eq(wr.wr_id, 0x1122334455667788ull);
    ck_assert_int_eq(wr.opcode, RNIC_WR_WRITE);
    ck_assert_uint_eq(wr.flags, RNIC_WR_SIGNALED | RNIC_WR_FENCE);
    ck_assert_uint_eq(wr.num_sge, 2);
    ck_assert_uint_eq(wr.sge[1].stag, 8);
    ck_assert_uint_eq(wr.sge[1].to, 0x40);
    ck_assert_uint_eq(wr.sge[1].length, 50);
    ck_assert_uint_eq(wr.remote_stag, 0xabcd01);
    ck_assert_uint_eq(wr.remote_to, 0x1000);
}
END_TEST

START_TEST(test_send_inline_and_bind)
{
    struct rnic_sq_wqe w = {
        .opcode = RNIC_WQE_SEND, .flags = RNIC_WQE_FLAG_INLINE, .num_sge = 5,
    };
    struct rnic_send_wr wr;

    memcpy(w.sge, "hello", 5);
    ck_assert_ptr_null(rnic_abi_send_wr(&w, &wr));
    ck_assert_uint_eq(wr.inline_len, 5);
    ck_assert_mem_eq(wr.inline_data, "hello", 5);

    memset(&w, 0, sizeof(w));
    w.opcode = RNIC_WQE_BIND_MW;
    w.remote_stag = htole32(0x500);
    w.bind_access = htole32(0x7f000003);
    w.num_sge = 1;
    w.sge[0] = (struct rnic_wqe_sge) {
        .addr = htole64(0x3000), .length = htole32(4096), .stag = htole32(9),
    };
    ck_assert_ptr_null(rnic_abi_send_wr(&w, &wr));
    ck_assert_int_eq(wr.opcode, RNIC_WR_BIND_MW);
    ck_assert_uint_eq(wr.bind.mw_stag, 0x500);
    ck_assert_uint_eq(wr.bind.mr_stag, 9);
    ck_assert_uint_eq(wr.bind.length, 4096);
    ck_assert_uint_eq(wr.bind.access, 0x000003);
    ck_assert_uint_eq(wr.bind.key, 0x7f);
    ck_assert_uint_eq(wr.num_sge, 0);
}
END_TEST

/* FAST_REG's fields sit in the SGE area; READ_INV names its STag. */
START_TEST(test_fast_reg_and_read_inv)
{
    struct rnic_sq_wqe w = {
        .opcode = RNIC_WQE_FAST_REG, .flags = RNIC_WQE_FLAG_SIGNALED,
        .fr = {
            .pbl_addr = htole64(0x123000), .iova = htole64(0x7000000),
            .length = htole64(8000), .npages = htole32(2),
            .access = htole32(RNIC_ACC_LOCAL_WRITE | RNIC_ACC_REMOTE_READ),
            .stag = htole32(0x1234), .first_byte_offset = htole32(192),
            .page_shift = 12,
        },
    };
    struct rnic_cqe c = { .opcode = RNIC_WC_FAST_REG };
    struct rnic_cq_entry e;
    struct rnic_send_wr wr;

    ck_assert_ptr_null(rnic_abi_send_wr(&w, &wr));
    ck_assert_int_eq(wr.opcode, RNIC_WR_FAST_REG);
    ck_assert_uint_eq(wr.num_sge, 0);
    ck_assert_uint_eq(wr.fast_reg.pbl_addr, 0x123000);
    ck_assert_uint_eq(wr.fast_reg.iova, 0x7000000);
    ck_assert_uint_eq(wr.fast_reg.length, 8000);
    ck_assert_uint_eq(wr.fast_reg.npages, 2);
    ck_assert_uint_eq(wr.fast_reg.access, 0x6);
    ck_assert_uint_eq(wr.fast_reg.stag, 0x1234);
    ck_assert_uint_eq(wr.fast_reg.first_byte_offset, 192);
    ck_assert_uint_eq(wr.fast_reg.page_shift, 12);
    rnic_abi_cqe(&c, 1, &e);
    ck_assert_uint_eq(e.opcode, RNIC_WQE_FAST_REG);

    memset(&w, 0, sizeof(w));
    w.opcode = RNIC_WQE_READ_INV;
    w.num_sge = 1;
    w.imm_or_stag = htole32(0x4411);
    w.sge[0] = (struct rnic_wqe_sge) {
        .addr = htole64(0x10), .length = htole32(64), .stag = htole32(0x4411),
    };
    ck_assert_ptr_null(rnic_abi_send_wr(&w, &wr));
    ck_assert_int_eq(wr.opcode, RNIC_WR_READ_INV);
    ck_assert_uint_eq(wr.invalidate_stag, 0x4411);
    ck_assert_uint_eq(wr.num_sge, 1);
    ck_assert(rnic_wr_is_read(wr.opcode));
    ck_assert_int_eq(rnic_wc_opcode_of(wr.opcode), RNIC_WC_READ);
}
END_TEST

/* Refused entries still report their wr_id, for the one error CQE. */
START_TEST(test_send_malformed)
{
    struct rnic_sq_wqe w = { .wr_id = htole64(42) };
    struct rnic_send_wr wr;

    w.opcode = 0x7f;
    ck_assert_ptr_nonnull(rnic_abi_send_wr(&w, &wr));
    ck_assert_uint_eq(wr.wr_id, 42);
    w.opcode = RNIC_WQE_RECV;           /* a completion opcode only */
    ck_assert_ptr_nonnull(rnic_abi_send_wr(&w, &wr));
    w.opcode = RNIC_WQE_SEND;
    w.flags = 0x80;
    ck_assert_ptr_nonnull(rnic_abi_send_wr(&w, &wr));
    w.flags = 0;
    w.num_sge = RNIC_WQE_MAX_SGE + 1;
    ck_assert_ptr_nonnull(rnic_abi_send_wr(&w, &wr));
    w.flags = RNIC_WQE_FLAG_INLINE;
    w.num_sge = RNIC_WQE_INLINE_MAX + 1;
    ck_assert_ptr_nonnull(rnic_abi_send_wr(&w, &wr));
    ck_assert_uint_eq(wr.wr_id, 42);
}
END_TEST

START_TEST(test_recv)
{
    struct rnic_rq_wqe w = {
        .wr_id = htole64(9), .num_sge = 1,
        .sge = { { .stag = htole32(3), .addr = htole64(0x10),
                   .length = htole32(64) } },
    };
    struct rnic_recv_wr wr;

    ck_assert_ptr_null(rnic_abi_recv_wr(&w, &wr));
    ck_assert_uint_eq(wr.wr_id, 9);
    ck_assert_uint_eq(wr.sge[0].length, 64);
    w.num_sge = RNIC_WQE_MAX_SGE + 1;
    ck_assert_ptr_nonnull(rnic_abi_recv_wr(&w, &wr));
    ck_assert_uint_eq(wr.wr_id, 9);
}
END_TEST

START_TEST(test_cqe)
{
    struct rnic_cqe c = {
        .wr_id = 5, .status = RNIC_WC_REM_ACCESS_ERR,
        .opcode = RNIC_WC_RECV, .byte_len = 100, .qpn = 3,
        .flags = RNIC_WC_WITH_IMM | RNIC_WC_SOLICITED, .imm_data = 77,
    };
    struct rnic_cq_entry e;

    rnic_abi_cqe(&c, 1, &e);
    ck_assert_uint_eq(le64toh(e.wr_id), 5);
    ck_assert_uint_eq(e.status, RNIC_CQE_REM_ACCESS_ERR);
    ck_assert_uint_eq(e.opcode, RNIC_WQE_RECV);
    ck_assert_uint_eq(le32toh(e.byte_len), 100);
    ck_assert_uint_eq(le32toh(e.imm), 77);
    ck_assert_uint_eq(e.flags, RNIC_CQE_FLAG_WITH_IMM |
                      RNIC_CQE_FLAG_SOLICITED);
    ck_assert_uint_eq(e.phase, 1);
}
END_TEST

Suite *abi_wr_suite(void)
{
    Suite *s = suite_create("abi_wr");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_send_translated);
    tcase_add_test(tc, test_send_inline_and_bind);
    tcase_add_test(tc, test_fast_reg_and_read_inv);
    tcase_add_test(tc, test_send_malformed);
    tcase_add_test(tc, test_recv);
    tcase_add_test(tc, test_cqe);
    suite_add_tcase(s, tc);
    return s;
}
