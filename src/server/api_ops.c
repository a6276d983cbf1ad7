/*
 * Operator endpoints (core/operator.h): hold, release and requeue a job;
 * drain, undrain and delete a node joined by hand. Each change goes through
 * the core, is persisted with an event, and kicks the scheduler.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "core/gpu_health.h"
#include "core/operator.h"
#include "server/server.h"
#include "store/store_health.h"

#define OPS_REASON_MAX 140

/* The optional body {"reason": "..."}: 0 with reason filled ("" when
 * absent), or -1 with reply filled. */
static int reason_from_body(struct api_request *req, char reason[OPS_REASON_MAX + 1],
                            struct api_reply *reply)
{
    reason[0] = '\0';
    if (req->body_len == 0)
        return 0;
    json_error_t jerr;
    json_t *body = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(body)) {
        json_decref(body);
        return api_error_msg(reply, TIDE_EINVAL, NULL, "body must be a JSON object"), -1;
    }
    const char *key;
    json_t *v;
    int rc = 0;
    json_object_foreach(body, key, v)
    {
        if (strcmp(key, "reason")) {
            api_error_msg(reply, TIDE_EINVAL, key, "%.64s: unknown field (only \"reason\")", key);
            rc = -1;
            break;
        }
        if (!json_is_string(v) || json_string_length(v) > OPS_REASON_MAX) {
            api_error_msg(reply, TIDE_EINVAL, "reason",
                          "reason: must be a string of at most %d characters", OPS_REASON_MAX);
            rc = -1;
            break;
        }
        snprintf(reason, OPS_REASON_MAX + 1, "%s", json_string_value(v));
    }
    json_decref(body);
    return rc;
}

/* Whether the token may act on job id (admin, or a user token of its
 * project); fills a 404/403 reply otherwise. Caller holds the lock. */
static bool may_act_on_job(struct server *srv, struct api_request *req, int64_t id,
                           struct api_reply *reply)
{
    struct tide_err err;
    tide_err_clear(&err);
    enum job_state state;
    char project[TIDE_NAME_MAX];
    if (req->token.kind != TOKEN_ADMIN && req->token.kind != TOKEN_USER) {
        api_error_msg(reply, TIDE_EPERM, NULL, "this token cannot change jobs");
        return false;
    }
    int rc = store_job_state(srv->store, id, &state, project, &err);
    if (!rc && !auth_project_allowed(req, project))
        rc = tide_err_set(&err, TIDE_ENOENT, NULL, "job %lld not found", (long long)id);
    if (rc) {
        api_error(reply, &err);
        return false;
    }
    if (job_state_is_final(state)) {
        api_error_msg(reply, TIDE_ECONFLICT, "id", "job %lld has already finished (%s)",
                      (long long)id, job_state_name(state));
        return false;
    }
    return true;
}

/* Persists one event in its own transaction, with an optional job hold change. */
static int persist_job_change(struct server *srv, int64_t id, bool set_hold, const char *hold,
                              const char *kind, const char *msg, int64_t now, struct tide_err *err)
{
    int rc = store_begin(srv->store, err);
    if (!rc && set_hold)
        rc = store_job_set_hold(srv->store, id, hold, err);
    if (!rc)
        rc = store_event_add(srv->store, now, kind, id, 0, msg, err);
    if (!rc)
        rc = store_commit(srv->store, err);
    if (rc)
        store_rollback(srv->store);
    return rc;
}

int api_jobs_operate(struct server *srv, struct api_request *req, int64_t id, const char *op,
                     struct api_reply *reply)
{
    char reason[OPS_REASON_MAX + 1];
    if (reason_from_body(req, reason, reply) != 0)
        return 0;
    struct tide_err err;
    tide_err_clear(&err);
    int64_t now = clock_now_ms();
    char msg[TIDE_REASON_MAX + 64];
    struct action_list actions;
    action_list_init(&actions);
    pthread_mutex_lock(&srv->lock);
    if (!may_act_on_job(srv, req, id, reply)) {
        pthread_mutex_unlock(&srv->lock);
        return 0;
    }
    int rc;
    if (!strcmp(op, "hold")) {
        const char *why = reason[0] ? reason : "by operator";
        rc = operator_hold_job(&srv->cluster, id, why, &err);
        snprintf(msg, sizeof msg, "held by %s: %s", req->token.name, why);
        if (!rc && persist_job_change(srv, id, true, why, "job_held", msg, now, &err) != 0) {
            operator_release_job(&srv->cluster, id, NULL);
            rc = err.code;
        }
    } else if (!strcmp(op, "release")) {
        rc = operator_release_job(&srv->cluster, id, &err);
        snprintf(msg, sizeof msg, "released by %s", req->token.name);
        if (!rc && persist_job_change(srv, id, true, NULL, "job_released", msg, now, &err) != 0) {
            operator_hold_job(&srv->cluster, id, "by operator", NULL);
            rc = err.code;
        }
    } else {
        rc = operator_requeue_job(&srv->cluster, id, reason[0] ? reason : NULL, &actions, &err);
        if (!rc)
            rc = apply_actions(srv, &actions, now, &err);
    }
    json_t *job = NULL;
    if (!rc) {
        sched_loop_kick(srv);
        rc = store_job_get(srv->store, id, &job, &err);
    }
    pthread_mutex_unlock(&srv->lock);
    action_list_release(&actions);
    if (rc)
        return api_error(reply, &err);
    reply->json = job;
    return 0;
}

