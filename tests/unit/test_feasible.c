/* Unit tests for the submit-time "could this job ever run" check (src/core/feasible.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/feasible.h"
#include "core/queue.h"

#include "cluster_fixture.h"

static struct cluster c;
static struct pool pools[4];
static int npools;
static struct tide_err err;

static int setup(void **state)
{
    (void)state;
    cluster_init(&c);
    memset(pools, 0, sizeof pools);
    npools = 0;
    tide_err_clear(&err);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cluster_release(&c);
    return 0;
}

static struct node *add_node(struct node n)
{
    struct node *stored = cluster_put_node(&c, &n);
    assert_non_null(stored);
    return stored;
}

static struct pool *add_pool(const char *name, const char *model, int gpus, int max_nodes)
{
    struct pool *p = &pools[npools++];
    pool_defaults(p);
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->gpu_model, sizeof p->gpu_model, "%s", model);
    p->gpus_per_node = gpus;
    p->gpu_memory_mib = FX_H200_MIB;
    p->min_nodes = 0;
    p->max_nodes = max_nodes;
    return p;
}

static int check(const struct job *job)
{
    tide_err_clear(&err);
    return feasible_check(&c, pools, npools, job, &err);
}

/* The job is refused, blaming field, and the message has each of parts. */
static void assert_refused(const struct job *job, const char *field, const char *part1,
                           const char *part2)
{
    int rc = check(job);
    if (rc == 0 || strcmp(err.field, field) || !strstr(err.message, part1) ||
        (part2 && !strstr(err.message, part2)))
        print_error("rc %d field '%s' message '%s'\n", rc, err.field, err.message);
    assert_int_equal(rc, TIDE_EINVAL);
    assert_string_equal(err.field, field);
    assert_non_null(strstr(err.message, part1));
    if (part2)
        assert_non_null(strstr(err.message, part2));
}

static void test_job_bigger_than_every_node_is_refused_naming_gpus_and_the_largest(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 4));
    add_node(fx_h200_node(2, 2));
    struct job job = fx_job(1, 8);
    assert_refused(&job, "gpus", "8 GPUs", "the largest has 4 (node node-1)");
}

static void test_job_that_fits_a_busy_node_is_accepted(void **state)
{
    (void)state;
    struct node n = fx_h200_node(1, 4);
    for (int g = 0; g < 4; g++)
        n.gpus[g].job_id = 999; /* all held: not now, but some day */
    add_node(n);
    struct job job = fx_job(1, 4);
    assert_int_equal(check(&job), 0);
}

static void test_gpu_model_no_node_or_pool_has_is_refused_listing_the_models(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 4));
    add_node(fx_node(2, 2, "A100", 81920));
    add_pool("elastic", "L4", 1, 3);
    struct job job = fx_job(1, 1);
    snprintf(job.gpu_model, sizeof job.gpu_model, "V100*");
    assert_refused(&job, "gpu_model", "'V100*'", "H200, A100, L4");
    snprintf(job.gpu_model, sizeof job.gpu_model, "a100*"); /* model globs ignore case */
    assert_int_equal(check(&job), 0);
}

static void test_model_that_exists_but_only_on_smaller_nodes_blames_gpus(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    add_node(fx_node(2, 2, "A100", 81920));
    struct job job = fx_job(1, 4);
    snprintf(job.gpu_model, sizeof job.gpu_model, "A100");
    assert_refused(&job, "gpus", "matching 'A100'", "the largest has 2 (node node-2)");
}

static void test_gpu_memory_above_every_gpu_is_refused_with_the_largest(void **state)
{
    (void)state;
    add_node(fx_node(1, 4, "A100", 81920));
    struct job job = fx_job(1, 1);
    job.gpu_memory_mib = 200000;
    assert_refused(&job, "gpu_memory", "200000 MiB", "81920 MiB");
}

static void test_pool_that_could_grow_a_big_enough_node_accepts_the_job(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 2));
    add_pool("big", "H200", 8, 2);
    struct job job = fx_job(1, 8);
    assert_int_equal(check(&job), 0);
    pools[0].max_nodes = 0; /* a pool that may make no node offers nothing */
    assert_refused(&job, "gpus", "8 GPUs", "node node-1");
}

static void test_pool_alone_is_enough_before_any_node_registered(void **state)
{
    (void)state;
    add_pool("elastic", "H200", 4, 3);
    struct job job = fx_job(1, 4);
    assert_int_equal(check(&job), 0);
    job.gpus = 8;
    assert_refused(&job, "gpus", "8 GPUs", "the largest has 4 (pool elastic)");
}

static void test_nothing_registered_and_no_pool_accepts_everything(void **state)
{
    (void)state;
    struct job job = fx_job(1, 64);
    snprintf(job.gpu_model, sizeof job.gpu_model, "V100*");
    assert_int_equal(check(&job), 0);
    struct node gone = fx_h200_node(1, 1);
    gone.state = NODE_RELEASED; /* a released node says nothing about the future */
    add_node(gone);
    assert_int_equal(check(&job), 0);
}

static void test_lost_node_still_counts_as_a_node_that_may_come_back(void **state)
{
    (void)state;
    struct node lost = fx_h200_node(1, 8);
    lost.state = NODE_LOST;
    add_node(lost);
    add_node(fx_h200_node(2, 2));
    struct job job = fx_job(1, 8);
    assert_int_equal(check(&job), 0);
}

