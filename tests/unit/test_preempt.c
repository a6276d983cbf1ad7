/* Unit tests for preemption: victim choice and preempted exits (src/core/preempt.c,
 * sched.c's try_preemption, reconcile.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/reconcile.h"
#include "core/sched.h"

#include "cluster_fixture.h"

#define NOW_MS 10000

static struct cluster c;
static struct scheduler s;
static struct action_list out;

static int setup(void **state)
{
    (void)state;
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    sched_init(&s, &cfg);
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

/* A running job of priority 0 started at start_ms. */
static void add_running(int64_t id, int gpus, int64_t node_id, bool preemptible, int64_t start_ms)
{
    struct job j = fx_job(id, gpus);
    j.preemptible = preemptible;
    assert_non_null(fx_add_running(&c, j, node_id, start_ms));
}

static void add_pending(int64_t id, int gpus, int priority)
{
    struct job j = fx_job(id, gpus);
    j.priority = priority;
    assert_non_null(cluster_add_job(&c, &j));
}

static struct job *job(int64_t id)
{
    struct job *j = cluster_find_job(&c, id);
    assert_non_null(j);
    return j;
}

static int pass_at(int64_t now_ms)
{
    return sched_pass(&s, &c, now_ms, &out);
}

/* The agent of job's node reports that its task exited with exit_code,
 * and that the node's other tasks still run. */
static void report_exit(int64_t id, int exit_code, const char *reason, int64_t now_ms)
{
    struct job *j = job(id);
    int64_t node_id = j->node_id;
    struct task_report r[8];
    size_t n = 0;
    memset(r, 0, sizeof r);
    for (size_t i = 0; i < c.njobs && n < 8; i++)
        if (c.jobs[i].node_id == node_id && job_state_is_on_node(c.jobs[i].state)) {
            r[n].job_id = c.jobs[i].id;
            r[n].attempt = c.jobs[i].attempt;
            r[n].exit_code = -1;
            if (c.jobs[i].id == id) {
                r[n].exited = true;
                r[n].exit_code = exit_code;
                snprintf(r[n].reason, sizeof r[n].reason, "%s", reason);
            }
            n++;
        }
    assert_int_equal(reconcile_heartbeat(&c, cluster_find_node(&c, node_id), r, n, now_ms, &out), 0);
}

static void test_preemption_never_picks_non_preemptible_work(void **state)
{
    (void)state;
    add_node(1, 4);
    add_running(1, 2, 1, true, 100);
    add_running(2, 2, 1, false, 500); /* would lose less work, but may not be preempted */
    job(2)->effective_priority = job(2)->priority = -10;
    add_pending(10, 2, 10);
    pass_at(NOW_MS);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 1);
    assert_non_null(fx_find(&out, ACTION_PREEMPT, 1));
    assert_int_equal(job(2)->state, JOB_RUNNING);
}

static void test_no_preemption_when_only_non_preemptible_work_would_make_room(void **state)
{
    (void)state;
    add_node(1, 4);
    add_running(1, 2, 1, true, 100);
    add_running(2, 2, 1, false, 100);
    add_pending(10, 4, 10);
    pass_at(NOW_MS);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
    assert_int_equal(job(1)->state, JOB_RUNNING);
    assert_int_equal(job(10)->state, JOB_PENDING);
}

static void test_preemption_off_preempts_nothing(void **state)
{
    (void)state;
    sched_release(&s);
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    cfg.preemption = false;
    sched_init(&s, &cfg);
    add_node(1, 2);
    add_running(1, 2, 1, true, 100);
    add_pending(10, 2, 10);
    pass_at(NOW_MS);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
}

static void test_victim_is_marked_preempted_and_keeps_its_gpus_until_it_stops(void **state)
{
    (void)state;
    add_node(1, 2);
    add_running(1, 2, 1, true, 100);
    add_pending(10, 2, 10);
    assert_int_equal(pass_at(NOW_MS), 0);
    const struct action *a = fx_find(&out, ACTION_PREEMPT, 1);
    assert_non_null(a);
    assert_int_equal(a->attempt, 1);
    assert_int_equal(a->node_id, 1);
    assert_string_equal(a->reason, "preempted by job 10");
    assert_int_equal(job(1)->state, JOB_PREEMPTED);
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 2);
    assert_string_equal(fx_reason(job(10)), "preempting 1 job on node-1");
}

