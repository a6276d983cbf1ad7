/* Unit tests for the v1 scheduler: passes, node loss and cancels (src/core/sched.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "common/tide_err.h"
#include "core/operator.h"
#include "core/sched.h"

#include "cluster_fixture.h"

#define TIMEOUT_MS 30000

static struct cluster c;
static struct scheduler s;
static struct action_list out;

static int setup(void **state)
{
    (void)state;
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    cfg.node_timeout_ms = TIMEOUT_MS;
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

static void add_node(struct node n)
{
    assert_non_null(cluster_put_node(&c, &n));
}

static void add_job(struct job j)
{
    assert_non_null(cluster_add_job(&c, &j));
}

static struct job with_priority(struct job j, int priority)
{
    j.priority = priority;
    return j;
}

/* Adds job as running its first attempt on node's first `gpus` free GPUs. */
static void add_running(struct job j, int64_t node_id)
{
    struct job *job = cluster_add_job(&c, &j);
    assert_non_null(job);
    struct node *node = cluster_find_node(&c, node_id);
    assert_non_null(node);
    int idx[TIDE_MAX_GPUS_PER_NODE], n = 0;
    for (int g = 0; g < node->ngpus && n < j.gpus; g++)
        if (!node->gpus[g].job_id)
            idx[n++] = node->gpus[g].index;
    assert_int_equal(n, j.gpus);
    cluster_assign(&c, job, node, idx, n);
    job->state = JOB_RUNNING;
    job->attempt = 1;
}

static int pass(void)
{
    return sched_pass(&s, &c, 1000, &out);
}

static void test_higher_priority_job_is_placed_first(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 1));
    add_job(with_priority(fx_job(1, 1), 0));
    add_job(with_priority(fx_job(2, 1), 5));
    assert_int_equal(pass(), 1);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_STARTING);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_PENDING);
}

static void test_negative_priority_goes_after_the_default(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 1));
    add_job(with_priority(fx_job(1, 1), -3));
    add_job(fx_job(2, 1));
    assert_int_equal(pass(), 1);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_STARTING);
}

static void test_earlier_submission_goes_first_within_a_priority(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 1));
    struct job late = fx_job(1, 1), early = fx_job(2, 1);
    late.submit_ms = 200;
    early.submit_ms = 100;
    add_job(late);
    add_job(early);
    assert_int_equal(pass(), 1);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_STARTING);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_PENDING);
}

static void test_same_submit_time_goes_by_lower_id(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 1));
    struct job a = fx_job(7, 1), b = fx_job(3, 1);
    a.submit_ms = b.submit_ms = 500;
    add_job(a);
    add_job(b);
    assert_int_equal(pass(), 1);
    assert_int_equal(cluster_find_job(&c, 3)->state, JOB_STARTING);
}

static void test_placed_job_is_starting_on_its_gpus_with_attempt_one(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 4));
    add_job(fx_job(1, 2));
    assert_int_equal(pass(), 1);
    struct job *job = cluster_find_job(&c, 1);
    assert_int_equal(job->state, JOB_STARTING);
    assert_int_equal(job->attempt, 1);
    assert_int_equal(job->node_id, 1);
    assert_int_equal(job->ngpus_assigned, 2);
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 2);

    assert_int_equal(out.len, 1);
    const struct action *a = &out.items[0];
    assert_int_equal(a->type, ACTION_START);
    assert_int_equal(a->job_id, 1);
    assert_int_equal(a->attempt, 1);
    assert_int_equal(a->node_id, 1);
    assert_int_equal(a->state, JOB_STARTING);
    assert_string_equal(a->reason, "placed on node-1 GPUs 0,1");
}

static void test_requeued_job_starts_its_next_attempt(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 1));
    struct job j = fx_job(1, 1);
    j.attempt = 2;
    add_job(j);
    assert_int_equal(pass(), 1);
    assert_int_equal(cluster_find_job(&c, 1)->attempt, 3);
    assert_int_equal(out.items[0].attempt, 3);
}

static void test_job_that_fits_nowhere_waits_with_a_reason(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    add_job(fx_job(1, 16));
    assert_int_equal(pass(), 0);
    struct job *job = cluster_find_job(&c, 1);
    assert_int_equal(job->state, JOB_PENDING);
    assert_int_equal(job->attempt, 0);
    assert_non_null(strstr(fx_reason(job), "16 GPUs"));
    assert_null(strstr(fx_reason(job), "CPU")); /* nobody asked for any */
    assert_int_equal(out.len, 0);
}

