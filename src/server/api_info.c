/* Read-mostly endpoints: nodes, queues, projects, and creating user, metrics and
 * node-bound join tokens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "common/sha256.h"
#include "core/gpu_share.h"
#include "core/operator.h"
#include "server/pool_loop.h"
#include "server/pool_loop_state.h"
#include "server/server.h"
#include "store/store_tokens.h"

static json_t *node_to_json(const struct node *n, int64_t now_ms)
{
    json_t *gpus = json_array();
    for (int i = 0; i < n->ngpus; i++) {
        const struct gpu *g = &n->gpus[i];
        json_t *o = json_pack("{s:i, s:s, s:s, s:I, s:I, s:i, s:i, s:i, s:o}",
            "index", g->index, "uuid", g->uuid, "name", g->name,
            "memory_total_mib", (json_int_t)g->memory_total_mib,
            "memory_used_mib", (json_int_t)g->memory_used_mib,
            "utilization_pct", g->utilization_pct, "temperature_c", g->temperature_c,
            "power_w", g->power_w, "job_id", g->job_id ? json_integer(g->job_id) : json_null());
        if (!o)
            continue;
        json_object_set_new(o, "free", json_boolean(gpu_is_free(g)));
        json_object_set_new(o, "shared_jobs", json_integer(g->shared_jobs));
        json_object_set_new(o, "shared_memory_mib", json_integer(g->shared_memory_mib));
        json_object_set_new(o, "mig_mode", json_boolean(g->mig_mode));
        /* GPU health (core/gpu_health.h) */
        json_object_set_new(o, "healthy", json_boolean(!g->faulty));
        json_object_set_new(o, "fault", g->faulty ? json_string(g->fault) : json_null());
        if (g->mig_profile[0]) {
            json_object_set_new(o, "mig_profile", json_string(g->mig_profile));
            json_object_set_new(o, "parent_index", json_integer(g->mig_parent));
        }
        json_array_append_new(gpus, o);
    }
    int allocated = gpu_node_gpus_in_use(n);
    return json_pack("{s:I, s:s, s:s, s:f, s:f, s:i, s:I, s:i, s:I, s:s, s:i, s:i, s:o}",
                     "id", (json_int_t)n->id, "name", n->name, "state", node_state_name(n->state),
                     "last_heartbeat", (double)n->last_heartbeat_ms / 1000.0,
                     "seconds_since_heartbeat", (double)(now_ms - n->last_heartbeat_ms) / 1000.0,
                     "cpus", n->cpus, "memory_mib", (json_int_t)n->memory_mib,
                     "cpus_allocated", n->cpus_allocated,
                     "memory_allocated_mib", (json_int_t)n->memory_allocated_mib,
                     "driver", n->driver, "gpus_total", gpu_node_gpus_whole_or_mig(n), "gpus_allocated", allocated,
                     "gpus", gpus);
}

/* A token limited to projects sees other projects' jobs as absent (404):
 * on a node, a GPU of such a job shows busy, without its id. Caller holds
 * the lock. */
static void hide_other_projects_jobs(struct server *srv, const struct api_request *req,
                                     json_t *node)
{
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(node, "gpus"), i, g)
    {
        json_t *id = json_object_get(g, "job_id");
        if (!json_is_integer(id))
            continue;
        const struct job *job = cluster_find_job(&srv->cluster, json_integer_value(id));
        if (!job || !auth_project_allowed(req, job->project))
            json_object_set_new(g, "job_id", json_null());
    }
}

int api_nodes_list(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    bool scoped = req->token.kind != TOKEN_ADMIN && req->token.projects;
    json_t *nodes = json_array();
    int64_t now = clock_now_ms();
    pthread_mutex_lock(&srv->lock);
    for (size_t i = 0; i < srv->cluster.nnodes; i++)
    {
        const struct node *n = &srv->cluster.nodes[i];
        json_t *o = node_to_json(n, now);
        if (scoped)
            hide_other_projects_jobs(srv, req, o);
        /* An operator's drain (core/operator.h) and what still runs there. */
        json_object_set_new(o, "drain_reason", n->drained ? json_string(n->drain_reason) : json_null());
        json_object_set_new(o, "jobs", json_integer(operator_node_jobs(&srv->cluster, n->id)));
        pool_loop_node_json(srv, &srv->cluster.nodes[i], o, now);
        json_array_append_new(nodes, o);
    }
    pthread_mutex_unlock(&srv->lock);
    reply->json = json_pack("{s:o}", "nodes", nodes);
    return 0;
}

