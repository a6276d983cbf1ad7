/* Unit tests for the pass over new jobs only (sched_pass_new, src/core/sched.c
 * and sched_quiet.c): it decides and explains as a full pass would, and
 * leaves to a full pass whatever it cannot vouch for. Each case runs twin
 * clusters, one through sched_pass_new and one through sched_pass, and
 * compares what they did. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "common/tide_err.h"
#include "core/sched.h"

#include "cluster_fixture.h"

#define NOW 100000

/* One scheduler and its cluster. */
struct side {
    struct scheduler s;
    struct cluster c;
    struct action_list out;
};

static struct side a, b; /* a: sched_pass_new; b: sched_pass */

static void side_init(struct side *x, const struct order_ops *order, bool preemption)
{
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    cfg.order = order;
    cfg.preemption = preemption;
    sched_init(&x->s, &cfg);
    cluster_init(&x->c);
    action_list_init(&x->out);
}

static void side_release(struct side *x)
{
    sched_release(&x->s);
    cluster_release(&x->c);
    action_list_release(&x->out);
}

static int teardown(void **state)
{
    (void)state;
    side_release(&a);
    side_release(&b);
    return 0;
}

static void both_init(const struct order_ops *order, bool preemption)
{
    side_init(&a, order, preemption);
    side_init(&b, order, preemption);
    /* The first call asks passes to keep what it needs. */
    assert_int_equal(sched_pass_new(&a.s, &a.c, 0, &a.out), TIDE_ECONFLICT);
}

static void add_node(struct side *x, struct node n)
{
    assert_non_null(cluster_put_node(&x->c, &n));
}

static void add_job(struct side *x, struct job j)
{
    assert_non_null(cluster_add_job(&x->c, &j));
}

/* Adds job as running on node's first free GPUs. */
static void add_running(struct side *x, struct job j, int64_t node_id)
{
    struct job *job = cluster_add_job(&x->c, &j);
    assert_non_null(job);
    struct node *node = cluster_find_node(&x->c, node_id);
    int idx[TIDE_MAX_GPUS_PER_NODE], n = 0;
    for (int g = 0; g < node->ngpus && n < j.gpus; g++)
        if (!node->gpus[g].job_id)
            idx[n++] = node->gpus[g].index;
    assert_int_equal(n, j.gpus);
    cluster_assign(&x->c, job, node, idx, n);
    job->state = JOB_RUNNING;
    job->attempt = 1;
}

/* Both sides: one node of `ngpus` GPUs with `held` of them running job 1. */
static void both_node(int ngpus, int held, bool preemptible)
{
    struct side *sides[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        add_node(sides[i], fx_h200_node(1, ngpus));
        if (held) {
            struct job j = fx_job(1, held);
            j.preemptible = preemptible;
            add_running(sides[i], j, 1);
        }
    }
}

static void both_job(struct job j)
{
    add_job(&a, j);
    add_job(&b, j);
}

/* Both sides without backfill: a blocked job at the head would reserve a
 * node, which the tests of that (below) look at on their own. */
static void both_without_backfill(void)
{
    a.s.cfg.backfill = b.s.cfg.backfill = false;
}

/* Both sides take a full pass (the one that changed nothing). */
static void both_full_pass(int64_t now)
{
    assert_true(sched_pass(&a.s, &a.c, now, &a.out) >= 0);
    assert_true(sched_pass(&b.s, &b.c, now, &b.out) >= 0);
    action_list_clear(&a.out);
    action_list_clear(&b.out);
}

/* a by sched_pass_new, b by sched_pass; the same placements, the same jobs
 * in the same states with the same reasons, the same order left. */
