/* Unit tests for job dependencies (src/core/deps.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/deps.h"
#include "core/sched.h"

#include "cluster_fixture.h"

static struct cluster c;
static struct action_list out;

/* Final states of jobs no longer in the cluster, as a store would know them. */
struct finished {
    int64_t job_id;
    int state;
};
static struct finished finished[8];
static int nfinished;

static int lookups;

static int final_state_of(int64_t job_id, void *ctx)
{
    (void)ctx;
    lookups++;
    for (int i = 0; i < nfinished; i++)
        if (finished[i].job_id == job_id)
            return finished[i].state;
    return -1;
}

static void finished_as(int64_t job_id, enum job_state st)
{
    finished[nfinished++] = (struct finished){job_id, (int)st};
}

static int setup(void **state)
{
    (void)state;
    cluster_init(&c);
    action_list_init(&out);
    nfinished = 0;
    lookups = 0;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cluster_release(&c);
    action_list_release(&out);
    return 0;
}

/* A held job depending on the listed jobs (terminated by 0). */
static void add_held(int64_t id, const int64_t *deps)
{
    struct job j = fx_job(id, 1);
    j.held = true;
    for (; *deps; deps++)
        j.depends_on[j.ndeps++] = *deps;
    assert_non_null(cluster_add_job(&c, &j));
}

static int resolve(void)
{
    return deps_resolve(&c, final_state_of, NULL, &out);
}

static void test_job_is_released_when_all_its_dependencies_succeeded(void **state)
{
    (void)state;
    finished_as(1, JOB_SUCCEEDED);
    finished_as(2, JOB_SUCCEEDED);
    add_held(10, (int64_t[]){1, 2, 0});
    assert_int_equal(resolve(), 1);
    assert_false(cluster_find_job(&c, 10)->held);
    assert_int_equal(out.len, 0);
}

static void test_job_stays_held_while_a_dependency_is_in_the_cluster(void **state)
{
    (void)state;
    finished_as(1, JOB_SUCCEEDED);
    struct job running = fx_job(2, 1);
    running.state = JOB_RUNNING;
    assert_non_null(cluster_add_job(&c, &running));
    add_held(10, (int64_t[]){1, 2, 0});
    assert_int_equal(resolve(), 0);
    struct job *j = cluster_find_job(&c, 10);
    assert_true(j->held);
    assert_string_equal(fx_reason(j), "waiting for its dependencies");
    assert_int_equal(out.len, 0);
}

static void test_job_fails_when_a_dependency_failed(void **state)
{
    (void)state;
    finished_as(1, JOB_SUCCEEDED);
    finished_as(2, JOB_FAILED);
    add_held(10, (int64_t[]){1, 2, 0});
    assert_int_equal(resolve(), 0);
    const struct action *a = fx_find(&out, ACTION_FINISH, 10);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_FAILED);
    assert_string_equal(a->reason, "dependency 2 failed");
    assert_null(cluster_find_job(&c, 10));
}

static void test_job_fails_when_a_dependency_was_cancelled(void **state)
{
    (void)state;
    finished_as(3, JOB_CANCELLED);
    add_held(10, (int64_t[]){3, 0});
    resolve();
    const struct action *a = fx_find(&out, ACTION_FINISH, 10);
    assert_non_null(a);
    assert_string_equal(a->reason, "dependency 3 cancelled");
}

static void test_job_fails_when_a_dependency_does_not_exist(void **state)
{
    (void)state;
    add_held(10, (int64_t[]){99, 0});
    resolve();
    const struct action *a = fx_find(&out, ACTION_FINISH, 10);
    assert_non_null(a);
    assert_int_equal(a->state, JOB_FAILED);
    assert_string_equal(a->reason, "dependency 99 does not exist");
}

static void test_a_job_that_started_is_not_failed_for_a_dependency_purged_since(void **state)
{
    (void)state;
    /* as a reload reads them: the spec marks every job with dependencies
     * held, the running one and the requeued one too; dependency 99 was
     * purged by retention long ago */
    struct node n = fx_h200_node(1, 8);
    assert_non_null(cluster_put_node(&c, &n));
    struct job j = fx_job(10, 1);
    j.held = true;
    j.depends_on[j.ndeps++] = 99;
    j.attempt = 1;
    assert_non_null(fx_add_running(&c, j, 1, 1000));
    struct job requeued = fx_job(11, 1);
    requeued.held = true;
    requeued.depends_on[requeued.ndeps++] = 99;
    requeued.attempt = 1;
    assert_non_null(cluster_add_job(&c, &requeued));
    resolve();
    assert_int_equal(out.len, 0);
    assert_non_null(cluster_find_job(&c, 10));
    assert_false(cluster_find_job(&c, 11)->held);
    assert_int_equal(lookups, 0);
}

