/* Whether a job could ever run on the cluster's nodes or a pool's (see
 * feasible.h). A quick pass looks for one candidate that holds the whole
 * job; only when none does are the checks applied one at a time, so the
 * first that no candidate passes names the field. */
#include "core/feasible.h"

#include <stdio.h>
#include <string.h>

#include "core/gang.h"
#include "core/gpu_share.h"
#include "core/placement.h"
#include "core/queue.h"

#include "core/core_banned.h"

/* The checks, in the order they are blamed. */
enum stage { ST_QUEUE, ST_MODEL, ST_GPU_MEMORY, ST_GPUS, ST_CPUS, ST_MEMORY, ST_COUNT };

static const char *const stage_field[ST_COUNT] = {"queue", "gpu_model", "gpu_memory",
                                                  "gpus",  "cpus",      "memory"};

static bool node_counts(const struct node *n)
{
    return n->state != NODE_RELEASED && n->state != NODE_FAILED && n->state != NODE_PROVISIONING;
}

/* GPUs of node that pass the checks before and at stage (model, memory). */
static int node_matching_gpus(const struct node *n, const struct job *job, enum stage stage)
{
    struct job probe; /* the job without its GPU memory, when that is not checked yet */
    if (stage < ST_GPU_MEMORY && job->gpu_memory_mib) {
        probe = *job;
        probe.gpu_memory_mib = 0;
        job = &probe;
    }
    int count = 0, last = 0;
    for (int g = 0; g < n->ngpus; g++) {
        const struct gpu *gpu = &n->gpus[g], *prev = g ? &n->gpus[g - 1] : NULL;
        /* A node's GPUs are mostly alike: match a model glob once, not per GPU. */
        if (!prev || prev->memory_total_mib != gpu->memory_total_mib ||
            prev->mig_mode != gpu->mig_mode || strcmp(prev->mig_profile, gpu->mig_profile) ||
            strcmp(prev->name, gpu->name))
            last = placement_gpu_matches(gpu, job);
        count += last;
    }
    return count;
}

/* Does node pass every check up to and including upto, holding k GPUs? */
static bool node_passes(const struct node *n, const struct job *job, int k, enum stage upto)
{
    if (!queue_allows_node(job, n)) /* its queue's pools, and spot only for who may use it */
        return false;
    if (job->gpus > 0 && upto >= ST_MODEL) {
        int need = upto >= ST_GPUS ? k : 1;
        if (n->ngpus < need || node_matching_gpus(n, job, upto < ST_GPUS ? upto : ST_GPU_MEMORY) < need)
            return false;
    }
    if (upto >= ST_CPUS && n->cpus > 0 && job->cpus > n->cpus)
        return false;
    if (upto >= ST_MEMORY && n->memory_mib > 0 && job->memory_mib > n->memory_mib)
        return false;
    return true;
}

static bool pool_passes(const struct pool *p, const struct job *job, int k, enum stage upto)
{
    if (p->max_nodes <= 0 || !queue_allows_pool(job->rules, p->name))
        return false;
    if (p->billing == BILLING_SPOT && !queue_job_may_use_spot(job))
        return false; /* as queue_allows_node rules for the nodes it would make */
    if (job->gpus == 0 || upto < ST_MODEL)
        return true;
    struct job probe = *job;
    probe.gpus = upto >= ST_GPUS ? k : 1;
    if (upto < ST_GPU_MEMORY)
        probe.gpu_memory_mib = 0;
    return pool_fits_job(p, &probe); /* the autoscaler's own test of a pool's shape */
}

/* How many nodes (existing, or a pool's max_nodes) pass up to stage with k
 * GPUs each, counting no further than want. */
static long capacity(const struct cluster *c, const struct pool *pools, int npools,
                     const struct job *job, int k, enum stage upto, long want)
{
    long have = 0;
    for (size_t i = 0; i < c->nnodes && have < want; i++)
        if (node_counts(&c->nodes[i]) && node_passes(&c->nodes[i], job, k, upto))
            have++;
    for (int p = 0; p < npools && have < want; p++)
        if (pool_passes(&pools[p], job, k, upto))
            have += pools[p].max_nodes;
    return have;
}

/* Whether some split of the job (one node, or a gang's m nodes of gpus/m
 * each) passes every check up to stage. */
static bool stage_passes(const struct cluster *c, const struct pool *pools, int npools,
                         const struct job *job, enum stage upto)
{
    if (capacity(c, pools, npools, job, job->gpus, upto, 1) >= 1)
        return true;
    if (upto < ST_GPUS)
        return false;
    for (int m = gang_next_split(job, 1); m; m = gang_next_split(job, m))
        if (capacity(c, pools, npools, job, job->gpus / m, upto, m) >= m)
            return true;
    return false;
}

