/* Start-time ETAs from a forward run of free GPU counts (see eta.h). */
#include "core/eta.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"
#include "core/eta_shapes.h"
#include "core/gang.h"
#include "core/gpu_share.h"
#include "core/placement.h"
#include "core/queue.h"

#include "core/core_banned.h"

#define MAXG TIDE_MAX_GPUS_PER_NODE
#define NLISTS ((TIDE_MAX_QUEUES + 1) * MAXG) /* (capped queue or none, GPU count) */

void eta_plan_init(struct eta_plan *p)
{
    memset(p, 0, sizeof *p);
}

void eta_plan_release(struct eta_plan *p)
{
    if (!p)
        return;
    free(p->nodes);
    free(p->free);
    free(p->size);
    free(p->next);
    free(p->prev);
    free(p->heap);
    free(p->items);
    free(p->by_size);
    free(p->size_start);
    free(p->size_head);
    free(p->lists);
    free(p->special);
    if (p->shapes)
        eta_shapes_release(p->shapes);
    free(p->shapes);
    memset(p, 0, sizeof *p);
}

void eta_plan_set_queues(struct eta_plan *p, const struct queue_set *qs)
{
    p->queues = qs;
}

static int grow(void **buf, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *b = realloc(*buf, n * size);
    if (!b)
        return TIDE_ENOMEM;
    *buf = b;
    *cap = n;
    return 0;
}

/* --- nodes by free GPU count --- */

static void bucket_remove(struct eta_plan *p, int32_t i)
{
    int f = p->free[i];
    if (p->prev[i] >= 0)
        p->next[p->prev[i]] = p->next[i];
    else
        p->head[f] = p->next[i];
    if (p->next[i] >= 0)
        p->prev[p->next[i]] = p->prev[i];
    p->count[f]--;
}

static void bucket_insert(struct eta_plan *p, int32_t i)
{
    int f = p->free[i];
    p->prev[i] = -1;
    p->next[i] = p->head[f];
    if (p->head[f] >= 0)
        p->prev[p->head[f]] = i;
    p->head[f] = i;
    p->count[f]++;
    if (f > p->max_free)
        p->max_free = f;
}

static void set_free(struct eta_plan *p, int32_t i, int f)
{
    if (f < 0)
        f = 0; /* a reservation whose GPUs came late: estimates were off */
    if (f > p->size[i])
        f = p->size[i];
    bucket_remove(p, i);
    p->free[i] = f;
    bucket_insert(p, i);
    while (p->max_free > 0 && p->count[p->max_free] == 0)
        p->max_free--;
}

/* --- queue caps --- */

/* The index of job's queue in the plan's queue set when that queue has a
 * cap; -1 otherwise. */
static int16_t capped_queue(const struct eta_plan *p, const struct job *job)
{
    const struct queue_config *q = p->queues ? queue_of_job(p->queues, job) : NULL;
    if (!q || (q->max_running_jobs <= 0 && q->max_running_gpus <= 0))
        return -1;
    return (int16_t)(q - p->queues->queues);
}

/* Whether queue q has room for one more job of gpus GPUs (as sched.c's cap check). */
static bool queue_has_room(const struct eta_plan *p, int q, int gpus)
{
    if (q < 0)
        return true;
    const struct queue_config *cfg = &p->queues->queues[q];
    return (cfg->max_running_jobs <= 0 || p->qjobs[q] < cfg->max_running_jobs) &&
           (cfg->max_running_gpus <= 0 || p->qgpus[q] + gpus <= cfg->max_running_gpus);
}

static void queue_take(struct eta_plan *p, int q, int jobs, int gpus)
{
    if (q >= 0) {
        p->qjobs[q] += jobs;
        p->qgpus[q] += gpus;
    }
}

/* --- events --- */

static bool event_before(const struct eta_event *a, const struct eta_event *b)
{
    return a->t_ms != b->t_ms ? a->t_ms < b->t_ms : a->kind < b->kind;
}

