/*
 * Round-robin placement: the first node, in id order, after the node that
 * cluster_assign last used (cluster.last_assigned_node_id), wrapping round.
 * The cursor is plain cluster data, so the strategy stays a pure function
 * and replays deterministically.
 */
#include "core/placement.h"

#include "core/gpu_share.h"
#include "core/placement_index.h"
#include "core/placement_slice.h"

#include "core/core_banned.h"

/* The first rank whose node id is above cursor (ranks are in id order). */
static size_t first_rank_after(const struct placement_index *idx, const struct cluster *c,
                               int64_t cursor)
{
    size_t lo = 0, hi = idx->nnodes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->nodes[idx->order[mid]].id <= cursor)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static enum placement_result roundrobin_choose(const struct placement_config *cfg,
                                               struct cluster *c, const struct job *job,
                                               struct placement_choice *choice,
                                               const struct wait_why *why)
{
    if (gpu_job_wants_slice(job))
        return placement_slice_choose(cfg, c, job, choice, why);
    int64_t cursor = c->last_assigned_node_id;
    int want = job->gpus > 0 ? job->gpus : 0;
    const struct placement_index *idx = placement_index_for(c, placement_order_by_id);
    if (idx) {
        size_t start = first_rank_after(idx, c, cursor);
        /* No node with enough free GPUs (a deep queue): no walk of the bitmap. */
        for (int lap = placement_index_nodes_with_free(c, want) ? 0 : 2; lap < 2; lap++) {
            size_t from = lap ? 0 : start, until = lap ? start : idx->nnodes;
            for (long r = placement_index_next(idx, want, false, from);
                 r >= 0 && (size_t)r < until; r = placement_index_next(idx, want, false, (size_t)r + 1))
                if (placement_try_node(cfg, &c->nodes[idx->order[r]], job, choice, NULL))
                    return PLACEMENT_FOUND;
        }
        return placement_explain(cfg, c, job, why);
    }
    /* Without the index: the smallest (wrapped, id) among nodes that fit. */
    struct node *best = NULL;
    bool best_wrapped = false;
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node *node = &c->nodes[i];
        bool wrapped = node->id <= cursor;
        if (best && (wrapped > best_wrapped || (wrapped == best_wrapped && node->id > best->id)))
            continue;
        if (placement_try_node(cfg, node, job, choice, NULL)) {
            best = node;
            best_wrapped = wrapped;
        }
    }
    return best ? PLACEMENT_FOUND : placement_explain(cfg, c, job, why);
}

const struct placement_ops placement_roundrobin = {
    .name = "roundrobin",
    .choose = roundrobin_choose,
    .node_order = placement_order_by_id,
};
