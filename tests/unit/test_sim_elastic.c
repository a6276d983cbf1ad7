/* Elastic runs of the simulator: the core's autoscaler and billing on a
 * virtual clock (src/sim/sim_driver.c), on a trace worked out by hand. */
#include <math.h>
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

/* One elastic pool of 2-GPU nodes, 0 to 2 of them, 60 s to boot, 3.60 per
 * node-hour (1,000 millionths a second), released after 300 s idle. */
static void burst_config(struct sim_config *cfg)
{
    sim_fx_config(cfg,
        "{\"sim\": {\"name\": \"burst\"}, \"pools\": [{\"name\": \"burst\", \"gpus_per_node\": 2,"
        " \"gpu\": \"V100\", \"gpu_memory_mib\": 16384, \"min_nodes\": 0, \"max_nodes\": 2,"
        " \"boot_time_s\": 60, \"price_per_node_hour\": 3.60, \"billing\": \"on_demand\","
        " \"scale_down_window_s\": 300, \"cooldown_s\": 0}]}");
    assert_true(sim_config_elastic(cfg));
}

/* The burst: jobs a (2 GPUs, 3,600 s) and b (2 GPUs, 1,800 s) at 0 on
 * burst_config, run. */
static void run_burst(struct trace *t, struct sim_config *cfg, struct sim_result *res)
{
    trace_init(t);
    struct trace_job a = sim_fx_job(0, 3600, 2, "a"), b = sim_fx_job(0, 1800, 2, "b");
    assert_int_equal(trace_push(t, &a), 0);
    assert_int_equal(trace_push(t, &b), 0);
    burst_config(cfg);
    struct tide_err err = {0};
    assert_int_equal(sim_run(cfg, t, NULL, res, &err), 0);
}

/*
 * Jobs A (project a, 2 GPUs, 1 h) and B (project b, 2 GPUs, 30 min) arrive
 * at 0 on an empty pool. The autoscaler creates 2 nodes at 0 (one per job);
 * they are ready at 60 s, A and B start there. B ends at 1,860 s; its node
 * is idle from then and released 300 s later, at 2,160 s. A ends at
 * 3,660 s, the last finish, where metering stops. Node-time: 3,660 + 2,160
 * = 5,820 s (1.6167 node-hours), 5.82 at 1,000 a second. GPU-time used:
 * A 7,200 GPU-s (3.60), B 3,600 GPU-s (1.80); the remaining 840 of 11,640
 * GPU-s are idle (0.42). JCTs 3,660 and 1,860; both waited 60 s.
 */
static void test_elastic_burst_matches_hand_computed_nodes_and_cost(void **state)
{
    (void)state;
    struct trace t;
    struct sim_config cfg;
    struct sim_result res;
    run_burst(&t, &cfg, &res);
    assert_non_null(res.elastic);
    assert_int_equal(res.jobs[0].first_start_ms, 60000);
    assert_int_equal(res.jobs[1].first_start_ms, 60000);
    assert_int_equal(res.jobs[0].finish_ms, 3660000);
    assert_int_equal(res.jobs[1].finish_ms, 1860000);
    assert_int_equal(res.makespan_ms, 3660000);
    const struct sim_pool_stats *ps = &res.elastic->stats[0];
    assert_int_equal(ps->created, 2);
    assert_int_equal(ps->ready, 2);
    assert_int_equal(ps->released, 1);
    assert_int_equal(ps->peak_nodes, 2);
    assert_int_equal(res.elastic->billing.pools[0].node_ms, 5820000);
    assert_int_equal(res.elastic->billing.pools[0].gpu_ms, 10800000);
    assert_int_equal(res.elastic->gpu_ms_provisioned, 11640000);
    /* Scale events: create 2 at 0, both ready at 60, drain + release at 2,160. */
    assert_int_equal(res.elastic->nevents, 5);
    assert_int_equal(res.elastic->events[0].type, POOL_CREATE);
    assert_int_equal(res.elastic->events[0].count, 2);
    assert_int_equal(res.elastic->events[0].t_ms, 0);
    assert_int_equal(res.elastic->events[1].type, SIM_SCALE_READY);
    assert_int_equal(res.elastic->events[2].t_ms, 60000);
    assert_int_equal(res.elastic->events[3].type, POOL_DRAIN);
    assert_int_equal(res.elastic->events[4].type, POOL_RELEASE);
    assert_int_equal(res.elastic->events[4].t_ms, 2160000);

    json_t *r = sim_report_json(&cfg, &t, "burst", &res);
    const json_t *cost = sim_fx_at(r, "cost", NULL);
    assert_int_equal(json_integer_value(sim_fx_at(cost, "total_micros", NULL)), 5820000);
    assert_int_equal(json_integer_value(sim_fx_at(cost, "idle_micros", NULL)), 420000);
    assert_int_equal(json_integer_value(sim_fx_at(cost, "allocated_micros", NULL)), 5400000);
    assert_int_equal(json_integer_value(sim_fx_at(cost, "by_kind", "on_demand")), 5820000);
    assert_int_equal(json_integer_value(sim_fx_at(cost, "by_kind", "reserved")), 0);
    const json_t *pr = sim_fx_at(cost, "by_project", NULL);
    assert_int_equal(json_array_size(pr), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(pr, 0), "project")), "a");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(pr, 0), "cost_micros")), 3600000);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(pr, 1), "cost_micros")), 1800000);
    const json_t *pool = json_array_get(sim_fx_at(cost, "by_pool", NULL), 0);
    assert_true(json_real_value(json_object_get(pool, "node_hours")) == 5820.0 / 3600.0);
    assert_int_equal(json_integer_value(sim_fx_at(r, "elastic", "scale_events_total")), 5);
    assert_true(json_real_value(sim_fx_at(r, "utilisation", "allocated_fraction")) == 10800.0 / 11640.0);
    assert_int_equal(json_integer_value(sim_fx_at(r, "gpus_provisioned", NULL)), 4);
    json_decref(r);
    sim_result_release(&res);
    trace_release(&t);
}

