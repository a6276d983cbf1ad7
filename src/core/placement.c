/* Shared placement helpers, the first-fit walk and the table of strategies. */
#include "core/placement.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/gpu_share.h"
#include "core/placement_index.h"
#include "core/queue.h"

#include "core/core_banned.h"

static const struct placement_ops *const strategies[] = {
    &placement_binpack, &placement_spread, &placement_roundrobin, &placement_loadaware};

const struct placement_ops *placement_by_name(const char *name)
{
    for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++)
        if (!strcmp(strategies[i]->name, name))
            return strategies[i];
    return NULL;
}

const char *placement_names(void)
{
    return "binpack, spread, roundrobin, loadaware";
}

void placement_config_defaults(struct placement_config *cfg)
{
    cfg->max_gpu_memory_used_pct = 80;
    cfg->max_gpu_utilization_pct = 90;
}

bool placement_gpu_matches(const struct gpu *g, const struct job *job)
{
    if (!gpu_is_whole(g)) /* MIG instances and MIG-mode GPUs go only to MIG jobs */
        return false;
    if (job->gpu_memory_mib > 0 && g->memory_total_mib < job->gpu_memory_mib)
        return false;
    return !job->gpu_model[0] || gpu_model_matches(job->gpu_model, g->name);
}

bool gpu_model_matches(const char *pattern, const char *name)
{
    /* NVML calls an H200 "NVIDIA H200"; users write "H200*". Accept both. */
    if (fnmatch(pattern, name, FNM_CASEFOLD) == 0)
        return true;
    return !strncasecmp(name, "NVIDIA ", 7) && fnmatch(pattern, name + 7, FNM_CASEFOLD) == 0;
}

bool placement_gpu_overloaded(const struct placement_config *cfg, const struct gpu *g)
{
    if (g->utilization_pct > cfg->max_gpu_utilization_pct)
        return true;
    if (g->memory_total_mib > 0 &&
        g->memory_used_mib * 100 > (int64_t)cfg->max_gpu_memory_used_pct * g->memory_total_mib)
        return true;
    return false;
}

int placement_gpu_load_key(const struct gpu *g)
{
    /* Utilisation first, memory share as a tie-break; both 0..100 (a
     * negative reading counts as 0, so no key is below 0: loadaware relies
     * on that to stop at the first idle node). */
    int mem_pct = g->memory_total_mib > 0 ? (int)(g->memory_used_mib * 100 / g->memory_total_mib) : 0;
    return (g->utilization_pct > 0 ? g->utilization_pct : 0) * 128 + (mem_pct > 0 ? mem_pct : 0);
}

void placement_host_words(const struct job *job, char *out, size_t size)
{
    int n = 0;
    out[0] = '\0';
    if (job->cpus > 0)
        n = snprintf(out, size, " and %d CPU%s", job->cpus, job->cpus == 1 ? "" : "s");
    if (job->memory_mib > 0 && n >= 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n, " and %lld MiB memory", (long long)job->memory_mib);
}

static bool host_fits_ever(const struct node *node, const struct job *job)
{
    return queue_allows_node(job, node) &&
           (node->cpus <= 0 || job->cpus <= node->cpus) &&
           (node->memory_mib <= 0 || job->memory_mib <= node->memory_mib);
}

bool placement_host_fits_now(const struct node *node, const struct job *job)
{
    return queue_allows_node(job, node) &&
           (node->cpus <= 0 || job->cpus <= node->cpus - node->cpus_allocated) &&
           (node->memory_mib <= 0 || job->memory_mib <= node->memory_mib - node->memory_allocated_mib);
}

