/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include "suites.h"

Suite *loopback_suite(void)
{
    return suite_create("loopback");
}
