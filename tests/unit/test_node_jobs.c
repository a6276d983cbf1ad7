/* Unit tests for the per-node index of jobs (src/core/node_jobs.c and its
 * upkeep in src/core/cluster.c): placement, gang jobs over several nodes,
 * preemption, requeue, node loss and removal keep it equal to what a scan
 * of every job finds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/node_jobs.h"
#include "core/reconcile.h"
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
    for (int64_t id = 1; id <= 3; id++) {
        struct node n = fx_h200_node(id, 4);
        assert_non_null(cluster_put_node(&c, &n));
    }
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

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* What the index should say: every job with a task on node_id, by a scan,
 * in increasing id order. */
static size_t scanned(int64_t node_id, int64_t *ids, size_t cap)
{
    size_t n = 0;
    for (size_t j = 0; j < c.njobs; j++)
        if (job_on_node(&c.jobs[j], node_id) && n < cap)
            ids[n++] = c.jobs[j].id;
    qsort(ids, n, sizeof *ids, cmp_id);
    return n;
}

/* The index agrees with a scan on every node. */
static void assert_index_matches_scan(void)
{
    for (size_t i = 0; i < c.nnodes; i++) {
        int64_t want[256], got[256];
        size_t nwant = scanned(c.nodes[i].id, want, 256);
        size_t ngot = cluster_node_job_ids(&c, c.nodes[i].id, got, 256);
        assert_int_equal(ngot, nwant);
        for (size_t k = 0; k < ngot; k++)
            assert_int_equal(got[k], want[k]);
        /* and the index itself holds nothing more: no entry left behind
         * (cluster_node_job_ids would hide one) */
        size_t listed;
        node_jobs_of(&c.node_jobs, c.nodes[i].id, &listed);
        assert_int_equal(listed, nwant);
    }
}

static size_t on_node(int64_t node_id, int64_t *ids)
{
    return cluster_node_job_ids(&c, node_id, ids, 64);
}

/* Places job on node_id's first free GPUs as cluster_assign does for a pass. */
static struct job *place(int64_t id, int gpus, int64_t node_id)
{
    struct job *job = fx_add_running(&c, fx_job(id, gpus), node_id, 1000);
    assert_non_null(job);
    return job;
}

static void test_placed_job_is_listed_on_its_node_only(void **state)
{
    (void)state;
    place(7, 2, 2);
    int64_t ids[64];
    assert_int_equal(on_node(2, ids), 1);
    assert_int_equal(ids[0], 7);
    assert_int_equal(on_node(1, ids), 0);
    assert_int_equal(on_node(3, ids), 0);
    assert_int_equal(on_node(99, ids), 0); /* a node the cluster never had */
    assert_index_matches_scan();
}

static void test_jobs_of_a_node_come_in_increasing_id_order(void **state)
{
    (void)state;
    place(30, 1, 1);
    place(10, 1, 1);
    place(20, 1, 1);
    cluster_remove_job(&c, 10);
    place(5, 1, 1);
    int64_t ids[64];
    assert_int_equal(on_node(1, ids), 3);
    assert_int_equal(ids[0], 5);
    assert_int_equal(ids[1], 20);
    assert_int_equal(ids[2], 30);
}

static void test_more_jobs_than_the_caller_has_room_for_are_counted(void **state)
{
    (void)state;
    for (int64_t id = 1; id <= 4; id++)
        place(id, 1, 3);
    int64_t ids[2];
    assert_int_equal(cluster_node_job_ids(&c, 3, ids, 2), 4);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 2);
}

static void test_gang_job_is_listed_on_every_node_it_spans(void **state)
{
    (void)state;
    struct job *job = place(4, 2, 1);
    int idx[2] = {0, 1};
    cluster_assign_part(&c, job, cluster_find_node(&c, 3), idx, 2);
    int64_t ids[64];
    assert_int_equal(on_node(1, ids), 1);
    assert_int_equal(ids[0], 4);
    assert_int_equal(on_node(3, ids), 1);
    assert_int_equal(ids[0], 4);
    assert_int_equal(on_node(2, ids), 0);
    cluster_unassign(&c, cluster_find_job(&c, 4));
    assert_int_equal(on_node(1, ids), 0);
    assert_int_equal(on_node(3, ids), 0);
    assert_index_matches_scan();
}

