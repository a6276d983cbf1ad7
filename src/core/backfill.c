/* EASY backfill reservations (see backfill.h). */
#include "core/backfill.h"

#include <stdlib.h>
#include <string.h>

#include "core/gang.h"
#include "core/gpu_share.h"

#include "core/queue.h"

#include "core/core_banned.h"

/* GPUs marked as held by a reservation carry this job id, never a real one. */
#define RESERVED_GPU (-1)

int64_t backfill_expected_end_ms(const struct job *job, int64_t start_ms)
{
    int64_t run_s = job->est_runtime_s > 0 ? job->est_runtime_s : job->max_runtime_s;
    if (run_s <= 0)
        return INT64_MAX;
    return start_ms + run_s * 1000;
}

static bool gpu_usable(const struct placement_config *cfg, const struct gpu *g,
                       const struct job *job)
{
    if (!placement_gpu_matches(g, job))
        return false;
    if (g->utilization_pct > cfg->max_gpu_utilization_pct)
        return false;
    return !(g->memory_total_mib > 0 &&
             g->memory_used_mib * 100 > (int64_t)cfg->max_gpu_memory_used_pct * g->memory_total_mib);
}

/* Expected ends of the jobs on nodes, sorted by job id for bsearch: one
 * scan of the jobs per reservation instead of one per GPU. */
struct job_end {
    int64_t job_id;
    int64_t end_ms;
};

static int by_job_id(const void *a, const void *b)
{
    const struct job_end *x = a, *y = b;
    return (x->job_id > y->job_id) - (x->job_id < y->job_id);
}

static int64_t expected_end_of(const struct job_end *ends, size_t n, int64_t job_id)
{
    struct job_end key = {job_id, 0};
    const struct job_end *e = bsearch(&key, ends, n, sizeof *ends, by_job_id);
    return e ? e->end_ms : INT64_MAX;
}

/* Fills gpus_out[n..] up to job->gpus with matching GPUs held by jobs that
 * give no runtime (all that is left once the known ends are used up), in
 * GPU order. Returns how many it took, or -1 when the node has too few. */
static int take_unknown_holders(const struct node *node, const struct job *job, const bool *taken,
                                int *gpus_out, int n)
{
    int took = 0;
    for (int g = 0; g < node->ngpus && n + took < job->gpus; g++) {
        const struct gpu *gpu = &node->gpus[g];
        if (!taken[g] && gpu->job_id > 0 && !gpu->faulty && placement_gpu_matches(gpu, job))
            gpus_out[n + took++] = gpu->index;
    }
    return n + took == job->gpus ? took : -1;
}

/* When `want` matching GPUs of node will be free, and which. When that
 * time is not known (INT64_MAX), *waiting says how many of them are held
 * by jobs that give no runtime, or is -1 when the node can never have
 * them; it is 0 for a known time. */
static int64_t node_free_time(const struct placement_config *cfg, const struct job_end *ends,
                              size_t nends, struct node *node, const struct job *job,
                              int64_t now_ms, int *gpus_out, int *waiting)
{
    int n = 0;
    int64_t when = now_ms;
    bool taken[TIDE_MAX_GPUS_PER_NODE] = {false};
    *waiting = 0;
    for (int g = 0; g < node->ngpus && n < job->gpus; g++)
        if (gpu_is_free(&node->gpus[g]) && gpu_usable(cfg, &node->gpus[g], job)) {
            gpus_out[n++] = node->gpus[g].index;
            taken[g] = true;
        }
    while (n < job->gpus) {
        /* The holder of a matching GPU that ends soonest frees it next. */
        int64_t best_end = INT64_MAX;
        int64_t best_job = 0;
        for (int g = 0; g < node->ngpus; g++) {
            const struct gpu *gpu = &node->gpus[g];
            if (taken[g] || gpu->job_id <= 0 || gpu->faulty || !placement_gpu_matches(gpu, job))
                continue;
            int64_t end = expected_end_of(ends, nends, gpu->job_id);
            if (end < best_end) {
                best_end = end;
                best_job = gpu->job_id;
            }
        }
        if (best_end == INT64_MAX) {
            *waiting = take_unknown_holders(node, job, taken, gpus_out, n);
            return INT64_MAX;
        }
        if (best_end > when)
            when = best_end;
        for (int g = 0; g < node->ngpus && n < job->gpus; g++)
            if (!taken[g] && node->gpus[g].job_id == best_job) {
                taken[g] = true;
                gpus_out[n++] = node->gpus[g].index;
            }
    }
    return when;
}

/* A node's earliest time for a share, kept among the m earliest. */
struct candidate {
    int64_t when;
    int waiting; /* when unknown: GPUs held by jobs that give no runtime */
    struct backfill_part part;
};

/* Whether a starts before b: a known time before an unknown one, and
 * among unknown ones the fewer GPUs to wait for, as those are the fewer
 * jobs that must end first. */
static bool sooner(int64_t a_when, int a_waiting, int64_t b_when, int b_waiting)
{
    return a_when < b_when || (a_when == b_when && a_waiting < b_waiting);
}

