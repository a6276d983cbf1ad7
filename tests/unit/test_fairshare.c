/* Unit tests for fair share: quotas, borrowing, reclaim and decayed use
 * (src/core/fairshare.c, its use in sched.c and preempt.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/fairshare.h"
#include "core/sched.h"

#include "cluster_fixture.h"

#define HALF_LIFE_S 3600
#define NOW_MS 10000

static struct fairshare fs;
static struct cluster c;
static struct scheduler s;
static struct action_list out;

static int setup(void **state)
{
    (void)state;
    fairshare_init(&fs, HALF_LIFE_S);
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    cfg.fairshare = &fs;
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

static struct project_share *add_project(const char *name, int quota_gpus, int weight)
{
    struct project_config pc;
    memset(&pc, 0, sizeof pc);
    snprintf(pc.name, sizeof pc.name, "%s", name);
    pc.quota_gpus = quota_gpus;
    pc.weight = weight;
    struct project_share *p = fairshare_add(&fs, &pc);
    assert_non_null(p);
    return p;
}

static void add_node(int64_t id, int ngpus)
{
    struct node n = fx_h200_node(id, ngpus);
    assert_non_null(cluster_put_node(&c, &n));
}

static struct job project_job(int64_t id, const char *project, int gpus, bool preemptible)
{
    struct job j = fx_job(id, gpus);
    snprintf(j.project, sizeof j.project, "%s", project);
    j.preemptible = preemptible;
    return j;
}

static void add_pending(struct job j)
{
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

/* Jobs the pass started become running, as their agents would report. */
static void mark_started_running(void)
{
    for (size_t i = 0; i < c.njobs; i++)
        if (c.jobs[i].state == JOB_STARTING)
            c.jobs[i].state = JOB_RUNNING;
}

static void test_job_within_quota_goes_before_a_higher_priority_borrower(void **state)
{
    (void)state;
    add_project("a", 2, 1);
    add_project("b", 2, 1);
    add_node(1, 2);
    add_node(2, 2);
    assert_non_null(fx_add_running(&c, project_job(1, "b", 2, false), 1, 0)); /* b at its quota */
    struct job borrower = project_job(2, "b", 2, false);
    borrower.priority = 100;
    add_pending(borrower);
    add_pending(project_job(3, "a", 2, false));
    assert_int_equal(pass_at(NOW_MS), 1);
    assert_int_equal(job(3)->state, JOB_STARTING);
    assert_int_equal(job(2)->state, JOB_PENDING);
}

static void test_job_beyond_quota_after_its_projects_earlier_starts_goes_after_quota_jobs(void **state)
{
    (void)state;
    add_project("a", 2, 1);
    add_project("c", 2, 1);
    add_node(1, 4);
    add_pending(project_job(1, "a", 2, false));
    add_pending(project_job(2, "a", 2, false)); /* a is at its quota once job 1 starts */
    add_pending(project_job(3, "c", 2, false));
    assert_int_equal(pass_at(NOW_MS), 2);
    assert_int_equal(job(1)->state, JOB_STARTING);
    assert_int_equal(job(3)->state, JOB_STARTING);
    assert_int_equal(job(2)->state, JOB_PENDING);
}

static void test_job_started_beyond_its_quota_is_marked_borrowed(void **state)
{
    (void)state;
    add_project("b", 2, 1);
    add_node(1, 4);
    add_pending(project_job(1, "b", 2, true));
    add_pending(project_job(2, "b", 2, true));
    assert_int_equal(pass_at(NOW_MS), 2);
    assert_false(job(1)->borrowed);
    assert_true(job(2)->borrowed);
}

static void test_borrowed_gpus_are_reclaimed_at_equal_priority(void **state)
{
    (void)state;
    add_project("a", 2, 1);
    add_project("b", 2, 1);
    add_node(1, 4);
    add_pending(project_job(1, "b", 2, true));
    add_pending(project_job(2, "b", 2, true)); /* borrows a's idle quota */
    assert_int_equal(pass_at(NOW_MS), 2);
    mark_started_running();
    action_list_clear(&out);
    add_pending(project_job(3, "a", 2, false));
    pass_at(NOW_MS + 1000);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 1);
    const struct action *a = fx_find(&out, ACTION_PREEMPT, 2);
    assert_non_null(a);
    assert_string_equal(a->reason, "preempted by job 3");
    assert_int_equal(job(1)->state, JOB_RUNNING);
}