static void test_gang_job_placed_by_a_pass_is_listed_on_each_of_its_nodes(void **state)
{
    (void)state;
    struct job j = fx_job(9, 8); /* two whole 4-GPU nodes */
    j.max_nodes = 2;
    assert_non_null(cluster_add_job(&c, &j));
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 1);
    const struct job *job = cluster_find_job(&c, 9);
    assert_int_equal(job->nparts, 1);
    int64_t ids[64];
    assert_int_equal(on_node(job->node_id, ids), 1);
    assert_int_equal(on_node(job->parts[0].node_id, ids), 1);
    assert_int_equal(ids[0], 9);
    assert_index_matches_scan();
}

static void test_finished_job_leaves_its_node(void **state)
{
    (void)state;
    place(1, 1, 1);
    place(2, 1, 1);
    struct task_report r = {.job_id = 1, .attempt = 1, .exited = true, .exit_code = 0};
    snprintf(r.reason, sizeof r.reason, "exit 0");
    struct task_report still = {.job_id = 2, .attempt = 1, .exit_code = -1};
    struct task_report both[2] = {r, still};
    assert_int_equal(reconcile_heartbeat(&c, cluster_find_node(&c, 1), both, 2, 2000, &out), 0);
    assert_non_null(fx_find(&out, ACTION_FINISH, 1));
    int64_t ids[64];
    assert_int_equal(on_node(1, ids), 1);
    assert_int_equal(ids[0], 2);
    assert_index_matches_scan();
}

static void test_requeued_job_leaves_its_node_and_is_listed_where_it_runs_next(void **state)
{
    (void)state;
    struct job *job = place(3, 1, 1);
    job->retries = 2;
    struct task_report r = {.job_id = 3, .attempt = 1, .exited = true, .exit_code = 1};
    snprintf(r.reason, sizeof r.reason, "exit 1");
    assert_int_equal(reconcile_heartbeat(&c, cluster_find_node(&c, 1), &r, 1, 2000, &out), 0);
    assert_non_null(fx_find(&out, ACTION_REQUEUE, 3));
    int64_t ids[64];
    assert_int_equal(on_node(1, ids), 0);
    /* node 1 is full with others now: the retry lands elsewhere */
    for (int64_t id = 10; id < 14; id++)
        place(id, 1, 1);
    action_list_clear(&out);
    assert_int_equal(sched_pass(&s, &c, 3600000, &out), 1); /* after any retry backoff */
    job = cluster_find_job(&c, 3);
    assert_true(job->node_id == 2 || job->node_id == 3);
    assert_int_equal(on_node(job->node_id, ids), 1);
    assert_int_equal(ids[0], 3);
    assert_index_matches_scan();
}

static void test_preempted_job_leaves_its_node_when_its_task_ends(void **state)
{
    (void)state;
    struct job *job = place(5, 4, 2);
    job->preemptible = true;
    job->state = JOB_PREEMPTED; /* as a pass's preemption leaves it */
    int64_t ids[64];
    assert_int_equal(on_node(2, ids), 1); /* still there until its task ends */
    struct task_report r = {.job_id = 5, .attempt = 1, .exited = true, .signal = 15,
                            .exit_code = -1};
    snprintf(r.reason, sizeof r.reason, "signal 15");
    assert_int_equal(reconcile_heartbeat(&c, cluster_find_node(&c, 2), &r, 1, 2000, &out), 0);
    assert_non_null(fx_find(&out, ACTION_REQUEUE, 5));
    assert_int_equal(cluster_find_job(&c, 5)->state, JOB_PENDING);
    assert_int_equal(on_node(2, ids), 0);
    assert_index_matches_scan();
}

