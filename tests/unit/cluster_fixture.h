/*
 * Small hand-built clusters for the core's unit tests: a node of N idle GPUs
 * of one model, a pending job asking for G GPUs, and a finder for actions.
 * Header-only so each test file stays one executable.
 */
#ifndef TIDE_TEST_CLUSTER_FIXTURE_H
#define TIDE_TEST_CLUSTER_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "core/action.h"
#include "core/cluster.h"
#include "core/placement.h"

#define FX_H200_MIB 144384
#define FX_NODE_CPUS 64
#define FX_NODE_MEMORY_MIB 512000

/* Why job waits, worded (wait_reason_format) into one of a few rotating
 * buffers, so a test may hold a couple of answers at once. */
static inline const char *fx_reason(const struct job *job)
{
    static char buf[8][TIDE_REASON_MAX];
    static unsigned next;
    return wait_reason_format(job, buf[next++ % 8], TIDE_REASON_MAX);
}

/* A ready node with ngpus idle GPUs called gpu_name, each of memory_mib. */
static inline struct node fx_node(int64_t id, int ngpus, const char *gpu_name, int64_t memory_mib)
{
    struct node n;
    memset(&n, 0, sizeof n);
    n.id = id;
    snprintf(n.name, sizeof n.name, "node-%lld", (long long)id);
    n.state = NODE_READY;
    n.cpus = FX_NODE_CPUS;
    n.memory_mib = FX_NODE_MEMORY_MIB;
    snprintf(n.driver, sizeof n.driver, "fake");
    n.ngpus = ngpus;
    for (int g = 0; g < ngpus; g++) {
        n.gpus[g].index = g;
        snprintf(n.gpus[g].uuid, sizeof n.gpus[g].uuid, "GPU-%lld-%d", (long long)id, g);
        snprintf(n.gpus[g].name, sizeof n.gpus[g].name, "%s", gpu_name);
        n.gpus[g].memory_total_mib = memory_mib;
    }
    return n;
}

static inline struct node fx_h200_node(int64_t id, int ngpus)
{
    return fx_node(id, ngpus, "H200", FX_H200_MIB);
}

/* A pending job asking for gpus GPUs, submitted at id milliseconds. */
static inline struct job fx_job(int64_t id, int gpus)
{
    struct job j;
    memset(&j, 0, sizeof j);
    j.id = id;
    snprintf(j.project, sizeof j.project, "default");
    snprintf(j.queue, sizeof j.queue, "default");
    j.gpus = gpus;
    j.state = JOB_PENDING;
    j.submit_ms = id;
    return j;
}

/* Number of actions of a type (for job_id, or any job when job_id is 0). */
static inline int fx_count(const struct action_list *l, enum action_type type, int64_t job_id)
{
    int n = 0;
    for (size_t i = 0; i < l->len; i++)
        if (l->items[i].type == type && (!job_id || l->items[i].job_id == job_id))
            n++;
    return n;
}

/* The first action of a type for job_id (any job when 0), or NULL. */
static inline const struct action *fx_find(const struct action_list *l, enum action_type type,
                                           int64_t job_id)
{
    for (size_t i = 0; i < l->len; i++)
        if (l->items[i].type == type && (!job_id || l->items[i].job_id == job_id))
            return &l->items[i];
    return NULL;
}

/* GPUs of node that a tide task holds. */
static inline int fx_gpus_held(const struct node *n)
{
    int held = 0;
    for (int g = 0; g < n->ngpus; g++)
        held += n->gpus[g].job_id != 0;
    return held;
}

/* Adds a copy of j to c as running its first attempt on the first j.gpus
 * free GPUs of node node_id, started at start_ms, its effective priority
 * its own (as a pass would have set it). NULL when the node is unknown or
 * has too few free GPUs. */
static inline struct job *fx_add_running(struct cluster *c, struct job j, int64_t node_id,
                                         int64_t start_ms)
{
    struct node *node = cluster_find_node(c, node_id);
    if (!node)
        return NULL;
    int idx[TIDE_MAX_GPUS_PER_NODE], n = 0;
    for (int g = 0; g < node->ngpus && n < j.gpus; g++)
        if (!node->gpus[g].job_id)
            idx[n++] = node->gpus[g].index;
    if (n < j.gpus)
        return NULL;
    struct job *job = cluster_add_job(c, &j);
    if (!job)
        return NULL;
    cluster_assign(c, job, node, idx, n);
    job->state = JOB_RUNNING;
    job->attempt = 1;
    job->start_ms = start_ms;
    job->effective_priority = job->priority;
    return job;
}

/* ops->choose for job, with its reason (a cause) worded into why
 * (TIDE_REASON_MAX bytes; "" when none is given), as a reader of the job
 * would see it. */
static inline enum placement_result fx_choose(const struct placement_ops *ops,
                                              const struct placement_config *cfg, struct cluster *c,
                                              const struct job *job,
                                              struct placement_choice *choice, char *why)
{
    struct wait_cause cause = {0};
    char text[TIDE_REASON_MAX] = "";
    struct wait_why w = {&cause, text};
    enum placement_result r = ops->choose(cfg, c, job, choice, why ? &w : NULL);
    if (why)
        wait_cause_format(&cause, text, job, why, TIDE_REASON_MAX);
    return r;
}

#endif
