/* Unit tests for load-aware placement (src/core/placement.c, placement_loadaware.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/placement.h"
#include "core/placement_index.h"

#include "cluster_fixture.h"

static struct cluster c;
static struct placement_config cfg;
static struct placement_choice choice;
static char why[TIDE_REASON_MAX];

static int setup(void **state)
{
    (void)state;
    cluster_init(&c);
    placement_config_defaults(&cfg);
    memset(&choice, 0, sizeof choice);
    memset(why, 0, sizeof why);
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

/* Marks the first `held` GPUs of node as held by job 999. */
static void hold_gpus(struct node *n, int held)
{
    for (int g = 0; g < held; g++)
        n->gpus[g].job_id = 999;
}

static enum placement_result place(const struct job *job)
{
    return fx_choose(&placement_loadaware, &cfg, &c, job, &choice, why);
}

static void assert_why_contains(const char *part)
{
    if (!strstr(why, part))
        print_error("reason '%s' lacks '%s'\n", why, part);
    assert_non_null(strstr(why, part));
}

static void test_job_fits_on_a_node_with_enough_free_gpus(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    struct job job = fx_job(1, 2);
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    assert_int_equal(choice.node->id, 1);
    assert_int_equal(choice.ngpus, 2);
    assert_int_not_equal(choice.gpu_index[0], choice.gpu_index[1]);
}

static void test_more_gpus_than_any_node_has_is_never(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    add_node(fx_h200_node(2, 8));
    struct job job = fx_job(1, 16);
    assert_int_equal(place(&job), PLACEMENT_NEVER);
    assert_why_contains("no ready node has 16 GPUs");
}

static void test_all_gpus_held_is_not_now(void **state)
{
    (void)state;
    hold_gpus(add_node(fx_h200_node(1, 8)), 8);
    struct job job = fx_job(1, 2);
    assert_int_equal(place(&job), PLACEMENT_NOT_NOW);
    assert_why_contains("waiting for 2 free GPUs on one node (most free now: 0)");
}

static void test_free_gpus_split_across_nodes_is_not_now(void **state)
{
    (void)state;
    hold_gpus(add_node(fx_h200_node(1, 8)), 4);
    hold_gpus(add_node(fx_h200_node(2, 8)), 4);
    struct job job = fx_job(1, 6);
    assert_int_equal(place(&job), PLACEMENT_NOT_NOW);
    assert_why_contains("most free now: 4");
}

static void test_gpu_memory_is_a_minimum_per_gpu(void **state)
{
    (void)state;
    add_node(fx_node(1, 8, "L4", 24576));
    add_node(fx_node(2, 8, "A100", 81920));
    struct job job = fx_job(1, 1);
    job.gpu_memory_mib = 40000;
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    assert_int_equal(choice.node->id, 2);
}

static void test_gpu_with_exactly_the_memory_asked_for_fits(void **state)
{
    (void)state;
    add_node(fx_node(1, 1, "A100", 81920));
    struct job job = fx_job(1, 1);
    job.gpu_memory_mib = 81920;
    assert_int_equal(place(&job), PLACEMENT_FOUND);
}

static void test_gpu_memory_above_every_gpu_is_never(void **state)
{
    (void)state;
    add_node(fx_node(1, 8, "A100", 81920));
    struct job job = fx_job(1, 1);
    job.gpu_memory_mib = 100000;
    assert_int_equal(place(&job), PLACEMENT_NEVER);
    assert_why_contains("of enough memory");
}

static void test_gpu_model_glob_picks_the_matching_node(void **state)
{
    (void)state;
    add_node(fx_node(1, 8, "A100", 81920));
    add_node(fx_node(2, 8, "H200 SXM", FX_H200_MIB));
    struct job job = fx_job(1, 1);
    snprintf(job.gpu_model, sizeof job.gpu_model, "H200*");
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    assert_int_equal(choice.node->id, 2);
}

static void test_gpu_model_glob_ignores_case(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 1));
    struct job job = fx_job(1, 1);
    snprintf(job.gpu_model, sizeof job.gpu_model, "h200*");
    assert_int_equal(place(&job), PLACEMENT_FOUND);
}

static void test_gpu_model_glob_matches_nvml_names_without_their_vendor_prefix(void **state)
{
    (void)state;
    add_node(fx_node(1, 8, "NVIDIA H200", FX_H200_MIB));
    struct job job = fx_job(1, 1);
    snprintf(job.gpu_model, sizeof job.gpu_model, "H200*");
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    snprintf(job.gpu_model, sizeof job.gpu_model, "NVIDIA H2*");
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    snprintf(job.gpu_model, sizeof job.gpu_model, "A100*");
    assert_int_equal(place(&job), PLACEMENT_NEVER);
}

