/* Unit tests for start-time ETAs (src/core/eta.c, eta_estimate.c) on small hand-built clusters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/eta.h"
#include "core/eta_estimate.h"
#include "core/sched.h"

#include "cluster_fixture.h"

#define S 1000LL /* ms per second */

static struct cluster c;
static struct eta_plan plan;
static struct eta_estimator est;

static int setup(void **state)
{
    (void)state;
    cluster_init(&c);
    eta_plan_init(&plan);
    eta_estimator_init(&est, 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cluster_release(&c);
    eta_plan_release(&plan);
    eta_estimator_release(&est);
    return 0;
}

/* A job running on node since start_ms on its first gpus GPUs from first_gpu. */
static struct job *run_job(int64_t id, int64_t node_id, int first_gpu, int gpus, int64_t start_ms)
{
    struct job j = fx_job(id, gpus);
    struct job *job = cluster_add_job(&c, &j);
    int idx[TIDE_MAX_GPUS_PER_NODE];
    for (int g = 0; g < gpus; g++)
        idx[g] = first_gpu + g;
    cluster_assign(&c, job, cluster_find_node(&c, node_id), idx, gpus);
    job->state = JOB_RUNNING;
    job->start_ms = start_ms;
    return job;
}

static struct job *pend(int64_t id, int gpus)
{
    struct job j = fx_job(id, gpus);
    return cluster_add_job(&c, &j);
}

/* Plans the pending jobs given by id, in that order. */
static void plan_ids(const int64_t *ids, size_t n, int64_t now_ms)
{
    struct job *order[16];
    for (size_t i = 0; i < n; i++)
        order[i] = cluster_find_job(&c, ids[i]);
    assert_int_equal(eta_plan_run(&plan, &c, &est, order, n, now_ms), 0);
}

static void add_node(int64_t id, int gpus)
{
    struct node n = fx_h200_node(id, gpus);
    cluster_put_node(&c, &n);
}

static void test_next_pending_job_starts_when_the_running_job_ends(void **state)
{
    (void)state;
    add_node(1, 4);
    run_job(1, 1, 0, 4, 0)->max_runtime_s = 100;
    pend(2, 2);
    plan_ids((int64_t[]){2}, 1, 10 * S);
    struct job *j = cluster_find_job(&c, 2);
    assert_int_equal(j->eta_start_ms, 100 * S);
    assert_string_equal(eta_basis_name(j->eta_basis), "max_runtime");
}

static void test_free_gpus_give_an_eta_of_now(void **state)
{
    (void)state;
    add_node(1, 4);
    run_job(1, 1, 0, 2, 0)->max_runtime_s = 100;
    pend(2, 2);
    plan_ids((int64_t[]){2}, 1, 10 * S);
    struct job *j = cluster_find_job(&c, 2);
    assert_int_equal(j->eta_start_ms, 10 * S);
    assert_string_equal(eta_basis_name(j->eta_basis), "now");
}

static void test_jobs_ahead_in_the_queue_push_a_job_back(void **state)
{
    (void)state;
    add_node(1, 4);
    run_job(1, 1, 0, 4, 0)->est_runtime_s = 100;
    pend(2, 4)->est_runtime_s = 50;
    pend(3, 2)->max_runtime_s = 10;
    pend(4, 4);
    plan_ids((int64_t[]){2, 3, 4}, 3, 0);
    assert_int_equal(cluster_find_job(&c, 2)->eta_start_ms, 100 * S);
    assert_int_equal(cluster_find_job(&c, 3)->eta_start_ms, 150 * S);
    /* 4 needs the two GPUs job 3 holds until 160 s */
    assert_int_equal(cluster_find_job(&c, 4)->eta_start_ms, 160 * S);
    assert_string_equal(eta_basis_name(cluster_find_job(&c, 3)->eta_basis), "est_runtime");
    /* its time rests on job 3's max_runtime and job 2's est_runtime: the less certain */
    assert_string_equal(eta_basis_name(cluster_find_job(&c, 4)->eta_basis), "est_runtime");
}

static void test_a_job_takes_the_node_whose_gpus_free_first(void **state)
{
    (void)state;
    add_node(1, 4);
    add_node(2, 4);
    run_job(1, 1, 0, 4, 0)->max_runtime_s = 300;
    run_job(2, 2, 0, 3, 0)->max_runtime_s = 200;
    pend(3, 2);
    pend(4, 1);
    plan_ids((int64_t[]){3, 4}, 2, 0);
    /* node 2 has one GPU free now and three at 200 s */
    assert_int_equal(cluster_find_job(&c, 3)->eta_start_ms, 200 * S);
    assert_int_equal(cluster_find_job(&c, 4)->eta_start_ms, 0);
}

static void test_gang_job_waits_for_a_split_over_two_nodes(void **state)
{
    (void)state;
    add_node(1, 4);
    add_node(2, 4);
    run_job(1, 1, 0, 4, 0)->max_runtime_s = 100;
    run_job(2, 2, 0, 4, 0)->max_runtime_s = 200;
    struct job *gang = pend(3, 8);
    gang->max_nodes = 2;
    plan_ids((int64_t[]){3}, 1, 0);
    gang = cluster_find_job(&c, 3);
    assert_int_equal(gang->eta_start_ms, 200 * S);
    assert_string_equal(eta_basis_name(gang->eta_basis), "max_runtime");
}

static void test_a_job_no_node_can_hold_has_no_eta(void **state)
{
    (void)state;
    add_node(1, 4);
    pend(1, 8);
    plan_ids((int64_t[]){1}, 1, 0);
    struct job *j = cluster_find_job(&c, 1);
    assert_int_equal(j->eta_start_ms, 0);
    assert_string_equal(eta_basis_name(j->eta_basis), "unknown");
}

static void test_a_gpu_model_waits_for_its_own_nodes(void **state)
{
    (void)state;
    add_node(1, 2);
    struct node a100 = fx_node(2, 2, "A100", 81920);
    cluster_put_node(&c, &a100);
    run_job(1, 1, 0, 2, 0)->max_runtime_s = 300;
    struct job *h = pend(2, 1);
    snprintf(h->gpu_model, sizeof h->gpu_model, "H200*");
    pend(3, 1);
    plan_ids((int64_t[]){2, 3}, 2, 0);
    assert_int_equal(cluster_find_job(&c, 2)->eta_start_ms, 300 * S);
    assert_int_equal(cluster_find_job(&c, 3)->eta_start_ms, 0);
}

static struct job *pend_model(int64_t id, int gpus, const char *model, int64_t max_runtime_s)
{
    struct job *job = pend(id, gpus);
    snprintf(job->gpu_model, sizeof job->gpu_model, "%s", model);
    job->max_runtime_s = max_runtime_s;
    return job;
}

static void test_jobs_of_one_model_wait_in_turn_while_other_shapes_pass_them(void **state)
{
    (void)state;
    /* The plan looks at a shape's first waiting job only: one H200 job
     * that waits holds the H200 jobs behind it, not the A100 ones, and a
     * 2-GPU A100 job that waits does not hold a 1-GPU one behind it. */
    add_node(1, 2);
    struct node a100 = fx_node(2, 2, "A100", 81920);
    cluster_put_node(&c, &a100);
    run_job(1, 1, 0, 2, 0)->max_runtime_s = 300;
    pend_model(2, 1, "H200*", 100);
    pend_model(3, 1, "A100*", 50);
    pend_model(4, 1, "H200*", 200);
    pend_model(5, 1, "H200*", 100);
    pend_model(6, 2, "A100*", 100);
    pend_model(7, 1, "A100*", 80);
    plan_ids((int64_t[]){2, 3, 4, 5, 6, 7}, 6, 0);
    static const int64_t want_s[] = {300, 0, 300, 400, 80, 0};
    for (int64_t id = 2; id <= 7; id++)
        assert_int_equal(cluster_find_job(&c, id)->eta_start_ms, want_s[id - 2] * S);
}

static void test_a_gpu_model_job_gets_now_when_its_gpus_free_now(void **state)
{
    (void)state;
    /* the job on node 1 is being preempted: its GPUs free now, and the
     * preemptor (asking for a model) starts on them now, not when node 2's
     * job ends */
    add_node(1, 8);
    add_node(2, 8);
    run_job(1, 1, 0, 8, 0)->state = JOB_PREEMPTED;
    run_job(2, 2, 0, 8, 0)->max_runtime_s = 1000;
    struct job *h = pend(3, 8);
    snprintf(h->gpu_model, sizeof h->gpu_model, "H200");
    plan_ids((int64_t[]){3}, 1, 10 * S);
    struct job *j = cluster_find_job(&c, 3);
    assert_int_equal(j->eta_start_ms, 10 * S);
    assert_string_equal(eta_basis_name(j->eta_basis), "now");
}

static void test_a_strict_order_plans_nothing_past_the_first_job_that_waits(void **state)
{
    (void)state;
    /* fifo_strict: job 3 fits the 4 free GPUs now, but the pass stops at
     * job 2 (8 GPUs, free at 1000 s): job 3 starts after job 2, at 1100 s */
    add_node(1, 8);
    run_job(1, 1, 0, 4, 0)->max_runtime_s = 1000;
    pend(2, 8)->max_runtime_s = 100;
    pend(3, 2)->max_runtime_s = 50;
    plan.strict = true;
    plan_ids((int64_t[]){2, 3}, 2, 10 * S);
    assert_int_equal(cluster_find_job(&c, 2)->eta_start_ms, 1000 * S);
    assert_int_equal(cluster_find_job(&c, 3)->eta_start_ms, 1100 * S);
    /* not strict: job 3 goes now */
    plan.strict = false;
    plan_ids((int64_t[]){2, 3}, 2, 10 * S);
    assert_int_equal(cluster_find_job(&c, 3)->eta_start_ms, 10 * S);
}

static void test_learned_project_estimate_is_used_and_named(void **state)
{
    (void)state;
    add_node(1, 1);
    for (int r = 60; r <= 180; r += 60)
        assert_int_equal(eta_estimator_observe(&est, "vision", "default", r * S), 0);
    struct job *running = run_job(1, 1, 0, 1, 0);
    snprintf(running->project, sizeof running->project, "vision");
    pend(2, 1);
    /* at 90 s the runs longer than that are 120 and 180 s; job 1's
     * quantile (0.618) picks the second */
    plan_ids((int64_t[]){2}, 1, 90 * S);
    struct job *j = cluster_find_job(&c, 2);
    assert_int_equal(j->eta_start_ms, 180 * S);
    assert_string_equal(eta_basis_name(j->eta_basis), "estimate:project");
}

static void test_queue_estimate_stands_in_for_a_project_with_too_few_samples(void **state)
{
    (void)state;
    add_node(1, 1);
    assert_int_equal(eta_estimator_observe(&est, "tiny", "batch", 1000 * S), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(eta_estimator_observe(&est, "other", "batch", 40 * S), 0);
    struct job *running = run_job(1, 1, 0, 1, 0);
    snprintf(running->project, sizeof running->project, "tiny");
    snprintf(running->queue, sizeof running->queue, "batch");
    pend(2, 1);
    plan_ids((int64_t[]){2}, 1, 0);
    /* queue batch: 40, 40, 40, 1000; job 1's quantile (0.618) picks 40 s,
     * where tiny's own single run of 1000 s would not be trusted */
    struct job *j = cluster_find_job(&c, 2);
    assert_int_equal(j->eta_start_ms, 40 * S);
    assert_string_equal(eta_basis_name(j->eta_basis), "estimate:queue");
}

static void test_default_runtime_when_nothing_is_known(void **state)
{
    (void)state;
    add_node(1, 1);
    run_job(1, 1, 0, 1, 0);
    pend(2, 1);
    plan_ids((int64_t[]){2}, 1, 0);
    struct job *j = cluster_find_job(&c, 2);
    assert_int_equal(j->eta_start_ms, ETA_DEFAULT_RUNTIME_MS);
    assert_string_equal(eta_basis_name(j->eta_basis), "default");
}

static void test_a_job_past_its_est_runtime_falls_back_to_max_runtime(void **state)
{
    (void)state;
    add_node(1, 1);
    struct job *r = run_job(1, 1, 0, 1, 0);
    r->est_runtime_s = 50;
    r->max_runtime_s = 500;
    pend(2, 1);
    plan_ids((int64_t[]){2}, 1, 100 * S);
    assert_int_equal(cluster_find_job(&c, 2)->eta_start_ms, 500 * S);
}

static void test_estimator_keeps_only_the_latest_samples(void **state)
{
    (void)state;
    assert_int_equal(eta_estimator_observe(&est, "p", "q", 1000000 * S), 0);
    for (int i = 0; i < ETA_SAMPLES; i++)
        assert_int_equal(eta_estimator_observe(&est, "p", "q", 10 * S), 0);
    struct job j = fx_job(1, 1);
    snprintf(j.project, sizeof j.project, "p");
    enum eta_basis b;
    assert_int_equal(eta_estimator_remaining_ms(&est, &j, 0, &b), 10 * S);
    assert_int_equal(b, ETA_BASIS_ESTIMATE_PROJECT);
    /* run longer than any sample: taken to run as long again */
    assert_int_equal(eta_estimator_remaining_ms(&est, &j, 30 * S, &b), 30 * S);
}

static void test_reserved_job_gets_its_reservation_through_a_pass(void **state)
{
    (void)state;
    add_node(1, 4);
    run_job(1, 1, 0, 3, 0)->max_runtime_s = 100;
    pend(2, 4);
    pend(3, 1)->max_runtime_s = 500; /* would outlast the reservation: stays pending */
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    struct scheduler s;
    sched_init(&s, &cfg);
    struct action_list out;
    action_list_init(&out);
    assert_int_equal(sched_pass(&s, &c, 10 * S, &out), 0);
    assert_int_equal(s.norder, 2);
    assert_int_equal(eta_plan_run(&plan, &c, &est, s.order, s.norder, 10 * S), 0);
    struct job *j2 = cluster_find_job(&c, 2), *j3 = cluster_find_job(&c, 3);
    assert_int_equal(j2->eta_start_ms, 100 * S);
    assert_string_equal(eta_basis_name(j2->eta_basis), "reservation");
    /* the plan put job 2 on all four GPUs from 100 s to 100 s + an hour */
    assert_int_equal(j3->eta_start_ms, 100 * S + ETA_DEFAULT_RUNTIME_MS);
    assert_string_equal(eta_basis_name(j3->eta_basis), "default");
    action_list_release(&out);
    sched_release(&s);
}

static void test_pending_jobs_outside_the_order_have_no_eta(void **state)
{
    (void)state;
    add_node(1, 1);
    struct job *held = pend(1, 1);
    held->eta_start_ms = 123; /* from an earlier plan */
    held->eta_basis = ETA_BASIS_NOW;
    plan_ids(NULL, 0, 0);
    held = cluster_find_job(&c, 1);
    assert_int_equal(held->eta_start_ms, 0);
    assert_int_equal(held->eta_basis, ETA_BASIS_UNKNOWN);
}

/* --- queue caps and retry backoff --- */

static struct queue_set queues;

/* The built-in queues and "capped", which has the given caps (0: none). */
static void use_capped_queue(int max_jobs, int max_gpus)
{
    queue_set_defaults(&queues);
    struct queue_config *q = &queues.queues[queues.count++];
    *q = queues.queues[0];
    snprintf(q->name, sizeof q->name, "capped");
    q->max_running_jobs = max_jobs;
    q->max_running_gpus = max_gpus;
    eta_plan_set_queues(&plan, &queues);
}

static struct job *in_capped(struct job *job)
{
    snprintf(job->queue, sizeof job->queue, "capped");
    return job;
}

static void test_a_queue_capped_at_one_running_job_starts_its_second_when_the_first_ends(
    void **state)
{
    (void)state;
    use_capped_queue(1, 0);
    add_node(1, 8); /* GPUs to spare: only the cap holds jobs back */
    in_capped(run_job(1, 1, 0, 1, 0))->max_runtime_s = 100;
    in_capped(pend(2, 1))->max_runtime_s = 50;
    in_capped(pend(3, 1));
    pend(4, 1); /* the default queue has no cap */
    plan_ids((int64_t[]){2, 3, 4}, 3, 10 * S);
    assert_int_equal(cluster_find_job(&c, 2)->eta_start_ms, 100 * S);
    assert_string_equal(eta_basis_name(cluster_find_job(&c, 2)->eta_basis), "max_runtime");
    assert_int_equal(cluster_find_job(&c, 3)->eta_start_ms, 150 * S);
    assert_int_equal(cluster_find_job(&c, 4)->eta_start_ms, 10 * S);
}

static void test_a_gpu_cap_lets_a_smaller_job_by_and_holds_a_bigger_one(void **state)
{
    (void)state;
    use_capped_queue(0, 4);
    add_node(1, 8);
    in_capped(run_job(1, 1, 0, 3, 0))->max_runtime_s = 100;
    in_capped(pend(2, 2))->max_runtime_s = 50;  /* 3 + 2 > 4 */
    in_capped(pend(3, 1))->max_runtime_s = 200; /* 3 + 1 = 4: now */
    in_capped(pend(4, 2))->max_runtime_s = 10;
    plan_ids((int64_t[]){2, 3, 4}, 3, 10 * S);
    assert_int_equal(cluster_find_job(&c, 3)->eta_start_ms, 10 * S);
    /* at 100 s job 1's three GPUs go back to the queue: 1 + 2 = 3 */
    assert_int_equal(cluster_find_job(&c, 2)->eta_start_ms, 100 * S);
    /* then 3 + 2 > 4 until job 2 ends at 150 s */
    assert_int_equal(cluster_find_job(&c, 4)->eta_start_ms, 150 * S);
}

static void test_a_strict_order_passes_over_a_job_its_queues_cap_holds(void **state)
{
    (void)state;
    /* as the pass does: the capped job does not block the strict order */
    use_capped_queue(1, 0);
    add_node(1, 8);
    in_capped(run_job(1, 1, 0, 1, 0))->max_runtime_s = 100;
    in_capped(pend(2, 1))->max_runtime_s = 50;
    pend(3, 1);
    plan.strict = true;
    plan_ids((int64_t[]){2, 3}, 2, 10 * S);
    assert_int_equal(cluster_find_job(&c, 2)->eta_start_ms, 100 * S);
    assert_int_equal(cluster_find_job(&c, 3)->eta_start_ms, 10 * S);
}

static void test_a_capped_job_of_a_gang_or_gpu_model_waits_for_its_queue_too(void **state)
{
    (void)state;
    use_capped_queue(1, 0);
    add_node(1, 8);
    in_capped(run_job(1, 1, 0, 1, 0))->max_runtime_s = 100;
    struct job *j = in_capped(pend(2, 2));
    snprintf(j->gpu_model, sizeof j->gpu_model, "H200"); /* checked on its own */
    plan_ids((int64_t[]){2}, 1, 10 * S);
    assert_int_equal(cluster_find_job(&c, 2)->eta_start_ms, 100 * S);
}

static void test_a_reservation_counts_against_its_queue_from_its_start(void **state)
{
    (void)state;
    use_capped_queue(1, 0);
    add_node(1, 4);
    add_node(2, 4);
    run_job(1, 1, 0, 4, 0)->max_runtime_s = 100;
    struct job *r = in_capped(pend(2, 4));
    r->max_runtime_s = 300;
    r->reserved_start_ms = 100 * S;
    r->reserved_node_id = 1;
    in_capped(pend(3, 1)); /* node 2 is free, and the queue has room until 100 s */
    in_capped(pend(4, 1))->max_runtime_s = 10;
    plan_ids((int64_t[]){2, 3, 4}, 3, 10 * S);
    assert_int_equal(cluster_find_job(&c, 2)->eta_start_ms, 100 * S);
    assert_int_equal(cluster_find_job(&c, 3)->eta_start_ms, 10 * S);
    /* job 3 holds the queue for an hour (the default); job 2 from 100 s to 400 s */
    assert_int_equal(cluster_find_job(&c, 4)->eta_start_ms, 10 * S + ETA_DEFAULT_RUNTIME_MS);
}

static void test_a_reservation_of_unknown_start_keeps_each_gpu_its_node_frees(void **state)
{
    (void)state;
    add_node(1, 4);
    run_job(1, 1, 0, 1, 0)->max_runtime_s = 50;
    run_job(2, 1, 1, 1, 0)->max_runtime_s = 100;
    struct job *r = pend(10, 4);
    r->reserved_node_id = 1; /* start unknown to the scheduler (reserved_start_ms 0) */
    pend(11, 1)->max_runtime_s = 500;
    plan_ids((int64_t[]){10, 11}, 2, 10 * S);
    assert_int_equal(cluster_find_job(&c, 10)->eta_start_ms, 100 * S);
    assert_string_equal(eta_basis_name(cluster_find_job(&c, 10)->eta_basis), "max_runtime");
    /* neither node 1's free GPUs now nor job 1's at 50 s: all are job 10's */
    assert_int_equal(cluster_find_job(&c, 11)->eta_start_ms, 100 * S + ETA_DEFAULT_RUNTIME_MS);
}

static void test_a_job_in_retry_backoff_starts_no_sooner_than_its_not_before(void **state)
{
    (void)state;
    add_node(1, 4);
    add_node(2, 4);
    run_job(1, 2, 0, 4, 0)->max_runtime_s = 100;
    pend(2, 2)->not_before_ms = 50 * S; /* GPUs free on node 1 now */
    pend(3, 8)->not_before_ms = 20 * S; /* too big for any node: no ETA */
    struct job *big = pend(4, 4);
    big->not_before_ms = 30 * S;
    big->max_runtime_s = 10;
    pend(5, 4); /* in the order: takes node 1 now, so job 2 waits for node 2 */
    plan_ids((int64_t[]){5}, 1, 10 * S);
    assert_int_equal(cluster_find_job(&c, 5)->eta_start_ms, 10 * S);
    /* jobs in backoff come after the order, among themselves by id: job 2
     * takes node 2 when job 1 ends, job 4 waits for node 1 (job 5 runs an hour) */
    assert_int_equal(cluster_find_job(&c, 2)->eta_start_ms, 100 * S);
    assert_int_equal(cluster_find_job(&c, 4)->eta_start_ms, 10 * S + ETA_DEFAULT_RUNTIME_MS);
    assert_int_equal(cluster_find_job(&c, 3)->eta_basis, ETA_BASIS_UNKNOWN);
}

static void test_a_free_job_in_backoff_gets_its_not_before(void **state)
{
    (void)state;
    add_node(1, 4);
    pend(1, 2)->not_before_ms = 50 * S;
    plan_ids(NULL, 0, 10 * S);
    assert_int_equal(cluster_find_job(&c, 1)->eta_start_ms, 50 * S);
    assert_string_equal(eta_basis_name(cluster_find_job(&c, 1)->eta_basis), "now");
}

/* A pass with these caps and a 30 s retry backoff, then the plan on its order. */
static void pass_then_plan(struct scheduler *s, int64_t now_ms)
{
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    cfg.queues = &queues;
    cfg.retry_backoff_ms = 30 * S;
    sched_init(s, &cfg);
    struct action_list out;
    action_list_init(&out);
    assert_true(sched_pass(s, &c, now_ms, &out) >= 0);
    assert_int_equal(eta_plan_run(&plan, &c, &est, s->order, s->norder, now_ms), 0);
    action_list_release(&out);
}

static void test_through_a_pass_a_capped_job_waits_for_its_queue_and_a_failed_one_for_its_backoff(
    void **state)
{
    (void)state;
    use_capped_queue(1, 0);
    add_node(1, 8);
    in_capped(run_job(1, 1, 0, 1, 0))->max_runtime_s = 100;
    in_capped(pend(2, 1));
    struct job *failed = pend(3, 1);
    failed->attempt = 1;
    failed->last_failure_ms = 5 * S; /* next attempt at 35 s */
    struct job *held = pend(4, 1);
    held->attempt = 1;
    held->last_failure_ms = 5 * S;
    held->on_hold = true;
    struct scheduler s;
    pass_then_plan(&s, 10 * S);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_PENDING); /* the pass kept the cap */
    assert_int_equal(cluster_find_job(&c, 2)->eta_start_ms, 100 * S);
    assert_int_equal(cluster_find_job(&c, 3)->state, JOB_PENDING);
    assert_int_equal(cluster_find_job(&c, 3)->eta_start_ms, 35 * S);
    assert_int_equal(cluster_find_job(&c, 4)->eta_basis, ETA_BASIS_UNKNOWN);
    sched_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_next_pending_job_starts_when_the_running_job_ends,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_gpus_give_an_eta_of_now, setup, teardown),
        cmocka_unit_test_setup_teardown(test_jobs_ahead_in_the_queue_push_a_job_back, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_job_takes_the_node_whose_gpus_free_first, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_gang_job_waits_for_a_split_over_two_nodes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_job_no_node_can_hold_has_no_eta, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_gpu_model_waits_for_its_own_nodes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_gpu_model_job_gets_now_when_its_gpus_free_now, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_jobs_of_one_model_wait_in_turn_while_other_shapes_pass_them, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_strict_order_plans_nothing_past_the_first_job_that_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_learned_project_estimate_is_used_and_named, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_queue_estimate_stands_in_for_a_project_with_too_few_samples, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_runtime_when_nothing_is_known, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_job_past_its_est_runtime_falls_back_to_max_runtime,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_estimator_keeps_only_the_latest_samples, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reserved_job_gets_its_reservation_through_a_pass,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_pending_jobs_outside_the_order_have_no_eta, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_a_queue_capped_at_one_running_job_starts_its_second_when_the_first_ends, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_a_gpu_cap_lets_a_smaller_job_by_and_holds_a_bigger_one,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_strict_order_passes_over_a_job_its_queues_cap_holds,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_capped_job_of_a_gang_or_gpu_model_waits_for_its_queue_too, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_reservation_counts_against_its_queue_from_its_start,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_reservation_of_unknown_start_keeps_each_gpu_its_node_frees, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_job_in_retry_backoff_starts_no_sooner_than_its_not_before, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_free_job_in_backoff_gets_its_not_before, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_through_a_pass_a_capped_job_waits_for_its_queue_and_a_failed_one_for_its_backoff,
            setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
