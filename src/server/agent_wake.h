/*
 * Push to agents: a long-poll (POST /v1/agent/wait) parks until something
 * for its node is decided that its last heartbeat reply did not carry (a
 * start, a stop, a cancel), then answers with the node's starts and stops
 * (api_agent_node_actions), which the agent acts on at once before it
 * heartbeats. They are derived from state as a heartbeat reply's are and
 * nothing is taken off a list, so a lost answer is made good by the next
 * heartbeat's reply.
 */
#ifndef TIDE_SERVER_AGENT_WAKE_H
#define TIDE_SERVER_AGENT_WAKE_H

#include <stdint.h>

#include "server/server.h"

/* The longest a wait is held, whatever the agent asks. */
#define AGENT_WAKE_MAX_WAIT_MS 30000

/* Frees the per-node table (at shutdown). */
void agent_wake_release(struct server *srv);
/* Something for node_id was decided; wakes its parked wait. Caller holds
 * the lock. Out of memory only loses the wake (the heartbeat still comes). */
void agent_wake_node(struct server *srv, int64_t node_id);
/* The same for every node job_id is placed on (a gang's too). */
void agent_wake_job(struct server *srv, int64_t job_id);
/* The caller (a heartbeat) will answer node_id with everything decided
 * for it, ending with agent_wake_delivered in the same hold of the lock:
 * its own decisions for the node meanwhile wake none of the node's waits,
 * which would find them delivered (wake_slots_hold). Caller holds the lock. */
void agent_wake_hold(struct server *srv, int64_t node_id);
/* A heartbeat reply or wait answer for node_id is being sent with
 * everything decided so far. Caller holds the lock. Returns the node's
 * count of decisions (wake_slots_delivered): the reply's "decision". */
uint64_t agent_wake_delivered(struct server *srv, int64_t node_id);
/* Wakes every parked wait (shutdown). Caller holds the lock. */
void agent_wake_all(struct server *srv);

/* POST /v1/agent/wait {"wait_ms": N}: answers {"wake": true, "actions":
 * [...]} as soon as there is something undelivered for the caller's node
 * (marking it delivered), else {"wake": false} after wait_ms (default the heartbeat interval, at most
 * AGENT_WAKE_MAX_WAIT_MS and half the node timeout). */
int api_agent_wait(struct server *srv, struct api_request *req, struct api_reply *reply);

#endif