static void test_reason_of_a_job_behind_one_of_its_shape_names_only_what_it_asked(void **state)
{
    (void)state;
    s.cfg.backfill = false; /* with it, the blocked job would reserve the node (test_backfill.c) */
    struct node n = fx_h200_node(1, 2);
    n.gpus[0].job_id = n.gpus[1].job_id = 999;
    add_node(n);
    add_job(fx_job(1, 1));
    add_job(fx_job(2, 1)); /* the same shape: passed over on job 1's failure */
    struct job asks = fx_job(3, 1);
    asks.cpus = 4;
    add_job(asks);
    assert_int_equal(pass(), 0);
    for (int64_t id = 1; id <= 2; id++) {
        const char *why = fx_reason(cluster_find_job(&c, id));
        if (!strstr(why, "1 free GPU") || strstr(why, "CPU") || strstr(why, "memory"))
            print_error("job %lld: wait_reason '%s'\n", (long long)id, why);
        assert_non_null(strstr(why, "1 free GPU"));
        assert_null(strstr(why, "CPU"));
        assert_null(strstr(why, "memory"));
    }
    const char *why = fx_reason(cluster_find_job(&c, 3));
    if (!strstr(why, "4 CPUs"))
        print_error("job 3: wait_reason '%s'\n", why);
    assert_non_null(strstr(why, "4 CPUs"));
}

/* Jobs passed over behind a failure get their own shape's words even when
 * shapes alternate in the queue, and one that no node could ever hold is
 * not told it waits for free GPUs. */
static void test_jobs_behind_a_failure_get_their_own_shapes_reason_in_any_order(void **state)
{
    (void)state;
    struct node n = fx_h200_node(1, 2);
    n.gpus[0].job_id = n.gpus[1].job_id = 999;
    add_node(n);
    add_job(fx_job(1, 1)); /* fails: 1 GPU is the shape behind it */
    struct job cpus = fx_job(2, 1);
    cpus.cpus = 4;
    add_job(cpus);
    add_job(fx_job(3, 1));
    cpus.id = cpus.submit_ms = 4;
    add_job(cpus);
    struct job mem = fx_job(5, 2);
    mem.memory_mib = 100;
    add_job(mem);
    add_job(fx_job(6, 3)); /* more than any node has */
    assert_int_equal(pass(), 0);
    assert_string_equal(fx_reason(cluster_find_job(&c, 2)),
                        "waiting for 1 free GPU and 4 CPUs on one node");
    assert_string_equal(fx_reason(cluster_find_job(&c, 3)), "waiting for 1 free GPU on one node");
    assert_string_equal(fx_reason(cluster_find_job(&c, 4)),
                        "waiting for 1 free GPU and 4 CPUs on one node");
    assert_string_equal(fx_reason(cluster_find_job(&c, 5)),
                        "waiting for 2 free GPUs and 100 MiB memory on one node");
    assert_string_not_equal(fx_reason(cluster_find_job(&c, 6)),
                            "waiting for 3 free GPUs on one node");
}

/* Placement's own reasons are kept as causes by the pass (a deep queue is
 * explained every pass and read rarely) and read as the same sentences it
 * used to write. Jobs of distinct shapes, so none is passed over behind
 * another's failure. */
static void test_placements_reasons_are_causes_that_read_as_their_sentences(void **state)
{
    (void)state;
    s.cfg.backfill = false; /* with it, job 3 would reserve node 2 (test_backfill.c) */
    struct node busy = fx_h200_node(1, 2); /* both GPUs free but over 90 %; 1 CPU */
    busy.gpus[0].utilization_pct = busy.gpus[1].utilization_pct = 95;
    busy.cpus = 1;
    add_node(busy);
    struct node held = fx_h200_node(2, 4); /* 3 of 4 GPUs held, no CPU left */
    held.gpus[0].job_id = held.gpus[1].job_id = held.gpus[2].job_id = 999;
    held.cpus_allocated = FX_NODE_CPUS;
    add_node(held);
    struct job huge = fx_job(4, 16); /* no node has 16 */
    huge.priority = 3;
    add_job(huge);
    struct job four = fx_job(3, 4); /* only node 2 has 4, 1 of them free */
    four.priority = 2;
    add_job(four);
    struct job two = fx_job(1, 2); /* only node 1 has 2 free: over the thresholds */
    two.priority = 1;
    add_job(two);
    struct job host = fx_job(2, 1); /* only node 2 has 2 CPUs, and none free */
    host.cpus = 2;
    add_job(host);
    assert_int_equal(pass(), 0);
    static const struct {
        int64_t id;
        enum wait_kind kind;
        const char *words;
    } want[] = {
        {1, WAIT_OVER_LOAD, "free GPUs are over the load thresholds (memory 80%, utilisation 90%)"},
        {2, WAIT_HOST_SHARE, "waiting for free CPUs or memory on a node with 1 free GPUs"},
        {3, WAIT_GPUS_FREE, "waiting for 4 free GPUs on one node (most free now: 1)"},
        {4, WAIT_NO_NODE, "no ready node has 16 GPUs"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct job *job = cluster_find_job(&c, want[i].id);
        assert_int_equal(job->wait_cause.kind, want[i].kind);
        assert_string_equal(fx_reason(job), want[i].words);
    }
}

static void test_wait_reason_is_cleared_once_placed(void **state)
{
    (void)state;
    struct node n = fx_h200_node(1, 2);
    n.gpus[0].job_id = n.gpus[1].job_id = 999;
    add_node(n);
    add_job(fx_job(1, 1));
    assert_int_equal(pass(), 0);
    assert_true(fx_reason(cluster_find_job(&c, 1))[0] != '\0');
    cluster_find_node(&c, 1)->gpus[1].job_id = 0;
    assert_int_equal(pass(), 1);
    assert_string_equal(fx_reason(cluster_find_job(&c, 1)), "");
}

static void test_big_job_that_does_not_fit_does_not_block_a_smaller_later_one(void **state)
{
    (void)state;
    s.cfg.backfill = false; /* with it, the blocked job would reserve the node (test_backfill.c) */
    struct node n = fx_h200_node(1, 8);
    for (int g = 0; g < 4; g++)
        n.gpus[g].job_id = 999;
    add_node(n);
    add_job(with_priority(fx_job(1, 8), 5));
    add_job(fx_job(2, 2));
    assert_int_equal(pass(), 1);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_PENDING);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_STARTING);
}