static void test_lost_node_requeues_its_jobs_and_keeps_the_others(void **state)
{
    (void)state;
    place(1, 1, 1);
    place(2, 2, 2);
    struct job *gang = place(3, 2, 3);
    int idx[2] = {2, 3};
    cluster_assign_part(&c, gang, cluster_find_node(&c, 2), idx, 2);
    for (size_t i = 0; i < c.nnodes; i++)
        c.nodes[i].last_heartbeat_ms = 1000;
    cluster_find_node(&c, 1)->last_heartbeat_ms = 1000 + TIMEOUT_MS;
    cluster_find_node(&c, 3)->last_heartbeat_ms = 1000 + TIMEOUT_MS;
    /* node 2 falls silent: its job goes; the gang job with a part there
     * goes once its task on node 3 has stopped */
    assert_int_equal(sched_check_nodes(&s, &c, 1000 + TIMEOUT_MS + 1, &out), 1);
    assert_non_null(fx_find(&out, ACTION_REQUEUE, 2));
    assert_null(fx_find(&out, ACTION_REQUEUE, 3));
    assert_non_null(fx_find(&out, ACTION_SEND_STOP, 3));
    assert_null(fx_find(&out, ACTION_REQUEUE, 1));
    int64_t ids[64];
    assert_int_equal(on_node(3, ids), 1);
    assert_int_equal(ids[0], 3);
    assert_index_matches_scan();
    struct task_report r = {
        .job_id = 3, .attempt = 1, .exited = true, .signal = 15, .exit_code = -1};
    snprintf(r.reason, sizeof r.reason, "signal 15");
    assert_int_equal(
        reconcile_heartbeat(&c, cluster_find_node(&c, 3), &r, 1, 2000 + TIMEOUT_MS, &out), 0);
    assert_non_null(fx_find(&out, ACTION_REQUEUE, 3));
    assert_int_equal(on_node(2, ids), 0);
    assert_int_equal(on_node(3, ids), 0);
    assert_int_equal(on_node(1, ids), 1);
    assert_int_equal(ids[0], 1);
    assert_index_matches_scan();
}

static void test_job_added_already_placed_is_listed(void **state)
{
    (void)state;
    struct job j = fx_job(8, 1);
    j.state = JOB_RUNNING;
    j.node_id = 3;
    j.nparts = 1;
    j.parts[0].node_id = 1;
    assert_non_null(cluster_add_job(&c, &j));
    int64_t ids[64];
    assert_int_equal(on_node(3, ids), 1);
    assert_int_equal(on_node(1, ids), 1);
    assert_int_equal(ids[0], 8);
}

static void test_placeholders_of_a_pass_are_not_listed(void **state)
{
    (void)state;
    struct job holder = fx_job(-1, 2); /* backfill's reservation holds GPUs as id -1 */
    int idx[2] = {0, 1};
    cluster_assign(&c, &holder, cluster_find_node(&c, 1), idx, 2);
    int64_t ids[64];
    assert_int_equal(on_node(1, ids), 0);
    cluster_unassign(&c, &holder);
}

static bool doomed_if_odd(struct job *job, void *ctx)
{
    (void)ctx;
    return job->id % 2;
}

static void test_removing_many_jobs_at_once_keeps_the_others_listed(void **state)
{
    (void)state;
    for (int64_t id = 1; id <= 8; id++)
        place(id, 1, 1 + (id - 1) % 2);
    assert_int_equal(cluster_remove_jobs_if(&c, doomed_if_odd, NULL), 4);
    int64_t ids[64];
    assert_int_equal(on_node(1, ids), 0); /* jobs 1, 3, 5, 7 */
    assert_int_equal(on_node(2, ids), 4);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[3], 8);
    assert_index_matches_scan();
}

static void test_node_among_many_pending_jobs_lists_only_its_own(void **state)
{
    (void)state;
    /* 3 nodes x 4 GPUs full, and 500 pending jobs that no node holds */
    for (int64_t id = 1; id <= 12; id++)
        place(id, 1, 1 + (id - 1) / 4);
    for (int64_t id = 100; id < 600; id++)
        assert_non_null(cluster_add_job(&c, &(struct job){.id = id, .gpus = 1}));
    int64_t ids[64];
    assert_int_equal(on_node(2, ids), 4);
    assert_int_equal(ids[0], 5);
    assert_int_equal(ids[3], 8);
    assert_index_matches_scan();
}

static uint64_t lcg(uint64_t *seed)
{
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return *seed >> 33;
}

/* Random placements, gang parts, ends, requeues and node losses: after
 * each step the index says what a scan of every job says. */
