/* Choosing preemption victims (see preempt.h). */
#include "core/preempt.h"

#include <stdlib.h>
#include <string.h>

#include "core/core_banned.h"

static bool gpu_usable(const struct placement_config *cfg, const struct gpu *g, const struct job *job)
{
    if (!placement_gpu_matches(g, job))
        return false;
    return g->memory_total_mib <= 0 ||
           g->memory_used_mib * 100 <= (int64_t)cfg->max_gpu_memory_used_pct * g->memory_total_mib ||
           g->job_id != 0; /* a busy GPU's memory is its task's and goes with it */
}

/* GPUs of node matching job held by `holder`. */
static int gpus_held(const struct node *node, const struct job *job, int64_t holder)
{
    int n = 0;
    for (int g = 0; g < node->ngpus; g++)
        n += node->gpus[g].job_id == holder && placement_gpu_matches(&node->gpus[g], job);
    return n;
}

struct candidate {
    struct job *job;
    int gpus; /* matching GPUs it would free */
};

static int cheaper_first(const void *a, const void *b)
{
    const struct candidate *x = a, *y = b;
    if (x->job->borrowed != y->job->borrowed)
        return x->job->borrowed ? -1 : 1; /* borrowed GPUs go back first */
    if (x->job->effective_priority != y->job->effective_priority)
        return x->job->effective_priority < y->job->effective_priority ? -1 : 1;
    if (x->job->start_ms != y->job->start_ms)
        return x->job->start_ms > y->job->start_ms ? -1 : 1; /* least work lost */
    return (x->job->id < y->job->id) - (x->job->id > y->job->id);
}

/* Best plan on one node; returns GPUs taken (INT32_MAX when impossible). */
static int plan_on_node(const struct placement_config *cfg, struct cluster *c, struct node *node,
                        const struct job *job, struct preempt_plan *plan, bool *pending)
{
    int free_now = 0, freeing = 0;
    for (int g = 0; g < node->ngpus; g++) {
        const struct gpu *gpu = &node->gpus[g];
        if (gpu->job_id == 0 && gpu_usable(cfg, gpu, job))
            free_now++;
    }
    struct candidate cand[PREEMPT_MAX_VICTIMS];
    int ncand = 0;
    int cpus_free = node->cpus - node->cpus_allocated;
    int64_t mem_free = node->memory_mib - node->memory_allocated_mib;
    for (size_t j = 0; j < c->njobs; j++) {
        struct job *other = &c->jobs[j];
        if (other->node_id != node->id)
            continue;
        if (other->state == JOB_PREEMPTED) {
            freeing += gpus_held(node, job, other->id);
            continue;
        }
        /* Lower-priority work, or work borrowed beyond another project's
         * quota when this job is within its own. */
        bool reclaimable = job->in_quota && other->borrowed && strcmp(other->project, job->project);
        if (other->state != JOB_RUNNING || !other->preemptible ||
            (other->effective_priority >= job->effective_priority && !reclaimable) ||
            ncand >= PREEMPT_MAX_VICTIMS)
            continue;
        int g = gpus_held(node, job, other->id);
        if (g > 0 || job->gpus == 0)
            cand[ncand++] = (struct candidate){other, g};
    }
    if (free_now + freeing >= job->gpus && freeing > 0) {
        *pending = true;
        return INT32_MAX;
    }
    qsort(cand, (size_t)ncand, sizeof cand[0], cheaper_first);
    int have = free_now, taken = 0;
    plan->nvictims = 0;
    for (int i = 0; i < ncand && (have < job->gpus || (node->cpus > 0 && cpus_free < job->cpus) ||
                                  (node->memory_mib > 0 && mem_free < job->memory_mib));
         i++) {
        plan->victims[plan->nvictims++] = cand[i].job;
        have += cand[i].gpus;
        taken += cand[i].gpus;
        cpus_free += cand[i].job->cpus;
        mem_free += cand[i].job->memory_mib;
    }
    if (have < job->gpus || (node->cpus > 0 && cpus_free < job->cpus) ||
        (node->memory_mib > 0 && mem_free < job->memory_mib))
        return INT32_MAX;
    /* Drop victims that turned out not to be needed, most valuable first. */
    for (int i = plan->nvictims - 1; i >= 0; i--) {
        struct job *v = plan->victims[i];
        int g = gpus_held(node, job, v->id);
        if (have - g >= job->gpus && (node->cpus <= 0 || cpus_free - v->cpus >= job->cpus) &&
            (node->memory_mib <= 0 || mem_free - v->memory_mib >= job->memory_mib)) {
            have -= g;
            taken -= g;
            cpus_free -= v->cpus;
            mem_free -= v->memory_mib;
            memmove(&plan->victims[i], &plan->victims[i + 1],
                    sizeof plan->victims[0] * (size_t)(plan->nvictims - i - 1));
            plan->nvictims--;
        }
    }
    plan->node = node;
    return taken;
}

enum preempt_result preempt_plan(const struct placement_config *cfg, struct cluster *c,
                                 const struct job *job, struct preempt_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    int best_taken = INT32_MAX;
    bool pending = false;
    struct preempt_plan trial;
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node *node = &c->nodes[i];
        if (node->state != NODE_READY || node->ngpus < job->gpus)
            continue;
        bool node_pending = false;
        int taken = plan_on_node(cfg, c, node, job, &trial, &node_pending);
        pending |= node_pending;
        if (taken < best_taken || (taken == best_taken && taken != INT32_MAX &&
                                   trial.nvictims < plan->nvictims)) {
            best_taken = taken;
            *plan = trial;
        }
    }
    if (pending)
        return PREEMPT_PENDING;
    return best_taken == INT32_MAX ? PREEMPT_NONE : PREEMPT_PLANNED;
}
