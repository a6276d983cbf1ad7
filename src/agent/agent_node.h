/*
 * The node's identity: registering with the join token, and keeping the
 * node id and node token in WORK/node.json (mode 0600) so a restarted agent
 * comes back as the same node.
 */
#ifndef TIDE_AGENT_NODE_H
#define TIDE_AGENT_NODE_H

#include "agent/agent.h"
#include "common/tide_err.h"

/* Loads WORK/node.json into a->node when it was written for this server
 * and node name. Returns 0, or TIDE_ENOENT when there is none to use. */
int agent_node_load(struct agent *a, struct tide_err *err);

/* POSTs /v1/agent/register with the join token, then saves node.json.
 * Returns 0; TIDE_EAUTH when the server refused the token (or there is
 * none); TIDE_EINVAL when it refused the request or answered nonsense;
 * TIDE_EBUSY when the name's node is alive (409: tried again, as it may be
 * this agent's own registration whose answer was lost); TIDE_EIO when it
 * could not be reached or failed. */
int agent_node_register(struct agent *a, struct tide_err *err);

/* Frees a->node's token. */
void agent_node_release(struct agent_node *node);

#endif
