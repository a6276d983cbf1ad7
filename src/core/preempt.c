/* Choosing preemption victims (see preempt.h). */
#include "core/preempt.h"

#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"
#include "core/gang.h"
#include "core/gpu_share.h"

#include "core/queue.h"

#include "core/core_banned.h"

/* A free GPU that placement would hand job: the same rule (model, health,
 * telemetry under the thresholds), or a plan counts on a GPU it can never
 * get and its victims stop for nothing. */
static bool gpu_usable(const struct placement_config *cfg, const struct gpu *g, const struct job *job)
{
    return placement_gpu_matches(g, job) && !g->faulty && !placement_gpu_overloaded(cfg, g);
}

/* GPUs of node matching job held by `holder`. */
static int gpus_held(const struct node *node, const struct job *job, int64_t holder)
{
    int n = 0;
    for (int g = 0; g < node->ngpus; g++)
        n += node->gpus[g].job_id == holder && !node->gpus[g].faulty &&
             placement_gpu_matches(&node->gpus[g], job);
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
    if (x->gpus != y->gpus)
        return x->gpus < y->gpus ? -1 : 1; /* fewest GPUs taken */
    if (x->job->start_ms != y->job->start_ms)
        return x->job->start_ms > y->job->start_ms ? -1 : 1; /* least work lost */
    return (x->job->id < y->job->id) - (x->job->id > y->job->id);
}

static int by_node_id(const void *a, const void *b)
{
    const struct preempt_entry *x = a, *y = b;
    if (x->node->id != y->node->id)
        return x->node->id < y->node->id ? -1 : 1;
    return (x->job->id > y->job->id) - (x->job->id < y->job->id);
}

static int node_ptr_by_id(const void *a, const void *b)
{
    const struct node *x = *(const struct node *const *)a, *y = *(const struct node *const *)b;
    return (x->id > y->id) - (x->id < y->id);
}

int preempt_pool_build(struct preempt_pool *pool, struct cluster *c)
{
    pool->n = 0;
    pool->nrunning = 0;
    size_t wanted = 0;
    for (size_t j = 0; j < c->njobs; j++) {
        const struct job *job = &c->jobs[j];
        if ((job->state == JOB_RUNNING && job->preemptible) || job->state == JOB_PREEMPTED)
            wanted += 1 + (size_t)job->nparts;
    }
    if (wanted == 0)
        return 0;
    if (wanted > pool->cap) {
        struct preempt_entry *grown = realloc(pool->entries, wanted * sizeof *grown);
        if (!grown)
            return TIDE_ENOMEM;
        pool->entries = grown;
        pool->cap = wanted;
    }
    /* Node lookup by id through a sorted copy of node pointers. */
    struct node **by_id = malloc(c->nnodes * sizeof *by_id);
    if (!by_id && c->nnodes)
        return TIDE_ENOMEM;
    for (size_t i = 0; i < c->nnodes; i++)
        by_id[i] = &c->nodes[i];
    qsort(by_id, c->nnodes, sizeof *by_id, node_ptr_by_id);
    for (size_t j = 0; j < c->njobs; j++) {
        struct job *job = &c->jobs[j];
        if (!((job->state == JOB_RUNNING && job->preemptible) || job->state == JOB_PREEMPTED))
            continue;
        /* A gang job on each of its nodes: preempting it there frees them all. */
        for (int k = -1; k < job->nparts; k++) {
            struct node key = {.id = k < 0 ? job->node_id : job->parts[k].node_id}, *keyp = &key;
            struct node **found = bsearch(&keyp, by_id, c->nnodes, sizeof *by_id, node_ptr_by_id);
            if (found)
                pool->entries[pool->n++] = (struct preempt_entry){job, *found};
        }
        pool->nrunning += job->state == JOB_RUNNING;
    }
    free(by_id);
    qsort(pool->entries, pool->n, sizeof *pool->entries, by_node_id);
    return 0;
}

void preempt_pool_release(struct preempt_pool *pool)
{
    if (!pool)
        return;
    free(pool->entries);
    memset(pool, 0, sizeof *pool);
}

/* Whether job may take victim's GPUs: lower-priority work, or work borrowed
 * beyond another project's quota when job is within its own. Two rules
 * keep a pair of jobs from preempting each other back and forth: work
 * within its project's quota is never taken by a job beyond its own,
 * whatever the priorities (the owners would take it straight back), and a
 * job's escalation does not count against the job that preempted it (the
 * preemptor would be requeued as old and escalated in turn). */
static bool may_preempt(const struct job *job, const struct job *victim)
{
    if (job->in_quota && victim->borrowed && strcmp(victim->project, job->project))
        return true;
    if (!job->in_quota && !victim->borrowed)
        return false;
    int priority = job->preempted_for == victim->id ? job->priority : job->effective_priority;
    return victim->effective_priority < priority;
}

