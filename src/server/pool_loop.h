/*
 * The elastic pools in the server: a thread that every second meters cost
 * (core/billing.h), runs the autoscaler's decisions (core/autoscaler.h),
 * persists them and carries them out through each pool's provider
 * (providers/provider.h) outside the lock, retrying failed provider calls
 * with backoff. Also the API, /metrics and node fields about pools. Does
 * nothing when tide.yaml configures no pools.
 */
#ifndef TIDE_SERVER_POOL_LOOP_H
#define TIDE_SERVER_POOL_LOOP_H

#include <stdio.h>

#include "server/server.h"

/* Loads pool state and starts the thread (no-op without pools). port is the
 * port agents use (the agent listener's when there is one), for the agents
 * providers start. */
int pool_loop_start(struct server *srv, int port, struct tide_err *err);
/* Stops the thread and what the local provider started; frees the state. */
void pool_loop_stop(struct server *srv);

/* Under the lock, in the registration's transaction, after the node row is
 * stored: links node to its pool (from the node record the autoscaler made,
 * old, or the `pool` field the agent sent) and persists that. */
int pool_loop_node_registered(struct server *srv, struct node *node, const struct node *old,
                              const char *pool_field, int64_t now_ms, struct tide_err *err);

/* Under the lock: a spot interruption of node_id (core/spot.h) with the
 * pool's interruption_grace_s, persisted with a node_interrupted event.
 * Returns the number of jobs asked to checkpoint and stop, or a negative
 * code with err (no such node, in no pool, already interrupted). */
int pool_spot_interrupt(struct server *srv, int64_t node_id, const char *why, int64_t now_ms,
                        struct tide_err *err);
/* POST /v1/nodes/{id}/interrupt (admin). */
int api_nodes_interrupt(struct server *srv, struct api_request *req, int64_t id,
                        struct api_reply *reply);

/* GET /v1/pools. */
int api_pools_list(struct server *srv, struct api_request *req, struct api_reply *reply);
/* Adds pool, age_s, cost, idle_s to a node's JSON (under the lock). */
void pool_loop_node_json(struct server *srv, const struct node *n, json_t *obj, int64_t now_ms);
/* Prints the pool metrics (under the lock). */
void pool_loop_metrics(struct server *srv, FILE *out);

#endif