/* A node with 4 of its 8 GPUs held, an 8-GPU job first in line and a
 * 2-GPU one behind it, under policy `order`. */
static void blocked_head_under(const struct order_ops *order, bool explain)
{
    s.cfg.order = order;
    s.cfg.backfill = false;
    s.cfg.explain = explain;
    struct node n = fx_h200_node(1, 8);
    for (int g = 0; g < 4; g++)
        n.gpus[g].job_id = 999;
    add_node(n);
    add_job(fx_job(1, 8));
    add_job(fx_job(2, 2));
}

static void test_a_blocked_head_job_stops_the_pass_under_strict_fifo(void **state)
{
    (void)state;
    blocked_head_under(&order_fifo_strict, true);
    assert_int_equal(pass(), 0);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_PENDING);
    assert_string_equal(fx_reason(cluster_find_job(&c, 2)),
                        "behind job 1, which cannot start yet (policy fifo_strict)");
}

static void test_a_hold_replaces_a_reason_the_pass_recorded_and_outlasts_the_next_pass(void **state)
{
    (void)state;
    blocked_head_under(&order_fifo_strict, true);
    assert_int_equal(pass(), 0);
    assert_non_null(strstr(fx_reason(cluster_find_job(&c, 2)), "behind job 1"));
    assert_int_equal(operator_hold_job(&c, 2, "waiting for data", NULL), 0);
    assert_string_equal(fx_reason(cluster_find_job(&c, 2)), "held: waiting for data");
    assert_int_equal(pass(), 0);
    assert_string_equal(fx_reason(cluster_find_job(&c, 2)), "held: waiting for data");
}

static void test_a_blocked_head_job_stops_a_quiet_pass_under_strict_sjf(void **state)
{
    (void)state;
    blocked_head_under(&order_sjf_strict, false);
    cluster_find_job(&c, 1)->est_runtime_s = 60;
    cluster_find_job(&c, 2)->est_runtime_s = 600; /* longer: behind the 8-GPU job */
    assert_int_equal(pass(), 0);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_PENDING);
}

static void test_a_blocked_head_job_does_not_stop_the_pass_under_plain_fifo(void **state)
{
    (void)state;
    blocked_head_under(&order_fifo, true);
    assert_int_equal(pass(), 1);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_STARTING);
}

static void test_strict_fifo_with_backfill_starts_a_job_that_ends_before_the_reservation(void **state)
{
    (void)state;
    blocked_head_under(&order_fifo_strict, true);
    s.cfg.backfill = true;
    add_running(fx_job(3, 4), 1);
    for (int g = 0; g < 8; g++) /* job 3 holds the first four GPUs, not the stand-in */
        if (cluster_find_node(&c, 1)->gpus[g].job_id == 999)
            cluster_find_node(&c, 1)->gpus[g].job_id = 0;
    cluster_find_job(&c, 3)->est_runtime_s = 3600;
    cluster_find_job(&c, 3)->start_ms = 1000;
    cluster_find_job(&c, 2)->est_runtime_s = 60; /* done long before job 1's reservation */
    assert_int_equal(pass(), 1);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_PENDING);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_STARTING);
}

static void test_a_job_that_can_never_fit_does_not_stop_a_strict_pass(void **state)
{
    (void)state;
    s.cfg.order = &order_fifo_strict;
    add_node(fx_h200_node(1, 4));
    add_job(fx_job(1, 16));
    add_job(fx_job(2, 2));
    assert_int_equal(pass(), 1);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_STARTING);
}