/* Appends text to buf of size bytes, cut short at its end (a list in a message). */
static void add(char *buf, size_t size, const char *text)
{
    size_t used = strlen(buf);
    if (used + 1 < size)
        snprintf(buf + used, size - used, "%s", text);
}

/* The distinct GPU models of the candidates the queue allows, "H200, A100". */
static void list_models(const struct cluster *c, const struct pool *pools, int npools,
                        const struct job *job, char *out, size_t size)
{
    out[0] = '\0';
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct node *n = &c->nodes[i];
        if (!node_counts(n) || !node_passes(n, job, 0, ST_QUEUE))
            continue;
        for (int g = 0; g < n->ngpus; g++) {
            const char *name = n->gpus[g].name;
            if (!gpu_is_whole(&n->gpus[g]) || !name[0] || strstr(out, name))
                continue;
            if (out[0])
                add(out, size, ", ");
            add(out, size, name);
        }
    }
    for (int p = 0; p < npools; p++) {
        if (!pool_passes(&pools[p], job, 0, ST_QUEUE) || !pools[p].gpu_model[0] ||
            strstr(out, pools[p].gpu_model))
            continue;
        if (out[0])
            add(out, size, ", ");
        add(out, size, pools[p].gpu_model);
    }
}

/* The biggest offer among candidates passing the stages before stage:
 * GPUs (matching), GPU memory, CPUs or memory; *who names it. */
static long long largest(const struct cluster *c, const struct pool *pools, int npools,
                         const struct job *job, enum stage stage, char *who, size_t size)
{
    long long best = -1;
    who[0] = '\0';
    /* Past the GPU count, the nodes that could hold a share: the job's
     * GPUs, or a gang's smallest share. */
    int k = job->gpus;
    for (int m = gang_next_split(job, 1); m; m = gang_next_split(job, m))
        k = job->gpus / m;
    if (stage <= ST_GPUS)
        k = 1;
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct node *n = &c->nodes[i];
        if (!node_counts(n) || !node_passes(n, job, k, stage - 1))
            continue;
        long long v = 0;
        if (stage == ST_GPU_MEMORY) {
            struct job probe = *job;
            probe.gpu_memory_mib = 0;
            for (int g = 0; g < n->ngpus; g++)
                if (placement_gpu_matches(&n->gpus[g], &probe) && n->gpus[g].memory_total_mib > v)
                    v = n->gpus[g].memory_total_mib;
        } else if (stage == ST_GPUS) {
            v = node_matching_gpus(n, job, ST_GPU_MEMORY);
        } else if (stage == ST_CPUS) {
            v = n->cpus;
        } else {
            v = n->memory_mib;
        }
        if (v > best) {
            best = v;
            snprintf(who, size, "node %s", n->name);
        }
    }
    for (int p = 0; p < npools && stage <= ST_GPUS; p++) {
        if (!pool_passes(&pools[p], job, 1, stage - 1))
            continue;
        long long v = stage == ST_GPU_MEMORY ? pools[p].gpu_memory_mib : pools[p].gpus_per_node;
        if (v > best) {
            best = v;
            snprintf(who, size, "pool %s", pools[p].name);
        }
    }
    return best;
}

/* " matching 'H200*'" and/or " with 80000 MiB" for messages. */
static void gpu_words(const struct job *job, enum stage upto, char *out, size_t size)
{
    out[0] = '\0';
    if (job->gpu_model[0] && upto >= ST_MODEL)
        snprintf(out, size, " matching '%.60s'", job->gpu_model);
    if (job->gpu_memory_mib > 0 && upto >= ST_GPU_MEMORY) {
        size_t used = strlen(out);
        snprintf(out + used, size - used, " with %lld MiB", (long long)job->gpu_memory_mib);
    }
}

