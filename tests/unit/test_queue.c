/* Unit tests for queues: admission, escalation and caps (src/core/queue.c, sched.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "common/tide_err.h"
#include "core/job_spec.h"
#include "core/queue.h"
#include "core/reconcile.h"
#include "core/sched.h"

#include "cluster_fixture.h"

#define HOUR_MS (3600LL * 1000)

static struct queue_set qs;
static struct cluster c;
static struct scheduler s;
static struct action_list out;

static int setup(void **state)
{
    (void)state;
    queue_set_defaults(&qs);
    struct queue_config *training = (struct queue_config *)queue_find(&qs, "training");
    training->default_runtime_s = 3600;
    training->max_runtime_s = 7200;
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    cfg.queues = &qs;
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

/* A job spec through job_spec and then queue admission. */
struct admitted {
    int rc;
    struct tide_err err;
    struct job job;
    json_t *spec;
};

static struct admitted admit(const char *body)
{
    struct admitted a;
    memset(&a, 0, sizeof a);
    json_error_t jerr;
    json_t *given = json_loads(body, 0, &jerr);
    assert_non_null(given);
    assert_int_equal(job_spec_from_object(given, &a.spec, &a.job, &a.err), 0);
    a.rc = queue_admit(&qs, given, a.spec, &a.job, &a.err);
    json_decref(given);
    return a;
}

static void admitted_release(struct admitted *a)
{
    json_decref(a->spec);
}

static json_int_t spec_int(const struct admitted *a, const char *key)
{
    json_t *v = json_object_get(a->spec, key);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

static void test_job_naming_no_queue_goes_to_the_default_queue(void **state)
{
    (void)state;
    struct admitted a = admit("{\"command\": [\"true\"]}");
    assert_int_equal(a.rc, 0);
    assert_string_equal(a.job.queue, "default");
    assert_string_equal(json_string_value(json_object_get(a.spec, "queue")), "default");
    admitted_release(&a);
}

static void test_admission_fills_priority_from_the_queue_when_left_out(void **state)
{
    (void)state;
    struct admitted a = admit("{\"command\": [\"true\"], \"queue\": \"inference\"}");
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.job.priority, 150);
    assert_int_equal(spec_int(&a, "priority"), 150);
    admitted_release(&a);
}

static void test_admission_keeps_a_priority_the_spec_gave(void **state)
{
    (void)state;
    struct admitted a = admit("{\"command\": [\"true\"], \"queue\": \"inference\", \"priority\": 190}");
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.job.priority, 190);
    assert_int_equal(spec_int(&a, "priority"), 190);
    admitted_release(&a);
}

static void test_admission_fills_max_runtime_from_the_queue_when_left_out(void **state)
{
    (void)state;
    struct admitted a = admit("{\"command\": [\"true\"], \"queue\": \"training\"}");
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.job.max_runtime_s, 3600);
    assert_int_equal(spec_int(&a, "max_runtime"), 3600);
    admitted_release(&a);
}

static void test_admission_keeps_a_max_runtime_the_spec_gave(void **state)
{
    (void)state;
    struct admitted a =
        admit("{\"command\": [\"true\"], \"queue\": \"training\", \"max_runtime\": 600}");
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.job.max_runtime_s, 600);
    assert_int_equal(spec_int(&a, "max_runtime"), 600);
    admitted_release(&a);
}

static void test_admission_fills_preemptible_from_the_queue_when_left_out(void **state)
{
    (void)state;
    struct admitted a = admit("{\"command\": [\"true\"], \"queue\": \"batch\"}");
    assert_int_equal(a.rc, 0);
    assert_true(a.job.preemptible);
    assert_true(json_is_true(json_object_get(a.spec, "preemptible")));
    admitted_release(&a);
}

static void test_admission_keeps_preemptible_false_given_in_a_preemptible_queue(void **state)
{
    (void)state;
    struct admitted a =
        admit("{\"command\": [\"true\"], \"queue\": \"batch\", \"preemptible\": false}");
    assert_int_equal(a.rc, 0);
    assert_false(a.job.preemptible);
    assert_true(json_is_false(json_object_get(a.spec, "preemptible")));
    admitted_release(&a);
}

