/* Preemption claims: a preempting job's node held for it (preempt_claim.h). */
#include "core/preempt_claim.h"

#include <stdint.h>
#include <string.h>

#include "core/gpu_share.h"

#include "core/core_banned.h"

/* A holder's id: negative (no job has one), its claimant's own, and far
 * below the other stand-ins' (a backfill reservation's -1, a gang's
 * -1000 - k): no two holders share one. */
static int64_t holder_id(int64_t job_id)
{
    return -(INT64_C(1) << 40) - job_id;
}

static void drop(struct preempt_claims *cl, int i)
{
    memmove(&cl->items[i], &cl->items[i + 1], sizeof cl->items[0] * (size_t)(cl->n - i - 1));
    cl->n--;
}

static void hold(struct preempt_claim *k, struct cluster *c)
{
    struct node *node = cluster_find_node(c, k->node_id);
    if (!node)
        return;
    int free_now[TIDE_MAX_GPUS_PER_NODE], n = 0;
    for (int g = 0; g < node->ngpus; g++)
        if (gpu_is_free(&node->gpus[g]))
            free_now[n++] = node->gpus[g].index;
    memset(&k->holder, 0, sizeof k->holder);
    k->holder.id = holder_id(k->job_id);
    if (n == 0)
        return;
    cluster_assign(c, &k->holder, node, free_now, n);
}

/* Whether its holder holds GPUs now (assigned in this pass). */
static bool holding(const struct preempt_claim *k)
{
    return k->holder.node_id != 0;
}

static void unhold(struct preempt_claim *k, struct cluster *c)
{
    if (holding(k))
        cluster_unassign(c, &k->holder); /* clears its node_id */
}

static bool listed(const int64_t *ids, int n, int64_t id)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

void preempt_claim_note(struct preempt_claims *cl, struct cluster *c, const struct job *job,
                        const int64_t *node_ids, int n, int64_t now_ms)
{
    for (int i = 0; i < cl->n;) { /* its claims elsewhere end */
        if (cl->items[i].job_id == job->id && !listed(node_ids, n, cl->items[i].node_id)) {
            unhold(&cl->items[i], c);
            drop(cl, i);
        } else {
            i++;
        }
    }
    int mine = 0; /* its claims left: renewed in place */
    for (int i = 0; i < cl->n; i++)
        mine += cl->items[i].job_id == job->id;
    if (cl->n - mine + n > PREEMPT_MAX_CLAIMS) {
        /* no room for all: a gang holding some of its nodes would hold them
         * for nothing; it preempts without claims, as before claims */
        for (int i = 0; i < cl->n;) {
            if (cl->items[i].job_id == job->id) {
                unhold(&cl->items[i], c);
                drop(cl, i);
            } else {
                i++;
            }
        }
        return;
    }
    for (int k = 0; k < n; k++) {
        int i = 0;
        while (i < cl->n && (cl->items[i].job_id != job->id || cl->items[i].node_id != node_ids[k]))
            i++;
        if (i == cl->n) {
            cl->n++;
            memset(&cl->items[i], 0, sizeof cl->items[i]);
            cl->items[i].job_id = job->id;
            cl->items[i].node_id = node_ids[k];
        }
        cl->items[i].until_ms = now_ms + PREEMPT_CLAIM_MS;
        cl->items[i].priority = job->effective_priority;
    }
}

void preempt_claims_hold(struct preempt_claims *cl, struct cluster *c,
                         const struct budget_set *budgets, int64_t now_ms)
{
    for (int i = 0; i < cl->n;) {
        struct preempt_claim *k = &cl->items[i];
        const struct job *job = cluster_find_job(c, k->job_id);
        const struct node *node = cluster_find_node(c, k->node_id);
        if (!job || job->state != JOB_PENDING || job->held || job->on_hold ||
            job->cancel_requested || job->not_before_ms > now_ms ||
            job->restart_after_ms > now_ms || (budgets && budget_holds_job(budgets, job, NULL)) ||
            !node || node->state != NODE_READY || k->until_ms <= now_ms) {
            drop(cl, i);
            continue;
        }
        hold(k, c);
        i++;
    }
}

bool preempt_claim_take(struct preempt_claims *cl, struct cluster *c, const struct job *job)
{
    bool had = false;
    for (int i = 0; i < cl->n;) {
        if (cl->items[i].job_id == job->id) {
            unhold(&cl->items[i], c);
            drop(cl, i);
            had = true;
        } else {
            i++;
        }
    }
    return had;
}

bool preempt_claim_of(const struct preempt_claims *cl, int64_t job_id)
{
    for (int i = 0; i < cl->n; i++)
        if (cl->items[i].job_id == job_id)
            return true;
    return false;
}

void preempt_claims_yield(struct preempt_claims *cl, struct cluster *c, const struct job *job)
{
    for (int i = 0; i < cl->n;) {
        struct preempt_claim *k = &cl->items[i];
        if (k->priority < job->effective_priority && job->preempted_for != k->job_id) {
            unhold(k, c);
            drop(cl, i);
            continue;
        }
        i++;
    }
}

void preempt_claim_hold_new(struct preempt_claims *cl, struct cluster *c, int64_t job_id)
{
    for (int i = 0; i < cl->n; i++)
        if (cl->items[i].job_id == job_id && !holding(&cl->items[i]))
            hold(&cl->items[i], c);
}

void preempt_claims_unhold(struct preempt_claims *cl, struct cluster *c)
{
    for (int i = 0; i < cl->n; i++)
        unhold(&cl->items[i], c);
}
