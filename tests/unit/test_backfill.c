/* Unit tests for EASY backfill through the scheduling pass (src/core/backfill.c, sched.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/backfill.h"
#include "core/sched.h"

#include "cluster_fixture.h"

#define NOW_MS 10000 /* running jobs started at 0 */

static struct cluster c;
static struct scheduler s;
static struct action_list out;

static void start_scheduler(bool backfill)
{
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    cfg.backfill = backfill;
    sched_init(&s, &cfg);
}

static int setup(void **state)
{
    (void)state;
    start_scheduler(true);
    cluster_init(&c);
    action_list_init(&out);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sched_release(&s);
    cluster_release(&c);
    action_list_release(&out);
    return 0;
}

static void add_node(int64_t id, int ngpus)
{
    struct node n = fx_h200_node(id, ngpus);
    assert_non_null(cluster_put_node(&c, &n));
}

/* A running, non-preemptible job expected to run est_s (max_runtime max_s). */
static void add_running(int64_t id, int gpus, int64_t node_id, int64_t est_s, int64_t max_s)
{
    struct job j = fx_job(id, gpus);
    j.est_runtime_s = est_s;
    j.max_runtime_s = max_s;
    assert_non_null(fx_add_running(&c, j, node_id, 0));
}

static void add_pending(int64_t id, int gpus, int priority, int64_t est_s)
{
    struct job j = fx_job(id, gpus);
    j.priority = priority;
    j.est_runtime_s = est_s;
    assert_non_null(cluster_add_job(&c, &j));
}

static struct job *job(int64_t id)
{
    struct job *j = cluster_find_job(&c, id);
    assert_non_null(j);
    return j;
}

static int pass(void)
{
    return sched_pass(&s, &c, NOW_MS, &out);
}

/* Node 1 has 4 GPUs, 2 held for 100 s more or less; job 10 wants all 4 and
 * is first in line. */
static void reserved_cluster(void)
{
    add_node(1, 4);
    add_running(1, 2, 1, 100, 0);
    add_pending(10, 4, 10, 0);
}

static void test_blocked_job_reserves_at_the_earliest_end_of_a_running_job(void **state)
{
    (void)state;
    add_node(1, 4);
    add_running(1, 2, 1, 300, 0);
    add_running(2, 2, 1, 100, 0);
    add_pending(10, 2, 10, 0);
    assert_int_equal(pass(), 0);
    assert_int_equal(job(10)->reserved_start_ms, 100000);
    assert_int_equal(job(10)->reserved_node_id, 1);
    assert_string_equal(fx_reason(job(10)), "reserved 2 GPUs on node-1 from 90 s from now (backfill)");
}

static void test_reservation_uses_max_runtime_when_a_running_job_gives_no_estimate(void **state)
{
    (void)state;
    add_node(1, 2);
    add_running(1, 2, 1, 0, 200);
    add_pending(10, 2, 10, 0);
    pass();
    assert_int_equal(job(10)->reserved_start_ms, 200000);
}

static void test_reservation_takes_est_runtime_over_max_runtime(void **state)
{
    (void)state;
    add_node(1, 2);
    add_running(1, 2, 1, 50, 500);
    add_pending(10, 2, 10, 0);
    pass();
    assert_int_equal(job(10)->reserved_start_ms, 50000);
}

static void test_reservation_waits_until_enough_gpus_have_freed(void **state)
{
    (void)state;
    add_node(1, 4);
    add_running(1, 2, 1, 300, 0);
    add_running(2, 2, 1, 100, 0);
    add_pending(10, 4, 10, 0);
    pass();
    assert_int_equal(job(10)->reserved_start_ms, 300000);
}

static void test_reservation_is_on_the_node_that_frees_up_first(void **state)
{
    (void)state;
    add_node(1, 2);
    add_node(2, 2);
    add_running(1, 2, 1, 300, 0);
    add_running(2, 2, 2, 100, 0);
    add_pending(10, 2, 10, 0);
    pass();
    assert_int_equal(job(10)->reserved_node_id, 2);
    assert_int_equal(job(10)->reserved_start_ms, 100000);
}

