/*
 * Start-time ETAs for pending jobs: a forward plan of the cluster. Each GPU
 * of a ready node becomes free when its holder's expected run ends
 * (eta_estimate.h: est_runtime, max_runtime, or learned); the pending jobs,
 * in the order the scheduler considers them, each take the GPUs (on one
 * node, or as a gang split) that are free soonest, and hold them for their
 * own expected run. A job's ETA is when its GPUs are free in that plan; one
 * that holds a backfill reservation gets the reservation's time. Pure: now
 * is passed in; the plan's scratch is reused from call to call.
 *
 * What the plan leaves out: GPUs a job will not use before a later job
 * starts are not lent to jobs further back (no backfill into the gaps),
 * CPUs, memory and queue caps are not planned, nodes still booting are
 * not counted, and MIG instances have no ETA. Cost: O(running GPUs +
 * pending x log nodes) for jobs that may use any node; a job with a GPU
 * model, memory, pool rules or a gang split scans the nodes.
 */
#ifndef TIDE_ETA_H
#define TIDE_ETA_H

#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/eta_estimate.h"

#define ETA_TREE_SIZES TIDE_MAX_GPUS_PER_NODE

/* One GPU in the plan: when it is free, and what that time rests on. */
struct eta_slot {
    int64_t free_ms;
    uint8_t basis;
    uint8_t gpu; /* position in its node's gpus[] */
};

struct eta_node {
    struct node *node;
    struct eta_slot *slots; /* ascending by free_ms */
    int nslots;
};

/* Scratch of a plan, kept between calls. */
struct eta_plan {
    struct eta_node *nodes;
    size_t nnodes, nodes_cap;
    struct eta_slot *slots;
    size_t slots_cap;
    bool any_spot;
    /* For jobs that may use any node: per GPU count k, a tree over the
     * nodes giving the one whose k-th soonest free GPU is soonest. Built
     * on first use in a plan. */
    size_t tree_leaves; /* a power of two >= nnodes */
    int32_t *trees[ETA_TREE_SIZES + 1];
    size_t trees_cap;
    bool tree_built[ETA_TREE_SIZES + 1];
};

void eta_plan_init(struct eta_plan *p);
void eta_plan_release(struct eta_plan *p);

/* Plans the pending jobs order[0..n) (in the scheduler's order; entries
 * not pending are skipped) on c's ready nodes from now_ms and sets each
 * one's eta_start_ms (>= now_ms; 0 when unknown) and eta_basis. Every
 * other pending job of c gets no ETA (unknown). est may be NULL (nothing
 * learned). Returns 0, or TIDE_ENOMEM (then no job has an ETA). */
int eta_plan_run(struct eta_plan *p, struct cluster *c, const struct eta_estimator *est,
                 struct job *const *order, size_t n, int64_t now_ms);

#endif