static void test_jobs_within_another_projects_quota_are_never_reclaimed(void **state)
{
    (void)state;
    add_project("a", 2, 1);
    add_project("b", 2, 1);
    add_node(1, 2);
    add_pending(project_job(1, "b", 2, true));
    assert_int_equal(pass_at(NOW_MS), 1);
    assert_false(job(1)->borrowed);
    mark_started_running();
    action_list_clear(&out);
    add_pending(project_job(2, "a", 2, false));
    pass_at(NOW_MS + 1000);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
    assert_int_equal(job(1)->state, JOB_RUNNING);
}

static void test_borrowed_gpus_are_not_reclaimed_by_a_job_that_would_borrow_too(void **state)
{
    (void)state;
    add_project("a", 0, 1);
    add_project("b", 0, 1);
    add_node(1, 2);
    add_pending(project_job(1, "b", 2, true));
    assert_int_equal(pass_at(NOW_MS), 1);
    assert_true(job(1)->borrowed);
    mark_started_running();
    action_list_clear(&out);
    add_pending(project_job(2, "a", 2, false));
    pass_at(NOW_MS + 1000);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
}

static void test_a_borrower_never_preempts_work_within_its_projects_quota(void **state)
{
    (void)state;
    add_project("a", 1, 1);
    add_project("b", 0, 1);
    add_node(1, 1);
    add_pending(project_job(1, "a", 1, true));
    assert_int_equal(pass_at(NOW_MS), 1);
    assert_false(job(1)->borrowed);
    mark_started_running();
    action_list_clear(&out);
    /* Higher priority, but beyond its quota: were it to preempt job 1, job 1
     * would take its quota back at once, and so on for ever. */
    struct job borrower = project_job(2, "b", 1, true);
    borrower.priority = 50;
    add_pending(borrower);
    pass_at(NOW_MS + 1000);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
    assert_int_equal(job(1)->state, JOB_RUNNING);
    assert_int_equal(job(2)->state, JOB_PENDING);
}

static void test_borrowed_non_preemptible_job_is_never_reclaimed(void **state)
{
    (void)state;
    add_project("a", 2, 1);
    add_project("b", 0, 1);
    add_node(1, 2);
    add_pending(project_job(1, "b", 2, false));
    assert_int_equal(pass_at(NOW_MS), 1);
    assert_true(job(1)->borrowed);
    mark_started_running();
    action_list_clear(&out);
    add_pending(project_job(2, "a", 2, false));
    pass_at(NOW_MS + 1000);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 0), 0);
}

static void test_borrowers_go_in_order_of_decayed_use(void **state)
{
    (void)state;
    add_project("b", 0, 1)->usage_gpu_s = 1000;
    add_project("c", 0, 1)->usage_gpu_s = 100;
    add_node(1, 1);
    add_pending(project_job(1, "b", 1, false));
    add_pending(project_job(2, "c", 1, false)); /* later, but c used less */
    assert_int_equal(pass_at(NOW_MS), 1);
    assert_int_equal(job(2)->state, JOB_STARTING);
    assert_int_equal(job(1)->state, JOB_PENDING);
}

static void test_borrowers_use_is_divided_by_their_weight(void **state)
{
    (void)state;
    add_project("b", 0, 10)->usage_gpu_s = 1000; /* 100 per weight */
    add_project("c", 0, 1)->usage_gpu_s = 500;
    add_node(1, 1);
    add_pending(project_job(1, "c", 1, false));
    add_pending(project_job(2, "b", 1, false));
    assert_int_equal(pass_at(NOW_MS), 1);
    assert_int_equal(job(2)->state, JOB_STARTING);
}

static void test_use_halves_after_one_half_life(void **state)
{
    (void)state;
    struct project_share *b = add_project("b", 0, 1);
    fairshare_update(&fs, &c, 1000);
    b->usage_gpu_s = 800;
    fairshare_update(&fs, &c, 1000 + HALF_LIFE_S * 1000LL);
    assert_true(b->usage_gpu_s > 399.999 && b->usage_gpu_s < 400.001);
    fairshare_update(&fs, &c, 1000 + 2 * HALF_LIFE_S * 1000LL);
    assert_true(b->usage_gpu_s > 199.999 && b->usage_gpu_s < 200.001);
}

static void test_running_gpus_add_their_gpu_time_to_use(void **state)
{
    (void)state;
    struct project_share *a = add_project("a", 4, 1);
    add_node(1, 4);
    assert_non_null(fx_add_running(&c, project_job(1, "a", 2, false), 1, 0));
    fairshare_update(&fs, &c, 1000);
    assert_true(a->usage_gpu_s == 0);
    fairshare_update(&fs, &c, 11000);
    assert_true(a->usage_gpu_s > 19.999 && a->usage_gpu_s < 20.001); /* 2 GPUs x 10 s */
    assert_int_equal(a->running_gpus, 2);
}