static void
test_blocked_job_reserves_with_an_unknown_start_when_running_jobs_give_no_runtime(void **state)
{
    (void)state;
    add_node(1, 4);
    add_running(1, 2, 1, 0, 0);
    add_pending(10, 4, 10, 0);
    add_pending(11, 2, 0, 0);
    assert_int_equal(pass(), 0);
    assert_int_equal(job(10)->reserved_node_id, 1);
    assert_int_equal(job(10)->reserved_start_ms, 0); /* unknown */
    assert_string_equal(fx_reason(job(10)), "reserved 4 GPUs on node-1, start unknown: the jobs "
                                            "there give no runtime (backfill)");
    assert_int_equal(job(11)->state, JOB_PENDING); /* it could delay job 10 for ever */
}

static void test_short_job_never_backfills_before_an_unknown_start(void **state)
{
    (void)state;
    add_node(1, 4);
    add_running(1, 2, 1, 0, 0);
    add_pending(10, 4, 10, 0);
    add_pending(11, 2, 0, 1); /* one second, but job 1 may end sooner */
    assert_int_equal(pass(), 0);
    assert_int_equal(job(11)->state, JOB_PENDING);
}

/* The starvation this guards against: each GPU that frees goes to the
 * next 1-GPU job unless it is held for the 4-GPU job first in line. */
static void test_gpus_freed_under_an_unknown_start_are_held_until_the_blocked_job_fits(void **state)
{
    (void)state;
    add_node(1, 4);
    for (int64_t id = 1; id <= 4; id++)
        add_running(id, 1, 1, 0, 0);
    add_pending(10, 4, 0, 0);
    for (int64_t id = 11; id <= 14; id++)
        add_pending(id, 1, 0, 0);
    assert_int_equal(pass(), 0);
    for (int64_t id = 1; id <= 3; id++) {
        cluster_remove_job(&c, id);
        action_list_clear(&out);
        assert_int_equal(pass(), 0);
    }
    cluster_remove_job(&c, 4);
    action_list_clear(&out);
    assert_int_equal(pass(), 1);
    assert_int_equal(job(10)->state, JOB_STARTING);
    assert_int_equal(job(11)->state, JOB_PENDING);
}

static void test_other_nodes_take_jobs_beside_a_reservation_of_unknown_start(void **state)
{
    (void)state;
    add_node(1, 4);
    add_node(2, 2);
    add_running(1, 2, 1, 0, 0);
    add_pending(10, 4, 10, 0); /* only node 1 can ever hold it */
    add_pending(11, 2, 0, 0);
    assert_int_equal(pass(), 1);
    assert_int_equal(job(10)->reserved_node_id, 1);
    assert_int_equal(job(11)->state, JOB_STARTING);
    assert_int_equal(job(11)->node_id, 2);
}

static void test_unknown_start_is_reserved_where_the_fewest_gpus_are_awaited(void **state)
{
    (void)state;
    add_node(1, 4);
    add_node(2, 4);
    add_running(1, 3, 1, 0, 0);
    add_running(2, 1, 2, 0, 0);
    add_pending(10, 4, 10, 0);
    pass();
    assert_int_equal(job(10)->reserved_node_id, 2);
    assert_int_equal(job(10)->reserved_start_ms, 0);
}

static void test_a_known_start_is_reserved_before_an_unknown_one(void **state)
{
    (void)state;
    add_node(1, 4);
    add_node(2, 4);
    add_running(1, 1, 1, 0, 0);   /* node 1: 3 free, 1 held for an unknown time */
    add_running(2, 4, 2, 100, 0); /* node 2: all held, free at 100 s */
    add_pending(10, 4, 10, 0);
    pass();
    assert_int_equal(job(10)->reserved_node_id, 2);
    assert_int_equal(job(10)->reserved_start_ms, 100000);
}

