/* Spot interruptions and provider failures in the simulator
 * (src/sim/sim_spot.c): the core's spot path (spot_interrupt, spot_check)
 * and the server's create backoff, on traces worked out by hand, and
 * seeded random ones that repeat byte for byte. */
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

/* One elastic pool of 2-GPU nodes, 0 to 2 of them, 60 s to boot, released
 * after 300 s idle, with extra keys spliced in. */
static void pool_config(struct sim_config *cfg, const char *extra)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"sim\": {\"name\": \"spot\"}, \"pools\": [{\"name\": \"spot\", \"gpus_per_node\": 2,"
             " \"gpu\": \"V100\", \"gpu_memory_mib\": 16384, \"min_nodes\": 0, \"max_nodes\": 2,"
             " \"boot_time_s\": 60, \"price_per_node_hour\": 3.60, \"scale_down_window_s\": 300,"
             " \"cooldown_s\": 0%s}]}",
             extra);
    sim_fx_config(cfg, text);
}

static void one_job(struct trace *t, int64_t duration_s)
{
    trace_init(t);
    struct trace_job j = sim_fx_job(0, duration_s, 2, NULL);
    assert_int_equal(trace_push(t, &j), 0);
}

/*
 * A 2-GPU job of 1 h at 0 on a spot pool: the node is created at 0 and
 * ready at 60, the job starts there. The node (spot-0) is interrupted at
 * 600 (listed), grace 30 s: the job checkpoints its 540 s, holds the GPUs
 * to 630, is requeued then; the autoscaler releases spot-0 and creates
 * spot-1, ready at 690, where the job runs its remaining 3,060 s to 3,750.
 * Without the interruption it would end at 3,660: +90 s = grace + boot.
 * Node-time: 630 + 3,120 = 3,750 s (3.75 at 3.60 per node-hour... of spot
 * price, none set: the on-demand price); the grace held 2 GPUs x 30 s.
 */
static void test_a_listed_interruption_requeues_the_job_after_the_grace(void **state)
{
    (void)state;
    struct trace t;
    one_job(&t, 3600);
    struct sim_config cfg;
    pool_config(&cfg, ", \"billing\": \"spot\", \"interruption_grace_s\": 30,"
                      " \"interruptions\": [{\"node_index\": 0, \"at_s\": 600},"
                      " {\"node_index\": 7, \"at_s\": 900}]");
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.jobs[0].first_start_ms, 60000);
    assert_int_equal(res.jobs[0].finish_ms, 3750000);
    assert_int_equal(res.jobs[0].interruptions, 1);
    assert_int_equal(res.jobs[0].preemptions, 0);
    assert_int_equal(res.jobs[0].run_ms, 3600000); /* the grace is no progress */
    const struct sim_pool_stats *ps = &res.elastic->stats[0];
    assert_int_equal(ps->interruptions, 1);
    assert_int_equal(ps->interruptions_missed, 1); /* no spot-7 at 900 */
    assert_int_equal(ps->jobs_interrupted, 1);
    assert_int_equal(ps->jobs_requeued, 1);
    assert_int_equal(ps->grace_gpu_ms, 60000);
    assert_int_equal(ps->created, 2);
    assert_int_equal(ps->released, 1);
    assert_int_equal(res.elastic->interruption_delay_ms, 90000);
    assert_int_equal(res.elastic->billing.pools[0].node_ms, 3750000);
    assert_int_equal(res.gpu_ms_allocated, (3600 + 30) * 2 * 1000);

    json_t *r = sim_report_json(&cfg, &t, "spot", &res);
    const json_t *in = json_object_get(json_object_get(r, "elastic"), "interruptions");
    assert_non_null(in);
    assert_int_equal(json_integer_value(json_object_get(in, "interruptions")), 1);
    assert_int_equal(json_integer_value(json_object_get(in, "jobs_requeued")), 1);
    assert_true(json_real_value(json_object_get(in, "delay_job_s")) == 90.0);
    /* 60 GPU-s at 1.80 per GPU-hour: 0.03. */
    assert_int_equal(json_integer_value(json_object_get(in, "grace_cost_micros")), 30000);
    const json_t *hit = json_object_get(json_object_get(in, "interrupted_jobs"), "jct_s");
    assert_true(json_real_value(json_object_get(hit, "avg")) == 3750.0);
    bool logged = false;
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(json_object_get(r, "elastic"), "scale_events"), i, e)
        logged |= !strcmp(json_string_value(json_object_get(e, "action")), "interrupted");
    assert_true(logged);
    json_decref(r);
    sim_result_release(&res);
    trace_release(&t);
}

/* preempt_overhead is paid on the restart as with preemption: +100 s. */
static void test_an_interrupted_job_pays_the_restart_overhead(void **state)
{
    (void)state;
    struct trace t;
    one_job(&t, 3600);
    struct sim_config cfg;
    pool_config(&cfg, ", \"billing\": \"spot\", \"interruption_grace_s\": 30,"
                      " \"interruptions\": [{\"node_index\": 0, \"at_s\": 600}]");
    cfg.preempt_overhead_ms = 100000;
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.jobs[0].finish_ms, 3850000);
    assert_int_equal(res.elastic->interruption_delay_ms, 190000);
    sim_result_release(&res);
    trace_release(&t);
}

