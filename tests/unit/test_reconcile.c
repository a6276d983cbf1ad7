/* Unit tests for heartbeat reconciliation (src/core/reconcile.c, docs/api.md "Agent protocol"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/operator.h"
#include "core/reconcile.h"
#include "core/sched.h"

#include "cluster_fixture.h"

#define NOW 50000

static struct cluster c;
static struct action_list out;

static int setup(void **state)
{
    (void)state;
    cluster_init(&c);
    action_list_init(&out);
    struct node n1 = fx_h200_node(1, 4), n2 = fx_h200_node(2, 4);
    assert_non_null(cluster_put_node(&c, &n1));
    assert_non_null(cluster_put_node(&c, &n2));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cluster_release(&c);
    action_list_release(&out);
    return 0;
}

/* Adds a job holding one GPU of node in the given state and attempt. */
static struct job *add_on_node(int64_t id, int64_t node_id, enum job_state st, int attempt,
                               int retries)
{
    struct job j = fx_job(id, 1);
    j.retries = retries;
    j.max_runtime_s = 60;
    struct job *job = cluster_add_job(&c, &j);
    assert_non_null(job);
    struct node *node = cluster_find_node(&c, node_id);
    for (int g = 0; g < node->ngpus; g++)
        if (!node->gpus[g].job_id) {
            int idx = node->gpus[g].index;
            cluster_assign(&c, job, node, &idx, 1);
            break;
        }
    assert_int_equal(job->node_id, node_id);
    job->state = st;
    job->attempt = attempt;
    return job;
}

static struct task_report running(int64_t job_id, int attempt)
{
    struct task_report r;
    memset(&r, 0, sizeof r);
    r.job_id = job_id;
    r.attempt = attempt;
    r.exit_code = -1;
    return r;
}

static struct task_report exited(int64_t job_id, int attempt, int exit_code, int sig,
                                 const char *reason)
{
    struct task_report r = running(job_id, attempt);
    r.exited = true;
    r.exit_code = exit_code;
    r.signal = sig;
    snprintf(r.reason, sizeof r.reason, "%s", reason);
    return r;
}

/* One heartbeat of node_id at now_ms, starting from an empty action list. */
static void heartbeat_at(int64_t node_id, const struct task_report *tasks, size_t n, int64_t now_ms)
{
    action_list_clear(&out);
    struct node *node = cluster_find_node(&c, node_id);
    assert_non_null(node);
    assert_int_equal(reconcile_heartbeat(&c, node, tasks, n, now_ms, &out), 0);
}

static void heartbeat(const struct task_report *tasks, size_t n)
{
    heartbeat_at(1, tasks, n, NOW);
}

static void test_starting_job_becomes_running_on_its_first_report(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_STARTING, 1, 0);
    struct task_report r = running(1, 1);
    heartbeat(&r, 1);
    const struct action *a = fx_find(&out, ACTION_RUNNING, 1);
    assert_non_null(a);
    assert_int_equal(a->attempt, 1);
    assert_int_equal(a->state, JOB_RUNNING);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_RUNNING);
    assert_int_equal(out.len, 1);
}

static void test_same_running_heartbeat_twice_gives_one_running(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_STARTING, 1, 0);
    struct task_report r = running(1, 1);
    heartbeat(&r, 1);
    heartbeat(&r, 1);
    assert_int_equal(out.len, 0);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_RUNNING);
}

static void test_exit_0_finishes_succeeded_and_is_acked(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_RUNNING, 1, 2);
    struct task_report r = exited(1, 1, 0, 0, "exit 0");
    heartbeat(&r, 1);
    const struct action *fin = fx_find(&out, ACTION_FINISH, 1);
    assert_non_null(fin);
    assert_int_equal(fin->state, JOB_SUCCEEDED);
    assert_int_equal(fin->exit_code, 0);
    assert_int_equal(fin->attempt, 1);
    const struct action *ack = fx_find(&out, ACTION_ACK, 1);
    assert_non_null(ack);
    assert_int_equal(ack->attempt, 1);
    assert_null(cluster_find_job(&c, 1));
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 0);
}

