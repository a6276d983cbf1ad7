/* Splitting a gang job over the fewest nodes (see gang.h). */
#include "core/gang.h"
#include "core/gpu_share.h"

#include <stdio.h>
#include <string.h>

#include "core/core_banned.h"

/* Stand-ins that hold a chosen node's free GPUs while the next share is
 * placed, so every share lands on a different node. Ids below any real
 * job's and the backfill placeholder's. */
#define GANG_HOLDER_ID_BASE (-1000)

static void hold_node(struct cluster *c, struct job *holder, struct node *node, int64_t id)
{
    int free_gpus[TIDE_MAX_GPUS_PER_NODE], n = 0;
    for (int g = 0; g < node->ngpus; g++)
        if (gpu_is_free(&node->gpus[g]))
            free_gpus[n++] = node->gpus[g].index;
    memset(holder, 0, sizeof *holder);
    holder->id = id;
    cluster_assign(c, holder, node, free_gpus, n);
}

int gang_next_split(const struct job *job, int m)
{
    for (m++; m <= job->max_nodes && m <= TIDE_MAX_GANG_NODES; m++)
        if (m > 1 && job->gpus % m == 0)
            return m;
    return 0;
}

enum placement_result gang_choose(const struct placement_ops *ops,
                                  const struct placement_config *cfg, struct cluster *c,
                                  const struct job *job, struct gang_choice *choice,
                                  const struct wait_why *why)
{
    enum placement_result best = PLACEMENT_NEVER;
    if (why)
        snprintf(wait_why_text(why), TIDE_REASON_MAX,
                 "no split of %d GPUs over up to %d nodes fits", job->gpus, job->max_nodes);
    for (int m = gang_next_split(job, 1); m; m = gang_next_split(job, m)) {
        struct job share = *job;
        share.gpus = job->gpus / m;
        share.max_nodes = 1;
        struct job holders[TIDE_MAX_GANG_NODES];
        int placed = 0;
        enum placement_result r = PLACEMENT_FOUND;
        while (placed < m) {
            r = ops->choose(cfg, c, &share, &choice->parts[placed], NULL);
            if (r != PLACEMENT_FOUND)
                break;
            hold_node(c, &holders[placed], choice->parts[placed].node, GANG_HOLDER_ID_BASE - placed);
            placed++;
        }
        for (int i = placed - 1; i >= 0; i--)
            cluster_unassign(c, &holders[i]);
        if (r == PLACEMENT_FOUND) {
            choice->nparts = m;
            return PLACEMENT_FOUND;
        }
        /* "Never" only if no split could ever fit; a split blocked by use waits. */
        if (r == PLACEMENT_NOT_NOW || placed > 0) {
            best = PLACEMENT_NOT_NOW;
            if (why)
                snprintf(wait_why_text(why), TIDE_REASON_MAX,
                         "waiting for %d nodes with %d free GPUs each", m, share.gpus);
        }
    }
    return best;
}
