/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One constructor per Check suite; tests/unit/main.c runs them all. */
#ifndef RNIC_UNIT_SUITES_H
#define RNIC_UNIT_SUITES_H

#include <check.h>

Suite *version_suite(void);

#endif
