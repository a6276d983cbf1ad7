/* GPU time in physical GPUs: whole, MIG slices, shares (gpu_usage.h). */
#include "core/gpu_usage.h"

#include <stdlib.h>
#include <string.h>

#include "core/gpu_share.h"

#include "core/core_banned.h"

int gpu_mig_slices(const char *profile)
{
    char *end;
    long n = strtol(profile, &end, 10);
    return end != profile && *end == 'g' && n > 0 && n <= 8 ? (int)n : 0;
}

int gpu_mig_slices_of_gpu(const char *gpu_name)
{
    return strstr(gpu_name, "A30") ? 4 : 7;
}

/* An interval's milliseconds times part/whole, as the difference of the
 * whole milliseconds at its ends (part <= whole). */
static int64_t part_ms(int64_t from_ms, int64_t to_ms, int64_t part, int64_t whole)
{
    return to_ms * part / whole - from_ms * part / whole;
}

/* What holding entry g is worth over the interval: all of it, or its slices. */
static int64_t held_ms(const struct gpu *g, int64_t from_ms, int64_t to_ms)
{
    if (!g->mig_profile[0])
        return to_ms - from_ms;
    int of = gpu_mig_slices_of_gpu(g->name), n = gpu_mig_slices(g->mig_profile);
    if (n <= 0 || n > of)
        return to_ms - from_ms; /* a profile we cannot read: counted whole, as before */
    return part_ms(from_ms, to_ms, n, of);
}

static bool assigned(const struct job *job, int index)
{
    for (int i = 0; i < job->ngpus_assigned; i++)
        if (job->gpu_index[i] == index)
            return true;
    return false;
}

/* The node's shares: the jobs packed onto its GPUs, found through its job
 * list (a GPU counts its shares, not who they are). */
static int shares_on_node(struct cluster *c, const struct node *n, int64_t from_ms, int64_t to_ms,
                          gpu_usage_fn use, void *ctx)
{
    struct cluster_node_ids ids;
    int rc = cluster_node_ids_fill(c, n->id, &ids);
    for (size_t k = 0; !rc && k < ids.n; k++) {
        const struct job *job = cluster_find_job(c, ids.ids[k]);
        if (!job || job->node_id != n->id)
            continue;
        int64_t ms = 0;
        for (int g = 0; g < n->ngpus; g++) {
            const struct gpu *gpu = &n->gpus[g];
            if (gpu->shared_jobs > 0 && gpu->memory_total_mib > 0 && assigned(job, gpu->index) &&
                gpu_job_is_share_of(gpu, job))
                ms += part_ms(from_ms, to_ms, job->gpu_memory_mib, gpu->memory_total_mib);
        }
        if (ms)
            rc = use(job, job->id, ms, ctx);
    }
    cluster_node_ids_release(&ids);
    return rc;
}

int gpu_usage_on_node(struct cluster *c, const struct node *n, int64_t from_ms, int64_t to_ms,
                      gpu_usage_fn use, void *ctx)
{
    bool shares = false;
    /* A job's GPUs on a node are found one after another: told together. */
    for (int g = 0, run; g < n->ngpus; g += run) {
        int64_t job_id = n->gpus[g].job_id, ms = 0;
        for (run = 0; g + run < n->ngpus && n->gpus[g + run].job_id == job_id; run++) {
            shares |= n->gpus[g + run].shared_jobs > 0;
            ms += held_ms(&n->gpus[g + run], from_ms, to_ms);
        }
        if (!job_id)
            continue;
        int rc = use(cluster_find_job(c, job_id), job_id, ms, ctx);
        if (rc)
            return rc;
    }
    return shares ? shares_on_node(c, n, from_ms, to_ms, use, ctx) : 0;
}