static int push_event(struct eta_plan *p, struct eta_event ev)
{
    if (grow((void **)&p->heap, &p->heap_cap, p->nheap + 1, sizeof *p->heap))
        return TIDE_ENOMEM;
    size_t i = p->nheap++;
    while (i > 0 && event_before(&ev, &p->heap[(i - 1) / 2])) {
        p->heap[i] = p->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    p->heap[i] = ev;
    return 0;
}

static struct eta_event pop_event(struct eta_plan *p)
{
    struct eta_event top = p->heap[0], last = p->heap[--p->nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= p->nheap)
            break;
        if (c + 1 < p->nheap && event_before(&p->heap[c + 1], &p->heap[c]))
            c++;
        if (!event_before(&p->heap[c], &last))
            break;
        p->heap[i] = p->heap[c];
        i = c;
    }
    if (p->nheap)
        p->heap[i] = last;
    return top;
}

/* --- the cluster now --- */

static bool gpu_plannable(const struct gpu *g)
{
    return !g->mig_mode && g->mig_profile[0] == '\0';
}

static int32_t plan_index_of(const struct eta_plan *p, const struct node *n)
{
    size_t lo = 0, hi = p->nnodes;
    while (lo < hi) { /* plan nodes are in cluster order: search by address */
        size_t mid = (lo + hi) / 2;
        if (p->nodes[mid] < n)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->nnodes && p->nodes[lo] == n ? (int32_t)lo : -1;
}

static int plan_nodes(struct eta_plan *p, struct cluster *c)
{
    size_t n = 0;
    for (size_t i = 0; i < c->nnodes; i++)
        n += c->nodes[i].state == NODE_READY;
    size_t cap = p->nodes_cap;
    if (grow((void **)&p->nodes, &cap, n, sizeof *p->nodes))
        return TIDE_ENOMEM;
    if (cap != p->nodes_cap) {
        int32_t *a[4];
        for (int k = 0; k < 4; k++)
            if (!(a[k] = malloc(cap * sizeof(int32_t)))) {
                while (k--)
                    free(a[k]);
                return TIDE_ENOMEM;
            }
        free(p->free), free(p->size), free(p->next), free(p->prev);
        p->free = a[0], p->size = a[1], p->next = a[2], p->prev = a[3];
        p->nodes_cap = cap;
    }
    for (int f = 0; f <= MAXG; f++)
        p->head[f] = -1, p->count[f] = 0;
    p->max_free = 0;
    p->nnodes = 0;
    p->any_spot = false;
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node *node = &c->nodes[i];
        if (node->state != NODE_READY)
            continue;
        int32_t k = (int32_t)p->nnodes++;
        int size = 0, free_now = 0;
        for (int g = 0; g < node->ngpus; g++)
            if (gpu_plannable(&node->gpus[g])) {
                size++;
                free_now += gpu_is_free(&node->gpus[g]);
            }
        p->nodes[k] = node;
        p->size[k] = size;
        p->free[k] = free_now;
        p->any_spot |= node->spot;
        bucket_insert(p, k);
    }
    return 0;
}

/* The plannable GPUs job holds on node. */
static int held_on(const struct job *job, const struct node *node)
{
    int idx[MAXG], n = job_gpus_on_node(job, node->id, idx), held = 0;
    for (int i = 0; i < n; i++)
        for (int g = 0; g < node->ngpus; g++)
            if (node->gpus[g].index == idx[i]) {
                /* a shared GPU is not counted free now, nor when one sharer ends */
                held += gpu_plannable(&node->gpus[g]) && node->gpus[g].job_id == job->id;
                break;
            }
    return held;
}

/* When a job on a node is expected to end, and what that rests on. */
static int64_t running_end_ms(const struct eta_estimator *est, const struct job *job,
                              int64_t now_ms, enum eta_basis *basis)
{
    *basis = ETA_BASIS_NOW;
    if (job->state == JOB_PREEMPTED || job->cancel_requested || job->reclaim_requested)
        return now_ms; /* being stopped: its GPUs free about now */
    return now_ms + eta_estimator_remaining_ms(est, job, now_ms - job->start_ms, basis);
}

