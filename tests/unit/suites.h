/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One constructor per Check suite; tests/unit/main.c runs them all. */
#ifndef RNIC_UNIT_SUITES_H
#define RNIC_UNIT_SUITES_H

#include <check.h>

Suite *crc32c_suite(void);
Suite *mpa_suite(void);
Suite *mpa_table_suite(void);
Suite *fpdu_suite(void);
Suite *captures_suite(void);
Suite *cq_suite(void);
Suite *qp_suite(void);
Suite *qpn_suite(void);
Suite *stag_suite(void);
Suite *mr_fast_suite(void);
Suite *engine_suite(void);
Suite *term_suite(void);
Suite *loopback_suite(void);
Suite *addr_policy_suite(void);
Suite *abi_wr_suite(void);
Suite *addr_map_suite(void);
Suite *capture_suite(void);
Suite *tcp_repair_suite(void);
Suite *save_suite(void);
Suite *engine_save_suite(void);

#endif
