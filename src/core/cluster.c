/* Growing arrays of nodes and unfinished jobs with indexes by id, and GPU
 * bookkeeping. */
#include "core/cluster.h"

#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"
#include "core/array.h"
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
    case NODE_STOPPING: return "stopping";
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

bool node_state_is_up(enum node_state s)
{
    return s == NODE_READY || s == NODE_DRAINING || s == NODE_STOPPING;
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
    free(c->node_ids.slots);
    free(c->job_ids.slots);
    node_jobs_release(&c->node_jobs);
    memset(c, 0, sizeof *c);
}

/* --- indexes by id: struct job and struct node both begin with their id --- */

struct id_array {
    const char *items;
    size_t n, stride;
};

static int64_t id_at(const struct id_array *a, size_t pos)
{
    int64_t id;
    memcpy(&id, a->items + pos * a->stride, sizeof id);
    return id;
}

static size_t home_slot(const struct cluster_id_index *ix, int64_t id)
{
    uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h ^ (h >> 29)) & (ix->cap - 1);
}

/* The slot holding id, or the empty slot where its probe ends. */
static size_t slot_of(const struct cluster_id_index *ix, int64_t id)
{
    size_t h = home_slot(ix, id);
    while (ix->slots[h].pos && ix->slots[h].id != id)
        h = (h + 1) & (ix->cap - 1);
    return h;
}

/* Maps id to pos in a built index; a duplicate id turns it into scanning. */
static void slot_insert(struct cluster_id_index *ix, int64_t id, size_t pos)
{
    size_t h = slot_of(ix, id);
    if (ix->slots[h].pos) {
        ix->scan = true;
        return;
    }
    ix->slots[h].id = id;
    ix->slots[h].pos = (uint32_t)pos + 1;
}

static int index_rebuild(struct cluster_id_index *ix, const struct id_array *a)
{
    size_t cap = 16;
    while (cap < 2 * a->n)
        cap *= 2;
    ix->count = (size_t)-1;
    ix->scan = false;
    if (a->n >= UINT32_MAX)
        return -1;
    if (cap != ix->cap) {
        struct cluster_id_slot *slots = calloc(cap, sizeof *slots);
        if (!slots)
            return -1;
        free(ix->slots);
        ix->slots = slots;
        ix->cap = cap;
    } else {
        memset(ix->slots, 0, cap * sizeof *ix->slots);
    }
    for (size_t i = 0; i < a->n && !ix->scan; i++)
        slot_insert(ix, id_at(a, i), i);
    ix->count = a->n;
    return 0;
}

static long index_find(struct cluster_id_index *ix, const struct id_array *a, int64_t id)
{
    if (a->n == 0)
        return -1;
    if ((ix->count != a->n && index_rebuild(ix, a) != 0) || ix->scan) {
        for (size_t i = 0; i < a->n; i++)
            if (id_at(a, i) == id)
                return (long)i;
        return -1;
    }
    uint32_t pos = ix->slots[slot_of(ix, id)].pos;
    return pos ? (long)pos - 1 : -1;
}

static bool index_current(const struct cluster_id_index *ix, size_t n)
{
    return ix->count == n && ix->cap > 0 && !ix->scan;
}

/* After the array grew by the item at its end. */
static void index_added(struct cluster_id_index *ix, const struct id_array *a)
{
    if (!index_current(ix, a->n - 1))
        return; /* stale or scanning: the next lookup decides */
    if (2 * a->n > ix->cap) {
        index_rebuild(ix, a);
        return;
    }
    slot_insert(ix, id_at(a, a->n - 1), a->n - 1);
    ix->count = a->n;
}

/* Forgets id, shifting the probe chain behind its slot back (linear
 * probing without tombstones). */
static void index_remove(struct cluster_id_index *ix, int64_t id)
{
    size_t mask = ix->cap - 1, hole = slot_of(ix, id);
    if (!ix->slots[hole].pos) {
        ix->count = (size_t)-1;
        return;
    }
    ix->slots[hole].pos = 0;
    for (size_t j = (hole + 1) & mask; ix->slots[j].pos; j = (j + 1) & mask) {
        size_t home = home_slot(ix, ix->slots[j].id);
        /* Stays unless its home lies cyclically outside (hole, j]. */
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (stays)
            continue;
        ix->slots[hole] = ix->slots[j];
        ix->slots[j].pos = 0;
        hole = j;
    }
    ix->count--;
}

