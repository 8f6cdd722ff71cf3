/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "rnic-core.h"

const char *rnic_core_version(void)
{
    return "0.1";
}