static void test_unknown_queue_is_refused_naming_the_queue_field(void **state)
{
    (void)state;
    struct admitted a = admit("{\"command\": [\"true\"], \"queue\": \"gold\"}");
    assert_int_equal(a.rc, TIDE_EINVAL);
    assert_string_equal(a.err.field, "queue");
    assert_non_null(strstr(a.err.message, "gold"));
    assert_non_null(strstr(a.err.message, "training")); /* says what is known */
    admitted_release(&a);
}

static void test_priority_outside_the_queue_range_is_refused_naming_priority(void **state)
{
    (void)state;
    struct admitted a = admit("{\"command\": [\"true\"], \"queue\": \"inference\", \"priority\": 50}");
    assert_int_equal(a.rc, TIDE_EINVAL);
    assert_string_equal(a.err.field, "priority");
    assert_non_null(strstr(a.err.message, "100 to 200"));
    admitted_release(&a);
}

static void test_max_runtime_above_the_queue_maximum_is_refused_naming_max_runtime(void **state)
{
    (void)state;
    struct admitted a =
        admit("{\"command\": [\"true\"], \"queue\": \"training\", \"max_runtime\": 7201}");
    assert_int_equal(a.rc, TIDE_EINVAL);
    assert_string_equal(a.err.field, "max_runtime");
    assert_non_null(strstr(a.err.message, "7200"));
    admitted_release(&a);
}

static void test_max_runtime_equal_to_the_queue_maximum_is_admitted(void **state)
{
    (void)state;
    struct admitted a =
        admit("{\"command\": [\"true\"], \"queue\": \"training\", \"max_runtime\": 7200}");
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.job.max_runtime_s, 7200);
    admitted_release(&a);
}

static void test_effective_priority_rises_by_escalation_per_max_wait_waited(void **state)
{
    (void)state;
    const struct queue_config *training = queue_find(&qs, "training"); /* 3600 s, +100 */
    struct job j = fx_job(1, 1);
    j.priority = 50;
    j.submit_ms = 1000;
    assert_int_equal(queue_effective_priority(training, &j, 1000 + HOUR_MS - 1), 50);
    assert_int_equal(queue_effective_priority(training, &j, 1000 + HOUR_MS), 150);
    assert_int_equal(queue_effective_priority(training, &j, 1000 + 2 * HOUR_MS + 59000), 250);
}

static void test_queue_without_max_wait_never_escalates(void **state)
{
    (void)state;
    struct job j = fx_job(1, 1);
    j.priority = 7;
    assert_int_equal(queue_effective_priority(queue_find(&qs, "default"), &j, 100 * HOUR_MS), 7);
}

static void test_job_waiting_past_max_wait_overtakes_a_higher_priority_one(void **state)
{
    (void)state;
    struct node n = fx_h200_node(1, 1);
    assert_non_null(cluster_put_node(&c, &n));
    struct job waited = fx_job(1, 1), urgent = fx_job(2, 1);
    snprintf(waited.queue, sizeof waited.queue, "training");
    waited.priority = 50;
    waited.submit_ms = 0;
    urgent.priority = 120; /* default queue: never escalated */
    urgent.submit_ms = 2 * HOUR_MS;
    assert_non_null(cluster_add_job(&c, &waited));
    assert_non_null(cluster_add_job(&c, &urgent));
    assert_int_equal(sched_pass(&s, &c, 2 * HOUR_MS + 1000, &out), 1);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_STARTING);
    assert_int_equal(cluster_find_job(&c, 1)->effective_priority, 250);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_PENDING);
}

/* A pending job of the training queue (max_wait 1 h, +100), preemptible. */
static struct job *add_training(int64_t id, int priority, int64_t submit_ms)
{
    struct job j = fx_job(id, 1);
    snprintf(j.queue, sizeof j.queue, "training");
    j.priority = priority;
    j.submit_ms = submit_ms;
    j.preemptible = true;
    return cluster_add_job(&c, &j);
}

/* Node 1's agent reports every job there running, as started. */
static void heartbeat_all_running(int64_t now_ms)
{
    struct task_report r[4];
    size_t n = 0;
    memset(r, 0, sizeof r);
    for (size_t i = 0; i < c.njobs && n < 4; i++)
        if (job_state_is_on_node(c.jobs[i].state)) {
            r[n].job_id = c.jobs[i].id;
            r[n].attempt = c.jobs[i].attempt;
            r[n++].exit_code = -1;
        }
    assert_int_equal(reconcile_heartbeat(&c, cluster_find_node(&c, 1), r, n, now_ms, &out), 0);
}

