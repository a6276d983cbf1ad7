/* Start-time ETAs from a forward plan of GPUs (see eta.h). */
#include "core/eta.h"

#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"
#include "core/gang.h"
#include "core/gpu_share.h"
#include "core/placement.h"
#include "core/queue.h"

#include "core/core_banned.h"

void eta_plan_init(struct eta_plan *p)
{
    memset(p, 0, sizeof *p);
}

void eta_plan_release(struct eta_plan *p)
{
    if (!p)
        return;
    free(p->nodes);
    free(p->slots);
    for (int k = 0; k <= ETA_TREE_SIZES; k++)
        free(p->trees[k]);
    memset(p, 0, sizeof *p);
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

static bool gpu_plannable(const struct gpu *g)
{
    return !g->mig_mode && g->mig_profile[0] == '\0';
}

/* Lays out the ready nodes' whole GPUs, all free at now_ms. */
static int plan_nodes(struct eta_plan *p, const struct cluster *c, int64_t now_ms)
{
    size_t nnodes = 0, nslots = 0;
    for (size_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].state == NODE_READY) {
            nnodes++;
            nslots += (size_t)c->nodes[i].ngpus;
        }
    if (grow((void **)&p->nodes, &p->nodes_cap, nnodes, sizeof *p->nodes) ||
        grow((void **)&p->slots, &p->slots_cap, nslots, sizeof *p->slots))
        return TIDE_ENOMEM;
    p->nnodes = 0;
    p->any_spot = false;
    struct eta_slot *next = p->slots;
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node *node = &c->nodes[i];
        if (node->state != NODE_READY)
            continue;
        struct eta_node *pn = &p->nodes[p->nnodes++];
        pn->node = node;
        pn->slots = next;
        pn->nslots = 0;
        p->any_spot |= node->spot;
        for (int g = 0; g < node->ngpus; g++)
            if (gpu_plannable(&node->gpus[g]))
                pn->slots[pn->nslots++] =
                    (struct eta_slot){.free_ms = now_ms, .basis = ETA_BASIS_NOW, .gpu = (uint8_t)g};
        next += pn->nslots;
    }
    return 0;
}

/* The plan's node for a cluster node id, by the position the cluster
 * keeps it at (plan nodes are the ready ones, in cluster order). */