static bool fits_host(const struct node *node, const struct job *job, int cpus_free, int64_t mem_free)
{
    return (node->cpus <= 0 || cpus_free >= job->cpus) &&
           (node->memory_mib <= 0 || mem_free >= job->memory_mib);
}

/* Best plan on one node from its pool entries [from, to); returns the GPUs
 * taken (INT32_MAX when impossible). */
static int plan_on_node(const struct placement_config *cfg, const struct preempt_pool *pool,
                        size_t from, size_t to, const struct job *job, struct preempt_plan *plan,
                        bool *pending)
{
    struct node *node = pool->entries[from].node;
    int free_now = 0, freeing = 0;
    for (int g = 0; g < node->ngpus; g++) {
        const struct gpu *gpu = &node->gpus[g];
        if (gpu_is_free(gpu) && gpu_usable(cfg, gpu, job))
            free_now++;
    }
    struct candidate cand[PREEMPT_MAX_VICTIMS];
    int ncand = 0;
    int cpus_free = node->cpus - node->cpus_allocated;
    int64_t mem_free = node->memory_mib - node->memory_allocated_mib;
    for (size_t e = from; e < to; e++) {
        struct job *other = pool->entries[e].job;
        if (other->state == JOB_PREEMPTED) {
            freeing += gpus_held(node, job, other->id);
            continue;
        }
        if (other->state != JOB_RUNNING || !may_preempt(job, other) || ncand >= PREEMPT_MAX_VICTIMS)
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
    for (int i = 0; i < ncand && (have < job->gpus || !fits_host(node, job, cpus_free, mem_free)); i++) {
        plan->victims[plan->nvictims++] = cand[i].job;
        have += cand[i].gpus;
        taken += cand[i].gpus;
        cpus_free += cand[i].job->cpus;
        mem_free += cand[i].job->memory_mib;
    }
    if (have < job->gpus || !fits_host(node, job, cpus_free, mem_free))
        return INT32_MAX;
    /* Drop victims that turned out not to be needed, most valuable first. */
    for (int i = plan->nvictims - 1; i >= 0; i--) {
        struct job *v = plan->victims[i];
        int g = gpus_held(node, job, v->id);
        if (have - g >= job->gpus && fits_host(node, job, cpus_free - v->cpus, mem_free - v->memory_mib)) {
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

/* The end of the pool entries of one node, the one at from. */
static size_t node_group_end(const struct preempt_pool *pool, size_t from)
{
    size_t to = from + 1;
    while (to < pool->n && pool->entries[to].node == pool->entries[from].node)
        to++;
    return to;
}

enum preempt_result preempt_plan(const struct placement_config *cfg,
                                 const struct preempt_pool *pool, const struct job *job,
                                 struct preempt_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    if (gpu_job_wants_slice(job))
        return PREEMPT_NONE; /* victims are counted in whole GPUs */
    int best_taken = INT32_MAX;
    bool pending = false;
    struct node *pending_node = NULL;
    struct preempt_plan trial;
    for (size_t from = 0, to; from < pool->n; from = to) {
        to = node_group_end(pool, from);
        struct node *node = pool->entries[from].node;
        if (node->state == NODE_READY && node->ngpus >= job->gpus &&
            queue_allows_node(job, node)) {
            bool node_pending = false;
            int taken = plan_on_node(cfg, pool, from, to, job, &trial, &node_pending);
            if (node_pending && !pending_node)
                pending_node = node;
            pending |= node_pending;
            if (taken < best_taken || (taken == best_taken && taken != INT32_MAX &&
                                       trial.nvictims < plan->nvictims)) {
                best_taken = taken;
                *plan = trial;
            }
        }
    }
    if (pending) {
        memset(plan, 0, sizeof *plan);
        plan->node = pending_node; /* where the earlier preemptions free room */
        return PREEMPT_PENDING;
    }
    return best_taken == INT32_MAX ? PREEMPT_NONE : PREEMPT_PLANNED;
}

/* --- gangs --- */

/* One node's way to hold a share: the GPUs its victims take, and where its
 * pool entries are (from == to: none, its free GPUs suffice). */
struct share_cost {
    struct node *node;
    size_t from, to;
    int taken, nvictims;
    bool pending;
};

static int cheaper_share_first(const void *a, const void *b)
{
    const struct share_cost *x = a, *y = b;
    if (x->taken != y->taken)
        return x->taken < y->taken ? -1 : 1;
    if (x->nvictims != y->nvictims)
        return x->nvictims < y->nvictims ? -1 : 1;
    return (x->node->id > y->node->id) - (x->node->id < y->node->id);
}

static bool node_takes_share(const struct node *node, const struct job *share)
{
    return node->state == NODE_READY && node->ngpus >= share->gpus &&
           queue_allows_node(share, node);
}

/* Whether node, which has nothing to preempt, holds share with its free GPUs. */
static bool free_share(const struct placement_config *cfg, const struct node *node,
                       const struct job *share)
{
    int free_now = 0;
    for (int g = 0; g < node->ngpus; g++)
        free_now += gpu_is_free(&node->gpus[g]) && gpu_usable(cfg, &node->gpus[g], share);
    return free_now >= share->gpus && placement_host_fits_now(node, share);
}

static bool in_pool(const struct preempt_pool *pool, int64_t node_id)
{
    size_t lo = 0, hi = pool->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (pool->entries[mid].node->id < node_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < pool->n && pool->entries[lo].node->id == node_id;
}

/* Every node's way to hold share into costs (at most c->nnodes); how many. */
static size_t share_costs(const struct placement_config *cfg, const struct preempt_pool *pool,
                          const struct cluster *c, const struct job *share,
                          struct share_cost *costs)
{
    size_t n = 0;
    struct preempt_plan trial;
    for (size_t from = 0, to; from < pool->n; from = to) {
        to = node_group_end(pool, from);
        struct node *node = pool->entries[from].node;
        bool pending = false;
        int taken = node_takes_share(node, share)
                        ? plan_on_node(cfg, pool, from, to, share, &trial, &pending)
                        : INT32_MAX;
        if (pending)
            costs[n++] = (struct share_cost){node, from, to, 0, 0, true};
        else if (taken != INT32_MAX)
            costs[n++] = (struct share_cost){node, from, to, taken, trial.nvictims, false};
    }
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node *node = &c->nodes[i];
        if (node_takes_share(node, share) && !in_pool(pool, node->id) &&
            free_share(cfg, node, share))
            costs[n++] = (struct share_cost){node, 0, 0, 0, 0, false};
    }
    return n;
}

static bool listed(const struct preempt_gang_plan *plan, const struct job *victim)
{
    for (int i = 0; i < plan->nvictims; i++)
        if (plan->victims[i] == victim)
            return true;
    return false;
}

enum preempt_result preempt_plan_gang(const struct placement_config *cfg,
                                      const struct preempt_pool *pool, const struct cluster *c,
                                      const struct job *job, struct preempt_gang_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    struct share_cost *costs = malloc((c->nnodes ? c->nnodes : 1) * sizeof *costs);
    if (!costs)
        return PREEMPT_NONE; /* out of memory: a later pass asks again */
    int best_m = 0, best_taken = INT32_MAX;
    for (int m = gang_next_split(job, 1); m; m = gang_next_split(job, m)) {
        struct job share = *job;
        share.gpus = job->gpus / m;
        share.max_nodes = 1;
        size_t n = share_costs(cfg, pool, c, &share, costs);
        if (n < (size_t)m)
            continue;
        qsort(costs, n, sizeof *costs, cheaper_share_first);
        int taken = 0, victims = 0;
        for (int i = 0; i < m; i++) {
            taken += costs[i].taken;
            victims += costs[i].nvictims;
        }
        if (victims <= PREEMPT_MAX_VICTIMS && taken < best_taken) {
            best_taken = taken;
            best_m = m;
        }
    }
    enum preempt_result r = PREEMPT_NONE;
    if (best_m) { /* the costs again, for that split, and its victims */
        struct job share = *job;
        share.gpus = job->gpus / best_m;
        share.max_nodes = 1;
        size_t n = share_costs(cfg, pool, c, &share, costs);
        qsort(costs, n, sizeof *costs, cheaper_share_first);
        bool pending = false;
        struct preempt_plan trial;
        for (int i = 0; i < best_m; i++) {
            plan->nodes[plan->nnodes++] = costs[i].node;
            pending |= costs[i].pending;
            if (costs[i].nvictims == 0)
                continue;
            bool again = false;
            plan_on_node(cfg, pool, costs[i].from, costs[i].to, &share, &trial, &again);
            for (int v = 0; v < trial.nvictims; v++)
                if (!listed(plan, trial.victims[v])) /* a gang victim on two of its nodes */
                    plan->victims[plan->nvictims++] = trial.victims[v];
        }
        /* no victims and nothing being freed: it would have been placed */
        r = plan->nvictims ? PREEMPT_PLANNED : pending ? PREEMPT_PENDING : PREEMPT_NONE;
    }
    free(costs);
    if (r == PREEMPT_NONE)
        memset(plan, 0, sizeof *plan);
    return r;
}
