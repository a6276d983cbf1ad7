/*
 * The server's side of the agents' long-poll (agent_wake.h) over the
 * per-node wake slots (wake_slots.h): a node's counter moves when
 * something is decided for it and is marked delivered by each heartbeat
 * reply and wait answer; a wait returns while the two differ, woken by
 * its own node's decisions only.
 */
#include "server/agent_wake.h"

#include <time.h>

#include "common/fsutil.h"
#include "core/cluster.h"

void agent_wake_release(struct server *srv)
{
    wake_slots_release(&srv->agent_wake);
}

void agent_wake_node(struct server *srv, int64_t node_id)
{
    wake_slots_decided(&srv->agent_wake, node_id);
}

void agent_wake_job(struct server *srv, int64_t job_id)
{
    const struct job *job = cluster_find_job(&srv->cluster, job_id);
    if (!job)
        return;
    if (job->node_id)
        agent_wake_node(srv, job->node_id);
    for (int i = 0; i < job->nparts; i++)
        agent_wake_node(srv, job->parts[i].node_id);
}

void agent_wake_hold(struct server *srv, int64_t node_id)
{
    wake_slots_hold(&srv->agent_wake, node_id);
}

uint64_t agent_wake_delivered(struct server *srv, int64_t node_id)
{
    return wake_slots_delivered(&srv->agent_wake, node_id);
}

void agent_wake_all(struct server *srv)
{
    wake_slots_wake_all(&srv->agent_wake);
}

int api_agent_wait(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    if (req->token.kind != TOKEN_NODE)
        return api_error_msg(reply, TIDE_EPERM, NULL, "waiting needs a node token");
    int64_t wait_ms = srv->cfg.heartbeat_interval_ms;
    if (req->body_len > 0) {
        json_error_t jerr;
        json_t *body = json_loadb(req->body, req->body_len, 0, &jerr);
        json_t *v = json_object_get(body, "wait_ms");
        if (!json_is_object(body) || (v && (!json_is_integer(v) || json_integer_value(v) < 0 ||
                                            json_integer_value(v) > AGENT_WAKE_MAX_WAIT_MS))) {
            json_decref(body);
            return api_error_msg(reply, TIDE_EINVAL, "wait_ms",
                                 "wait_ms: must be an integer from 0 to %d", AGENT_WAKE_MAX_WAIT_MS);
        }
        if (v)
            wait_ms = json_integer_value(v);
        json_decref(body);
    }
    /* Well inside the node timeout, so a parked wait never looks like a
     * hung server to an agent's fencing. */
    if (wait_ms > srv->cfg.node_timeout_ms / 2)
        wait_ms = srv->cfg.node_timeout_ms / 2;
    /* the slots' conditions wait on this clock */
    struct timespec deadline = clock_in_us(CLOCK_MONOTONIC, wait_ms * 1000);
    int64_t node_id = req->token.node_id;
    pthread_mutex_lock(&srv->lock);
    bool known = cluster_find_node(&srv->cluster, node_id) != NULL;
    if (known)
        wake_slots_wait(&srv->agent_wake, &srv->lock, node_id, &deadline, &srv->stopping);
    const struct node *node = cluster_find_node(&srv->cluster, node_id);
    bool wake = node && wake_slots_undelivered(&srv->agent_wake, node_id);
    /* The answer carries what the node is to do now, derived from state as
     * a heartbeat reply's is: a lost answer loses nothing (the next
     * heartbeat derives it again) and a start the agent already has is
     * ignored by it, so nothing runs twice. */
    json_t *actions = wake ? api_agent_node_actions(srv, node) : NULL;
    uint64_t decision = wake ? agent_wake_delivered(srv, node_id) : 0;
    pthread_mutex_unlock(&srv->lock);
    if (!known)
        return api_error_msg(reply, TIDE_EAUTH, NULL, "unknown node: register again");
    api_agent_make_checkpoint_dirs(srv, actions);
    reply->json = json_pack("{s:b, s:I}", "wake", wake, "epoch", (json_int_t)lead_epoch(&srv->lead));
    if (reply->json && json_array_size(actions) > 0) {
        json_object_set(reply->json, "actions", actions);
        json_object_set_new(reply->json, "decision", json_integer((json_int_t)decision));
    }
    json_decref(actions);
    return 0;
}
