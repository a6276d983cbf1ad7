/* Project budgets with a fake clock: metering to the cent, alerts once per
 * threshold and period, hard caps holding jobs and scale-up, period roll. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cluster_fixture.h"
#include "core/autoscaler.h"
#include "core/budget.h"
#include "core/sched.h"

#define S 1000LL
#define HOUR (3600 * S)
#define DAY (24 * HOUR)
/* 2024-03-10 00:00:00 UTC */
#define T0 (1710028800LL * 1000)

struct fx {
    struct cluster c;
    struct pool pool;
    struct budget_set bs;
    struct budget_alert alerts[8];
};

/* A 2-GPU node at 8.00 per node-hour (4.00 per GPU-hour), a budget for
 * "vision" of 10.00 a day with alerts at 50/80/100 %. */
static void fx_start(struct fx *f, bool hard_cap)
{
    cluster_init(&f->c);
    pool_defaults(&f->pool);
    snprintf(f->pool.name, sizeof f->pool.name, "p");
    f->pool.gpus_per_node = 2;
    f->pool.price_per_node_hour_micros = 8000000;
    struct node n = fx_h200_node(1, 2);
    snprintf(n.pool, sizeof n.pool, "p");
    assert_non_null(cluster_put_node(&f->c, &n));
    budget_set_init(&f->bs);
    struct budget b;
    memset(&b, 0, sizeof b);
    snprintf(b.project, sizeof b.project, "vision");
    b.cap_micros[BUDGET_DAILY] = 10000000;
    b.alert_pct[0] = 50, b.alert_pct[1] = 80, b.alert_pct[2] = 100;
    b.nalerts = 3;
    b.hard_cap = hard_cap;
    assert_non_null(budget_add(&f->bs, &b));
}

static struct job *fx_run(struct fx *f, int64_t id, const char *project)
{
    struct job j = fx_job(id, 1);
    snprintf(j.project, sizeof j.project, "%s", project);
    struct job *r = fx_add_running(&f->c, j, 1, T0);
    assert_non_null(r);
    return r;
}

static int tick(struct fx *f, int64_t now)
{
    return budget_tick(&f->bs, &f->c, &f->pool, 1, now, f->alerts, 8);
}

static void test_spend_is_the_gpu_time_at_the_pools_price_to_the_cent(void **state)
{
    (void)state;
    struct fx f;
    fx_start(&f, false);
    fx_run(&f, 10, "vision");
    fx_run(&f, 11, "other"); /* not budgeted: not counted */
    tick(&f, T0);
    tick(&f, T0 + HOUR);
    tick(&f, T0 + 90 * 60 * S); /* 1.5 GPU-hours at 4.00 */
    assert_int_equal(budget_spent_micros(&f.bs.items[0], BUDGET_DAILY), 6000000);
    assert_int_equal(budget_spent_micros(&f.bs.items[0], BUDGET_MONTHLY), 6000000);
    cluster_release(&f.c);
}