static void assert_new_pass_as_full(int64_t now, int want_placed)
{
    int pa = sched_pass_new(&a.s, &a.c, now, &a.out);
    int pb = sched_pass(&b.s, &b.c, now, &b.out);
    assert_int_equal(pa, pb);
    assert_int_equal(pa, want_placed);
    assert_int_equal(a.out.len, b.out.len);
    for (size_t i = 0; i < a.out.len; i++) {
        assert_int_equal(a.out.items[i].type, b.out.items[i].type);
        assert_int_equal(a.out.items[i].job_id, b.out.items[i].job_id);
        assert_int_equal(a.out.items[i].node_id, b.out.items[i].node_id);
        assert_string_equal(a.out.items[i].reason, b.out.items[i].reason);
    }
    assert_int_equal(a.c.njobs, b.c.njobs);
    for (size_t i = 0; i < a.c.njobs; i++) {
        const struct job *x = &a.c.jobs[i], *y = &b.c.jobs[i];
        assert_int_equal(x->id, y->id);
        assert_int_equal(x->state, y->state);
        assert_int_equal(x->effective_priority, y->effective_priority);
        assert_int_equal(x->reserved_start_ms, y->reserved_start_ms);
        assert_string_equal(fx_reason(x), fx_reason(y));
    }
    assert_int_equal(a.s.norder, b.s.norder);
    for (size_t i = 0; i < a.s.norder; i++)
        assert_int_equal(a.s.order[i]->id, b.s.order[i]->id);
    action_list_clear(&a.out);
    action_list_clear(&b.out);
}

static struct job shaped(int64_t id, int gpus, int priority)
{
    struct job j = fx_job(id, gpus);
    j.priority = priority;
    return j;
}

static void test_new_jobs_behind_a_full_node_wait_as_in_a_full_pass(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_node(2, 2, false);
    for (int64_t id = 2; id < 50; id++)
        both_job(shaped(id, 1 + (int)(id % 3), 0));
    both_full_pass(NOW);
    for (int64_t id = 50; id < 60; id++)
        both_job(shaped(id, 1 + (int)(id % 3), 0));
    assert_new_pass_as_full(NOW + 10, 0);
    /* And again: a pass over new jobs leaves what the next one needs. */
    both_job(shaped(60, 1, 0));
    assert_new_pass_as_full(NOW + 20, 0);
}

static void test_new_jobs_with_no_node_at_all_are_told_none_could_hold_them(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    for (int64_t id = 1; id < 20; id++)
        both_job(shaped(id, 1, 0));
    both_full_pass(NOW);
    both_job(shaped(20, 1, 0));
    both_job(shaped(21, 4, 0));
    assert_new_pass_as_full(NOW, 0);
    assert_non_null(strstr(fx_reason(cluster_find_job(&a.c, 21)), "no ready node has"));
}

static void test_a_new_job_that_fits_where_the_queue_did_not_is_placed(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_without_backfill();
    both_node(4, 2, false); /* 2 free: the queue of 4-GPU jobs waits */
    for (int64_t id = 2; id < 10; id++)
        both_job(shaped(id, 4, 0));
    both_full_pass(NOW);
    both_job(shaped(10, 1, 0));
    both_job(shaped(11, 4, 0));
    both_job(shaped(12, 1, 0));
    assert_new_pass_as_full(NOW, 2);
    assert_int_equal(cluster_find_job(&a.c, 10)->state, JOB_STARTING);
    assert_int_equal(cluster_find_job(&a.c, 12)->state, JOB_STARTING);
    /* It placed: the next pass is a full one. */
    both_job(shaped(13, 1, 0));
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), TIDE_ECONFLICT);
}

static void test_strict_fifo_still_stops_new_jobs_behind_the_blocked_one(void **state)
{
    (void)state;
    both_init(&order_fifo_strict, true);
    both_without_backfill();
    both_node(4, 2, false); /* 2 free, but the head wants 4 */
    both_job(shaped(2, 4, 0));
    both_job(shaped(3, 1, 0));
    both_full_pass(NOW);
    both_job(shaped(4, 1, 0));
    assert_new_pass_as_full(NOW, 0);
    const struct job *late = cluster_find_job(&a.c, 4);
    assert_int_equal(late->state, JOB_PENDING);
    assert_non_null(strstr(fx_reason(late), "job 2"));
}

