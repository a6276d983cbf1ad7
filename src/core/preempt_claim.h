/*
 * Preemption claims: a waiting job that preempts jobs on a node claims
 * that node's GPUs until it starts. Without the claim, the GPUs its
 * victims free (and those already free that its plan counted on) go to
 * whichever job the order reaches first: often a victim itself, requeued
 * and older, which is then preempted again, for ever.
 *
 * A pass holds every claimed node's free GPUs with a stand-in job, as a
 * backfill reservation does, and lets them go to the claimant alone: when
 * the pass reaches it, its hold is lifted (past a strict order's blocked
 * job too). A job of higher priority than the claimant that is not one of
 * its victims is not held off: the claim gives way to it. A claim lasts
 * while its job waits and keeps preempting on that node (each pass that
 * finds it doing so renews it); it ends when the job starts, leaves, is
 * held (a hold, its budget, a backoff) or stops preempting there, and after
 * PREEMPT_CLAIM_MS unrenewed. In memory only: after a restart the next
 * pass preempts afresh.
 */
#ifndef TIDE_PREEMPT_CLAIM_H
#define TIDE_PREEMPT_CLAIM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/budget.h"
#include "core/cluster.h"

/* Claims at once; a claim past them is not made (the job preempts as before). */
#define PREEMPT_MAX_CLAIMS 32
/* How long a claim lasts unrenewed: passes can be minutes apart in a
 * quiet cluster, and a victim's checkpoint may take its kill grace. */
#define PREEMPT_CLAIM_MS (15 * 60 * 1000)

struct preempt_claim {
    int64_t job_id, node_id, until_ms;
    int priority;      /* the claimant's effective priority */
    struct job holder; /* the stand-in that holds the node's free GPUs (node_id 0: none) */
};

struct preempt_claims {
    struct preempt_claim items[PREEMPT_MAX_CLAIMS];
    int n;
};

/* job claims the nodes node_ids[0..n) from now_ms (a gang job several;
 * its claims on other nodes end). */
void preempt_claim_note(struct preempt_claims *cl, struct cluster *c, const struct job *job,
                        const int64_t *node_ids, int n, int64_t now_ms);

/* At a pass's start: ends claims whose job no longer waits or may not
 * start now (held, in backoff; budgets: its project at a hard cap, NULL:
 * none), whose node is not ready, or that ran out, and holds the free GPUs
 * of the others. */
void preempt_claims_hold(struct preempt_claims *cl, struct cluster *c,
                         const struct budget_set *budgets, int64_t now_ms);

/* Whether job_id holds a claim. */
bool preempt_claim_of(const struct preempt_claims *cl, int64_t job_id);

/* The pass reached job, which is not a claimant: the claims of lower
 * priority than it that it is no victim of give way (lifted and ended). */
void preempt_claims_yield(struct preempt_claims *cl, struct cluster *c, const struct job *job);

/* The pass reached job: lifts its claims' holds and ends them (a
 * renewal, if it preempts again, makes new ones). True when it had one. */
bool preempt_claim_take(struct preempt_claims *cl, struct cluster *c, const struct job *job);

/* A claim made during the pass holds its node's free GPUs at once, for
 * the jobs the pass reaches after its claimant. */
void preempt_claim_hold_new(struct preempt_claims *cl, struct cluster *c, int64_t job_id);

/* At a pass's end: lifts every hold (the claims stay). */
void preempt_claims_unhold(struct preempt_claims *cl, struct cluster *c);

#endif
