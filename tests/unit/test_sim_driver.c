/* The simulator driver (src/sim/sim_driver.c) and its report on traces
 * small enough to work out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim_fixture.h"

#include "sim/sim.h"
#include "sim/sim_state.h"
#include "sim/trace.h"

#define DATA TIDE_TEST_DATA_DIR "/sim/"

static void tiny_config(struct sim_config *cfg)
{
    sim_config_defaults(cfg);
    cfg->npools = 1;
    snprintf(cfg->pools[0].name, sizeof cfg->pools[0].name, "small");
    cfg->pools[0].nodes = 3;
    cfg->pools[0].gpus_per_node = 2;
    cfg->pools[0].price_per_gpu_hour_micros = 1000000;
}

/* tiny.csv run on tiny_config: the trace, config and result a test reads. */
static void run_tiny(struct trace *t, struct sim_config *cfg, struct sim_result *res)
{
    trace_init(t);
    struct tide_err err = {0};
    assert_int_equal(trace_load(t, &trace_reader_csv, DATA "tiny.csv", &err), 0);
    tiny_config(cfg);
    assert_int_equal(sim_run(cfg, t, NULL, res, &err), 0);
}

static double get(const json_t *root, const char *a, const char *b)
{
    const json_t *v = json_object_get(root, a);
    if (b)
        v = json_object_get(v, b);
    assert_non_null(v);
    return json_number_value(v);
}

/*
 * tests/data/sim/tiny.csv on 3 nodes x 2 GPUs, FIFO. At 0 jobs 1-3 take the
 * three nodes and 4 waits; 5 and 6 arrive at 600 and wait. At 3600 jobs 1
 * and 3 end: 4 takes one node (ends 5400), 5 and 6 share the other (6 ends
 * 5400, 5 ends 7200); job 2 ends at 7200. JCTs 3600, 7200, 3600, 5400,
 * 6600, 4800 (avg 5200); waits 0, 0, 0, 3600, 3000, 3000 (avg 1600).
 * Allocated 37800 GPU-s of 6 x 7200 = 43200 provisioned (0.875); at 1.00
 * per GPU-hour that is 12.00 in all, 10.50 allocated, 1.50 idle.
 */
static void test_tiny_trace_reproduces_hand_computed_jcts_and_cost(void **state)
{
    (void)state;
    struct trace t;
    struct sim_config cfg;
    struct sim_result res;
    run_tiny(&t, &cfg, &res);
    int64_t jct[] = {3600, 7200, 3600, 5400, 6600, 4800};
    int64_t wait[] = {0, 0, 0, 3600, 3000, 3000};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(res.jobs[i].finish_ms - res.jobs[i].submit_ms, jct[i] * 1000);
        assert_int_equal(res.jobs[i].first_start_ms - res.jobs[i].submit_ms, wait[i] * 1000);
    }
    assert_int_equal(res.makespan_ms, 7200000);
    assert_int_equal(res.gpu_ms_allocated, 37800000);
    json_t *r = sim_report_json(&cfg, &t, "tiny.csv", &res);
    assert_true(get(r, "jct_s", "avg") == 5200.0);
    assert_true(get(r, "wait_s", "avg") == 1600.0);
    assert_true(get(r, "jct_s", "p50") == 4800.0);
    assert_true(get(r, "jct_s", "max") == 7200.0);
    assert_true(get(r, "utilisation", "allocated_fraction") == 0.875);
    assert_int_equal((int64_t)get(r, "cost", "total_micros"), 12000000);
    assert_int_equal((int64_t)get(r, "cost", "allocated_micros"), 10500000);
    assert_int_equal((int64_t)get(r, "cost", "idle_micros"), 1500000);
    /* alpha: jobs 1, 3, 5 = 2h + 2h + 1h GPU = 5.00; beta: 4h + 1h + 0.5h = 5.50 */
    const json_t *projects = json_object_get(json_object_get(r, "cost"), "by_project");
    assert_int_equal(json_array_size(projects), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(projects, 0), "project")), "alpha");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(projects, 0), "cost_micros")), 5000000);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(projects, 1), "cost_micros")), 5500000);
    assert_int_equal((int64_t)get(r, "preemptions", NULL), 0);
    json_decref(r);
    sim_result_release(&res);
    trace_release(&t);
}

