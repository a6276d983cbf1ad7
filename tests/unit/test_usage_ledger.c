/* The usage ledger: billing split by UTC day, and reports by project,
 * pool, queue and day checked against hand-computed figures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cluster_fixture.h"
#include "core/billing.h"
#include "core/usage_ledger.h"

#define HOUR 3600000LL
#define DAY (24 * HOUR)

/* One 4-GPU pool node at 4.00 per node-hour (1.00 per GPU-hour), ready
 * from 23:00 on day 0 to 02:00 on day 1; project alpha's training job
 * holds 2 GPUs from 23:00 to 01:00. Ticks at 23:00, 01:00 (across
 * midnight) and 02:00. */
struct fixture {
    struct pool pool;
    struct cluster c;
    struct billing b;
    struct usage_ledger l;
};

static void run_fixture(struct fixture *f, enum billing_kind kind, int64_t pack_gpu_hours)
{
    pool_defaults(&f->pool);
    snprintf(f->pool.name, sizeof f->pool.name, "p");
    f->pool.gpus_per_node = 4;
    f->pool.billing = kind;
    f->pool.pack_gpu_hours = pack_gpu_hours;
    f->pool.price_per_node_hour_micros = 4000000;
    cluster_init(&f->c);
    struct node n = fx_h200_node(1, 4);
    snprintf(n.pool, sizeof n.pool, "p");
    n.state = NODE_READY;
    assert_non_null(cluster_put_node(&f->c, &n));
    struct job j = fx_job(10, 2);
    snprintf(j.project, sizeof j.project, "alpha");
    snprintf(j.queue, sizeof j.queue, "training");
    struct job *job = fx_add_running(&f->c, j, 1, 23 * HOUR);
    assert_non_null(job);
    billing_init(&f->b);
    usage_ledger_init(&f->l);
    f->b.ledger = &f->l;
    assert_int_equal(billing_tick(&f->b, &f->c, &f->pool, 1, 23 * HOUR), 0);
    assert_int_equal(billing_tick(&f->b, &f->c, &f->pool, 1, DAY + HOUR), 0);
    cluster_unassign(&f->c, job);
    assert_int_equal(billing_tick(&f->b, &f->c, &f->pool, 1, DAY + 2 * HOUR), 0);
}

static void release_fixture(struct fixture *f)
{
    billing_release(&f->b);
    usage_ledger_release(&f->l);
    cluster_release(&f->c);
}

static const struct usage_row *find_row(const struct usage_report *r, const char *project,
                                        int64_t day, bool idle)
{
    for (size_t i = 0; i < r->nrows; i++)
        if (!strcmp(r->rows[i].project, project) && r->rows[i].day == day && r->rows[i].idle == idle)
            return &r->rows[i];
    return NULL;
}

static void test_a_tick_across_midnight_is_split_between_the_days(void **state)
{
    (void)state;
    struct fixture f;
    run_fixture(&f, BILLING_ON_DEMAND, 0);
    assert_int_equal(f.l.ndays, 2);
    assert_int_equal(f.l.days[0].day, 0);
    assert_int_equal(f.l.days[0].node_ms, HOUR);
    assert_int_equal(f.l.days[0].gpu_ms, 2 * HOUR);
    assert_int_equal(f.l.days[1].day, 1);
    assert_int_equal(f.l.days[1].node_ms, 2 * HOUR);
    assert_int_equal(f.l.days[1].gpu_ms, 2 * HOUR);
    assert_int_equal(f.l.nuses, 2);
    assert_string_equal(f.l.uses[1].queue, "training");
    /* Saved rows are clean; a new tick dirties only today's. */
    usage_ledger_clean(&f.l);
    assert_int_equal(f.l.days_dirty_from, 2);
    assert_int_equal(usage_ledger_add_pool(&f.l, 1, 0, 1000, 0), 0);
    assert_int_equal(f.l.days_dirty_from, 1);
    assert_false(f.l.days[0].dirty);
    assert_true(f.l.days[1].dirty);
    f.l.days[1].node_ms -= 1000;
    /* Billing's totals are the same as without days. */
    assert_int_equal(f.b.pools[0].node_ms, 3 * HOUR);
    assert_int_equal(billing_pool_cost_micros(&f.b, &f.pool, 0), 12000000);
    release_fixture(&f);
}