static void test_index_matches_a_scan_through_random_changes(void **state)
{
    (void)state;
    uint64_t seed = 42;
    int64_t next_id = 1;
    for (int step = 0; step < 3000; step++) {
        unsigned what = (unsigned)(lcg(&seed) % 6);
        if (what <= 1) { /* submit and place by a pass */
            struct job j = fx_job(next_id++, 1 + (int)(lcg(&seed) % 3));
            j.max_nodes = (int)(lcg(&seed) % 3);
            j.retries = 1;
            assert_non_null(cluster_add_job(&c, &j));
            action_list_clear(&out);
            sched_pass(&s, &c, 1000 + step, &out);
        } else if (what == 2 && c.njobs) { /* a task ends, ok or not */
            struct job *job = &c.jobs[lcg(&seed) % c.njobs];
            if (job->node_id && job_state_is_on_node(job->state)) {
                struct task_report r = {.job_id = job->id, .attempt = job->attempt,
                                        .exited = true, .exit_code = (int)(lcg(&seed) % 2)};
                snprintf(r.reason, sizeof r.reason, "exit %d", r.exit_code);
                int64_t node_id = job->node_id;
                action_list_clear(&out);
                reconcile_heartbeat(&c, cluster_find_node(&c, node_id), &r, 1, 1000 + step,
                                    &out);
            }
        } else if (what == 3 && c.njobs) { /* requeued */
            struct job *job = &c.jobs[lcg(&seed) % c.njobs];
            if (job->node_id) {
                action_list_clear(&out);
                sched_fail_attempt(&c, job, JOB_LOST, JOB_FAILED, "test", -1, 0, 1000 + step,
                                   &out);
            }
        } else if (what == 4) { /* a node is lost and comes back */
            struct node *node = &c.nodes[lcg(&seed) % c.nnodes];
            for (size_t i = 0; i < c.nnodes; i++)
                c.nodes[i].last_heartbeat_ms = 1000000 + step;
            node->last_heartbeat_ms = 0;
            action_list_clear(&out);
            sched_check_nodes(&s, &c, 1000000 + step, &out);
            node->state = NODE_READY;
        } else if (c.njobs) { /* cancelled and gone */
            cluster_remove_job(&c, c.jobs[lcg(&seed) % c.njobs].id);
        }
        assert_index_matches_scan();
    }
}

static void test_job_assigned_twice_to_the_same_node_is_listed_once(void **state)
{
    (void)state;
    struct job *job = place(6, 1, 1);
    int idx = 3;
    cluster_assign(&c, job, cluster_find_node(&c, 1), &idx, 1);
    cluster_assign_part(&c, job, cluster_find_node(&c, 1), &idx, 1);
    int64_t ids[64];
    assert_int_equal(on_node(1, ids), 1);
    cluster_unassign(&c, job);
    assert_int_equal(on_node(1, ids), 0);
}

/* n CPU-only jobs from id 1000 up, running on node_id, added already placed. */
static void add_many_on(int64_t node_id, int n)
{
    for (int k = n - 1; k >= 0; k--) { /* added in falling ids: the fill sorts */
        struct job j = fx_job(1000 + k, 0);
        j.node_id = node_id;
        j.state = JOB_RUNNING;
        j.attempt = 1;
        assert_non_null(cluster_add_job(&c, &j));
    }
}

static void test_a_node_with_more_jobs_than_the_stack_holds_gets_them_all(void **state)
{
    (void)state;
    add_many_on(2, 100);
    place(1, 1, 1);
    struct cluster_node_ids got;
    assert_int_equal(cluster_node_ids_fill(&c, 2, &got), 0);
    assert_int_equal(got.n, 100);
    assert_ptr_not_equal(got.ids, got.some);
    for (size_t k = 0; k < got.n; k++)
        assert_int_equal(got.ids[k], 1000 + (int64_t)k);
    cluster_node_ids_release(&got);
    assert_int_equal(cluster_node_ids_fill(&c, 1, &got), 0);
    assert_int_equal(got.n, 1);
    assert_ptr_equal(got.ids, got.some);
    assert_int_equal(got.ids[0], 1);
    cluster_node_ids_release(&got);
    assert_int_equal(got.n, 0);
}