static void test_same_exit_heartbeat_twice_finishes_once_and_acks_both(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_RUNNING, 1, 0);
    struct task_report r = exited(1, 1, 0, 0, "exit 0");
    heartbeat(&r, 1);
    heartbeat(&r, 1);
    assert_int_equal(fx_count(&out, ACTION_FINISH, 0), 0);
    assert_int_equal(fx_count(&out, ACTION_ACK, 1), 1);
    assert_int_equal(out.len, 1);
}

static void test_failed_exit_with_retries_left_is_requeued(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_RUNNING, 1, 1);
    struct task_report r = exited(1, 1, 3, 0, "exit 3");
    heartbeat(&r, 1);
    assert_int_equal(fx_count(&out, ACTION_FINISH, 1), 0);
    const struct action *a = fx_find(&out, ACTION_REQUEUE, 1);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_FAILED);
    assert_int_equal(a->exit_code, 3);
    assert_string_equal(a->reason, "exit 3; retry 1 of 1");
    assert_int_equal(fx_count(&out, ACTION_ACK, 1), 1);
    struct job *job = cluster_find_job(&c, 1);
    assert_non_null(job);
    assert_int_equal(job->state, JOB_PENDING);
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 0);
}

static void test_failed_exit_without_retries_left_fails_with_its_exit_code(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_RUNNING, 2, 1);
    struct task_report r = exited(1, 2, 3, 0, "exit 3");
    heartbeat(&r, 1);
    assert_int_equal(fx_count(&out, ACTION_REQUEUE, 1), 0);
    const struct action *a = fx_find(&out, ACTION_FINISH, 1);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_FAILED);
    assert_int_equal(a->exit_code, 3);
    assert_string_equal(a->reason, "exit 3");
    assert_int_equal(fx_count(&out, ACTION_ACK, 1), 1);
    assert_null(cluster_find_job(&c, 1));
}

static void test_killed_by_a_signal_fails_with_the_signal(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_RUNNING, 1, 0);
    struct task_report r = exited(1, 1, -1, 9, "signal 9");
    heartbeat(&r, 1);
    const struct action *a = fx_find(&out, ACTION_FINISH, 1);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_FAILED);
    assert_int_equal(a->signal, 9);
    assert_string_equal(a->reason, "signal 9");
}

static void test_max_runtime_kill_ends_in_timeout_without_a_retry(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_RUNNING, 1, 3);
    struct task_report r = exited(1, 1, -1, 9, "max_runtime");
    heartbeat(&r, 1);
    assert_int_equal(fx_count(&out, ACTION_REQUEUE, 1), 0);
    const struct action *a = fx_find(&out, ACTION_FINISH, 1);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_TIMEOUT);
    assert_string_equal(a->reason, "max_runtime (60 s) exceeded");
    assert_int_equal(fx_count(&out, ACTION_ACK, 1), 1);
}

static void test_start_failure_is_a_failure_even_with_exit_0(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_STARTING, 1, 0);
    struct task_report r = exited(1, 1, 0, 0, "start failed: no such file");
    heartbeat(&r, 1);
    const struct action *a = fx_find(&out, ACTION_FINISH, 1);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_FAILED);
    assert_string_equal(a->reason, "start failed: no such file");
}

static void test_job_that_exits_before_it_was_seen_running_succeeds(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_STARTING, 1, 0);
    struct task_report r = exited(1, 1, 0, 0, "exit 0");
    heartbeat(&r, 1);
    assert_int_equal(fx_count(&out, ACTION_RUNNING, 1), 0);
    assert_int_equal(fx_find(&out, ACTION_FINISH, 1)->state, JOB_SUCCEEDED);
}

