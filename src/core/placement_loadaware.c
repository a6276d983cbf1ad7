/*
 * Load-aware placement (scheduler v1): among ready nodes with enough free
 * GPUs that match the job, skip GPUs whose telemetry says they are busy
 * (memory or utilisation over the thresholds), take the least-loaded GPUs,
 * and prefer the node where they are least loaded, then the fuller node so
 * that whole nodes stay free for large jobs.
 */
#include <stdio.h>
#include <string.h>

#include "core/placement.h"

#include "core/core_banned.h"

static bool gpu_is_overloaded(const struct placement_config *cfg, const struct gpu *g)
{
    if (g->utilization_pct > cfg->max_gpu_utilization_pct)
        return true;
    if (g->memory_total_mib > 0 &&
        g->memory_used_mib * 100 > (int64_t)cfg->max_gpu_memory_used_pct * g->memory_total_mib)
        return true;
    return false;
}

static int gpu_load_key(const struct gpu *g)
{
    /* Utilisation first, memory share as a tie-break; both 0..100. */
    int mem_pct = g->memory_total_mib > 0 ? (int)(g->memory_used_mib * 100 / g->memory_total_mib) : 0;
    return g->utilization_pct * 128 + mem_pct;
}

struct node_tally {
    int matching;   /* GPUs of the right model and size */
    int free;       /* ... and not held by a task */
    int eligible;   /* ... and not overloaded */
};

/* Picks the `want` least-loaded eligible GPUs of node into out (by load,
 * ties by position); returns their summed load key. The caller checked
 * that at least `want` are eligible. */
static long pick_gpus(const struct placement_config *cfg, const struct node *node,
                      const struct job *job, int want, int *out)
{
    int keys[TIDE_MAX_GPUS_PER_NODE], index[TIDE_MAX_GPUS_PER_NODE];
    int n = 0;
    for (int g = 0; g < node->ngpus; g++) {
        const struct gpu *gpu = &node->gpus[g];
        if (gpu->job_id || !placement_gpu_matches(gpu, job) || gpu_is_overloaded(cfg, gpu))
            continue;
        keys[n] = gpu_load_key(gpu);
        index[n] = gpu->index;
        n++;
    }
    long sum = 0;
    for (int i = 0; i < want && i < n; i++) {
        int min = i;
        for (int j = i + 1; j < n; j++)
            if (keys[j] < keys[min])
                min = j;
        /* Shift rather than swap, so equal loads keep their order. */
        int k = keys[min], x = index[min];
        memmove(&keys[i + 1], &keys[i], (size_t)(min - i) * sizeof keys[0]);
        memmove(&index[i + 1], &index[i], (size_t)(min - i) * sizeof index[0]);
        keys[i] = k, index[i] = x;
        out[i] = index[i];
        sum += keys[i];
    }
    return sum;
}

static struct node_tally tally_node(const struct placement_config *cfg, const struct node *node,
                                    const struct job *job)
{
    struct node_tally t = {0, 0, 0};
    for (int g = 0; g < node->ngpus; g++) {
        const struct gpu *gpu = &node->gpus[g];
        if (!placement_gpu_matches(gpu, job))
            continue;
        t.matching++;
        if (gpu->job_id)
            continue;
        t.free++;
        if (!gpu_is_overloaded(cfg, gpu))
            t.eligible++;
    }
    return t;
}

static bool host_fits_ever(const struct node *node, const struct job *job)
{
    return (node->cpus <= 0 || job->cpus <= node->cpus) &&
           (node->memory_mib <= 0 || job->memory_mib <= node->memory_mib);
}

static bool host_fits_now(const struct node *node, const struct job *job)
{
    return (node->cpus <= 0 || job->cpus <= node->cpus - node->cpus_allocated) &&
           (node->memory_mib <= 0 || job->memory_mib <= node->memory_mib - node->memory_allocated_mib);
}

static enum placement_result loadaware_choose(const struct placement_config *cfg,
                                              struct cluster *c, const struct job *job,
                                              struct placement_choice *choice, char *why)
{
    struct node *best = NULL;
    long best_load = 0;
    int best_free_after = 0;
    int gpus_buf[TIDE_MAX_GPUS_PER_NODE];
    bool ever = false;
    int most_free = 0, most_free_busy = 0;

    for (size_t i = 0; i < c->nnodes; i++) {
        struct node *node = &c->nodes[i];
        if (node->state != NODE_READY || !host_fits_ever(node, job))
            continue;
        struct node_tally t = tally_node(cfg, node, job);
        if (t.matching < job->gpus)
            continue;
        ever = true;
        if (t.free > most_free) {
            most_free = t.free;
            most_free_busy = t.free - t.eligible;
        }
        if (t.eligible < job->gpus || !host_fits_now(node, job))
            continue;
        long load = pick_gpus(cfg, node, job, job->gpus, gpus_buf);
        int free_after = t.free - job->gpus;
        bool better = !best || load < best_load ||
                      (load == best_load && free_after < best_free_after);
        if (better) {
            best = node;
            best_load = load;
            best_free_after = free_after;
            choice->ngpus = job->gpus;
            memcpy(choice->gpu_index, gpus_buf, sizeof(int) * (size_t)job->gpus);
        }
    }
    if (best) {
        choice->node = best;
        return PLACEMENT_FOUND;
    }
    if (!ever) {
        snprintf(why, TIDE_REASON_MAX, "no ready node has %d GPU%s%s%.60s%s and the CPUs/memory asked for",
                 job->gpus, job->gpus == 1 ? "" : "s", job->gpu_model[0] ? " matching " : "",
                 job->gpu_model, job->gpu_memory_mib ? " of enough memory" : "");
        return PLACEMENT_NEVER;
    }
    if (most_free >= job->gpus && most_free_busy > 0)
        snprintf(why, TIDE_REASON_MAX, "free GPUs are over the load thresholds (memory %d%%, utilisation %d%%)",
                 cfg->max_gpu_memory_used_pct, cfg->max_gpu_utilization_pct);
    else if (most_free >= job->gpus)
        snprintf(why, TIDE_REASON_MAX, "waiting for free CPUs or memory on a node with %d free GPUs",
                 job->gpus);
    else
        snprintf(why, TIDE_REASON_MAX, "waiting for %d free GPU%s on one node (most free now: %d)",
                 job->gpus, job->gpus == 1 ? "" : "s", most_free);
    return PLACEMENT_NOT_NOW;
}

const struct placement_ops placement_loadaware = {
    .name = "loadaware",
    .choose = loadaware_choose,
};
