/*
 * The placement index: ready nodes bucketed by how many GPUs no tide task
 * holds, so a strategy finds "a node with at least g free GPUs" or "the
 * first node with exactly f free" by scanning bitmaps instead of every node.
 * The scheduler builds one at the start of a pass (O(nodes)) and attaches it
 * to the cluster (cluster.index); cluster_assign, cluster_unassign and
 * cluster_put_node keep it current while attached. Outside a pass no index
 * is attached and strategies scan the nodes: same answers, slower.
 */
#ifndef TIDE_PLACEMENT_INDEX_H
#define TIDE_PLACEMENT_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/placement_load.h"

/* Orders nodes that are otherwise equally good (<0: a first); NULL means
 * cluster order (the order nodes were added). */
typedef int (*placement_node_order_fn)(const struct node *a, const struct node *b);

#define PLACEMENT_INDEX_BUCKETS (TIDE_MAX_GPUS_PER_NODE + 2)
#define PLACEMENT_INDEX_NONE 0xff /* free[pos] of a node that is not ready */
#define PLACEMENT_SHAPE_MEMO 32   /* job shapes remembered per pass */

/* What placement_explain reads of a job to say whether some ready node
 * could ever hold it, and that answer. */
struct placement_shape {
    int gpus, cpus;
    int64_t memory_mib, gpu_memory_mib;
    const struct queue_config *rules;
    bool preemptible;
    char gpu_model[sizeof(((struct job *)0)->gpu_model)];
    bool ever;
    /* placement_explain's numbers for a "not now" (the most free GPUs on a
     * node that could hold it, and how many of those are over the load
     * thresholds), taken when idx->changes was why_at; why_known: taken. */
    bool why_known;
    uint64_t why_at;
    int most_free, most_free_busy;
};

struct placement_index {
    placement_node_order_fn node_order;
    const struct node *nodes; /* the cluster's array it was built over ... */
    size_t nnodes;            /* ... and its length; a mismatch means stale */
    size_t cap, words;        /* nodes allocated for; 64-bit words per bitmap */
    uint32_t *order;          /* rank -> position in cluster.nodes */
    uint32_t *rank;           /* position -> rank */
    uint8_t *free;            /* position -> free GPUs as indexed, or NONE */
    /* Bitmap f (words each) has bit r set when the node of rank r is ready
     * with at least f free GPUs; bitmap TIDE_MAX_GPUS_PER_NODE + 1 is empty. */
    uint64_t *at_least;
    size_t count[PLACEMENT_INDEX_BUCKETS]; /* ready nodes with exactly f free */
    int max_free;                          /* no ready node has more free GPUs */
    /* Whether some ready node could ever hold a job depends on the nodes'
     * states and shapes, not on what is free, so within one scheduling
     * pass (where only GPU holders change) it is asked once per job shape.
     * Off unless placement_index_memo_start turned it on; emptied when a
     * node's readiness changes. */
    bool memo_on;
    int nmemo;
    uint64_t changes; /* node refreshes so far: a memo's reason is good while unchanged */
    struct placement_shape memo[PLACEMENT_SHAPE_MEMO];
    /* Nodes by load, for loadaware; off unless the last build asked for it. */
    struct placement_load load;
};

void placement_index_init(struct placement_index *idx);
void placement_index_release(struct placement_index *idx);

/* (Re)builds idx over c's nodes, ranked by node_order (ties by position),
 * and with load not NULL also ranks them by load with load's thresholds
 * (placement_load.h; kept current like the buckets), in the same walk over
 * the nodes. Reuses idx's memory; returns 0 or TIDE_ENOMEM (idx is then
 * empty and placement_index_for never returns it). Without memory for the
 * load ranking only the buckets are kept. */
int placement_index_build(struct placement_index *idx, const struct cluster *c,
                          placement_node_order_fn node_order, const struct placement_config *load);

/* The load ranking of c's attached index when it is current and was taken
 * with cfg's thresholds; NULL when loadaware must scan. */
struct placement_load *placement_index_load(const struct cluster *c,
                                            const struct placement_config *cfg);

/* Re-reads one node (state and free GPUs) after it changed. A node that
 * the index does not cover (added after the build) is ignored. */
void placement_index_refresh(struct placement_index *idx, const struct cluster *c,
                             const struct node *node);

/* c's attached index when it is current and ranked by node_order; NULL
 * when the strategy must scan. */
const struct placement_index *placement_index_for(const struct cluster *c,
                                                  placement_node_order_fn node_order);

/* c's attached index when it is current, whatever its node order; NULL
 * when none is. */
const struct placement_index *placement_index_current(const struct cluster *c);

/* The first rank >= from whose node has exactly (exact) or at least f free
 * GPUs, or -1. */
long placement_index_next(const struct placement_index *idx, int f, bool exact, size_t from);

/* How many ready nodes have at least k (>= 1) free GPUs, by c's attached
 * index whatever its node order; -1 when no current index is attached. */
int placement_index_nodes_with_free(const struct cluster *c, int k);

/* GPUs free on ready nodes in all, by c's attached index whatever its
 * node order; -1 when no current index is attached. */
int placement_index_free_gpus(const struct cluster *c);

/* Turns the shape memo on, empty, for a stretch in which no node is added
 * and none changes state, GPU count or GPU kind (a scheduling pass);
 * placement_index_memo_stop turns it off. */
void placement_index_memo_start(struct placement_index *idx);
void placement_index_memo_stop(struct placement_index *idx);

/* The memo's answer for job on c (1: some ready node could ever hold it,
 * 0: none could, -1: not known: no current index, memo off or shape not
 * seen). */
int placement_index_memo_find(const struct cluster *c, const struct job *job);

/* Remembers the answer for job's shape while the memo is on (and has room). */
void placement_index_memo_put(const struct cluster *c, const struct job *job, bool ever);

/* placement_explain's reason numbers for job's shape, remembered by
 * placement_index_memo_put_why, when no node changed since (no refresh):
 * true and *most_free, *busy filled, or false. A deep queue of one shape
 * that cannot start is then worded without a scan of every node per job. */
bool placement_index_memo_find_why(const struct cluster *c, const struct job *job, int *most_free,
                                   int *busy);
void placement_index_memo_put_why(const struct cluster *c, const struct job *job, int most_free,
                                  int busy);

/* GPUs of node that no tide task holds. */
int placement_node_free_gpus(const struct node *node);

#endif
