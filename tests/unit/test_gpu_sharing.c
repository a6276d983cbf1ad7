/* Shares of one GPU (core/gpu_share.h, core/placement_slice.c): packing by
 * memory, exclusivity both ways, best fit, accounting after unassign. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/gpu_share.h"
#include "core/placement.h"
#include "core/placement_index.h"
#include "core/sched.h"

#include "cluster_fixture.h"

#define T4_MIB 16384

static struct job share_job(int64_t id, int64_t memory_mib)
{
    struct job j = fx_job(id, 1);
    j.gpu_memory_mib = memory_mib;
    return j;
}

/* Places job with binpack and assigns it; returns the GPU index or -1. */
static int place(struct cluster *c, struct job *job)
{
    struct placement_config cfg;
    placement_config_defaults(&cfg);
    struct placement_choice choice;
    char why[TIDE_REASON_MAX] = "";
    if (fx_choose(&placement_binpack, &cfg, c, job, &choice, why) != PLACEMENT_FOUND)
        return -1;
    cluster_assign(c, job, choice.node, choice.gpu_index, choice.ngpus);
    return choice.gpu_index[0];
}

static void test_four_shares_pack_onto_one_gpu_by_memory(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node n = fx_node(1, 2, "T4", T4_MIB);
    cluster_put_node(&c, &n);
    for (int i = 1; i <= 4; i++) {
        struct job *j = cluster_add_job(&c, &(struct job){0});
        *j = share_job(i, 4000);
        assert_int_equal(place(&c, j), 0);
    }
    struct gpu *g = &cluster_find_node(&c, 1)->gpus[0];
    assert_int_equal(g->shared_jobs, 4);
    assert_int_equal(g->shared_memory_mib, 16000);
    assert_int_equal(g->job_id, 0);
    /* a fifth does not fit GPU 0's 384 MiB left: it opens GPU 1 */
    struct job fifth = share_job(5, 4000);
    assert_int_equal(place(&c, &fifth), 1);
    cluster_release(&c);
}

static void test_shared_gpu_is_not_free_for_an_exclusive_job(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node n = fx_node(1, 1, "T4", T4_MIB);
    cluster_put_node(&c, &n);
    struct job s = share_job(1, 4000);
    assert_int_equal(place(&c, &s), 0);
    assert_false(gpu_is_free(&c.nodes[0].gpus[0]));
    assert_int_equal(placement_node_free_gpus(&c.nodes[0]), 0);
    struct job whole = fx_job(2, 1);
    struct placement_config cfg;
    placement_config_defaults(&cfg);
    struct placement_choice choice;
    char why[TIDE_REASON_MAX] = "";
    assert_int_equal(fx_choose(&placement_binpack, &cfg, &c, &whole, &choice, why),
                     PLACEMENT_NOT_NOW);
    assert_int_equal(cluster_gpus_allocated(&c), 1);
    cluster_release(&c);
}

static void test_exclusive_gpu_takes_no_shares(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node n = fx_node(1, 1, "T4", T4_MIB);
    cluster_put_node(&c, &n);
    struct job whole = fx_job(1, 1);
    assert_int_equal(place(&c, &whole), 0);
    struct job s = share_job(2, 1000);
    assert_int_equal(place(&c, &s), -1);
    cluster_release(&c);
}

static void test_best_fit_prefers_the_fullest_shared_gpu(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node n = fx_node(1, 3, "T4", T4_MIB);
    cluster_put_node(&c, &n);
    struct gpu *g = c.nodes[0].gpus;
    /* GPU 0 has 8000 left, GPU 1 has 3000 left, GPU 2 is whole */
    g[0].shared_jobs = 1, g[0].shared_memory_mib = T4_MIB - 8000;
    g[1].shared_jobs = 2, g[1].shared_memory_mib = T4_MIB - 3000;
    struct job small = share_job(10, 2500);
    assert_int_equal(place(&c, &small), 1);
    struct job mid = share_job(11, 6000);
    assert_int_equal(place(&c, &mid), 0);
    assert_true(gpu_is_free(&c.nodes[0].gpus[2]));
    cluster_release(&c);
}

