/* Unit tests for operator actions: hold, release, requeue, drain, undrain
 * and removing a node (src/core/operator.c), through the scheduler's passes
 * and heartbeats. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "common/tide_err.h"
#include "core/operator.h"
#include "core/reconcile.h"
#include "core/sched.h"

#include "cluster_fixture.h"

static struct cluster c;
static struct scheduler s;
static struct action_list out;
static struct tide_err err;

static int setup(void **state)
{
    (void)state;
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    cfg.node_timeout_ms = 30000;
    sched_init(&s, &cfg);
    cluster_init(&c);
    action_list_init(&out);
    tide_err_clear(&err);
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

static void add_node(struct node n)
{
    assert_non_null(cluster_put_node(&c, &n));
}

static void add_job(struct job j)
{
    assert_non_null(cluster_add_job(&c, &j));
}

/* Places job 1 (1 GPU, no retries) on node 1 and has its agent report it running. */
static struct job *start_one(void)
{
    add_node(fx_h200_node(1, 2));
    add_job(fx_job(1, 1));
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 1);
    struct job *job = cluster_find_job(&c, 1);
    struct task_report running = {.job_id = 1, .attempt = 1, .exit_code = -1};
    assert_int_equal(reconcile_heartbeat(&c, cluster_find_node(&c, 1), &running, 1, 2000, &out), 0);
    assert_int_equal(job->state, JOB_RUNNING);
    action_list_clear(&out);
    return job;
}

static void test_held_job_is_never_placed_until_released(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 4));
    add_job(fx_job(1, 1));
    assert_int_equal(operator_hold_job(&c, 1, "waiting for data", &err), 0);
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 0);
    assert_int_equal(sched_pass(&s, &c, 2000, &out), 0);
    struct job *job = cluster_find_job(&c, 1);
    assert_int_equal(job->state, JOB_PENDING);
    assert_string_equal(fx_reason(job), "held: waiting for data");
    assert_int_equal(operator_release_job(&c, 1, &err), 0);
    assert_int_equal(sched_pass(&s, &c, 3000, &out), 1);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_STARTING);
}

static void test_held_job_does_not_block_the_jobs_behind_it(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 1));
    struct job first = fx_job(1, 1);
    first.priority = 10;
    add_job(first);
    add_job(fx_job(2, 1));
    assert_int_equal(operator_hold_job(&c, 1, NULL, &err), 0);
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 1);
    assert_non_null(fx_find(&out, ACTION_START, 2));
    assert_null(fx_find(&out, ACTION_START, 1));
}

static void test_only_a_pending_job_can_be_held_and_only_a_held_one_released(void **state)
{
    (void)state;
    start_one();
    assert_int_equal(operator_hold_job(&c, 1, NULL, &err), TIDE_ECONFLICT);
    assert_string_equal(err.field, "id");
    assert_int_equal(operator_hold_job(&c, 99, NULL, &err), TIDE_ENOENT);
    add_job(fx_job(2, 8));
    assert_int_equal(operator_release_job(&c, 2, &err), TIDE_ECONFLICT);
    assert_int_equal(operator_hold_job(&c, 2, NULL, &err), 0);
    assert_int_equal(operator_hold_job(&c, 2, NULL, &err), TIDE_ECONFLICT);
}

static void test_requeued_job_is_pending_again_without_using_a_retry(void **state)
{
    (void)state;
    struct job *job = start_one(); /* retries: 0 */
    assert_int_equal(operator_requeue_job(&c, 1, "maintenance", &out, &err), 0);
    const struct action *a = fx_find(&out, ACTION_PREEMPT, 1);
    assert_non_null(a);
    assert_string_equal(a->reason, "requeued: maintenance");
    assert_int_equal(job->state, JOB_PREEMPTED);
    action_list_clear(&out);
    /* The agent is told to stop it, then reports it ended by the signal. */
    struct task_report stopped = {
        .job_id = 1, .attempt = 1, .exited = true, .exit_code = -1, .signal = 15};
    snprintf(stopped.reason, sizeof stopped.reason, "signal 15");
    assert_int_equal(reconcile_heartbeat(&c, cluster_find_node(&c, 1), &stopped, 1, 3000, &out), 0);
    a = fx_find(&out, ACTION_REQUEUE, 1);
    assert_non_null(a);
    assert_string_equal(a->reason, "requeued: maintenance"); /* the operator's words, kept */
    assert_null(fx_find(&out, ACTION_FINISH, 1));
    job = cluster_find_job(&c, 1);
    assert_non_null(job);
    assert_int_equal(job->state, JOB_PENDING);
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 0);
    action_list_clear(&out);
    assert_int_equal(sched_pass(&s, &c, 4000, &out), 1);
    assert_int_equal(cluster_find_job(&c, 1)->attempt, 2);
}

static void test_pending_job_cannot_be_requeued(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 1));
    add_job(fx_job(1, 4));
    assert_int_equal(operator_requeue_job(&c, 1, NULL, &out, &err), TIDE_ECONFLICT);
    assert_int_equal(out.len, 0);
}