static void test_report_by_project_and_day_prices_each_day(void **state)
{
    (void)state;
    struct fixture f;
    run_fixture(&f, BILLING_ON_DEMAND, 0);
    struct usage_report r;
    assert_int_equal(usage_ledger_report(&f.l, &f.pool, 1, USAGE_BY_PROJECT | USAGE_BY_DAY, 0, 10, NULL, &r), 0);
    assert_int_equal(r.nrows, 4);
    const struct usage_row *a0 = find_row(&r, "alpha", 0, false), *i0 = find_row(&r, "", 0, true);
    const struct usage_row *a1 = find_row(&r, "alpha", 1, false), *i1 = find_row(&r, "", 1, true);
    assert_non_null(a0);
    assert_non_null(i0);
    assert_non_null(a1);
    assert_non_null(i1);
    assert_int_equal(a0->cost_micros, 2000000); /* 2 of 4 GPU-hours of 4.00 */
    assert_int_equal(i0->cost_micros, 2000000);
    assert_int_equal(a1->cost_micros, 2000000); /* 2 of 8 GPU-hours of 8.00 */
    assert_int_equal(i1->cost_micros, 6000000);
    assert_int_equal(i1->gpu_ms, 6 * HOUR);
    assert_true(r.rows[0].day == 0 && !r.rows[0].idle); /* day order, idle last */
    assert_int_equal(r.total.cost_micros, 12000000);
    assert_int_equal(r.total.idle_cost_micros, 8000000);
    assert_int_equal(r.total.provisioned_gpu_ms, 12 * HOUR);
    assert_int_equal(r.total.used_gpu_ms, 4 * HOUR);
    assert_int_equal(r.ncapacity, 2);
    assert_int_equal(r.capacity[1].day, 1);
    assert_int_equal(r.capacity[1].cost_micros, 8000000);
    usage_report_release(&r);
    release_fixture(&f);
}

static void test_report_without_day_folds_the_days(void **state)
{
    (void)state;
    struct fixture f;
    run_fixture(&f, BILLING_ON_DEMAND, 0);
    struct usage_report r;
    assert_int_equal(usage_ledger_report(&f.l, &f.pool, 1, USAGE_BY_PROJECT | USAGE_BY_QUEUE, 0, 10, NULL, &r), 0);
    assert_int_equal(r.nrows, 2);
    assert_string_equal(r.rows[0].project, "alpha");
    assert_string_equal(r.rows[0].queue, "training");
    assert_int_equal(r.rows[0].day, -1);
    assert_int_equal(r.rows[0].pool, -1);
    assert_int_equal(r.rows[0].gpu_ms, 4 * HOUR);
    assert_int_equal(r.rows[0].cost_micros, 4000000);
    assert_true(r.rows[1].idle);
    assert_int_equal(r.rows[1].cost_micros, 8000000);
    assert_int_equal(r.ncapacity, 1);
    usage_report_release(&r);
    /* Only day 1. */
    assert_int_equal(usage_ledger_report(&f.l, &f.pool, 1, USAGE_BY_POOL, 1, 1, NULL, &r), 0);
    assert_int_equal(r.total.cost_micros, 8000000);
    assert_int_equal(r.rows[0].pool, 0);
    usage_report_release(&r);
    release_fixture(&f);
}

static void test_a_pack_is_drawn_once_in_day_order(void **state)
{
    (void)state;
    struct fixture f;
    run_fixture(&f, BILLING_PACK, 6); /* 6 prepaid GPU-hours of the 12 provisioned */
    struct usage_report r;
    assert_int_equal(usage_ledger_report(&f.l, &f.pool, 1, USAGE_BY_DAY, 0, 10, NULL, &r), 0);
    assert_int_equal(r.ncapacity, 2);
    assert_int_equal(r.capacity[0].cost_micros, 0);       /* 4 GPU-hours, all prepaid */
    assert_int_equal(r.capacity[1].cost_micros, 6000000); /* 2 prepaid left, 6 at 1.00 */
    assert_int_equal(r.total.cost_micros, billing_pool_cost_micros(&f.b, &f.pool, 0));
    usage_report_release(&r);
    release_fixture(&f);
}

