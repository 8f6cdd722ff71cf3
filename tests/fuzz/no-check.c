/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Lets the unit-test fixtures (memdma, epfix, pcap_stream) run outside a
 * Check runner, in the fuzzers, their seed generator and the benchmarks:
 * Check's own _mark_point() exits when no test is running, so these two
 * take its place.  A failed fixture assertion aborts, which libFuzzer
 * reports as a crash with the input that caused it.  The fuzzers' own
 * properties fail the same way, through fuzz_fail().
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <check.h>
#include "fuzz.h"

void _mark_point(const char *file, int line)
{
    (void)file;
    (void)line;
}

void _ck_assert_failed(const char *file, int line, const char *expr,
                       const char *msg, ...)
{
    va_list ap;

    fprintf(stderr, "%s:%d: %s", file, line, expr);
    if (msg) {
        fputs(": ", stderr);
        va_start(ap, msg);
        vfprintf(stderr, msg, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    abort();
}

void fuzz_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}