static void test_gpu_model_no_node_has_is_never_and_named(void **state)
{
    (void)state;
    add_node(fx_node(1, 8, "A100", 81920));
    struct job job = fx_job(1, 1);
    snprintf(job.gpu_model, sizeof job.gpu_model, "H200*");
    assert_int_equal(place(&job), PLACEMENT_NEVER);
    assert_why_contains("matching H200*");
}

static void test_gpu_over_memory_threshold_is_skipped(void **state)
{
    (void)state;
    struct node *n = add_node(fx_node(1, 2, "A100", 1000));
    n->gpus[0].memory_used_mib = 801;
    n->gpus[1].utilization_pct = 50; /* busier, so only the threshold can rule out GPU 0 */
    struct job job = fx_job(1, 1);
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    assert_int_equal(choice.gpu_index[0], 1);
}

static void test_gpu_over_utilisation_threshold_is_skipped(void **state)
{
    (void)state;
    struct node *n = add_node(fx_h200_node(1, 2));
    n->gpus[0].utilization_pct = 91;
    struct job job = fx_job(1, 2);
    assert_int_equal(place(&job), PLACEMENT_NOT_NOW);
}

static void test_gpu_exactly_at_the_thresholds_is_still_eligible(void **state)
{
    (void)state;
    struct node *n = add_node(fx_node(1, 1, "A100", 1000));
    n->gpus[0].memory_used_mib = 800;
    n->gpus[0].utilization_pct = 90;
    struct job job = fx_job(1, 1);
    assert_int_equal(place(&job), PLACEMENT_FOUND);
}

static void test_load_thresholds_are_configurable(void **state)
{
    (void)state;
    struct node *n = add_node(fx_node(1, 2, "A100", 1000));
    n->gpus[0].utilization_pct = 60;
    n->gpus[1].memory_used_mib = 600;
    struct job job = fx_job(1, 1);
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    cfg.max_gpu_utilization_pct = 50;
    cfg.max_gpu_memory_used_pct = 50;
    assert_int_equal(place(&job), PLACEMENT_NOT_NOW);
}

static void test_only_overloaded_free_gpus_is_not_now_naming_the_thresholds(void **state)
{
    (void)state;
    struct node *n = add_node(fx_h200_node(1, 2));
    n->gpus[0].utilization_pct = 100;
    n->gpus[1].utilization_pct = 95;
    struct job job = fx_job(1, 1);
    assert_int_equal(place(&job), PLACEMENT_NOT_NOW);
    assert_why_contains("over the load thresholds (memory 80%, utilisation 90%)");
}

static void test_least_loaded_gpus_are_picked(void **state)
{
    (void)state;
    struct node *n = add_node(fx_h200_node(1, 4));
    n->gpus[0].utilization_pct = 50;
    n->gpus[1].utilization_pct = 10;
    n->gpus[2].utilization_pct = 30;
    n->gpus[3].utilization_pct = 0;
    struct job job = fx_job(1, 2);
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    assert_int_equal(choice.gpu_index[0], 3);
    assert_int_equal(choice.gpu_index[1], 1);
}

static void test_memory_use_breaks_ties_in_utilisation(void **state)
{
    (void)state;
    struct node *n = add_node(fx_node(1, 2, "A100", 1000));
    n->gpus[0].memory_used_mib = 500;
    n->gpus[1].memory_used_mib = 100;
    struct job job = fx_job(1, 1);
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    assert_int_equal(choice.gpu_index[0], 1);
}

static void test_gpus_of_equal_load_are_taken_in_index_order(void **state)
{
    (void)state;
    struct node *n = add_node(fx_h200_node(1, 3));
    n->gpus[0].utilization_pct = 5;
    n->gpus[1].utilization_pct = 5;
    n->gpus[2].utilization_pct = 0;
    struct job job = fx_job(1, 2);
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    assert_int_equal(choice.gpu_index[0], 2);
    assert_int_equal(choice.gpu_index[1], 0);
}

static void test_held_gpus_are_never_picked(void **state)
{
    (void)state;
    struct node *n = add_node(fx_h200_node(1, 4));
    hold_gpus(n, 3);
    struct job job = fx_job(1, 1);
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    assert_int_equal(choice.gpu_index[0], 3);
}

static void test_least_loaded_node_wins_over_fuller_node(void **state)
{
    (void)state;
    struct node *busy = add_node(fx_h200_node(1, 8));
    hold_gpus(busy, 6);
    busy->gpus[6].utilization_pct = 40;
    busy->gpus[7].utilization_pct = 40;
    add_node(fx_h200_node(2, 8));
    struct job job = fx_job(1, 2);
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    assert_int_equal(choice.node->id, 2);
}

