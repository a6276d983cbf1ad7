/* Connection-flood guards of the HTTP front (src/server/http_guard.c):
 * the per-address count behind the per-address limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>

#include "server/http_guard.h"

static struct sockaddr_in v4(uint32_t host_order)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(host_order);
    return a;
}

#define SA(a) ((const struct sockaddr *)&(a)), sizeof(a)

static void test_an_outside_address_is_admitted_up_to_the_limit_and_again_after_a_close(void **state)
{
    (void)state;
    struct sockaddr_in a = v4(0x0a000001); /* 10.0.0.1 */
    for (int i = 0; i < HTTP_GUARD_PER_IP_LIMIT; i++) {
        assert_int_equal(http_guard_accept(NULL, SA(a)), MHD_YES);
        http_guard_count(SA(a), +1);
    }
    assert_int_equal(http_guard_held(SA(a)), HTTP_GUARD_PER_IP_LIMIT);
    assert_int_equal(http_guard_accept(NULL, SA(a)), MHD_NO);
    struct sockaddr_in other = v4(0x0a000002);
    assert_int_equal(http_guard_accept(NULL, SA(other)), MHD_YES);
    http_guard_count(SA(a), -1);
    assert_int_equal(http_guard_accept(NULL, SA(a)), MHD_YES);
    for (int i = 0; i < HTTP_GUARD_PER_IP_LIMIT - 1; i++)
        http_guard_count(SA(a), -1);
    assert_int_equal(http_guard_held(SA(a)), 0);
}

static void test_loopback_is_never_limited_or_counted(void **state)
{
    (void)state;
    struct sockaddr_in lo = v4(0x7f000001), lo2 = v4(0x7f0000fe); /* 127.0.0.254 */
    struct sockaddr_in6 lo6;
    memset(&lo6, 0, sizeof lo6);
    lo6.sin6_family = AF_INET6;
    lo6.sin6_addr = in6addr_loopback;
    assert_true(http_guard_is_loopback(SA(lo)) && http_guard_is_loopback(SA(lo6)));
    assert_false(http_guard_is_loopback(SA(lo2))); /* limited: tests play a client with it */
    struct sockaddr_in out = v4(0x08080808);
    assert_false(http_guard_is_loopback(SA(out)));
    for (int i = 0; i < 3 * HTTP_GUARD_PER_IP_LIMIT; i++) {
        assert_int_equal(http_guard_accept(NULL, SA(lo)), MHD_YES);
        http_guard_count(SA(lo), +1);
    }
    assert_int_equal(http_guard_held(SA(lo)), 0);
}

/* Thousands of addresses share probe runs in the table; closing them in
 * another order than they came must leave every other count intact, or an
 * address could be locked out (or let in) by its neighbours. */
static void test_counts_stay_right_when_many_addresses_come_and_go_in_any_order(void **state)
{
    (void)state;
    enum { N = 6000 };
    static unsigned held[N];
    uint32_t seed = 12345;
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < N; i++) {
            struct sockaddr_in a = v4(0x0b000000u + (uint32_t)i * 7919u);
            unsigned n = 1 + (unsigned)(i % 3);
            for (unsigned k = 0; k < n; k++)
                http_guard_count(SA(a), +1);
            held[i] += n;
        }
        /* close about half of them, in a scrambled order */
        for (int j = 0; j < N; j++) {
            seed = seed * 1103515245u + 12345u;
            int i = (int)((seed >> 8) % N);
            if (!held[i])
                continue;
            struct sockaddr_in a = v4(0x0b000000u + (uint32_t)i * 7919u);
            http_guard_count(SA(a), -1);
            held[i]--;
        }
        for (int i = 0; i < N; i++) {
            struct sockaddr_in a = v4(0x0b000000u + (uint32_t)i * 7919u);
            assert_int_equal(http_guard_held(SA(a)), held[i]);
        }
    }
    for (int i = 0; i < N; i++) {
        struct sockaddr_in a = v4(0x0b000000u + (uint32_t)i * 7919u);
        while (held[i]) {
            http_guard_count(SA(a), -1);
            held[i]--;
        }
    }
    for (int i = 0; i < N; i++) {
        struct sockaddr_in a = v4(0x0b000000u + (uint32_t)i * 7919u);
        assert_int_equal(http_guard_held(SA(a)), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_outside_address_is_admitted_up_to_the_limit_and_again_after_a_close),
        cmocka_unit_test(test_loopback_is_never_limited_or_counted),
        cmocka_unit_test(test_counts_stay_right_when_many_addresses_come_and_go_in_any_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
