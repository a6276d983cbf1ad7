/* Unit tests for demand forecasting and predictive pre-scaling
 * (src/core/forecast.c, autoscaler.c). Times are UTC; 2024-01-01 was a Monday. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "cluster_fixture.h"
#include "core/autoscaler.h"
#include "core/forecast.h"

#define HOUR (3600LL * 1000)
#define WEEK (7 * 24 * HOUR)
#define MONDAY_2024_01_01 (1704067200LL * 1000)

static void test_hours_of_the_week_start_on_monday(void **state)
{
    (void)state;
    assert_int_equal(forecast_bucket(MONDAY_2024_01_01), 0);
    assert_int_equal(forecast_bucket(MONDAY_2024_01_01 + 9 * HOUR + 59 * 60 * 1000), 9);
    assert_int_equal(forecast_bucket(MONDAY_2024_01_01 + WEEK - 1), 167);
    assert_int_equal(forecast_bucket(MONDAY_2024_01_01 + WEEK), 0);
}

/* Two weeks where 16 GPUs are wanted on Mondays 09:00-10:00 and none otherwise. */
static void feed_monday_mornings(struct forecast *f, int weeks)
{
    for (int64_t t = MONDAY_2024_01_01; t < MONDAY_2024_01_01 + weeks * WEEK; t += 10 * 60 * 1000) {
        int hour_of_week = forecast_bucket(t);
        forecast_observe(f, t, hour_of_week == 9 ? 16 : 0);
    }
}

static void test_a_weekly_rise_is_predicted_for_its_hour_only(void **state)
{
    (void)state;
    struct forecast f;
    forecast_init(&f, 0.5);
    feed_monday_mornings(&f, 2);
    int64_t week3 = MONDAY_2024_01_01 + 2 * WEEK;
    assert_true(forecast_predict(&f, week3 + 9 * HOUR + 15 * 60 * 1000) > 15.9);
    assert_true(forecast_predict(&f, week3 + 12 * HOUR) < 0.1);
    assert_true(forecast_predict(&f, week3 + 24 * HOUR + 9 * HOUR) < 0.1); /* Tuesday */
}

static void test_the_error_falls_once_the_pattern_is_learned(void **state)
{
    (void)state;
    struct forecast one, three;
    forecast_init(&one, 0.5);
    forecast_init(&three, 0.5);
    feed_monday_mornings(&one, 1);
    feed_monday_mornings(&three, 3);
    assert_true(forecast_error(&one) > 0); /* the first rise came unannounced */
    assert_true(forecast_error(&three) < forecast_error(&one) / 2);
}

static void test_nothing_observed_predicts_nothing(void **state)
{
    (void)state;
    struct forecast f;
    forecast_init(&f, 0.5);
    assert_true(forecast_predict(&f, MONDAY_2024_01_01) == 0);
    assert_true(forecast_error(&f) == 0);
}

static struct pool predictive_pool(void)
{
    struct pool p;
    pool_defaults(&p);
    snprintf(p.name, sizeof p.name, "warm");
    p.gpus_per_node = 4;
    p.max_nodes = 10;
    p.boot_time_s = 15 * 60;
    p.boot_timeout_s = 3600;
    p.scale_down_window_s = 60;
    p.predictive = true;
    return p;
}

static void test_a_predictive_pool_boots_nodes_ahead_of_the_rise(void **state)
{
    (void)state;
    struct pool pools[1] = {predictive_pool()};
    struct autoscaler a;
    autoscaler_init(&a, pools, 1);
    struct cluster c;
    cluster_init(&c);
    struct pool_action_list out;
    pool_action_list_init(&out);
    /* Two weeks of Monday mornings with 8 GPUs of jobs waiting (never placed here). */
    for (int64_t t = MONDAY_2024_01_01; t < MONDAY_2024_01_01 + 2 * WEEK; t += 10 * 60 * 1000) {
        cluster_release(&c);
        cluster_init(&c);
        if (forecast_bucket(t) == 9) {
            struct job j = fx_job(1, 4), k = fx_job(2, 4);
            j.submit_ms = k.submit_ms = t;
            cluster_add_job(&c, &j);
            cluster_add_job(&c, &k);
        }
        pool_action_list_clear(&out);
        assert_true(autoscaler_decide(&a, &c, t, &out) >= 0);
    }
    /* Week three, Monday 08:50, nothing waits yet: 2 nodes are started now. */
    cluster_release(&c);
    cluster_init(&c);
    pool_action_list_clear(&out);
    int64_t before = MONDAY_2024_01_01 + 2 * WEEK + 8 * HOUR + 50 * 60 * 1000;
    assert_true(autoscaler_decide(&a, &c, before, &out) >= 0);
    int created = 0;
    for (size_t i = 0; i < out.len; i++)
        if (out.items[i].type == POOL_CREATE) {
            created += out.items[i].count;
            assert_non_null(strstr(out.items[i].reason, "predicted"));
        }
    assert_int_equal(created, 2);
    /* An hour earlier nothing was predicted, so nothing was started. */
    struct autoscaler quiet;
    autoscaler_init(&quiet, pools, 1);
    quiet.state[0].forecast = a.state[0].forecast;
    pool_action_list_clear(&out);
    assert_true(autoscaler_decide(&quiet, &c, before - HOUR, &out) >= 0);
    assert_int_equal(out.len, 0);
    autoscaler_release(&quiet);
    pool_action_list_release(&out);
    cluster_release(&c);
    autoscaler_release(&a);
}

static void test_predictive_is_off_by_default(void **state)
{
    (void)state;
    struct pool p;
    pool_defaults(&p);
    assert_false(p.predictive);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hours_of_the_week_start_on_monday),
        cmocka_unit_test(test_a_weekly_rise_is_predicted_for_its_hour_only),
        cmocka_unit_test(test_the_error_falls_once_the_pattern_is_learned),
        cmocka_unit_test(test_nothing_observed_predicts_nothing),
        cmocka_unit_test(test_a_predictive_pool_boots_nodes_ahead_of_the_rise),
        cmocka_unit_test(test_predictive_is_off_by_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
