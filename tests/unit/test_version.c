/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>
#include <check.h>
#include "rnic-core.h"
#include "suites.h"

START_TEST(test_version_string)
{
    const char *v = rnic_core_version();

    ck_assert_ptr_nonnull(v);
    ck_assert_int_gt(strlen(v), 0);
}
END_TEST

Suite *version_suite(void)
{
    Suite *s = suite_create("version");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_version_string);
    suite_add_tcase(s, tc);
    return s;
}