/* The earliest time `m` distinct nodes each have `share` matching GPUs
 * free (INT64_MAX: not known), those nodes in best: the m earliest, ties by
 * cluster order. Returns false when fewer than m nodes could ever hold a
 * share; *waiting: the GPUs the split waits for with no known time. */
static bool earliest_split(const struct placement_config *cfg, const struct job_end *ends,
                           size_t nends, struct cluster *c, const struct job *blocked, int m,
                           int share, int64_t now_ms, struct candidate *best, int64_t *when,
                           int *waiting)
{
    struct job want = *blocked;
    want.gpus = share;
    int found = 0;
    struct candidate cand;
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node *node = &c->nodes[i];
        if (node->state != NODE_READY || node->ngpus < share || !queue_allows_node(blocked, node))
            continue;
        cand.when = node_free_time(cfg, ends, nends, node, &want, now_ms, cand.part.gpu_index,
                                   &cand.waiting);
        if (cand.waiting < 0 ||
            (found == m && !sooner(cand.when, cand.waiting, best[m - 1].when, best[m - 1].waiting)))
            continue;
        cand.part.node = node;
        cand.part.ngpus = share;
        int at = found < m ? found++ : m - 1;
        while (at > 0 && sooner(cand.when, cand.waiting, best[at - 1].when, best[at - 1].waiting)) {
            best[at] = best[at - 1];
            at--;
        }
        best[at] = cand;
    }
    if (found < m)
        return false;
    *when = best[m - 1].when;
    *waiting = 0;
    for (int k = 0; k < m; k++)
        *waiting += best[k].waiting;
    return true;
}

bool backfill_reserve(const struct placement_config *cfg, struct cluster *c,
                      const struct job *blocked, int64_t now_ms, struct backfill_reservation *out)
{
    memset(out, 0, sizeof *out);
    if (gpu_job_wants_slice(blocked))
        return false; /* shares and MIG instances wait in line without reserving */
    size_t nends = 0;
    for (size_t j = 0; j < c->njobs; j++)
        nends += job_state_is_on_node(c->jobs[j].state);
    struct job_end *ends = malloc((nends ? nends : 1) * sizeof *ends);
    struct candidate *split = malloc(TIDE_MAX_GANG_NODES * sizeof *split);
    if (!ends || !split) {
        free(ends);
        free(split);
        return false; /* no reservation: the pass stays greedy */
    }
    nends = 0;
    for (size_t j = 0; j < c->njobs; j++) {
        const struct job *running = &c->jobs[j];
        if (job_state_is_on_node(running->state))
            ends[nends++] = (struct job_end){running->id,
                                             backfill_expected_end_ms(running, running->start_ms)};
    }
    qsort(ends, nends, sizeof *ends, by_job_id);
    int64_t best = INT64_MAX;
    int best_waiting = -1; /* -1: no split found */
    /* One node, then each split gang placement would try: the earliest
     * start wins, the fewer nodes among equals. */
    for (int m = 1; m; m = gang_next_split(blocked, m)) {
        int64_t when;
        int waiting;
        if (!earliest_split(cfg, ends, nends, c, blocked, m, blocked->gpus / m, now_ms, split,
                            &when, &waiting) ||
            (best_waiting >= 0 && !sooner(when, waiting, best, best_waiting)))
            continue;
        best = when;
        best_waiting = waiting;
        out->nparts = m;
        for (int k = 0; k < m; k++)
            out->parts[k] = split[k].part;
    }
    free(ends);
    free(split);
    if (best_waiting < 0)
        return false;
    out->active = true;
    out->job_id = blocked->id;
    out->node = out->parts[0].node;
    out->start_ms = best; /* BACKFILL_START_UNKNOWN when not known */
    return true;
}

void backfill_hold(struct cluster *c, struct backfill_reservation *r, bool on)
{
    if (!r->active)
        return;
    if (!on) {
        if (r->holder.node_id)
            cluster_unassign(c, &r->holder);
        return;
    }
    /* Hold the reserved GPUs that are free now through the same bookkeeping
     * as a task, so every index over free capacity stays right. */
    memset(&r->holder, 0, sizeof r->holder);
    r->holder.id = RESERVED_GPU;
    for (int k = 0; k < r->nparts; k++) {
        const struct backfill_part *p = &r->parts[k];
        int free_now[TIDE_MAX_GPUS_PER_NODE], n = 0;
        for (int i = 0; i < p->ngpus; i++)
            for (int g = 0; g < p->node->ngpus; g++)
                if (p->node->gpus[g].index == p->gpu_index[i] && gpu_is_free(&p->node->gpus[g]))
                    free_now[n++] = p->gpu_index[i];
        if (n == 0)
            continue;
        if (!r->holder.node_id)
            cluster_assign(c, &r->holder, p->node, free_now, n);
        else
            cluster_assign_part(c, &r->holder, p->node, free_now, n);
    }
}

bool backfill_lends(const struct backfill_reservation *r)
{
    return r->active && r->start_ms != BACKFILL_START_UNKNOWN;
}

bool backfill_fits_before(const struct backfill_reservation *r, const struct job *job,
                          int64_t now_ms)
{
    /* Before an unknown start nothing is sure to end: its GPUs stay held. */
    return backfill_lends(r) && backfill_expected_end_ms(job, now_ms) <= r->start_ms;
}
