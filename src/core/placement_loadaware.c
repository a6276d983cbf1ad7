/*
 * Load-aware placement (scheduler v1): among ready nodes with enough free
 * GPUs that match the job, skip GPUs whose telemetry says they are busy
 * (memory or utilisation over the thresholds), take the least-loaded GPUs,
 * and prefer the node where they are least loaded, then the fuller node so
 * that whole nodes stay free for large jobs, then the earlier node in
 * cluster order. For a job with no model or memory constraint the
 * scheduler's load index (placement_load.h) names that node at once;
 * otherwise, or without one, nodes with enough free GPUs are looked at
 * until an idle one settles it (buckets of the index from the fullest up),
 * or all of them.
 */
#include <string.h>

#include "core/placement.h"
#include "core/gpu_share.h"
#include "core/placement_index.h"
#include "core/placement_slice.h"

#include "core/core_banned.h"

static int matching_free_gpus(const struct node *node, const struct job *job)
{
    int n = 0;
    for (int g = 0; g < node->ngpus; g++)
        n += gpu_is_free(&node->gpus[g]) && placement_gpu_matches(&node->gpus[g], job);
    return n;
}

struct best {
    struct node *node;
    long load;
    int free_after;
};

static void consider(const struct placement_config *cfg, struct node *node, const struct job *job,
                     struct best *best, struct placement_choice *choice)
{
    struct placement_choice mine;
    long load;
    if (!placement_try_node(cfg, node, job, &mine, &load))
        return;
    int free_after = matching_free_gpus(node, job) - job->gpus;
    /* Equal load and free GPUs left: the earlier node stays (cluster order). */
    if (best->node && (load > best->load || (load == best->load && free_after >= best->free_after)))
        return;
    *best = (struct best){node, load, free_after};
    choice->node = node;
    choice->ngpus = mine.ngpus;
    memcpy(choice->gpu_index, mine.gpu_index, sizeof(int) * (size_t)mine.ngpus);
}

static enum placement_result loadaware_choose(const struct placement_config *cfg, struct cluster *c,
                                              const struct job *job,
                                              struct placement_choice *choice,
                                              const struct wait_why *why)
{
    if (gpu_job_wants_slice(job))
        return placement_slice_choose(cfg, c, job, choice, why);
    struct best best = {NULL, 0, 0};
    const struct placement_index *idx = placement_index_for(c, NULL);
    struct placement_load *loads = placement_index_load(c, cfg);
    if (loads && !job->gpu_model[0] && job->gpu_memory_mib == 0) {
        /* The load index keeps every node's rank for this job's GPU count:
         * its best node that the job's host needs allow is the answer. */
        struct node *node = placement_load_best(loads, c, job);
        if (node && placement_try_node(cfg, node, job, choice, NULL))
            return PLACEMENT_FOUND;
    } else if (idx && !job->gpu_model[0] && job->gpu_memory_mib == 0) {
        /* Every free GPU matches, so free_after is the bucket less the
         * job: visiting buckets from the fullest nodes up (cluster order
         * within one) meets candidates in the order the comparison ranks
         * equal loads, and the first idle one (load 0, the least a key
         * can be) is the answer. */
        int want = job->gpus > 0 ? job->gpus : 0;
        for (int f = want; f <= idx->max_free && !(best.node && best.load == 0); f++) {
            if (!idx->count[f])
                continue;
            for (long r = placement_index_next(idx, f, true, 0);
                 r >= 0 && !(best.node && best.load == 0);
                 r = placement_index_next(idx, f, true, (size_t)r + 1))
                consider(cfg, &c->nodes[idx->order[r]], job, &best, choice);
        }
    } else if (idx) {
        /* Ranks are cluster positions here, so the order of visits is the same. */
        /* No node with enough free GPUs (a deep queue): no walk of the bitmap. */
        int want = job->gpus > 0 ? job->gpus : 0;
        long r = -1;
        if (placement_index_nodes_with_free(c, want) > 0)
            r = placement_index_next(idx, want, false, 0);
        for (; r >= 0; r = placement_index_next(idx, want, false, (size_t)r + 1))
            consider(cfg, &c->nodes[idx->order[r]], job, &best, choice);
    } else {
        for (size_t i = 0; i < c->nnodes; i++)
            consider(cfg, &c->nodes[i], job, &best, choice);
    }
    return best.node ? PLACEMENT_FOUND : placement_explain(cfg, c, job, why);
}

const struct placement_ops placement_loadaware = {
    .name = "loadaware",
    .choose = loadaware_choose,
    .node_order = NULL,
    .load_index = true,
};