static void test_cancel_requested_running_job_is_sent_a_stop_each_heartbeat(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_RUNNING, 1, 0)->cancel_requested = true;
    struct task_report r = running(1, 1);
    heartbeat(&r, 1);
    const struct action *a = fx_find(&out, ACTION_SEND_STOP, 1);
    assert_non_null(a);
    assert_int_equal(a->attempt, 1);
    heartbeat(&r, 1);
    assert_int_equal(fx_count(&out, ACTION_SEND_STOP, 1), 1);
    assert_non_null(cluster_find_job(&c, 1));
}

static void test_cancelled_job_that_exits_ends_cancelled_not_requeued(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_RUNNING, 1, 5)->cancel_requested = true;
    struct task_report r = exited(1, 1, -1, 15, "cancelled");
    heartbeat(&r, 1);
    assert_int_equal(fx_count(&out, ACTION_REQUEUE, 1), 0);
    const struct action *a = fx_find(&out, ACTION_FINISH, 1);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_CANCELLED);
    assert_int_equal(fx_count(&out, ACTION_ACK, 1), 1);
    assert_null(cluster_find_job(&c, 1));
}

static void test_starting_job_not_yet_reported_gets_its_start_resent(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_STARTING, 2, 0);
    heartbeat(NULL, 0);
    const struct action *a = fx_find(&out, ACTION_SEND_START, 1);
    assert_non_null(a);
    assert_int_equal(a->attempt, 2);
    assert_int_equal(a->node_id, 1);
    heartbeat(NULL, 0);
    assert_int_equal(fx_count(&out, ACTION_SEND_START, 1), 1);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_STARTING);
}

static void test_cancelled_job_that_never_started_ends_cancelled_without_a_start(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_STARTING, 1, 0)->cancel_requested = true;
    heartbeat(NULL, 0);
    assert_int_equal(fx_count(&out, ACTION_SEND_START, 1), 0);
    const struct action *a = fx_find(&out, ACTION_FINISH, 1);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_CANCELLED);
    assert_null(cluster_find_job(&c, 1));
}

static void test_running_job_its_agent_forgot_is_requeued_as_vanished(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_RUNNING, 1, 1);
    heartbeat(NULL, 0);
    const struct action *a = fx_find(&out, ACTION_REQUEUE, 1);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_LOST);
    assert_string_equal(a->reason, "task vanished from its node; requeued without using a retry");
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_PENDING);
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 0);
}

static void test_running_job_its_agent_forgot_is_requeued_even_without_retries(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_RUNNING, 1, 0);
    add_on_node(2, 1, JOB_RUNNING, 1, 0);
    heartbeat(NULL, 0);
    assert_int_equal(fx_find(&out, ACTION_REQUEUE, 1)->state, JOB_LOST);
    assert_int_equal(fx_find(&out, ACTION_REQUEUE, 2)->state, JOB_LOST);
    assert_int_equal(fx_count(&out, ACTION_FINISH, 1) + fx_count(&out, ACTION_FINISH, 2), 0);
    assert_int_equal(c.njobs, 2);
}

static void test_running_task_the_server_does_not_know_is_stopped(void **state)
{
    (void)state;
    struct task_report r = running(77, 1);
    heartbeat(&r, 1);
    const struct action *a = fx_find(&out, ACTION_SEND_STOP, 77);
    assert_non_null(a);
    assert_int_equal(a->attempt, 1);
    assert_int_equal(a->node_id, 1);
    assert_int_equal(out.len, 1);
}

static void test_running_task_of_a_stale_attempt_is_stopped_and_the_new_one_started(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_STARTING, 2, 3);
    struct task_report r = running(1, 1);
    heartbeat(&r, 1);
    const struct action *stop = fx_find(&out, ACTION_SEND_STOP, 1);
    assert_non_null(stop);
    assert_int_equal(stop->attempt, 1);
    const struct action *start = fx_find(&out, ACTION_SEND_START, 1);
    assert_non_null(start);
    assert_int_equal(start->attempt, 2);
    assert_int_equal(fx_count(&out, ACTION_RUNNING, 1), 0);
}