/* A reserved pool is billed for min_nodes whether used or not; a second,
 * on-demand pool takes the overflow. One reserved node (1.00 per hour, 1
 * GPU) exists from 0; jobs of 1 GPU: X 0-2 h on it, Y at 0 for 1 h goes to
 * a new on-demand node (2.00 per hour, boot 0), released 300 s after Y
 * ends. Reserved: 2 h = 2.00; on demand: 1 h + 300 s = 2.1667 (2,166,666). */
static void test_reserved_and_on_demand_by_kind(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct trace_job x = sim_fx_job(0, 7200, 1, "x"), y = sim_fx_job(0, 3600, 1, "y");
    assert_int_equal(trace_push(&t, &x), 0);
    assert_int_equal(trace_push(&t, &y), 0);
    struct sim_config cfg;
    struct tide_err err = {0};
    sim_config_defaults(&cfg);
    json_error_t jerr;
    json_t *root = json_loads(
        "{\"pools\": [{\"name\": \"res\", \"gpus_per_node\": 1, \"min_nodes\": 1, \"max_nodes\": 1,"
        " \"billing\": \"reserved\", \"price_per_node_hour\": 1},"
        " {\"name\": \"od\", \"gpus_per_node\": 1, \"max_nodes\": 4, \"boot_time_s\": 0,"
        " \"price_per_node_hour\": \"2.00\", \"scale_down_window_s\": 300, \"cooldown_s\": 0}]}",
        0, &jerr);
    assert_non_null(root);
    assert_int_equal(sim_config_from_json(&cfg, root, &err), 0);
    json_decref(root);
    struct sim_result res;
    assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
    assert_int_equal(res.jobs[0].first_start_ms, 0);
    assert_int_equal(res.jobs[1].first_start_ms, 0);
    assert_int_equal(res.makespan_ms, 7200000);
    assert_int_equal(res.elastic->stats[1].created, 1);
    assert_int_equal(res.elastic->stats[1].released, 1);
    json_t *r = sim_report_json(&cfg, &t, "mix", &res);
    assert_int_equal(json_integer_value(sim_fx_at(sim_fx_at(r, "cost", NULL), "by_kind", "reserved")), 2000000);
    assert_int_equal(json_integer_value(sim_fx_at(sim_fx_at(r, "cost", NULL), "by_kind", "on_demand")), 2166666);
    assert_int_equal(json_integer_value(sim_fx_at(r, "cost", "total_micros")), 4166666);
    json_decref(r);
    sim_result_release(&res);
    trace_release(&t);
}

