/* Money as the API writes it (pool_money, src/server/pool_api.c): six
 * places, the sign before the whole amount. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/pool_loop_state.h"

static const char *money(int64_t micros)
{
    static char buf[40];
    pool_money(buf, sizeof buf, micros);
    return buf;
}

static void test_amounts_have_six_places_and_one_sign(void **state)
{
    (void)state;
    assert_string_equal(money(4200000), "4.200000");
    assert_string_equal(money(0), "0.000000");
    assert_string_equal(money(7), "0.000007");
    assert_string_equal(money(-14013000), "-14.013000");
    assert_string_equal(money(-500000), "-0.500000");
    assert_string_equal(money(INT64_MIN), "-9223372036854.775808");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_amounts_have_six_places_and_one_sign),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