/* Ends of the jobs on nodes (and the room they leave in a capped queue),
 * and the reservation a job holds. */
static int plan_running(struct eta_plan *p, struct cluster *c, const struct eta_estimator *est,
                        int64_t now_ms)
{
    memset(p->qjobs, 0, sizeof p->qjobs);
    memset(p->qgpus, 0, sizeof p->qgpus);
    for (size_t j = 0; j < c->njobs; j++) {
        const struct job *job = &c->jobs[j];
        if (!job_state_is_on_node(job->state))
            continue;
        enum eta_basis basis;
        int64_t end = running_end_ms(est, job, now_ms, &basis);
        int16_t q = capped_queue(p, job); /* counted on any node, as a pass counts */
        if (q >= 0) {
            queue_take(p, q, 1, job->gpus);
            if (push_event(p, (struct eta_event){.t_ms = end,
                                                 .node = -1,
                                                 .queue = q,
                                                 .qjobs = -1,
                                                 .qgpus = -job->gpus,
                                                 .basis = (uint8_t)basis}))
                return TIDE_ENOMEM;
        }
        for (int part = -1; part < job->nparts; part++) {
            struct node *n =
                cluster_find_node(c, part < 0 ? job->node_id : job->parts[part].node_id);
            int32_t k = n && n->state == NODE_READY ? plan_index_of(p, n) : -1;
            int held = k >= 0 ? held_on(job, n) : 0;
            if (held && push_event(p, (struct eta_event){.t_ms = end,
                                                         .node = k,
                                                         .delta = held,
                                                         .queue = -1,
                                                         .basis = (uint8_t)basis}))
                return TIDE_ENOMEM;
        }
    }
    return 0;
}

/* A running job's part on a plan node: when it ends, how many GPUs. */
struct node_end {
    int64_t t_ms;
    int held;
    uint8_t basis;
};

/* A reservation with an unknown start (backfill.h): the node keeps each
 * GPU that frees for it, as the plan expects its holders' runs to end,
 * until need have; then it starts. Pushes those takings and sets *start,
 * and *basis to the least certain of the runs it waited for; *start is -1
 * when the node's jobs will never free need (planned as any other job
 * then). Returns 0 or TIDE_ENOMEM. */
static int plan_unknown_start(struct eta_plan *p, struct cluster *c,
                              const struct eta_estimator *est, struct node *n, int32_t k, int need,
                              int64_t now_ms, int64_t *start, uint8_t *basis)
{
    struct node_end ends[MAXG];
    int nends = 0, freed = 0;
    for (size_t j = 0; j < c->njobs && nends < MAXG; j++) {
        const struct job *job = &c->jobs[j];
        int held = job_state_is_on_node(job->state) ? held_on(job, n) : 0;
        if (!held)
            continue;
        enum eta_basis b;
        struct node_end e = {running_end_ms(est, job, now_ms, &b), held, (uint8_t)b};
        int at = nends++;
        for (; at > 0 && ends[at - 1].t_ms > e.t_ms; at--)
            ends[at] = ends[at - 1];
        ends[at] = e;
        freed += held;
    }
    *start = -1;
    if (freed < need)
        return 0;
    *start = now_ms;
    *basis = ETA_BASIS_RESERVATION;
    for (int i = 0; i < nends && need > 0; i++) {
        int take = ends[i].held < need ? ends[i].held : need;
        need -= take;
        *start = ends[i].t_ms;
        *basis = (uint8_t)eta_basis_weaker((enum eta_basis) * basis, (enum eta_basis)ends[i].basis);
        /* kind 1: after the end at t has given the GPUs back */
        if (push_event(p, (struct eta_event){.t_ms = ends[i].t_ms,
                                             .node = k,
                                             .delta = -take,
                                             .queue = -1,
                                             .basis = ETA_BASIS_NOW,
                                             .kind = 1}))
            return TIDE_ENOMEM;
    }
    return 0;
}

/* A reserved job starts at its reservation on its node, which keeps its
 * free GPUs for it until then (EASY); with an unknown start, when the
 * plan expects the node's jobs to have freed enough. */
