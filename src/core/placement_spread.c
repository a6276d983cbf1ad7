/*
 * Spreading placement: the node with the most free GPUs, then the one with
 * fewest GPUs held, then the lowest id. Jobs land apart, which evens out
 * heat and noisy neighbours at the cost of fragmenting nodes.
 */
#include "core/gpu_share.h"
#include "core/placement.h"
#include "core/placement_slice.h"

#include "core/core_banned.h"

static enum placement_result spread_choose(const struct placement_config *cfg, struct cluster *c,
                                           const struct job *job, struct placement_choice *choice,
                                           const struct wait_why *why)
{
    if (gpu_job_wants_slice(job))
        return placement_slice_choose(cfg, c, job, choice, why);
    return placement_first_fit(cfg, c, job, choice, why, true, placement_order_emptiest_first);
}

const struct placement_ops placement_spread = {
    .name = "spread",
    .choose = spread_choose,
    .node_order = placement_order_emptiest_first,
};