static void test_a_share_spends_its_part_of_the_gpu_and_mig_instances_their_slices(void **state)
{
    (void)state;
    struct fx f;
    fx_start(&f, false);
    /* a share promised half of GPU 0's memory */
    struct job share = fx_job(10, 1);
    snprintf(share.project, sizeof share.project, "vision");
    share.gpu_memory_mib = FX_H200_MIB / 2;
    assert_non_null(fx_add_running(&f.c, share, 1, T0));
    assert_int_equal(cluster_find_node(&f.c, 1)->gpus[0].shared_jobs, 1);
    /* and node 2's one GPU in MIG mode, its seven 1g instances held by
     * seven jobs of the project: one GPU's worth */
    struct node mig = fx_h200_node(2, 8);
    snprintf(mig.pool, sizeof mig.pool, "p");
    mig.gpus[0].mig_mode = true;
    for (int k = 1; k < 8; k++) {
        snprintf(mig.gpus[k].mig_profile, sizeof mig.gpus[k].mig_profile, "1g.18gb");
        mig.gpus[k].mig_parent = 0;
    }
    struct node *n = cluster_put_node(&f.c, &mig);
    assert_non_null(n);
    for (int k = 1; k < 8; k++) {
        struct job j = fx_job(20 + k, 1);
        snprintf(j.project, sizeof j.project, "vision");
        snprintf(j.mig, sizeof j.mig, "1g.18gb");
        struct job *in = cluster_add_job(&f.c, &j);
        assert_non_null(in);
        int idx = k;
        cluster_assign(&f.c, in, cluster_find_node(&f.c, 2), &idx, 1);
    }
    tick(&f, T0);
    tick(&f, T0 + HOUR);
    /* half a GPU-hour and one GPU-hour at 4.00, to the cent: a part of a
     * GPU may round its last millisecond either way, once per job */
    int64_t spent = budget_spent_micros(&f.bs.items[0], BUDGET_DAILY);
    assert_in_range(spent, 6000000 - 10, 6000000 + 10);
    /* an hour of 1 s ticks loses nothing to rounding either */
    for (int64_t t = T0 + HOUR + S; t <= T0 + 2 * HOUR; t += S)
        tick(&f, t);
    spent = budget_spent_micros(&f.bs.items[0], BUDGET_DAILY);
    assert_in_range(spent, 12000000 - 10, 12000000 + 10);
    cluster_release(&f.c);
}

static void test_each_alert_threshold_is_reported_once_per_period(void **state)
{
    (void)state;
    struct fx f;
    fx_start(&f, false);
    fx_run(&f, 10, "vision");
    tick(&f, T0);
    assert_int_equal(tick(&f, T0 + 74 * 60 * S), 0); /* 4.93 */
    assert_int_equal(tick(&f, T0 + 75 * 60 * S), 1); /* 5.00: 50 % */
    assert_int_equal(f.alerts[0].pct, 50);
    assert_int_equal(f.alerts[0].period, BUDGET_DAILY);
    assert_int_equal(tick(&f, T0 + 80 * 60 * S), 0);
    assert_int_equal(tick(&f, T0 + 150 * 60 * S), 2); /* 10.00: past 80 % to 100 % */
    assert_int_equal(f.alerts[0].pct, 80);
    assert_int_equal(f.alerts[1].pct, 100);
    assert_int_equal(tick(&f, T0 + 200 * 60 * S), 0);
    /* Next UTC day: spend and alerts start again (a tick across midnight
     * charges each day its part). */
    tick(&f, T0 + DAY - S);
    tick(&f, T0 + DAY + S);
    assert_true(budget_spent_micros(&f.bs.items[0], BUDGET_DAILY) < 10000);
    assert_int_equal(f.bs.items[0].alerted_pct[BUDGET_DAILY], 0);
    cluster_release(&f.c);
}

static void test_a_cap_raised_after_its_alerts_alerts_again_as_spend_crosses_the_new_one(void **state)
{
    (void)state;
    struct fx f;
    fx_start(&f, false);
    fx_run(&f, 10, "vision");
    tick(&f, T0);
    tick(&f, T0 + 75 * 60 * S);
    assert_int_equal(tick(&f, T0 + 150 * 60 * S), 2); /* 10.00: 80 %, 100 % */
    assert_int_equal(f.alerts[1].pct, 100);
    f.bs.items[0].cap_micros[BUDGET_DAILY] = 20000000; /* the operator doubles it */
    assert_int_equal(tick(&f, T0 + 151 * 60 * S), 0);  /* 10.07: 50 % of 20, told before */
    assert_int_equal(tick(&f, T0 + 240 * 60 * S), 1);  /* 16.00: 80 % */
    assert_int_equal(f.alerts[0].pct, 80);
    assert_int_equal(tick(&f, T0 + 300 * 60 * S), 1); /* 20.00: 100 % */
    assert_int_equal(f.alerts[0].pct, 100);
    cluster_release(&f.c);
}