static void test_jobs_placed_in_one_pass_do_not_share_gpus(void **state)
{
    (void)state;
    s.cfg.backfill = false; /* with it, the blocked job would reserve the node (test_backfill.c) */
    add_node(fx_h200_node(1, 3));
    add_job(fx_job(1, 2));
    add_job(fx_job(2, 2));
    add_job(fx_job(3, 1));
    assert_int_equal(pass(), 2);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_PENDING);
    assert_int_equal(cluster_find_job(&c, 3)->state, JOB_STARTING);
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 3);
}

static void test_jobs_already_on_a_node_are_not_placed_again(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 4));
    add_running(fx_job(1, 1), 1);
    assert_int_equal(pass(), 0);
    assert_int_equal(out.len, 0);
    assert_int_equal(cluster_find_job(&c, 1)->attempt, 1);
}

static void test_job_too_big_for_any_node_is_told_so_even_after_a_smaller_one_waited(void **state)
{
    (void)state;
    s.cfg.backfill = false; /* with it, job 1 would reserve the node (test_backfill.c) */
    struct node n = fx_h200_node(1, 1);
    n.gpus[0].job_id = 999;
    add_node(n);
    add_job(fx_job(1, 1)); /* waits: the only GPU is held */
    struct job big = fx_job(2, 1);
    big.cpus = FX_NODE_CPUS * 2; /* no node has that many CPUs */
    add_job(big);
    assert_int_equal(pass(), 0);
    assert_non_null(strstr(fx_reason(cluster_find_job(&c, 1)), "waiting for"));
    const char *why = fx_reason(cluster_find_job(&c, 2));
    if (strncmp(why, "no ready node", 13) != 0)
        print_error("wait_reason: '%s'\n", why);
    assert_int_equal(strncmp(why, "no ready node", 13), 0);
}

static void test_node_silent_past_the_timeout_is_lost(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 1));
    assert_int_equal(sched_check_nodes(&s, &c, TIMEOUT_MS + 1, &out), 1);
    assert_int_equal(cluster_find_node(&c, 1)->state, NODE_LOST);
    const struct action *a = fx_find(&out, ACTION_NODE_LOST, 0);
    assert_non_null(a);
    assert_int_equal(a->node_id, 1);
}

static void test_node_silent_exactly_the_timeout_is_not_lost(void **state)
{
    (void)state;
    struct node n = fx_h200_node(1, 1);
    n.last_heartbeat_ms = 5000;
    add_node(n);
    assert_int_equal(sched_check_nodes(&s, &c, 5000 + TIMEOUT_MS, &out), 0);
    assert_int_equal(cluster_find_node(&c, 1)->state, NODE_READY);
    assert_int_equal(out.len, 0);
}

static void test_lost_node_is_reported_once(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 1));
    assert_int_equal(sched_check_nodes(&s, &c, TIMEOUT_MS + 1, &out), 1);
    action_list_clear(&out);
    assert_int_equal(sched_check_nodes(&s, &c, 2 * TIMEOUT_MS, &out), 0);
    assert_int_equal(out.len, 0);
}

static void test_a_clock_stepped_back_does_not_keep_a_silent_node_alive_longer(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 2));
    add_running(fx_job(1, 2), 1);
    int64_t heard = 1000000;
    cluster_find_node(&c, 1)->last_heartbeat_ms = heard;
    assert_int_equal(sched_check_nodes(&s, &c, heard, &out), 0);
    /* The wall clock steps back 10 timeouts; the node stays silent. */
    int64_t back = heard - 10 * TIMEOUT_MS;
    int64_t t = back;
    while (t < back + TIMEOUT_MS) {
        assert_int_equal(sched_check_nodes(&s, &c, t, &out), 0);
        t += TIMEOUT_MS / 4;
    }
    assert_int_equal(sched_check_nodes(&s, &c, back + TIMEOUT_MS + 1, &out), 1);
    assert_non_null(fx_find(&out, ACTION_REQUEUE, 1));
}

static void test_a_stalled_server_does_not_judge_nodes_by_its_own_stall(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 2));
    add_running(fx_job(1, 2), 1);
    cluster_find_node(&c, 1)->last_heartbeat_ms = 100;
    assert_int_equal(sched_check_nodes(&s, &c, 100, &out), 0);
    /* Paused past the timeout: heartbeats sent meanwhile are still unread. */
    int64_t woke = 100 + 3 * TIMEOUT_MS;
    assert_int_equal(sched_check_nodes(&s, &c, woke, &out), 0);
    assert_int_equal(out.len, 0);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_RUNNING);
    /* Still silent a whole timeout after the stall, checked as usual: lost. */
    int64_t t = woke;
    while (t < woke + TIMEOUT_MS) {
        t += TIMEOUT_MS / 4;
        assert_int_equal(sched_check_nodes(&s, &c, t, &out), 0);
    }
    assert_int_equal(sched_check_nodes(&s, &c, t + TIMEOUT_MS / 4, &out), 1);
    assert_non_null(fx_find(&out, ACTION_REQUEUE, 1));
}