static void test_a_requeued_victim_does_not_preempt_its_preemptor_by_escalation(void **state)
{
    (void)state;
    struct node n = fx_h200_node(1, 1);
    assert_non_null(cluster_put_node(&c, &n));
    assert_non_null(add_training(1, 0, 0));
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 1);
    heartbeat_all_running(1500);
    assert_non_null(add_training(2, 50, 2000));
    sched_pass(&s, &c, 3000, &out);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_PREEMPTED);
    /* job 1 stops; job 2 starts and runs */
    struct task_report stopped = {.job_id = 1, .attempt = 1, .exited = true, .exit_code = 0};
    assert_int_equal(reconcile_heartbeat(&c, cluster_find_node(&c, 1), &stopped, 1, 4000, &out), 0);
    assert_int_equal(sched_pass(&s, &c, 5000, &out), 1);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_STARTING);
    heartbeat_all_running(5500);
    /* An hour after its submit job 1 is escalated to 100, above the 50 job
     * 2 started with; preempting it back would requeue job 2 as old and
     * escalated, to preempt job 1 in turn, and so on. */
    action_list_clear(&out);
    sched_pass(&s, &c, HOUR_MS + 1000, &out);
    assert_int_equal(cluster_find_job(&c, 1)->effective_priority, 100);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_RUNNING);
}

static void test_job_waiting_less_than_max_wait_does_not_overtake(void **state)
{
    (void)state;
    struct node n = fx_h200_node(1, 1);
    assert_non_null(cluster_put_node(&c, &n));
    struct job waited = fx_job(1, 1), urgent = fx_job(2, 1);
    snprintf(waited.queue, sizeof waited.queue, "training");
    waited.priority = 50;
    waited.submit_ms = 0;
    urgent.priority = 120;
    urgent.submit_ms = 1000;
    assert_non_null(cluster_add_job(&c, &waited));
    assert_non_null(cluster_add_job(&c, &urgent));
    assert_int_equal(sched_pass(&s, &c, HOUR_MS / 2, &out), 1);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_STARTING);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_PENDING);
}

static void test_a_job_finds_its_queue_again_after_the_queues_change_places(void **state)
{
    (void)state;
    struct job j = fx_job(1, 1);
    snprintf(j.queue, sizeof j.queue, "render");
    const struct queue_config *q = queue_of_job_remember(&qs, &j);
    assert_non_null(q);
    assert_string_equal(q->name, "render");
    assert_int_not_equal(j.queue_slot, 0);
    /* The remembered place now holds another queue: the name still decides. */
    struct queue_config first = qs.queues[0];
    qs.queues[0] = *q;
    qs.queues[q - qs.queues] = first;
    const struct queue_config *again = queue_of_job_remember(&qs, &j);
    assert_non_null(again);
    assert_string_equal(again->name, "render");
    assert_ptr_equal(again, &qs.queues[0]);
    /* And a job moved to a queue that does not exist finds none. */
    snprintf(j.queue, sizeof j.queue, "nosuch");
    assert_null(queue_of_job_remember(&qs, &j));
    assert_int_equal(j.queue_slot, 0);
}

static void test_job_waits_at_the_queue_cap_on_running_jobs_naming_the_cap(void **state)
{
    (void)state;
    ((struct queue_config *)queue_find(&qs, "render"))->max_running_jobs = 1;
    struct node n = fx_h200_node(1, 4);
    assert_non_null(cluster_put_node(&c, &n));
    struct job running = fx_job(1, 1), waiting = fx_job(2, 1);
    snprintf(running.queue, sizeof running.queue, "render");
    snprintf(waiting.queue, sizeof waiting.queue, "render");
    assert_non_null(fx_add_running(&c, running, 1, 0));
    assert_non_null(cluster_add_job(&c, &waiting));
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 0);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_PENDING);
    assert_string_equal(fx_reason(cluster_find_job(&c, 2)),
                        "queue render is at its cap of 1 running jobs");
}

