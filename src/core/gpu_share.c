/* GPU entries as whole GPUs, shares and MIG instances (gpu_share.h). */
#include "core/gpu_share.h"

#include <ctype.h>
#include <string.h>

#include "core/core_banned.h"

bool gpu_is_whole(const struct gpu *g)
{
    return !g->mig_mode && !g->mig_profile[0];
}

bool gpu_is_free(const struct gpu *g)
{
    return gpu_is_whole(g) && g->job_id == 0 && g->shared_jobs == 0 && !g->faulty;
}

bool gpu_in_use(const struct gpu *g)
{
    return g->job_id != 0 || g->shared_jobs > 0;
}

bool gpu_job_wants_slice(const struct job *job)
{
    return job->mig[0] != '\0' || (job->gpus == 1 && job->gpu_memory_mib > 0);
}

bool gpu_job_is_share_of(const struct gpu *g, const struct job *job)
{
    return job->id > 0 && job->gpus == 1 && !job->mig[0] && job->gpu_memory_mib > 0 &&
           job->gpu_memory_mib < g->memory_total_mib && gpu_is_whole(g);
}

int64_t gpu_share_memory_left_mib(const struct gpu *g)
{
    int64_t left = g->memory_total_mib - g->shared_memory_mib;
    return left > 0 ? left : 0;
}

void gpu_take(struct gpu *g, const struct job *job)
{
    if (gpu_job_is_share_of(g, job)) {
        g->shared_jobs++;
        g->shared_memory_mib += job->gpu_memory_mib;
    } else {
        g->job_id = job->id;
    }
}

void gpu_give_back(struct gpu *g, const struct job *job)
{
    if (g->job_id == job->id) {
        g->job_id = 0;
        return;
    }
    if (!gpu_job_is_share_of(g, job) || g->shared_jobs <= 0)
        return;
    g->shared_jobs--;
    g->shared_memory_mib -= job->gpu_memory_mib;
    if (g->shared_jobs == 0 || g->shared_memory_mib < 0)
        g->shared_memory_mib = 0; /* nothing promised is left, whatever drifted */
}

void gpu_share_release_node(struct node *node, const struct job *job)
{
    if (job->node_id != node->id)
        return;
    for (int i = 0; i < job->ngpus_assigned; i++)
        for (int g = 0; g < node->ngpus; g++)
            if (node->gpus[g].index == job->gpu_index[i] && node->gpus[g].job_id != job->id)
                gpu_give_back(&node->gpus[g], job);
}

int gpu_node_gpus_whole_or_mig(const struct node *node)
{
    int n = 0;
    for (int g = 0; g < node->ngpus; g++)
        n += !node->gpus[g].mig_profile[0];
    return n;
}

int gpu_node_gpus_in_use(const struct node *node)
{
    int n = 0;
    for (int g = 0; g < node->ngpus; g++) {
        const struct gpu *gpu = &node->gpus[g];
        if (gpu->mig_profile[0])
            continue;
        bool used = gpu_in_use(gpu);
        for (int k = 0; gpu->mig_mode && !used && k < node->ngpus; k++)
            used = node->gpus[k].mig_profile[0] && node->gpus[k].mig_parent == gpu->index &&
                   node->gpus[k].job_id != 0;
        n += used;
    }
    return n;
}

bool gpu_mig_profile_valid(const char *s)
{
    /* <n>g.<m>gb: n is 1..8 compute slices, m the memory in GB */
    if (s[0] < '1' || s[0] > '8' || s[1] != 'g' || s[2] != '.')
        return false;
    const char *p = s + 3;
    if (!isdigit((unsigned char)*p) || *p == '0')
        return false;
    int digits = 0;
    while (isdigit((unsigned char)*p) && digits < 5)
        p++, digits++;
    return !strcmp(p, "gb");
}
