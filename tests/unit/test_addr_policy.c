/* SPDX-License-Identifier: GPL-2.0-or-later */
/* listen-allow / peer-allow rules (core/device/addr_policy.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <check.h>
#include "device/addr_policy.h"
#include "suites.h"

static struct rnic_addr_policy pol;

static void teardown(void)
{
    rnic_addr_policy_free(&pol);
}

static void must_parse(const char *list)
{
    char bad[64] = "";

    ck_assert_msg(rnic_addr_policy_parse(list, &pol, bad, sizeof(bad)) == 0,
                  "'%s' refused at '%s'", list, bad);
}

/* Whether "addr" (v4 or v6 text) with @port passes the parsed policy. */
static bool allows(const char *addr, uint16_t port)
{
    uint8_t a[16];

    if (inet_pton(AF_INET, addr, a) == 1) {
        return rnic_addr_policy_allows(&pol, RNIC_ADDR_IPV4, a, port);
    }
    ck_assert_int_eq(inet_pton(AF_INET6, addr, a), 1);
    return rnic_addr_policy_allows(&pol, RNIC_ADDR_IPV6, a, port);
}

START_TEST(test_empty_denies_everything)
{
    must_parse("");
    ck_assert(!allows("127.0.0.1", 4000));
    ck_assert(!allows("::1", 4000));
    rnic_addr_policy_free(&pol);
    must_parse(" , ,");
    ck_assert_uint_eq(pol.count, 0);
    ck_assert(!allows("127.0.0.1", 1));
}
END_TEST

START_TEST(test_address_without_port_allows_every_port)
{
    must_parse("127.0.0.1");
    ck_assert(allows("127.0.0.1", 1));
    ck_assert(allows("127.0.0.1", 65535));
    ck_assert(allows("127.0.0.1", 0));      /* the host picks one */
    ck_assert(!allows("127.0.0.2", 4000));
}
END_TEST

START_TEST(test_prefixes)
{
    must_parse("10.1.0.0/16, 192.168.1.128/25");
    ck_assert(allows("10.1.255.3", 80));
    ck_assert(!allows("10.2.0.1", 80));
    ck_assert(allows("192.168.1.200", 80));
    ck_assert(!allows("192.168.1.100", 80));
    rnic_addr_policy_free(&pol);
    must_parse("0.0.0.0/0");
    ck_assert(allows("8.8.8.8", 53));
    ck_assert(!allows("::1", 53));          /* families never mix */
}
END_TEST

START_TEST(test_ports_and_ranges)
{
    must_parse("127.0.0.1:4791,127.0.0.0/8:5000-5009");
    ck_assert(allows("127.0.0.1", 4791));
    ck_assert(!allows("127.0.0.1", 4792));
    ck_assert(allows("127.0.0.9", 5000));
    ck_assert(allows("127.0.0.9", 5009));
    ck_assert(!allows("127.0.0.9", 5010));
    ck_assert(!allows("127.0.0.9", 4999));
    /* a narrow rule never covers "any port" */
    ck_assert(!allows("127.0.0.1", 0));
}
END_TEST

START_TEST(test_ipv6_forms)
{
    must_parse("::1,[fe80::]/10:7000-7001,[2001:db8::5]:9");
    ck_assert(allows("::1", 12345));
    ck_assert(allows("fe80::1234", 7001));
    ck_assert(!allows("fe80::1234", 7002));
    ck_assert(allows("2001:db8::5", 9));
    ck_assert(!allows("2001:db8::6", 9));
    ck_assert(!allows("127.0.0.1", 9));
}
END_TEST

START_TEST(test_bad_rules_named)
{
    static const char *const bad_lists[] = {
        "127.0.0.1:", "127.0.0.1:70000", "127.0.0.1:9-8", "127.0.0.1/33",
        "127.0.0.1/", "localhost", "[127.0.0.1]:4", "[::1", "[::1]x",
        "::1/129", "127.0.0.1:4-", "127.0.0.1:-4", "1.2.3.4:+5",
        "127.0.0.1:0", "[::1]:0-0",
    };

    for (size_t i = 0; i < sizeof(bad_lists) / sizeof(bad_lists[0]); i++) {
        char list[96], bad[64] = "";

        snprintf(list, sizeof(list), "127.0.0.1,%s", bad_lists[i]);
        ck_assert_msg(rnic_addr_policy_parse(list, &pol, bad,
                                             sizeof(bad)) == -EINVAL,
                      "'%s' accepted", bad_lists[i]);
        ck_assert_str_eq(bad, bad_lists[i]);
        ck_assert_uint_eq(pol.count, 0);
        ck_assert(!allows("127.0.0.1", 1));
    }
}
END_TEST

START_TEST(test_addr_str)
{
    uint8_t a[16];
    char buf[64];

    inet_pton(AF_INET, "127.0.0.1", a);
    ck_assert_str_eq(rnic_addr_str(RNIC_ADDR_IPV4, a, 80, buf, sizeof(buf)),
                     "127.0.0.1:80");
    inet_pton(AF_INET6, "::1", a);
    ck_assert_str_eq(rnic_addr_str(RNIC_ADDR_IPV6, a, 80, buf, sizeof(buf)),
                     "[::1]:80");
}
END_TEST

Suite *addr_policy_suite(void)
{
    Suite *s = suite_create("addr_policy");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_empty_denies_everything);
    tcase_add_test(tc, test_address_without_port_allows_every_port);
    tcase_add_test(tc, test_prefixes);
    tcase_add_test(tc, test_ports_and_ranges);
    tcase_add_test(tc, test_ipv6_forms);
    tcase_add_test(tc, test_bad_rules_named);
    tcase_add_test(tc, test_addr_str);
    suite_add_tcase(s, tc);
    return s;
}