static void test_exit_of_a_task_the_server_does_not_know_is_only_acked(void **state)
{
    (void)state;
    struct task_report r = exited(77, 3, 1, 0, "exit 1");
    heartbeat(&r, 1);
    assert_int_equal(out.len, 1);
    assert_int_equal(out.items[0].type, ACTION_ACK);
    assert_int_equal(out.items[0].job_id, 77);
    assert_int_equal(out.items[0].attempt, 3);
}

static void test_old_attempt_exit_repeated_after_a_requeue_is_only_acked(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_RUNNING, 1, 1);
    struct task_report r = exited(1, 1, 3, 0, "exit 3");
    heartbeat(&r, 1);
    assert_int_equal(fx_count(&out, ACTION_REQUEUE, 1), 1);
    heartbeat(&r, 1); /* the ack was lost; the agent says it again */
    assert_int_equal(out.len, 1);
    assert_int_equal(out.items[0].type, ACTION_ACK);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_PENDING);
}

static void test_task_reported_by_the_wrong_node_is_stopped_there(void **state)
{
    (void)state;
    add_on_node(1, 2, JOB_RUNNING, 1, 0);
    struct task_report r = running(1, 1);
    heartbeat_at(1, &r, 1, NOW);
    assert_int_equal(fx_count(&out, ACTION_SEND_STOP, 1), 1);
    assert_int_equal(fx_find(&out, ACTION_SEND_STOP, 1)->node_id, 1);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_RUNNING);
    assert_int_equal(cluster_find_job(&c, 1)->node_id, 2);
}

static void test_heartbeat_leaves_jobs_of_other_nodes_alone(void **state)
{
    (void)state;
    add_on_node(1, 2, JOB_RUNNING, 1, 0);
    add_on_node(2, 2, JOB_STARTING, 1, 0);
    heartbeat_at(1, NULL, 0, NOW);
    assert_int_equal(out.len, 0);
    assert_int_equal(c.njobs, 2);
}

static void test_heartbeat_records_when_the_node_was_last_heard(void **state)
{
    (void)state;
    heartbeat_at(1, NULL, 0, NOW + 123);
    assert_int_equal(cluster_find_node(&c, 1)->last_heartbeat_ms, NOW + 123);
    assert_int_equal(cluster_find_node(&c, 1)->state, NODE_READY);
    assert_int_equal(out.len, 0);
}

static void test_lost_node_heartbeating_again_comes_back(void **state)
{
    (void)state;
    cluster_find_node(&c, 1)->state = NODE_LOST;
    heartbeat(NULL, 0);
    const struct action *a = fx_find(&out, ACTION_NODE_BACK, 0);
    assert_non_null(a);
    assert_int_equal(a->node_id, 1);
    assert_int_equal(cluster_find_node(&c, 1)->state, NODE_READY);
    heartbeat(NULL, 0);
    assert_int_equal(fx_count(&out, ACTION_NODE_BACK, 0), 0);
}

static void test_lost_node_back_with_its_old_tasks_gets_them_stopped(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_RUNNING, 1, 1);
    struct scheduler s;
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    sched_init(&s, &cfg);
    assert_int_equal(sched_check_nodes(&s, &c, NOW, &out), 2);
    sched_release(&s);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_PENDING);

    struct task_report r = running(1, 1);
    heartbeat(&r, 1);
    assert_int_equal(fx_count(&out, ACTION_NODE_BACK, 0), 1);
    assert_int_equal(fx_count(&out, ACTION_SEND_STOP, 1), 1);
    assert_int_equal(fx_count(&out, ACTION_RUNNING, 1), 0);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_PENDING);
}

/* A gang job of one GPU on node 1 and one on node 2 (its part), running on
 * node 1 and not yet started on node 2. */