/* After the item with id moved to position to. */
static void index_moved(struct cluster_id_index *ix, int64_t id, size_t to)
{
    size_t h = slot_of(ix, id);
    if (ix->slots[h].pos)
        ix->slots[h].pos = (uint32_t)to + 1;
    else
        ix->count = (size_t)-1;
}

static struct id_array node_array(const struct cluster *c)
{
    return (struct id_array){(const char *)c->nodes, c->nnodes, sizeof *c->nodes};
}

static struct id_array job_array(const struct cluster *c)
{
    return (struct id_array){(const char *)c->jobs, c->njobs, sizeof *c->jobs};
}

struct node *cluster_find_node(struct cluster *c, int64_t id)
{
    struct id_array a = node_array(c);
    long pos = index_find(&c->node_ids, &a, id);
    return pos >= 0 ? &c->nodes[pos] : NULL;
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
    if (array_reserve((void **)&c->nodes, &c->nodes_cap, c->nnodes + 1, sizeof *c->nodes) != 0)
        return NULL;
    c->nodes[c->nnodes++] = *node;
    struct id_array a = node_array(c);
    index_added(&c->node_ids, &a);
    return &c->nodes[c->nnodes - 1];
}

/* --- which jobs are on each node (node_jobs.h) --- */

/* Placeholders (backfill's reservation, gang holders) have ids <= 0 and
 * are not in c->jobs: they are left out. */
static void node_jobs_note(struct cluster *c, int64_t node_id, int64_t job_id)
{
    if (job_id > 0 && node_id != 0 && node_jobs_add(&c->node_jobs, node_id, job_id) != 0)
        c->node_jobs_lost = true;
}