static void test_job_fails_at_once_when_one_dependency_failed_and_another_still_runs(void **state)
{
    (void)state;
    struct job running = fx_job(1, 1);
    running.state = JOB_RUNNING;
    assert_non_null(cluster_add_job(&c, &running));
    finished_as(2, JOB_TIMEOUT);
    add_held(10, (int64_t[]){1, 2, 0});
    resolve();
    const struct action *a = fx_find(&out, ACTION_FINISH, 10);
    assert_non_null(a);
    assert_string_equal(a->reason, "dependency 2 timeout");
}

static void test_consecutive_held_jobs_are_all_resolved(void **state)
{
    (void)state;
    finished_as(1, JOB_FAILED);
    finished_as(2, JOB_SUCCEEDED);
    add_held(10, (int64_t[]){1, 0});
    add_held(11, (int64_t[]){1, 0}); /* right after a removed job */
    add_held(12, (int64_t[]){2, 0});
    assert_int_equal(resolve(), 1);
    assert_int_equal(fx_count(&out, ACTION_FINISH, 10), 1);
    assert_int_equal(fx_count(&out, ACTION_FINISH, 11), 1);
    assert_false(cluster_find_job(&c, 12)->held);
    assert_int_equal(c.njobs, 1);
}

static void test_jobs_that_are_not_held_are_left_alone(void **state)
{
    (void)state;
    struct job j = fx_job(10, 1);
    j.depends_on[j.ndeps++] = 99; /* released earlier */
    assert_non_null(cluster_add_job(&c, &j));
    assert_int_equal(resolve(), 0);
    assert_int_equal(out.len, 0);
    assert_non_null(cluster_find_job(&c, 10));
}

static void test_held_job_is_not_placed(void **state)
{
    (void)state;
    struct node n = fx_h200_node(1, 1);
    assert_non_null(cluster_put_node(&c, &n));
    add_held(10, (int64_t[]){99, 0});
    struct scheduler s;
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    sched_init(&s, &cfg);
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 0);
    sched_release(&s);
    assert_int_equal(cluster_find_job(&c, 10)->state, JOB_PENDING);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

static void test_many_dependents_of_a_cancelled_job_fail_in_one_sweep_keeping_order(void **state)
{
    (void)state;
    enum { DEPENDENTS = 20000 };
    const int64_t on_one[] = {1, 0};
    add_held(2, (const int64_t[]){999, 0}); /* waits on a running job: stays */
    assert_non_null(cluster_add_job(&c, &(struct job){.id = 999, .state = JOB_RUNNING}));
    for (int64_t id = 3; id < 3 + DEPENDENTS; id++)
        add_held(id, on_one);
    assert_non_null(cluster_add_job(&c, &(struct job){.id = 100000, .state = JOB_PENDING}));
    finished_as(1, JOB_CANCELLED);

    assert_int_equal(deps_resolve(&c, final_state_of, NULL, &out), 0);
    assert_int_equal(out.len, DEPENDENTS);
    assert_string_equal(out.items[0].reason, "dependency 1 cancelled");
    assert_int_equal(lookups, 1); /* the store is asked once, not per dependent */
    assert_int_equal(c.njobs, 3);
    assert_int_equal(c.jobs[0].id, 2); /* the survivors keep their order */
    assert_int_equal(c.jobs[1].id, 999);
    assert_int_equal(c.jobs[2].id, 100000);
    assert_non_null(cluster_find_job(&c, 100000)); /* and are found by id */
    assert_null(cluster_find_job(&c, 3));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_job_is_released_when_all_its_dependencies_succeeded),
        T(test_job_stays_held_while_a_dependency_is_in_the_cluster),
        T(test_job_fails_when_a_dependency_failed),
        T(test_job_fails_when_a_dependency_was_cancelled),
        T(test_job_fails_when_a_dependency_does_not_exist),
        T(test_a_job_that_started_is_not_failed_for_a_dependency_purged_since),
        T(test_job_fails_at_once_when_one_dependency_failed_and_another_still_runs),
        T(test_consecutive_held_jobs_are_all_resolved),
        T(test_jobs_that_are_not_held_are_left_alone),
        T(test_held_job_is_not_placed),
        T(test_many_dependents_of_a_cancelled_job_fail_in_one_sweep_keeping_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