int api_tokens_create(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    if (req->token.kind != TOKEN_ADMIN)
        return api_error_msg(reply, TIDE_EPERM, NULL, "only the admin token can create tokens");
    static const char *const fields[] = {"name", "projects", "kind", "expires_in_s", "node", NULL};
    json_t *body = api_body_object(req, fields, reply);
    if (!body)
        return 0;
    json_t *projects = json_object_get(body, "projects");
    json_t *kind = json_object_get(body, "kind");
    json_t *node = json_object_get(body, "node");
    bool metrics = json_is_string(kind) && !strcmp(json_string_value(kind), "metrics");
    bool join = json_is_string(kind) && !strcmp(json_string_value(kind), "join");
    /* A join token is named for the node it registers. */
    json_t *name = join && !json_object_get(body, "name") ? node : json_object_get(body, "name");
    int bad = 0;
    if (join && (!json_is_string(node) || !api_agent_node_name_valid(json_string_value(node))))
        bad = api_error_msg(reply, TIDE_EINVAL, "node",
                            "node: must name the node, 1 to %d letters, digits, '-', '_' or '.'",
                            TIDE_NAME_MAX - 1) + 1;
    else if (join && !json_equal(name, node))
        bad = api_error_msg(reply, TIDE_EINVAL, "name",
                            "name: a join token is named for its node; leave name out") + 1;
    else if (join && projects)
        bad = api_error_msg(reply, TIDE_EINVAL, "projects",
                            "projects: a join token only registers its node; leave projects "
                            "out") + 1;
    else if (!join && node)
        bad = api_error_msg(reply, TIDE_EINVAL, "node",
                            "node: only a join token (\"kind\": \"join\") is bound to a node") + 1;
    else if (!json_is_string(name) || json_string_length(name) == 0 || json_string_length(name) >= TIDE_NAME_MAX)
        bad = api_error_msg(reply, TIDE_EINVAL, "name", "name: must be a string of 1 to %d characters",
                            TIDE_NAME_MAX - 1) + 1;
    else if (!join && !strcmp(json_string_value(name), "admin"))
        /* a name is who jobs and events say acted, and whose idempotency keys */
        bad = api_error_msg(reply, TIDE_EINVAL, "name",
                            "name: 'admin' is the administrator's; choose another") + 1;
    else if (kind && !metrics && !join &&
             !(json_is_string(kind) && !strcmp(json_string_value(kind), "user")))
        bad = api_error_msg(reply, TIDE_EINVAL, "kind",
                            "kind: must be \"user\", \"metrics\" or \"join\"") + 1;
    else if (join)
        ;
    else if (metrics && projects)
        bad = api_error_msg(reply, TIDE_EINVAL, "projects",
                            "projects: a metrics token reads every project's metrics; leave projects out") + 1;
    else if (metrics)
        ;
    else if (!json_is_array(projects) || json_array_size(projects) == 0)
        bad = api_error_msg(reply, TIDE_EINVAL, "projects", "projects: must be a non-empty array of project names") + 1;
    size_t i;
    json_t *v;
    json_array_foreach(projects, i, v) if (!bad && (!json_is_string(v) || !json_string_length(v)))
        bad = api_error_msg(reply, TIDE_EINVAL, "projects", "projects[%zu]: must be a project name", i) + 1;
    json_t *expires_in = json_object_get(body, "expires_in_s");
    if (!bad && expires_in &&
        (!json_is_integer(expires_in) || json_integer_value(expires_in) < 1 ||
         json_integer_value(expires_in) > TOKEN_MAX_LIFE_S))
        bad = api_error_msg(reply, TIDE_EINVAL, "expires_in_s",
                            "expires_in_s: must be whole seconds from 1 to %lld (10 years)",
                            TOKEN_MAX_LIFE_S) + 1;
    if (bad) {
        json_decref(body);
        return 0;
    }
    char token[65], hash[65];
    struct tide_err err;
    int64_t expires_ms =
        expires_in ? clock_now_ms() + (int64_t)json_integer_value(expires_in) * 1000 : 0;
    pthread_mutex_lock(&srv->lock);
    int rc = store_begin(srv->store, &err);
    if (!rc)
        rc = auth_issue(srv, join ? TOKEN_JOIN_BOUND : metrics ? TOKEN_METRICS : TOKEN_USER,
                        json_string_value(name), metrics || join ? NULL : projects, 0, token, &err);
    if (!rc && expires_ms) {
        sha256_hex(token, strlen(token), hash);
        rc = store_token_set_expiry(srv->store, hash, expires_ms, &err);
    }
    if (!rc)
        rc = store_commit(srv->store, &err);
    else
        store_rollback(srv->store);
    auth_cache_invalidate(&srv->auth_cache); /* the expiry, set after the issue */
    pthread_mutex_unlock(&srv->lock);
    if (rc) {
        json_decref(body);
        return api_error(reply, &err);
    }
    reply->status = 201;
    json_t *expires = expires_ms ? json_real((double)expires_ms / 1000.0) : json_null();
    if (join)
        log_info("join token created for node '%s'", json_string_value(node));
    reply->json = join ? json_pack("{s:s, s:O, s:s, s:O, s:o}", "token", token, "name", name, "kind",
                                   "join", "node", node, "expires", expires)
                : metrics ? json_pack("{s:s, s:O, s:s, s:o}", "token", token, "name", name, "kind",
                                      "metrics", "expires", expires)
                          : json_pack("{s:s, s:O, s:O, s:s, s:o}", "token", token, "name", name,
                                      "projects", projects, "kind", "user", "expires", expires);
    json_decref(body);
    return 0;
}

