/* Unit tests for binpack, spread and roundrobin placement, the placement
 * index and the fragmentation metric (src/core/placement*.c, cluster.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/placement.h"
#include "core/placement_index.h"
#include "core/sched.h"

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

static void add_node(struct node n)
{
    assert_non_null(cluster_put_node(&c, &n));
}

static struct node *node(int64_t id)
{
    struct node *n = cluster_find_node(&c, id);
    assert_non_null(n);
    return n;
}

/* Holds `held` GPUs of node id for a job of that id + 1000, through the cluster. */
static void hold(int64_t id, int held)
{
    struct job j = fx_job(1000 + id, held);
    struct job *job = cluster_add_job(&c, &j);
    assert_non_null(job);
    int idx[TIDE_MAX_GPUS_PER_NODE];
    for (int g = 0; g < held; g++)
        idx[g] = g;
    cluster_assign(&c, job, node(id), idx, held);
    job->state = JOB_RUNNING;
}

static enum placement_result place_with(const struct placement_ops *ops, int gpus)
{
    struct job job = fx_job(1, gpus);
    return fx_choose(ops, &cfg, &c, &job, &choice, why);
}

/* Runs one scheduler pass with strategy ops over the jobs in the cluster. */
static int pass_with(const struct placement_ops *ops)
{
    struct sched_config sc;
    sched_config_defaults(&sc);
    sc.placement = ops;
    struct scheduler s;
    sched_init(&s, &sc);
    struct action_list out;
    action_list_init(&out);
    int placed = sched_pass(&s, &c, 1000, &out);
    assert_null(c.index);
    action_list_release(&out);
    sched_release(&s);
    return placed;
}

static void add_pending(int64_t id, int gpus)
{
    struct job j = fx_job(id, gpus);
    assert_non_null(cluster_add_job(&c, &j));
}

static void test_binpack_is_the_default(void **state)
{
    (void)state;
    struct sched_config sc;
    sched_config_defaults(&sc);
    assert_ptr_equal(sc.placement, &placement_binpack);
}

static void test_every_strategy_is_found_by_name(void **state)
{
    (void)state;
    assert_ptr_equal(placement_by_name("binpack"), &placement_binpack);
    assert_ptr_equal(placement_by_name("spread"), &placement_spread);
    assert_ptr_equal(placement_by_name("roundrobin"), &placement_roundrobin);
    assert_ptr_equal(placement_by_name("loadaware"), &placement_loadaware);
    assert_non_null(strstr(placement_names(), "roundrobin"));
}

static void test_binpack_leaves_whole_nodes_empty(void **state)
{
    (void)state;
    for (int id = 1; id <= 4; id++)
        add_node(fx_h200_node(id, 8));
    for (int j = 1; j <= 8; j++)
        add_pending(j, 2);
    assert_int_equal(pass_with(&placement_binpack), 8);
    assert_int_equal(fx_gpus_held(node(1)), 8);
    assert_int_equal(fx_gpus_held(node(2)), 8);
    assert_int_equal(fx_gpus_held(node(3)), 0);
    assert_int_equal(fx_gpus_held(node(4)), 0);
}

static void test_binpack_prefers_the_node_left_with_fewest_free_gpus(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    add_node(fx_h200_node(2, 8));
    add_node(fx_h200_node(3, 8));
    hold(1, 2); /* 6 free */
    hold(2, 5); /* 3 free: a 3-GPU job leaves none */
    assert_int_equal(place_with(&placement_binpack, 3), PLACEMENT_FOUND);
    assert_int_equal(choice.node->id, 2);
    assert_int_equal(place_with(&placement_binpack, 4), PLACEMENT_FOUND);
    assert_int_equal(choice.node->id, 1);
}

static void test_binpack_breaks_ties_by_most_gpus_held_then_id(void **state)
{
    (void)state;
    add_node(fx_h200_node(5, 4)); /* 2 free, 2 held */
    add_node(fx_h200_node(3, 8)); /* 2 free, 6 held */
    add_node(fx_h200_node(2, 8)); /* 2 free, 6 held */
    hold(5, 2);
    hold(3, 6);
    hold(2, 6);
    assert_int_equal(place_with(&placement_binpack, 2), PLACEMENT_FOUND);
    assert_int_equal(choice.node->id, 2);
}

