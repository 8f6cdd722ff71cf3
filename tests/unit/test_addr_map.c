/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <arpa/inet.h>
#include <string.h>
#include <check.h>
#include "device/addr_map.h"
#include "suites.h"

static struct rnic_addr_map map;
static char err[160];

static void parse_ok(const char *spec)
{
    ck_assert_msg(rnic_addr_map_parse(&map, spec, err, sizeof(err)) == 0,
                  "'%s': %s", spec, err);
}

/* Maps the IPv4 or IPv6 text @in and checks the text that comes out. */
static void check_map(const char *in, const char *want, int rule)
{
    uint8_t a[16] = { 0 };
    char out[INET6_ADDRSTRLEN];
    int fam = strchr(in, ':') ? AF_INET6 : AF_INET;

    ck_assert_int_eq(inet_pton(fam, in, a), 1);
    ck_assert_int_eq(rnic_addr_map_to_host(&map, fam == AF_INET ? 4 : 6, a),
                     rule);
    ck_assert_ptr_nonnull(inet_ntop(fam, a, out, sizeof(out)));
    ck_assert_str_eq(out, want);
}

/* The default: two guests on 10.x reach each other on the host's 127.x. */
START_TEST(default_map)
{
    parse_ok(RNIC_ADDR_MAP_DEFAULT);
    check_map("10.0.0.1", "127.0.0.1", 0);
    check_map("10.77.3.2", "127.77.3.2", 0);
    check_map("10.0.2.15", "127.0.2.15", 0);
    /* Outside 10/8: unchanged (siw or hardware elsewhere). */
    check_map("192.168.1.5", "192.168.1.5", -1);
    check_map("11.0.0.1", "11.0.0.1", -1);
    check_map("::1", "::1", -1);
}
END_TEST

START_TEST(first_match_and_odd_prefixes)
{
    parse_ok("192.168.7.9/32=127.0.0.1,192.168.0.0/16=10.1.0.0,"
             "172.16.0.0/12=127.32.0.0,fd00::/8=fe80::");
    check_map("192.168.7.9", "127.0.0.1", 0);
    check_map("192.168.7.10", "10.1.7.10", 1);
    /* /12 splits the second byte: 172.31 keeps its low 4 bits. */
    check_map("172.31.1.2", "127.47.1.2", 2);
    check_map("172.32.1.2", "172.32.1.2", -1);
    check_map("fd12::5", "fe12::5", 3);
}
END_TEST

START_TEST(empty_and_bad)
{
    parse_ok("");
    check_map("10.0.0.1", "10.0.0.1", -1);
    ck_assert_int_eq(rnic_addr_map_parse(&map, "10.0.0.0=127.0.0.0", err,
                                         sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "10.0.0.0=127.0.0.0"));
    ck_assert_int_eq(rnic_addr_map_parse(&map, "10.0.0.0/33=127.0.0.0", err,
                                         sizeof(err)), -1);
    ck_assert_int_eq(rnic_addr_map_parse(&map, "10.0.0.0/8=::1", err,
                                         sizeof(err)), -1);
    ck_assert_int_eq(rnic_addr_map_parse(&map, "10.0.0.0/8=", err,
                                         sizeof(err)), -1);
    ck_assert_int_eq(rnic_addr_map_parse(&map, "x/8=127.0.0.0", err,
                                         sizeof(err)), -1);
}
END_TEST

START_TEST(too_many_rules)
{
    char spec[1024] = "";

    for (int i = 0; i <= RNIC_ADDR_MAP_MAX; i++) {
        strcat(spec, i ? ",10.0.0.0/8=127.0.0.0" : "10.0.0.0/8=127.0.0.0");
    }
    ck_assert_int_eq(rnic_addr_map_parse(&map, spec, err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "rules"));
}
END_TEST

Suite *addr_map_suite(void)
{
    Suite *s = suite_create("addr-map");
    TCase *tc = tcase_create("map");

    tcase_add_test(tc, default_map);
    tcase_add_test(tc, first_match_and_odd_prefixes);
    tcase_add_test(tc, empty_and_bad);
    tcase_add_test(tc, too_many_rules);
    suite_add_tcase(s, tc);
    return s;
}