static int plan_reservation(struct eta_plan *p, struct cluster *c, const struct eta_estimator *est,
                            struct eta_item *it, int64_t now_ms)
{
    struct job *job = it->job;
    struct node *n = cluster_find_node(c, job->reserved_node_id);
    int32_t k = n && n->state == NODE_READY ? plan_index_of(p, n) : -1;
    if (k < 0 || job->gpus > p->size[k])
        return 0; /* planned as any other job */
    int hold = p->free[k] < job->gpus ? p->free[k] : job->gpus;
    int64_t start = job->reserved_start_ms > now_ms ? job->reserved_start_ms : now_ms;
    uint8_t basis = ETA_BASIS_RESERVATION;
    int taken_early = 0; /* GPUs kept for it as they free, before its start */
    if (!job->reserved_start_ms) {
        if (plan_unknown_start(p, c, est, n, k, job->gpus - hold, now_ms, &start, &basis))
            return TIDE_ENOMEM;
        if (start < 0)
            return 0;
        taken_early = job->gpus - hold;
    }
    set_free(p, k, p->free[k] - hold);
    it->done = true;
    job->eta_start_ms = start;
    job->eta_basis = basis;
    uint8_t held = (uint8_t)eta_basis_weaker(basis, it->run_basis);
    bool later = start > now_ms; /* its queue counts it from its start */
    if (!later)
        queue_take(p, it->queue, 1, job->gpus);
    if (push_event(p, (struct eta_event){.t_ms = start,
                                         .node = k,
                                         .delta = hold + taken_early - job->gpus,
                                         .queue = later ? it->queue : -1,
                                         .qjobs = 1,
                                         .qgpus = (int32_t)job->gpus,
                                         .basis = basis,
                                         .kind = 1}) ||
        push_event(p, (struct eta_event){.t_ms = start + it->run_ms,
                                         .node = k,
                                         .delta = job->gpus,
                                         .queue = it->queue,
                                         .qjobs = -1,
                                         .qgpus = -(int32_t)job->gpus,
                                         .basis = held}))
        return TIDE_ENOMEM;
    return 0;
}

/* --- placing --- */

/* Whole GPUs on one node, any ready node (spot allowed where there is
 * one): the free counts alone say where it fits. */
static bool any_node_will_do(const struct eta_plan *p, const struct job *job)
{
    return job->gpus <= MAXG && job->max_nodes <= 1 && job->gpu_model[0] == '\0' &&
           job->gpu_memory_mib == 0 && job->mig[0] == '\0' &&
           (!job->rules || job->rules->npools == 0) &&
           (!p->any_spot || queue_job_may_use_spot(job));
}

/* The node with the fewest free GPUs that still has k (best fit); -1: none. */
static int32_t best_fit(const struct eta_plan *p, int k)
{
    for (int f = k; f <= p->max_free; f++)
        if (p->head[f] >= 0)
            return p->head[f];
    return -1;
}

static bool node_takes(const struct eta_plan *p, int32_t i, const struct job *job, int share)
{
    const struct node *n = p->nodes[i];
    if (p->free[i] < share || !queue_allows_node(job, n))
        return false;
    for (int g = 0; g < n->ngpus; g++)
        if (gpu_plannable(&n->gpus[g]))
            return placement_gpu_matches(&n->gpus[g], job);
    return false;
}

/* Whether a special job fits now: its nodes (best fit first) into out, and
 * how many; 0 when it does not. */
static int special_fits(const struct eta_plan *p, const struct job *job, int32_t *out, int *share)
{
    int k = gpu_job_wants_slice(job) ? 1 : job->gpus;
    bool plain = job->gpu_model[0] == '\0' && job->gpu_memory_mib == 0 &&
                 (!job->rules || job->rules->npools == 0) && !p->any_spot;
    for (int m = 1; m; m = job->max_nodes > 1 ? gang_next_split(job, m) : 0) {
        int s = k / m;
        if (s > MAXG || s > p->max_free)
            continue;
        if (plain) { /* the counts say whether m nodes have s free */
            int have = 0;
            for (int f = s; f <= p->max_free && have < m; f++)
                have += p->count[f];
            if (have < m)
                continue;
        }
        int found = 0;
        for (int f = s; f <= p->max_free && found < m; f++)
            for (int32_t i = p->head[f]; i >= 0 && found < m; i = p->next[i])
                if (node_takes(p, i, job, s))
                    out[found++] = i;
        if (found == m) {
            *share = s;
            return m;
        }
    }
    return 0;
}