bool placement_try_node(const struct placement_config *cfg, struct node *node,
                        const struct job *job, struct placement_choice *choice, long *load)
{
    if (node->state != NODE_READY || !placement_host_fits_now(node, job))
        return false;
    /* One pass collects the eligible GPUs (free, matching, not overloaded). */
    int keys[TIDE_MAX_GPUS_PER_NODE], index[TIDE_MAX_GPUS_PER_NODE];
    int n = 0;
    for (int g = 0; g < node->ngpus; g++) {
        const struct gpu *gpu = &node->gpus[g];
        if (!gpu_is_free(gpu) || !placement_gpu_matches(gpu, job) || placement_gpu_overloaded(cfg, gpu))
            continue;
        keys[n] = placement_gpu_load_key(gpu);
        index[n] = gpu->index;
        n++;
    }
    if (n < job->gpus)
        return false;
    long sum = 0;
    for (int i = 0; i < job->gpus; i++) {
        int min = i;
        for (int j = i + 1; j < n; j++)
            if (keys[j] < keys[min])
                min = j;
        /* Shift rather than swap, so equal loads keep their order. */
        int k = keys[min], x = index[min];
        memmove(&keys[i + 1], &keys[i], (size_t)(min - i) * sizeof keys[0]);
        memmove(&index[i + 1], &index[i], (size_t)(min - i) * sizeof index[0]);
        keys[i] = k, index[i] = x;
        sum += k;
    }
    choice->node = node;
    choice->ngpus = job->gpus;
    memcpy(choice->gpu_index, index, sizeof(int) * (size_t)job->gpus);
    if (load)
        *load = sum;
    return true;
}

/* Whether node (ready) could ever hold job: GPUs that match, CPUs, memory
 * and its queue's rules; its matching GPUs that are free, and of those the
 * ones over cfg's thresholds, go to *free and *busy. */
static bool could_ever_hold(const struct placement_config *cfg, const struct node *node,
                            const struct job *job, int *free, int *busy)
{
    if (node->ngpus < job->gpus || !host_fits_ever(node, job))
        return false;
    int matching = 0, nfree = 0, eligible = 0;
    for (int g = 0; g < node->ngpus; g++) {
        const struct gpu *gpu = &node->gpus[g];
        if (!placement_gpu_matches(gpu, job))
            continue;
        matching++;
        if (!gpu_is_free(gpu))
            continue;
        nfree++;
        eligible += !placement_gpu_overloaded(cfg, gpu);
    }
    *free = nfree;
    *busy = nfree - eligible;
    return matching >= job->gpus;
}

/* placement_explain's numbers for a job that asks for no GPU model or
 * memory (so every free GPU matches and the index's free counts are its),
 * from the index's buckets, most free first, instead of a scan of every
 * node: the most free GPUs on a node that could ever hold it and, when that
 * is enough GPUs, how many of the free ones on the first such node in
 * cluster order are over the thresholds (the reason names them only then).
 * 1: found; 0: no ready node could ever hold it (every ready node is in a
 * bucket); -1: no current index or a constrained job. */
static int most_free_by_index(const struct placement_config *cfg, const struct cluster *c,
                              const struct job *job, int *most_free, int *busy)
{
    const struct placement_index *idx = placement_index_current(c);
    if (!idx || job->gpu_model[0] || job->gpu_memory_mib)
        return -1;
    for (int f = idx->max_free; f >= 0; f--) {
        if (!idx->count[f])
            continue;
        /* The first in cluster order; ranks are positions only without a
         * node order, else the whole bucket is looked at (when the busy
         * count matters). */
        const struct node *first = NULL;
        int first_busy = 0;
        for (long r = placement_index_next(idx, f, true, 0); r >= 0;
             r = placement_index_next(idx, f, true, (size_t)r + 1)) {
            const struct node *node = &c->nodes[idx->order[r]];
            int free, nbusy;
            if ((first && node > first) || !could_ever_hold(cfg, node, job, &free, &nbusy))
                continue;
            first = node;
            first_busy = nbusy;
            if (f < job->gpus || !idx->node_order)
                break;
        }
        if (first) {
            *most_free = f;
            *busy = f >= job->gpus ? first_busy : 0;
            return 1;
        }
    }
    return 0;
}