static void test_preemption_picks_the_node_where_it_takes_fewest_gpus(void **state)
{
    (void)state;
    add_node(1, 4);
    add_node(2, 4);
    add_running(1, 4, 1, true, 500);
    add_running(2, 2, 2, true, 100);
    add_running(3, 2, 2, true, 100);
    add_pending(10, 2, 10);
    pass_at(NOW_MS);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 1);
    assert_int_equal(job(1)->state, JOB_RUNNING);
}

static void test_preemption_within_a_node_takes_the_fewest_gpus(void **state)
{
    (void)state;
    add_node(1, 5);
    add_running(1, 3, 1, true, 500); /* least work lost, but 3 GPUs */
    add_running(2, 2, 1, true, 100); /* 2 GPUs are enough */
    add_pending(10, 2, 10);
    pass_at(NOW_MS);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 1);
    assert_non_null(fx_find(&out, ACTION_PREEMPT, 2));
    assert_int_equal(job(1)->state, JOB_RUNNING);
}

static void test_preemption_counts_gpus_already_free(void **state)
{
    (void)state;
    add_node(1, 4);
    add_running(1, 1, 1, true, 500);
    add_running(2, 2, 1, true, 100); /* one GPU stays free */
    add_pending(10, 2, 10);
    pass_at(NOW_MS);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 1);
    assert_non_null(fx_find(&out, ACTION_PREEMPT, 1));
}

static void test_preemption_among_equals_loses_the_least_work(void **state)
{
    (void)state;
    add_node(1, 4);
    add_running(1, 2, 1, true, 100);
    add_running(2, 2, 1, true, 500); /* started last: least work lost */
    add_pending(10, 2, 10);
    pass_at(NOW_MS);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 1);
    assert_non_null(fx_find(&out, ACTION_PREEMPT, 2));
}

static void test_preemption_drops_victims_it_turns_out_not_to_need(void **state)
{
    (void)state;
    add_node(1, 4);
    add_running(1, 1, 1, true, 500); /* tried first, then not needed */
    add_running(2, 3, 1, true, 100);
    add_pending(10, 3, 10);
    pass_at(NOW_MS);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 1);
    assert_non_null(fx_find(&out, ACTION_PREEMPT, 2));
    assert_int_equal(job(1)->state, JOB_RUNNING);
}

static void test_equal_priority_work_is_never_preempted(void **state)
{
    (void)state;
    add_node(1, 2);
    add_running(1, 2, 1, true, 100);
    add_pending(10, 2, 0);
    pass_at(NOW_MS);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
    assert_int_equal(job(1)->state, JOB_RUNNING);
}

static void test_higher_priority_work_is_never_preempted(void **state)
{
    (void)state;
    add_node(1, 2);
    add_running(1, 2, 1, true, 100);
    job(1)->effective_priority = job(1)->priority = 20;
    add_pending(10, 2, 10);
    pass_at(NOW_MS);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
}

static void test_job_waits_for_its_victims_instead_of_preempting_more(void **state)
{
    (void)state;
    add_node(1, 2);
    add_node(2, 2);
    add_running(1, 2, 1, true, 100);
    add_running(2, 2, 2, true, 100);
    add_pending(10, 2, 10);
    pass_at(NOW_MS);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 1);
    action_list_clear(&out);
    pass_at(NOW_MS + 1000);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
    assert_string_equal(fx_reason(job(10)), "waiting for preempted jobs to stop");
    assert_int_equal(fx_count(&out, ACTION_START, 0), 0);
}