/*
 * The provider fails the pool's first create call at 0: no node, and the
 * pool's creations wait the server's backoff, 2 s after one failure in a
 * row, 4 s after two. The autoscaler looks every second: with call 1
 * failing the node is created at 2 and the job starts at 62 instead of 60;
 * with calls 1 and 2 failing, the second try at 2 fails too and the third
 * at 2 + 4 = 6 succeeds: start at 66.
 */
/*
 * Two 8-GPU spot nodes; a 16-GPU gang job from 0, ready at 10. Node 0 is
 * interrupted at 100 (its progress ends: 90 s of 1,000 done). At 150 an
 * 8-GPU job arrives and LAS preempts the gang through its part on node 1,
 * in the interruption's grace. That is the interruption's requeue come
 * early, not a second run: the job still owes 910 s, and in all it runs
 * its 1,000 s, with no more grace than GPU time.
 */
static void test_a_job_preempted_in_an_interruptions_grace_owes_what_it_owed(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job gang = sim_fx_job(0, 1000, 16, NULL), small = sim_fx_job(150, 100, 8, NULL);
    assert_int_equal(trace_push(&t, &gang), 0);
    assert_int_equal(trace_push(&t, &small), 0);
    struct sim_config cfg;
    sim_fx_config(&cfg, "{\"sim\": {\"name\": \"spot\"}, \"scheduler\": {\"policy\": \"las\"},"
                        " \"pools\": [{\"name\": \"spot\", \"gpus_per_node\": 8, \"gpu\": \"V100\","
                        " \"gpu_memory_mib\": 16384, \"min_nodes\": 2, \"max_nodes\": 2,"
                        " \"boot_time_s\": 10, \"price_per_node_hour\": 3.60, \"cooldown_s\": 0,"
                        " \"billing\": \"spot\", \"interruption_grace_s\": 300,"
                        " \"interruptions\": [{\"node_index\": 0, \"at_s\": 100}]}]}");
    cfg.preempt = true; /* as tide sim sets it for las */
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.jobs[0].preemptions, 1);
    assert_int_equal(res.jobs[0].run_ms, 1000000);
    assert_true(res.jobs[0].finish_ms >= (150 + 910) * 1000);
    assert_int_equal(res.jobs[0].interruptions, 1);
    assert_int_equal(res.elastic->stats[0].jobs_requeued, 1);
    assert_true(res.elastic->stats[0].grace_gpu_ms <= res.gpu_ms_allocated);
    sim_result_release(&res);
    trace_release(&t);
}

static void test_provider_failures_delay_the_scale_up_by_the_backoff(void **state)
{
    (void)state;
    static const struct {
        const char *calls;
        int64_t start_ms, backoff_ms;
        long failures;
    } cases[] = {{"[1]", 62000, 2000, 1}, {"[1, 2]", 66000, 6000, 2}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct trace t;
        one_job(&t, 3600);
        char extra[128];
        snprintf(extra, sizeof extra, ", \"provider_failed_calls\": %s", cases[c].calls);
        struct sim_config cfg;
        pool_config(&cfg, extra);
        struct sim_result res;
        struct tide_err err = {0};
        assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
        assert_int_equal(res.jobs[0].first_start_ms, cases[c].start_ms);
        assert_int_equal(res.jobs[0].finish_ms, cases[c].start_ms + 3600000);
        const struct sim_pool_stats *ps = &res.elastic->stats[0];
        assert_int_equal(ps->provider_failures, cases[c].failures);
        assert_int_equal(ps->create_calls, cases[c].failures + 1);
        assert_int_equal(ps->backoff_ms, cases[c].backoff_ms);
        assert_int_equal(ps->created, 1);
        assert_int_equal(res.elastic->events[1].type, SIM_SCALE_CREATE_FAILED);
        assert_int_equal(res.elastic->events[1].t_ms, 0);
        json_t *r = sim_report_json(&cfg, &t, "fail", &res);
        const json_t *prov = json_object_get(json_object_get(r, "elastic"), "provider");
        assert_int_equal(json_integer_value(json_object_get(prov, "create_failures")),
                         cases[c].failures);
        json_decref(r);
        sim_result_release(&res);
        trace_release(&t);
    }
}

/* The server's rule: 2, 4, 8, 16, 32 s, then 60 s. */
static void test_backoff_is_the_pool_loops(void **state)
{
    (void)state;
    assert_int_equal(pool_backoff_ms(0), 0);
    assert_int_equal(pool_backoff_ms(1), 2000);
    assert_int_equal(pool_backoff_ms(2), 4000);
    assert_int_equal(pool_backoff_ms(5), 32000);
    assert_int_equal(pool_backoff_ms(6), 60000);
    assert_int_equal(pool_backoff_ms(40), 60000);
}