static void test_queue_cap_on_running_jobs_counts_jobs_started_in_the_same_pass(void **state)
{
    (void)state;
    ((struct queue_config *)queue_find(&qs, "render"))->max_running_jobs = 1;
    struct node n = fx_h200_node(1, 4);
    assert_non_null(cluster_put_node(&c, &n));
    for (int id = 1; id <= 2; id++) {
        struct job j = fx_job(id, 1);
        snprintf(j.queue, sizeof j.queue, "render");
        assert_non_null(cluster_add_job(&c, &j));
    }
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 1);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_STARTING);
    assert_non_null(strstr(fx_reason(cluster_find_job(&c, 2)), "cap of 1 running jobs"));
}

static void test_job_waits_when_it_would_pass_the_queue_gpu_cap(void **state)
{
    (void)state;
    ((struct queue_config *)queue_find(&qs, "render"))->max_running_gpus = 4;
    struct node n = fx_h200_node(1, 8);
    assert_non_null(cluster_put_node(&c, &n));
    struct job running = fx_job(1, 2), waiting = fx_job(2, 3);
    snprintf(running.queue, sizeof running.queue, "render");
    snprintf(waiting.queue, sizeof waiting.queue, "render");
    assert_non_null(fx_add_running(&c, running, 1, 0));
    assert_non_null(cluster_add_job(&c, &waiting));
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 0);
    assert_string_equal(fx_reason(cluster_find_job(&c, 2)),
                        "queue render would pass its cap of 4 GPUs (2 in use)");
}

static void test_job_that_stays_within_the_queue_gpu_cap_runs(void **state)
{
    (void)state;
    ((struct queue_config *)queue_find(&qs, "render"))->max_running_gpus = 4;
    struct node n = fx_h200_node(1, 8);
    assert_non_null(cluster_put_node(&c, &n));
    struct job running = fx_job(1, 2), waiting = fx_job(2, 2);
    snprintf(running.queue, sizeof running.queue, "render");
    snprintf(waiting.queue, sizeof waiting.queue, "render");
    assert_non_null(fx_add_running(&c, running, 1, 0));
    assert_non_null(cluster_add_job(&c, &waiting));
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 1);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_STARTING);
}

static void test_queue_cap_does_not_hold_jobs_of_other_queues(void **state)
{
    (void)state;
    ((struct queue_config *)queue_find(&qs, "render"))->max_running_jobs = 1;
    struct node n = fx_h200_node(1, 4);
    assert_non_null(cluster_put_node(&c, &n));
    struct job running = fx_job(1, 1);
    snprintf(running.queue, sizeof running.queue, "render");
    assert_non_null(fx_add_running(&c, running, 1, 0));
    struct job other = fx_job(2, 1); /* default queue */
    assert_non_null(cluster_add_job(&c, &other));
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 1);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_STARTING);
}

static void test_a_queue_limited_to_pools_only_uses_their_nodes(void **state)
{
    (void)state;
    struct queue_config *render = (struct queue_config *)queue_find(&qs, "render");
    render->npools = 1;
    snprintf(render->pools[0], sizeof render->pools[0], "cheap");
    struct node by_hand = fx_h200_node(1, 4), pooled = fx_h200_node(2, 4);
    snprintf(pooled.pool, sizeof pooled.pool, "cheap");
    assert_non_null(cluster_put_node(&c, &by_hand));
    assert_non_null(cluster_put_node(&c, &pooled));
    struct admitted a = admit("{\"command\": [\"true\"], \"queue\": \"render\", \"gpus\": 2}");
    assert_int_equal(a.rc, 0);
    assert_ptr_equal(a.job.rules, render);
    a.job.id = 1;
    struct admitted b = admit("{\"command\": [\"true\"], \"queue\": \"render\", \"gpus\": 4}");
    b.job.id = 2;
    b.job.submit_ms = 1;
    assert_non_null(cluster_add_job(&c, &a.job));
    assert_non_null(cluster_add_job(&c, &b.job));
    assert_int_equal(sched_pass(&s, &c, 0, &out), 1);
    assert_int_equal(fx_find(&out, ACTION_START, 1)->node_id, 2);
    /* Node 1 has 4 free GPUs, but not in the queue's pool: job 2 waits. */
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_PENDING);
    assert_true(queue_allows_pool(NULL, ""));
    assert_false(queue_allows_pool(render, ""));
    admitted_release(&a);
    admitted_release(&b);
}

