/*
 * The agent's container images: which runtime runs containerised tasks,
 * the images a pool asks to have before the first job (--prewarm-image),
 * and the list of images held, sent to the server so placement can prefer
 * this node for jobs whose image it already has.
 */
#ifndef TIDE_AGENT_IMAGES_H
#define TIDE_AGENT_IMAGES_H

#include <jansson.h>
#include <stdint.h>

#include "agent/agent.h"

/* Finds the runtime (--container-runtime, else podman, else docker),
 * removes the containers an earlier run of this agent left (only where
 * WORK/jobs exists: a work dir without it never ran a task), pulls the
 * prewarm images it lacks (blocking: the node registers with them held)
 * and lists the images. Without a runtime, containerised tasks fail to
 * start with the reason and no images are reported. */
void agent_images_start(struct agent *a, int64_t now_ms);

/* Lists the images again when due (see struct agent). */
void agent_images_refresh(struct agent *a, int64_t now_ms);

/* The images held as a new JSON array, or NULL when there is no runtime. */
json_t *agent_images_json(const struct agent *a);

void agent_images_release(struct agent *a);

#endif