static struct job *add_gang_started_on_node_1(int64_t id)
{
    struct job j = fx_job(id, 2);
    j.max_nodes = 2;
    struct job *job = cluster_add_job(&c, &j);
    assert_non_null(job);
    int idx = 0;
    cluster_assign(&c, job, cluster_find_node(&c, 1), &idx, 1);
    cluster_assign_part(&c, job, cluster_find_node(&c, 2), &idx, 1);
    job->state = JOB_STARTING;
    job->attempt = 1;
    struct task_report r = running(id, 1);
    heartbeat_at(1, &r, 1, NOW);
    assert_int_equal(job->state, JOB_RUNNING);
    return job;
}

static void test_gang_whose_part_failed_before_the_other_started_ends_as_that_failure(void **state)
{
    (void)state;
    add_gang_started_on_node_1(7);
    struct task_report r = exited(7, 1, 3, 0, "exit 3");
    heartbeat_at(1, &r, 1, NOW + 1000);
    assert_null(fx_find(&out, ACTION_FINISH, 7)); /* its part on node 2 has not ended */
    const struct action *kept = fx_find(&out, ACTION_PART_EXITED, 7); /* stored before the ack */
    assert_non_null(kept);
    assert_int_equal(kept->node_id, 1);
    assert_non_null(fx_find(&out, ACTION_ACK, 7));
    heartbeat_at(2, NULL, 0, NOW + 2000); /* node 2 never started it: it never will */
    assert_null(fx_find(&out, ACTION_SEND_START, 7));
    assert_null(fx_find(&out, ACTION_REQUEUE, 7)); /* not "vanished": that would cost no retry */
    const struct action *a = fx_find(&out, ACTION_FINISH, 7);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_FAILED);
    assert_int_equal(a->exit_code, 3);
    assert_string_equal(a->reason, "exit 3");
    assert_null(cluster_find_job(&c, 7));
}

static void test_gang_part_not_yet_started_is_sent_its_start_while_the_gang_is_well(void **state)
{
    (void)state;
    add_gang_started_on_node_1(7);
    heartbeat_at(2, NULL, 0, NOW + 1000);
    assert_non_null(fx_find(&out, ACTION_SEND_START, 7));
    assert_int_equal(cluster_find_job(&c, 7)->state, JOB_RUNNING);
}

static void test_failed_attempt_is_retried_and_the_retry_can_succeed(void **state)
{
    (void)state;
    struct job j = fx_job(1, 2);
    j.retries = 1;
    assert_non_null(cluster_add_job(&c, &j));
    struct scheduler s;
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    sched_init(&s, &cfg);

    assert_int_equal(sched_pass(&s, &c, NOW, &out), 1);
    int64_t node_id = fx_find(&out, ACTION_START, 1)->node_id;
    struct task_report r = exited(1, 1, 3, 0, "exit 3");
    heartbeat_at(node_id, &r, 1, NOW);
    assert_int_equal(fx_count(&out, ACTION_REQUEUE, 1), 1);

    /* The retry waits out its backoff (10 s after a first failure by default). */
    action_list_clear(&out);
    assert_int_equal(sched_pass(&s, &c, NOW + cfg.retry_backoff_ms - 1, &out), 0);
    assert_non_null(strstr(fx_reason(cluster_find_job(&c, 1)), "retry backoff"));
    assert_int_equal(sched_pass(&s, &c, NOW + cfg.retry_backoff_ms, &out), 1);
    assert_int_equal(fx_find(&out, ACTION_START, 1)->attempt, 2);
    node_id = fx_find(&out, ACTION_START, 1)->node_id;
    struct task_report ok = exited(1, 2, 0, 0, "exit 0");
    heartbeat_at(node_id, &ok, 1, NOW);
    assert_int_equal(fx_find(&out, ACTION_FINISH, 1)->state, JOB_SUCCEEDED);
    assert_int_equal(cluster_gpus_allocated(&c), 0);
    sched_release(&s);
}