enum placement_result placement_explain(const struct placement_config *cfg, const struct cluster *c,
                                        const struct job *job, const struct wait_why *why)
{
    int known = placement_index_memo_find(c, job);
    if (known == 1 && !why)
        return PLACEMENT_NOT_NOW;
    bool ever = false;
    int most_free = 0, most_free_busy = 0;
    /* A shape worded before, with no node changed since, words the same. */
    bool worded = known == 1 && placement_index_memo_find_why(c, job, &most_free, &most_free_busy);
    /* Else the buckets may say whether it could ever fit and how near it is. */
    int by_index = !worded && known != 0 && why
                       ? most_free_by_index(cfg, c, job, &most_free, &most_free_busy)
                       : -1;
    bool counted = worded || by_index >= 0;
    if (worded || by_index == 1)
        ever = true;
    for (size_t i = 0; i < c->nnodes && known != 0 && !counted; i++) {
        const struct node *node = &c->nodes[i];
        int free, busy;
        if (node->state != NODE_READY || !could_ever_hold(cfg, node, job, &free, &busy))
            continue;
        ever = true;
        if (!why) {
            placement_index_memo_put(c, job, true);
            return PLACEMENT_NOT_NOW; /* the answer is known; the reason is not wanted */
        }
        if (free > most_free) {
            most_free = free;
            most_free_busy = busy;
        }
    }
    if (known < 0)
        placement_index_memo_put(c, job, ever);
    if (ever && !worded)
        placement_index_memo_put_why(c, job, most_free, most_free_busy);
    /* Causes, not words: a deep queue is explained every pass, read rarely. */
    if (!ever) {
        if (why)
            wait_why_set(why, WAIT_NO_NODE, 0, 0, 0, NULL);
        return PLACEMENT_NEVER;
    }
    if (most_free >= job->gpus && most_free_busy > 0)
        wait_why_set(why, WAIT_OVER_LOAD, cfg->max_gpu_memory_used_pct,
                     cfg->max_gpu_utilization_pct, 0, NULL);
    else if (most_free >= job->gpus)
        wait_why_set(why, WAIT_HOST_SHARE, 0, 0, 0, NULL);
    else
        wait_why_set(why, WAIT_GPUS_FREE, most_free, 0, 0, NULL);
    return PLACEMENT_NOT_NOW;
}

static int cmp_id(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

int placement_order_by_id(const struct node *a, const struct node *b)
{
    return cmp_id(a->id, b->id);
}

/* Among nodes with equally many free GPUs, more GPUs means more of them held. */
int placement_order_busiest_first(const struct node *a, const struct node *b)
{
    if (a->ngpus != b->ngpus)
        return a->ngpus > b->ngpus ? -1 : 1;
    return cmp_id(a->id, b->id);
}

int placement_order_emptiest_first(const struct node *a, const struct node *b)
{
    if (a->ngpus != b->ngpus)
        return a->ngpus < b->ngpus ? -1 : 1;
    return cmp_id(a->id, b->id);
}

enum placement_result placement_first_fit(const struct placement_config *cfg, struct cluster *c,
                                          const struct job *job, struct placement_choice *choice,
                                          const struct wait_why *why, bool most_free_first,
                                          int (*node_order)(const struct node *,
                                                            const struct node *))
{
    const struct placement_index *idx = placement_index_for(c, node_order);
    if (idx) {
        /* Buckets in preference order, nodes in rank order: the first that
         * can take the job is the best. */
        int lo = job->gpus > 0 ? job->gpus : 0, hi = idx->max_free;
        for (int k = 0; k <= hi - lo; k++) {
            int f = most_free_first ? hi - k : lo + k;
            if (!idx->count[f])
                continue;
            for (long r = placement_index_next(idx, f, true, 0); r >= 0;
                 r = placement_index_next(idx, f, true, (size_t)r + 1))
                if (placement_try_node(cfg, &c->nodes[idx->order[r]], job, choice, NULL))
                    return PLACEMENT_FOUND;
        }
        return placement_explain(cfg, c, job, why);
    }
    struct node *best = NULL;
    int best_free = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node *node = &c->nodes[i];
        if (node->state != NODE_READY)
            continue;
        int f = placement_node_free_gpus(node);
        if (best) {
            bool better = most_free_first ? f > best_free : f < best_free;
            if (!better && (f != best_free || node_order(node, best) >= 0))
                continue;
        }
        /* Only a better node gets tried, so choice ends with the best. */
        if (placement_try_node(cfg, node, job, choice, NULL)) {
            best = node;
            best_free = f;
        }
    }
    return best ? PLACEMENT_FOUND : placement_explain(cfg, c, job, why);
}
