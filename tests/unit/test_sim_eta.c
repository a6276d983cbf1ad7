/* Start-time ETAs in the simulator (src/sim/sim_eta.c): each job's ETA at
 * arrival against its real start, on traces small enough to work out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim_fixture.h"

#include "core/eta_estimate.h"
#include "sim/sim.h"
#include "sim/trace.h"

/* One node of one GPU, FIFO, ETAs on. */
static void one_gpu_config(struct sim_config *cfg)
{
    sim_fx_config(cfg, "{\"scheduler\": {\"policy\": \"fifo\"}, \"sim\": {\"eta\": true}, "
                       "\"pools\": [{\"name\": \"one\", \"nodes\": 1, \"gpus_per_node\": 1}]}");
}

static void push_all(struct trace *t, const struct trace_job *jobs, int n)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(trace_push(t, &jobs[i]), 0);
}

static double at(const json_t *r, const char *a, const char *b, const char *c)
{
    const json_t *v = sim_fx_at(r, a, b);
    if (c)
        v = json_object_get(v, c);
    assert_non_null(v);
    return json_number_value(v);
}

/* A (0, 1000 s), B (10, 500 s), C (20, 100 s) on one GPU with the trace's
 * durations as estimates: B is due when A ends (1000), C when B does
 * (1500), and so they start. */
static void test_eta_from_exact_estimates_is_exact(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job jobs[] = {sim_fx_job(0, 1000, 1, NULL), sim_fx_job(10, 500, 1, NULL),
                               sim_fx_job(20, 100, 1, NULL)};
    push_all(&t, jobs, 3);
    struct sim_config cfg;
    one_gpu_config(&cfg);
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.jobs[0].eta_ms, 0);
    assert_int_equal(res.jobs[1].eta_ms, 1000000);
    assert_int_equal(res.jobs[2].eta_ms, 1500000);
    assert_int_equal(res.jobs[2].eta_basis, ETA_BASIS_EST_RUNTIME);
    json_t *r = sim_report_json(&cfg, &t, "hand", &res);
    assert_int_equal((int)at(r, "eta", "waited", "jobs"), 2);
    const json_t *abs = json_object_get(sim_fx_at(r, "eta", "waited"), "abs_error_s");
    assert_non_null(json_object_get(abs, "p90"));
    assert_true(json_number_value(json_object_get(abs, "p50")) == 0.0);
    assert_true(json_number_value(json_object_get(abs, "p90")) == 0.0);
    assert_true(at(r, "eta", "all", "jobs") == 3);
    json_decref(r);
    sim_result_release(&res);
    trace_release(&t);
}

/*
 * No estimates (--no-oracle): J1-J3 (100 s each, at 0, 100, 200) teach
 * project "default" runs of 100 s. J4 (at 1000, runs 400 s) has run 100 s
 * when J5 (50 s) comes at 1100: longer than any sample, so it is taken to
 * run as long again (ends 1200): J5's ETA is 1200, it starts at 1400 (200 s
 * early, wait 300 s). J6 (at 1150) sees J4 ending at 1300 and J5 running
 * 100 s (every sample): ETA 1400; J5 really ends at 1450 (50 s early, wait 300).
 */
static void test_learned_eta_errors_are_reported(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job jobs[] = {sim_fx_job(0, 100, 1, NULL),   sim_fx_job(100, 100, 1, NULL),
                               sim_fx_job(200, 100, 1, NULL), sim_fx_job(1000, 400, 1, NULL),
                               sim_fx_job(1100, 50, 1, NULL), sim_fx_job(1150, 10, 1, NULL)};
    push_all(&t, jobs, 6);
    struct sim_config cfg;
    one_gpu_config(&cfg);
    cfg.oracle_runtime = false;
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.jobs[4].eta_ms, 1200000);
    assert_int_equal(res.jobs[4].first_start_ms, 1400000);
    assert_int_equal(res.jobs[5].eta_ms, 1400000);
    assert_int_equal(res.jobs[5].first_start_ms, 1450000);
    assert_int_equal(res.jobs[5].eta_basis, ETA_BASIS_ESTIMATE_PROJECT);
    json_t *r = sim_report_json(&cfg, &t, "hand", &res);
    const json_t *w = sim_fx_at(r, "eta", "waited");
    assert_int_equal(json_integer_value(json_object_get(w, "jobs")), 2);
    const json_t *abs = json_object_get(w, "abs_error_s"), *rel = json_object_get(w, "rel_error");
    assert_true(json_number_value(json_object_get(abs, "p50")) == 50.0);
    assert_true(json_number_value(json_object_get(abs, "p90")) == 200.0);
    assert_true(json_number_value(json_object_get(abs, "avg")) == 125.0);
    assert_true(json_number_value(json_object_get(rel, "p50")) == 50.0 / 300.0);
    assert_true(json_number_value(json_object_get(rel, "p90")) == 200.0 / 300.0);
    assert_true(json_number_value(json_object_get(w, "signed_error_s_p50")) == -200.0);
    assert_true(json_number_value(json_object_get(w, "late_fraction")) == 0.0);
    const json_t *basis = sim_fx_at(r, "eta", "by_basis");
    assert_int_equal(json_integer_value(json_object_get(basis, "now")), 4);
    assert_int_equal(json_integer_value(json_object_get(basis, "estimate:project")), 2);
    assert_int_equal(json_integer_value(json_object_get(sim_fx_at(r, "eta", NULL), "unknown")), 0);
    json_decref(r);
    sim_result_release(&res);
    trace_release(&t);
}

static void test_without_eta_the_report_has_no_eta_section(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job jobs[] = {sim_fx_job(0, 100, 1, NULL), sim_fx_job(10, 100, 1, NULL)};
    push_all(&t, jobs, 2);
    struct sim_config cfg;
    one_gpu_config(&cfg);
    cfg.eta = false;
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.jobs[1].eta_ms, -1);
    json_t *r = sim_report_json(&cfg, &t, "hand", &res);
    assert_null(json_object_get(r, "eta"));
    json_decref(r);
    sim_result_release(&res);
    trace_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eta_from_exact_estimates_is_exact),
        cmocka_unit_test(test_learned_eta_errors_are_reported),
        cmocka_unit_test(test_without_eta_the_report_has_no_eta_section),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