static void test_job_on_lost_node_is_requeued_using_no_retry(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 2));
    add_running(fx_job(1, 2), 1); /* retries: 0, the default */
    sched_check_nodes(&s, &c, TIMEOUT_MS + 1, &out);

    const struct action *a = fx_find(&out, ACTION_REQUEUE, 1);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_LOST);
    assert_int_equal(a->attempt, 1);
    assert_string_equal(a->reason, "node lost; requeued without using a retry");
    assert_int_equal(fx_count(&out, ACTION_FINISH, 1), 0);
    struct job *job = cluster_find_job(&c, 1);
    assert_non_null(job);
    assert_int_equal(job->state, JOB_PENDING);
    assert_int_equal(job->node_id, 0);
    assert_int_equal(job->not_before_ms, 0);
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 0);
}

static void test_node_loss_leaves_a_jobs_retries_for_its_own_failures(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 2));
    struct job j = fx_job(1, 2);
    j.retries = 1;
    add_running(j, 1);
    sched_check_nodes(&s, &c, TIMEOUT_MS + 1, &out); /* attempt 1: node lost, free */
    struct job *job = cluster_find_job(&c, 1);
    assert_non_null(job);
    assert_int_equal(job->free_attempts, 1);

    /* Attempts 2 and 3 fail by themselves: the first still has its retry. */
    action_list_clear(&out);
    job->attempt = 2;
    job->state = JOB_RUNNING;
    sched_fail_attempt(&c, job, JOB_FAILED, JOB_FAILED, "exit 1", 1, 0, TIMEOUT_MS + 2, &out);
    const struct action *a = fx_find(&out, ACTION_REQUEUE, 1);
    assert_non_null(a);
    assert_string_equal(a->reason, "exit 1; retry 1 of 1");
    action_list_clear(&out);
    job = cluster_find_job(&c, 1);
    job->attempt = 3;
    job->state = JOB_RUNNING;
    sched_fail_attempt(&c, job, JOB_FAILED, JOB_FAILED, "exit 1", 1, 0, TIMEOUT_MS + 3, &out);
    assert_non_null(fx_find(&out, ACTION_FINISH, 1));
    assert_null(cluster_find_job(&c, 1));
}

static void test_every_job_of_a_lost_node_is_ended_and_others_are_untouched(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 4));
    add_node(fx_h200_node(2, 4));
    cluster_find_node(&c, 2)->last_heartbeat_ms = TIMEOUT_MS;
    add_running(fx_job(1, 1), 1);
    add_running(fx_job(2, 1), 1);
    /* A cancel under way ends with the node: two removals in a row shift the array. */
    cluster_find_job(&c, 1)->cancel_requested = true;
    cluster_find_job(&c, 2)->cancel_requested = true;
    struct job retried = fx_job(3, 1);
    retried.retries = 3;
    add_running(retried, 1);
    add_running(fx_job(4, 1), 2);
    assert_int_equal(sched_check_nodes(&s, &c, TIMEOUT_MS + 1, &out), 1);

    assert_int_equal(fx_find(&out, ACTION_FINISH, 1)->state, JOB_CANCELLED);
    assert_int_equal(fx_find(&out, ACTION_FINISH, 2)->state, JOB_CANCELLED);
    assert_int_equal(fx_count(&out, ACTION_REQUEUE, 3), 1);
    assert_int_equal(c.njobs, 2);
    assert_int_equal(cluster_find_job(&c, 4)->state, JOB_RUNNING);
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 0);
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 2)), 1);
}

static void test_lost_node_frees_cpus_and_memory(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 1));
    struct job j = fx_job(1, 1);
    j.cpus = 8;
    j.memory_mib = 4096;
    j.retries = 1;
    add_running(j, 1);
    sched_check_nodes(&s, &c, TIMEOUT_MS + 1, &out);
    assert_int_equal(cluster_find_node(&c, 1)->cpus_allocated, 0);
    assert_int_equal(cluster_find_node(&c, 1)->memory_allocated_mib, 0);
}

static void test_cancelling_a_pending_job_finishes_it_at_once(void **state)
{
    (void)state;
    add_job(fx_job(1, 1));
    assert_int_equal(sched_cancel(&c, 1, &out), 1);
    const struct action *a = fx_find(&out, ACTION_FINISH, 1);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_CANCELLED);
    assert_null(cluster_find_job(&c, 1));
}