/* One GPU, LAS with preemption: A (3 h) has attained 2 GPU-hours, band 1,
 * when B (10 min, band 0) arrives at 2 h; B preempts A, runs to 2:10, and
 * A resumes for its last hour, ending at 3:10. */
static void test_las_preempts_a_job_in_a_higher_band(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job a = sim_fx_job(0, 3 * 3600, 1, NULL), b = sim_fx_job(7200, 600, 1, NULL);
    assert_int_equal(trace_push(&t, &a), 0);
    assert_int_equal(trace_push(&t, &b), 0);
    struct sim_config cfg;
    tiny_config(&cfg);
    cfg.pools[0].nodes = 1;
    cfg.pools[0].gpus_per_node = 1;
    snprintf(cfg.policy, sizeof cfg.policy, "las");
    cfg.preempt = true;
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.preemptions, 1);
    assert_int_equal(res.jobs[0].preemptions, 1);
    assert_int_equal(res.jobs[1].finish_ms, 7800000);
    assert_int_equal(res.jobs[0].finish_ms, 11400000);
    assert_int_equal(res.gpu_ms_allocated, (3 * 3600 + 600) * 1000LL);
    sim_result_release(&res);

    /* Without preemption B simply waits for A. */
    cfg.preempt = false;
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.preemptions, 0);
    assert_int_equal(res.jobs[1].finish_ms, 11400000);
    sim_result_release(&res);
    trace_release(&t);
}

/* Two jobs in the same band are never preempted for each other. */
static void test_las_does_not_preempt_within_a_band(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job a = sim_fx_job(0, 1200, 1, NULL), b = sim_fx_job(60, 600, 1, NULL);
    assert_int_equal(trace_push(&t, &a), 0);
    assert_int_equal(trace_push(&t, &b), 0);
    struct sim_config cfg;
    tiny_config(&cfg);
    cfg.pools[0].nodes = 1;
    cfg.pools[0].gpus_per_node = 1;
    snprintf(cfg.policy, sizeof cfg.policy, "las");
    cfg.preempt = true;
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.preemptions, 0);
    assert_int_equal(res.jobs[1].finish_ms, 1800000);
    sim_result_release(&res);
    trace_release(&t);
}

/* SJF with oracle runtimes lets the short job go first. */
static void test_sjf_runs_the_shortest_waiting_job_first(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job jobs[] = {sim_fx_job(0, 1000, 1, NULL), sim_fx_job(10, 5000, 1, NULL), sim_fx_job(20, 100, 1, NULL)};
    for (int i = 0; i < 3; i++)
        assert_int_equal(trace_push(&t, &jobs[i]), 0);
    struct sim_config cfg;
    tiny_config(&cfg);
    cfg.pools[0].nodes = 1;
    cfg.pools[0].gpus_per_node = 1;
    snprintf(cfg.policy, sizeof cfg.policy, "sjf");
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.jobs[2].first_start_ms, 1000000);
    assert_int_equal(res.jobs[1].first_start_ms, 1100000);
    sim_result_release(&res);
    snprintf(cfg.policy, sizeof cfg.policy, "fifo");
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.jobs[1].first_start_ms, 1000000);
    sim_result_release(&res);
    trace_release(&t);
}

/* One GPU, SJF with preemption: A (1000 s) starts at 0. B (500 s) arrives
 * at 100, when A has 900 s left: B preempts it. C (500 s) arrives at
 * 1100, when A (restarted at 600 with 900 s to go) has 400 s left: it is
 * not preempted, though it had more than C's 500 s left when it restarted
 * (SRTF: remaining time now). */
static void test_sjf_preempts_by_the_remaining_time_now(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job jobs[] = {sim_fx_job(0, 1000, 1, NULL), sim_fx_job(100, 500, 1, NULL),
                               sim_fx_job(1100, 500, 1, NULL)};
    for (int i = 0; i < 3; i++)
        assert_int_equal(trace_push(&t, &jobs[i]), 0);
    struct sim_config cfg;
    tiny_config(&cfg);
    cfg.pools[0].nodes = 1;
    cfg.pools[0].gpus_per_node = 1;
    snprintf(cfg.policy, sizeof cfg.policy, "sjf");
    cfg.preempt = true;
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.preemptions, 1);
    assert_int_equal(res.jobs[0].preemptions, 1);
    assert_int_equal(res.jobs[1].first_start_ms, 100000);
    assert_int_equal(res.jobs[0].finish_ms, 1500000); /* 100 s, then 900 s from 600 */
    assert_int_equal(res.jobs[2].first_start_ms, 1500000);
    sim_result_release(&res);
    trace_release(&t);
}

