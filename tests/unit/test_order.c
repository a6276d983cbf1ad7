/* Unit tests for the ordering policies (src/core/order.c) and their use by sched_pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/order.h"
#include "core/order_keep.h"
#include "core/sched.h"

#include "cluster_fixture.h"

#define GPU_HOUR_MS (3600LL * 1000)

static struct cluster c;
static struct scheduler s;
static struct action_list out;

static int setup(void **state)
{
    (void)state;
    memset(&s, 0, sizeof s); /* sched_init only where a pass runs */
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

/* One free GPU, the scheduler ordering by policy, and these jobs: which starts? */
static int64_t first_started(const struct order_ops *policy, const struct job *jobs, int n)
{
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    cfg.order = policy;
    sched_init(&s, &cfg);
    struct node node = fx_h200_node(1, 1);
    assert_non_null(cluster_put_node(&c, &node));
    for (int i = 0; i < n; i++)
        assert_non_null(cluster_add_job(&c, &jobs[i]));
    assert_int_equal(sched_pass(&s, &c, 10 * GPU_HOUR_MS, &out), 1);
    const struct action *a = fx_find(&out, ACTION_START, 0);
    assert_non_null(a);
    return a->job_id;
}

static struct job job_at(int64_t id, int64_t submit_ms)
{
    struct job j = fx_job(id, 1);
    j.submit_ms = submit_ms;
    return j;
}

static void test_fifo_takes_the_earliest_submission_whatever_its_priority(void **state)
{
    (void)state;
    struct job jobs[2] = {job_at(1, 200), job_at(2, 100)};
    jobs[0].priority = 50;
    assert_int_equal(first_started(&order_fifo, jobs, 2), 2);
}

static void test_fifo_breaks_a_submit_time_tie_by_lower_id(void **state)
{
    (void)state;
    struct job a = job_at(7, 100), b = job_at(3, 100);
    assert_true(order_fifo.compare(&b, &a) < 0);
    assert_true(order_fifo.compare(&a, &b) > 0);
    assert_int_equal(order_fifo.compare(&a, &a), 0);
}

static void test_priority_takes_the_highest_priority_first(void **state)
{
    (void)state;
    struct job jobs[2] = {job_at(1, 100), job_at(2, 200)};
    jobs[1].priority = 5;
    assert_int_equal(first_started(&order_priority, jobs, 2), 2);
}

static void test_priority_compares_effective_priority(void **state)
{
    (void)state;
    struct job a = job_at(1, 100), b = job_at(2, 200);
    a.priority = 10;
    a.effective_priority = 10;
    b.priority = 0;
    b.effective_priority = 100; /* escalated */
    assert_true(order_priority.compare(&b, &a) < 0);
}

static void test_priority_falls_back_to_fifo_within_a_priority(void **state)
{
    (void)state;
    struct job jobs[2] = {job_at(1, 200), job_at(2, 100)};
    jobs[0].priority = jobs[1].priority = 3;
    assert_int_equal(first_started(&order_priority, jobs, 2), 2);
}

static void test_sjf_takes_the_shortest_estimate_first(void **state)
{
    (void)state;
    struct job jobs[3] = {job_at(1, 100), job_at(2, 200), job_at(3, 300)};
    jobs[0].est_runtime_s = 3600;
    jobs[1].est_runtime_s = 600;
    jobs[2].est_runtime_s = 60;
    assert_int_equal(first_started(&order_sjf, jobs, 3), 3);
}

static void test_sjf_puts_unknown_runtimes_after_every_known_one(void **state)
{
    (void)state;
    struct job unknown = job_at(1, 100), known = job_at(2, 200);
    known.est_runtime_s = 366LL * 24 * 3600;
    assert_true(order_sjf.compare(&known, &unknown) < 0);
    assert_true(order_sjf.compare(&unknown, &known) > 0);
}

static void test_sjf_falls_back_to_fifo_for_equal_estimates(void **state)
{
    (void)state;
    struct job a = job_at(1, 200), b = job_at(2, 100);
    a.est_runtime_s = b.est_runtime_s = 60;
    assert_true(order_sjf.compare(&b, &a) < 0);
}