static void test_spread_takes_the_node_with_most_free_gpus(void **state)
{
    (void)state;
    for (int id = 1; id <= 4; id++)
        add_node(fx_h200_node(id, 8));
    for (int j = 1; j <= 4; j++)
        add_pending(j, 2);
    assert_int_equal(pass_with(&placement_spread), 4);
    for (int id = 1; id <= 4; id++)
        assert_int_equal(fx_gpus_held(node(id)), 2);
}

static void test_spread_prefers_the_emptier_of_equally_free_nodes(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    add_node(fx_h200_node(2, 4));
    hold(1, 4); /* both have 4 free; node 2 holds nothing */
    assert_int_equal(place_with(&placement_spread, 1), PLACEMENT_FOUND);
    assert_int_equal(choice.node->id, 2);
}

static void test_roundrobin_rotates_over_nodes_in_id_order(void **state)
{
    (void)state;
    add_node(fx_h200_node(3, 8));
    add_node(fx_h200_node(1, 8));
    add_node(fx_h200_node(2, 8));
    for (int j = 1; j <= 4; j++)
        add_pending(j, 1);
    assert_int_equal(pass_with(&placement_roundrobin), 4);
    assert_int_equal(cluster_find_job(&c, 1)->node_id, 1);
    assert_int_equal(cluster_find_job(&c, 2)->node_id, 2);
    assert_int_equal(cluster_find_job(&c, 3)->node_id, 3);
    assert_int_equal(cluster_find_job(&c, 4)->node_id, 1);
    assert_int_equal(c.last_assigned_node_id, 1);
}

static void test_roundrobin_skips_nodes_that_cannot_take_the_job(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    add_node(fx_h200_node(2, 8));
    add_node(fx_h200_node(3, 8));
    hold(2, 7);
    c.last_assigned_node_id = 1;
    assert_int_equal(place_with(&placement_roundrobin, 2), PLACEMENT_FOUND);
    assert_int_equal(choice.node->id, 3);
    c.last_assigned_node_id = 3;
    assert_int_equal(place_with(&placement_roundrobin, 2), PLACEMENT_FOUND);
    assert_int_equal(choice.node->id, 1);
}

static const struct placement_ops *const all[] = {&placement_binpack, &placement_spread,
                                                  &placement_roundrobin, &placement_loadaware};
#define NALL (sizeof all / sizeof all[0])

static void test_every_strategy_skips_overloaded_gpus(void **state)
{
    (void)state;
    add_node(fx_node(1, 2, "A100", 1000));
    node(1)->gpus[0].utilization_pct = 91;
    node(1)->gpus[1].memory_used_mib = 801;
    for (size_t k = 0; k < NALL; k++) {
        assert_int_equal(place_with(all[k], 1), PLACEMENT_NOT_NOW);
        assert_non_null(strstr(why, "over the load thresholds"));
    }
    node(1)->gpus[1].memory_used_mib = 800; /* at the threshold is still eligible */
    for (size_t k = 0; k < NALL; k++) {
        assert_int_equal(place_with(all[k], 1), PLACEMENT_FOUND);
        assert_int_equal(choice.gpu_index[0], 1);
    }
}

static void test_every_strategy_answers_the_same_when_no_reason_is_wanted(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    hold(1, 8);
    for (size_t k = 0; k < NALL; k++) {
        struct job job = fx_job(1, 2);
        assert_int_equal(all[k]->choose(&cfg, &c, &job, &choice, NULL), PLACEMENT_NOT_NOW);
        job.gpus = 9;
        assert_int_equal(all[k]->choose(&cfg, &c, &job, &choice, NULL), PLACEMENT_NEVER);
        job = fx_job(2, 1);
        job.gpu_memory_mib = 1000; /* a share: placement_slice */
        assert_int_equal(all[k]->choose(&cfg, &c, &job, &choice, NULL), PLACEMENT_NOT_NOW);
        job.gpu_memory_mib = FX_H200_MIB + 1;
        assert_int_equal(all[k]->choose(&cfg, &c, &job, &choice, NULL), PLACEMENT_NEVER);
    }
}

/* The brute-force rule loadaware follows, written out for the test: of
 * the nodes that can take job now, the lowest summed load key of its
 * least-loaded eligible GPUs, then fewest free GPUs left, then cluster order. */
