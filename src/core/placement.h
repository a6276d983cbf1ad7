/*
 * Placement: given one job and the cluster, choose a node and its GPUs.
 * A strategy is a struct of function pointers so a new one is a new file
 * (placement_loadaware.c is v1). Placement never changes the cluster.
 */
#ifndef TIDE_PLACEMENT_H
#define TIDE_PLACEMENT_H

#include "core/cluster.h"

struct placement_config {
    int max_gpu_memory_used_pct; /* skip GPUs whose memory use is above this (default 80) */
    int max_gpu_utilization_pct; /* skip GPUs busier than this (default 90) */
};

struct placement_choice {
    struct node *node;
    int ngpus;
    int gpu_index[TIDE_MAX_GPUS_PER_NODE];
};

enum placement_result {
    PLACEMENT_FOUND = 0,
    PLACEMENT_NOT_NOW = 1, /* fits the cluster's shape, but not its free capacity */
    PLACEMENT_NEVER = 2,   /* no ready node could ever hold it as it is now */
};

struct placement_ops {
    const char *name;
    /* Fills choice and returns PLACEMENT_FOUND, or says why not in
     * why (size TIDE_REASON_MAX). */
    enum placement_result (*choose)(const struct placement_config *cfg, struct cluster *c,
                                    const struct job *job, struct placement_choice *choice,
                                    char *why);
};

extern const struct placement_ops placement_loadaware;

/* The strategy called name, or NULL. */
const struct placement_ops *placement_by_name(const char *name);

void placement_config_defaults(struct placement_config *cfg);

/* True when GPU g of a node can take this job's per-GPU constraints
 * (model glob and memory), ignoring whether it is free. */
bool placement_gpu_matches(const struct gpu *g, const struct job *job);

#endif