static void test_fuller_node_is_preferred_when_load_is_equal(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    hold_gpus(add_node(fx_h200_node(2, 8)), 6);
    struct job job = fx_job(1, 2);
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    assert_int_equal(choice.node->id, 2);
    assert_int_equal(choice.gpu_index[0], 6);
    assert_int_equal(choice.gpu_index[1], 7);
}

static void test_lost_node_is_never_chosen(void **state)
{
    (void)state;
    struct node lost = fx_h200_node(1, 8);
    lost.state = NODE_LOST;
    add_node(lost);
    hold_gpus(add_node(fx_h200_node(2, 8)), 8);
    struct job job = fx_job(1, 1);
    assert_int_not_equal(place(&job), PLACEMENT_FOUND);
    c.nodes[1].gpus[7].job_id = 0;
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    assert_int_equal(choice.node->id, 2);
}

static void test_more_cpus_than_any_node_has_is_never(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    struct job job = fx_job(1, 1);
    job.cpus = FX_NODE_CPUS + 1;
    assert_int_equal(place(&job), PLACEMENT_NEVER);
    assert_why_contains("65 CPUs");
}

static void test_reason_names_no_cpus_or_memory_a_job_did_not_ask_for(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    struct job job = fx_job(1, 16);
    assert_int_equal(place(&job), PLACEMENT_NEVER);
    assert_why_contains("16 GPUs");
    if (strstr(why, "CPU") || strstr(why, "memory"))
        print_error("reason '%s' mentions what the job did not ask for\n", why);
    assert_null(strstr(why, "CPU"));
    assert_null(strstr(why, "memory"));
}

static void test_cpus_in_use_is_not_now(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8))->cpus_allocated = FX_NODE_CPUS - 4;
    struct job job = fx_job(1, 1);
    job.cpus = 8;
    assert_int_equal(place(&job), PLACEMENT_NOT_NOW);
    assert_why_contains("free CPUs or memory");
}

static void test_more_memory_than_any_node_has_is_never(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    struct job job = fx_job(1, 1);
    job.memory_mib = FX_NODE_MEMORY_MIB + 1;
    assert_int_equal(place(&job), PLACEMENT_NEVER);
}

static void test_memory_in_use_is_not_now_and_another_node_is_used(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8))->memory_allocated_mib = FX_NODE_MEMORY_MIB;
    struct job job = fx_job(1, 1);
    job.memory_mib = 1024;
    assert_int_equal(place(&job), PLACEMENT_NOT_NOW);
    add_node(fx_h200_node(2, 8));
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    assert_int_equal(choice.node->id, 2);
}

static void test_job_without_gpus_fits_a_node_whose_gpus_are_all_held(void **state)
{
    (void)state;
    hold_gpus(add_node(fx_h200_node(1, 8)), 8);
    struct job job = fx_job(1, 0);
    job.cpus = 2;
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    assert_int_equal(choice.ngpus, 0);
}

static void test_placement_leaves_the_cluster_unchanged(void **state)
{
    (void)state;
    struct node *n = add_node(fx_h200_node(1, 8));
    struct node before = *n;
    struct job job = fx_job(1, 4);
    job.cpus = 8;
    job.memory_mib = 1024;
    assert_int_equal(place(&job), PLACEMENT_FOUND);
    assert_memory_equal(n, &before, sizeof before);
}

static void test_empty_cluster_is_never(void **state)
{
    (void)state;
    struct job job = fx_job(1, 1);
    assert_int_equal(place(&job), PLACEMENT_NEVER);
}

static void test_strategy_is_found_by_name(void **state)
{
    (void)state;
    assert_ptr_equal(placement_by_name("loadaware"), &placement_loadaware);
    assert_null(placement_by_name("binpack-nope"));
}

/* --- the shape memo: "could any node ever hold it" once per shape and pass --- */

static struct placement_index memo_idx;

/* Two 2-GPU nodes and one 8-GPU node whose GPUs are all held, indexed with
 * the memo on. */
static struct node *memo_cluster(void)
{
    add_node(fx_h200_node(1, 2));
    add_node(fx_h200_node(2, 2));
    struct node *big = add_node(fx_h200_node(3, 8));
    hold_gpus(big, 8);
    placement_index_init(&memo_idx);
    assert_int_equal(placement_index_build(&memo_idx, &c, NULL, NULL), 0);
    c.index = &memo_idx;
    placement_index_memo_start(&memo_idx);
    return big;
}