static struct node *loadaware_by_hand(const struct job *job)
{
    struct node *best = NULL;
    long best_load = 0;
    int best_left = 0;
    for (size_t i = 0; i < c.nnodes; i++) {
        struct node *n = &c.nodes[i];
        if (n->state != NODE_READY || !placement_host_fits_now(n, job))
            continue;
        int keys[TIDE_MAX_GPUS_PER_NODE], k = 0, free_gpus = 0;
        for (int g = 0; g < n->ngpus; g++) {
            if (n->gpus[g].job_id)
                continue;
            free_gpus++;
            if (!placement_gpu_overloaded(&cfg, &n->gpus[g]))
                keys[k++] = placement_gpu_load_key(&n->gpus[g]);
        }
        if (k < job->gpus)
            continue;
        long load = 0;
        for (int taken = 0; taken < job->gpus; taken++) { /* the smallest, one at a time */
            int min = 0;
            for (int j = 1; j < k; j++)
                if (keys[j] < keys[min])
                    min = j;
            load += keys[min];
            keys[min] = 1 << 30;
        }
        int left = free_gpus - job->gpus;
        if (!best || load < best_load || (load == best_load && left < best_left)) {
            best = n;
            best_load = load;
            best_left = left;
        }
    }
    return best;
}

/* The load index (placement_load.h) on random clusters: nodes of 1-8 GPUs,
 * some not ready, GPUs held, busy, over the thresholds, CPUs allocated;
 * jobs of 0-9 GPUs, some asking for many CPUs. Its choice is the
 * brute-force rule's, and stays so as the cluster changes under it (jobs
 * start and end, telemetry moves, trees are built when first asked). */
static void test_loadaware_with_the_load_index_chooses_what_a_brute_force_scan_does(void **state)
{
    (void)state;
    uint64_t x = 11;
#define NEXT() (x = x * 6364136223846793005ULL + 1442695040888963407ULL, (unsigned)(x >> 33))
    for (int64_t id = 1; id <= 40; id++) {
        struct node n = fx_h200_node(id, 1 + (int)(NEXT() % 8));
        n.state = NEXT() % 10 == 0 ? NODE_DRAINING : NODE_READY;
        n.cpus_allocated = (int)(NEXT() % (FX_NODE_CPUS + 1));
        add_node(n);
    }
    struct placement_index idx;
    placement_index_init(&idx);
    for (int round = 0; round < 100; round++) {
        c.index = NULL;
        for (size_t j = c.njobs; j-- > 0;)
            cluster_remove_job(&c, c.jobs[j].id);
        for (size_t i = 0; i < c.nnodes; i++) {
            struct node *n = &c.nodes[i];
            int held = (int)(NEXT() % (unsigned)(n->ngpus + 1));
            if (held && NEXT() % 2)
                hold(n->id, held);
            for (int g = 0; g < n->ngpus; g++) {
                unsigned r = NEXT();
                n->gpus[g].utilization_pct = r % 3 == 0 ? 0 : (int)(r % 100);
                n->gpus[g].memory_used_mib = r % 5 == 0 ? (int64_t)(NEXT() % FX_H200_MIB) : 0;
            }
        }
        assert_int_equal(placement_index_build(&idx, &c, NULL, &cfg), 0);
        c.index = &idx;
        assert_non_null(placement_index_load(&c, &cfg));
        for (int step = 0; step < 20; step++) {
            struct job job = fx_job(1, (int)(NEXT() % 10));
            job.cpus = NEXT() % 4 == 0 ? (int)(NEXT() % FX_NODE_CPUS) : 0;
            struct node *expect = loadaware_by_hand(&job);
            enum placement_result r = placement_loadaware.choose(&cfg, &c, &job, &choice, NULL);
            assert_int_equal(r == PLACEMENT_FOUND, expect != NULL);
            if (!expect)
                continue;
            assert_ptr_equal(choice.node, expect);
            /* Start it, so the next job sees the index refreshed. */
            job.id = 5000 + round * 100 + step;
            struct job *added = cluster_add_job(&c, &job);
            assert_non_null(added);
            cluster_assign(&c, added, choice.node, choice.gpu_index, choice.ngpus);
            added->state = JOB_RUNNING;
            /* Now and then a job ends or a node's telemetry changes: a
             * node that gets better must win again in every tree. */
            if (NEXT() % 3 == 0) {
                struct job *done = &c.jobs[NEXT() % c.njobs];
                if (done->ngpus_assigned > 0)
                    cluster_unassign(&c, done);
            }
            if (NEXT() % 3 == 0) {
                struct node changed = c.nodes[NEXT() % c.nnodes];
                for (int g = 0; g < changed.ngpus; g++)
                    changed.gpus[g].utilization_pct = (int)(NEXT() % 100);
                assert_non_null(cluster_put_node(&c, &changed));
            }
        }
    }
#undef NEXT
    c.index = NULL;
    placement_index_release(&idx);
}

