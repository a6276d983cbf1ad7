/* Project budgets in the simulator (src/sim/sim_budget.c): the core's
 * budget_tick on the virtual clock, alerts at hand-computed times, hard
 * caps holding jobs in passes and in the autoscaler. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim_fixture.h"

#include "sim/sim.h"
#include "sim/trace.h"

/*
 * One node of 2 GPUs at 1.00 per GPU-hour; project a has a daily budget of
 * 2.00, alerts at 50 and 100 %, hard cap. J1 (a, 2 GPUs, 2 h) starts at 0
 * and spends 2.00 an hour: 50 % (1.00) at 1,800 s, 100 % (2.00) at 3,600 s.
 * It runs on to 7,200 (a hard cap holds waiting jobs, it stops nothing), so
 * day 0 ends with 4.00 spent. J2 (a, 1 GPU, 1 h) arrives at 5,400 and is
 * held until the next UTC day begins at 86,400 (virtual 0 is 1970-01-01
 * 00:00), then runs to 90,000: held 81,000 s. J3 (b, no budget, 1 GPU)
 * arrives at 5,400 too, waits for room until J1 ends and runs 7,200-10,800.
 * Day 1: J2 spends 1.00, the 50 % alert again at 90,000.
 */
static void test_alerts_at_hand_computed_times_and_a_hard_cap_holds(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job jobs[] = {sim_fx_job(0, 7200, 2, "a"), sim_fx_job(5400, 3600, 1, "a"), sim_fx_job(5400, 3600, 1, "b")};
    for (int i = 0; i < 3; i++)
        assert_int_equal(trace_push(&t, &jobs[i]), 0);
    struct sim_config cfg;
    sim_fx_config(&cfg, "{\"sim\": {\"name\": \"budget\"}, \"pools\": [{\"name\": \"small\", \"nodes\": 1,"
                      " \"gpus_per_node\": 2, \"price_per_gpu_hour\": 1.00}],"
                      " \"projects\": [{\"name\": \"a\", \"budget_daily\": 2.00,"
                      " \"alert_pct\": [50, 100], \"hard_cap\": true}]}");
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.jobs[0].first_start_ms, 0);
    assert_int_equal(res.jobs[0].finish_ms, 7200000);
    assert_int_equal(res.jobs[2].first_start_ms, 7200000);
    assert_int_equal(res.jobs[1].first_start_ms, 86400000);
    assert_int_equal(res.jobs[1].finish_ms, 90000000);
    assert_int_equal(res.jobs[1].budget_held_ms, 81000000);
    assert_int_equal(res.jobs[0].budget_held_ms, 0);
    assert_int_equal(res.jobs[2].budget_held_ms, 0);

    const struct sim_budgets *b = res.budgets;
    assert_non_null(b);
    assert_int_equal(b->alerts_total, 3);
    assert_int_equal(b->alerts[0].t_ms, 1800000);
    assert_int_equal(b->alerts[0].pct, 50);
    assert_int_equal(b->alerts[0].spent_micros, 1000000);
    assert_int_equal(b->alerts[0].cap_micros, 2000000);
    assert_int_equal(b->alerts[0].period, BUDGET_DAILY);
    assert_int_equal(b->alerts[1].t_ms, 3600000);
    assert_int_equal(b->alerts[1].pct, 100);
    assert_int_equal(b->alerts[1].spent_micros, 2000000);
    assert_int_equal(b->alerts[2].t_ms, 90000000);
    assert_int_equal(b->alerts[2].pct, 50);
    assert_int_equal(b->held_job_ms_total, 81000000);
    assert_int_equal(b->held_ms[0], 86400000 - 3600000);
    assert_int_equal(b->jobs_held[0], 1);
    assert_int_equal(b->spent_micros[0][BUDGET_DAILY], 1000000);   /* day 1: J2 */
    assert_int_equal(b->spent_micros[0][BUDGET_MONTHLY], 5000000); /* January: 4.00 + 1.00 */

    json_t *r = sim_report_json(&cfg, &t, "budget", &res);
    const json_t *alerts = sim_fx_at(r, "budgets", "alerts");
    assert_int_equal(json_array_size(alerts), 3);
    const json_t *a1 = json_array_get(alerts, 1);
    assert_true(json_real_value(json_object_get(a1, "t_s")) == 3600.0);
    assert_string_equal(json_string_value(json_object_get(a1, "project")), "a");
    assert_string_equal(json_string_value(json_object_get(a1, "period")), "daily");
    assert_int_equal(json_integer_value(json_object_get(a1, "pct")), 100);
    assert_true(json_is_true(json_object_get(a1, "hard_cap_reached")));
    assert_true(json_real_value(sim_fx_at(r, "budgets", "held_job_s")) == 81000.0);
    /* The table lists each alert and the held job-seconds. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    sim_report_table(f, r);
    fclose(f);
    assert_non_null(strstr(text, "budget alerts"));
    assert_non_null(strstr(text, "hard cap: jobs wait"));
    assert_non_null(strstr(text, "81000 job-seconds"));
    assert_null(strstr(text, "not simulated"));
    free(text);
    json_decref(r);
    sim_result_release(&res);
    trace_release(&t);
}

/* Without hard_cap a budget only alerts: nothing waits. A monthly cap of
 * 3.00, the default thresholds (50, 80, 100 %), a 2-GPU job of 2 h at 1.00
 * per GPU-hour (2.00 an hour): 1.50 at 2,700 s, 2.40 at 4,320 s, 3.00 at
 * 5,400 s, when a second job of the project arrives and starts at once. */
