/*
 * Placement: given one job and the cluster, choose a node and its GPUs.
 * A strategy is a struct of function pointers so a new one is a new file
 * (placement_binpack.c, placement_spread.c, placement_roundrobin.c,
 * placement_loadaware.c). Placement never changes the cluster.
 *
 * Every strategy skips GPUs whose telemetry is over the load thresholds
 * (telemetry is real: a GPU at 95 % is busy whoever holds it) and, within a
 * node, takes the least-loaded eligible GPUs (ties by position). Strategies
 * differ in which node they choose; loadaware also ranks nodes by load.
 * "Free" GPUs are those no tide task holds.
 */
#ifndef TIDE_PLACEMENT_H
#define TIDE_PLACEMENT_H

#include "core/cluster.h"
#include "core/wait_reason.h"

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
    /* Fills choice and returns PLACEMENT_FOUND, or records why not in
     * why (wait_reason.h: a cause worded when read; NULL when the caller
     * wants no reason). */
    enum placement_result (*choose)(const struct placement_config *cfg, struct cluster *c,
                                    const struct job *job, struct placement_choice *choice,
                                    const struct wait_why *why);
    /* How the scheduler ranks nodes in the placement index it builds for
     * this strategy (placement_index.h); NULL: cluster order. */
    int (*node_order)(const struct node *a, const struct node *b);
    /* Whether the scheduler's index should also rank nodes by load
     * (placement_load.h) for this strategy. */
    bool load_index;
};

/* Fewest free GPUs left on the node, then the node with most GPUs held,
 * then lowest node id: fills busy nodes so idle ones can be released
 * (default). */
extern const struct placement_ops placement_binpack;
/* Most free GPUs first, then fewest GPUs held, then lowest node id. */
extern const struct placement_ops placement_spread;
/* The first node by id after the one cluster_assign last used, wrapping. */
extern const struct placement_ops placement_roundrobin;
/* Least-loaded GPUs (telemetry), then fewest free GPUs left, then cluster
 * order. */
extern const struct placement_ops placement_loadaware;

/* The strategy called name, or NULL. */
const struct placement_ops *placement_by_name(const char *name);

/* The names of all strategies, comma-separated, for error messages. */
const char *placement_names(void);

void placement_config_defaults(struct placement_config *cfg);

/* True when GPU g of a node can take this job's per-GPU constraints
 * (model glob and memory), ignoring whether it is free. */
bool placement_gpu_matches(const struct gpu *g, const struct job *job);

/* Whether a job's gpu_model glob names GPU model `name`: case aside, and
 * with or without NVML's "NVIDIA " in front. Placement and the pools'
 * autoscaler (pool.c) must agree on it. */
bool gpu_model_matches(const char *pattern, const char *name);

/* What a job asks of a node's host besides GPUs, for wait reasons:
 * " and 8 CPUs", " and 8 CPUs and 64000 MiB memory", or "" when it asks
 * for neither (a reason must not mention what nobody asked for). */
void placement_host_words(const struct job *job, char *out, size_t size);

/* For strategies. */

/* True when telemetry puts g over cfg's memory or utilisation threshold. */
bool placement_gpu_overloaded(const struct placement_config *cfg, const struct gpu *g);

/* The load key placement ranks a free GPU by: utilisation, then memory
 * share (both 0..100; lower is less loaded). */
int placement_gpu_load_key(const struct gpu *g);

/* Whether node has the CPUs and memory free and its pool's queue rules
 * allow job now (GPUs aside). */
bool placement_host_fits_now(const struct node *node, const struct job *job);

/* If node can take job now (ready, CPUs and memory free, enough free
 * eligible GPUs), fills choice with node and its least-loaded eligible GPUs
 * and returns true; otherwise leaves choice alone. Its summed GPU load key
 * goes to *load when load is not NULL. */
bool placement_try_node(const struct placement_config *cfg, struct node *node,
                        const struct job *job, struct placement_choice *choice, long *load);

/* After a strategy found no node: PLACEMENT_NEVER when no ready node could
 * ever hold job, else PLACEMENT_NOT_NOW, with the reason in why (a cause,
 * worded when read). Scans every node, or with why NULL (no reason wanted)
 * only up to the first that could ever hold job; with why set and a
 * current index, a job asking for no GPU model or memory is answered from
 * the index's buckets, most free first, instead. While the cluster's index
 * keeps its shape memo (placement_index.h: a scheduling pass), a job shape
 * seen before is answered from the memo without a scan, and its reason
 * reused while no node changed. */
enum placement_result placement_explain(const struct placement_config *cfg, const struct cluster *c,
                                        const struct job *job, const struct wait_why *why);

/* The node order for binpack, spread and roundrobin. */
int placement_order_busiest_first(const struct node *a, const struct node *b);
int placement_order_emptiest_first(const struct node *a, const struct node *b);
int placement_order_by_id(const struct node *a, const struct node *b);

/* The node with the fewest (binpack) or most (spread) free GPUs that can
 * take job now, ties by node_order; then placement_explain. Uses the
 * cluster's index when it matches node_order. */
enum placement_result placement_first_fit(const struct placement_config *cfg, struct cluster *c,
                                          const struct job *job, struct placement_choice *choice,
                                          const struct wait_why *why, bool most_free_first,
                                          int (*node_order)(const struct node *,
                                                            const struct node *));

#endif
