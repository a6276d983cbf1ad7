/* Unit tests for idle reclaim: jobs whose GPUs idle are warned, then stopped
 * and failed without a retry (src/core/reconcile.c's track_idle, queue.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/queue.h"
#include "core/reconcile.h"
#include "core/sched.h"

#include "cluster_fixture.h"

#define T0_MS 100000
#define WINDOW_S 600
#define THRESHOLD_PCT 10
#define S(x) ((int64_t)(x) * 1000)

static struct cluster c;
static struct action_list out;

/* Node 1 with 4 GPUs; job 1 runs on GPUs 0 and 1 with a 600 s, 10 % idle
 * window and retries left. */
static int setup(void **state)
{
    (void)state;
    cluster_init(&c);
    action_list_init(&out);
    struct node n = fx_h200_node(1, 4);
    assert_non_null(cluster_put_node(&c, &n));
    struct job j = fx_job(1, 2);
    j.retries = 3;
    j.idle_util_pct = THRESHOLD_PCT;
    j.idle_after_s = WINDOW_S;
    assert_non_null(fx_add_running(&c, j, 1, 1000));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cluster_release(&c);
    action_list_release(&out);
    return 0;
}

static void set_utilization(int gpu, int pct)
{
    cluster_find_node(&c, 1)->gpus[gpu].utilization_pct = pct;
}

/* A heartbeat at now_ms with job 1 still running; its actions replace out's. */
static void heartbeat(int64_t now_ms)
{
    action_list_clear(&out);
    struct task_report r;
    memset(&r, 0, sizeof r);
    r.job_id = 1;
    r.attempt = 1;
    r.exit_code = -1;
    assert_int_equal(reconcile_heartbeat(&c, cluster_find_node(&c, 1), &r, 1, now_ms, &out), 0);
}

static void heartbeat_exit(int64_t now_ms, int exit_code, int sig, const char *reason)
{
    action_list_clear(&out);
    struct task_report r;
    memset(&r, 0, sizeof r);
    r.job_id = 1;
    r.attempt = 1;
    r.exited = true;
    r.exit_code = exit_code;
    r.signal = sig;
    snprintf(r.reason, sizeof r.reason, "%s", reason);
    assert_int_equal(reconcile_heartbeat(&c, cluster_find_node(&c, 1), &r, 1, now_ms, &out), 0);
}

static int stops_for_idling(void)
{
    const struct action *a = fx_find(&out, ACTION_SEND_STOP, 1);
    return a && !strcmp(a->reason, "idle reclaim");
}

static void test_idle_job_is_warned_at_half_its_window(void **state)
{
    (void)state;
    heartbeat(T0_MS);
    heartbeat(T0_MS + S(WINDOW_S / 2) - 1000);
    assert_int_equal(fx_count(&out, ACTION_IDLE_WARN, 1), 0);
    heartbeat(T0_MS + S(WINDOW_S / 2));
    const struct action *a = fx_find(&out, ACTION_IDLE_WARN, 1);
    assert_non_null(a);
    assert_string_equal(a->reason,
                        "GPUs under 10% for 300 s: reclaimed after 600 s unless they get busy");
    assert_false(stops_for_idling());
}

static void test_idle_job_is_warned_only_once(void **state)
{
    (void)state;
    heartbeat(T0_MS);
    heartbeat(T0_MS + S(300));
    assert_int_equal(fx_count(&out, ACTION_IDLE_WARN, 1), 1);
    heartbeat(T0_MS + S(400));
    assert_int_equal(fx_count(&out, ACTION_IDLE_WARN, 1), 0);
}

static void test_idle_job_is_reclaimed_at_the_end_of_its_window(void **state)
{
    (void)state;
    heartbeat(T0_MS);
    heartbeat(T0_MS + S(WINDOW_S) - 1000);
    assert_false(stops_for_idling());
    heartbeat(T0_MS + S(WINDOW_S));
    assert_true(stops_for_idling());
    assert_true(cluster_find_job(&c, 1)->reclaim_requested);
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 2); /* until it stops */
}