/* Loadaware with the index visits buckets and stops at the first idle node;
 * over many mixes of held GPUs and load it must choose what a full scan does. */
static void test_loadaware_with_the_index_chooses_what_a_scan_does(void **state)
{
    (void)state;
    for (int64_t id = 1; id <= 24; id++)
        add_node(fx_h200_node(id, 8));
    uint64_t x = 7;
    struct placement_index idx;
    placement_index_init(&idx);
    for (int round = 0; round < 200; round++) {
        for (size_t j = c.njobs; j-- > 0;)
            cluster_remove_job(&c, c.jobs[j].id);
        for (int64_t id = 1; id <= 24; id++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            int held = (int)((x >> 33) % 9);
            if (held)
                hold(id, held);
            for (int g = 0; g < 8; g++)
                node(id)->gpus[g].utilization_pct = (x >> (g + 40)) & 1 ? 0 : (int)((x >> 20) % 50);
        }
        for (int gpus = 1; gpus <= 8; gpus++) {
            c.index = NULL;
            enum placement_result scanned = place_with(&placement_loadaware, gpus);
            struct placement_choice by_scan = choice;
            assert_int_equal(placement_index_build(&idx, &c, NULL, NULL), 0);
            c.index = &idx;
            assert_int_equal(place_with(&placement_loadaware, gpus), scanned);
            if (scanned == PLACEMENT_FOUND) {
                assert_ptr_equal(choice.node, by_scan.node);
                assert_memory_equal(choice.gpu_index, by_scan.gpu_index, sizeof(int) * (size_t)gpus);
            }
        }
    }
    c.index = NULL;
    placement_index_release(&idx);
}

static void test_every_strategy_keeps_not_now_and_never_apart(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    hold(1, 8);
    for (size_t k = 0; k < NALL; k++) {
        assert_int_equal(place_with(all[k], 2), PLACEMENT_NOT_NOW);
        assert_non_null(strstr(why, "most free now: 0"));
        assert_int_equal(place_with(all[k], 9), PLACEMENT_NEVER);
        assert_non_null(strstr(why, "no ready node has 9 GPUs"));
        struct job job = fx_job(1, 1);
        job.cpus = FX_NODE_CPUS + 1;
        assert_int_equal(fx_choose(all[k], &cfg, &c, &job, &choice, why), PLACEMENT_NEVER);
    }
}

static void test_every_strategy_leaves_the_cluster_unchanged(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    hold(1, 3);
    struct node before = *node(1);
    for (size_t k = 0; k < NALL; k++) {
        assert_int_equal(place_with(all[k], 4), PLACEMENT_FOUND);
        assert_memory_equal(node(1), &before, sizeof before);
    }
}

/* A tiny deterministic generator (the core has no rand()). */
static uint32_t lcg(uint32_t *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return *seed >> 16;
}

static void assert_same_choice(const struct placement_ops *ops, struct placement_index *idx,
                               const struct job *job)
{
    struct placement_choice a, b;
    char why_a[TIDE_REASON_MAX] = "", why_b[TIDE_REASON_MAX] = "";
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    c.index = NULL;
    enum placement_result ra = fx_choose(ops, &cfg, &c, job, &a, why_a);
    c.index = idx;
    assert_non_null(placement_index_for(&c, ops->node_order));
    enum placement_result rb = fx_choose(ops, &cfg, &c, job, &b, why_b);
    assert_int_equal(ra, rb);
    if (ra == PLACEMENT_FOUND) {
        assert_ptr_equal(a.node, b.node);
        assert_int_equal(a.ngpus, b.ngpus);
        assert_memory_equal(a.gpu_index, b.gpu_index, sizeof(int) * (size_t)a.ngpus);
    } else {
        assert_string_equal(why_a, why_b);
    }
}

/* The index's buckets against a count of every node's free GPUs. */
static void assert_index_matches_a_scan(const struct placement_index *idx)
{
    size_t count[PLACEMENT_INDEX_BUCKETS] = {0};
    for (size_t i = 0; i < c.nnodes; i++) {
        const struct node *n = &c.nodes[i];
        int f = n->state == NODE_READY ? placement_node_free_gpus(n) : PLACEMENT_INDEX_NONE;
        assert_int_equal(idx->free[i], f);
        for (int k = 0; k <= TIDE_MAX_GPUS_PER_NODE; k++) {
            long r = placement_index_next(idx, k, false, idx->rank[i]);
            bool in = r == (long)idx->rank[i];
            assert_int_equal(in, f != PLACEMENT_INDEX_NONE && f >= k);
        }
        if (f != PLACEMENT_INDEX_NONE)
            count[f]++;
    }
    assert_memory_equal(count, idx->count, sizeof count);
    size_t at_least = 0;
    for (int k = TIDE_MAX_GPUS_PER_NODE; k >= 1; k--) {
        at_least += count[k];
        if (c.index == idx)
            assert_int_equal(placement_index_nodes_with_free(&c, k), (int)at_least);
    }
}

