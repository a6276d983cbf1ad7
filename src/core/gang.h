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
/* The next node count after m (start with 1) over which job's GPUs split
 * into equal shares, up to its max_nodes and TIDE_MAX_GANG_NODES; 0 when
 * none is left. The one rule gang_choose and those who predict it (the
 * scheduler's quick checks, the autoscaler) share. */
int gang_next_split(const struct job *job, int m);

enum placement_result gang_choose(const struct placement_ops *ops,
                                  const struct placement_config *cfg, struct cluster *c,
                                  const struct job *job, struct gang_choice *choice,
                                  const struct wait_why *why);

#endif