static int refuse(const struct cluster *c, const struct pool *pools, int npools,
                  const struct job *job, enum stage stage, struct tide_err *err)
{
    const char *f = stage_field[stage];
    char who[TIDE_NAME_MAX + 8], words[128], models[256];
    struct job may_preempt = *job;
    may_preempt.preemptible = true;
    if (stage == ST_QUEUE && !job->preemptible &&
        stage_passes(c, pools, npools, &may_preempt, ST_QUEUE))
        return tide_err_set(err, TIDE_EINVAL, "preemptible",
                            "preemptible: every node and pool that queue '%s' may use is spot, "
                            "and spot capacity takes only preemptible jobs; submit it "
                            "preemptible (--preemptible) or give the queue allow_spot: true",
                            job->queue);
    if (stage == ST_QUEUE)
        return tide_err_set(err, TIDE_EINVAL, f,
                            "%s: queue '%s' runs jobs only on its pools, and none of them has a "
                            "node or can make one",
                            f, job->queue);
    if (stage == ST_MODEL && !job->gpu_model[0]) /* every GPU there is in MIG mode */
        return tide_err_set(err, TIDE_EINVAL, "gpus",
                            "gpus: no node or pool has a whole GPU to give; GPUs in MIG mode go "
                            "only to jobs that ask for an instance (mig: PROFILE, --mig)");
    if (stage == ST_MODEL) {
        list_models(c, pools, npools, job, models, sizeof models);
        return tide_err_set(err, TIDE_EINVAL, f,
                            "%s: no node or pool has GPUs matching '%.60s' (there are: %s)", f,
                            job->gpu_model, models[0] ? models : "none");
    }
    long long best = largest(c, pools, npools, job, stage, who, sizeof who);
    gpu_words(job, stage - 1, words, sizeof words);
    switch (stage) {
    case ST_GPU_MEMORY:
        return tide_err_set(err, TIDE_EINVAL, f,
                            "%s: no node or pool has a GPU%s of %lld MiB; the largest has %lld "
                            "MiB (%s)",
                            f, words, (long long)job->gpu_memory_mib, best, who);
    case ST_GPUS:
        if (job->max_nodes > 1)
            return tide_err_set(err, TIDE_EINVAL, f,
                                "%s: %d GPUs%s do not split evenly over up to %d nodes that "
                                "exist or pools can make; the largest node has %lld (%s)",
                                f, job->gpus, words, job->max_nodes, best, who);
        return tide_err_set(err, TIDE_EINVAL, f,
                            "%s: no node or pool has %d GPUs%s on one node; the largest has "
                            "%lld (%s); nodes: K (--nodes K) runs a job over several nodes",
                            f, job->gpus, words, best, who);
    case ST_CPUS:
        return tide_err_set(err, TIDE_EINVAL, f,
                            "%s: no node that could hold the job's GPUs has %d CPUs; the "
                            "largest has %lld (%s)",
                            f, job->cpus, best, who);
    default:
        return tide_err_set(err, TIDE_EINVAL, f,
                            "%s: no node that could hold the job's GPUs has %lld MiB of memory; "
                            "the largest has %lld MiB (%s)",
                            f, (long long)job->memory_mib, best, who);
    }
}

/* MIG jobs: a node with an instance of the profile; a pool's nodes may
 * have any (a pool does not say), so a pool of a matching model is
 * enough. */
static int check_mig(const struct cluster *c, const struct pool *pools, int npools,
                     const struct job *job, struct tide_err *err)
{
    char profiles[256] = "";
    struct job host = *job; /* CPUs and memory only: the GPU is the instance */
    host.gpus = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct node *n = &c->nodes[i];
        if (!node_counts(n) || !node_passes(n, job, 0, ST_QUEUE))
            continue;
        for (int g = 0; g < n->ngpus; g++) {
            const char *profile = n->gpus[g].mig_profile;
            if (!profile[0])
                continue;
            if (!strcmp(profile, job->mig) && node_passes(n, &host, 0, ST_MEMORY))
                return 0;
            if (!strstr(profiles, profile)) {
                if (profiles[0])
                    add(profiles, sizeof profiles, ", ");
                add(profiles, sizeof profiles, profile);
            }
        }
    }
    for (int p = 0; p < npools; p++)
        if (pool_passes(&pools[p], job, 1, ST_MODEL))
            return 0;
    return tide_err_set(err, TIDE_EINVAL, "mig",
                        "mig: no node has a MIG %s instance that could hold the job, and no "
                        "pool could make one (instances there: %s)",
                        job->mig, profiles[0] ? profiles : "none");
}

int feasible_check(const struct cluster *c, const struct pool *pools, int npools,
                   const struct job *job, struct tide_err *err)
{
    bool any = false;
    for (size_t i = 0; i < c->nnodes && !any; i++)
        any = node_counts(&c->nodes[i]);
    for (int p = 0; p < npools && !any; p++)
        any = pools[p].max_nodes > 0;
    if (!any)
        return 0; /* nothing registered and no pool: the cluster is not up yet */
    if (job->mig[0])
        return check_mig(c, pools, npools, job, err);
    if (stage_passes(c, pools, npools, job, ST_MEMORY))
        return 0;
    for (int s = ST_QUEUE; s < ST_COUNT; s++)
        if (!stage_passes(c, pools, npools, job, (enum stage)s))
            return refuse(c, pools, npools, job, (enum stage)s, err);
    return 0; /* not reached: the last stage failed above */
}
