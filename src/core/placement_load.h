/*
 * The load index: for each GPU count g, every ready node keyed by what
 * loadaware placement ranks it by for a job of g whole GPUs with no model
 * or memory constraint (the summed load key of its g least-loaded eligible
 * GPUs, then the free GPUs it would have left, then its position), in a
 * tournament tree, so the best node is the root instead of a scan of every
 * node. Lives in the placement index (placement_index.h), which refreshes
 * it whenever a node changes; refreshing one node is O(g_max log nodes).
 */
#ifndef TIDE_PLACEMENT_LOAD_H
#define TIDE_PLACEMENT_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/placement.h"

struct placement_load {
    bool on;                    /* built over the index's nodes, with cfg */
    struct placement_config cfg; /* the thresholds the keys were taken with */
    int max_gpus;               /* trees for g = 0..max_gpus */
    size_t leaves, cap;         /* leaves per tree (a power of two); allocated for */
    uint64_t *key;              /* (max_gpus + 1) rows of `leaves` keys; UINT64_MAX: cannot */
    uint32_t *tree;             /* (max_gpus + 1) trees of 2 * leaves winners (positions) */
};

void placement_load_init(struct placement_load *pl);
void placement_load_release(struct placement_load *pl);

/* (Re)builds the trees over c's nodes with cfg's thresholds. Returns 0 or
 * TIDE_ENOMEM (then pl is off). */
int placement_load_build(struct placement_load *pl, const struct cluster *c,
                         const struct placement_config *cfg);

/* Re-reads the node at position pos. A node with more GPUs than the trees
 * were built for turns pl off (its users scan instead). */
void placement_load_refresh(struct placement_load *pl, const struct node *node, size_t pos);

/* The node loadaware would choose for job (whole GPUs, no model or GPU
 * memory asked for) among c's nodes: the lowest key whose node can take
 * the job's CPUs, memory and queue rules now; NULL when none can. pl must
 * be on and built over c with cfg's thresholds (placement_load_usable). */
struct node *placement_load_best(const struct placement_load *pl, struct cluster *c,
                                 const struct job *job);

/* Whether pl answers for c's placement with cfg. */
bool placement_load_usable(const struct placement_load *pl, const struct placement_config *cfg);

#endif