static void test_job_starts_once_its_victim_has_stopped(void **state)
{
    (void)state;
    add_node(1, 2);
    add_running(1, 2, 1, true, 100);
    add_pending(10, 2, 10);
    pass_at(NOW_MS);
    report_exit(1, 0, "exit 0", NOW_MS + 1000);
    action_list_clear(&out);
    assert_int_equal(pass_at(NOW_MS + 2000), 1);
    assert_int_equal(job(10)->state, JOB_STARTING);
    assert_int_equal(job(1)->state, JOB_PENDING);
}

static void test_preempted_job_exiting_0_is_requeued_not_succeeded(void **state)
{
    (void)state;
    add_node(1, 2);
    add_running(1, 2, 1, true, 100);
    add_pending(10, 2, 10);
    pass_at(NOW_MS);
    action_list_clear(&out);
    report_exit(1, 0, "exit 0", NOW_MS + 1000);
    assert_int_equal(fx_count(&out, ACTION_FINISH, 1), 0);
    const struct action *a = fx_find(&out, ACTION_REQUEUE, 1);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_PREEMPTED);
    assert_string_equal(a->reason, "preempted by job 10"); /* not the agent's "preempted" */
    assert_int_equal(job(1)->state, JOB_PENDING);
    assert_int_equal(job(1)->preemptions, 1);
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 0);
}

static void test_preempted_job_without_retries_is_still_requeued(void **state)
{
    (void)state;
    add_node(1, 2);
    add_running(1, 2, 1, true, 100); /* retries 0 */
    add_pending(10, 2, 10);
    pass_at(NOW_MS);
    action_list_clear(&out);
    report_exit(1, -1, "signal 15", NOW_MS + 1000);
    assert_int_equal(fx_count(&out, ACTION_FINISH, 1), 0);
    assert_int_equal(fx_count(&out, ACTION_REQUEUE, 1), 1);
}

static void test_failure_after_a_preemption_still_gets_its_retry(void **state)
{
    (void)state;
    add_node(1, 2);
    add_running(1, 2, 1, true, 100);
    job(1)->retries = 1;
    add_pending(10, 2, 10);
    pass_at(NOW_MS);
    report_exit(1, 0, "exit 0", NOW_MS + 1000); /* preempted: requeued */
    cluster_remove_job(&c, 10);                 /* the preemptor went away */
    action_list_clear(&out);
    assert_int_equal(pass_at(NOW_MS + 2000), 1);
    assert_int_equal(job(1)->attempt, 2);
    job(1)->state = JOB_RUNNING;
    action_list_clear(&out);
    report_exit(1, 1, "exit 1", NOW_MS + 3000);
    const struct action *a = fx_find(&out, ACTION_REQUEUE, 1);
    assert_non_null(a);
    assert_string_equal(a->reason, "exit 1; retry 1 of 1");
}

static void test_preempted_job_keeps_its_place_against_later_jobs_of_its_priority(void **state)
{
    (void)state;
    add_node(1, 2);
    add_running(1, 1, 1, true, 100); /* submitted at 1 ms */
    add_running(2, 1, 1, false, 100);
    job(2)->effective_priority = job(2)->priority = 20;
    add_pending(10, 1, 10);
    pass_at(NOW_MS);
    assert_int_equal(job(1)->state, JOB_PREEMPTED);
    report_exit(1, 0, "exit 0", NOW_MS + 1000);
    cluster_remove_job(&c, 10);
    struct job later = fx_job(20, 1);
    later.submit_ms = NOW_MS + 500; /* same priority, submitted after job 1 */
    assert_non_null(cluster_add_job(&c, &later));
    action_list_clear(&out);
    assert_int_equal(pass_at(NOW_MS + 2000), 1);
    assert_int_equal(job(1)->state, JOB_STARTING);
    assert_int_equal(job(20)->state, JOB_PENDING);
}

/* The scheduler again, with this order policy. */
static void use_order(const struct order_ops *order)
{
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    cfg.order = order;
    sched_release(&s);
    sched_init(&s, &cfg);
}