static void test_long_job_that_would_use_the_reserved_gpus_waits(void **state)
{
    (void)state;
    reserved_cluster();
    add_pending(11, 2, 0, 1000);
    assert_int_equal(pass(), 0);
    assert_int_equal(job(11)->state, JOB_PENDING);
    assert_int_equal(fx_count(&out, ACTION_START, 0), 0);
}

static void test_without_backfill_a_long_job_takes_the_free_gpus(void **state)
{
    (void)state;
    sched_release(&s);
    start_scheduler(false);
    reserved_cluster();
    add_pending(11, 2, 0, 1000);
    assert_int_equal(pass(), 1);
    assert_int_equal(job(11)->state, JOB_STARTING);
    assert_int_equal(job(10)->reserved_start_ms, 0);
}

static void test_job_without_a_runtime_bound_never_backfills_onto_reserved_gpus(void **state)
{
    (void)state;
    reserved_cluster();
    add_pending(11, 2, 0, 0);
    assert_int_equal(pass(), 0);
    assert_int_equal(job(11)->state, JOB_PENDING);
}

static void test_short_job_that_ends_before_the_reservation_runs(void **state)
{
    (void)state;
    reserved_cluster();
    add_pending(11, 2, 0, 50); /* ends at 60 s, the reservation starts at 100 s */
    assert_int_equal(pass(), 1);
    assert_int_equal(job(11)->state, JOB_STARTING);
    assert_int_equal(job(11)->node_id, 1);
}

static void test_reserved_gpus_stay_held_after_a_short_job_backfilled_beside_them(void **state)
{
    (void)state;
    reserved_cluster();
    add_pending(11, 1, 0, 50);   /* short: may use one reserved GPU */
    add_pending(12, 1, 0, 1000); /* long: must not use the other */
    assert_int_equal(pass(), 1);
    assert_int_equal(job(11)->state, JOB_STARTING);
    assert_int_equal(job(12)->state, JOB_PENDING);
}

static void test_long_job_away_from_the_reserved_node_runs(void **state)
{
    (void)state;
    add_node(1, 8);
    add_node(2, 2);
    add_running(1, 6, 1, 100, 0);
    add_pending(10, 8, 10, 0); /* only node 1 can ever hold it */
    add_pending(11, 2, 0, 1000);
    assert_int_equal(pass(), 1);
    assert_int_equal(job(10)->reserved_node_id, 1);
    assert_int_equal(job(11)->state, JOB_STARTING);
    assert_int_equal(job(11)->node_id, 2);
}

static void test_only_the_first_blocked_job_gets_a_reservation(void **state)
{
    (void)state;
    add_node(1, 4);
    add_node(2, 3);
    add_running(1, 2, 1, 100, 0);
    add_running(2, 3, 2, 200, 0); /* would give job 11 a reservation at 200 s */
    add_pending(10, 4, 10, 0);
    add_pending(11, 3, 5, 0);
    assert_int_equal(pass(), 0);
    assert_int_equal(job(10)->reserved_start_ms, 100000);
    assert_int_equal(job(11)->reserved_start_ms, 0);
    assert_int_equal(job(11)->reserved_node_id, 0);
    assert_null(strstr(fx_reason(job(11)), "reserved"));
    assert_int_equal(cluster_gpus_allocated(&c), 5);
}

static void test_reserved_gpus_are_released_at_the_end_of_the_pass(void **state)
{
    (void)state;
    reserved_cluster();
    int before = cluster_gpus_allocated(&c);
    assert_int_equal(pass(), 0);
    assert_int_equal(job(10)->reserved_node_id, 1); /* a reservation was made */
    assert_int_equal(cluster_gpus_allocated(&c), before);
    const struct node *n = cluster_find_node(&c, 1);
    assert_int_equal(n->gpus[2].job_id, 0);
    assert_int_equal(n->gpus[3].job_id, 0);
}