/* Same trace and config twice: the same report, byte for byte. */
static void test_elastic_run_is_deterministic(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    for (int i = 0; i < 200; i++) {
        struct trace_job j = sim_fx_job(i * 25, 300 + (i * 7919) % 4000, 1 + (i % 2), i % 3 ? "p" : "q");
        assert_int_equal(trace_push(&t, &j), 0);
    }
    struct sim_config cfg;
    burst_config(&cfg);
    cfg.pools[0].core.max_nodes = 5;
    char *out[2];
    for (int k = 0; k < 2; k++) {
        struct sim_result res;
        struct tide_err err = {0};
        assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
        assert_true(res.elastic->stats[0].created >= 5);
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

/* The driver meters elastic runs itself (sim_meter.c: nodes alive per
 * pool at each batch, GPU-time per project from each run's start to its
 * stop). billing_tick's walk of every node's GPUs at every batch must give
 * the same counters, hence the same report: on a run with a reserved base,
 * on-demand and spot pools, spot interruptions, provider failures, LAS
 * preemptions and gang jobs bigger than a node. */
static void test_elastic_metering_equals_billing_ticks_walk_of_every_node(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    static const int gpus[] = {1, 2, 4, 1, 8, 2, 16, 1};
    for (int i = 0; i < 400; i++) {
        struct trace_job j = sim_fx_job(i * 40 + (i * 7) % 13, 200 + (i * 7919) % 9000,
                                        gpus[(i * 5) % 8], i % 3 ? "p" : i % 2 ? "q" : "r");
        assert_int_equal(trace_push(&t, &j), 0);
    }
    struct sim_config cfg;
    sim_fx_config(&cfg,
        "{\"sim\": {\"name\": \"mix\", \"seed\": 5, \"preempt\": true}, \"scheduler\": {\"policy\": \"las\"},"
        " \"pools\": ["
        "{\"name\": \"base\", \"gpus_per_node\": 8, \"gpu\": \"V100\", \"gpu_memory_mib\": 16384,"
        " \"min_nodes\": 1, \"max_nodes\": 1, \"billing\": \"reserved\", \"price_per_node_hour\": 9},"
        "{\"name\": \"od\", \"gpus_per_node\": 8, \"gpu\": \"V100\", \"gpu_memory_mib\": 16384,"
        " \"min_nodes\": 0, \"max_nodes\": 3, \"boot_time_s\": 90, \"price_per_node_hour\": 20,"
        " \"scale_down_window_s\": 300, \"cooldown_s\": 30},"
        "{\"name\": \"spot\", \"gpus_per_node\": 8, \"gpu\": \"V100\", \"gpu_memory_mib\": 16384,"
        " \"min_nodes\": 0, \"max_nodes\": 3, \"boot_time_s\": 60, \"billing\": \"spot\","
        " \"price_per_node_hour\": 20, \"spot_price_per_node_hour\": 6,"
        " \"interruptions_per_node_hour\": 0.5, \"provider_failure_rate\": 0.2,"
        " \"interruption_grace_s\": 120, \"scale_down_window_s\": 300, \"cooldown_s\": 30}]}");
    char *out[2];
    struct billing b[2];
    for (int k = 0; k < 2; k++) {
        cfg.meter_by_walk = k == 1;
        struct sim_result res;
        struct tide_err err = {0};
        assert_int_equal(sim_run(&cfg, &t, NULL, &res, &err), 0);
        assert_true(res.preemptions > 0);
        assert_true(res.elastic->stats[2].interruptions > 0);
        assert_true(res.elastic->stats[2].provider_failures > 0);
        assert_true(res.elastic->stats[2].jobs_requeued > 0);
        b[k] = res.elastic->billing;
        for (int p = 0; p < 3; p++) {
            assert_true(b[k].pools[p].node_ms > 0);
            assert_true(b[k].pools[p].gpu_ms > 0);
        }
        json_t *r = sim_report_json(&cfg, &t, "mix", &res);
        out[k] = json_dumps(r, JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
        json_decref(r);
        res.elastic->billing.usage = NULL; /* kept in b[k], freed below */
        sim_result_release(&res);
    }
    for (int p = 0; p < 3; p++) {
        assert_int_equal(b[0].pools[p].node_ms, b[1].pools[p].node_ms);
        assert_int_equal(b[0].pools[p].gpu_ms, b[1].pools[p].gpu_ms);
    }
    /* The same usage rows, in whatever order each made them. */
    assert_int_equal(b[0].nusage, b[1].nusage);
    for (size_t i = 0; i < b[0].nusage; i++) {
        size_t k = 0;
        while (k < b[1].nusage && (strcmp(b[1].usage[k].project, b[0].usage[i].project) ||
                                   b[1].usage[k].pool != b[0].usage[i].pool))
            k++;
        assert_true(k < b[1].nusage);
        assert_int_equal(b[0].usage[i].gpu_ms, b[1].usage[k].gpu_ms);
    }
    assert_string_equal(out[0], out[1]);
    billing_release(&b[0]);
    billing_release(&b[1]);
    free(out[0]);
    free(out[1]);
    trace_release(&t);
}

/* A pool is elastic unless it gives nodes: (tide.yaml's rule); elastic
 * keys do not mix with nodes:, nor nodes with max_nodes. */
static void test_elastic_config_errors(void **state)
{
    (void)state;
    const char *bad[] = {
        "{\"pools\": [{\"name\": \"p\", \"nodes\": 2, \"boot_time_s\": 60}]}",
        "{\"pools\": [{\"name\": \"p\", \"nodes\": 2, \"interruptions_per_node_hour\": 1}]}",
        "{\"pools\": [{\"nodes\": 2}]}",
        "{\"pools\": [{\"name\": \"p\", \"nodes\": 2, \"max_nodes\": 3}]}",
        "{\"pools\": [{\"name\": \"p\", \"max_nodes\": 3, \"billing\": \"barter\"}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct sim_config cfg;
        sim_config_defaults(&cfg);
        json_error_t jerr;
        json_t *root = json_loads(bad[i], 0, &jerr);
        struct tide_err err = {0};
        assert_int_equal(sim_config_from_json(&cfg, root, &err), TIDE_EINVAL);
        json_decref(root);
    }
    struct sim_config cfg;
    sim_config_defaults(&cfg);
    json_error_t jerr;
    json_t *root = json_loads("{\"pools\": [{\"name\": \"p\", \"max_nodes\": 1, \"min_nodes\": 2}]}", 0, &jerr);
    struct tide_err err = {0};
    assert_int_equal(sim_config_from_json(&cfg, root, &err), TIDE_EINVAL);
    assert_string_equal(err.field, "pools[0].min_nodes");
    json_decref(root);
    /* Without nodes: or max_nodes, a pool is elastic with tide.yaml's defaults. */
    sim_config_defaults(&cfg);
    root = json_loads("{\"pools\": [{\"name\": \"p\", \"min_nodes\": 1}]}", 0, &jerr);
    assert_int_equal(sim_config_from_json(&cfg, root, &err), 0);
    assert_true(cfg.pools[0].elastic);
    assert_int_equal(cfg.pools[0].core.max_nodes, 4);
    assert_string_equal(cfg.pools[0].gpu_model, "H200");
    json_decref(root);
}

/* timeline.csv has the GPUs provisioned of an elastic run (the bucket
 * means, reals in report.json), not 0 on every row. */
static void test_elastic_timeline_csv_has_the_gpus_provisioned(void **state)
{
    (void)state;
    struct trace t;
    struct sim_config cfg;
    struct sim_result res;
    run_burst(&t, &cfg, &res);
    json_t *r = sim_report_json(&cfg, &t, "burst", &res);
    char *csv = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&csv, &len);
    assert_non_null(f);
    assert_int_equal(sim_report_timeline_csv(f, r), 0);
    fclose(f);
    /* Both nodes exist from 0: the first bucket has 4 GPUs provisioned. */
    const json_t *provisioned_json = sim_fx_at(r, "timeline", "gpus_provisioned");
    assert_true(json_number_value(json_array_get(provisioned_json, 0)) == 4.0);
    const char *row = strchr(csv, '\n') + 1;
    assert_memory_equal(row, "0.000,", 6);
    double t_s, queued, used, provisioned;
    assert_int_equal(sscanf(row, "%lf,%lf,%lf,%lf,", &t_s, &queued, &used, &provisioned), 4);
    assert_true(provisioned == 4.0);
    free(csv);
    json_decref(r);
    sim_result_release(&res);
    trace_release(&t);
}

/* --synthetic's default load counts an elastic pool at max_nodes (its
 * nodes field is 0): the same rate as a fixed pool of that many nodes, not
 * the generator's silent 60 per hour. */
static void test_synthetic_load_counts_an_elastic_pool_at_max_nodes(void **state)
{
    (void)state;
    struct trace_synth_params p;
    trace_synth_defaults(&p);
    struct sim_config elastic, fixed;
    burst_config(&elastic);
    sim_config_defaults(&fixed);
    fixed.pools[0].nodes = 2;
    fixed.pools[0].gpus_per_node = 2;
    double rate = sim_synth_default_rate(&elastic, &p);
    assert_true(rate == sim_synth_default_rate(&fixed, &p));
    /* 70% of 4 GPUs over jobs of 2.1 GPUs (the mix's mean) for (86400 - 60) / ln(1440) s. */
    double expect = 0.7 * 4 * 3600 / (2.1 * ((86400.0 - 60) / log(1440.0)));
    assert_true(rate > expect * 0.999999 && rate < expect * 1.000001);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elastic_burst_matches_hand_computed_nodes_and_cost),
        cmocka_unit_test(test_reserved_and_on_demand_by_kind),
        cmocka_unit_test(test_elastic_run_is_deterministic),
        cmocka_unit_test(test_elastic_metering_equals_billing_ticks_walk_of_every_node),
        cmocka_unit_test(test_elastic_config_errors),
        cmocka_unit_test(test_elastic_timeline_csv_has_the_gpus_provisioned),
        cmocka_unit_test(test_synthetic_load_counts_an_elastic_pool_at_max_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