/* Job 1 (priority -50, preemptible, submitted first) runs on node 1's 8
 * GPUs; job 10 (priority 100) asks for 8, preempts it, and job 1 stops at
 * NOW_MS + 1 s and waits again. */
static void preempt_8_gpus_of_job_1_for_job_10(void)
{
    add_running(1, 8, 1, true, 100);
    job(1)->effective_priority = job(1)->priority = -50;
    add_pending(10, 8, 100);
    pass_at(NOW_MS);
    assert_non_null(fx_find(&out, ACTION_PREEMPT, 1));
    report_exit(1, 0, "exit 0", NOW_MS + 1000);
}

static void test_a_victim_older_than_its_preemptor_does_not_take_its_gpus_back(void **state)
{
    (void)state;
    /* fifo puts the requeued victim first: without the preemptor's claim
     * it started again on the GPUs it gave up, and was preempted again */
    use_order(&order_fifo);
    add_node(1, 8);
    preempt_8_gpus_of_job_1_for_job_10();
    assert_int_equal(job(1)->state, JOB_PENDING);
    action_list_clear(&out);
    assert_int_equal(pass_at(NOW_MS + 2000), 1);
    assert_int_equal(job(10)->state, JOB_STARTING);
    assert_int_equal(job(1)->state, JOB_PENDING);
    /* the claim ended with the start: the victim waits as any job does */
    action_list_clear(&out);
    assert_int_equal(pass_at(NOW_MS + 3000), 0);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
}

static void test_a_job_behind_a_failed_one_of_its_size_still_preempts_if_it_may(void **state)
{
    (void)state;
    /* fifo: job 10 (older, low priority) can preempt nothing; job 11 asks
     * for as much, so it was passed over as hopeless, though it outranks
     * the running job */
    use_order(&order_fifo);
    add_node(1, 8);
    add_running(1, 8, 1, true, 100);
    job(1)->effective_priority = job(1)->priority = -50;
    add_pending(10, 4, -60);
    add_pending(11, 4, 100);
    pass_at(NOW_MS);
    assert_non_null(fx_find(&out, ACTION_PREEMPT, 1));
    assert_string_equal(fx_reason(job(11)), "preempting 1 job on node-1");
}

static void test_under_a_strict_order_the_claimant_passes_its_blocked_victim(void **state)
{
    (void)state;
    /* fifo_strict stops at the requeued victim (first in order, its node
     * held for its preemptor): the preemptor behind it still starts */
    use_order(&order_fifo_strict);
    add_node(1, 8);
    preempt_8_gpus_of_job_1_for_job_10();
    action_list_clear(&out);
    assert_int_equal(pass_at(NOW_MS + 2000), 1);
    assert_int_equal(job(10)->state, JOB_STARTING);
    assert_int_equal(job(1)->state, JOB_PENDING);
}

static void test_a_claim_gives_way_to_a_job_that_outranks_its_claimant(void **state)
{
    (void)state;
    /* job 10 (50) preempts job 1 (0) on node 1, where job 2 (75) runs on.
     * Job 20 (100) comes: it takes the GPUs job 1 freed, rather than
     * preempting job 2 while they sit held for a job below it */
    add_node(1, 8);
    add_running(1, 4, 1, true, 100);
    add_running(2, 4, 1, true, 100);
    job(2)->effective_priority = job(2)->priority = 75;
    add_pending(10, 4, 50);
    pass_at(NOW_MS);
    assert_non_null(fx_find(&out, ACTION_PREEMPT, 1));
    report_exit(1, 0, "exit 0", NOW_MS + 1000);
    add_pending(20, 4, 100);
    action_list_clear(&out);
    pass_at(NOW_MS + 2000);
    assert_int_equal(job(20)->state, JOB_STARTING);
    assert_int_equal(job(2)->state, JOB_RUNNING);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
}