/* A heartbeat of node 1 whose agent says whether it is stopping. */
static void heartbeat_stopping(bool stopping, const struct task_report *tasks, size_t n)
{
    cluster_find_node(&c, 1)->agent_stopping = stopping;
    heartbeat(tasks, n);
}

static void test_a_stopping_agents_node_gets_no_new_work_until_its_next_run(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_RUNNING, 1, 0);
    struct task_report r = running(1, 1);
    heartbeat_stopping(true, &r, 1);
    assert_int_equal(cluster_find_node(&c, 1)->state, NODE_STOPPING);
    assert_non_null(fx_find(&out, ACTION_NODE_STOPPING, 0));
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_RUNNING); /* it finishes its grace */
    heartbeat_stopping(true, &r, 1);
    assert_null(fx_find(&out, ACTION_NODE_STOPPING, 0)); /* once */

    /* node 1 has 3 free GPUs, node 2 has 4: a 4-GPU job and a 1-GPU one
     * both go to node 2, or wait */
    struct job big = fx_job(2, 4), small = fx_job(3, 1);
    assert_non_null(cluster_add_job(&c, &big));
    assert_non_null(cluster_add_job(&c, &small));
    struct scheduler s;
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    sched_init(&s, &cfg);
    action_list_clear(&out);
    assert_int_equal(sched_pass(&s, &c, NOW, &out), 1);
    assert_int_equal(fx_find(&out, ACTION_START, 2)->node_id, 2);
    assert_null(fx_find(&out, ACTION_START, 3));

    /* the agent's next run heartbeats without "stopping": ready again */
    heartbeat_stopping(false, &r, 1);
    assert_int_equal(cluster_find_node(&c, 1)->state, NODE_READY);
    const struct action *back = fx_find(&out, ACTION_NODE_BACK, 0);
    assert_non_null(back);
    assert_string_equal(back->reason, "its agent runs again");
    action_list_clear(&out);
    assert_int_equal(sched_pass(&s, &c, NOW + 1, &out), 1);
    assert_int_equal(fx_find(&out, ACTION_START, 3)->node_id, 1);
    sched_release(&s);
}

static void test_a_job_placed_on_a_stopping_agents_node_goes_elsewhere_at_once(void **state)
{
    (void)state;
    add_on_node(1, 1, JOB_RUNNING, 1, 0);
    add_on_node(2, 1, JOB_STARTING, 1, 0); /* placed; the agent never started it */
    struct task_report r = running(1, 1);
    heartbeat_stopping(true, &r, 1);
    assert_null(fx_find(&out, ACTION_SEND_START, 2));
    const struct action *a = fx_find(&out, ACTION_REQUEUE, 2);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_PREEMPTED); /* uses no retry */
    assert_non_null(strstr(a->reason, "agent is stopping"));
    struct job *job = cluster_find_job(&c, 2);
    assert_int_equal(job->state, JOB_PENDING);
    assert_int_equal(job->free_attempts, 1);
    assert_int_equal(job->node_id, 0);
    assert_null(fx_find(&out, ACTION_REQUEUE, 1)); /* the started one runs its grace out */
}

static void test_a_gang_running_elsewhere_keeps_its_gpus_when_its_unstarted_parts_node_stops(
    void **state)
{
    (void)state;
    /* its part on node 1 runs: requeuing the gang would free node 1's GPU
     * while that part still runs there (it is stopped only at node 1's
     * next heartbeat, and then not with the checkpoint signal) */
    struct job *job = add_gang_started_on_node_1(7);
    cluster_find_node(&c, 2)->agent_stopping = true;
    heartbeat_at(2, NULL, 0, NOW + 1000);
    assert_null(fx_find(&out, ACTION_REQUEUE, 7));
    assert_int_equal(job->state, JOB_RUNNING);
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 1);
    assert_non_null(fx_find(&out, ACTION_SEND_START, 7)); /* for the agent's next run */
}