static void test_a_soft_monthly_budget_only_alerts(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job jobs[] = {sim_fx_job(0, 7200, 2, "a"), sim_fx_job(5400, 3600, 2, "a")};
    for (int i = 0; i < 2; i++)
        assert_int_equal(trace_push(&t, &jobs[i]), 0);
    struct sim_config cfg;
    sim_fx_config(&cfg, "{\"pools\": [{\"name\": \"p\", \"nodes\": 2, \"gpus_per_node\": 2,"
                      " \"price_per_gpu_hour\": 1.00}],"
                      " \"projects\": [{\"name\": \"a\", \"budget_monthly\": 3.00}]}");
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.jobs[1].first_start_ms, 5400000); /* not held */
    const struct sim_budgets *b = res.budgets;
    assert_int_equal(b->alerts_total, 3);
    assert_int_equal(b->alerts[0].t_ms, 2700000);
    assert_int_equal(b->alerts[1].t_ms, 4320000);
    assert_int_equal(b->alerts[1].pct, 80);
    assert_int_equal(b->alerts[2].t_ms, 5400000);
    assert_int_equal(b->alerts[2].period, BUDGET_MONTHLY);
    assert_int_equal(b->held_job_ms_total, 0);
    sim_result_release(&res);
    trace_release(&t);
}

/*
 * Elastic: the autoscaler adds no node for a held project either. One pool
 * of 2-GPU nodes, 60 s boot, 3.60 per node-hour (1.80 per GPU-hour), idle
 * nodes go after 300 s. Project a: daily 1.00, hard cap. A1 (2 GPUs, 1 h)
 * at 0 starts at 60 and spends 3.60 an hour: 100 % at 60 + 1,000 s. A2
 * (2 GPUs, 1 h) arrives at 1,200: held, no node created for it; A1's node
 * is released at 3,660 + 300. At 86,400 the hold ends, a node is created,
 * ready at 86,460, and A2 runs to 90,060, reaching day 1's cap at 87,460.
 */
static void test_a_held_project_gets_no_nodes(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job jobs[] = {sim_fx_job(0, 3600, 2, "a"), sim_fx_job(1200, 3600, 2, "a")};
    for (int i = 0; i < 2; i++)
        assert_int_equal(trace_push(&t, &jobs[i]), 0);
    struct sim_config cfg;
    sim_fx_config(&cfg, "{\"pools\": [{\"name\": \"burst\", \"gpus_per_node\": 2,"
                      " \"gpu\": \"V100\", \"gpu_memory_mib\": 16384, \"min_nodes\": 0,"
                      " \"max_nodes\": 2, \"boot_time_s\": 60, \"price_per_node_hour\": 3.60,"
                      " \"scale_down_window_s\": 300, \"cooldown_s\": 0}],"
                      " \"projects\": [{\"name\": \"a\", \"budget_daily\": 1.00,"
                      " \"alert_pct\": [100], \"hard_cap\": true}]}");
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.jobs[0].first_start_ms, 60000);
    assert_int_equal(res.budgets->alerts_total, 2);
    assert_int_equal(res.budgets->alerts[0].t_ms, 1060000);
    assert_int_equal(res.budgets->alerts[1].t_ms, 87460000);
    assert_int_equal(res.jobs[1].first_start_ms, 86460000);
    assert_int_equal(res.jobs[1].finish_ms, 90060000);
    assert_int_equal(res.jobs[1].budget_held_ms, 86400000 - 1200000);
    const struct sim_pool_stats *ps = &res.elastic->stats[0];
    assert_int_equal(ps->created, 2); /* one for A1 at 0, one for A2 at 86,400 */
    assert_int_equal(ps->peak_nodes, 1);
    assert_int_equal(res.elastic->events[0].type, POOL_CREATE);
    bool second_create_at_midnight = false;
    for (size_t i = 1; i < res.elastic->nevents; i++)
        if (res.elastic->events[i].type == POOL_CREATE)
            second_create_at_midnight = res.elastic->events[i].t_ms == 86400000;
    assert_true(second_create_at_midnight);
    sim_result_release(&res);
    trace_release(&t);
}