static void test_reservation_is_made_afresh_each_pass(void **state)
{
    (void)state;
    reserved_cluster();
    pass();
    cluster_remove_job(&c, 1); /* the running job ended early */
    action_list_clear(&out);
    assert_int_equal(pass(), 1);
    assert_int_equal(job(10)->state, JOB_STARTING);
    assert_int_equal(job(10)->reserved_start_ms, 0);
}

/* Gangs on one node: all of a job's GPUs at once, or none. */

static void test_gang_never_starts_on_part_of_its_gpus(void **state)
{
    (void)state;
    add_node(1, 8);
    add_node(2, 8);
    add_running(1, 4, 1, 0, 0);
    add_running(2, 4, 2, 0, 0); /* 4 free on each node, 8 in all */
    add_pending(10, 8, 0, 0);
    assert_int_equal(pass(), 0);
    assert_int_equal(fx_count(&out, ACTION_START, 0), 0);
    assert_int_equal(job(10)->state, JOB_PENDING);
    assert_int_equal(job(10)->ngpus_assigned, 0);
    assert_non_null(strstr(fx_reason(job(10)), "8"));
}

static void test_waiting_gang_holds_no_gpus_between_passes(void **state)
{
    (void)state;
    add_node(1, 8);
    add_node(2, 8);
    add_running(1, 4, 1, 0, 0);
    add_running(2, 4, 2, 0, 0);
    add_pending(10, 8, 0, 0);
    assert_int_equal(pass(), 0);
    assert_int_equal(job(10)->reserved_node_id, 1);  /* held during the pass only */
    assert_int_equal(cluster_gpus_allocated(&c), 8); /* only the running jobs' */
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 4);
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 2)), 4);
}

static void test_gpus_a_waiting_gang_wants_stay_free_for_smaller_jobs(void **state)
{
    (void)state;
    add_node(1, 8);
    add_node(2, 8);
    add_running(1, 4, 1, 0, 0);
    add_running(2, 4, 2, 0, 0);
    add_pending(10, 8, 10, 0);
    add_pending(11, 4, 0, 0);
    assert_int_equal(pass(), 1);
    assert_int_equal(job(10)->state, JOB_PENDING);
    assert_int_equal(job(11)->state, JOB_STARTING);
}

/* Two 8-GPU nodes, each half held until 100 s (node 1) and 200 s (node 2);
 * a 16-GPU job that may span 2 nodes is first in line, then a 4-GPU job
 * that would run 500 s and one that would run 50 s. */
static void blocked_gang_cluster(void)
{
    add_node(1, 8);
    add_node(2, 8);
    add_running(1, 4, 1, 100, 0);
    add_running(2, 4, 2, 200, 0);
    struct job gang = fx_job(10, 16);
    gang.priority = 10;
    gang.max_nodes = 2;
    assert_non_null(cluster_add_job(&c, &gang));
    add_pending(11, 4, 0, 500);
    add_pending(12, 4, 0, 50);
}

static void test_blocked_gang_job_reserves_over_two_nodes_and_is_not_delayed(void **state)
{
    (void)state;
    blocked_gang_cluster();
    assert_int_equal(pass(), 1);
    assert_int_equal(job(10)->state, JOB_PENDING);
    assert_int_equal(job(10)->reserved_start_ms, 200000); /* when node 2's half frees */
    assert_int_equal(job(10)->reserved_node_id, 1);
    assert_non_null(strstr(fx_reason(job(10)), "on 2 nodes"));
    assert_int_equal(job(11)->state, JOB_PENDING); /* would hold reserved GPUs past 200 s */
    assert_int_equal(job(12)->state, JOB_STARTING); /* done at 60 s */
    assert_int_equal(cluster_gpus_allocated(&c), 12); /* the reservation's hold is gone */
}