static int start_item(struct eta_plan *p, struct eta_item *it, const int32_t *nodes, int n,
                      int share, int64_t t, enum eta_basis basis)
{
    it->done = true;
    it->job->eta_start_ms = t;
    it->job->eta_basis = basis;
    uint8_t held = (uint8_t)eta_basis_weaker(basis, (enum eta_basis)it->run_basis);
    queue_take(p, it->queue, 1, it->job->gpus);
    for (int i = 0; i < n; i++) {
        set_free(p, nodes[i], p->free[nodes[i]] - share);
        /* the first node's end also gives the job's queue its room back */
        if (push_event(p, (struct eta_event){.t_ms = t + it->run_ms,
                                             .node = nodes[i],
                                             .delta = share,
                                             .queue = i == 0 ? it->queue : -1,
                                             .qjobs = -1,
                                             .qgpus = -(int32_t)it->job->gpus,
                                             .basis = held}))
            return TIDE_ENOMEM;
    }
    return 0;
}

/* The first job in order still waiting at t that blocks a strict pass
 * (one in backoff, or held back by its queue's cap, is passed over, as
 * the pass does): nothing behind it starts before it. INT32_MAX: none. */
static int32_t first_waiting(const struct eta_plan *p, int64_t t)
{
    int32_t first = INT32_MAX;
    for (size_t i = 0; i < p->nlists; i++) {
        int32_t l = p->lists[i];
        if (p->size_head[l] < p->size_start[l + 1] && p->by_size[p->size_head[l]] < first &&
            queue_has_room(p, l / MAXG - 1, l % MAXG + 1))
            first = p->by_size[p->size_head[l]];
    }
    for (size_t s = p->special_head; s < p->nspecial && p->special[s] < first; s++) {
        const struct eta_item *it = &p->items[p->special[s]];
        if (!it->done && it->not_before_ms <= t &&
            (it->queue < 0 || queue_has_room(p, it->queue, it->job->gpus)))
            return p->special[s];
    }
    return first;
}

/* At t, starts every waiting job that fits and that its queue has room
 * for, in order, as a pass would. The jobs of one list are alike (the same
 * GPU count, the same capped queue or none), so only its head may start. */
static int place_round(struct eta_plan *p, int64_t t, enum eta_basis basis)
{
    /* A special that cannot start now cannot later in the round either
     * (starts only take room), nor can one of its shape behind it: each
     * shape is looked at once a round, and again only after a start of
     * its own (eta_shapes.h). */
    eta_shapes_round_begin(p->shapes);
    for (;;) {
        int32_t best = INT32_MAX, best_l = -1;
        int best_k = 0;
        for (size_t i = 0; i < p->nlists; i++) {
            int32_t l = p->lists[i];
            int k = l % MAXG + 1;
            if (k <= p->max_free && p->size_head[l] < p->size_start[l + 1] &&
                p->by_size[p->size_head[l]] < best && queue_has_room(p, l / MAXG - 1, k)) {
                best = p->by_size[p->size_head[l]];
                best_k = k;
                best_l = l;
            }
        }
        while (p->special_head < p->nspecial && p->items[p->special[p->special_head]].done)
            p->special_head++;
        int32_t nodes[TIDE_MAX_GANG_NODES];
        int share = 0, n = 0;
        for (int32_t top; (top = eta_shapes_top(p->shapes)) < best;) {
            const struct eta_item *it = &p->items[top];
            if (it->not_before_ms <= t &&
                (it->queue < 0 || queue_has_room(p, it->queue, it->job->gpus)) &&
                it->min_share <= p->max_free && (n = special_fits(p, it->job, nodes, &share)) > 0) {
                best = top;
                best_k = 0;
                break;
            }
            eta_shapes_drop_top(p->shapes);
        }
        if (best == INT32_MAX || (p->strict && best != first_waiting(p, t)))
            return 0;
        int rc;
        if (best_k) {
            p->size_head[best_l]++;
            int32_t node = best_fit(p, best_k);
            rc = start_item(p, &p->items[best], &node, 1, best_k, t, basis);
        } else {
            eta_shapes_start_top(p->shapes);
            rc = start_item(p, &p->items[best], nodes, n, share, t, basis);
        }
        if (rc)
            return rc;
    }
}