int api_queues_list(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    (void)req;
    const struct queue_set *qs = &srv->cfg.queues;
    json_t *queues = json_array();
    pthread_mutex_lock(&srv->lock);
    for (int i = 0; i < qs->count; i++) {
        const struct queue_config *q = &qs->queues[i];
        int running = 0, gpus = 0, pending = 0;
        for (size_t j = 0; j < srv->cluster.njobs; j++) {
            const struct job *job = &srv->cluster.jobs[j];
            if (strcmp(job->queue, q->name))
                continue;
            if (job_state_is_on_node(job->state)) {
                running++;
                gpus += job->gpus;
            } else if (job->state == JOB_PENDING) {
                pending++;
            }
        }
        json_array_append_new(queues, json_pack(
            "{s:s, s:b, s:i, s:i, s:i, s:i, s:i, s:I, s:i, s:I, s:I, s:b, s:i, s:I, s:i, s:i, s:i}",
            "name", q->name, "default", !strcmp(q->name, qs->default_queue),
            "priority", q->priority_default, "priority_min", q->priority_min,
            "priority_max", q->priority_max, "max_running_jobs", q->max_running_jobs,
            "max_running_gpus", q->max_running_gpus, "max_wait_s", (json_int_t)q->max_wait_s,
            "escalation", q->escalation, "default_runtime_s", (json_int_t)q->default_runtime_s,
            "max_runtime_s", (json_int_t)q->max_runtime_s, "preemptible", q->preemptible,
            "idle_util_pct", q->idle_util_pct, "idle_after_s", (json_int_t)q->idle_after_s,
            "running_jobs", running, "running_gpus", gpus, "pending_jobs", pending));
        json_t *pools = json_array();
        for (int k = 0; k < q->npools; k++)
            json_array_append_new(pools, json_string(q->pools[k]));
        json_object_set_new(json_array_get(queues, json_array_size(queues) - 1), "pools", pools);
    }
    pthread_mutex_unlock(&srv->lock);
    reply->json = json_pack("{s:o}", "queues", queues);
    return 0;
}

