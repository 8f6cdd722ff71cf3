/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Runs every Check suite of the protocol core in one runner, so that one
 * summary line counts them all.
 */
#include <stdlib.h>
#include <check.h>
#include "suites.h"

int main(void)
{
    Suite *(*const suites[])(void) = {
        crc32c_suite,
        addr_map_suite,
        mpa_suite,
        mpa_table_suite,
        fpdu_suite,
        captures_suite,
        cq_suite,
        qp_suite,
        qpn_suite,
        stag_suite,
        mr_fast_suite,
        engine_suite,
        term_suite,
        loopback_suite,
        addr_policy_suite,
        abi_wr_suite,
        capture_suite,
        tcp_repair_suite,
        save_suite,
        engine_save_suite,
    };
    SRunner *sr = srunner_create(NULL);
    int failed;

    for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
        srunner_add_suite(sr, suites[i]());
    }
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