static void memo_done(void)
{
    c.index = NULL;
    placement_index_release(&memo_idx);
}

static void test_memo_answers_a_shape_seen_before_without_looking_at_the_nodes(void **state)
{
    (void)state;
    struct node *big = memo_cluster();
    struct job job = fx_job(1, 8);
    assert_int_equal(placement_loadaware.choose(&cfg, &c, &job, &choice, NULL), PLACEMENT_NOT_NOW);
    assert_int_equal(placement_index_memo_find(&c, &job), 1);
    /* Behind the memo's back (a pass never does this), the big node goes:
     * the memo still answers for the shape, and only while it is on. */
    big->state = NODE_LOST;
    struct job same = fx_job(2, 8);
    assert_int_equal(placement_loadaware.choose(&cfg, &c, &same, &choice, NULL), PLACEMENT_NOT_NOW);
    placement_index_memo_stop(&memo_idx);
    assert_int_equal(placement_index_memo_find(&c, &same), -1);
    assert_int_equal(placement_loadaware.choose(&cfg, &c, &same, &choice, NULL), PLACEMENT_NEVER);
    memo_done();
}

static void test_memo_tells_apart_shapes_that_differ_in_any_constraint(void **state)
{
    (void)state;
    memo_cluster();
    struct job job = fx_job(1, 8);
    assert_int_equal(placement_loadaware.choose(&cfg, &c, &job, &choice, NULL), PLACEMENT_NOT_NOW);
    struct job more_memory = job, other_model = job, more_cpus = job, more_gpus = job;
    more_memory.gpu_memory_mib = FX_H200_MIB + 1;
    snprintf(other_model.gpu_model, sizeof other_model.gpu_model, "A100*");
    more_cpus.cpus = FX_NODE_CPUS + 1;
    more_gpus.gpus = 9;
    const struct job *never[] = {&more_memory, &other_model, &more_cpus, &more_gpus};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(placement_index_memo_find(&c, never[i]), -1);
        assert_int_equal(placement_loadaware.choose(&cfg, &c, never[i], &choice, NULL),
                         PLACEMENT_NEVER);
        assert_int_equal(placement_index_memo_find(&c, never[i]), 0);
    }
    assert_int_equal(placement_index_memo_find(&c, &job), 1);
    memo_done();
}

static void test_memo_answer_never_still_gives_the_reason(void **state)
{
    (void)state;
    memo_cluster();
    struct job job = fx_job(1, 16);
    assert_int_equal(placement_loadaware.choose(&cfg, &c, &job, &choice, NULL), PLACEMENT_NEVER);
    assert_int_equal(place(&job), PLACEMENT_NEVER);
    assert_why_contains("no ready node has 16 GPUs");
    struct job blocked = fx_job(2, 8);
    assert_int_equal(placement_loadaware.choose(&cfg, &c, &blocked, &choice, NULL),
                     PLACEMENT_NOT_NOW);
    assert_int_equal(place(&blocked), PLACEMENT_NOT_NOW);
    assert_why_contains("waiting for 8 free GPUs on one node (most free now: 0)");
    memo_done();
}

static void test_memo_words_a_shape_again_only_once_a_node_changed(void **state)
{
    (void)state;
    struct node *big = memo_cluster();
    struct job job = fx_job(1, 8), same = fx_job(2, 8);
    assert_int_equal(place(&job), PLACEMENT_NOT_NOW);
    assert_string_equal(why, "waiting for 8 free GPUs on one node (most free now: 0)");
    /* Behind the index's back (a pass never does this) three GPUs come
     * free: the remembered reason still stands for the shape... */
    for (int g = 0; g < 3; g++)
        big->gpus[g].job_id = 0;
    assert_int_equal(place(&same), PLACEMENT_NOT_NOW);
    assert_string_equal(why, "waiting for 8 free GPUs on one node (most free now: 0)");
    /* ...until the node is refreshed, as every cluster_* change does. */
    placement_index_refresh(&memo_idx, &c, big);
    assert_int_equal(place(&same), PLACEMENT_NOT_NOW);
    assert_string_equal(why, "waiting for 8 free GPUs on one node (most free now: 3)");
    memo_done();
}

/* Once a node changed, a shape seen before is worded from the index's
 * buckets, and names the first node in cluster order with the most free
 * GPUs as a scan does, whatever order the buckets rank nodes in: here
 * binpack ranks the 8-GPU node (its free GPUs over the thresholds) before
 * the 4-GPU node (free GPUs fine, no CPU left) that comes first. */