/* A job bigger than every node is rejected with its reason, not left
 * waiting forever. */
static void test_a_job_no_node_can_hold_is_rejected(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job big = sim_fx_job(0, 60, 16, NULL), small = sim_fx_job(0, 60, 1, NULL);
    big.line = 7;
    assert_int_equal(trace_push(&t, &big), 0);
    assert_int_equal(trace_push(&t, &small), 0);
    struct sim_config cfg;
    tiny_config(&cfg);
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.rejected, 1);
    assert_int_equal(res.jobs[0].outcome, SIM_REJECTED);
    assert_int_equal(res.jobs[1].outcome, SIM_DONE);
    assert_non_null(strstr(res.first_reject_reason, "line 7"));
    sim_result_release(&res);
    trace_release(&t);
}

/* A trace built without a reader is held to the readers' bounds: a
 * duration past 100 years is refused, not run into overflowing times. */
static void test_a_trace_job_past_100_years_is_refused(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job ok = sim_fx_job(0, 60, 1, NULL), long_job = sim_fx_job(10, 60, 1, NULL);
    long_job.duration_ms = TRACE_MAX_TIME_MS + 1;
    long_job.line = 3;
    assert_int_equal(trace_push(&t, &ok), 0);
    assert_int_equal(trace_push(&t, &long_job), 0);
    struct sim_config cfg;
    tiny_config(&cfg);
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), TIDE_EINVAL);
    assert_non_null(strstr(err.message, "trace job 2 (line 3)"));
    assert_non_null(strstr(err.message, "100 years"));
    trace_release(&t);
}

/* Event times stop at SIM_TIME_MAX rather than wrap round to negative
 * times (which sent the report's timeline out of its buckets). */
static void test_event_times_saturate_instead_of_wrapping(void **state)
{
    (void)state;
    assert_int_equal(sim_time_after(1000, 500), 1500);
    assert_int_equal(sim_time_after(SIM_TIME_MAX - 10, 10), SIM_TIME_MAX);
    assert_int_equal(sim_time_after(SIM_TIME_MAX - 10, INT64_MAX), SIM_TIME_MAX);
    assert_int_equal(sim_time_after(SIM_TIME_MAX, 1), SIM_TIME_MAX);
}

/* A job bigger than a node runs as a gang over several (equal shares), is
 * accounted on each of its nodes, and one no split fits is rejected. */
static void test_a_job_bigger_than_a_node_runs_as_a_gang(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job gang = sim_fx_job(0, 60, 4, NULL), small = sim_fx_job(0, 30, 2, NULL), odd = sim_fx_job(0, 60, 5, NULL), after = sim_fx_job(1, 60, 6, NULL);
    assert_int_equal(trace_push(&t, &gang), 0);
    assert_int_equal(trace_push(&t, &small), 0);
    assert_int_equal(trace_push(&t, &odd), 0);
    assert_int_equal(trace_push(&t, &after), 0);
    struct sim_config cfg;
    tiny_config(&cfg);
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.rejected, 1); /* 5 GPUs: no equal split over 3 nodes of 2 */
    assert_int_equal(res.jobs[2].outcome, SIM_REJECTED);
    assert_int_equal(res.jobs[0].first_start_ms, 0);
    assert_int_equal(res.jobs[0].finish_ms, 60000);
    assert_int_equal(res.jobs[1].first_start_ms, 0);
    /* 6 GPUs on all 3 nodes once both are done. */
    assert_int_equal(res.jobs[3].first_start_ms, 60000);
    assert_int_equal(res.jobs[3].finish_ms, 120000);
    assert_int_equal(res.gpu_ms_allocated, 4 * 60000 + 2 * 30000 + 6 * 60000);
    sim_result_release(&res);
    trace_release(&t);
}