static void test_a_project_back_within_its_quota_borrows_nothing(void **state)
{
    (void)state;
    struct project_share *a = add_project("a", 4, 1);
    add_node(1, 8);
    struct job first = project_job(1, "a", 4, false), second = project_job(2, "a", 4, true);
    assert_non_null(fx_add_running(&c, first, 1, 0));
    struct job *borrower = fx_add_running(&c, second, 1, 10);
    assert_non_null(borrower);
    borrower->borrowed = true; /* it started beyond the quota */
    fairshare_update(&fs, &c, 1000);
    assert_int_equal(a->borrowed_gpus, 4);
    /* the first ends: the second is the project's quota now, not a loan
     * another project's job may preempt */
    cluster_unassign(&c, job(1));
    cluster_remove_job(&c, 1);
    fairshare_update(&fs, &c, 2000);
    assert_false(job(2)->borrowed);
    assert_int_equal(a->borrowed_gpus, 0);
    assert_int_equal(a->running_gpus, 4);
}

static void test_after_a_restart_the_latest_starts_beyond_quota_are_borrowed(void **state)
{
    (void)state;
    add_project("a", 2, 1);
    add_node(1, 8);
    struct job *first = fx_add_running(&c, project_job(1, "a", 1, true), 1, 100);
    struct job *third = fx_add_running(&c, project_job(3, "a", 1, true), 1, 300);
    struct job *second = fx_add_running(&c, project_job(2, "a", 1, true), 1, 200);
    struct job *stranger = fx_add_running(&c, project_job(4, "zz", 1, true), 1, 50);
    assert_int_equal(fairshare_mark_borrowed(&fs, &c), 0);
    assert_false(first->borrowed);
    assert_false(second->borrowed);
    assert_true(third->borrowed);
    assert_true(stranger->borrowed); /* a project without a quota only borrows */
}

static void test_project_without_a_quota_only_borrows(void **state)
{
    (void)state;
    add_project("a", 4, 1);
    struct job j = project_job(1, "unlisted", 1, false);
    fairshare_classify(&fs, &j);
    assert_false(j.in_quota);
    fairshare_note_start(&fs, &j);
    assert_true(j.borrowed);
}

static void test_job_of_a_project_without_quota_goes_after_one_within_quota(void **state)
{
    (void)state;
    add_project("a", 4, 1);
    add_node(1, 1);
    struct job unlisted = project_job(1, "unlisted", 1, false);
    unlisted.priority = 100;
    add_pending(unlisted);
    add_pending(project_job(2, "a", 1, false));
    assert_int_equal(pass_at(NOW_MS), 1);
    assert_int_equal(job(2)->state, JOB_STARTING);
}

static void test_without_projects_every_job_is_within_quota(void **state)
{
    (void)state;
    struct job j = project_job(1, "anyone", 8, false);
    fairshare_classify(&fs, &j);
    assert_true(j.in_quota);
    fairshare_note_start(&fs, &j);
    assert_false(j.borrowed);
}

static void test_without_projects_priority_alone_orders_jobs(void **state)
{
    (void)state;
    add_node(1, 1);
    add_pending(project_job(1, "x", 1, false));
    struct job urgent = project_job(2, "y", 1, false);
    urgent.priority = 5;
    add_pending(urgent);
    assert_int_equal(pass_at(NOW_MS), 1);
    assert_int_equal(job(2)->state, JOB_STARTING);
    assert_false(job(2)->borrowed);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_job_within_quota_goes_before_a_higher_priority_borrower),
        T(test_job_beyond_quota_after_its_projects_earlier_starts_goes_after_quota_jobs),
        T(test_job_started_beyond_its_quota_is_marked_borrowed),
        T(test_borrowed_gpus_are_reclaimed_at_equal_priority),
        T(test_jobs_within_another_projects_quota_are_never_reclaimed),
        T(test_borrowed_gpus_are_not_reclaimed_by_a_job_that_would_borrow_too),
        T(test_a_borrower_never_preempts_work_within_its_projects_quota),
        T(test_borrowed_non_preemptible_job_is_never_reclaimed),
        T(test_borrowers_go_in_order_of_decayed_use),
        T(test_borrowers_use_is_divided_by_their_weight),
        T(test_use_halves_after_one_half_life),
        T(test_running_gpus_add_their_gpu_time_to_use),
        T(test_project_without_a_quota_only_borrows),
        T(test_job_of_a_project_without_quota_goes_after_one_within_quota),
        T(test_without_projects_every_job_is_within_quota),
        T(test_without_projects_priority_alone_orders_jobs),
        T(test_a_project_back_within_its_quota_borrows_nothing),
        T(test_after_a_restart_the_latest_starts_beyond_quota_are_borrowed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