static void test_a_drained_node_whose_agent_stops_and_returns_stays_draining(void **state)
{
    (void)state;
    struct node *node = cluster_find_node(&c, 1);
    node->drained = true;
    node->state = NODE_DRAINING;
    heartbeat_stopping(true, NULL, 0);
    assert_int_equal(node->state, NODE_DRAINING);
    heartbeat_stopping(false, NULL, 0);
    assert_int_equal(node->state, NODE_DRAINING);
    assert_int_equal(out.len, 0);
}

static void test_a_stopping_node_that_falls_silent_is_lost_as_its_agent_stopped(void **state)
{
    (void)state;
    heartbeat_stopping(true, NULL, 0);
    struct scheduler s;
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    sched_init(&s, &cfg);
    action_list_clear(&out);
    assert_int_equal(sched_check_nodes(&s, &c, NOW + cfg.node_timeout_ms + 1, &out), 2);
    sched_release(&s);
    assert_int_equal(cluster_find_node(&c, 1)->state, NODE_LOST);
    const struct action *lost = NULL;
    for (size_t i = 0; i < out.len; i++)
        if (out.items[i].type == ACTION_NODE_LOST && out.items[i].node_id == 1)
            lost = &out.items[i];
    assert_non_null(lost);
    assert_non_null(strstr(lost->reason, "its agent stopped"));
}

/* Gang job 7 runs on nodes 1 and 2; node 2 falls silent and is lost at
 * the time returned, node 1 lives (s is the scheduler that saw it). */
static int64_t gang_loses_node_2(struct scheduler *s)
{
    add_gang_started_on_node_1(7);
    struct task_report r = running(7, 1);
    heartbeat_at(2, &r, 1, NOW);
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    sched_init(s, &cfg);
    int64_t later = NOW + cfg.node_timeout_ms + 1;
    heartbeat_at(1, &r, 1, later - 1000);
    action_list_clear(&out);
    assert_int_equal(sched_check_nodes(s, &c, later, &out), 1);
    return later;
}

static void
test_a_gang_that_loses_a_node_keeps_its_other_gpus_until_its_task_there_exits(void **state)
{
    (void)state;
    struct scheduler s;
    int64_t later = gang_loses_node_2(&s);
    struct task_report r = running(7, 1);
    /* Its rank on node 1 still runs there, on its GPU and its checkpoint
     * directory: the next attempt must not start on them yet. */
    struct job *job = cluster_find_job(&c, 7);
    assert_non_null(job);
    assert_null(fx_find(&out, ACTION_REQUEUE, 7));
    assert_int_equal(cluster_find_node(&c, 1)->gpus[0].job_id, 7);
    const struct action *stop = fx_find(&out, ACTION_SEND_STOP, 7);
    assert_non_null(stop);
    assert_int_equal(stop->node_id, 1);
    heartbeat_at(1, &r, 1, later + 500); /* still running: told to stop again */
    assert_non_null(fx_find(&out, ACTION_SEND_STOP, 7));
    assert_null(fx_find(&out, ACTION_REQUEUE, 7));
    struct task_report gone = exited(7, 1, -1, 15, "signal 15");
    heartbeat_at(1, &gone, 1, later + 1000);
    const struct action *a = fx_find(&out, ACTION_REQUEUE, 7);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_LOST); /* its node's loss: no retry used */
    job = cluster_find_job(&c, 7);
    assert_non_null(job);
    assert_int_equal(job->state, JOB_PENDING);
    assert_int_equal(job->free_attempts, 1);
    assert_int_equal(cluster_find_node(&c, 1)->gpus[0].job_id, 0);
    sched_release(&s);
}

/* Deleting the lost node (tide nodes delete) must not requeue the gang
 * while its rank on node 1 still runs: it waits for that rank as the
 * loss alone does. */