static char *run_to_json(const struct sim_config *cfg, const struct trace *t)
{
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(cfg, t, NULL, &res, &err), 0);
    json_t *r = sim_report_json(cfg, t, "synthetic", &res);
    char *s = json_dumps(r, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    json_decref(r);
    sim_result_release(&res);
    return s;
}

static void test_same_trace_and_config_give_identical_report_bytes(void **state)
{
    (void)state;
    struct trace_synth_params p;
    trace_synth_defaults(&p);
    p.njobs = 3000;
    p.seed = 7;
    p.arrivals_per_hour = 40;
    struct trace t;
    trace_init(&t);
    assert_int_equal(trace_synth_generate(&t, &p), 0);
    struct sim_config cfg;
    tiny_config(&cfg);
    cfg.pools[0].nodes = 16;
    cfg.pools[0].gpus_per_node = 8;
    const char *policies[] = {"fifo", "sjf", "las"};
    for (int k = 0; k < 3; k++) {
        snprintf(cfg.policy, sizeof cfg.policy, "%s", policies[k]);
        cfg.preempt = k == 2;
        char *a = run_to_json(&cfg, &t), *b = run_to_json(&cfg, &t);
        assert_non_null(a);
        assert_string_equal(a, b);
        free(a);
        free(b);
    }
    trace_release(&t);
}

/* A sample time outside [0, makespan] (event times that wrapped round
 * once gave negative ones) is clamped, not used as a bucket index. */
static void test_timeline_keeps_a_bad_sample_time_inside_its_buckets(void **state)
{
    (void)state;
    struct trace t;
    struct sim_config cfg;
    struct sim_result res;
    run_tiny(&t, &cfg, &res);
    assert_true(res.nsamples > 1);
    res.samples[0].t_ms = -1000000000000LL;
    json_t *r = sim_report_json(&cfg, &t, "tiny.csv", &res);
    assert_non_null(r);
    const json_t *queued = sim_fx_at(r, "timeline", "queued");
    assert_int_equal(json_array_size(queued), 400); /* 7200 s in buckets of 18 s */
    for (size_t k = 0; k < json_array_size(queued); k++)
        assert_true(json_number_value(json_array_get(queued, k)) >= 0);
    json_decref(r);
    sim_result_release(&res);
    trace_release(&t);
}

/* Money below zero keeps its sign in front ("-0.50", not "0.-50"). */
static void test_negative_money_prints_its_sign_in_front(void **state)
{
    (void)state;
    char text[32];
    sim_money_text(text, sizeof text, 1234567890);
    assert_string_equal(text, "1234.56");
    sim_money_text(text, sizeof text, -1600000);
    assert_string_equal(text, "-1.60");
    sim_money_text(text, sizeof text, -500000);
    assert_string_equal(text, "-0.50");
    sim_money_text(text, sizeof text, INT64_MIN);
    assert_string_equal(text, "-9223372036854.77");
    /* The table goes through it. */
    struct trace t;
    struct sim_config cfg;
    struct sim_result res;
    run_tiny(&t, &cfg, &res);
    json_t *r = sim_report_json(&cfg, &t, "tiny.csv", &res);
    json_object_set_new(json_object_get(r, "cost"), "idle_micros", json_integer(-3600000));
    char *table = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&table, &len);
    assert_non_null(f);
    sim_report_table(f, r);
    fclose(f);
    assert_non_null(strstr(table, "-3.60\n"));
    assert_null(strstr(table, ".-"));
    free(table);
    json_decref(r);
    sim_result_release(&res);
    trace_release(&t);
}

/*
 * Busy vs allocated: one node of 4 GPUs; A (2 GPUs, 1 h, 50 % busy) and B
 * (1 GPU, 2 h, 25 %) at 0. Allocated 2 + 2 = 4 GPU-h of 4 x 2 = 8
 * provisioned (50 %); busy 1 + 0.5 = 1.5 GPU-h (18.75 %, 37.5 % of the
 * allocated). Without a utilisation for B, or without the column, busy is
 * unknown: null, and n/a in the table.
 */
