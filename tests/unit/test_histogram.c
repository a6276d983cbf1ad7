/* Unit tests for fixed-bucket histograms (src/core/histogram.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "core/histogram.h"

static const double bounds[] = {0.1, 1, 10};

static void test_a_value_on_a_bound_counts_in_that_bucket(void **state)
{
    (void)state;
    struct histogram h;
    assert_int_equal(histogram_init(&h, bounds, 3), 0);
    histogram_observe(&h, 1);
    assert_int_equal(histogram_cumulative(&h, 0), 0);
    assert_int_equal(histogram_cumulative(&h, 1), 1);
    assert_int_equal(histogram_cumulative(&h, 2), 1);
    assert_int_equal(histogram_cumulative(&h, 3), 1);
}

static void test_buckets_are_cumulative_and_inf_holds_everything(void **state)
{
    (void)state;
    struct histogram h;
    assert_int_equal(histogram_init(&h, bounds, 3), 0);
    const double values[] = {0, 0.05, 0.5, 2, 9.99, 10.01, 1e9, -3};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        histogram_observe(&h, values[i]);
    assert_int_equal(histogram_cumulative(&h, 0), 3); /* 0, 0.05, -3 */
    assert_int_equal(histogram_cumulative(&h, 1), 4);
    assert_int_equal(histogram_cumulative(&h, 2), 6);
    assert_int_equal(histogram_cumulative(&h, 3), 8);
    assert_int_equal(h.count, 8);
    assert_true(fabs(h.sum - (0 + 0.05 + 0.5 + 2 + 9.99 + 10.01 + 1e9 - 3)) < 1e-6);
}

static void test_nan_is_not_counted(void **state)
{
    (void)state;
    struct histogram h;
    assert_int_equal(histogram_init(&h, bounds, 3), 0);
    histogram_observe(&h, NAN);
    assert_int_equal(h.count, 0);
    assert_true(h.sum == 0);
}

static void test_bounds_that_do_not_increase_are_refused(void **state)
{
    (void)state;
    struct histogram h;
    const double flat[] = {1, 1};
    const double down[] = {2, 1};
    double many[HISTOGRAM_MAX_BUCKETS + 1];
    for (int i = 0; i <= HISTOGRAM_MAX_BUCKETS; i++)
        many[i] = i;
    assert_int_equal(histogram_init(&h, flat, 2), -1);
    assert_int_equal(histogram_init(&h, down, 2), -1);
    assert_int_equal(histogram_init(&h, bounds, 0), -1);
    assert_int_equal(histogram_init(&h, many, HISTOGRAM_MAX_BUCKETS + 1), -1);
    assert_int_equal(histogram_init(&h, many, HISTOGRAM_MAX_BUCKETS), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_value_on_a_bound_counts_in_that_bucket),
        cmocka_unit_test(test_buckets_are_cumulative_and_inf_holds_everything),
        cmocka_unit_test(test_nan_is_not_counted),
        cmocka_unit_test(test_bounds_that_do_not_increase_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