/* With memo on, as in a pass, placement_explain also answers from its
 * shape memo and the buckets (most_free_by_index). */
static void index_agrees_with_a_scan_on_random_clusters(bool memo)
{
    uint32_t seed = 20240611;
    for (int round = 0; round < 40; round++) {
        cluster_release(&c);
        cluster_init(&c);
        int nnodes = 1 + (int)(lcg(&seed) % 12);
        for (int n = 0; n < nnodes; n++) {
            /* Ids out of order, mixed sizes and models, some load. */
            int64_t id = 1 + (int64_t)((n * 7 + round) % 97);
            if (cluster_find_node(&c, id))
                continue;
            struct node nd = fx_node(id, 1 + (int)(lcg(&seed) % 8), lcg(&seed) % 4 ? "H200" : "L4",
                                     FX_H200_MIB);
            for (int g = 0; g < nd.ngpus; g++)
                nd.gpus[g].utilization_pct = (int)(lcg(&seed) % 100);
            add_node(nd);
        }
        c.last_assigned_node_id = (int64_t)(lcg(&seed) % 100);
        int64_t running[64]; /* ids: cluster_add_job may move the jobs */
        int nrunning = 0;
        for (size_t k = 0; k < NALL; k++) {
            struct placement_index idx;
            placement_index_init(&idx);
            assert_int_equal(placement_index_build(&idx, &c, all[k]->node_order, NULL), 0);
            if (memo)
                placement_index_memo_start(&idx);
            c.index = &idx;
            assert_index_matches_a_scan(&idx);
            for (int step = 0; step < 30; step++) {
                struct job job = fx_job(100 + round * 1000 + (int)k * 100 + step,
                                        (int)(lcg(&seed) % 6));
                if (lcg(&seed) % 5 == 0)
                    snprintf(job.gpu_model, sizeof job.gpu_model, "L4");
                job.cpus = (int)(lcg(&seed) % 40);
                assert_same_choice(all[k], &idx, &job);
                uint32_t what = lcg(&seed) % 10;
                if (what < 6 && nrunning < 64) {
                    /* Assign through the cluster, as a pass does. */
                    if (fx_choose(all[k], &cfg, &c, &job, &choice, why) == PLACEMENT_FOUND) {
                        struct job *stored = cluster_add_job(&c, &job);
                        assert_non_null(stored);
                        cluster_assign(&c, stored, choice.node, choice.gpu_index, choice.ngpus);
                        stored->state = JOB_RUNNING;
                        running[nrunning++] = stored->id;
                    }
                } else if (what < 9 && nrunning > 0) {
                    int v = (int)(lcg(&seed) % (uint32_t)nrunning);
                    struct job *stored = cluster_find_job(&c, running[v]);
                    assert_non_null(stored);
                    cluster_unassign(&c, stored);
                    stored->state = JOB_PENDING;
                    running[v] = running[--nrunning];
                } else if (c.nnodes > 0) {
                    /* A node is lost or comes back, through cluster_put_node. */
                    struct node nd = c.nodes[lcg(&seed) % c.nnodes];
                    nd.state = nd.state == NODE_READY ? NODE_LOST : NODE_READY;
                    assert_non_null(cluster_put_node(&c, &nd));
                }
                assert_index_matches_a_scan(&idx);
            }
            c.index = NULL;
            placement_index_release(&idx);
            nrunning = 0;
            while (c.njobs)
                cluster_remove_job(&c, c.jobs[0].id);
        }
    }
}

static void test_index_agrees_with_a_scan_on_random_clusters(void **state)
{
    (void)state;
    index_agrees_with_a_scan_on_random_clusters(false);
}

static void test_index_and_its_memo_word_waits_as_a_scan_does_on_random_clusters(void **state)
{
    (void)state;
    index_agrees_with_a_scan_on_random_clusters(true);
}

