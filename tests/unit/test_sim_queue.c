/* The simulator's waiting jobs by shape (src/sim/sim_queue.c): what a pass
 * is given, and that a pass given only that places what it would place
 * given every waiting job. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/sched.h"
#include "sim/sim_queue.h"

#include "cluster_fixture.h"

#define NJOBS 400

static uint64_t rng;

static unsigned next_rand(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng >> 33);
}

/* nodes of 8 GPUs, some held by running jobs (ids above NJOBS: with odd
 * seeds nearly all, so few GPUs are free), and NJOBS waiting jobs of 1, 2,
 * 4 or 8 GPUs submitted in random order. */
static void random_cluster(struct cluster *c, uint64_t seed, int nodes)
{
    rng = seed;
    cluster_init(c);
    c->jobs_any_order = true;
    for (int n = 1; n <= nodes; n++) {
        struct node node = fx_h200_node(n, 8);
        assert_non_null(cluster_put_node(c, &node));
    }
    for (int n = 0; n < nodes; n++) {
        int held = (int)(seed % 2 ? 6 + next_rand() % 3 : next_rand() % 9);
        if (!held)
            continue;
        struct job j = fx_job(NJOBS + 1 + n, held);
        j.state = JOB_RUNNING;
        struct job *r = cluster_add_job(c, &j);
        assert_non_null(r);
        int idx[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        cluster_assign(c, r, &c->nodes[n], idx, held);
    }
    static const int shapes[] = {1, 1, 1, 2, 4, 8};
    for (int64_t id = 1; id <= NJOBS; id++) {
        struct job j = fx_job(id, shapes[next_rand() % 6]);
        j.submit_ms = next_rand() % 100000;
        j.est_runtime_s = 1 + next_rand() % 5000;
        assert_non_null(cluster_add_job(c, &j));
    }
}

static void test_candidates_are_the_first_of_each_shape_the_free_gpus_could_hold(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    for (int64_t id = 1; id <= 6; id++) {
        struct job j = fx_job(id, id <= 4 ? 1 : 8);
        j.submit_ms = 100 - id; /* later ids first */
        assert_non_null(cluster_add_job(&c, &j));
    }
    struct sim_queue q;
    assert_int_equal(sim_queue_init(&q, &c, &order_fifo, 6), 0);
    for (int64_t id = 1; id <= 6; id++)
        sim_queue_add(&q, cluster_find_job(&c, id));
    const int64_t *ids;
    size_t n = sim_queue_candidates(&q, 2, &ids); /* two 1-GPU jobs, no 8-GPU one */
    assert_int_equal(n, 2);
    int64_t got[2] = {ids[0] < ids[1] ? ids[0] : ids[1], ids[0] < ids[1] ? ids[1] : ids[0]};
    assert_int_equal(got[0], 3);
    assert_int_equal(got[1], 4);
    sim_queue_remove(&q, 4);
    n = sim_queue_candidates(&q, 9, &ids); /* three 1-GPU jobs left, one 8-GPU job */
    assert_int_equal(n, 4);
    bool has6 = false;
    for (size_t i = 0; i < n; i++)
        has6 |= ids[i] == 6;
    assert_true(has6);
    sim_queue_release(&q);
    cluster_release(&c);
}

static void test_a_strict_order_gets_one_more_of_each_shape(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    for (int64_t id = 1; id <= 3; id++)
        assert_non_null(cluster_add_job(&c, &(struct job){.id = id, .gpus = 8, .submit_ms = id,
                                                          .state = JOB_PENDING}));
    struct sim_queue q;
    assert_int_equal(sim_queue_init(&q, &c, &order_fifo_strict, 3), 0);
    for (int64_t id = 1; id <= 3; id++)
        sim_queue_add(&q, cluster_find_job(&c, id));
    const int64_t *ids;
    assert_int_equal(sim_queue_candidates(&q, 4, &ids), 1);
    assert_int_equal(ids[0], 1);
    sim_queue_release(&q);
    cluster_release(&c);
}

/* Two copies of a random cluster: one pass given every waiting job, one
 * given the queue's candidates; they must start the same jobs on the same
 * nodes, for every policy and several placements. */
static void test_a_pass_over_the_candidates_places_what_a_pass_over_all_does(void **state)
{
    (void)state;
    const struct order_ops *orders[] = {&order_fifo, &order_sjf, &order_las, &order_fifo_strict,
                                        &order_sjf_strict};
    const char *placements[] = {"loadaware", "binpack", "spread"};
    for (uint64_t seed = 1; seed <= 30; seed++)
        for (size_t o = 0; o < sizeof orders / sizeof orders[0]; o++) {
            struct cluster all, some;
            int nodes = 2 + (int)(seed % 11);
            random_cluster(&all, seed, nodes);
            random_cluster(&some, seed, nodes);
            struct sched_config cfg;
            sched_config_defaults(&cfg);
            cfg.order = orders[o];
            cfg.placement = placement_by_name(placements[seed % 3]);
            cfg.backfill = cfg.preemption = false;
            cfg.explain = false;
            struct scheduler sa, sb;
            sched_init(&sa, &cfg);
            sched_init(&sb, &cfg);
            struct sim_queue q;
            assert_int_equal(sim_queue_init(&q, &some, orders[o], NJOBS + 20), 0);
            int64_t every[NJOBS];
            for (int64_t id = 1; id <= NJOBS; id++) {
                every[id - 1] = id;
                sim_queue_add(&q, cluster_find_job(&some, id));
            }
            int free_gpus = 0;
            for (size_t n = 0; n < some.nnodes; n++)
                free_gpus += some.nodes[n].ngpus - fx_gpus_held(&some.nodes[n]);
            const int64_t *ids;
            size_t n = sim_queue_candidates(&q, free_gpus, &ids);
            assert_true(n < NJOBS);
            struct action_list oa, ob;
            action_list_init(&oa);
            action_list_init(&ob);
            int pa = sched_pass_ids(&sa, &all, every, NJOBS, 1000, &oa);
            int pb = sched_pass_ids(&sb, &some, ids, n, 1000, &ob);
            assert_int_equal(pa, pb);
            for (int64_t id = 1; id <= NJOBS; id++) {
                const struct job *x = cluster_find_job(&all, id), *y = cluster_find_job(&some, id);
                assert_int_equal(x->state, y->state);
                assert_int_equal(x->node_id, y->node_id);
            }
            action_list_release(&oa);
            action_list_release(&ob);
            sim_queue_release(&q);
            sched_release(&sa);
            sched_release(&sb);
            cluster_release(&all);
            cluster_release(&some);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_candidates_are_the_first_of_each_shape_the_free_gpus_could_hold),
        cmocka_unit_test(test_a_strict_order_gets_one_more_of_each_shape),
        cmocka_unit_test(test_a_pass_over_the_candidates_places_what_a_pass_over_all_does),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