static char *seeded_run(const struct trace *t, uint64_t seed, long *interruptions, long *failures)
{
    struct sim_config cfg;
    pool_config(&cfg, ", \"billing\": \"spot\", \"interruptions_per_node_hour\": 0.5,"
                      " \"provider_failure_rate\": 0.3");
    cfg.pools[0].core.max_nodes = 6;
    cfg.seed = seed;
    struct sim_result res;
    struct tide_err err = {0};
    assert_int_equal(sim_run(&cfg, t, NULL, &res, &err), 0);
    *interruptions = res.elastic->stats[0].interruptions;
    *failures = res.elastic->stats[0].provider_failures;
    long requeued = 0;
    for (size_t i = 0; i < res.njobs; i++) {
        assert_int_equal(res.jobs[i].outcome, SIM_DONE);
        requeued += res.jobs[i].interruptions;
    }
    assert_int_equal(requeued, res.elastic->stats[0].jobs_requeued);
    json_t *r = sim_report_json(&cfg, t, "seeded", &res);
    char *s = json_dumps(r, JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    json_decref(r);
    sim_result_release(&res);
    return s;
}

/* Random interruptions and failures come from the seed: the same seed gives
 * the same bytes, another seed another run. */
static void test_random_interruptions_and_failures_repeat_for_a_seed(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    for (int i = 0; i < 150; i++) {
        struct trace_job j = sim_fx_job(i * 60, 600 + (i * 7919) % 3600, 1 + (i % 2), NULL);
        assert_int_equal(trace_push(&t, &j), 0);
    }
    long i1, f1, i2, f2, i3, f3;
    char *a = seeded_run(&t, 7, &i1, &f1), *b = seeded_run(&t, 7, &i2, &f2);
    char *c = seeded_run(&t, 8, &i3, &f3);
    assert_true(i1 > 0 && f1 > 0);
    assert_string_equal(a, b);
    assert_true(strcmp(a, c) != 0);
    free(a);
    free(b);
    free(c);
    trace_release(&t);
}

static void test_spot_config_errors(void **state)
{
    (void)state;
    /* Each bad config and the key its error must name. */
    static const struct {
        const char *text, *field;
    } bad[] = {
        /* listed interruptions need node_index and at_s */
        {"{\"pools\": [{\"name\": \"p\", \"max_nodes\": 2, \"billing\": \"spot\","
         " \"interruptions\": [{\"at_s\": 5}]}]}", "interruptions[0]"},
        {"{\"pools\": [{\"name\": \"p\", \"max_nodes\": 2, \"billing\": \"spot\","
         " \"interruptions\": [{\"node_index\": 0, \"at_s\": -5}]}]}", "interruptions[0].at_s"},
        /* a failure rate of 1 would never create a node */
        {"{\"pools\": [{\"name\": \"p\", \"max_nodes\": 2, \"provider_failure_rate\": 1}]}",
         "provider_failure_rate"},
        {"{\"pools\": [{\"name\": \"p\", \"max_nodes\": 2, \"interruptions_per_node_hour\": -1}]}",
         "interruptions_per_node_hour"},
        {"{\"pools\": [{\"name\": \"p\", \"max_nodes\": 2, \"provider_failed_calls\": [0]}]}",
         "provider_failed_calls"},
        /* elastic keys need max_nodes */
        {"{\"pools\": [{\"name\": \"p\", \"nodes\": 2, \"provider_failure_rate\": 0.1}]}", "pools[0]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct sim_config cfg;
        sim_config_defaults(&cfg);
        json_error_t jerr;
        json_t *root = json_loads(bad[i].text, 0, &jerr);
        assert_non_null(root);
        struct tide_err err = {0};
        assert_int_equal(sim_config_from_json(&cfg, root, &err), TIDE_EINVAL);
        if (!strstr(err.field, bad[i].field) && !strstr(err.message, bad[i].field))
            fail_msg("config %zu: error '%s' (field '%s') does not name %s", i, err.message,
                     err.field, bad[i].field);
        json_decref(root);
    }
    /* Interruptions are for spot pools. */
    struct sim_config cfg;
    sim_config_defaults(&cfg);
    json_error_t jerr;
    json_t *root =
        json_loads("{\"pools\": [{\"name\": \"p\", \"max_nodes\": 2, \"gpus_per_node\": 1,"
                   " \"interruptions_per_node_hour\": 1}]}",
                   0, &jerr);
    struct tide_err err = {0};
    assert_int_equal(sim_config_from_json(&cfg, root, &err), 0);
    assert_int_equal(sim_config_validate(&cfg, &err), TIDE_EINVAL);
    assert_non_null(strstr(err.message, "spot"));
    json_decref(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_listed_interruption_requeues_the_job_after_the_grace),
        cmocka_unit_test(test_an_interrupted_job_pays_the_restart_overhead),
        cmocka_unit_test(test_provider_failures_delay_the_scale_up_by_the_backoff),
        cmocka_unit_test(test_backoff_is_the_pool_loops),
        cmocka_unit_test(test_a_job_preempted_in_an_interruptions_grace_owes_what_it_owed),
        cmocka_unit_test(test_random_interruptions_and_failures_repeat_for_a_seed),
        cmocka_unit_test(test_spot_config_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
