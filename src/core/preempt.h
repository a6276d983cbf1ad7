/*
 * Preemption: for a job that cannot start now, the cheapest set of running,
 * preemptible jobs on one node whose GPUs (with what is free) would let it
 * start: jobs of lower priority, or, for a job within its project's quota,
 * jobs borrowing beyond another project's quota; never, for a job beyond
 * its quota, work running within one (preempt.c's may_preempt). Cheapest:
 * fewest GPUs taken, then fewest jobs, then the least work lost (most
 * recently started). Non-preemptible work is never chosen. A gang job no
 * one node holds gets such a set on each node of a split
 * (preempt_plan_gang).
 */
#ifndef TIDE_PREEMPT_H
#define TIDE_PREEMPT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/placement.h"

#define PREEMPT_MAX_VICTIMS 64

/* The jobs a pass may preempt or is already preempting, grouped by node,
 * built once per pass so a plan looks only at nodes that have some. */
struct preempt_entry {
    struct job *job;
    struct node *node;
};

struct preempt_pool {
    struct preempt_entry *entries; /* sorted by node id */
    size_t n, cap;
    size_t nrunning; /* preemptible running jobs among them */
};

/* Fills pool from c (running preemptible jobs and jobs being preempted).
 * Returns 0 or TIDE_ENOMEM. Pointers stay valid while no job or node is
 * added to or removed from c. */
int preempt_pool_build(struct preempt_pool *pool, struct cluster *c);
void preempt_pool_release(struct preempt_pool *pool);

struct preempt_plan {
    struct node *node;
    int nvictims;
    struct job *victims[PREEMPT_MAX_VICTIMS];
};

enum preempt_result {
    PREEMPT_NONE,    /* nothing to preempt makes room */
    PREEMPT_PLANNED, /* plan filled: stop these */
    PREEMPT_PENDING, /* earlier preemptions already free enough: wait for them
                      * (plan's node: where; no victims) */
};

/* Plans preemption for `job` (its effective_priority and in_quota set). */
enum preempt_result preempt_plan(const struct placement_config *cfg,
                                 const struct preempt_pool *pool, const struct job *job,
                                 struct preempt_plan *plan);

/* A gang job's preemption: its equal shares on several nodes (as gang
 * placement splits it), each node's share made room for the cheapest way
 * (GPUs free now, GPUs earlier victims are freeing, or victims of its own
 * there), over the split that takes the fewest GPUs in all. */
struct preempt_gang_plan {
    int nnodes;
    struct node *nodes[TIDE_MAX_GANG_NODES]; /* where its shares go, victims or not */
    int nvictims;
    struct job *victims[PREEMPT_MAX_VICTIMS];
};

/* Plans preemption for gang job (max_nodes > 1) over c's ready nodes, as
 * preempt_plan does for one node: PREEMPT_PENDING when earlier victims
 * (with free GPUs) already make the room. */
enum preempt_result preempt_plan_gang(const struct placement_config *cfg,
                                      const struct preempt_pool *pool, const struct cluster *c,
                                      const struct job *job, struct preempt_gang_plan *plan);

#endif
