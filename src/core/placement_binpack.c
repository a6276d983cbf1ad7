/*
 * Bin-packing placement (the default): the node where the job leaves the
 * fewest free GPUs, then the one with most GPUs held, then the lowest id.
 * Busy nodes fill up and idle ones stay whole, so large jobs find room and
 * the autoscaler can release empty nodes.
 */
#include "core/gpu_share.h"
#include "core/placement.h"
#include "core/placement_slice.h"

#include "core/core_banned.h"

static enum placement_result binpack_choose(const struct placement_config *cfg, struct cluster *c,
                                            const struct job *job, struct placement_choice *choice,
                                            const struct wait_why *why)
{
    if (gpu_job_wants_slice(job))
        return placement_slice_choose(cfg, c, job, choice, why);
    return placement_first_fit(cfg, c, job, choice, why, false, placement_order_busiest_first);
}

const struct placement_ops placement_binpack = {
    .name = "binpack",
    .choose = binpack_choose,
    .node_order = placement_order_busiest_first,
};