static void node_jobs_forget(struct cluster *c, int64_t node_id, int64_t job_id)
{
    if (job_id > 0)
        node_jobs_remove(&c->node_jobs, node_id, job_id);
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* After an add ran out of memory the index misses jobs: made again from
 * every job's placement, as cluster_add_job notes it. Still lost when
 * memory is short again. */
static void node_jobs_rebuild(struct cluster *c)
{
    node_jobs_clear(&c->node_jobs);
    c->node_jobs_lost = false;
    for (size_t j = 0; j < c->njobs && !c->node_jobs_lost; j++) {
        const struct job *job = &c->jobs[j];
        node_jobs_note(c, job->node_id, job->id);
        for (int i = 0; i < job->nparts; i++)
            node_jobs_note(c, job->parts[i].node_id, job->id);
    }
}

size_t cluster_node_job_ids(struct cluster *c, int64_t node_id, int64_t *out, size_t cap)
{
    size_t n = 0;
    if (c->node_jobs_lost)
        node_jobs_rebuild(c);
    if (c->node_jobs_lost) {
        for (size_t j = 0; j < c->njobs; j++)
            if (job_on_node(&c->jobs[j], node_id) && n++ < cap)
                out[n - 1] = c->jobs[j].id;
    } else {
        size_t listed;
        const int64_t *ids = node_jobs_of(&c->node_jobs, node_id, &listed);
        for (size_t i = 0; i < listed; i++) {
            /* Every entry should hold; checking keeps a stray one harmless. */
            const struct job *job = cluster_find_job(c, ids[i]);
            if (job && job_on_node(job, node_id) && n++ < cap)
                out[n - 1] = ids[i];
        }
    }
    qsort(out, n < cap ? n : cap, sizeof *out, cmp_id);
    return n;
}

int cluster_node_ids_fill(struct cluster *c, int64_t node_id, struct cluster_node_ids *out)
{
    out->ids = out->some;
    out->n = cluster_node_job_ids(c, node_id, out->some, sizeof out->some / sizeof *out->some);
    if (out->n <= sizeof out->some / sizeof *out->some)
        return 0;
    size_t n = out->n;
    out->n = 0;
    if (!(out->ids = malloc(n * sizeof *out->ids))) {
        out->ids = out->some;
        return TIDE_ENOMEM;
    }
    out->n = cluster_node_job_ids(c, node_id, out->ids, n);
    return 0;
}

void cluster_node_ids_release(struct cluster_node_ids *ids)
{
    if (ids && ids->ids != ids->some)
        free(ids->ids);
    if (ids) {
        ids->ids = ids->some;
        ids->n = 0;
    }
}

struct job *cluster_add_job(struct cluster *c, const struct job *job)
{
    if (array_reserve((void **)&c->jobs, &c->jobs_cap, c->njobs + 1, sizeof *c->jobs) != 0)
        return NULL;
    c->jobs[c->njobs++] = *job;
    struct id_array a = job_array(c);
    index_added(&c->job_ids, &a);
    /* A job may come placed already (a copy from another cluster). */
    node_jobs_note(c, job->node_id, job->id);
    for (int i = 0; i < job->nparts; i++)
        node_jobs_note(c, job->parts[i].node_id, job->id);
    return &c->jobs[c->njobs - 1];
}

struct job *cluster_find_job(struct cluster *c, int64_t id)
{
    struct id_array a = job_array(c);
    long pos = index_find(&c->job_ids, &a, id);
    return pos >= 0 ? &c->jobs[pos] : NULL;
}

bool cluster_remove_node(struct cluster *c, int64_t id)
{
    struct id_array a = node_array(c);
    long found = index_find(&c->node_ids, &a, id);
    if (found < 0)
        return false;
    size_t i = (size_t)found;
    memmove(&c->nodes[i], &c->nodes[i + 1], (c->nnodes - i - 1) * sizeof *c->nodes);
    c->nnodes--;
    c->node_ids.count = (size_t)-1; /* positions moved: rebuilt at the next lookup */
    return true;
}

void cluster_remove_job(struct cluster *c, int64_t id)
{
    struct id_array a = job_array(c);
    long found = index_find(&c->job_ids, &a, id);
    if (found < 0)
        return;
    size_t i = (size_t)found, last = c->njobs - 1;
    cluster_unassign(c, &c->jobs[i]);
    bool indexed = index_current(&c->job_ids, c->njobs);
    if (indexed)
        index_remove(&c->job_ids, id);
    if (c->jobs_any_order) {
        if (i != last) {
            c->jobs[i] = c->jobs[last];
            if (indexed)
                index_moved(&c->job_ids, c->jobs[i].id, i);
        }
    } else {
        /* Keep submission order: the scheduler sorts, but stable input helps tests. */
        memmove(&c->jobs[i], &c->jobs[i + 1], (last - i) * sizeof *c->jobs);
        for (size_t k = i; indexed && k < last; k++)
            index_moved(&c->job_ids, c->jobs[k].id, k);
    }
    c->njobs--;
    c->jobs_removed++;
    if (!indexed)
        c->job_ids.count = (size_t)-1;
}

size_t cluster_remove_jobs_if(struct cluster *c, bool (*doomed)(struct job *job, void *ctx),
                              void *ctx)
{
    size_t gone = 0;
    for (size_t i = 0; i < c->njobs; i++) {
        c->jobs[i].doomed = doomed(&c->jobs[i], ctx);
        gone += c->jobs[i].doomed;
    }
    if (!gone)
        return 0;
    size_t kept = 0;
    for (size_t i = 0; i < c->njobs; i++) {
        if (c->jobs[i].doomed) {
            cluster_unassign(c, &c->jobs[i]);
            continue;
        }
        if (kept != i)
            c->jobs[kept] = c->jobs[i];
        kept++;
    }
    c->njobs = kept;
    c->jobs_removed += gone;
    c->job_ids.count = (size_t)-1; /* positions moved: the next lookup rebuilds */
    return gone;
}

void cluster_assign(struct cluster *c, struct job *job, struct node *node, const int *gpu_index,
                    int ngpus)
{
    if (job->node_id != node->id) /* not listed there yet */
        node_jobs_note(c, node->id, job->id);
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
    bool listed = job_on_node(job, node->id);
    struct job_part *p = &job->parts[job->nparts++];
    memset(p, 0, sizeof *p);
    p->node_id = node->id;
    p->ngpus = ngpus;
    if (!listed)
        node_jobs_note(c, node->id, job->id);
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

bool job_attempt_on_node(const struct job *job, int attempt, int64_t node_id)
{
    return job && job->attempt == attempt && job_on_node(job, node_id) &&
           job_state_is_on_node(job->state) && !job_part_exited(job, node_id);
}

bool job_part_exited(const struct job *job, int64_t node_id)
{
    if (job->nparts == 0)
        return false;
    if (job->node_id == node_id)
        return job->first_part_exited;
    for (int k = 0; k < job->nparts; k++)
        if (job->parts[k].node_id == node_id)
            return job->parts[k].exited;
    return false;
}

bool job_part_reported(const struct job *job, int64_t node_id)
{
    if (job->node_id == node_id)
        return job->first_part_reported;
    for (int k = 0; k < job->nparts; k++)
        if (job->parts[k].node_id == node_id)
            return job->parts[k].reported;
    return false;
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
    node_jobs_forget(c, node_id, job->id);
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
    job->gang_lost = false;
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