static void test_an_empty_ledger_or_range_reports_nothing(void **state)
{
    (void)state;
    struct usage_ledger empty;
    usage_ledger_init(&empty);
    struct pool p;
    pool_defaults(&p);
    struct usage_report r;
    assert_int_equal(usage_ledger_report(&empty, &p, 1, USAGE_BY_PROJECT, 0, 10, NULL, &r), 0);
    assert_int_equal(r.nrows, 0);
    assert_int_equal(r.ncapacity, 0);
    assert_int_equal(r.total.cost_micros, 0);
    usage_report_release(&r);
    struct fixture f;
    run_fixture(&f, BILLING_ON_DEMAND, 0);
    assert_int_equal(usage_ledger_report(&f.l, &f.pool, 1, USAGE_BY_DAY, 5, 9, NULL, &r), 0);
    assert_int_equal(r.nrows, 0);
    usage_report_release(&r);
    release_fixture(&f);
}

static void test_a_project_filter_keeps_its_rows_whatever_the_grouping(void **state)
{
    (void)state;
    struct fixture f;
    run_fixture(&f, BILLING_ON_DEMAND, 0);
    struct usage_report r;
    /* Grouped by pool only, rows carry no project: the filter must still find alpha's. */
    assert_int_equal(usage_ledger_report(&f.l, &f.pool, 1, USAGE_BY_POOL, 0, 10, "alpha", &r), 0);
    const struct usage_row *used = find_row(&r, "", -1, false);
    assert_non_null(used);
    assert_int_equal(used->gpu_ms, 4 * HOUR);
    assert_int_equal(used->cost_micros, 4000000);
    assert_int_equal(r.total.cost_micros, 12000000); /* the pool's, not the project's */
    usage_report_release(&r);
    assert_int_equal(usage_ledger_report(&f.l, &f.pool, 1, USAGE_BY_POOL, 0, 10, "nobody", &r), 0);
    assert_null(find_row(&r, "", -1, false));
    usage_report_release(&r);
    release_fixture(&f);
}

static void test_group_words_parse_and_bad_ones_are_named(void **state)
{
    (void)state;
    char bad[32];
    assert_int_equal(usage_group_parse("day,project", bad), USAGE_BY_DAY | USAGE_BY_PROJECT);
    assert_int_equal(usage_group_parse("", bad), 0);
    assert_int_equal(usage_group_parse("pool,queue", bad), USAGE_BY_POOL | USAGE_BY_QUEUE);
    assert_int_equal(usage_group_parse("project,month", bad), -1);
    assert_string_equal(bad, "month");
}

static void test_report_by_user_splits_a_project_between_its_submitters(void **state)
{
    (void)state;
    struct pool p;
    pool_defaults(&p);
    snprintf(p.name, sizeof p.name, "p");
    p.gpus_per_node = 4;
    p.price_per_node_hour_micros = 4000000;
    struct usage_ledger l;
    usage_ledger_init(&l);
    assert_int_equal(usage_ledger_add_pool(&l, 0, 0, HOUR, 3 * HOUR), 0);
    assert_int_equal(usage_ledger_add_user_use(&l, 0, 0, "alpha", "q", "ann", HOUR), 0);
    assert_int_equal(usage_ledger_add_user_use(&l, 0, 0, "alpha", "q", "bob", HOUR), 0);
    assert_int_equal(usage_ledger_add_user_use(&l, 0, 0, "alpha", "q", "ann", HOUR), 0);
    assert_int_equal(l.nuses, 2);
    struct usage_report r;
    assert_int_equal(usage_ledger_report(&l, &p, 1, USAGE_BY_USER, 0, 10, NULL, &r), 0);
    assert_int_equal(r.nrows, 3); /* ann, bob, idle */
    assert_string_equal(r.rows[0].user, "ann");
    assert_int_equal(r.rows[0].gpu_ms, 2 * HOUR);
    assert_int_equal(r.rows[0].cost_micros, 2000000);
    assert_string_equal(r.rows[1].user, "bob");
    assert_int_equal(r.rows[1].cost_micros, 1000000);
    assert_true(r.rows[2].idle);
    usage_report_release(&r);
    /* By project alone the two users fold into one row. */
    assert_int_equal(usage_ledger_report(&l, &p, 1, USAGE_BY_PROJECT, 0, 10, NULL, &r), 0);
    assert_int_equal(r.nrows, 2);
    assert_int_equal(r.rows[0].gpu_ms, 3 * HOUR);
    usage_report_release(&r);
    usage_ledger_release(&l);
    char bad[32];
    assert_int_equal(usage_group_parse("user,project", bad), USAGE_BY_USER | USAGE_BY_PROJECT);
}