static void test_a_lost_node_with_more_jobs_than_the_stack_holds_requeues_them_all(void **state)
{
    (void)state;
    add_many_on(2, 100);
    place(1, 1, 1);
    for (size_t i = 0; i < c.nnodes; i++)
        c.nodes[i].last_heartbeat_ms = 1000 + TIMEOUT_MS;
    cluster_find_node(&c, 2)->last_heartbeat_ms = 1000;
    assert_int_equal(sched_check_nodes(&s, &c, 1000 + TIMEOUT_MS + 1, &out), 1);
    for (int64_t id = 1000; id < 1100; id++)
        assert_non_null(fx_find(&out, ACTION_REQUEUE, id));
    assert_null(fx_find(&out, ACTION_REQUEUE, 1));
    assert_index_matches_scan();
}

static void test_an_index_that_missed_a_job_is_made_again_and_used_after(void **state)
{
    (void)state;
    place(1, 1, 1);
    place(2, 1, 1);
    place(3, 1, 2);
    /* As an add that ran out of memory leaves it: job 2 missing, the flag set. */
    node_jobs_remove(&c.node_jobs, 1, 2);
    c.node_jobs_lost = true;
    int64_t ids[64];
    assert_int_equal(on_node(1, ids), 2);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 2);
    /* made again, not scanned for every later call */
    assert_false(c.node_jobs_lost);
    assert_index_matches_scan();
    cluster_remove_job(&c, 2);
    place(4, 1, 1);
    assert_int_equal(on_node(1, ids), 2);
    assert_int_equal(ids[1], 4);
    assert_index_matches_scan();
}

static void test_index_alone_adds_and_removes(void **state)
{
    (void)state;
    struct node_jobs ix;
    node_jobs_init(&ix);
    size_t n;
    assert_null(node_jobs_of(&ix, 1, &n));
    assert_int_equal(n, 0);
    for (int64_t node = 1; node <= 100; node++) /* past the first table size */
        for (int64_t job = 1; job <= 3; job++)
            assert_int_equal(node_jobs_add(&ix, node * 7, node * 1000 + job), 0);
    const int64_t *ids = node_jobs_of(&ix, 7, &n);
    assert_int_equal(n, 3);
    for (int64_t job = 4; job <= 40; job++) /* a list past its first size */
        assert_int_equal(node_jobs_add(&ix, 14, 2000 + job), 0);
    ids = node_jobs_of(&ix, 14, &n);
    assert_int_equal(n, 40);
    ids = node_jobs_of(&ix, 7, &n);
    assert_int_equal(n, 3);
    node_jobs_remove(&ix, 7, 1002);
    node_jobs_remove(&ix, 7, 5555); /* not there */
    ids = node_jobs_of(&ix, 7, &n);
    assert_int_equal(n, 2);
    assert_true((ids[0] == 1001 && ids[1] == 1003) || (ids[0] == 1003 && ids[1] == 1001));
    ids = node_jobs_of(&ix, 700, &n);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0] / 1000, 100);
    node_jobs_release(&ix);
    node_jobs_release(NULL);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_placed_job_is_listed_on_its_node_only),
        T(test_jobs_of_a_node_come_in_increasing_id_order),
        T(test_more_jobs_than_the_caller_has_room_for_are_counted),
        T(test_gang_job_is_listed_on_every_node_it_spans),
        T(test_gang_job_placed_by_a_pass_is_listed_on_each_of_its_nodes),
        T(test_finished_job_leaves_its_node),
        T(test_requeued_job_leaves_its_node_and_is_listed_where_it_runs_next),
        T(test_preempted_job_leaves_its_node_when_its_task_ends),
        T(test_lost_node_requeues_its_jobs_and_keeps_the_others),
        T(test_job_added_already_placed_is_listed),
        T(test_placeholders_of_a_pass_are_not_listed),
        T(test_removing_many_jobs_at_once_keeps_the_others_listed),
        T(test_node_among_many_pending_jobs_lists_only_its_own),
        T(test_index_matches_a_scan_through_random_changes),
        T(test_job_assigned_twice_to_the_same_node_is_listed_once),
        T(test_a_node_with_more_jobs_than_the_stack_holds_gets_them_all),
        T(test_a_lost_node_with_more_jobs_than_the_stack_holds_requeues_them_all),
        T(test_an_index_that_missed_a_job_is_made_again_and_used_after),
        cmocka_unit_test(test_index_alone_adds_and_removes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