static void test_blocked_gang_job_reserves_an_unknown_start_over_two_nodes(void **state)
{
    (void)state;
    add_node(1, 8);
    add_node(2, 8);
    add_node(3, 4);
    add_running(1, 4, 1, 0, 0);
    add_running(2, 4, 2, 0, 0);
    struct job gang = fx_job(10, 16);
    gang.priority = 10;
    gang.max_nodes = 2;
    assert_non_null(cluster_add_job(&c, &gang));
    add_pending(11, 4, 0, 50);
    add_pending(12, 4, 0, 0);
    assert_int_equal(pass(), 1);
    assert_int_equal(job(10)->reserved_node_id, 1);
    assert_int_equal(job(10)->reserved_start_ms, 0);
    assert_non_null(strstr(fx_reason(job(10)), "on 2 nodes (node-1, ...), start unknown"));
    assert_int_equal(job(11)->state, JOB_STARTING);
    assert_int_equal(job(11)->node_id, 3); /* the only node not reserved */
    assert_int_equal(job(12)->state, JOB_PENDING);
}

static void test_without_backfill_a_long_job_takes_what_a_blocked_gang_waits_for(void **state)
{
    (void)state;
    sched_release(&s);
    start_scheduler(false);
    blocked_gang_cluster();
    assert_int_equal(pass(), 2);
    assert_int_equal(job(11)->state, JOB_STARTING);
}

static void test_gang_larger_than_any_node_never_starts_across_nodes(void **state)
{
    (void)state;
    add_node(1, 4);
    add_node(2, 4);
    add_pending(10, 8, 0, 0);
    assert_int_equal(pass(), 0);
    assert_int_equal(cluster_gpus_allocated(&c), 0);
    assert_int_equal(strncmp(fx_reason(job(10)), "no ready node", 13), 0);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_blocked_job_reserves_at_the_earliest_end_of_a_running_job),
        T(test_reservation_uses_max_runtime_when_a_running_job_gives_no_estimate),
        T(test_reservation_takes_est_runtime_over_max_runtime),
        T(test_reservation_waits_until_enough_gpus_have_freed),
        T(test_reservation_is_on_the_node_that_frees_up_first),
        T(test_blocked_job_reserves_with_an_unknown_start_when_running_jobs_give_no_runtime),
        T(test_short_job_never_backfills_before_an_unknown_start),
        T(test_gpus_freed_under_an_unknown_start_are_held_until_the_blocked_job_fits),
        T(test_other_nodes_take_jobs_beside_a_reservation_of_unknown_start),
        T(test_unknown_start_is_reserved_where_the_fewest_gpus_are_awaited),
        T(test_a_known_start_is_reserved_before_an_unknown_one),
        T(test_long_job_that_would_use_the_reserved_gpus_waits),
        T(test_without_backfill_a_long_job_takes_the_free_gpus),
        T(test_job_without_a_runtime_bound_never_backfills_onto_reserved_gpus),
        T(test_short_job_that_ends_before_the_reservation_runs),
        T(test_reserved_gpus_stay_held_after_a_short_job_backfilled_beside_them),
        T(test_long_job_away_from_the_reserved_node_runs),
        T(test_only_the_first_blocked_job_gets_a_reservation),
        T(test_reserved_gpus_are_released_at_the_end_of_the_pass),
        T(test_reservation_is_made_afresh_each_pass),
        T(test_gang_never_starts_on_part_of_its_gpus),
        T(test_waiting_gang_holds_no_gpus_between_passes),
        T(test_gpus_a_waiting_gang_wants_stay_free_for_smaller_jobs),
        T(test_blocked_gang_job_reserves_over_two_nodes_and_is_not_delayed),
        T(test_blocked_gang_job_reserves_an_unknown_start_over_two_nodes),
        T(test_without_backfill_a_long_job_takes_what_a_blocked_gang_waits_for),
        T(test_gang_larger_than_any_node_never_starts_across_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