/* Whether a pending job is out of the scheduler's order only for its
 * retry backoff (the scheduler clears not_before_ms of the jobs it holds). */
static bool in_backoff(const struct job *job, int64_t now_ms)
{
    return job->state == JOB_PENDING && !job->held && !job->on_hold && job->not_before_ms > now_ms;
}

/* Adds job as the plan's next item (reserved, special or in its list). */
static int add_item(struct eta_plan *p, struct cluster *c, const struct eta_estimator *est,
                    struct job *job, int64_t now_ms, int32_t *counts)
{
    int64_t not_before = job->not_before_ms > now_ms ? job->not_before_ms : 0;
    if (job->gpus <= 0) {
        job->eta_start_ms = not_before ? not_before : now_ms;
        job->eta_basis = ETA_BASIS_NOW;
        return 0;
    }
    if (job->mig[0])
        return 0; /* MIG instances are not planned */
    struct eta_item *it = &p->items[p->nitems];
    enum eta_basis rb;
    *it = (struct eta_item){.job = job, .not_before_ms = not_before};
    it->run_ms = eta_estimator_remaining_ms(est, job, 0, &rb);
    it->run_basis = (uint8_t)rb;
    it->queue = capped_queue(p, job);
    it->special = !any_node_will_do(p, job) || gpu_job_wants_slice(job) || not_before;
    it->min_share = gpu_job_wants_slice(job) ? 1 : job->gpus;
    for (int m = job->max_nodes > 1 ? gang_next_split(job, 1) : 0; m; m = gang_next_split(job, m))
        if (job->gpus / m < it->min_share)
            it->min_share = job->gpus / m;
    if (job->reserved_node_id && !not_before) {
        int rc = plan_reservation(p, c, est, it, now_ms);
        if (rc)
            return rc;
    }
    if (not_before && push_event(p, (struct eta_event){.t_ms = not_before,
                                                       .node = -1,
                                                       .queue = -1,
                                                       .basis = ETA_BASIS_NOW}))
        return TIDE_ENOMEM; /* a round when its backoff ends */
    if (!it->done && it->special)
        p->special[p->nspecial++] = (int32_t)p->nitems;
    else if (!it->done) {
        int32_t l = (it->queue + 1) * MAXG + job->gpus - 1;
        counts[l]++;
        if (l >= p->lists_end)
            p->lists_end = l + 1;
    }
    p->nitems++;
    return 0;
}