static void test_memo_words_a_changed_cluster_from_the_buckets_as_a_scan_would(void **state)
{
    (void)state;
    struct node *a = add_node(fx_h200_node(1, 4));
    hold_gpus(a, 2);
    a->cpus_allocated = FX_NODE_CPUS;
    struct node *b = add_node(fx_h200_node(2, 8));
    hold_gpus(b, 6);
    b->gpus[6].utilization_pct = b->gpus[7].utilization_pct = 95;
    struct job job = fx_job(1, 2);
    job.cpus = 1;
    const char *want = "waiting for free CPUs or memory on a node with 2 free GPUs";
    assert_int_equal(fx_choose(&placement_binpack, &cfg, &c, &job, &choice, why),
                     PLACEMENT_NOT_NOW);
    assert_string_equal(why, want); /* the scan's words */
    placement_index_init(&memo_idx);
    assert_int_equal(placement_index_build(&memo_idx, &c, placement_order_busiest_first, NULL), 0);
    c.index = &memo_idx;
    placement_index_memo_start(&memo_idx);
    assert_int_equal(fx_choose(&placement_binpack, &cfg, &c, &job, &choice, why),
                     PLACEMENT_NOT_NOW);
    assert_string_equal(why, want);
    placement_index_refresh(&memo_idx, &c, b); /* a change: the remembered words are stale */
    assert_int_equal(placement_index_memo_find(&c, &job), 1);
    assert_int_equal(fx_choose(&placement_binpack, &cfg, &c, &job, &choice, why),
                     PLACEMENT_NOT_NOW);
    assert_string_equal(why, want);
    memo_done();
}

static void test_memo_is_emptied_when_a_node_stops_being_ready(void **state)
{
    (void)state;
    struct node *big = memo_cluster();
    struct job job = fx_job(1, 8);
    assert_int_equal(placement_loadaware.choose(&cfg, &c, &job, &choice, NULL), PLACEMENT_NOT_NOW);
    big->state = NODE_LOST;
    placement_index_refresh(&memo_idx, &c, big);
    assert_int_equal(placement_index_memo_find(&c, &job), -1);
    assert_int_equal(placement_loadaware.choose(&cfg, &c, &job, &choice, NULL), PLACEMENT_NEVER);
    memo_done();
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_job_fits_on_a_node_with_enough_free_gpus),
        T(test_more_gpus_than_any_node_has_is_never),
        T(test_all_gpus_held_is_not_now),
        T(test_free_gpus_split_across_nodes_is_not_now),
        T(test_gpu_memory_is_a_minimum_per_gpu),
        T(test_gpu_with_exactly_the_memory_asked_for_fits),
        T(test_gpu_memory_above_every_gpu_is_never),
        T(test_gpu_model_glob_picks_the_matching_node),
        T(test_gpu_model_glob_ignores_case),
        T(test_gpu_model_glob_matches_nvml_names_without_their_vendor_prefix),
        T(test_gpu_model_no_node_has_is_never_and_named),
        T(test_gpu_over_memory_threshold_is_skipped),
        T(test_gpu_over_utilisation_threshold_is_skipped),
        T(test_gpu_exactly_at_the_thresholds_is_still_eligible),
        T(test_load_thresholds_are_configurable),
        T(test_only_overloaded_free_gpus_is_not_now_naming_the_thresholds),
        T(test_least_loaded_gpus_are_picked),
        T(test_memory_use_breaks_ties_in_utilisation),
        T(test_gpus_of_equal_load_are_taken_in_index_order),
        T(test_held_gpus_are_never_picked),
        T(test_least_loaded_node_wins_over_fuller_node),
        T(test_fuller_node_is_preferred_when_load_is_equal),
        T(test_lost_node_is_never_chosen),
        T(test_more_cpus_than_any_node_has_is_never),
        T(test_reason_names_no_cpus_or_memory_a_job_did_not_ask_for),
        T(test_cpus_in_use_is_not_now),
        T(test_more_memory_than_any_node_has_is_never),
        T(test_memory_in_use_is_not_now_and_another_node_is_used),
        T(test_job_without_gpus_fits_a_node_whose_gpus_are_all_held),
        T(test_placement_leaves_the_cluster_unchanged),
        T(test_empty_cluster_is_never),
        T(test_strategy_is_found_by_name),
        T(test_memo_answers_a_shape_seen_before_without_looking_at_the_nodes),
        T(test_memo_tells_apart_shapes_that_differ_in_any_constraint),
        T(test_memo_answer_never_still_gives_the_reason),
        T(test_memo_words_a_shape_again_only_once_a_node_changed),
        T(test_memo_words_a_changed_cluster_from_the_buckets_as_a_scan_would),
        T(test_memo_is_emptied_when_a_node_stops_being_ready),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