static void test_gpus_a_preemption_counted_on_go_to_no_later_job(void **state)
{
    (void)state;
    add_node(1, 8);
    add_running(1, 4, 1, true, 100);
    job(1)->effective_priority = job(1)->priority = -50;
    add_pending(10, 8, 100);
    add_pending(11, 4, 10); /* fits the 4 free GPUs, not preemptible */
    pass_at(NOW_MS);
    assert_non_null(fx_find(&out, ACTION_PREEMPT, 1));
    assert_int_equal(job(11)->state, JOB_PENDING);
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 4); /* the hold is gone */
    pass_at(NOW_MS + 500); /* victim still stopping: still held for job 10 */
    assert_int_equal(job(11)->state, JOB_PENDING);
    report_exit(1, 0, "exit 0", NOW_MS + 1000);
    action_list_clear(&out);
    pass_at(NOW_MS + 2000);
    assert_int_equal(job(10)->state, JOB_STARTING);
    assert_int_equal(job(11)->state, JOB_PENDING);
}

static void add_pending_gang(int64_t id, int gpus, int max_nodes, int priority)
{
    add_pending(id, gpus, priority);
    job(id)->max_nodes = max_nodes;
}

static void test_a_gang_job_preempts_on_as_many_nodes_as_its_shares_need(void **state)
{
    (void)state;
    /* 16 GPUs over two 8-GPU nodes, each held by a preemptible job */
    add_node(1, 8);
    add_node(2, 8);
    add_node(3, 8);
    add_running(1, 8, 1, true, 100);
    add_running(2, 8, 2, true, 200);
    add_running(3, 8, 3, false, 100); /* may not be preempted */
    add_pending_gang(10, 16, 2, 10);
    pass_at(NOW_MS);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 2);
    assert_non_null(fx_find(&out, ACTION_PREEMPT, 1));
    assert_non_null(fx_find(&out, ACTION_PREEMPT, 2));
    assert_string_equal(fx_reason(job(10)), "preempting 2 jobs for its 16 GPUs on 2 nodes (node-1, ...)");
    report_exit(1, 0, "exit 0", NOW_MS + 1000);
    action_list_clear(&out);
    pass_at(NOW_MS + 1500); /* one victim still stopping: it waits, preempting no more */
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
    assert_int_equal(job(10)->state, JOB_PENDING);
    assert_string_equal(fx_reason(job(10)), "waiting for preempted jobs to stop");
    report_exit(2, 0, "exit 0", NOW_MS + 2000);
    action_list_clear(&out);
    pass_at(NOW_MS + 2500);
    assert_int_equal(job(10)->state, JOB_STARTING);
    assert_int_equal(job(10)->nparts, 1);
    assert_int_equal(job(3)->state, JOB_RUNNING);
}

/* Job id, a preemptible gang of priority -10, running on both GPUs of
 * nodes 1 and 2. */
static void add_running_gang_on_nodes_1_and_2(int64_t id)
{
    struct job j = fx_job(id, 4);
    j.preemptible = true;
    j.max_nodes = 2;
    j.priority = -10;
    j.gpus = 2; /* fx_add_running takes the first node's share */
    struct job *g = fx_add_running(&c, j, 1, 100);
    assert_non_null(g);
    g->gpus = 4;
    int both[2] = {0, 1};
    cluster_assign_part(&c, g, cluster_find_node(&c, 2), both, 2);
}

static void test_a_gang_job_is_preempted_for_gpus_on_any_of_its_nodes(void **state)
{
    (void)state;
    add_node(1, 2);
    struct node a100 = fx_node(2, 2, "A100", 81920);
    assert_non_null(cluster_put_node(&c, &a100));
    add_running_gang_on_nodes_1_and_2(1);
    struct job j = fx_job(10, 1);
    j.priority = 100;
    snprintf(j.gpu_model, sizeof j.gpu_model, "A100*"); /* node 2 only, the gang's second */
    assert_non_null(cluster_add_job(&c, &j));
    pass_at(NOW_MS);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 1);
    assert_non_null(fx_find(&out, ACTION_PREEMPT, 1));
    /* while the gang stops, what it frees on node 2 is waited for */
    action_list_clear(&out);
    pass_at(NOW_MS + 500);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
    assert_string_equal(fx_reason(job(10)), "waiting for preempted jobs to stop");
}