/* One period of a budget: cap and spend this period, or null without a cap. */
static json_t *budget_period_json(const struct budget *b, enum budget_period period)
{
    if (!b->cap_micros[period])
        return json_null();
    int64_t spent = budget_spent_micros(b, period);
    char cap_s[32], spent_s[32];
    pool_money(cap_s, sizeof cap_s, b->cap_micros[period]);
    pool_money(spent_s, sizeof spent_s, spent);
    return json_pack("{s:I, s:s, s:I, s:s, s:i}", "cap_micros", (json_int_t)b->cap_micros[period],
                     "cap", cap_s, "spent_micros", (json_int_t)spent, "spent", spent_s,
                     "alerted_pct", b->alerted_pct[period]);
}

/* The budgets req may see (under the lock): spend against caps this period. */
static json_t *budgets_json(const struct budget_set *bs, const struct api_request *req)
{
    json_t *out = json_array();
    for (int i = 0; i < bs->count; i++) {
        const struct budget *b = &bs->items[i];
        if (!auth_project_allowed(req, b->project))
            continue;
        json_array_append_new(out, json_pack("{s:s, s:b, s:b, s:o, s:o}", "project", b->project,
                                             "hard_cap", b->hard_cap, "exhausted",
                                             budget_exhausted(b), "daily",
                                             budget_period_json(b, BUDGET_DAILY), "monthly",
                                             budget_period_json(b, BUDGET_MONTHLY)));
    }
    return out;
}

int api_projects_list(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    json_t *projects = json_array();
    pthread_mutex_lock(&srv->lock);
    struct fairshare *fs = &srv->cfg.fairshare;
    fairshare_update(fs, &srv->cluster, clock_now_ms());
    for (int i = 0; i < fs->count; i++) {
        const struct project_share *p = &fs->projects[i];
        if (!auth_project_allowed(req, p->cfg.name))
            continue;
        int pending = 0;
        for (size_t j = 0; j < srv->cluster.njobs; j++)
            pending += srv->cluster.jobs[j].state == JOB_PENDING &&
                       !strcmp(srv->cluster.jobs[j].project, p->cfg.name);
        json_array_append_new(projects, json_pack(
            "{s:s, s:i, s:i, s:i, s:i, s:f, s:i}", "name", p->cfg.name, "quota_gpus",
            p->cfg.quota_gpus, "weight", p->cfg.weight, "running_gpus", p->running_gpus,
            "borrowed_gpus", p->borrowed_gpus, "usage_gpu_hours", p->usage_gpu_s / 3600.0,
            "pending_jobs", pending));
    }
    json_int_t half_life = fs->half_life_s;
    json_t *budgets = budgets_json(&srv->cfg.budgets, req);
    pthread_mutex_unlock(&srv->lock);
    reply->json = json_pack("{s:o, s:I, s:o}", "projects", projects, "half_life_s", half_life,
                            "budgets", budgets);
    return 0;
}

int api_tokens_list(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    if (req->token.kind != TOKEN_ADMIN)
        return api_error_msg(reply, TIDE_EPERM, NULL, "only the admin token can list tokens");
    struct tide_err err;
    json_t *tokens = NULL;
    pthread_mutex_lock(&srv->lock);
    int rc = store_tokens_list(srv->store, &tokens, &err);
    pthread_mutex_unlock(&srv->lock);
    if (rc)
        return api_error(reply, &err);
    reply->json = json_pack("{s:o}", "tokens", tokens);
    return 0;
}

int api_tokens_revoke(struct server *srv, struct api_request *req, const char *name,
                      struct api_reply *reply)
{
    if (req->token.kind != TOKEN_ADMIN)
        return api_error_msg(reply, TIDE_EPERM, NULL, "only the admin token can revoke tokens");
    struct tide_err err;
    int count = 0;
    pthread_mutex_lock(&srv->lock);
    int rc = store_tokens_revoke(srv->store, name, &count, &err);
    auth_cache_invalidate(&srv->auth_cache); /* the next request with it fails */
    pthread_mutex_unlock(&srv->lock);
    if (rc)
        return api_error(reply, &err);
    if (!count)
        return api_error_msg(reply, TIDE_ENOENT, "name", "name: no user token named '%.64s'", name);
    reply->json = json_pack("{s:s, s:i}", "revoked", name, "tokens", count);
    return 0;
}