static void test_las_takes_the_least_attained_band_first(void **state)
{
    (void)state;
    struct job jobs[2] = {job_at(1, 100), job_at(2, 200)};
    jobs[0].attained_gpu_ms = 5 * GPU_HOUR_MS;
    jobs[1].attained_gpu_ms = GPU_HOUR_MS / 2;
    assert_int_equal(first_started(&order_las, jobs, 2), 2);
}

static void test_las_keeps_fifo_within_a_band(void **state)
{
    (void)state;
    struct job jobs[2] = {job_at(1, 100), job_at(2, 200)};
    jobs[0].attained_gpu_ms = GPU_HOUR_MS - 1; /* more service, same band */
    jobs[1].attained_gpu_ms = 0;
    assert_int_equal(first_started(&order_las, jobs, 2), 1);
}

static void test_las_bands_break_at_1_10_and_100_gpu_hours(void **state)
{
    (void)state;
    static const int64_t edges[] = {GPU_HOUR_MS, 10 * GPU_HOUR_MS, 100 * GPU_HOUR_MS};
    for (int i = 0; i < 3; i++) {
        struct job below = job_at(2, 200), at = job_at(1, 100);
        below.attained_gpu_ms = edges[i] - 1;
        at.attained_gpu_ms = edges[i];
        assert_true(order_las.compare(&below, &at) < 0);
    }
    struct job far = job_at(1, 100), farther = job_at(2, 200);
    far.attained_gpu_ms = 100 * GPU_HOUR_MS;
    farther.attained_gpu_ms = 10000 * GPU_HOUR_MS; /* one last band */
    assert_true(order_las.compare(&far, &farther) < 0);
}

static void test_policies_are_found_by_name(void **state)
{
    (void)state;
    assert_ptr_equal(order_by_name("fifo"), &order_fifo);
    assert_ptr_equal(order_by_name("priority"), &order_priority);
    assert_ptr_equal(order_by_name("sjf"), &order_sjf);
    assert_ptr_equal(order_by_name("las"), &order_las);
    assert_ptr_equal(order_by_name("fifo_strict"), &order_fifo_strict);
    assert_ptr_equal(order_by_name("sjf_strict"), &order_sjf_strict);
    assert_false(order_fifo.strict);
    assert_true(order_sjf_strict.strict);
    assert_null(order_by_name("lifo"));
    assert_string_equal(order_names(), "fifo, priority, sjf, las, fifo_strict, sjf_strict");
}

/* --- order_keep: sorting pass after pass from the last pass's order --- */

static int compares; /* calls of by_sjf since the last reset */

static int by_sjf(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    compares++;
    return order_sjf.compare(*(const struct job *const *)a, *(const struct job *const *)b);
}

static unsigned next_random(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return *seed >> 16;
}

/* The pending jobs of c, in array order. */
static size_t pending_of(struct job **out)
{
    size_t n = 0;
    for (size_t i = 0; i < c.njobs; i++)
        if (c.jobs[i].state == JOB_PENDING)
            out[n++] = &c.jobs[i];
    return n;
}

static void assert_same_order(struct job *const *got, struct job *const *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i]->id, want[i]->id);
}

#define KEEP_JOBS 400