static void test_hard_cap_holds_the_projects_pending_jobs_with_the_reason(void **state)
{
    (void)state;
    struct fx f;
    fx_start(&f, true);
    struct job *running = fx_run(&f, 10, "vision");
    running->state = JOB_RUNNING;
    tick(&f, T0);
    tick(&f, T0 + 150 * 60 * S); /* 10.00: at the cap */
    struct job j = fx_job(20, 1);
    snprintf(j.project, sizeof j.project, "vision");
    assert_non_null(cluster_add_job(&f.c, &j));
    j = fx_job(21, 1);
    snprintf(j.project, sizeof j.project, "other");
    assert_non_null(cluster_add_job(&f.c, &j));
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    cfg.budgets = &f.bs;
    struct scheduler s;
    sched_init(&s, &cfg);
    struct action_list out;
    action_list_init(&out);
    assert_int_equal(sched_pass(&s, &f.c, T0 + 150 * 60 * S, &out), 1);
    assert_int_equal(fx_count(&out, ACTION_START, 21), 1);
    assert_int_equal(fx_count(&out, ACTION_START, 20), 0);
    assert_non_null(strstr(fx_reason(cluster_find_job(&f.c, 20)), "budget exhausted"));
    /* The running job is not stopped. */
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 10), 0);
    action_list_release(&out);
    sched_release(&s);
    cluster_release(&f.c);
}

static void test_no_nodes_are_added_for_a_project_at_its_hard_cap(void **state)
{
    (void)state;
    struct fx f;
    fx_start(&f, true);
    fx_run(&f, 10, "vision");
    fx_run(&f, 11, "vision");
    tick(&f, T0);
    tick(&f, T0 + 75 * 60 * S); /* two GPUs: 10.00 */
    struct job j = fx_job(20, 2);
    snprintf(j.project, sizeof j.project, "vision");
    assert_non_null(cluster_add_job(&f.c, &j));
    struct autoscaler a;
    autoscaler_init(&a, &f.pool, 1);
    a.budgets = &f.bs;
    struct pool_action_list out;
    pool_action_list_init(&out);
    autoscaler_decide(&a, &f.c, T0 + 75 * 60 * S, &out);
    for (size_t i = 0; i < out.len; i++)
        assert_int_not_equal(out.items[i].type, POOL_CREATE);
    a.budgets = NULL; /* without the cap the same job gets a node */
    pool_action_list_clear(&out);
    autoscaler_decide(&a, &f.c, T0 + 75 * 60 * S, &out);
    assert_int_equal(out.len > 0 && out.items[0].type == POOL_CREATE, 1);
    pool_action_list_release(&out);
    autoscaler_release(&a);
    cluster_release(&f.c);
}

static void test_months_are_calendar_months_in_utc(void **state)
{
    (void)state;
    assert_int_equal(budget_month_of(0), 0);
    int64_t jan31 = 1706745599LL * 1000; /* 2024-01-31 23:59:59 */
    assert_int_equal(budget_month_of(jan31), 54 * 12);
    assert_int_equal(budget_month_of(jan31 + S), 54 * 12 + 1);
    int64_t feb29 = 1709251199LL * 1000; /* 2024-02-29 23:59:59, leap year */
    assert_int_equal(budget_month_of(feb29), 54 * 12 + 1);
    assert_int_equal(budget_month_of(feb29 + S), 54 * 12 + 2);
    assert_int_equal(budget_day_of(jan31), 19753);
}

static void test_reject_refuses_new_jobs_only_once_the_cap_is_reached(void **state)
{
    (void)state;
    struct fx f;
    fx_start(&f, true);
    f.bs.items[0].reject_when_exhausted = true;
    fx_run(&f, 10, "vision");
    char why[TIDE_REASON_MAX];
    tick(&f, T0);
    tick(&f, T0 + 149 * 60 * S); /* 9.93 */
    assert_false(budget_rejects_submit(&f.bs, "vision", why));
    tick(&f, T0 + 150 * 60 * S); /* 10.00 */
    assert_true(budget_rejects_submit(&f.bs, "vision", why));
    assert_non_null(strstr(why, "budget exhausted: project vision spent 10.00 of its daily 10.00"));
    assert_false(budget_rejects_submit(&f.bs, "other", why));
    /* Without reject, the same cap holds jobs but refuses none. */
    f.bs.items[0].reject_when_exhausted = false;
    assert_false(budget_rejects_submit(&f.bs, "vision", why));
    cluster_release(&f.c);
}

