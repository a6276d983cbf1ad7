/*
 * Image locality, the one placement preference every strategy shares: a
 * job with a container image goes to a node that already holds the image
 * when such a node can take it now, so it skips the pull. It is a
 * preference, never a wait: with no such node free the strategy's own
 * choice stands (that node pulls the image).
 */
#ifndef TIDE_CORE_PLACEMENT_IMAGE_H
#define TIDE_CORE_PLACEMENT_IMAGE_H

#include <stdbool.h>

#include "core/placement.h"

/* After a strategy chose a node for job: when that node lacks job's image
 * and another ready node holds it and can take the job now, moves choice
 * there (the first such node in node_order, cluster order when NULL) and
 * returns true. Jobs without an image, shares of a GPU and MIG instances
 * keep the strategy's choice. Linear in the nodes, and only for jobs whose
 * chosen node lacks their image. */
bool placement_prefer_image(const struct placement_config *cfg, struct cluster *c,
                            const struct job *job, struct placement_choice *choice,
                            int (*node_order)(const struct node *, const struct node *));

#endif