static void test_unassign_gives_the_memory_back(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node n = fx_node(1, 1, "T4", T4_MIB);
    cluster_put_node(&c, &n);
    struct job *a = cluster_add_job(&c, &(struct job){0});
    *a = share_job(1, 6000);
    struct job *b = cluster_add_job(&c, &(struct job){0});
    *b = share_job(2, 5000);
    assert_int_equal(place(&c, a), 0);
    assert_int_equal(place(&c, b), 0);
    cluster_remove_job(&c, 1);
    struct gpu *g = &c.nodes[0].gpus[0];
    assert_int_equal(g->shared_jobs, 1);
    assert_int_equal(g->shared_memory_mib, 5000);
    cluster_remove_job(&c, 2);
    assert_int_equal(g->shared_jobs, 0);
    assert_int_equal(g->shared_memory_mib, 0);
    assert_true(gpu_is_free(g));
    cluster_release(&c);
}

static void test_share_larger_than_every_gpu_is_never(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node n = fx_node(1, 1, "T4", T4_MIB);
    cluster_put_node(&c, &n);
    struct job big = share_job(1, T4_MIB + 1);
    struct placement_config cfg;
    placement_config_defaults(&cfg);
    struct placement_choice choice;
    char why[TIDE_REASON_MAX] = "";
    assert_int_equal(fx_choose(&placement_spread, &cfg, &c, &big, &choice, why), PLACEMENT_NEVER);
    assert_non_null(strstr(why, "enough memory"));
    cluster_release(&c);
}

static void test_a_whole_gpus_worth_of_memory_holds_the_gpu_exclusively(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node n = fx_node(1, 1, "T4", T4_MIB);
    cluster_put_node(&c, &n);
    struct job full = share_job(1, T4_MIB);
    assert_int_equal(place(&c, &full), 0);
    assert_int_equal(c.nodes[0].gpus[0].job_id, 1);
    assert_int_equal(c.nodes[0].gpus[0].shared_jobs, 0);
    cluster_release(&c);
}

static void test_sched_pass_starts_four_shares_and_the_exclusive_job_waits(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node n = fx_node(1, 1, "T4", T4_MIB);
    cluster_put_node(&c, &n);
    for (int i = 1; i <= 4; i++) {
        struct job j = share_job(i, 4000);
        cluster_add_job(&c, &j);
    }
    struct job whole = fx_job(5, 1);
    cluster_add_job(&c, &whole);
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    struct scheduler s;
    sched_init(&s, &cfg);
    struct action_list out;
    action_list_init(&out);
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 4);
    assert_int_equal(fx_count(&out, ACTION_START, 5), 0);
    for (int i = 1; i <= 4; i++)
        cluster_remove_job(&c, i);
    action_list_clear(&out);
    assert_int_equal(sched_pass(&s, &c, 2000, &out), 1);
    assert_int_equal(fx_count(&out, ACTION_START, 5), 1);
    action_list_release(&out);
    sched_release(&s);
    cluster_release(&c);
}

int main(void)
{
#define T(f) cmocka_unit_test(f)
    const struct CMUnitTest tests[] = {
        T(test_four_shares_pack_onto_one_gpu_by_memory),
        T(test_shared_gpu_is_not_free_for_an_exclusive_job),
        T(test_exclusive_gpu_takes_no_shares),
        T(test_best_fit_prefers_the_fullest_shared_gpu),
        T(test_unassign_gives_the_memory_back),
        T(test_share_larger_than_every_gpu_is_never),
        T(test_a_whole_gpus_worth_of_memory_holds_the_gpu_exclusively),
        T(test_sched_pass_starts_four_shares_and_the_exclusive_job_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
