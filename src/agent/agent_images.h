/*
 * The agent's container images: which runtime runs containerised tasks,
 * the images a pool asks to have before the first job (--prewarm-image),
 * and the list of images held, sent to the server so placement can prefer
 * this node for jobs whose image it already has. The list is made by a
 * child process (`RUNTIME images`) whose output the agent's loop reads
 * without waiting: a runtime's calls are slow and queue on its lock.
 */
#ifndef TIDE_AGENT_IMAGES_H
#define TIDE_AGENT_IMAGES_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/agent.h"

/* Finds the runtime on PATH (--container-runtime, else podman, else
 * docker: a lookup, no call), names this agent's containers
 * (agent_container_set_scope), removes the containers an earlier run of
 * this agent left (only where WORK/jobs exists: a work dir without it
 * never ran a task), and then either pulls the prewarm images it lacks and
 * lists the images (blocking: the node registers with them held) or, with
 * none to prewarm, leaves the list to a listing in the background (a
 * child the loop reads through agent_images_fd and agent_images_poll) that
 * agent_images_refresh starts AGENT_IMAGES_FIRST_DELAY_MS after now_ms once
 * no task runs (at the latest AGENT_IMAGES_REFRESH_MS after now_ms), so
 * the node registers and starts its first tasks at once and reports its
 * images in the heartbeat after the list is in. A containerised task that comes before that runs with the runtime
 * found. Without a runtime, containerised tasks fail to start with the
 * reason and no images are reported; one found that turns out not to run
 * (its listing cannot exec it) is dropped with an error in the log, except
 * that podman falls back to docker. */
void agent_images_start(struct agent *a, int64_t now_ms);

/* Starts listing the images in the background when due (the first as
 * agent_images_start says, then see struct agent) and none is running.
 * Never waits for the runtime. */
void agent_images_refresh(struct agent *a, int64_t now_ms);

/* The running listing's output descriptor for the loop to poll for
 * reading, or -1. */
int agent_images_fd(const struct agent *a);

/* Reads the running listing's output without blocking and, once its child
 * has exited, takes the new list (or keeps the last, with a warning).
 * Returns true when a list was just taken that differs from the last (or
 * is the first): the next heartbeat sends it. (Every heartbeat sends the
 * list; true asks for one now.)
 * Cheap when no listing runs; call it on every turn of the loop. */
bool agent_images_poll(struct agent *a, int64_t now_ms);

/* The images held as a new JSON array, or NULL when there is no runtime or
 * no list yet (the server then keeps the node's list as it was). */
json_t *agent_images_json(const struct agent *a);

void agent_images_release(struct agent *a);

#endif