/* The same budgets run twice give the same report bytes. */
static void test_budget_runs_are_deterministic(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    for (int i = 0; i < 400; i++) {
        const char *p = i % 3 == 0 ? "a" : i % 3 == 1 ? "b" : "c";
        struct trace_job j = sim_fx_job(i * 300, 600 + (i * 7919) % 20000, 1 + (i % 4), p);
        assert_int_equal(trace_push(&t, &j), 0);
    }
    struct sim_config cfg;
    sim_fx_config(&cfg, "{\"pools\": [{\"name\": \"p\", \"nodes\": 4, \"gpus_per_node\": 4,"
                      " \"price_per_gpu_hour\": 2.50}],"
                      " \"projects\": [{\"name\": \"a\", \"budget_daily\": 40, \"hard_cap\": true},"
                      " {\"name\": \"b\", \"budget_monthly\": 300, \"alert_pct\": [10, 20, 30]}]}");
    char *out[2];
    for (int k = 0; k < 2; k++) {
        struct sim_result res;
        struct tide_err err = {0};
        assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
        assert_true(res.budgets->alerts_total >= 4);
        assert_true(res.budgets->held_job_ms_total > 0);
        json_t *r = sim_report_json(&cfg, &t, "det", &res);
        out[k] = json_dumps(r, JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
        json_decref(r);
        sim_result_release(&res);
    }
    assert_string_equal(out[0], out[1]);
    free(out[0]);
    free(out[1]);
    trace_release(&t);
}

static void test_budget_config_errors(void **state)
{
    (void)state;
    const char *bad[] = {
        "{\"projects\": [{\"name\": \"a\"}]}",                                  /* no cap */
        "{\"projects\": [{\"budget_daily\": 1}]}",                              /* no name */
        "{\"projects\": [{\"name\": \"a\", \"budget_daily\": 1, \"tip\": 1}]}", /* unknown */
        "{\"projects\": [{\"name\": \"a\", \"budget_daily\": 1, \"quota_gpus\": 4}]}",
        "{\"projects\": [{\"name\": \"a\", \"budget_daily\": 1, \"alert_pct\": [80, 50]}]}",
        "{\"projects\": [{\"name\": \"a\", \"budget_daily\": 1},"
        " {\"name\": \"a\", \"budget_monthly\": 2}]}",
        "{\"projects\": [{\"name\": \"a\", \"budget_daily\": \"lots\"}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct sim_config cfg;
        sim_config_defaults(&cfg);
        json_error_t jerr;
        json_t *root = json_loads(bad[i], 0, &jerr);
        assert_non_null(root);
        struct tide_err err = {0};
        assert_int_equal(sim_config_from_json(&cfg, root, &err), TIDE_EINVAL);
        assert_true(err.message[0] != '\0');
        json_decref(root);
    }
}

static void test_a_budget_for_a_project_not_in_the_trace_is_an_error(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job j = sim_fx_job(0, 60, 1, "a");
    assert_int_equal(trace_push(&t, &j), 0);
    struct sim_config cfg;
    sim_fx_config(&cfg, "{\"sim\": {\"name\": \"typo\"}, \"pools\": [{\"name\": \"small\", \"nodes\": 1,"
                      " \"gpus_per_node\": 2, \"price_per_gpu_hour\": 1.00}],"
                      " \"projects\": [{\"name\": \"aa\", \"budget_daily\": 2.00}]}");
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), TIDE_EINVAL);
    assert_non_null(strstr(err.message, "no job of the trace is in project 'aa'"));
    sim_result_release(&res);
    trace_release(&t);
}

/* Money read from YAML arrives as a real: 300.00 is 300, 2.48 stays 2.48;
 * finer than a millionth is refused. */
static void test_money_from_reals(void **state)
{
    (void)state;
    struct sim_config cfg;
    sim_fx_config(&cfg, "{\"pools\": [{\"name\": \"p\", \"nodes\": 1, \"price_per_gpu_hour\": 2.48}],"
                      " \"projects\": [{\"name\": \"a\", \"budget_daily\": 300.0,"
                      " \"budget_monthly\": 0.1}]}");
    assert_int_equal(cfg.pools[0].price_per_gpu_hour_micros, 2480000);
    assert_int_equal(cfg.budgets.items[0].cap_micros[BUDGET_DAILY], 300000000);
    assert_int_equal(cfg.budgets.items[0].cap_micros[BUDGET_MONTHLY], 100000);
    sim_config_defaults(&cfg);
    json_error_t jerr;
    json_t *root =
        json_loads("{\"projects\": [{\"name\": \"a\", \"budget_daily\": 1e-7}]}", 0, &jerr);
    struct tide_err err = {0};
    assert_int_equal(sim_config_from_json(&cfg, root, &err), TIDE_EINVAL);
    json_decref(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alerts_at_hand_computed_times_and_a_hard_cap_holds),
        cmocka_unit_test(test_a_soft_monthly_budget_only_alerts),
        cmocka_unit_test(test_a_held_project_gets_no_nodes),
        cmocka_unit_test(test_budget_runs_are_deterministic),
        cmocka_unit_test(test_budget_config_errors),
        cmocka_unit_test(test_a_budget_for_a_project_not_in_the_trace_is_an_error),
        cmocka_unit_test(test_money_from_reals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