static void test_a_free_gpu_placement_refuses_as_busy_does_not_count_for_preemption(void **state)
{
    (void)state;
    add_node(1, 2);
    add_running(1, 1, 1, true, 100);                        /* on GPU 0 */
    cluster_find_node(&c, 1)->gpus[1].utilization_pct = 95; /* a process outside tide */
    add_pending(10, 2, 10);
    pass_at(NOW_MS);
    /* job 1's GPU and the busy one make 2, but placement would still
     * refuse the busy one: job 1 would stop for nothing */
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
    assert_int_equal(job(1)->state, JOB_RUNNING);
}

static void test_a_gang_job_holds_the_free_node_its_plan_counts_on(void **state)
{
    (void)state;
    /* node 2 is free: the gang preempts on node 1 only, and a later job
     * of its size does not take node 2 while the victim stops */
    add_node(1, 8);
    add_node(2, 8);
    add_running(1, 8, 1, true, 100);
    add_pending_gang(10, 16, 2, 10);
    pass_at(NOW_MS);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 1);
    assert_non_null(fx_find(&out, ACTION_PREEMPT, 1));
    add_pending(11, 8, 0);
    action_list_clear(&out);
    pass_at(NOW_MS + 500);
    assert_int_equal(job(11)->state, JOB_PENDING);
    assert_int_equal(fx_count(&out, ACTION_START, 0), 0);
    report_exit(1, 0, "exit 0", NOW_MS + 1000);
    action_list_clear(&out);
    pass_at(NOW_MS + 1500);
    assert_int_equal(job(10)->state, JOB_STARTING);
    assert_int_equal(job(11)->state, JOB_PENDING);
    assert_int_equal(job(1)->state, JOB_PENDING); /* the requeued victim waits too */
}

static void test_a_gang_job_preempts_nothing_when_its_shares_cannot_all_be_had(void **state)
{
    (void)state;
    add_node(1, 8);
    add_node(2, 8);
    add_running(1, 8, 1, true, 100);
    add_running(2, 8, 2, false, 100);
    add_pending_gang(10, 16, 2, 10);
    pass_at(NOW_MS);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
    assert_int_equal(job(1)->state, JOB_RUNNING);
}

static void test_a_claim_holds_only_its_own_node(void **state)
{
    (void)state;
    add_node(1, 8);
    add_node(2, 4);
    preempt_8_gpus_of_job_1_for_job_10();
    add_pending(11, 4, 200); /* before job 10 in the order: node 2 is free to it */
    action_list_clear(&out);
    assert_int_equal(pass_at(NOW_MS + 2000), 2);
    assert_int_equal(job(11)->state, JOB_STARTING);
    assert_int_equal(job(11)->node_id, 2);
    assert_int_equal(job(10)->node_id, 1);
}

static void test_a_job_lost_too_many_times_ends_failed(void **state)
{
    (void)state;
    add_node(1, 2);
    add_pending(1, 1, 0);
    for (int lost = 0; lost <= SCHED_MAX_LOST_ATTEMPTS; lost++) {
        action_list_clear(&out);
        assert_int_equal(pass_at(NOW_MS + lost), 1); /* placed (again: no backoff) */
        job(1)->state = JOB_RUNNING;
        action_list_clear(&out);
        sched_fail_attempt(&c, job(1), JOB_LOST, JOB_FAILED, "node lost", -1, 0, NOW_MS + lost,
                           &out);
        if (lost < SCHED_MAX_LOST_ATTEMPTS) {
            assert_non_null(fx_find(&out, ACTION_REQUEUE, 1));
            continue;
        }
        const struct action *a = fx_find(&out, ACTION_FINISH, 1);
        assert_non_null(a);
        assert_int_equal(a->state, JOB_FAILED);
        assert_string_equal(a->reason, "node lost; lost 10 times in a row: not requeued again");
        assert_null(cluster_find_job(&c, 1));
    }
}