static struct eta_node *plan_node_of(struct eta_plan *p, struct cluster *c, int64_t node_id)
{
    struct node *n = cluster_find_node(c, node_id);
    if (!n || n->state != NODE_READY)
        return NULL;
    size_t lo = 0, hi = p->nnodes;
    while (lo < hi) { /* plan nodes are in cluster order: search by address */
        size_t mid = (lo + hi) / 2;
        if (p->nodes[mid].node < n)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->nnodes && p->nodes[lo].node == n ? &p->nodes[lo] : NULL;
}

/* Marks the GPUs that a running job holds on pn as busy until end_ms. */
static void hold_slots(struct eta_node *pn, const struct job *job, int64_t end_ms,
                       enum eta_basis basis)
{
    int idx[TIDE_MAX_GPUS_PER_NODE];
    int n = job_gpus_on_node(job, pn->node->id, idx);
    for (int i = 0; i < n; i++)
        for (int s = 0; s < pn->nslots; s++) {
            struct eta_slot *slot = &pn->slots[s];
            if (pn->node->gpus[slot->gpu].index != idx[i])
                continue;
            if (end_ms >= slot->free_ms) {
                slot->free_ms = end_ms;
                slot->basis = (uint8_t)basis;
            }
            break;
        }
}

static void sort_slots(struct eta_node *pn)
{
    for (int i = 1; i < pn->nslots; i++) {
        struct eta_slot v = pn->slots[i];
        int j = i;
        while (j > 0 && pn->slots[j - 1].free_ms > v.free_ms) {
            pn->slots[j] = pn->slots[j - 1];
            j--;
        }
        pn->slots[j] = v;
    }
}

/* --- trees: per GPU count k, the node whose k-th soonest free GPU is soonest --- */

static int64_t tree_key(const struct eta_plan *p, int k, int32_t i)
{
    if (i < 0 || (size_t)i >= p->nnodes || p->nodes[i].nslots < k)
        return INT64_MAX;
    return p->nodes[i].slots[k - 1].free_ms;
}

static int32_t tree_pick(const struct eta_plan *p, int k, int32_t a, int32_t b)
{
    return tree_key(p, k, b) < tree_key(p, k, a) ? b : a;
}

static int tree_build(struct eta_plan *p, int k)
{
    size_t need = 2 * p->tree_leaves;
    if (need > p->trees_cap) {
        for (int i = 0; i <= ETA_TREE_SIZES; i++) {
            free(p->trees[i]);
            p->trees[i] = NULL;
        }
        p->trees_cap = need;
    }
    if (!p->trees[k] && !(p->trees[k] = malloc(p->trees_cap * sizeof(int32_t))))
        return TIDE_ENOMEM;
    int32_t *t = p->trees[k];
    for (size_t i = 0; i < p->tree_leaves; i++)
        t[p->tree_leaves + i] = i < p->nnodes ? (int32_t)i : -1;
    for (size_t i = p->tree_leaves - 1; i >= 1; i--)
        t[i] = tree_pick(p, k, t[2 * i], t[2 * i + 1]);
    p->tree_built[k] = true;
    return 0;
}

static void trees_update(struct eta_plan *p, size_t node)
{
    for (int k = 1; k <= ETA_TREE_SIZES; k++) {
        if (!p->tree_built[k])
            continue;
        int32_t *t = p->trees[k];
        for (size_t i = (p->tree_leaves + node) / 2; i >= 1; i /= 2)
            t[i] = tree_pick(p, k, t[2 * i], t[2 * i + 1]);
    }
}

/* --- placing one pending job in the plan --- */

/* Jobs that may use any ready node, whole GPUs on one node at a time
 * (the trees answer them). */
static bool any_node_will_do(const struct eta_plan *p, const struct job *job)
{
    return job->gpu_model[0] == '\0' && job->gpu_memory_mib == 0 && job->mig[0] == '\0' &&
           (!job->rules || job->rules->npools == 0) &&
           (!p->any_spot || job->preemptible || (job->rules && job->rules->allow_spot));
}

/* When k GPUs of pn that job can use are free (INT64_MAX: never). */
static int64_t node_kth(const struct eta_node *pn, const struct job *job, int k)
{
    if (!queue_allows_node(job, pn->node))
        return INT64_MAX;
    int found = 0;
    for (int s = 0; s < pn->nslots; s++)
        if (placement_gpu_matches(&pn->node->gpus[pn->slots[s].gpu], job) && ++found == k)
            return pn->slots[s].free_ms;
    return INT64_MAX;
}

/* Picks the k GPUs of pn that job can use and that are free by start_ms,
 * the latest-freed first, so that GPUs free long before stay for jobs
 * further back (a smaller gap); their slot positions go to picked. */
static int node_pick(const struct eta_node *pn, const struct job *job, int k, int64_t start_ms,
                     bool any, int *picked)
{
    int n = 0;
    int s = pn->nslots - 1;
    while (s >= 0 && pn->slots[s].free_ms > start_ms)
        s--;
    for (; s >= 0 && n < k; s--)
        if (any || placement_gpu_matches(&pn->node->gpus[pn->slots[s].gpu], job))
            picked[n++] = s;
    return n;
}

/* The least certain basis of the picked GPUs' free times. */
static enum eta_basis picked_basis(const struct eta_node *pn, const int *picked, int n)
{
    enum eta_basis basis = ETA_BASIS_NOW;
    for (int i = 0; i < n; i++)
        basis = eta_basis_weaker(basis, (enum eta_basis)pn->slots[picked[i]].basis);
    return basis;
}

/* Gives job the picked GPUs of plan node i until end_ms (what that rests
 * on: basis). */
static void node_take(struct eta_plan *p, size_t i, const int *picked, int n, int64_t end_ms,
                      enum eta_basis basis)
{
    struct eta_node *pn = &p->nodes[i];
    for (int k = 0; k < n; k++) {
        pn->slots[picked[k]].free_ms = end_ms;
        pn->slots[picked[k]].basis = (uint8_t)basis;
    }
    sort_slots(pn);
    trees_update(p, i);
}

/* When the soonest single node has k GPUs of job free (INT64_MAX: none
 * ever), and which (*node_out). */
static int64_t best_node(struct eta_plan *p, const struct job *job, int k, bool any,
                         size_t *node_out, int *rc)
{
    if (any && k <= ETA_TREE_SIZES) {
        if (!p->tree_built[k] && (*rc = tree_build(p, k)))
            return INT64_MAX;
        int32_t top = p->trees[k][1];
        *node_out = (size_t)(top < 0 ? 0 : top);
        return tree_key(p, k, top);
    }
    int64_t best = INT64_MAX;
    for (size_t i = 0; i < p->nnodes; i++) {
        int64_t t = node_kth(&p->nodes[i], job, k);
        if (t < best) {
            best = t;
            *node_out = i;
        }
    }
    return best;
}

struct gang_pick {
    int m, share;
    int64_t t[TIDE_MAX_GANG_NODES];
    size_t node[TIDE_MAX_GANG_NODES];
};

/* The soonest split of a gang job over m nodes: the m nodes whose share of
 * GPUs is free soonest; the time is the last of them. */
static int64_t best_split(struct eta_plan *p, const struct job *job, int m, struct gang_pick *g)
{
    g->m = m;
    g->share = job->gpus / m;
    int have = 0;
    for (size_t i = 0; i < p->nnodes; i++) {
        int64_t t = node_kth(&p->nodes[i], job, g->share);
        if (t == INT64_MAX || (have == m && t >= g->t[m - 1]))
            continue;
        int j = have < m ? have++ : m - 1;
        while (j > 0 && g->t[j - 1] > t) {
            g->t[j] = g->t[j - 1];
            g->node[j] = g->node[j - 1];
            j--;
        }
        g->t[j] = t;
        g->node[j] = i;
    }
    return have == m ? g->t[m - 1] : INT64_MAX;
}

static int plan_job(struct eta_plan *p, const struct eta_estimator *est, struct job *job,
                    int64_t now_ms)
{
    job->eta_start_ms = 0;
    job->eta_basis = ETA_BASIS_UNKNOWN;
    int64_t earliest = job->not_before_ms > now_ms ? job->not_before_ms : now_ms;
    if (job->gpus <= 0) {
        job->eta_start_ms = earliest;
        job->eta_basis = ETA_BASIS_NOW;
        return 0;
    }
    if (job->mig[0])
        return 0;
    int k = gpu_job_wants_slice(job) ? 1 : job->gpus; /* a share is planned as a whole GPU */
    bool any = any_node_will_do(p, job);
    int rc = 0;
    size_t node = 0;
    int64_t t = k <= TIDE_MAX_GPUS_PER_NODE ? best_node(p, job, k, any, &node, &rc) : INT64_MAX;
    if (rc)
        return rc;
    struct gang_pick best_gang = {.m = 0}, g;
    for (int m = job->max_nodes > 1 ? gang_next_split(job, 1) : 0; m; m = gang_next_split(job, m)) {
        int64_t tg = best_split(p, job, m, &g);
        if (tg < t) {
            t = tg;
            best_gang = g;
        }
    }
    if (t == INT64_MAX)
        return 0; /* no node could hold it as planned */
    int64_t start = t > earliest ? t : earliest;
    enum eta_basis run_basis;
    int64_t run_ms = eta_estimator_remaining_ms(est, job, 0, &run_basis);
    int picked[TIDE_MAX_GANG_NODES][TIDE_MAX_GPUS_PER_NODE], npicked[TIDE_MAX_GANG_NODES];
    int nnodes = best_gang.m ? best_gang.m : 1;
    enum eta_basis basis = ETA_BASIS_NOW;
    for (int i = 0; i < nnodes; i++) {
        size_t at = best_gang.m ? best_gang.node[i] : node;
        const struct eta_node *pn = &p->nodes[at];
        npicked[i] = best_gang.m ? node_pick(pn, job, best_gang.share, start, false, picked[i])
                                 : node_pick(pn, job, k, start, any, picked[i]);
        basis = eta_basis_weaker(basis, picked_basis(pn, picked[i], npicked[i]));
    }
    enum eta_basis held = eta_basis_weaker(basis, run_basis);
    for (int i = 0; i < nnodes; i++)
        node_take(p, best_gang.m ? best_gang.node[i] : node, picked[i], npicked[i],
                  start + run_ms, held);
    job->eta_start_ms = start;
    job->eta_basis = basis;
    if (job->reserved_start_ms > 0) { /* the scheduler's promise */
        job->eta_start_ms = job->reserved_start_ms > now_ms ? job->reserved_start_ms : now_ms;
        job->eta_basis = ETA_BASIS_RESERVATION;
    }
    return 0;
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
    int rc = plan_nodes(p, c, now_ms);
    if (rc)
        return rc;
    for (size_t j = 0; j < c->njobs; j++) {
        const struct job *job = &c->jobs[j];
        if (!job_state_is_on_node(job->state))
            continue;
        enum eta_basis basis = ETA_BASIS_NOW;
        int64_t end = now_ms; /* a job being stopped frees its GPUs about now */
        if (job->state != JOB_PREEMPTED && !job->cancel_requested && !job->reclaim_requested)
            end += eta_estimator_remaining_ms(est, job, now_ms - job->start_ms, &basis);
        for (int part = -1; part < job->nparts; part++) {
            struct eta_node *pn =
                plan_node_of(p, c, part < 0 ? job->node_id : job->parts[part].node_id);
            if (pn)
                hold_slots(pn, job, end, basis);
        }
    }
    for (size_t i = 0; i < p->nnodes; i++)
        sort_slots(&p->nodes[i]);
    p->tree_leaves = 1;
    while (p->tree_leaves < p->nnodes)
        p->tree_leaves *= 2;
    memset(p->tree_built, 0, sizeof p->tree_built);
    for (size_t i = 0; i < n; i++) {
        struct job *job = order[i];
        if (job->state != JOB_PENDING)
            continue;
        if ((rc = plan_job(p, est, job, now_ms)) != 0) {
            for (size_t j = 0; j < n; j++)
                order[j]->eta_start_ms = 0, order[j]->eta_basis = ETA_BASIS_UNKNOWN;
            return rc;
        }
    }
    return 0;
}
