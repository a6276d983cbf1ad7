/* Growing arrays of nodes and unfinished jobs, and GPU bookkeeping. */
#include "core/cluster.h"

#include <stdlib.h>
#include <string.h>

#include "core/gpu_share.h"
#include "core/placement_index.h"

#include "core/core_banned.h"

const char *node_state_name(enum node_state s)
{
    switch (s) {
    case NODE_READY: return "ready";
    case NODE_LOST: return "lost";
    case NODE_PROVISIONING: return "provisioning";
    case NODE_DRAINING: return "draining";
    case NODE_RELEASED: return "released";
    case NODE_FAILED: return "failed";
    default: return "unknown";
    }
}

int node_state_from_name(const char *name)
{
    for (int s = 0; s < NODE_STATE_COUNT; s++)
        if (!strcmp(name, node_state_name((enum node_state)s)))
            return s;
    return -1;
}

void cluster_init(struct cluster *c)
{
    memset(c, 0, sizeof *c);
}

void cluster_release(struct cluster *c)
{
    if (!c)
        return;
    free(c->nodes);
    free(c->jobs);
    memset(c, 0, sizeof *c);
}

static int grow(void **items, size_t *cap, size_t need, size_t item_size)
{
    if (need <= *cap)
        return 0;
    size_t next = *cap ? *cap * 2 : 16;
    while (next < need)
        next *= 2;
    void *grown = realloc(*items, next * item_size);
    if (!grown)
        return -1;
    *items = grown;
    *cap = next;
    return 0;
}

struct node *cluster_find_node(struct cluster *c, int64_t id)
{
    for (size_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].id == id)
            return &c->nodes[i];
    return NULL;
}

struct node *cluster_find_node_by_name(struct cluster *c, const char *name)
{
    for (size_t i = 0; i < c->nnodes; i++)
        if (!strcmp(c->nodes[i].name, name))
            return &c->nodes[i];
    return NULL;
}

struct node *cluster_put_node(struct cluster *c, const struct node *node)
{
    struct node *existing = cluster_find_node(c, node->id);
    if (existing) {
        *existing = *node;
        if (c->index)
            placement_index_refresh(c->index, c, existing);
        return existing;
    }
    if (grow((void **)&c->nodes, &c->nodes_cap, c->nnodes + 1, sizeof *c->nodes) != 0)
        return NULL;
    c->nodes[c->nnodes] = *node;
    return &c->nodes[c->nnodes++];
}

struct job *cluster_add_job(struct cluster *c, const struct job *job)
{
    if (grow((void **)&c->jobs, &c->jobs_cap, c->njobs + 1, sizeof *c->jobs) != 0)
        return NULL;
    c->jobs[c->njobs] = *job;
    return &c->jobs[c->njobs++];
}

struct job *cluster_find_job(struct cluster *c, int64_t id)
{
    for (size_t i = 0; i < c->njobs; i++)
        if (c->jobs[i].id == id)
            return &c->jobs[i];
    return NULL;
}

void cluster_remove_job(struct cluster *c, int64_t id)
{
    for (size_t i = 0; i < c->njobs; i++) {
        if (c->jobs[i].id != id)
            continue;
        cluster_unassign(c, &c->jobs[i]);
        /* Keep submission order: the scheduler sorts, but stable input helps tests. */
        memmove(&c->jobs[i], &c->jobs[i + 1], (c->njobs - i - 1) * sizeof *c->jobs);
        c->njobs--;
        return;
    }
}

void cluster_assign(struct cluster *c, struct job *job, struct node *node, const int *gpu_index,
                    int ngpus)
{
    job->node_id = node->id;
    job->ngpus_assigned = ngpus;
    for (int i = 0; i < ngpus; i++) {
        job->gpu_index[i] = gpu_index[i];
        for (int g = 0; g < node->ngpus; g++)
            if (node->gpus[g].index == gpu_index[i])
                gpu_take(&node->gpus[g], job);
    }
    node->cpus_allocated += job->cpus;
    node->memory_allocated_mib += job->memory_mib;
    if (job->id > 0) /* not a backfill reservation's placeholder */
        c->last_assigned_node_id = node->id;
    if (c->index)
        placement_index_refresh(c->index, c, node);
}

