/*
 * Gang placement over several nodes: a job asking for N GPUs on up to k
 * nodes (`nodes: k`) starts all-or-nothing on the fewest nodes that can
 * hold it, in equal shares (N/m GPUs on each of m distinct nodes, m = 1..k
 * dividing N). Nothing is held while it waits.
 */
#ifndef TIDE_GANG_H
#define TIDE_GANG_H

#include "core/cluster.h"
#include "core/placement.h"

struct gang_choice {
    int nparts;
    struct placement_choice parts[TIDE_MAX_GANG_NODES];
};

/* Tries m = 2..job->max_nodes nodes (one node is the ordinary placement).
 * Fills choice and returns PLACEMENT_FOUND, or NOT_NOW / NEVER with why
 * (when why is not NULL).
 * The cluster is left as it was. */
enum placement_result gang_choose(const struct placement_ops *ops,
                                  const struct placement_config *cfg, struct cluster *c,
                                  const struct job *job, struct gang_choice *choice, char *why);

#endif