static void test_busy_utilisation_from_the_trace_or_unknown(void **state)
{
    (void)state;
    for (int variant = 0; variant < 3; variant++) {
        struct trace t;
        trace_init(&t);
        struct trace_job a = sim_fx_job(0, 3600, 2, NULL), b = sim_fx_job(0, 7200, 1, NULL);
        a.has_util = b.has_util = variant < 2;
        a.util_bp = 5000;
        b.util_bp = 2500;
        if (variant == 1)
            b.has_util = false;
        t.util_column = variant < 2;
        assert_int_equal(trace_push(&t, &a), 0);
        assert_int_equal(trace_push(&t, &b), 0);
        struct sim_config cfg;
        tiny_config(&cfg);
        cfg.pools[0].nodes = 1;
        cfg.pools[0].gpus_per_node = 4;
        struct sim_result res;
        struct tide_err err = {0};
        assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
        json_t *r = sim_report_json(&cfg, &t, "busy", &res);
        const json_t *u = json_object_get(r, "utilisation");
        assert_true(get(r, "utilisation", "allocated_fraction") == 0.5);
        if (variant == 0) {
            assert_int_equal(res.gpu_ms_busy, 5400000);
            assert_true(get(r, "utilisation", "busy_gpu_hours") == 1.5);
            assert_true(get(r, "utilisation", "busy_fraction") == 0.1875);
            assert_true(get(r, "utilisation", "busy_of_allocated") == 0.375);
        } else {
            assert_true(json_is_null(json_object_get(u, "busy_gpu_hours")));
            assert_true(json_is_null(json_object_get(u, "busy_fraction")));
            assert_true(get(r, "utilisation", "util_known_gpu_hours") ==
                        (variant == 1 ? 2.0 : 0.0));
            assert_non_null(strstr(json_string_value(json_object_get(u, "busy_source")),
                                   variant == 1 ? "incomplete" : "none"));
        }
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        sim_report_table(f, r);
        fclose(f);
        const char *row = strstr(text, "GPU busy");
        assert_non_null(row);
        assert_non_null(strstr(row, variant == 0 ? "18.8%" : "n/a"));
        free(text);
        json_decref(r);
        sim_result_release(&res);
        trace_release(&t);
    }
}

static void test_config_from_json_names_the_bad_key(void **state)
{
    (void)state;
    struct sim_config cfg;
    sim_config_defaults(&cfg);
    struct tide_err err = {0};
    json_t *ok = json_loads("{\"scheduler\":{\"policy\":\"las\"},\"pools\":[{\"name\":\"a\",\"nodes\":2,"
                            "\"gpus_per_node\":4,\"price_per_gpu_hour\":2.48}]}", 0, NULL);
    assert_int_equal(sim_config_from_json(&cfg, ok, &err), 0);
    assert_int_equal(cfg.pools[0].price_per_gpu_hour_micros, 2480000);
    assert_int_equal(cfg.pools[0].nodes, 2);
    json_decref(ok);
    json_t *bad = json_loads("{\"pools\":[{\"name\":\"a\",\"node\":2}]}", 0, NULL);
    assert_int_equal(sim_config_from_json(&cfg, bad, &err), TIDE_EINVAL);
    assert_string_equal(err.field, "pools[0].node");
    json_decref(bad);
    snprintf(cfg.policy, sizeof cfg.policy, "lottery");
    assert_int_equal(sim_config_validate(&cfg, &err), TIDE_EINVAL);
    assert_string_equal(err.field, "policy");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_trace_reproduces_hand_computed_jcts_and_cost),
        cmocka_unit_test(test_las_preempts_a_job_in_a_higher_band),
        cmocka_unit_test(test_las_does_not_preempt_within_a_band),
        cmocka_unit_test(test_sjf_preempts_by_the_remaining_time_now),
        cmocka_unit_test(test_sjf_runs_the_shortest_waiting_job_first),
        cmocka_unit_test(test_a_job_no_node_can_hold_is_rejected),
        cmocka_unit_test(test_a_trace_job_past_100_years_is_refused),
        cmocka_unit_test(test_event_times_saturate_instead_of_wrapping),
        cmocka_unit_test(test_a_job_bigger_than_a_node_runs_as_a_gang),
        cmocka_unit_test(test_same_trace_and_config_give_identical_report_bytes),
        cmocka_unit_test(test_timeline_keeps_a_bad_sample_time_inside_its_buckets),
        cmocka_unit_test(test_negative_money_prints_its_sign_in_front),
        cmocka_unit_test(test_busy_utilisation_from_the_trace_or_unknown),
        cmocka_unit_test(test_config_from_json_names_the_bad_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