static void test_deleting_a_gangs_lost_node_waits_for_its_other_ranks_too(void **state)
{
    (void)state;
    struct scheduler s;
    int64_t later = gang_loses_node_2(&s);
    action_list_clear(&out);
    struct tide_err err;
    assert_int_equal(operator_node_jobs(&c, 2), 0); /* nothing runs there any more */
    assert_int_equal(operator_remove_node(&c, 2, later + 100, 30000, &out, &err), 0);
    assert_null(fx_find(&out, ACTION_REQUEUE, 7));
    assert_int_equal(cluster_find_job(&c, 7)->state, JOB_RUNNING);
    assert_int_equal(cluster_find_node(&c, 1)->gpus[0].job_id, 7);
    struct task_report gone = exited(7, 1, -1, 15, "signal 15");
    heartbeat_at(1, &gone, 1, later + 1000);
    assert_non_null(fx_find(&out, ACTION_REQUEUE, 7));
    assert_int_equal(cluster_find_node(&c, 1)->gpus[0].job_id, 0);
    sched_release(&s);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_starting_job_becomes_running_on_its_first_report),
        T(test_a_stopping_agents_node_gets_no_new_work_until_its_next_run),
        T(test_a_job_placed_on_a_stopping_agents_node_goes_elsewhere_at_once),
        T(test_a_gang_running_elsewhere_keeps_its_gpus_when_its_unstarted_parts_node_stops),
        T(test_a_drained_node_whose_agent_stops_and_returns_stays_draining),
        T(test_a_stopping_node_that_falls_silent_is_lost_as_its_agent_stopped),
        T(test_a_gang_that_loses_a_node_keeps_its_other_gpus_until_its_task_there_exits),
        T(test_deleting_a_gangs_lost_node_waits_for_its_other_ranks_too),
        T(test_same_running_heartbeat_twice_gives_one_running),
        T(test_exit_0_finishes_succeeded_and_is_acked),
        T(test_same_exit_heartbeat_twice_finishes_once_and_acks_both),
        T(test_failed_exit_with_retries_left_is_requeued),
        T(test_failed_exit_without_retries_left_fails_with_its_exit_code),
        T(test_killed_by_a_signal_fails_with_the_signal),
        T(test_max_runtime_kill_ends_in_timeout_without_a_retry),
        T(test_start_failure_is_a_failure_even_with_exit_0),
        T(test_job_that_exits_before_it_was_seen_running_succeeds),
        T(test_cancel_requested_running_job_is_sent_a_stop_each_heartbeat),
        T(test_cancelled_job_that_exits_ends_cancelled_not_requeued),
        T(test_starting_job_not_yet_reported_gets_its_start_resent),
        T(test_cancelled_job_that_never_started_ends_cancelled_without_a_start),
        T(test_running_job_its_agent_forgot_is_requeued_as_vanished),
        T(test_running_job_its_agent_forgot_is_requeued_even_without_retries),
        T(test_running_task_the_server_does_not_know_is_stopped),
        T(test_running_task_of_a_stale_attempt_is_stopped_and_the_new_one_started),
        T(test_exit_of_a_task_the_server_does_not_know_is_only_acked),
        T(test_old_attempt_exit_repeated_after_a_requeue_is_only_acked),
        T(test_task_reported_by_the_wrong_node_is_stopped_there),
        T(test_heartbeat_leaves_jobs_of_other_nodes_alone),
        T(test_heartbeat_records_when_the_node_was_last_heard),
        T(test_lost_node_heartbeating_again_comes_back),
        T(test_lost_node_back_with_its_old_tasks_gets_them_stopped),
        T(test_failed_attempt_is_retried_and_the_retry_can_succeed),
        T(test_gang_whose_part_failed_before_the_other_started_ends_as_that_failure),
        T(test_gang_part_not_yet_started_is_sent_its_start_while_the_gang_is_well),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
