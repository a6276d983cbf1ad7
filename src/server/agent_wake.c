/*
 * Per-node wake counters for the agents' long-poll (agent_wake.h). A
 * node's counter moves when something is decided for it and is marked
 * delivered by each heartbeat reply and wait answer; a wait returns while
 * the two differ.
 * One condition variable, broadcast: waits are few (one per agent) and
 * each rechecks only its own node.
 */
#include "server/agent_wake.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cluster.h"

struct agent_wake_slot {
    uint64_t decided;   /* bumped per decision for the node */
    uint64_t delivered; /* decided as of the last heartbeat reply */
};

static struct agent_wake_slot *slot_of(struct server *srv, int64_t node_id)
{
    if (node_id <= 0 || node_id > (int64_t)1 << 30)
        return NULL;
    if ((size_t)node_id >= srv->wake_nslots) {
        size_t n = srv->wake_nslots ? srv->wake_nslots : 64;
        while (n <= (size_t)node_id)
            n *= 2;
        struct agent_wake_slot *grown = realloc(srv->wake_slots, n * sizeof *grown);
        if (!grown)
            return NULL;
        memset(grown + srv->wake_nslots, 0, (n - srv->wake_nslots) * sizeof *grown);
        srv->wake_slots = grown;
        srv->wake_nslots = n;
    }
    return &srv->wake_slots[node_id];
}

void agent_wake_release(struct server *srv)
{
    free(srv->wake_slots);
    srv->wake_slots = NULL;
    srv->wake_nslots = 0;
}

void agent_wake_node(struct server *srv, int64_t node_id)
{
    struct agent_wake_slot *s = slot_of(srv, node_id);
    if (!s)
        return;
    s->decided++;
    pthread_cond_broadcast(&srv->agent_wake);
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

void agent_wake_delivered(struct server *srv, int64_t node_id)
{
    struct agent_wake_slot *s = slot_of(srv, node_id);
    if (s)
        s->delivered = s->decided;
}

void agent_wake_all(struct server *srv)
{
    pthread_cond_broadcast(&srv->agent_wake);
}

static bool undelivered(struct server *srv, int64_t node_id)
{
    struct agent_wake_slot *s = slot_of(srv, node_id);
    return s && s->decided != s->delivered;
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
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    int64_t ns = deadline.tv_nsec + wait_ms * 1000000;
    deadline.tv_sec += ns / 1000000000;
    deadline.tv_nsec = ns % 1000000000;
    int64_t node_id = req->token.node_id;
    pthread_mutex_lock(&srv->lock);
    bool known = cluster_find_node(&srv->cluster, node_id) != NULL;
    while (known && !srv->stopping && !undelivered(srv, node_id))
        if (pthread_cond_timedwait(&srv->agent_wake, &srv->lock, &deadline) == ETIMEDOUT)
            break;
    const struct node *node = cluster_find_node(&srv->cluster, node_id);
    bool wake = node && undelivered(srv, node_id);
    /* The answer carries what the node is to do now, derived from state as
     * a heartbeat reply's is: a lost answer loses nothing (the next
     * heartbeat derives it again) and a start the agent already has is
     * ignored by it, so nothing runs twice. */
    json_t *actions = wake ? api_agent_node_actions(srv, node) : NULL;
    if (wake)
        agent_wake_delivered(srv, node_id);
    pthread_mutex_unlock(&srv->lock);
    if (!known)
        return api_error_msg(reply, TIDE_EAUTH, NULL, "unknown node: register again");
    api_agent_make_checkpoint_dirs(actions);
    reply->json = json_pack("{s:b, s:I}", "wake", wake, "epoch", (json_int_t)lead_epoch(&srv->lead));
    if (reply->json && json_array_size(actions) > 0)
        json_object_set(reply->json, "actions", actions);
    json_decref(actions);
    return 0;
}
