/*
 * The load index: for each GPU count g, every ready node keyed by what
 * loadaware placement ranks it by for a job of g whole GPUs with no model
 * or memory constraint (the summed load key of its g least-loaded eligible
 * GPUs, then the free GPUs it would have left, then its position), in a
 * tournament tree, so the best node is the root instead of a scan of every
 * node. Lives in the placement index (placement_index.h), which fills it in
 * the same walk over the nodes that fills its buckets and refreshes it
 * whenever a node changes. A tree is built the first time a job of its GPU
 * count asks (most clusters see a few counts); refreshing one node writes
 * its keys and replays each built tree only up to where the node was not
 * the winner and still is not: usually a few levels, O(g_max log nodes) at
 * worst.
 */
#ifndef TIDE_PLACEMENT_LOAD_H
#define TIDE_PLACEMENT_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/placement.h"

struct placement_load {
    bool on;                     /* filled over the index's nodes, with cfg */
    struct placement_config cfg; /* the thresholds the keys were taken with */
    int max_gpus;                /* keys and trees for g = 0..max_gpus */
    size_t leaves;               /* leaves per tree (a power of two) */
    size_t key_cap, tree_cap;    /* allocated for */
    /* Node-major: the key of the node at position p for g is
     * key[p * (max_gpus + 1) + g]; UINT32_MAX when it cannot take g. */
    uint32_t *key;
    /* Tree g: 2 * leaves slots, each a position under its node's key
     * (key << 32 | position, so one comparison orders them), slot v the
     * least of 2v and 2v + 1, leaves from slot `leaves` on. */
    uint64_t *tree;
    bool built[TIDE_MAX_GPUS_PER_NODE + 1]; /* tree g is built and kept current */
};

void placement_load_init(struct placement_load *pl);
void placement_load_release(struct placement_load *pl);

/* Starts a fill over c's nodes with cfg's thresholds: sizes pl for them
 * (reusing its memory), forgets every tree and turns pl on; then
 * placement_load_put each node. Returns 0 or TIDE_ENOMEM (then pl is off). */
int placement_load_start(struct placement_load *pl, const struct cluster *c,
                         const struct placement_config *cfg);

/* Takes the keys of the node at pos (to fill pl, or to refresh the node
 * after it changed) and returns the node's free GPUs (GPUs no tide task
 * holds, as placement_node_free_gpus counts them), or -1 when it is not
 * ready. Off, pl is left alone. A node with more GPUs than pl was sized
 * for turns pl off (its users scan instead). */
int placement_load_put(struct placement_load *pl, const struct node *node, size_t pos);

/* The node loadaware would choose for job (whole GPUs, no model or GPU
 * memory asked for) among c's nodes: the lowest key whose node can take
 * the job's CPUs, memory and queue rules now; NULL when none can. pl must
 * be on and filled over c with cfg's thresholds (placement_load_usable).
 * Builds the tree for the job's GPU count if no job asked for it yet. */
struct node *placement_load_best(struct placement_load *pl, struct cluster *c,
                                 const struct job *job);

/* Whether pl answers for c's placement with cfg. */
bool placement_load_usable(const struct placement_load *pl, const struct placement_config *cfg);

#endif