static void test_the_job_array_moving_keeps_the_order(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_node(2, 2, false);
    both_job(shaped(2, 1, 0));
    both_full_pass(NOW);
    const struct job *before = a.c.jobs;
    int64_t id = 3;
    for (; id < 3000 || (a.c.jobs == before && id < 100000); id++) /* the array grows, and moves */
        both_job(shaped(id, 1 + (int)(id % 2), 0));
    assert_ptr_not_equal(a.c.jobs, before); /* or this tests nothing */
    assert_new_pass_as_full(NOW, 0);
}

static void test_a_new_job_of_higher_priority_takes_a_full_pass(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_node(2, 2, false);
    both_job(shaped(2, 1, 0));
    both_job(shaped(3, 1, 0));
    both_full_pass(NOW);
    both_job(shaped(4, 1, 5));
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), TIDE_ECONFLICT);
    assert_int_equal(sched_pass(&a.s, &a.c, NOW, &a.out), 0);
    assert_int_equal(a.s.order[0]->id, 4);
}

static void test_a_task_ending_makes_the_failed_jobs_try_again(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_node(2, 2, false);
    both_job(shaped(2, 2, 0));
    both_full_pass(NOW);
    struct job *running = cluster_find_job(&a.c, 1);
    cluster_unassign(&a.c, running);
    cluster_remove_job(&a.c, 1);
    both_job(shaped(3, 1, 0));
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), TIDE_ECONFLICT);
    assert_int_equal(sched_pass(&a.s, &a.c, NOW, &a.out), 1);
    assert_int_equal(cluster_find_job(&a.c, 2)->state, JOB_STARTING);
}

static void test_a_node_joining_makes_the_failed_jobs_try_again(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_node(2, 2, false);
    both_job(shaped(2, 2, 0));
    both_full_pass(NOW);
    add_node(&a, fx_h200_node(2, 2));
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), TIDE_ECONFLICT);
    assert_int_equal(sched_pass(&a.s, &a.c, NOW, &a.out), 1);
}

static void test_a_gpu_freed_by_hand_makes_the_failed_jobs_try_again(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_node(2, 2, false);
    both_job(shaped(2, 1, 0));
    both_full_pass(NOW);
    /* The owner writes node fields itself (the server's agent reports). */
    a.c.nodes[0].gpus[1].job_id = 0;
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), TIDE_ECONFLICT);
}

static void test_work_that_preemption_could_take_keeps_passes_full(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_node(2, 2, true); /* preemptible work holds the node */
    both_job(shaped(2, 2, 50));
    both_full_pass(NOW);
    both_job(shaped(3, 1, 0));
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), TIDE_ECONFLICT);
}

static void test_a_job_backing_off_keeps_passes_full(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_node(2, 2, false);
    struct job j = shaped(2, 1, 0);
    j.attempt = 1;
    j.retries = 3;
    j.last_failure_ms = NOW - 1000; /* its backoff ends within the default 10 s */
    both_job(j);
    both_full_pass(NOW);
    both_job(shaped(3, 1, 0));
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), TIDE_ECONFLICT);
}

static void test_a_removed_job_makes_the_pass_full(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_node(2, 2, false);
    both_job(shaped(2, 1, 0));
    both_job(shaped(3, 1, 0));
    both_full_pass(NOW);
    assert_int_equal(sched_cancel(&a.c, 2, &a.out), 1);
    both_job(shaped(4, 1, 0));
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), TIDE_ECONFLICT);
}

static void test_a_job_cancelled_after_a_submit_makes_the_pass_full(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    a.c.jobs_any_order = b.c.jobs_any_order = true; /* as the server has it */
    both_node(2, 2, false);
    both_job(shaped(2, 1, 0));
    both_job(shaped(3, 1, 0));
    both_full_pass(NOW);
    /* The new job moves into the cancelled one's place; the tail stays. */
    both_job(shaped(4, 1, 0));
    assert_int_equal(sched_cancel(&a.c, 2, &a.out), 1);
    assert_int_equal(a.c.jobs[a.c.njobs - 1].id, 3);
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), TIDE_ECONFLICT);
}