static void test_order_keep_sorts_as_qsort_does_while_jobs_come_go_and_change(void **state)
{
    (void)state;
    c.jobs_any_order = true; /* removals move the last job into the hole */
    struct order_keep k;
    order_keep_init(&k);
    static struct job *got[4 * KEEP_JOBS], *want[4 * KEEP_JOBS];
    unsigned seed = 7;
    int64_t next_id = 1;
    for (int round = 0; round < 300; round++) {
        /* Arrivals, starts, finishes, requeues and new estimates. */
        for (int a = (int)(next_random(&seed) % 6); a > 0 && c.njobs < 3 * KEEP_JOBS; a--) {
            struct job j = fx_job(next_id++, 1);
            j.est_runtime_s = next_random(&seed) % 50;
            assert_non_null(cluster_add_job(&c, &j));
        }
        for (int e = (int)(next_random(&seed) % 6); e > 0 && c.njobs; e--) {
            struct job *j = &c.jobs[next_random(&seed) % c.njobs];
            switch (next_random(&seed) % 4) {
            case 0: j->state = JOB_RUNNING; break;
            case 1: j->state = JOB_PENDING; break;
            case 2: j->est_runtime_s = next_random(&seed) % 50; break;
            default: cluster_remove_job(&c, j->id); break;
            }
        }
        size_t n = pending_of(got);
        memcpy(want, got, n * sizeof *got);
        if (n > 1)
            qsort_r(want, n, sizeof *want, by_sjf, NULL);
        order_keep_sort(&k, &c, got, n, by_sjf, NULL);
        assert_same_order(got, want, n);
    }
    order_keep_release(&k);
}

static void test_order_keep_checks_an_unchanged_order_in_one_look_per_job(void **state)
{
    (void)state;
    struct order_keep k;
    order_keep_init(&k);
    static struct job *jobs[KEEP_JOBS];
    unsigned seed = 3;
    for (int i = 0; i < KEEP_JOBS; i++) {
        struct job j = fx_job(i + 1, 1);
        j.est_runtime_s = next_random(&seed) % 1000;
        assert_non_null(cluster_add_job(&c, &j));
    }
    size_t n = pending_of(jobs);
    order_keep_sort(&k, &c, jobs, n, by_sjf, NULL); /* a full sort: n log n */
    c.jobs[5].state = JOB_RUNNING;                   /* one starts, one arrives */
    struct job late = fx_job(KEEP_JOBS + 1, 1);
    late.est_runtime_s = 10;
    assert_non_null(cluster_add_job(&c, &late));
    n = pending_of(jobs);
    compares = 0;
    order_keep_sort(&k, &c, jobs, n, by_sjf, NULL);
    assert_true(compares < 2 * (int)n + 1); /* a full sort needs about n log2 n = 3,500 */
    for (size_t i = 1; i < n; i++)
        assert_true(order_sjf.compare(jobs[i - 1], jobs[i]) < 0);
    order_keep_release(&k);
}

static void test_order_keep_resorts_when_a_kept_job_changed_place(void **state)
{
    (void)state;
    struct order_keep k;
    order_keep_init(&k);
    struct job *jobs[3];
    for (int i = 0; i < 3; i++) {
        struct job j = fx_job(i + 1, 1);
        j.est_runtime_s = 10 * (i + 1);
        assert_non_null(cluster_add_job(&c, &j));
    }
    size_t n = pending_of(jobs);
    order_keep_sort(&k, &c, jobs, n, by_sjf, NULL);
    c.jobs[2].est_runtime_s = 1; /* job 3 (after a requeue) now goes first */
    n = pending_of(jobs);
    order_keep_sort(&k, &c, jobs, n, by_sjf, NULL);
    assert_int_equal(jobs[0]->id, 3);
    assert_int_equal(jobs[1]->id, 1);
    assert_int_equal(jobs[2]->id, 2);
    order_keep_release(&k);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_fifo_takes_the_earliest_submission_whatever_its_priority),
        T(test_fifo_breaks_a_submit_time_tie_by_lower_id),
        T(test_priority_takes_the_highest_priority_first),
        T(test_priority_compares_effective_priority),
        T(test_priority_falls_back_to_fifo_within_a_priority),
        T(test_sjf_takes_the_shortest_estimate_first),
        T(test_sjf_puts_unknown_runtimes_after_every_known_one),
        T(test_sjf_falls_back_to_fifo_for_equal_estimates),
        T(test_las_takes_the_least_attained_band_first),
        T(test_las_keeps_fifo_within_a_band),
        T(test_las_bands_break_at_1_10_and_100_gpu_hours),
        T(test_policies_are_found_by_name),
        T(test_order_keep_sorts_as_qsort_does_while_jobs_come_go_and_change),
        T(test_order_keep_checks_an_unchanged_order_in_one_look_per_job),
        T(test_order_keep_resorts_when_a_kept_job_changed_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