static void test_reclaimed_job_is_sent_a_stop_each_heartbeat_until_it_exits(void **state)
{
    (void)state;
    heartbeat(T0_MS);
    heartbeat(T0_MS + S(WINDOW_S));
    heartbeat(T0_MS + S(WINDOW_S + 5));
    assert_true(stops_for_idling());
}

static void test_busy_gpu_resets_the_idle_clock(void **state)
{
    (void)state;
    heartbeat(T0_MS);
    set_utilization(1, 50);
    heartbeat(T0_MS + S(500));
    set_utilization(1, 0);
    heartbeat(T0_MS + S(600)); /* idle again from here */
    assert_false(stops_for_idling());
    heartbeat(T0_MS + S(600 + WINDOW_S) - 1000);
    assert_false(stops_for_idling());
    heartbeat(T0_MS + S(600 + WINDOW_S));
    assert_true(stops_for_idling());
}

static void test_busy_gpu_resets_the_warning_too(void **state)
{
    (void)state;
    heartbeat(T0_MS);
    heartbeat(T0_MS + S(300)); /* warned */
    set_utilization(0, THRESHOLD_PCT); /* at the threshold is busy */
    heartbeat(T0_MS + S(400));
    set_utilization(0, 0);
    heartbeat(T0_MS + S(500));
    heartbeat(T0_MS + S(800));
    assert_int_equal(fx_count(&out, ACTION_IDLE_WARN, 1), 1);
}

static void test_one_busy_gpu_keeps_the_whole_job_busy(void **state)
{
    (void)state;
    set_utilization(0, 95);
    heartbeat(T0_MS);
    heartbeat(T0_MS + S(WINDOW_S * 3));
    assert_false(stops_for_idling());
    assert_int_equal(fx_count(&out, ACTION_IDLE_WARN, 1), 0);
}

static void test_busy_gpus_of_other_tasks_do_not_keep_a_job_busy(void **state)
{
    (void)state;
    set_utilization(3, 100); /* not one of job 1's */
    heartbeat(T0_MS);
    heartbeat(T0_MS + S(WINDOW_S));
    assert_true(stops_for_idling());
}

static void test_job_without_an_idle_window_is_never_reclaimed(void **state)
{
    (void)state;
    cluster_find_job(&c, 1)->idle_after_s = 0;
    heartbeat(T0_MS);
    heartbeat(T0_MS + S(100000));
    assert_false(stops_for_idling());
    assert_int_equal(fx_count(&out, ACTION_IDLE_WARN, 1), 0);
}

static void test_reclaimed_job_ends_failed_for_idle_reclaim_without_a_retry(void **state)
{
    (void)state;
    heartbeat(T0_MS);
    heartbeat(T0_MS + S(WINDOW_S));
    heartbeat_exit(T0_MS + S(WINDOW_S + 5), -1, 15, "signal 15");
    assert_int_equal(fx_count(&out, ACTION_REQUEUE, 1), 0);
    const struct action *a = fx_find(&out, ACTION_FINISH, 1);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_FAILED);
    assert_int_equal(strncmp(a->reason, "idle reclaim", 12), 0);
    assert_string_equal(a->reason, "idle reclaim: GPUs under 10% for 600 s");
    assert_null(cluster_find_job(&c, 1));
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 0);
}

static void test_a_reclaim_stop_sent_before_a_restart_still_ends_the_job(void **state)
{
    (void)state;
    /* the server that decided it is gone: this one's memory has no
     * reclaim, only the agent's reason for the stop it was sent */
    heartbeat(T0_MS);
    assert_false(cluster_find_job(&c, 1)->reclaim_requested);
    heartbeat_exit(T0_MS + S(5), -1, 15, "idle reclaim");
    assert_int_equal(fx_count(&out, ACTION_REQUEUE, 1), 0);
    const struct action *a = fx_find(&out, ACTION_FINISH, 1);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_FAILED);
    assert_int_equal(strncmp(a->reason, "idle reclaim", 12), 0);
}