static void test_a_new_job_waiting_on_others_makes_the_pass_full(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_node(2, 2, false);
    both_job(shaped(2, 1, 0));
    both_full_pass(NOW);
    struct job j = shaped(3, 1, 0);
    j.held = true;
    j.ndeps = 1;
    j.depends_on[0] = 2;
    add_job(&a, j);
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), TIDE_ECONFLICT);
}

static void test_an_escalation_falling_due_makes_the_pass_full(void **state)
{
    (void)state;
    static struct queue_set qs;
    queue_set_defaults(&qs); /* inference: +100 after each 60 s waited */
    both_init(&order_priority, true);
    a.s.cfg.queues = b.s.cfg.queues = &qs;
    both_node(2, 2, false);
    struct job waiting = shaped(2, 1, 150);
    snprintf(waiting.queue, sizeof waiting.queue, "inference");
    waiting.submit_ms = NOW;
    both_job(waiting);
    both_full_pass(NOW + 1000);
    both_job(shaped(3, 1, 0));
    assert_new_pass_as_full(NOW + 59999, 0); /* before its first step */
    both_job(shaped(4, 1, 0));
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW + 60000, &a.out), TIDE_ECONFLICT);
    assert_int_equal(sched_pass(&a.s, &a.c, NOW + 60000, &a.out), 0);
    assert_int_equal(cluster_find_job(&a.c, 2)->effective_priority, 250);
}

static void test_no_pass_before_means_a_full_pass(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_job(shaped(1, 1, 0));
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), TIDE_ECONFLICT);
}

static void test_passes_keep_nothing_until_the_owner_asks(void **state)
{
    (void)state;
    side_init(&a, &order_priority, true);
    side_init(&b, &order_priority, true);
    add_node(&a, fx_h200_node(1, 2));
    add_running(&a, fx_job(1, 2), 1);
    add_job(&a, fx_job(2, 1));
    assert_int_equal(sched_pass(&a.s, &a.c, NOW, &a.out), 0);
    assert_false(a.s.quiet.valid);
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), TIDE_ECONFLICT);
    assert_int_equal(sched_pass(&a.s, &a.c, NOW, &a.out), 0);
    assert_true(a.s.quiet.valid);
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), 0);
}

static void test_a_quiet_pass_over_new_jobs_keeps_the_nodes_it_compared(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_node(4, 2, false); /* 2 free: the 4-GPU jobs wait */
    both_job(shaped(2, 4, 0));
    both_full_pass(NOW);
    both_job(shaped(3, 4, 0));
    assert_new_pass_as_full(NOW, 0);
    /* It compared the nodes and took them as they were: the next pass over
     * new jobs needs nothing more, and a node that changes still shows. */
    assert_true(a.s.quiet.valid);
    assert_true(sched_quiet_nodes_same(&a.s.quiet, &a.c));
    both_job(shaped(4, 4, 0));
    assert_new_pass_as_full(NOW, 0);
    a.c.nodes[0].gpus[0].job_id = 0;
    assert_false(sched_quiet_nodes_same(&a.s.quiet, &a.c));
    both_job(shaped(5, 4, 0));
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), TIDE_ECONFLICT);
}

static void test_new_jobs_keep_off_gpus_held_by_a_reservation_of_unknown_start(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_node(4, 2, false); /* job 1 gives no runtime: job 2's start is unknown */
    add_node(&a, fx_h200_node(2, 1));
    add_node(&b, fx_h200_node(2, 1));
    both_job(shaped(2, 4, 0));
    both_full_pass(NOW);
    assert_int_equal(cluster_find_job(&a.c, 2)->reserved_node_id, 1);
    assert_true(a.s.quiet.valid); /* the same reservation would be made again */
    both_job(shaped(3, 1, 0));
    both_job(shaped(4, 1, 0));
    assert_new_pass_as_full(NOW, 1);
    assert_int_equal(cluster_find_job(&a.c, 3)->node_id, 2);
    assert_int_equal(cluster_find_job(&a.c, 4)->state, JOB_PENDING); /* node 1's 2 are held */
}