void cluster_assign_part(struct cluster *c, struct job *job, struct node *node,
                         const int *gpu_index, int ngpus)
{
    if (job->nparts >= TIDE_MAX_GANG_NODES - 1)
        return;
    struct job_part *p = &job->parts[job->nparts++];
    memset(p, 0, sizeof *p);
    p->node_id = node->id;
    p->ngpus = ngpus;
    for (int i = 0; i < ngpus; i++) {
        if (gpu_index[i] >= 0 && gpu_index[i] < 64)
            p->gpu_mask |= 1ULL << gpu_index[i];
        for (int g = 0; g < node->ngpus; g++)
            if (node->gpus[g].index == gpu_index[i])
                gpu_take(&node->gpus[g], job);
    }
    node->cpus_allocated += job->cpus;
    node->memory_allocated_mib += job->memory_mib;
    if (c->index)
        placement_index_refresh(c->index, c, node);
}

bool job_on_node(const struct job *job, int64_t node_id)
{
    if (job->node_id == node_id && node_id != 0)
        return true;
    for (int i = 0; i < job->nparts; i++)
        if (job->parts[i].node_id == node_id)
            return true;
    return false;
}

int job_gpus_on_node(const struct job *job, int64_t node_id, int *out)
{
    if (job->node_id == node_id) {
        memcpy(out, job->gpu_index, sizeof(int) * (size_t)job->ngpus_assigned);
        return job->ngpus_assigned;
    }
    for (int i = 0; i < job->nparts; i++) {
        if (job->parts[i].node_id != node_id)
            continue;
        int n = 0;
        for (int g = 0; g < 64; g++)
            if (job->parts[i].gpu_mask & (1ULL << g))
                out[n++] = g;
        return n;
    }
    return 0;
}

bool job_mark_part_exited(struct job *job, int64_t node_id)
{
    if (job->node_id == node_id)
        job->first_part_exited = true;
    for (int i = 0; i < job->nparts; i++)
        if (job->parts[i].node_id == node_id)
            job->parts[i].exited = true;
    bool all = job->first_part_exited;
    for (int i = 0; i < job->nparts; i++)
        all = all && job->parts[i].exited;
    return all;
}

/* Frees what job holds on one node. */
static void release_on_node(struct cluster *c, struct job *job, int64_t node_id)
{
    struct node *node = cluster_find_node(c, node_id);
    if (!node)
        return;
    for (int g = 0; g < node->ngpus; g++)
        if (node->gpus[g].job_id == job->id)
            node->gpus[g].job_id = 0;
    gpu_share_release_node(node, job);
    node->cpus_allocated -= job->cpus;
    node->memory_allocated_mib -= job->memory_mib;
    if (node->cpus_allocated < 0)
        node->cpus_allocated = 0;
    if (node->memory_allocated_mib < 0)
        node->memory_allocated_mib = 0;
    if (c->index)
        placement_index_refresh(c->index, c, node);
}

void cluster_unassign(struct cluster *c, struct job *job)
{
    for (int i = 0; i < job->nparts; i++)
        release_on_node(c, job, job->parts[i].node_id);
    job->nparts = 0;
    job->first_part_reported = false;
    job->first_part_exited = false;
    job->gang_failed = false;
    if (job->node_id != 0)
        release_on_node(c, job, job->node_id);
    job->node_id = 0;
    job->ngpus_assigned = 0;
}

int cluster_gpus_allocated(const struct cluster *c)
{
    int n = 0;
    for (size_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].state == NODE_READY)
            n += gpu_node_gpus_in_use(&c->nodes[i]);
    return n;
}

int cluster_gpus_total(const struct cluster *c)
{
    int n = 0;
    for (size_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].state == NODE_READY)
            n += gpu_node_gpus_whole_or_mig(&c->nodes[i]);
    return n;
}

int cluster_fragmented_gpus(const struct cluster *c, int smallest_waiting_gpus)
{
    if (smallest_waiting_gpus <= 0)
        return 0;
    int n = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct node *node = &c->nodes[i];
        if (node->state != NODE_READY)
            continue;
        int free = 0;
        for (int g = 0; g < node->ngpus; g++)
            free += gpu_is_free(&node->gpus[g]);
        if (free < smallest_waiting_gpus)
            n += free;
    }
    return n;
}

int cluster_smallest_waiting_gpus(const struct cluster *c)
{
    int smallest = 0;
    for (size_t i = 0; i < c->njobs; i++) {
        const struct job *job = &c->jobs[i];
        if (job->state == JOB_PENDING && job->gpus > 0 && (!smallest || job->gpus < smallest))
            smallest = job->gpus;
    }
    return smallest;
}
