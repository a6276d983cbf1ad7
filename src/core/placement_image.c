/* The image-locality preference applied after every strategy (placement_image.h). */
#include "core/placement_image.h"

#include "core/gpu_share.h"
#include "core/image.h"

#include "core/core_banned.h"

bool placement_prefer_image(const struct placement_config *cfg, struct cluster *c,
                            const struct job *job, struct placement_choice *choice,
                            int (*node_order)(const struct node *, const struct node *))
{
    if (!job->image_key || job->mig[0] || gpu_job_wants_slice(job) || !choice->node ||
        image_node_holds(choice->node, job->image_key))
        return false;
    struct placement_choice best = {0}, candidate;
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node *node = &c->nodes[i];
        if (!image_node_holds(node, job->image_key))
            continue;
        if (best.node && node_order && node_order(node, best.node) >= 0)
            continue;
        if (best.node && !node_order)
            break;
        if (placement_try_node(cfg, node, job, &candidate, NULL))
            best = candidate;
    }
    if (!best.node)
        return false;
    *choice = best;
    return true;
}
