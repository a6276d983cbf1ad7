/* Metering and cost figures, checked against hand-computed ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cluster_fixture.h"
#include "core/billing.h"

#define HOUR 3600000LL

static struct pool fx_pool(enum billing_kind kind, int gpus, int64_t price)
{
    struct pool p;
    pool_defaults(&p);
    snprintf(p.name, sizeof p.name, "p");
    p.gpus_per_node = gpus;
    p.billing = kind;
    p.price_per_node_hour_micros = price;
    return p;
}

static void add_pool_node(struct cluster *c, int64_t id, int gpus, enum node_state st)
{
    struct node n = fx_h200_node(id, gpus);
    snprintf(n.pool, sizeof n.pool, "p");
    n.state = st;
    assert_non_null(cluster_put_node(c, &n));
}

static void test_on_demand_node_costs_its_lifetime_at_the_price(void **state)
{
    (void)state;
    struct pool p = fx_pool(BILLING_ON_DEMAND, 4, 12340000); /* 12.34/h */
    struct cluster c;
    cluster_init(&c);
    add_pool_node(&c, 1, 4, NODE_PROVISIONING);
    struct billing b;
    billing_init(&b);
    assert_int_equal(billing_tick(&b, &c, &p, 1, 1000), 0); /* starts the clock */
    cluster_find_node(&c, 1)->state = NODE_READY;
    assert_int_equal(billing_tick(&b, &c, &p, 1, 1000 + 90 * 60000), 0); /* 1.5 h */
    assert_int_equal(b.pools[0].node_ms, 90 * 60000);
    assert_int_equal(billing_pool_cost_micros(&b, &p, 0), 18510000); /* 18.51 */
    cluster_find_node(&c, 1)->state = NODE_RELEASED;
    assert_int_equal(billing_tick(&b, &c, &p, 1, 1000 + 3 * HOUR), 0);
    assert_int_equal(billing_pool_cost_micros(&b, &p, 0), 18510000); /* released: no more */
    billing_release(&b);
    cluster_release(&c);
}

static void test_reserved_nodes_cost_whether_used_or_not(void **state)
{
    (void)state;
    struct pool p = fx_pool(BILLING_RESERVED, 1, 2000000);
    p.min_nodes = 3;
    struct cluster c;
    cluster_init(&c);
    add_pool_node(&c, 1, 1, NODE_READY); /* one of three exists */
    struct billing b;
    billing_init(&b);
    billing_tick(&b, &c, &p, 1, 1);
    billing_tick(&b, &c, &p, 1, 1 + 2 * HOUR);
    assert_int_equal(billing_pool_cost_micros(&b, &p, 0), 3 * 2 * 2000000);
    billing_release(&b);
    cluster_release(&c);
}

static void test_spot_pool_bills_the_spot_price(void **state)
{
    (void)state;
    struct pool p = fx_pool(BILLING_SPOT, 1, 5000000);
    p.spot_price_per_node_hour_micros = 1500000;
    struct cluster c;
    cluster_init(&c);
    add_pool_node(&c, 1, 1, NODE_READY);
    struct billing b;
    billing_init(&b);
    billing_tick(&b, &c, &p, 1, 1);
    billing_tick(&b, &c, &p, 1, 1 + HOUR);
    assert_int_equal(billing_pool_cost_micros(&b, &p, 0), 1500000);
    billing_release(&b);
    cluster_release(&c);
}

static void test_pack_hours_are_drawn_before_the_rate_applies(void **state)
{
    (void)state;
    struct pool p = fx_pool(BILLING_PACK, 2, 6000000); /* 3 per GPU-hour */
    p.pack_gpu_hours = 3;
    struct cluster c;
    cluster_init(&c);
    add_pool_node(&c, 1, 2, NODE_READY);
    struct billing b;
    billing_init(&b);
    billing_tick(&b, &c, &p, 1, 1);
    billing_tick(&b, &c, &p, 1, 1 + HOUR); /* 2 GPU-h: inside the pack */
    assert_int_equal(billing_pool_cost_micros(&b, &p, 0), 0);
    billing_tick(&b, &c, &p, 1, 1 + 2 * HOUR); /* 4 GPU-h: 1 over */
    assert_int_equal(billing_pool_cost_micros(&b, &p, 0), 3000000);
    billing_release(&b);
    cluster_release(&c);
}

static void test_cost_is_split_by_gpu_seconds_and_the_rest_is_idle(void **state)
{
    (void)state;
    struct pool p = fx_pool(BILLING_ON_DEMAND, 4, 8000000); /* 2 per GPU-hour */
    struct cluster c;
    cluster_init(&c);
    add_pool_node(&c, 1, 4, NODE_READY);
    struct job j = fx_job(7, 1);
    snprintf(j.project, sizeof j.project, "vision");
    assert_non_null(cluster_add_job(&c, &j));
    cluster_find_node(&c, 1)->gpus[0].job_id = 7; /* 1 of 4 GPUs busy */
    struct billing b;
    billing_init(&b);
    billing_tick(&b, &c, &p, 1, 1);
    billing_tick(&b, &c, &p, 1, 1 + HOUR);
    assert_int_equal(billing_pool_cost_micros(&b, &p, 0), 8000000);
    assert_int_equal(b.nusage, 1);
    assert_string_equal(b.usage[0].project, "vision");
    assert_int_equal(billing_usage_cost_micros(&b, &p, &b.usage[0]), 2000000);
    assert_int_equal(billing_pool_idle_cost_micros(&b, &p, 0), 6000000);
    billing_release(&b);
    cluster_release(&c);
}

