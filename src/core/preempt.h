/*
 * Preemption: for a job that cannot start now, the cheapest set of running,
 * preemptible jobs on one node whose GPUs (with what is free) would let it
 * start: jobs of lower priority, or, for a job within its project's quota,
 * jobs borrowing beyond another project's quota. Cheapest: fewest GPUs taken, then fewest jobs,
 * then the least work lost (most recently started). Non-preemptible work
 * is never chosen.
 */
#ifndef TIDE_PREEMPT_H
#define TIDE_PREEMPT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/placement.h"

#define PREEMPT_MAX_VICTIMS 64

struct preempt_plan {
    struct node *node;
    int nvictims;
    struct job *victims[PREEMPT_MAX_VICTIMS];
};

enum preempt_result {
    PREEMPT_NONE,    /* nothing to preempt makes room */
    PREEMPT_PLANNED, /* plan filled: stop these */
    PREEMPT_PENDING, /* earlier preemptions already free enough: wait for them */
};

/* Plans preemption for `job` (its effective_priority set). Victims must have
 * a lower effective priority than job and be preemptible. */
enum preempt_result preempt_plan(const struct placement_config *cfg, struct cluster *c,
                                 const struct job *job, struct preempt_plan *plan);

#endif
