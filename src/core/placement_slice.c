/* Shares and MIG instances (placement_slice.h): a scan of the ready nodes,
 * since neither is in the placement index. */
#include "core/placement_slice.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/gpu_share.h"

#include "core/queue.h"

#include "core/core_banned.h"

static bool model_matches(const char *glob, const char *name)
{
    if (!glob[0])
        return true;
    if (fnmatch(glob, name, FNM_CASEFOLD) == 0)
        return true;
    return !strncasecmp(name, "NVIDIA ", 7) && fnmatch(glob, name + 7, FNM_CASEFOLD) == 0;
}

static bool host_fits(const struct node *node, const struct job *job, bool now)
{
    int cpus = node->cpus - (now ? node->cpus_allocated : 0);
    int64_t mem = node->memory_mib - (now ? node->memory_allocated_mib : 0);
    return queue_allows_node(job, node) && (node->cpus <= 0 || job->cpus <= cpus) &&
           (node->memory_mib <= 0 || job->memory_mib <= mem);
}

/* An instance matches the model asked for by its own name or its parent's. */
static bool instance_matches(const struct node *node, const struct gpu *g, const struct job *job)
{
    if (strcmp(g->mig_profile, job->mig) != 0)
        return false;
    if (model_matches(job->gpu_model, g->name))
        return true;
    for (int k = 0; k < node->ngpus; k++)
        if (node->gpus[k].mig_mode && node->gpus[k].index == g->mig_parent)
            return model_matches(job->gpu_model, node->gpus[k].name);
    return false;
}

static enum placement_result mig_choose(const struct placement_config *cfg, struct cluster *c,
                                        const struct job *job, struct placement_choice *choice,
                                        const struct wait_why *why)
{
    bool ever = false;
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node *node = &c->nodes[i];
        if (node->state != NODE_READY || !host_fits(node, job, false))
            continue;
        bool room = host_fits(node, job, true);
        for (int g = 0; g < node->ngpus; g++) {
            const struct gpu *gpu = &node->gpus[g];
            if (!gpu->mig_profile[0] || !instance_matches(node, gpu, job))
                continue;
            ever = true;
            if (!room || gpu->job_id != 0 || gpu->faulty ||
                gpu->utilization_pct > cfg->max_gpu_utilization_pct)
                continue;
            choice->node = node;
            choice->ngpus = 1;
            choice->gpu_index[0] = gpu->index;
            return PLACEMENT_FOUND;
        }
    }
    if (!why)
        return ever ? PLACEMENT_NOT_NOW : PLACEMENT_NEVER;
    if (!ever) {
        char host[48];
        placement_host_words(job, host, sizeof host);
        snprintf(wait_why_text(why), TIDE_REASON_MAX,
                 "no ready node has a MIG %.24s instance%s%.50s%.38s", job->mig,
                 job->gpu_model[0] ? " matching " : "", job->gpu_model, host);
        return PLACEMENT_NEVER;
    }
    snprintf(wait_why_text(why), TIDE_REASON_MAX, "waiting for a free MIG %.24s instance",
             job->mig);
    return PLACEMENT_NOT_NOW;
}

static enum placement_result share_choose(const struct placement_config *cfg, struct cluster *c,
                                          const struct job *job, struct placement_choice *choice,
                                          const struct wait_why *why)
{
    bool ever = false, found = false;
    bool best_shared = false;
    int64_t best_left = 0, most_left = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node *node = &c->nodes[i];
        if (node->state != NODE_READY || !host_fits(node, job, false))
            continue;
        bool room = host_fits(node, job, true);
        for (int g = 0; g < node->ngpus; g++) {
            const struct gpu *gpu = &node->gpus[g];
            if (!gpu_is_whole(gpu) || gpu->memory_total_mib < job->gpu_memory_mib ||
                !model_matches(job->gpu_model, gpu->name))
                continue;
            ever = true;
            if (!room || gpu->job_id != 0 || gpu->faulty)
                continue;
            int64_t left = gpu_share_memory_left_mib(gpu);
            if (left > most_left)
                most_left = left;
            left -= job->gpu_memory_mib;
            bool shared = gpu->shared_jobs > 0;
            if (left < 0 || gpu->utilization_pct > cfg->max_gpu_utilization_pct ||
                (!shared && placement_gpu_overloaded(cfg, gpu)))
                continue;
            /* Shared GPUs first, then least left: whole GPUs stay whole. */
            if (found && (best_shared > shared || (best_shared == shared && left >= best_left)))
                continue;
            found = true;
            best_shared = shared;
            best_left = left;
            choice->node = node;
            choice->ngpus = 1;
            choice->gpu_index[0] = gpu->index;
        }
    }
    if (found)
        return PLACEMENT_FOUND;
    if (!why)
        return ever ? PLACEMENT_NOT_NOW : PLACEMENT_NEVER;
    if (!ever) {
        char host[48];
        placement_host_words(job, host, sizeof host);
        snprintf(wait_why_text(why), TIDE_REASON_MAX,
                 "no ready node has a GPU%s%.50s of enough memory (%lld MiB)%.38s",
                 job->gpu_model[0] ? " matching " : "", job->gpu_model,
                 (long long)job->gpu_memory_mib, host);
        return PLACEMENT_NEVER;
    }
    snprintf(wait_why_text(why), TIDE_REASON_MAX,
             "waiting for a GPU with %lld MiB not yet shared out (most left now: %lld MiB)",
             (long long)job->gpu_memory_mib, (long long)most_left);
    return PLACEMENT_NOT_NOW;
}

enum placement_result placement_slice_choose(const struct placement_config *cfg, struct cluster *c,
                                             const struct job *job, struct placement_choice *choice,
                                             const struct wait_why *why)
{
    return job->mig[0] ? mig_choose(cfg, c, job, choice, why)
                       : share_choose(cfg, c, job, choice, why);
}