/* The node called name (or with that id, for names of digits only). */
static struct node *find_node(struct server *srv, const char *name)
{
    struct node *node = cluster_find_node_by_name(&srv->cluster, name);
    if (!node) {
        char *end;
        long long id = strtoll(name, &end, 10);
        if (*name && !*end && id > 0)
            node = cluster_find_node(&srv->cluster, id);
    }
    return node;
}

static json_t *node_summary(struct server *srv, const struct node *node)
{
    return json_pack("{s:I, s:s, s:s, s:o, s:i}", "id", (json_int_t)node->id, "name", node->name,
                     "state", node_state_name(node->state), "drain_reason",
                     node->drained ? json_string(node->drain_reason) : json_null(), "jobs",
                     operator_node_jobs(&srv->cluster, node->id));
}

int api_nodes_operate(struct server *srv, struct api_request *req, const char *name, const char *op,
                      struct api_reply *reply)
{
    if (req->token.kind != TOKEN_ADMIN)
        return api_error_msg(reply, TIDE_EPERM, NULL, "%s a node needs the admin token",
                             !strcmp(op, "delete") ? "deleting" : "draining");
    char reason[OPS_REASON_MAX + 1] = "";
    if (strcmp(op, "delete") && reason_from_body(req, reason, reply) != 0)
        return 0;
    bool force = false;
    const char *f = api_query(req, "force");
    if (f) {
        if (strcmp(f, "0") && strcmp(f, "1") && strcmp(f, "true") && strcmp(f, "false"))
            return api_error_msg(reply, TIDE_EINVAL, "force", "force: must be 1 or 0");
        force = !strcmp(f, "1") || !strcmp(f, "true");
    }
    struct tide_err err;
    tide_err_clear(&err);
    int64_t now = clock_now_ms();
    struct action_list actions;
    action_list_init(&actions);
    json_t *out = NULL;
    pthread_mutex_lock(&srv->lock);
    struct node *node = find_node(srv, name);
    int rc = 0;
    if (!node) {
        rc = tide_err_set(&err, TIDE_ENOENT, "node", "node '%.64s' does not exist", name);
    } else if (!strcmp(op, "drain") || !strcmp(op, "undrain")) {
        bool drain = !strcmp(op, "drain");
        int64_t id = node->id;
        char msg[TIDE_REASON_MAX + 64];
        if (drain) {
            rc = operator_drain_node(&srv->cluster, id, reason[0] ? reason : NULL, &err);
            snprintf(msg, sizeof msg, "drained by %s: %.140s", req->token.name, node->drain_reason);
        } else {
            int faulty = gpu_health_faulty_count(node);
            rc = operator_undrain_node(&srv->cluster, id, &err);
            snprintf(msg, sizeof msg, "undrained by %s%s", req->token.name,
                     faulty ? " (GPU faults cleared)" : "");
        }
        if (!rc)
            rc = store_begin(srv->store, &err);
        if (!rc) {
            rc = store_node_set_drain(srv->store, id, node->state,
                                      node->drained ? node->drain_reason : NULL, &err);
            if (!rc && !drain) /* undrain clears GPU faults too (core/gpu_health.h) */
                rc = store_gpu_faults_save(srv->store, cluster_find_node(&srv->cluster, id), &err);
            if (!rc)
                rc = store_event_add(srv->store, now, drain ? "node_drained" : "node_undrained", 0,
                                     id, msg, &err);
            if (!rc)
                rc = store_commit(srv->store, &err);
            if (rc) {
                store_rollback(srv->store);
                server_resync_cluster(srv, now);
            }
        }
        node = cluster_find_node(&srv->cluster, id);
        if (!rc && node)
            out = node_summary(srv, node);
    } else { /* delete */
        int64_t id = node->id;
        char node_name[TIDE_NAME_MAX];
        snprintf(node_name, sizeof node_name, "%s", node->name);
        int running = operator_node_jobs(&srv->cluster, id);
        if (running && !force) {
            rc = tide_err_set(&err, TIDE_ECONFLICT, "force",
                              "node %s runs %d job%s: drain it and wait, or delete it with force "
                              "to requeue them (no retry used)",
                              node_name, running, running == 1 ? "" : "s");
        } else {
            /* its agent, if alive, stops their tasks within this of last
             * heard: fencing by the node timeout, or the stops it gets
             * when it registers again (their grace) */
            int64_t stop_ms = (int64_t)srv->cfg.node_timeout_ms + srv->cfg.kill_grace_s * 1000LL;
            int moved = operator_remove_node(&srv->cluster, id, now, stop_ms, &actions, &err);
            rc = moved < 0 ? moved : apply_actions(srv, &actions, now, &err);
            char msg[TIDE_REASON_MAX];
            snprintf(msg, sizeof msg, "deleted by %s%s", req->token.name,
                     moved > 0 ? " (its jobs requeued)" : "");
            if (!rc)
                rc = store_begin(srv->store, &err);
            if (!rc) {
                rc = store_node_delete(srv->store, id, &err);
                if (!rc)
                    rc = store_event_add(srv->store, now, "node_deleted", 0, id, msg, &err);
                if (!rc)
                    rc = store_commit(srv->store, &err);
                if (rc)
                    store_rollback(srv->store);
            }
            if (rc) {
                server_resync_cluster(srv, now);
            } else {
                out = json_pack("{s:I, s:s, s:b, s:i}", "id", (json_int_t)id, "name", node_name,
                                "deleted", 1, "jobs_requeued", moved);
            }
        }
    }
    if (!rc)
        sched_loop_kick(srv);
    pthread_mutex_unlock(&srv->lock);
    action_list_release(&actions);
    if (rc)
        return api_error(reply, &err);
    if (!out)
        return api_error_msg(reply, TIDE_ENOMEM, NULL, "out of memory");
    reply->json = out;
    return 0;
}