static void test_nodes_joined_by_hand_are_metered_by_project_and_user(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node hand = fx_h200_node(1, 4); /* no pool */
    struct node pooled = fx_h200_node(2, 4);
    snprintf(pooled.pool, sizeof pooled.pool, "p");
    struct node lost = fx_h200_node(3, 4);
    lost.state = NODE_LOST;
    assert_non_null(cluster_put_node(&c, &hand));
    assert_non_null(cluster_put_node(&c, &pooled));
    assert_non_null(cluster_put_node(&c, &lost));
    struct job j = fx_job(10, 2);
    snprintf(j.project, sizeof j.project, "alpha");
    snprintf(j.user, sizeof j.user, "ann");
    assert_non_null(fx_add_running(&c, j, 1, 23 * HOUR));
    struct job k = fx_job(11, 1);
    assert_non_null(fx_add_running(&c, k, 2, 23 * HOUR)); /* on the pool's node: billing's */
    struct usage_ledger l;
    usage_ledger_init(&l);
    /* 23:00 to 01:00: split at midnight; static pseudo-pool index 1. */
    assert_int_equal(usage_meter_static(&l, &c, 1, 23 * HOUR, DAY + HOUR), 0);
    assert_int_equal(l.ndays, 2);
    assert_int_equal(l.days[0].pool, 1);
    assert_int_equal(l.days[0].node_ms, 4 * HOUR); /* 4 GPUs of the ready node, 1 h */
    assert_int_equal(l.days[0].gpu_ms, 2 * HOUR);
    assert_int_equal(l.nuses, 2);
    assert_string_equal(l.uses[0].project, "alpha");
    assert_string_equal(l.uses[0].user, "ann");
    assert_int_equal(l.uses[0].gpu_ms + l.uses[1].gpu_ms, 4 * HOUR);
    struct pool pools[2];
    pool_defaults(&pools[0]);
    pool_defaults(&pools[1]);
    pools[1].gpus_per_node = 1;
    pools[1].price_per_node_hour_micros = 0;
    struct usage_report r;
    assert_int_equal(usage_ledger_report(&l, pools, 2, USAGE_BY_USER | USAGE_BY_POOL, 0, 10, NULL, &r), 0);
    assert_int_equal(r.nrows, 2);
    assert_string_equal(r.rows[0].user, "ann");
    assert_int_equal(r.rows[0].pool, 1);
    assert_int_equal(r.rows[0].gpu_ms, 4 * HOUR);
    assert_int_equal(r.rows[0].cost_micros, 0);
    assert_true(r.rows[1].idle);
    assert_int_equal(r.rows[1].gpu_ms, 4 * HOUR);
    assert_int_equal(r.total.provisioned_gpu_ms, 8 * HOUR);
    usage_report_release(&r);
    usage_ledger_release(&l);
    cluster_release(&c);
}

/* Two meters feed the ledger (billing, pool 0; nodes joined by hand, pool
 * 1), each splitting its own ticks at midnight: the one that crosses second
 * still adds its last seconds of day 0 to day 0's rows. */
