/*
 * Container images as the scheduler sees them: a 64-bit key per image name,
 * so a node's image cache is a small fixed array and "does this node hold
 * the job's image" a scan of it, without strings in the core's hot path.
 * Names are compared after one normalisation: a name without a tag or
 * digest means ":latest", as podman and docker read it.
 */
#ifndef TIDE_CORE_IMAGE_H
#define TIDE_CORE_IMAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"

/* The key of an image name (never 0); 0 for NULL or "". */
uint64_t image_key(const char *name);

/* True when node reported holding the image with this key (key 0: false). */
bool image_node_holds(const struct node *node, uint64_t key);

/* Replaces node's image list with the keys of names (n of them); names past
 * TIDE_MAX_NODE_IMAGES are dropped. */
void image_node_set(struct node *node, const char *const *names, int n);

#endif