static void test_node_cost_rounds_down_to_the_micro_unit(void **state)
{
    (void)state;
    struct pool p = fx_pool(BILLING_ON_DEMAND, 1, 1000000); /* 1/h */
    struct node n = fx_h200_node(1, 1);
    n.created_ms = 1000;
    n.ended_ms = 1000 + 1001; /* 1.001 s: 278.05 micro-units */
    assert_int_equal(billing_node_cost_micros(&p, &n, 99999999), 278);
    n.ended_ms = 0;
    assert_int_equal(billing_node_cost_micros(&p, &n, 1000 + HOUR), 1000000);
}

static void test_the_clock_steps_from_its_first_tick_and_never_back(void **state)
{
    (void)state;
    struct billing b;
    billing_init(&b);
    assert_int_equal(billing_clock_step(&b, 0), 0); /* a virtual clock's start: 0 */
    assert_true(b.started);
    assert_int_equal(billing_clock_step(&b, 500), 500);
    assert_int_equal(billing_clock_step(&b, 400), 0); /* not past the last tick */
    assert_int_equal(b.last_ms, 500);
    assert_int_equal(billing_clock_step(&b, 1500), 1000);
    assert_int_equal(b.last_ms, 1500);
    billing_release(&b);
}

static void test_reserved_pools_bill_their_minimum_and_others_what_is_alive(void **state)
{
    (void)state;
    struct pool reserved = fx_pool(BILLING_RESERVED, 1, 1), spot = fx_pool(BILLING_SPOT, 1, 1);
    reserved.min_nodes = spot.min_nodes = 3;
    assert_int_equal(billing_nodes_billed(&reserved, 1), 3);
    assert_int_equal(billing_nodes_billed(&reserved, 5), 5);
    assert_int_equal(billing_nodes_billed(&spot, 1), 1);
}

static void test_a_projects_cost_and_the_idle_cost_never_fall(void **state)
{
    (void)state;
    /* 2.93 a node-hour, 8 GPUs: the project's share of a growing pool's
     * cost once fell by a micro at many ticks (rounded, then shared out),
     * which Prometheus reads as a counter reset */
    for (int kind = 0; kind < 2; kind++) {
        struct pool p = fx_pool(kind ? BILLING_PACK : BILLING_ON_DEMAND, 8, 2930000);
        p.pack_gpu_hours = kind ? 3 : 0;
        struct cluster c;
        cluster_init(&c);
        add_pool_node(&c, 1, 8, NODE_READY);
        struct job j = fx_job(7, 1);
        snprintf(j.project, sizeof j.project, "vision");
        assert_non_null(cluster_add_job(&c, &j));
        cluster_find_node(&c, 1)->gpus[0].job_id = 7;
        struct billing b;
        billing_init(&b);
        int64_t t = 1, last_used = 0, last_idle = 0;
        billing_tick(&b, &c, &p, 1, t);
        for (int i = 0; i < 2000; i++) {
            t += 15000; /* scrapes 15 s apart */
            if (i == 240) /* the project stops after an hour; the node lives on */
                cluster_find_node(&c, 1)->gpus[0].job_id = 0;
            billing_tick(&b, &c, &p, 1, t);
            int64_t used = b.nusage ? billing_usage_cost_micros(&b, &p, &b.usage[0]) : 0;
            int64_t idle = billing_pool_idle_cost_micros(&b, &p, 0);
            assert_true(used >= last_used);
            assert_true(idle >= last_idle);
            last_used = used;
            last_idle = idle;
        }
        int64_t total = billing_pool_cost_micros(&b, &p, 0);
        assert_true(last_used > 0 && last_idle > 0);
        int64_t gap = total - last_used - last_idle; /* each rounded down once */
        assert_true(gap >= -2 && gap <= 2);
        billing_release(&b);
        cluster_release(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_projects_cost_and_the_idle_cost_never_fall),
        cmocka_unit_test(test_on_demand_node_costs_its_lifetime_at_the_price),
        cmocka_unit_test(test_reserved_nodes_cost_whether_used_or_not),
        cmocka_unit_test(test_spot_pool_bills_the_spot_price),
        cmocka_unit_test(test_pack_hours_are_drawn_before_the_rate_applies),
        cmocka_unit_test(test_cost_is_split_by_gpu_seconds_and_the_rest_is_idle),
        cmocka_unit_test(test_node_cost_rounds_down_to_the_micro_unit),
        cmocka_unit_test(test_the_clock_steps_from_its_first_tick_and_never_back),
        cmocka_unit_test(test_reserved_pools_bill_their_minimum_and_others_what_is_alive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