/* Both sides without explanations (the simulator's and a quiet server's
 * passes): waiting jobs get no reason written, and a walk may stop early. */
static void both_unexplained(void)
{
    a.s.cfg.explain = b.s.cfg.explain = false;
}

static void test_without_explanations_new_jobs_wait_and_start_as_in_a_full_pass(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_without_backfill();
    both_unexplained();
    both_node(4, 2, false); /* 2 free: the 4-GPU jobs are passed over unasked */
    for (int64_t id = 2; id < 10; id++)
        both_job(shaped(id, 4, 0));
    both_full_pass(NOW);
    assert_true(a.s.quiet.valid);
    both_job(shaped(10, 4, 0));
    assert_new_pass_as_full(NOW, 0);
    assert_string_equal(fx_reason(cluster_find_job(&a.c, 10)), "");
    both_job(shaped(11, 1, 0));
    both_job(shaped(12, 4, 0));
    assert_new_pass_as_full(NOW, 1);
    assert_int_equal(cluster_find_job(&a.c, 11)->state, JOB_STARTING);
}

static void test_without_explanations_a_walk_cut_short_leaves_a_full_pass_next(void **state)
{
    (void)state;
    both_init(&order_priority, true);
    both_unexplained();
    both_node(2, 2, false); /* no GPU free: the walk ends at the first job */
    both_job(shaped(2, 1, 0));
    both_job(shaped(3, 1, 0));
    both_full_pass(NOW);
    assert_false(a.s.quiet.valid);
    both_job(shaped(4, 1, 0));
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), TIDE_ECONFLICT);
}

static void test_without_explanations_strict_order_behind_a_blocked_job_is_full(void **state)
{
    (void)state;
    both_init(&order_fifo_strict, true);
    both_unexplained();
    both_node(4, 2, false); /* 2 free, but the head wants 4 */
    both_job(shaped(2, 4, 0));
    both_job(shaped(3, 1, 0)); /* behind it, unlooked at: the walk stops */
    both_full_pass(NOW);
    assert_int_equal(cluster_find_job(&a.c, 3)->state, JOB_PENDING);
    both_job(shaped(4, 1, 0));
    assert_int_equal(sched_pass_new(&a.s, &a.c, NOW, &a.out), TIDE_ECONFLICT);
}

#define T(f) cmocka_unit_test_teardown(f, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_new_jobs_behind_a_full_node_wait_as_in_a_full_pass),
        T(test_new_jobs_with_no_node_at_all_are_told_none_could_hold_them),
        T(test_a_new_job_that_fits_where_the_queue_did_not_is_placed),
        T(test_strict_fifo_still_stops_new_jobs_behind_the_blocked_one),
        T(test_the_job_array_moving_keeps_the_order),
        T(test_a_new_job_of_higher_priority_takes_a_full_pass),
        T(test_a_task_ending_makes_the_failed_jobs_try_again),
        T(test_a_node_joining_makes_the_failed_jobs_try_again),
        T(test_a_gpu_freed_by_hand_makes_the_failed_jobs_try_again),
        T(test_work_that_preemption_could_take_keeps_passes_full),
        T(test_a_job_backing_off_keeps_passes_full),
        T(test_a_removed_job_makes_the_pass_full),
        T(test_a_job_cancelled_after_a_submit_makes_the_pass_full),
        T(test_a_new_job_waiting_on_others_makes_the_pass_full),
        T(test_an_escalation_falling_due_makes_the_pass_full),
        T(test_no_pass_before_means_a_full_pass),
        T(test_passes_keep_nothing_until_the_owner_asks),
        T(test_a_quiet_pass_over_new_jobs_keeps_the_nodes_it_compared),
        T(test_new_jobs_keep_off_gpus_held_by_a_reservation_of_unknown_start),
        T(test_without_explanations_new_jobs_wait_and_start_as_in_a_full_pass),
        T(test_without_explanations_a_walk_cut_short_leaves_a_full_pass_next),
        T(test_without_explanations_strict_order_behind_a_blocked_job_is_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