/* A state loaded at start from an earlier day no longer holds: a server
 * without pools never ticks to roll it (it held the project for ever). */
static void test_a_loaded_state_of_an_earlier_day_is_rolled_to_today(void **state)
{
    (void)state;
    struct fx f;
    fx_start(&f, true);
    fx_run(&f, 10, "vision");
    tick(&f, T0);
    tick(&f, T0 + 150 * 60 * S);
    assert_true(budget_exhausted(&f.bs.items[0]));
    budget_roll_all(&f.bs, T0 + 150 * 60 * S + 60 * S); /* the same day: kept */
    assert_true(budget_exhausted(&f.bs.items[0]));
    budget_roll_all(&f.bs, T0 + DAY);
    assert_false(budget_exhausted(&f.bs.items[0]));
    assert_int_equal(budget_spent_micros(&f.bs.items[0], BUDGET_DAILY), 0);
    cluster_release(&f.c);
}

static void test_stop_running_preempts_the_projects_jobs_at_the_cap_only(void **state)
{
    (void)state;
    struct fx f;
    fx_start(&f, true);
    f.bs.items[0].stop_running = true;
    struct job *mine = fx_run(&f, 10, "vision");
    struct job *theirs = fx_run(&f, 11, "other");
    struct action_list out;
    action_list_init(&out);
    tick(&f, T0);
    tick(&f, T0 + 149 * 60 * S);
    assert_int_equal(budget_stop_running(&f.bs, &f.c, &out), 0);
    tick(&f, T0 + 150 * 60 * S);
    assert_int_equal(budget_stop_running(&f.bs, &f.c, &out), 1);
    const struct action *a = fx_find(&out, ACTION_PREEMPT, 10);
    assert_non_null(a);
    assert_non_null(strstr(a->reason, "budget exhausted"));
    assert_int_equal(mine->state, JOB_PREEMPTED);
    assert_int_equal(theirs->state, JOB_RUNNING);
    /* Already asked: not asked again. */
    assert_int_equal(budget_stop_running(&f.bs, &f.c, &out), 0);
    action_list_release(&out);
    cluster_release(&f.c);
}

static void test_a_month_of_a_large_cluster_does_not_overflow_the_meter(void **state)
{
    (void)state;
    struct fx f;
    fx_start(&f, false);
    f.bs.items[0].cap_micros[BUDGET_MONTHLY] = INT64_C(1) << 60;
    f.pool.price_per_node_hour_micros = 10000000000LL; /* 5,000.00 per GPU-hour */
    fx_run(&f, 10, "vision");
    fx_run(&f, 11, "vision");
    tick(&f, T0);
    for (int h = 1; h <= 20 * 24; h++) /* 20 days of 2 GPUs, ticked hourly */
        tick(&f, T0 + h * HOUR);
    /* As micro-units x ms the spend would be 1.7e19, past int64. */
    assert_int_equal(budget_spent_micros(&f.bs.items[0], BUDGET_MONTHLY), 2LL * 480 * 5000000000LL);
    cluster_release(&f.c);
}

static void test_a_tick_reports_every_threshold_it_crosses(void **state)
{
    (void)state;
    struct fx f;
    fx_start(&f, false);
    fx_run(&f, 10, "vision");
    tick(&f, T0);
    /* 40 % to 90 % in one tick (a stalled thread, lowered caps at a restart). */
    assert_int_equal(tick(&f, T0 + 60 * 60 * S), 0);  /* 4.00 */
    assert_int_equal(tick(&f, T0 + 135 * 60 * S), 2); /* 9.00 */
    assert_int_equal(f.alerts[0].pct, 50);
    assert_int_equal(f.alerts[1].pct, 80);
    assert_int_equal(tick(&f, T0 + 136 * 60 * S), 0);
    cluster_release(&f.c);
}