/* Places job 1 at now_ms and has it run until its attempt ends at end_ms:
 * lost, or (lost false) failed with a retry left. */
static void run_and_end(int64_t now_ms, int64_t end_ms, bool lost)
{
    action_list_clear(&out);
    assert_int_equal(pass_at(now_ms), 1);
    job(1)->state = JOB_RUNNING;
    action_list_clear(&out);
    sched_fail_attempt(&c, job(1), lost ? JOB_LOST : JOB_FAILED, JOB_FAILED,
                       lost ? "node lost" : "exit 3", lost ? -1 : 3, 0, end_ms, &out);
    assert_non_null(fx_find(&out, ACTION_REQUEUE, 1));
}

static void test_losses_count_in_a_row_and_afresh_after_a_long_run(void **state)
{
    (void)state;
    add_node(1, 2);
    add_pending(1, 1, 0);
    job(1)->retries = 5;
    int64_t t = NOW_MS;
    for (int i = 0; i < SCHED_MAX_LOST_ATTEMPTS; i++, t += 10)
        run_and_end(t, t + 5, true);
    assert_int_equal(job(1)->lost_attempts, SCHED_MAX_LOST_ATTEMPTS);
    run_and_end(t, t + 5, false); /* its own failure: the host survived it */
    assert_int_equal(job(1)->lost_attempts, 0);
    t += 60 * 1000; /* past the retry's backoff */
    for (int i = 0; i < SCHED_MAX_LOST_ATTEMPTS; i++, t += 10)
        run_and_end(t, t + 5, true);
    /* a loss after an hour's run is a fresh count, not the eleventh */
    run_and_end(t, t + SCHED_LOST_FRESH_MS, true);
    assert_int_equal(job(1)->lost_attempts, 1);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_a_victim_older_than_its_preemptor_does_not_take_its_gpus_back),
        T(test_a_job_behind_a_failed_one_of_its_size_still_preempts_if_it_may),
        T(test_under_a_strict_order_the_claimant_passes_its_blocked_victim),
        T(test_a_claim_gives_way_to_a_job_that_outranks_its_claimant),
        T(test_gpus_a_preemption_counted_on_go_to_no_later_job),
        T(test_a_claim_holds_only_its_own_node),
        T(test_a_gang_job_preempts_on_as_many_nodes_as_its_shares_need),
        T(test_a_gang_job_is_preempted_for_gpus_on_any_of_its_nodes),
        T(test_a_free_gpu_placement_refuses_as_busy_does_not_count_for_preemption),
        T(test_a_gang_job_holds_the_free_node_its_plan_counts_on),
        T(test_a_gang_job_preempts_nothing_when_its_shares_cannot_all_be_had),
        T(test_a_job_lost_too_many_times_ends_failed),
        T(test_losses_count_in_a_row_and_afresh_after_a_long_run),
        T(test_preemption_never_picks_non_preemptible_work),
        T(test_no_preemption_when_only_non_preemptible_work_would_make_room),
        T(test_preemption_off_preempts_nothing),
        T(test_victim_is_marked_preempted_and_keeps_its_gpus_until_it_stops),
        T(test_preemption_picks_the_node_where_it_takes_fewest_gpus),
        T(test_preemption_within_a_node_takes_the_fewest_gpus),
        T(test_preemption_counts_gpus_already_free),
        T(test_preemption_among_equals_loses_the_least_work),
        T(test_preemption_drops_victims_it_turns_out_not_to_need),
        T(test_equal_priority_work_is_never_preempted),
        T(test_higher_priority_work_is_never_preempted),
        T(test_job_waits_for_its_victims_instead_of_preempting_more),
        T(test_job_starts_once_its_victim_has_stopped),
        T(test_preempted_job_exiting_0_is_requeued_not_succeeded),
        T(test_preempted_job_without_retries_is_still_requeued),
        T(test_failure_after_a_preemption_still_gets_its_retry),
        T(test_preempted_job_keeps_its_place_against_later_jobs_of_its_priority),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