static void test_round_robin_takes_turns_between_queues_of_equal_priority(void **state)
{
    (void)state;
    s.cfg.queue_round_robin = true;
    struct node n = fx_h200_node(1, 2);
    assert_non_null(cluster_put_node(&c, &n));
    const char *bodies[] = {
        "{\"command\": [\"t\"], \"queue\": \"training\", \"priority\": 50, \"gpus\": 1}",
        "{\"command\": [\"t\"], \"queue\": \"training\", \"priority\": 50, \"gpus\": 1}",
        "{\"command\": [\"t\"], \"queue\": \"training\", \"priority\": 50, \"gpus\": 1}",
        "{\"command\": [\"r\"], \"queue\": \"render\", \"priority\": 50, \"gpus\": 1}",
    };
    for (int i = 0; i < 4; i++) {
        struct admitted a = admit(bodies[i]);
        assert_int_equal(a.rc, 0);
        a.job.id = i + 1;
        a.job.submit_ms = i;
        assert_non_null(cluster_add_job(&c, &a.job));
        admitted_release(&a);
    }
    assert_int_equal(sched_pass(&s, &c, 10, &out), 2);
    assert_non_null(fx_find(&out, ACTION_START, 1)); /* training's first */
    assert_non_null(fx_find(&out, ACTION_START, 4)); /* render's first, before training's second */
    assert_null(fx_find(&out, ACTION_START, 2));
}

static void test_without_round_robin_equal_priorities_stay_fifo(void **state)
{
    (void)state;
    struct node n = fx_h200_node(1, 2);
    assert_non_null(cluster_put_node(&c, &n));
    for (int i = 0; i < 3; i++) {
        struct admitted a = admit(i < 2 ? "{\"command\": [\"t\"], \"queue\": \"training\", \"priority\": 50}"
                                        : "{\"command\": [\"r\"], \"queue\": \"render\", \"priority\": 50}");
        a.job.id = i + 1;
        a.job.submit_ms = i;
        assert_non_null(cluster_add_job(&c, &a.job));
        admitted_release(&a);
    }
    assert_int_equal(sched_pass(&s, &c, 10, &out), 2);
    assert_non_null(fx_find(&out, ACTION_START, 2));
    assert_null(fx_find(&out, ACTION_START, 3));
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_job_naming_no_queue_goes_to_the_default_queue),
        T(test_admission_fills_priority_from_the_queue_when_left_out),
        T(test_admission_keeps_a_priority_the_spec_gave),
        T(test_admission_fills_max_runtime_from_the_queue_when_left_out),
        T(test_admission_keeps_a_max_runtime_the_spec_gave),
        T(test_admission_fills_preemptible_from_the_queue_when_left_out),
        T(test_admission_keeps_preemptible_false_given_in_a_preemptible_queue),
        T(test_unknown_queue_is_refused_naming_the_queue_field),
        T(test_priority_outside_the_queue_range_is_refused_naming_priority),
        T(test_max_runtime_above_the_queue_maximum_is_refused_naming_max_runtime),
        T(test_max_runtime_equal_to_the_queue_maximum_is_admitted),
        T(test_effective_priority_rises_by_escalation_per_max_wait_waited),
        T(test_queue_without_max_wait_never_escalates),
        T(test_job_waiting_past_max_wait_overtakes_a_higher_priority_one),
        T(test_a_requeued_victim_does_not_preempt_its_preemptor_by_escalation),
        T(test_job_waiting_less_than_max_wait_does_not_overtake),
        T(test_a_job_finds_its_queue_again_after_the_queues_change_places),
        T(test_job_waits_at_the_queue_cap_on_running_jobs_naming_the_cap),
        T(test_queue_cap_on_running_jobs_counts_jobs_started_in_the_same_pass),
        T(test_job_waits_when_it_would_pass_the_queue_gpu_cap),
        T(test_job_that_stays_within_the_queue_gpu_cap_runs),
        T(test_queue_cap_does_not_hold_jobs_of_other_queues),
        T(test_a_queue_limited_to_pools_only_uses_their_nodes),
        T(test_round_robin_takes_turns_between_queues_of_equal_priority),
        T(test_without_round_robin_equal_priorities_stay_fifo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
