/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A Check assertion on an STag table result, naming both statuses. */
#ifndef RNIC_UNIT_STAG_CHECK_H
#define RNIC_UNIT_STAG_CHECK_H

#include <check.h>
#include "iwarp/stag.h"

#define ck_assert_st(expr, want) do { \
        enum rnic_stag_status st_ = (expr); \
        ck_assert_msg(st_ == (want), "%s: got %s, want %s", #expr, \
                      rnic_stag_status_name(st_), \
                      rnic_stag_status_name(want)); \
    } while (0)

#endif