static void test_alerts_past_the_room_given_come_with_the_next_tick(void **state)
{
    (void)state;
    struct fx f;
    fx_start(&f, false);
    fx_run(&f, 10, "vision");
    struct budget_alert one;
    assert_int_equal(budget_tick(&f.bs, &f.c, &f.pool, 1, T0, &one, 1), 0);
    assert_int_equal(budget_tick(&f.bs, &f.c, &f.pool, 1, T0 + 3 * HOUR, &one, 1), 1);
    assert_int_equal(one.pct, 50);
    assert_int_equal(budget_tick(&f.bs, &f.c, &f.pool, 1, T0 + 3 * HOUR + S, &one, 1), 1);
    assert_int_equal(one.pct, 80);
    assert_int_equal(budget_tick(&f.bs, &f.c, &f.pool, 1, T0 + 3 * HOUR + 2 * S, &one, 1), 1);
    assert_int_equal(one.pct, 100);
    assert_int_equal(budget_tick(&f.bs, &f.c, &f.pool, 1, T0 + 3 * HOUR + 3 * S, &one, 1), 0);
    cluster_release(&f.c);
}

/* Ticks from 23:00 to 01:00: each day, and each month at a month's end,
 * gets its own hour (as billing splits it). */
static void test_a_tick_across_midnight_charges_each_side_to_its_own_period(void **state)
{
    (void)state;
    struct fx f;
    fx_start(&f, false);
    fx_run(&f, 10, "vision");
    tick(&f, T0 + 23 * HOUR);
    tick(&f, T0 + DAY + HOUR); /* 2024-03-11 01:00 */
    assert_int_equal(budget_spent_micros(&f.bs.items[0], BUDGET_DAILY), 4000000);
    assert_int_equal(budget_spent_micros(&f.bs.items[0], BUDGET_MONTHLY), 8000000);
    /* 2024-03-31 23:00 to 2024-04-01 01:00. */
    tick(&f, T0 + 21 * DAY + 23 * HOUR);
    tick(&f, T0 + 22 * DAY + HOUR);
    assert_int_equal(budget_spent_micros(&f.bs.items[0], BUDGET_DAILY), 4000000);
    assert_int_equal(budget_spent_micros(&f.bs.items[0], BUDGET_MONTHLY), 4000000);
    cluster_release(&f.c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spend_is_the_gpu_time_at_the_pools_price_to_the_cent),
        cmocka_unit_test(test_a_share_spends_its_part_of_the_gpu_and_mig_instances_their_slices),
        cmocka_unit_test(test_each_alert_threshold_is_reported_once_per_period),
        cmocka_unit_test(
            test_a_cap_raised_after_its_alerts_alerts_again_as_spend_crosses_the_new_one),
        cmocka_unit_test(test_hard_cap_holds_the_projects_pending_jobs_with_the_reason),
        cmocka_unit_test(test_no_nodes_are_added_for_a_project_at_its_hard_cap),
        cmocka_unit_test(test_months_are_calendar_months_in_utc),
        cmocka_unit_test(test_reject_refuses_new_jobs_only_once_the_cap_is_reached),
        cmocka_unit_test(test_a_loaded_state_of_an_earlier_day_is_rolled_to_today),
        cmocka_unit_test(test_stop_running_preempts_the_projects_jobs_at_the_cap_only),
        cmocka_unit_test(test_a_month_of_a_large_cluster_does_not_overflow_the_meter),
        cmocka_unit_test(test_a_tick_reports_every_threshold_it_crosses),
        cmocka_unit_test(test_alerts_past_the_room_given_come_with_the_next_tick),
        cmocka_unit_test(test_a_tick_across_midnight_charges_each_side_to_its_own_period),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