static void test_cancelling_a_running_job_asks_its_agent_to_stop_it(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 1));
    add_running(fx_job(1, 1), 1);
    assert_int_equal(sched_cancel(&c, 1, &out), 0);
    struct job *job = cluster_find_job(&c, 1);
    assert_non_null(job);
    assert_true(job->cancel_requested);
    assert_int_equal(job->state, JOB_RUNNING);
    assert_int_equal(fx_count(&out, ACTION_FINISH, 1), 0);
    /* It keeps its GPUs until the agent says it stopped. */
    assert_int_equal(fx_gpus_held(cluster_find_node(&c, 1)), 1);
}

static void test_cancelling_an_unknown_job_is_enoent(void **state)
{
    (void)state;
    assert_int_equal(sched_cancel(&c, 42, &out), TIDE_ENOENT);
    assert_int_equal(out.len, 0);
}

static void test_cancelled_job_on_a_lost_node_ends_cancelled_not_requeued(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 1));
    struct job j = fx_job(1, 1);
    j.retries = 5;
    add_running(j, 1);
    sched_cancel(&c, 1, &out);
    sched_check_nodes(&s, &c, TIMEOUT_MS + 1, &out);
    const struct action *a = fx_find(&out, ACTION_FINISH, 1);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_CANCELLED);
    assert_null(cluster_find_job(&c, 1));
}

static void remove_and_check_lookups(bool any_order)
{
    c.jobs_any_order = any_order;
    for (int64_t id = 1; id <= 300; id++)
        add_job(fx_job(id * 7, 1));
    for (int64_t id = 1; id <= 300; id += 3)
        cluster_remove_job(&c, id * 7);
    cluster_remove_job(&c, 5); /* not there: nothing happens */
    assert_int_equal(c.njobs, 200);
    for (int64_t id = 1; id <= 300; id++) {
        struct job *job = cluster_find_job(&c, id * 7);
        if (id % 3 == 1) {
            assert_null(job);
        } else {
            assert_non_null(job);
            assert_int_equal(job->id, id * 7);
        }
    }
    if (!any_order) /* submission order kept */
        for (size_t i = 1; i < c.njobs; i++)
            assert_true(c.jobs[i - 1].id < c.jobs[i].id);
}

static void test_jobs_are_found_by_id_after_removals_in_order(void **state)
{
    (void)state;
    remove_and_check_lookups(false);
}

static void test_jobs_are_found_by_id_after_removals_in_any_order(void **state)
{
    (void)state;
    remove_and_check_lookups(true);
}

static void test_duplicate_job_ids_find_the_first(void **state)
{
    (void)state;
    struct job a = fx_job(4, 1), b = fx_job(4, 2);
    add_job(a);
    add_job(b);
    assert_int_equal(cluster_find_job(&c, 4)->gpus, 1);
    cluster_remove_job(&c, 4);
    assert_int_equal(cluster_find_job(&c, 4)->gpus, 2);
}

/* A mixed queue on two nodes: big jobs, a blocked one, a later small one. */
static void fill_mixed(struct cluster *cl)
{
    cluster_init(cl);
    struct node n1 = fx_h200_node(1, 8), n2 = fx_h200_node(2, 4);
    assert_non_null(cluster_put_node(cl, &n1));
    assert_non_null(cluster_put_node(cl, &n2));
    int gpus[] = {4, 8, 2, 9, 3, 1, 4, 1};
    for (int i = 0; i < 8; i++) {
        struct job j = fx_job(i + 1, gpus[i]);
        j.submit_ms = i * 10;
        j.est_runtime_s = 100 - i;
        assert_non_null(cluster_add_job(cl, &j));
    }
}

static void test_a_pass_without_explanations_decides_the_same(void **state)
{
    (void)state;
    struct cluster quiet;
    cluster_release(&c);
    fill_mixed(&c);
    fill_mixed(&quiet);
    struct sched_config cfg = s.cfg;
    cfg.explain = false;
    struct scheduler sq;
    sched_init(&sq, &cfg);
    struct action_list out_quiet;
    action_list_init(&out_quiet);
    int placed = sched_pass(&s, &c, 1000, &out);
    int64_t ids[] = {8, 3, 1, 5, 2, 7, 4, 6, 99};
    assert_int_equal(sched_pass_ids(&sq, &quiet, ids, 9, 1000, &out_quiet), placed);
    assert_true(placed > 0);
    assert_int_equal(out.len, out_quiet.len);
    for (size_t i = 0; i < out.len; i++) {
        assert_int_equal(out.items[i].job_id, out_quiet.items[i].job_id);
        assert_int_equal(out.items[i].node_id, out_quiet.items[i].node_id);
        assert_string_equal(out.items[i].reason, out_quiet.items[i].reason);
    }
    for (size_t i = 0; i < c.njobs; i++) {
        assert_int_equal(c.jobs[i].state, quiet.jobs[i].state);
        if (c.jobs[i].state == JOB_PENDING) {
            assert_true(fx_reason(&c.jobs[i])[0] != '\0');
            assert_string_equal(fx_reason(&quiet.jobs[i]), "");
        }
    }
    action_list_release(&out_quiet);
    sched_release(&sq);
    cluster_release(&quiet);
}