static void test_reclaimed_job_exiting_0_still_ends_failed(void **state)
{
    (void)state;
    heartbeat(T0_MS);
    heartbeat(T0_MS + S(WINDOW_S));
    heartbeat_exit(T0_MS + S(WINDOW_S + 5), 0, 0, "exit 0");
    const struct action *a = fx_find(&out, ACTION_FINISH, 1);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_FAILED);
    assert_int_equal(strncmp(a->reason, "idle reclaim", 12), 0);
}

static void test_a_requeued_job_starts_its_idle_clock_again_on_its_next_attempt(void **state)
{
    (void)state;
    heartbeat(T0_MS);
    heartbeat(T0_MS + S(WINDOW_S / 2)); /* idle, warned */
    /* its node is lost; it is requeued and placed again much later */
    struct job *job = cluster_find_job(&c, 1);
    action_list_clear(&out);
    sched_fail_attempt(&c, job, JOB_LOST, JOB_FAILED, "node lost", -1, 0, T0_MS + S(WINDOW_S / 2),
                       &out);
    assert_non_null(fx_find(&out, ACTION_REQUEUE, 1));
    struct scheduler s;
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    sched_init(&s, &cfg);
    action_list_clear(&out);
    int64_t later = T0_MS + S(WINDOW_S * 10);
    assert_int_equal(sched_pass(&s, &c, later, &out), 1);
    sched_release(&s);
    job = cluster_find_job(&c, 1);
    assert_int_equal(job->attempt, 2);
    job->state = JOB_RUNNING;
    action_list_clear(&out);
    struct task_report r = {.job_id = 1, .attempt = 2, .exit_code = -1};
    assert_int_equal(reconcile_heartbeat(&c, cluster_find_node(&c, 1), &r, 1, later, &out), 0);
    assert_false(stops_for_idling());
    assert_int_equal(fx_count(&out, ACTION_IDLE_WARN, 1), 0);
    assert_false(cluster_find_job(&c, 1)->reclaim_requested);
}

static void test_idle_window_comes_from_the_jobs_queue(void **state)
{
    (void)state;
    struct queue_set qs;
    queue_set_defaults(&qs);
    struct queue_config *batch = (struct queue_config *)queue_find(&qs, "batch");
    batch->idle_util_pct = 5;
    batch->idle_after_s = 1800;
    json_t *given = json_pack("{s:s}", "queue", "batch");
    json_t *spec = json_object();
    struct job j = fx_job(2, 1);
    snprintf(j.queue, sizeof j.queue, "batch");
    j.priority = -50;
    assert_int_equal(queue_admit(&qs, given, spec, &j, NULL), 0);
    json_decref(given);
    json_decref(spec);
    assert_int_equal(j.idle_util_pct, 5);
    assert_int_equal(j.idle_after_s, 1800);
}

/* Job 1 made a gang: a second part on node 2's GPUs 0 and 1. */
static void spread_job_1_to_node_2(void)
{
    struct node n = fx_h200_node(2, 2);
    assert_non_null(cluster_put_node(&c, &n));
    struct job *job = cluster_find_job(&c, 1);
    job->max_nodes = 2;
    int both[2] = {0, 1};
    cluster_assign_part(&c, job, cluster_find_node(&c, 2), both, 2);
}

/* Node node_id's heartbeat at now_ms with its part of job 1 running. */
static void heartbeat_node(int64_t node_id, int64_t now_ms)
{
    struct task_report r;
    memset(&r, 0, sizeof r);
    r.job_id = 1;
    r.attempt = 1;
    r.exit_code = -1;
    assert_int_equal(reconcile_heartbeat(&c, cluster_find_node(&c, node_id), &r, 1, now_ms, &out),
                     0);
}