static void test_index_is_not_used_once_a_node_was_added(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    struct placement_index idx;
    placement_index_init(&idx);
    assert_int_equal(placement_index_build(&idx, &c, placement_order_busiest_first, NULL), 0);
    c.index = &idx;
    assert_non_null(placement_index_for(&c, placement_order_busiest_first));
    assert_null(placement_index_for(&c, placement_order_by_id));
    add_node(fx_h200_node(2, 8));
    assert_null(placement_index_for(&c, placement_order_busiest_first));
    c.index = NULL;
    placement_index_release(&idx);
}

static void test_fragmented_gpus_are_free_gpus_too_few_for_the_smallest_job(void **state)
{
    (void)state;
    add_node(fx_h200_node(1, 8));
    add_node(fx_h200_node(2, 8));
    add_node(fx_h200_node(3, 8));
    struct node lost = fx_h200_node(4, 8);
    lost.state = NODE_LOST;
    add_node(lost);
    hold(1, 5); /* 3 free */
    hold(2, 7); /* 1 free */
    /* node 3: 8 free; node 4 is lost and does not count */
    assert_int_equal(cluster_fragmented_gpus(&c, 0), 0);
    assert_int_equal(cluster_fragmented_gpus(&c, 1), 0);
    assert_int_equal(cluster_fragmented_gpus(&c, 2), 1);
    assert_int_equal(cluster_fragmented_gpus(&c, 4), 4);
    assert_int_equal(cluster_fragmented_gpus(&c, 9), 12);
}

static void test_smallest_waiting_job_ignores_cpu_only_and_running_jobs(void **state)
{
    (void)state;
    assert_int_equal(cluster_smallest_waiting_gpus(&c), 0);
    add_pending(1, 0);
    assert_int_equal(cluster_smallest_waiting_gpus(&c), 0);
    add_pending(2, 4);
    add_pending(3, 2);
    add_node(fx_h200_node(1, 8));
    hold(1, 1); /* a running 1-GPU job */
    assert_int_equal(cluster_smallest_waiting_gpus(&c), 2);
}

static void test_binpack_leaves_less_fragmentation_than_spread(void **state)
{
    (void)state;
    int frag[2];
    const struct placement_ops *ops[2] = {&placement_binpack, &placement_spread};
    for (int k = 0; k < 2; k++) {
        cluster_release(&c);
        cluster_init(&c);
        for (int id = 1; id <= 4; id++)
            add_node(fx_h200_node(id, 8));
        for (int j = 1; j <= 6; j++)
            add_pending(j, 3);
        add_pending(7, 8);
        add_pending(8, 8);
        pass_with(ops[k]);
        frag[k] = cluster_fragmented_gpus(&c, cluster_smallest_waiting_gpus(&c));
    }
    /* binpack: 3+3 on three nodes leaves 2 free on each and a whole node for
     * one 8-GPU job; spread leaves 2, 2, 5, 5 free and neither fits. */
    assert_int_equal(frag[0], 6);
    assert_int_equal(frag[1], 14);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_binpack_is_the_default),
        T(test_every_strategy_is_found_by_name),
        T(test_binpack_leaves_whole_nodes_empty),
        T(test_binpack_prefers_the_node_left_with_fewest_free_gpus),
        T(test_binpack_breaks_ties_by_most_gpus_held_then_id),
        T(test_spread_takes_the_node_with_most_free_gpus),
        T(test_spread_prefers_the_emptier_of_equally_free_nodes),
        T(test_roundrobin_rotates_over_nodes_in_id_order),
        T(test_roundrobin_skips_nodes_that_cannot_take_the_job),
        T(test_every_strategy_skips_overloaded_gpus),
        T(test_every_strategy_keeps_not_now_and_never_apart),
        T(test_every_strategy_leaves_the_cluster_unchanged),
        T(test_index_agrees_with_a_scan_on_random_clusters),
        T(test_index_and_its_memo_word_waits_as_a_scan_does_on_random_clusters),
        T(test_index_is_not_used_once_a_node_was_added),
        T(test_fragmented_gpus_are_free_gpus_too_few_for_the_smallest_job),
        T(test_smallest_waiting_job_ignores_cpu_only_and_running_jobs),
        T(test_binpack_leaves_less_fragmentation_than_spread),
        T(test_every_strategy_answers_the_same_when_no_reason_is_wanted),
        T(test_loadaware_with_the_index_chooses_what_a_scan_does),
        T(test_loadaware_with_the_load_index_chooses_what_a_brute_force_scan_does),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