static void test_a_kept_index_forgets_from_pass_to_pass_which_shapes_could_never_fit(void **state)
{
    (void)state;
    struct sched_config cfg = s.cfg;
    cfg.explain = false;
    cfg.keep_index = true;
    sched_release(&s);
    sched_init(&s, &cfg);
    add_node(fx_h200_node(1, 2));
    add_job(fx_job(1, 4));
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 0); /* no node could hold it */
    /* The node comes back with more GPUs, ready throughout: nothing but the
     * start of the next pass tells the memo. */
    add_node(fx_h200_node(1, 4));
    assert_int_equal(sched_pass(&s, &c, 2000, &out), 1);
    assert_int_equal(fx_count(&out, ACTION_START, 1), 1);
    c.index = NULL; /* the scheduler's, freed by sched_release */
}

static void test_a_pass_orders_new_jobs_among_the_waiting_ones(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 1));
    add_running(fx_job(100, 1), 1);
    for (int i = 1; i <= 3; i++)
        add_job(with_priority(fx_job(i, 1), i)); /* 3, 2, 1 */
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 0);
    add_job(with_priority(fx_job(4, 1), 2)); /* between 2 and 1... */
    add_job(with_priority(fx_job(5, 1), 9)); /* ...and first of all */
    assert_int_equal(sched_pass(&s, &c, 2000, &out), 0);
    int64_t want[] = {5, 3, 2, 4, 1};
    for (int i = 0; i < 5; i++)
        assert_int_equal(s.order[i]->id, want[i]);
}

static unsigned lcg_next(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return *seed >> 16;
}

/* A random cluster: nodes of 1-8 GPUs, some GPUs running jobs with known
 * ends, and a queue of single-node, gang, CPU-only and GPU-sharing jobs. */
static void fill_random(struct cluster *cl, unsigned seed)
{
    cluster_init(cl);
    cl->jobs_any_order = true;
    int nnodes = 2 + (int)(lcg_next(&seed) % 8);
    for (int n = 0; n < nnodes; n++) {
        struct node nd = fx_h200_node(n + 1, 1 + (int)(lcg_next(&seed) % 8));
        if (lcg_next(&seed) % 10 == 0)
            nd.state = NODE_LOST;
        assert_non_null(cluster_put_node(cl, &nd));
    }
    int64_t id = 1;
    for (size_t n = 0; n < cl->nnodes; n++) {
        struct node *nd = &cl->nodes[n];
        int busy = (int)(lcg_next(&seed) % (unsigned)(nd->ngpus + 1));
        if (nd->state != NODE_READY || busy == 0)
            continue;
        struct job r = fx_job(id++, busy);
        r.est_runtime_s = 10 + lcg_next(&seed) % 500;
        struct job *stored = cluster_add_job(cl, &r);
        assert_non_null(stored);
        int idx[TIDE_MAX_GPUS_PER_NODE];
        for (int g = 0; g < busy; g++)
            idx[g] = g;
        cluster_assign(cl, stored, cluster_find_node(cl, nd->id), idx, busy);
        stored->state = JOB_RUNNING;
        stored->start_ms = 1;
    }
    int njobs = 5 + (int)(lcg_next(&seed) % 30);
    for (int j = 0; j < njobs; j++) {
        struct job p = fx_job(id++, (int)(lcg_next(&seed) % 13));
        p.submit_ms = (int64_t)(lcg_next(&seed) % 1000);
        p.est_runtime_s = lcg_next(&seed) % 4 ? 1 + lcg_next(&seed) % 600 : 0;
        p.max_nodes = 1 + (int)(lcg_next(&seed) % 4);
        p.priority = (int)(lcg_next(&seed) % 3);
        if (p.gpus == 1 && lcg_next(&seed) % 4 == 0)
            p.gpu_memory_mib = FX_H200_MIB / 4; /* a share of one GPU */
        assert_non_null(cluster_add_job(cl, &p));
    }
}

/* The shortcuts of a pass without explanations (skipping jobs no node has
 * the free GPUs for, the shape memo) against a pass that explains every
 * wait and so takes none of them. */