static void test_gang_job_is_accepted_when_enough_nodes_hold_its_shares(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 4));
    add_node(fx_h200_node(2, 4));
    struct job job = fx_job(1, 8);
    job.max_nodes = 2;
    assert_int_equal(check(&job), 0);
    job.gpus = 12; /* 3 x 4 needs three nodes, 2 x 6 a node of 6 */
    job.max_nodes = 3;
    assert_refused(&job, "gpus", "12 GPUs", "up to 3 nodes");
    add_pool("elastic", "H200", 4, 1);
    assert_int_equal(check(&job), 0);
}

static void test_cpus_and_memory_above_every_node_are_refused_naming_them(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 4));
    struct job job = fx_job(1, 1);
    job.cpus = FX_NODE_CPUS + 1;
    assert_refused(&job, "cpus", "65 CPUs", "the largest has 64 (node node-1)");
    job.cpus = 0;
    job.memory_mib = FX_NODE_MEMORY_MIB * 2;
    assert_refused(&job, "memory", "1024000 MiB", "512000 MiB (node node-1)");
    add_pool("elastic", "H200", 4, 1); /* a pool does not say: its nodes might */
    assert_int_equal(check(&job), 0);
}

static void test_cpu_only_job_fits_any_node(void **state)
{
    (void)state;
    add_node(fx_node(1, 0, "", 0));
    struct job job = fx_job(1, 0);
    job.cpus = 4;
    assert_int_equal(check(&job), 0);
}

static void test_queue_limited_to_pools_ignores_nodes_outside_them(void **state)
{
    (void)state;
    struct queue_config q;
    memset(&q, 0, sizeof q);
    snprintf(q.name, sizeof q.name, "small");
    snprintf(q.pools[0], sizeof q.pools[0], "tiny");
    q.npools = 1;
    add_node(fx_h200_node(1, 8)); /* joined by hand: in no pool */
    add_pool("tiny", "H200", 2, 4);
    struct job job = fx_job(1, 4);
    job.rules = &q;
    assert_refused(&job, "gpus", "4 GPUs", "the largest has 2 (pool tiny)");
    job.rules = NULL;
    assert_int_equal(check(&job), 0);
}

static void test_non_preemptible_job_where_every_node_and_pool_is_spot_is_refused(void **state)
{
    (void)state;
    struct node *spot_node = add_node(fx_h200_node(1, 8));
    snprintf(spot_node->pool, sizeof spot_node->pool, "cheap");
    spot_node->spot = true;
    add_pool("cheap", "H200", 8, 4)->billing = BILLING_SPOT;
    struct job job = fx_job(1, 2);
    job.preemptible = false;
    assert_refused(&job, "preemptible", "is spot", "allow_spot: true");
    job.preemptible = true;
    assert_int_equal(check(&job), 0);
    struct queue_config q;
    memset(&q, 0, sizeof q);
    snprintf(q.name, sizeof q.name, "batch");
    q.allow_spot = true;
    job.preemptible = false;
    job.rules = &q;
    assert_int_equal(check(&job), 0);
    job.rules = NULL;
    add_pool("steady", "H200", 8, 1); /* on demand: room for the job that may not be preempted */
    assert_int_equal(check(&job), 0);
}

static void test_mig_profile_no_node_has_is_refused_naming_mig(void **state)
{
    (void)state;
    struct node n = fx_node(1, 2, "A100", 81920);
    n.gpus[0].mig_mode = true;
    n.gpus[1].index = 1;
    snprintf(n.gpus[1].mig_profile, sizeof n.gpus[1].mig_profile, "3g.40gb");
    n.gpus[1].mig_parent = 0;
    add_node(n);
    struct job job = fx_job(1, 1);
    snprintf(job.mig, sizeof job.mig, "1g.10gb");
    assert_refused(&job, "mig", "1g.10gb", "3g.40gb");
    snprintf(job.mig, sizeof job.mig, "3g.40gb");
    assert_int_equal(check(&job), 0);
    struct job whole = fx_job(2, 1); /* the only GPU is in MIG mode */
    assert_refused(&whole, "gpus", "whole GPU", "mig");
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_job_bigger_than_every_node_is_refused_naming_gpus_and_the_largest),
        T(test_job_that_fits_a_busy_node_is_accepted),
        T(test_gpu_model_no_node_or_pool_has_is_refused_listing_the_models),
        T(test_model_that_exists_but_only_on_smaller_nodes_blames_gpus),
        T(test_gpu_memory_above_every_gpu_is_refused_with_the_largest),
        T(test_pool_that_could_grow_a_big_enough_node_accepts_the_job),
        T(test_pool_alone_is_enough_before_any_node_registered),
        T(test_nothing_registered_and_no_pool_accepts_everything),
        T(test_lost_node_still_counts_as_a_node_that_may_come_back),
        T(test_gang_job_is_accepted_when_enough_nodes_hold_its_shares),
        T(test_cpus_and_memory_above_every_node_are_refused_naming_them),
        T(test_cpu_only_job_fits_any_node),
        T(test_queue_limited_to_pools_ignores_nodes_outside_them),
        T(test_non_preemptible_job_where_every_node_and_pool_is_spot_is_refused),
        T(test_mig_profile_no_node_has_is_refused_naming_mig),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