static void test_a_late_use_of_an_earlier_day_adds_to_that_days_row(void **state)
{
    (void)state;
    struct usage_ledger l;
    usage_ledger_init(&l);
    assert_int_equal(usage_ledger_add_user_use(&l, 0, 0, "vision", "q", "ann", 1000), 0);
    assert_int_equal(usage_ledger_add_user_use(&l, 0, 1, "vision", "q", "ann", 500), 0);
    usage_ledger_clean(&l); /* saved: a row added again must be dirty again */
    assert_int_equal(usage_ledger_add_user_use(&l, 1, 1, "vision", "q", "ann", 10), 0);
    assert_int_equal(usage_ledger_add_user_use(&l, 0, 0, "vision", "q", "ann", 20), 0);
    assert_int_equal(usage_ledger_add_user_use(&l, 1, 0, "vision", "q", "ann", 30), 0);
    assert_int_equal(l.nuses, 4);
    assert_int_equal(l.uses[0].day, 0);
    assert_int_equal(l.uses[0].pool, 0);
    assert_int_equal(l.uses[0].gpu_ms, 1020);
    assert_true(l.uses[0].dirty);
    assert_int_equal(l.uses_dirty_from, 0);
    assert_int_equal(l.uses[1].gpu_ms, 500);
    /* Later ticks of both meters find their day-1 rows. */
    assert_int_equal(usage_ledger_add_user_use(&l, 1, 1, "vision", "q", "ann", 1), 0);
    assert_int_equal(usage_ledger_add_user_use(&l, 1, 0, "vision", "q", "ann", 1), 0);
    assert_int_equal(l.nuses, 4);
    assert_int_equal(l.uses[2].gpu_ms + l.uses[3].gpu_ms, 42);
    usage_ledger_release(&l);
}

/* A pool's new day first, then another pool's first row of the old day
 * (late), then the first pool's new day again: one row per pool and day. */
static void test_a_pool_day_is_found_past_another_pools_late_row(void **state)
{
    (void)state;
    struct usage_ledger l;
    usage_ledger_init(&l);
    assert_int_equal(usage_ledger_add_pool(&l, 0, 0, 1000, 1000), 0);
    assert_int_equal(usage_ledger_add_pool(&l, 1, 0, 10, 10), 0);
    assert_int_equal(usage_ledger_add_pool(&l, 0, 1, 20, 20), 0);
    assert_int_equal(usage_ledger_add_pool(&l, 1, 0, 30, 30), 0);
    assert_int_equal(usage_ledger_add_pool(&l, 1, 1, 40, 40), 0);
    assert_int_equal(l.ndays, 4);
    assert_int_equal(l.days[1].day, 1);
    assert_int_equal(l.days[1].pool, 0);
    assert_int_equal(l.days[1].node_ms, 40);
    usage_ledger_release(&l);
}

/* Four projects each metered a whole 1-GPU node-hour (a node with more
 * GPUs than its pool's): their costs are each capped, and the day's idle
 * cost is 0, not below. */
static void test_idle_cost_is_never_below_zero(void **state)
{
    (void)state;
    struct pool p;
    pool_defaults(&p);
    p.gpus_per_node = 1;
    p.price_per_node_hour_micros = 1000000;
    struct usage_ledger l;
    usage_ledger_init(&l);
    assert_int_equal(usage_ledger_add_pool(&l, 0, 0, HOUR, 4 * HOUR), 0);
    const char *projects[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++)
        assert_int_equal(usage_ledger_add_use(&l, 0, 0, projects[i], "q", HOUR), 0);
    struct usage_report r;
    assert_int_equal(usage_ledger_report(&l, &p, 1, USAGE_BY_PROJECT, 0, 0, NULL, &r), 0);
    assert_int_equal(r.total.cost_micros, 1000000);
    assert_int_equal(r.total.idle_cost_micros, 0);
    assert_int_equal(r.ncapacity, 1);
    assert_int_equal(r.capacity[0].idle_cost_micros, 0);
    for (size_t i = 0; i < r.nrows; i++)
        assert_true(r.rows[i].cost_micros >= 0);
    usage_report_release(&r);
    usage_ledger_release(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_tick_across_midnight_is_split_between_the_days),
        cmocka_unit_test(test_report_by_project_and_day_prices_each_day),
        cmocka_unit_test(test_report_without_day_folds_the_days),
        cmocka_unit_test(test_a_pack_is_drawn_once_in_day_order),
        cmocka_unit_test(test_an_empty_ledger_or_range_reports_nothing),
        cmocka_unit_test(test_a_project_filter_keeps_its_rows_whatever_the_grouping),
        cmocka_unit_test(test_group_words_parse_and_bad_ones_are_named),
        cmocka_unit_test(test_report_by_user_splits_a_project_between_its_submitters),
        cmocka_unit_test(test_nodes_joined_by_hand_are_metered_by_project_and_user),
        cmocka_unit_test(test_a_late_use_of_an_earlier_day_adds_to_that_days_row),
        cmocka_unit_test(test_a_pool_day_is_found_past_another_pools_late_row),
        cmocka_unit_test(test_idle_cost_is_never_below_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