static void test_a_quiet_pass_decides_as_an_explaining_one_on_random_clusters(void **state)
{
    (void)state;
    for (unsigned round = 0; round < 300; round++) {
        struct cluster loud, quiet;
        fill_random(&loud, round);
        fill_random(&quiet, round);
        struct sched_config cfg = s.cfg;
        cfg.backfill = round % 2;
        cfg.preemption = false;
        cfg.order = round % 3 ? &order_priority : &order_sjf;
        struct scheduler sl, sq;
        sched_init(&sl, &cfg);
        cfg.explain = false;
        cfg.keep_index = round % 4 == 0;
        sched_init(&sq, &cfg);
        struct action_list out_loud, out_quiet;
        action_list_init(&out_loud);
        action_list_init(&out_quiet);
        for (int64_t t = 1000; t <= 3000; t += 1000) { /* and again, with nothing changed */
            int placed = sched_pass(&sl, &loud, t, &out_loud);
            assert_int_equal(sched_pass(&sq, &quiet, t, &out_quiet), placed);
        }
        assert_int_equal(out_loud.len, out_quiet.len);
        for (size_t i = 0; i < out_loud.len; i++) {
            assert_int_equal(out_loud.items[i].type, out_quiet.items[i].type);
            assert_int_equal(out_loud.items[i].job_id, out_quiet.items[i].job_id);
            assert_string_equal(out_loud.items[i].reason, out_quiet.items[i].reason);
        }
        for (size_t i = 0; i < loud.njobs; i++) {
            assert_int_equal(loud.jobs[i].state, quiet.jobs[i].state);
            assert_int_equal(loud.jobs[i].reserved_start_ms, quiet.jobs[i].reserved_start_ms);
        }
        action_list_release(&out_loud);
        action_list_release(&out_quiet);
        quiet.index = NULL; /* with keep_index, sq's */
        sched_release(&sl);
        sched_release(&sq);
        cluster_release(&loud);
        cluster_release(&quiet);
    }
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_higher_priority_job_is_placed_first),
        T(test_negative_priority_goes_after_the_default),
        T(test_earlier_submission_goes_first_within_a_priority),
        T(test_same_submit_time_goes_by_lower_id),
        T(test_placed_job_is_starting_on_its_gpus_with_attempt_one),
        T(test_requeued_job_starts_its_next_attempt),
        T(test_job_that_fits_nowhere_waits_with_a_reason),
        T(test_reason_of_a_job_behind_one_of_its_shape_names_only_what_it_asked),
        T(test_jobs_behind_a_failure_get_their_own_shapes_reason_in_any_order),
        T(test_placements_reasons_are_causes_that_read_as_their_sentences),
        T(test_wait_reason_is_cleared_once_placed),
        T(test_big_job_that_does_not_fit_does_not_block_a_smaller_later_one),
        T(test_a_blocked_head_job_stops_the_pass_under_strict_fifo),
        T(test_a_hold_replaces_a_reason_the_pass_recorded_and_outlasts_the_next_pass),
        T(test_a_blocked_head_job_stops_a_quiet_pass_under_strict_sjf),
        T(test_a_blocked_head_job_does_not_stop_the_pass_under_plain_fifo),
        T(test_strict_fifo_with_backfill_starts_a_job_that_ends_before_the_reservation),
        T(test_a_job_that_can_never_fit_does_not_stop_a_strict_pass),
        T(test_jobs_placed_in_one_pass_do_not_share_gpus),
        T(test_jobs_already_on_a_node_are_not_placed_again),
        T(test_job_too_big_for_any_node_is_told_so_even_after_a_smaller_one_waited),
        T(test_node_silent_past_the_timeout_is_lost),
        T(test_node_silent_exactly_the_timeout_is_not_lost),
        T(test_lost_node_is_reported_once),
        T(test_a_clock_stepped_back_does_not_keep_a_silent_node_alive_longer),
        T(test_a_stalled_server_does_not_judge_nodes_by_its_own_stall),
        T(test_job_on_lost_node_is_requeued_using_no_retry),
        T(test_node_loss_leaves_a_jobs_retries_for_its_own_failures),
        T(test_every_job_of_a_lost_node_is_ended_and_others_are_untouched),
        T(test_lost_node_frees_cpus_and_memory),
        T(test_cancelling_a_pending_job_finishes_it_at_once),
        T(test_cancelling_a_running_job_asks_its_agent_to_stop_it),
        T(test_cancelling_an_unknown_job_is_enoent),
        T(test_cancelled_job_on_a_lost_node_ends_cancelled_not_requeued),
        T(test_jobs_are_found_by_id_after_removals_in_order),
        T(test_jobs_are_found_by_id_after_removals_in_any_order),
        T(test_duplicate_job_ids_find_the_first),
        T(test_a_pass_without_explanations_decides_the_same),
        T(test_a_kept_index_forgets_from_pass_to_pass_which_shapes_could_never_fit),
        T(test_a_pass_orders_new_jobs_among_the_waiting_ones),
        T(test_a_quiet_pass_decides_as_an_explaining_one_on_random_clusters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