static void test_drained_node_gets_no_new_work_but_keeps_what_runs(void **state)
{
    (void)state;
    struct job *job = start_one();
    assert_int_equal(operator_drain_node(&c, 1, "disk swap", &err), 0);
    struct node *node = cluster_find_node(&c, 1);
    assert_int_equal(node->state, NODE_DRAINING);
    assert_string_equal(node->drain_reason, "disk swap");
    add_job(fx_job(2, 1));
    assert_int_equal(sched_pass(&s, &c, 3000, &out), 0);
    job = cluster_find_job(&c, 1);
    assert_int_equal(job->state, JOB_RUNNING);
    assert_int_equal(operator_node_jobs(&c, 1), 1);
    assert_int_equal(operator_undrain_node(&c, 1, &err), 0);
    assert_int_equal(cluster_find_node(&c, 1)->state, NODE_READY);
    assert_int_equal(sched_pass(&s, &c, 4000, &out), 1);
    assert_non_null(fx_find(&out, ACTION_START, 2));
}

static void test_drained_node_stays_drained_when_it_comes_back_from_lost(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 1));
    assert_int_equal(operator_drain_node(&c, 1, NULL, &err), 0);
    cluster_find_node(&c, 1)->last_heartbeat_ms = 0;
    assert_int_equal(sched_check_nodes(&s, &c, 60000, &out), 1);
    assert_int_equal(cluster_find_node(&c, 1)->state, NODE_LOST);
    assert_int_equal(reconcile_heartbeat(&c, cluster_find_node(&c, 1), NULL, 0, 61000, &out), 0);
    assert_int_equal(cluster_find_node(&c, 1)->state, NODE_DRAINING);
    add_job(fx_job(1, 1));
    assert_int_equal(sched_pass(&s, &c, 62000, &out), 0);
}

static void test_pool_node_is_left_to_its_autoscaler(void **state)
{
    (void)state;
    struct node n = fx_h200_node(1, 1);
    snprintf(n.pool, sizeof n.pool, "h200");
    add_node(n);
    assert_int_equal(operator_drain_node(&c, 1, NULL, &err), TIDE_ECONFLICT);
    assert_int_equal(operator_remove_node(&c, 1, 1000, 0, &out, &err), TIDE_ECONFLICT);
    assert_int_equal(operator_drain_node(&c, 7, NULL, &err), TIDE_ENOENT);
    assert_string_equal(err.field, "node");
}

static void test_removed_node_requeues_its_jobs_without_using_a_retry(void **state)
{
    (void)state;
    start_one(); /* retries: 0, so a counted failure would end it */
    add_node(fx_h200_node(2, 1));
    int moved = operator_remove_node(&c, 1, 5000, 30000, &out, &err);
    assert_int_equal(moved, 1);
    assert_null(cluster_find_node(&c, 1));
    assert_non_null(cluster_find_node(&c, 2));
    const struct action *a = fx_find(&out, ACTION_REQUEUE, 1);
    assert_non_null(a);
    assert_string_equal(a->reason, "node node-1 deleted");
    struct job *job = cluster_find_job(&c, 1);
    assert_non_null(job);
    assert_int_equal(job->state, JOB_PENDING);
    assert_int_equal(job->preemptions, 1);
    /* Node 1 was heard at 2000 and its agent may still run the task until
     * 30 s after (it fences itself, or registers again and is told to stop
     * it): node 2 does not start it before. */
    action_list_clear(&out);
    assert_int_equal(sched_pass(&s, &c, 6000, &out), 0);
    assert_non_null(strstr(fx_reason(job), "may still run on a deleted node"));
    assert_int_equal(sched_pass(&s, &c, 2000 + 30000 - 1, &out), 0);
    assert_int_equal(sched_pass(&s, &c, 2000 + 30000, &out), 1);
    assert_int_equal(fx_find(&out, ACTION_START, 1)->node_id, 2);
}

static void test_a_lost_nodes_jobs_start_again_at_once_when_it_is_deleted(void **state)
{
    (void)state;
    start_one();
    add_node(fx_h200_node(2, 1));
    cluster_find_node(&c, 1)->state = NODE_LOST; /* silent past the timeout: its agent fenced */
    assert_int_equal(operator_remove_node(&c, 1, 5000, 30000, &out, &err), 1);
    action_list_clear(&out);
    assert_int_equal(sched_pass(&s, &c, 5001, &out), 1);
    assert_int_equal(fx_find(&out, ACTION_START, 1)->node_id, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_held_job_is_never_placed_until_released, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_held_job_does_not_block_the_jobs_behind_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_only_a_pending_job_can_be_held_and_only_a_held_one_released, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requeued_job_is_pending_again_without_using_a_retry,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_pending_job_cannot_be_requeued, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drained_node_gets_no_new_work_but_keeps_what_runs,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_drained_node_stays_drained_when_it_comes_back_from_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool_node_is_left_to_its_autoscaler, setup, teardown),
        cmocka_unit_test_setup_teardown(test_removed_node_requeues_its_jobs_without_using_a_retry,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_lost_nodes_jobs_start_again_at_once_when_it_is_deleted,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