static int plan_items(struct eta_plan *p, struct cluster *c, const struct eta_estimator *est,
                      struct job *const *order, size_t n, int64_t now_ms)
{
    size_t nbackoff = 0;
    for (size_t j = 0; j < c->njobs; j++)
        nbackoff += in_backoff(&c->jobs[j], now_ms);
    size_t need = n + nbackoff, cap = NLISTS + 1;
    if (grow((void **)&p->items, &p->items_cap, need, sizeof *p->items) ||
        grow((void **)&p->by_size, &p->by_size_cap, need, sizeof *p->by_size) ||
        grow((void **)&p->special, &p->special_cap, need, sizeof *p->special))
        return TIDE_ENOMEM;
    if (!p->size_start) {
        p->size_start = malloc(cap * sizeof *p->size_start);
        p->size_head = malloc(cap * sizeof *p->size_head);
        p->lists = malloc(cap * sizeof *p->lists);
        if (!p->size_start || !p->size_head || !p->lists) {
            free(p->size_start), free(p->size_head), free(p->lists);
            p->size_start = p->size_head = p->lists = NULL;
            return TIDE_ENOMEM;
        }
        p->lists_end = (int32_t)NLISTS; /* all to be zeroed */
    }
    int32_t *counts = p->size_head; /* items per list, until the heads are set */
    memset(counts, 0, (size_t)p->lists_end * sizeof *counts); /* the rest are still 0 */
    p->nitems = p->nspecial = p->special_head = p->nlists = 0;
    p->lists_end = 0;
    for (size_t i = 0; i < n; i++) {
        if (order[i]->state != JOB_PENDING || order[i]->not_before_ms > now_ms)
            continue;
        int rc = add_item(p, c, est, order[i], now_ms, counts);
        if (rc)
            return rc;
    }
    /* Jobs in retry backoff: after the order, each from its not_before_ms. */
    for (size_t j = 0; j < c->njobs && nbackoff; j++)
        if (in_backoff(&c->jobs[j], now_ms)) {
            int rc = add_item(p, c, est, &c->jobs[j], now_ms, counts);
            if (rc)
                return rc;
        }
    p->size_start[0] = 0;
    for (int32_t l = 0; l < p->lists_end; l++) {
        p->size_start[l + 1] = p->size_start[l] + counts[l];
        if (counts[l])
            p->lists[p->nlists++] = l;
    }
    for (int32_t l = 0; l < p->lists_end; l++)
        p->size_head[l] = p->size_start[l];
    for (size_t i = 0; i < p->nitems; i++) {
        const struct eta_item *it = &p->items[i];
        if (!it->done && !it->special)
            p->by_size[p->size_head[(it->queue + 1) * MAXG + it->job->gpus - 1]++] = (int32_t)i;
    }
    for (int32_t l = 0; l < p->lists_end; l++)
        p->size_head[l] = p->size_start[l];
    if (!p->shapes && !(p->shapes = calloc(1, sizeof *p->shapes)))
        return TIDE_ENOMEM;
    return eta_shapes_build(p->shapes, p->items, p->special, p->nspecial);
}

static int plan(struct eta_plan *p, struct cluster *c, const struct eta_estimator *est,
                struct job *const *order, size_t n, int64_t now_ms)
{
    p->nheap = 0;
    int rc = plan_nodes(p, c);
    if (!rc)
        rc = plan_running(p, c, est, now_ms);
    if (!rc)
        rc = plan_items(p, c, est, order, n, now_ms);
    if (!rc)
        rc = place_round(p, now_ms, ETA_BASIS_NOW);
    while (!rc && p->nheap > 0) {
        int64_t t = p->heap[0].t_ms;
        enum eta_basis basis = ETA_BASIS_NOW;
        while (p->nheap > 0 && p->heap[0].t_ms == t) {
            struct eta_event ev = pop_event(p);
            if (ev.node >= 0)
                set_free(p, ev.node, p->free[ev.node] + ev.delta);
            queue_take(p, ev.queue, ev.qjobs, ev.qgpus);
            basis = eta_basis_weaker(basis, (enum eta_basis)ev.basis);
        }
        rc = place_round(p, t, basis);
    }
    return rc;
}

int eta_plan_run(struct eta_plan *p, struct cluster *c, const struct eta_estimator *est,
                 struct job *const *order, size_t n, int64_t now_ms)
{
    struct eta_estimator nothing;
    if (!est) {
        eta_estimator_init(&nothing, 0);
        est = &nothing;
    }
    for (size_t j = 0; j < c->njobs; j++)
        if (c->jobs[j].state == JOB_PENDING) {
            c->jobs[j].eta_start_ms = 0;
            c->jobs[j].eta_basis = ETA_BASIS_UNKNOWN;
        }
    int rc = plan(p, c, est, order, n, now_ms);
    if (rc)
        for (size_t j = 0; j < c->njobs; j++)
            if (c->jobs[j].state == JOB_PENDING)
                c->jobs[j].eta_start_ms = 0, c->jobs[j].eta_basis = ETA_BASIS_UNKNOWN;
    return rc;
}