static void test_a_gang_is_reclaimed_only_when_every_part_idles(void **state)
{
    (void)state;
    spread_job_1_to_node_2();
    cluster_find_node(&c, 2)->gpus[1].utilization_pct = 95; /* rank 1 works; rank 0 waits */
    action_list_clear(&out);
    for (int64_t t = 0; t <= S(WINDOW_S + 60); t += S(30)) {
        heartbeat_node(1, T0_MS + t);
        heartbeat_node(2, T0_MS + t + 500);
    }
    assert_int_equal(fx_count(&out, ACTION_IDLE_WARN, 1), 0);
    assert_false(cluster_find_job(&c, 1)->reclaim_requested);
    /* then rank 1 idles too: the window starts from then */
    cluster_find_node(&c, 2)->gpus[1].utilization_pct = 0;
    int64_t idle_from = T0_MS + S(WINDOW_S + 90);
    heartbeat_node(2, idle_from);
    heartbeat_node(1, idle_from + S(WINDOW_S) - 1000);
    assert_false(cluster_find_job(&c, 1)->reclaim_requested);
    heartbeat_node(1, idle_from + S(WINDOW_S));
    assert_true(cluster_find_job(&c, 1)->reclaim_requested);
}

/* Its busy rank ends first: the idle one gets a warning and the whole
 * window from then (its clock had run all along, and it was reclaimed in
 * the same heartbeat, without a warning). */
static void
test_a_gang_rank_idle_while_another_worked_gets_its_window_after_that_one_ends(void **state)
{
    (void)state;
    spread_job_1_to_node_2();
    cluster_find_node(&c, 2)->gpus[1].utilization_pct = 95;
    for (int64_t t = 0; t <= S(WINDOW_S * 2); t += S(30)) {
        heartbeat_node(1, T0_MS + t);
        heartbeat_node(2, T0_MS + t + 500);
    }
    struct task_report done;
    memset(&done, 0, sizeof done);
    done.job_id = 1;
    done.attempt = 1;
    done.exited = true;
    int64_t ended = T0_MS + S(WINDOW_S * 2) + 1000;
    assert_int_equal(reconcile_heartbeat(&c, cluster_find_node(&c, 2), &done, 1, ended, &out), 0);
    action_list_clear(&out);
    heartbeat_node(1, ended + 500);
    assert_false(cluster_find_job(&c, 1)->reclaim_requested);
    assert_int_equal(fx_count(&out, ACTION_IDLE_WARN, 1), 0);
    heartbeat_node(1, ended + S(WINDOW_S) / 2 + 1000);
    assert_int_equal(fx_count(&out, ACTION_IDLE_WARN, 1), 1);
    assert_false(cluster_find_job(&c, 1)->reclaim_requested);
    heartbeat_node(1, ended + S(WINDOW_S) + 1000);
    assert_true(cluster_find_job(&c, 1)->reclaim_requested);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_idle_job_is_warned_at_half_its_window),
        T(test_idle_job_is_warned_only_once),
        T(test_idle_job_is_reclaimed_at_the_end_of_its_window),
        T(test_reclaimed_job_is_sent_a_stop_each_heartbeat_until_it_exits),
        T(test_busy_gpu_resets_the_idle_clock),
        T(test_busy_gpu_resets_the_warning_too),
        T(test_one_busy_gpu_keeps_the_whole_job_busy),
        T(test_busy_gpus_of_other_tasks_do_not_keep_a_job_busy),
        T(test_job_without_an_idle_window_is_never_reclaimed),
        T(test_reclaimed_job_ends_failed_for_idle_reclaim_without_a_retry),
        T(test_a_reclaim_stop_sent_before_a_restart_still_ends_the_job),
        T(test_reclaimed_job_exiting_0_still_ends_failed),
        T(test_a_requeued_job_starts_its_idle_clock_again_on_its_next_attempt),
        T(test_idle_window_comes_from_the_jobs_queue),
        T(test_a_gang_is_reclaimed_only_when_every_part_idles),
        T(test_a_gang_rank_idle_while_another_worked_gets_its_window_after_that_one_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
