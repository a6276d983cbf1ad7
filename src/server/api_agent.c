/*
 * The agent protocol (docs/api.md): registration with the join token, then
 * heartbeats with the node token that carry telemetry, task states and log
 * chunks in, and start/stop/ack messages out. The reply is sent only after
 * the state changes it implies are committed; one that reports an exit
 * while jobs wait also waits (briefly) for the scheduling pass it kicked,
 * so that it carries the start the exit made room for.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "common/utf8.h"
#include "core/gpu_health.h"
#include "core/gpu_share.h"
#include "core/image.h"
#include "core/job_spec.h"
#include "core/reconcile.h"
#include "core/spot.h"
#include "server/agent_wake.h"
#include "server/http_tls.h"
#include "server/pool_loop.h"
#include "server/server.h"
#include "store/store_tokens.h"

#define MAX_TASKS_PER_HEARTBEAT 1024
/* Bounds on what an agent may claim: far above any real machine, far
 * below what would overflow the sums placement and billing make. */
#define AGENT_MAX_CPUS 65536
#define AGENT_MAX_MEMORY_MIB (1LL << 32)     /* 4 PiB of RAM */
#define AGENT_MAX_GPU_MEMORY_MIB (1LL << 24) /* 16 TiB per GPU */
#define AGENT_MAX_GPU_INDEX 1023
#define AGENT_MAX_GPU_POWER_W 100000
#define AGENT_MAX_IMAGES 4096 /* names in one "images" list */

static long long int_field(json_t *obj, const char *key, long long fallback)
{
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? json_integer_value(v) : fallback;
}

/* Agents are not trusted with numbers: a value out of [min, max] (or not an
 * integer) is refused, naming it, before it can overflow placement or be
 * stored. fallback when absent. */
static int bounded_field(json_t *obj, const char *key, long long min, long long max,
                         long long fallback, const char *where, long long *out,
                         struct api_reply *reply)
{
    json_t *v = json_object_get(obj, key);
    *out = fallback;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return api_error_msg(reply, TIDE_EINVAL, key, "%s%s: must be an integer from %lld to %lld",
                             where, key, min, max), -1;
    *out = json_integer_value(v);
    return 0;
}

static const char *string_field(json_t *obj, const char *key, const char *fallback)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : fallback;
}

/* The agent run's id of a registration or heartbeat ("" when it gives
 * none) into run (sizeof node.heartbeat_run); 0, or -1 with a 400. */
static int run_field(json_t *body, char *run, size_t size, struct api_reply *reply)
{
    json_t *v = json_object_get(body, "run");
    run[0] = '\0';
    if (!v)
        return 0;
    if (!json_is_string(v) || json_string_length(v) < 1 || json_string_length(v) >= size)
        return api_error_msg(reply, TIDE_EINVAL, "run", "run: must be a string of 1 to %zu characters",
                             size - 1), -1;
    snprintf(run, size, "%s", json_string_value(v));
    return 0;
}

/* A heartbeat's optional "stopping": true from an agent that is stopping. */
static int stopping_field(json_t *body, bool *stopping, struct api_reply *reply)
{
    json_t *v = json_object_get(body, "stopping");
    *stopping = v && json_is_true(v);
    if (v && !json_is_boolean(v))
        return api_error_msg(reply, TIDE_EINVAL, "stopping", "stopping: must be true or false"), -1;
    return 0;
}

/* The memory limit of job's share of its GPU on node, 0 when it holds its
 * GPUs whole (or a MIG instance, which the hardware limits). */
static int64_t share_limit_mib(const struct node *node, const struct job *job)
{
    if (job->node_id != node->id || job->ngpus_assigned != 1)
        return 0;
    for (int g = 0; g < node->ngpus; g++)
        if (node->gpus[g].index == job->gpu_index[0])
            return gpu_job_is_share_of(&node->gpus[g], job) ? job->gpu_memory_mib : 0;
    return 0;
}

static json_t *parse_body(struct api_request *req, struct api_reply *reply)
{
    json_error_t jerr;
    json_t *body = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(body)) {
        json_decref(body);
        api_error_msg(reply, TIDE_EINVAL, NULL, "body must be a JSON object (%s)", jerr.text);
        return NULL;
    }
    return body;
}

bool api_agent_node_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= TIDE_NAME_MAX)
        return false;
    for (const char *p = name; *p; p++)
        if (!(*p == '-' || *p == '_' || *p == '.' || (*p >= '0' && *p <= '9') ||
              (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
            return false;
    return true;
}

/* Fills node's static description from a registration body. */
static int node_from_registration(json_t *body, struct node *node, struct api_reply *reply)
{
    const char *name = string_field(body, "name", "");
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof node->name)
        return api_error_msg(reply, TIDE_EINVAL, "name", "name: must be 1 to %zu characters",
                             sizeof node->name - 1), -1;
    if (!api_agent_node_name_valid(name))
        return api_error_msg(reply, TIDE_EINVAL, "name",
                             "name: may contain only letters, digits, '-', '_' and '.'"), -1;
    snprintf(node->name, sizeof node->name, "%s", name);
    if (run_field(body, node->heartbeat_run, sizeof node->heartbeat_run, reply))
        return -1;
    long long v;
    if (bounded_field(body, "cpus", 0, AGENT_MAX_CPUS, 0, "", &v, reply))
        return -1;
    node->cpus = (int)v;
    if (bounded_field(body, "memory_mib", 0, AGENT_MAX_MEMORY_MIB, 0, "", &v, reply))
        return -1;
    node->memory_mib = v;
    /* cut on a character: JSON and Prometheus refuse half of one */
    utf8_copy(node->driver, sizeof node->driver, string_field(body, "driver", ""));
    json_t *gpus = json_object_get(body, "gpus");
    if (gpus && !json_is_array(gpus))
        return api_error_msg(reply, TIDE_EINVAL, "gpus", "gpus: must be an array"), -1;
    if (json_array_size(gpus) > TIDE_MAX_GPUS_PER_NODE)
        return api_error_msg(reply, TIDE_EINVAL, "gpus", "gpus: at most %d per node",
                             TIDE_MAX_GPUS_PER_NODE), -1;
    size_t i;
    json_t *g;
    node->ngpus = 0;
    json_array_foreach(gpus, i, g)
    {
        struct gpu *gpu = &node->gpus[node->ngpus++];
        memset(gpu, 0, sizeof *gpu);
        char where[32];
        snprintf(where, sizeof where, "gpus[%zu].", i);
        if (!json_is_object(g))
            return api_error_msg(reply, TIDE_EINVAL, "gpus", "gpus[%zu]: must be an object", i), -1;
        if (bounded_field(g, "index", 0, AGENT_MAX_GPU_INDEX, (long long)i, where, &v, reply))
            return -1;
        gpu->index = (int)v;
        for (int k = 0; k + 1 < node->ngpus; k++)
            if (node->gpus[k].index == gpu->index)
                return api_error_msg(reply, TIDE_EINVAL, "index", "%sindex: %d is given twice",
                                     where, gpu->index), -1;
        utf8_copy(gpu->uuid, sizeof gpu->uuid, string_field(g, "uuid", ""));
        utf8_copy(gpu->name, sizeof gpu->name, string_field(g, "name", ""));
        if (bounded_field(g, "memory_total_mib", 0, AGENT_MAX_GPU_MEMORY_MIB, 0, where, &v, reply))
            return -1;
        gpu->memory_total_mib = v;
        gpu->mig_mode = json_is_true(json_object_get(g, "mig_mode"));
        const char *profile = string_field(g, "mig_profile", "");
        if (profile[0]) {
            /* a MIG instance: placed only for jobs asking for its profile */
            if (strlen(profile) >= sizeof gpu->mig_profile || !gpu_mig_profile_valid(profile))
                return api_error_msg(reply, TIDE_EINVAL, "gpus",
                                     "gpus[%zu].mig_profile: '%.40s' is not like 1g.10gb", i,
                                     profile), -1;
            snprintf(gpu->mig_profile, sizeof gpu->mig_profile, "%s", profile);
            if (bounded_field(g, "parent_index", -1, AGENT_MAX_GPU_INDEX, -1, where, &v, reply))
                return -1;
            gpu->mig_parent = (int)v;
            gpu->mig_mode = false;
        }
    }
    return 0;
}

/* The images the agent holds (optional "images": ["name:tag", ...]) into
 * node's image cache; absent leaves the cache as it is. Names beyond
 * TIDE_MAX_NODE_IMAGES are not kept (placement then just does not know). */
static int read_images(struct node *node, json_t *images, struct api_reply *reply)
{
    if (!images || json_is_null(images))
        return 0;
    if (!json_is_array(images) || json_array_size(images) > AGENT_MAX_IMAGES)
        return api_error_msg(reply, TIDE_EINVAL, "images",
                             "images: must be an array of at most %d image names",
                             AGENT_MAX_IMAGES), -1;
    const char *names[TIDE_MAX_NODE_IMAGES];
    int n = 0;
    size_t i;
    json_t *name;
    json_array_foreach(images, i, name)
    {
        if (!json_is_string(name))
            return api_error_msg(reply, TIDE_EINVAL, "images", "images[%zu]: must be a string",
                                 i), -1;
        if (n < TIDE_MAX_NODE_IMAGES)
            names[n++] = json_string_value(name);
    }
    image_node_set(node, names, n);
    return 0;
}

/* Heard from within the node timeout, and not given up on. */
static bool node_is_alive(const struct server *srv, const struct node *node, int64_t now)
{
    return node_state_is_up(node->state) &&
           now - node->last_heartbeat_ms <= srv->cfg.node_timeout_ms;
}

int api_agent_register(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    bool used = req->token.kind == TOKEN_JOIN_USED;
    bool bound = req->token.kind == TOKEN_JOIN_BOUND || used;
    if (req->token.kind != TOKEN_JOIN && !bound)
        return api_error_msg(reply, TIDE_EPERM, NULL, "registering needs a join token");
    struct tide_err err;
    tide_err_clear(&err);
    json_t *body = parse_body(req, reply);
    if (!body)
        return 0;
    struct node node;
    memset(&node, 0, sizeof node);
    if (node_from_registration(body, &node, reply) != 0 ||
        read_images(&node, json_object_get(body, "images"), reply) != 0) {
        json_decref(body);
        return 0;
    }
    if (bound && strcmp(req->token.name, node.name) != 0) {
        json_decref(body);
        if (used) {
            auth_join_used_error(req, &err);
            return api_error(reply, &err);
        }
        return api_error_msg(reply, TIDE_EPERM, "name",
                             "name: this join token registers only node '%s', not '%s'",
                             req->token.name, node.name);
    }
    if (!bound && srv->cfg.tls_client_cn_is_node &&
        http_tls_client_name_is(req->conn, node.name, &err) != 0) {
        json_decref(body);
        return api_error(reply, &err);
    }
    char token[65];
    int64_t now = clock_now_ms();
    pthread_mutex_lock(&srv->lock);
    struct node *old = cluster_find_node_by_name(&srv->cluster, node.name);
    /* The same run of the agent that registered the node or heartbeats for
     * it: its registration again, the answer to the last one lost. */
    bool same_agent = old && node.heartbeat_run[0] && !strcmp(node.heartbeat_run, old->heartbeat_run);
    if (used && !same_agent) { /* a bound join token is one agent run's */
        pthread_mutex_unlock(&srv->lock);
        json_decref(body);
        auth_join_used_error(req, &err);
        return api_error(reply, &err);
    }
    if (old && node_is_alive(srv, old, now) && !same_agent) {
        /* The join token is shared: with it alone, nobody may take over a
         * live node's name (and with it its jobs and their secrets). */
        int64_t ago = now - old->last_heartbeat_ms;
        pthread_mutex_unlock(&srv->lock);
        json_decref(body);
        return api_error_msg(reply, TIDE_ECONFLICT, "name",
                             "name: node '%s' is alive (last heartbeat %lld ms ago); an agent "
                             "restarting with its node.json keeps its token, another must wait "
                             "until the node is lost",
                             node.name, (long long)ago);
    }
    if (old) {
        /* Same node again (agent restart): keep what tasks hold; the next
         * heartbeat tells which of them survived. */
        node.cpus_allocated = old->cpus_allocated;
        node.memory_allocated_mib = old->memory_allocated_mib;
        for (int i = 0; i < node.ngpus; i++)
            for (int j = 0; j < old->ngpus; j++)
                if (old->gpus[j].index == node.gpus[i].index) {
                    node.gpus[i].job_id = old->gpus[j].job_id;
                    node.gpus[i].shared_jobs = old->gpus[j].shared_jobs;
                    node.gpus[i].shared_memory_mib = old->gpus[j].shared_memory_mib;
                    /* health outlives agent restarts, until an operator clears it */
                    node.gpus[i].faulty = old->gpus[j].faulty;
                    memcpy(node.gpus[i].fault, old->gpus[j].fault, sizeof node.gpus[i].fault);
                    node.gpus[i].fault_seq = old->gpus[j].fault_seq;
                    memcpy(node.gpus[i].fault_run, old->gpus[j].fault_run,
                           sizeof node.gpus[i].fault_run);
                }
        gpu_health_spread_to_instances(&node);
        node.faults_in_window = old->faults_in_window;
        node.fault_window_start_ms = old->fault_window_start_ms;
        node.health_failed = old->health_failed;
        node.probe_drained = old->probe_drained;
        node.probe_drained_ms = old->probe_drained_ms;
    }
    /* A lost node whose agent came back (restarted) is back, as after a late heartbeat. */
    bool back = old && old->state == NODE_LOST;
    node.state = NODE_READY;
    if (old && old->drained) { /* an operator's drain outlives agent restarts */
        node.drained = true;
        memcpy(node.drain_reason, old->drain_reason, sizeof node.drain_reason);
        node.state = NODE_DRAINING;
    }
    if (old && old->health_failed && !old->pool[0])
        node.state = NODE_FAILED; /* gpu_health.h: until an operator undrains it */
    /* The agent's first health probe: a failing node is drained as it joins. */
    json_t *probe = json_object_get(body, "health_probe");
    int probe_change = 0;
    if (json_is_object(probe) && json_is_boolean(json_object_get(probe, "ok")))
        probe_change = gpu_health_probe(&node, json_is_true(json_object_get(probe, "ok")),
                                        string_field(probe, "output", ""), now);
    node.last_heartbeat_ms = now;
    node.heard_mono_ms = clock_mono_ms();
    node.heartbeat_run_ms = clock_mono_ms(); /* heartbeat_run: node_from_registration's */
    int rc = store_begin(srv->store, &err);
    if (!rc && bound && !used) /* used up with the registration it makes, or not at all */
        rc = store_token_use_join(srv->store, req->token_hash, &err);
    if (!rc)
        rc = store_node_upsert(srv->store, &node, body, now, &err);
    if (!rc)
        rc = pool_loop_node_registered(srv, &node, old, string_field(body, "pool", ""), now, &err);
    if (!rc)
        rc = store_token_delete_node(srv->store, node.id, &err);
    if (!rc)
        rc = auth_issue(srv, TOKEN_NODE, node.name, NULL, node.id, token, &err);
    char msg[160];
    snprintf(msg, sizeof msg, "%s with %d GPU%s (%s)", back ? "registered again after being lost" : "registered",
             node.ngpus, node.ngpus == 1 ? "" : "s", node.driver[0] ? node.driver : "no driver");
    if (!rc)
        rc = store_event_add(srv->store, now, back ? "node_back" : "node_registered", 0, node.id, msg, &err);
    if (!rc && probe_change)
        rc = store_node_set_drain(srv->store, node.id, node.state,
                                  node.drained ? node.drain_reason : NULL, &err);
    if (!rc && probe_change)
        rc = store_event_add(srv->store, now, probe_change > 0 ? "node_drained" : "node_undrained",
                             0, node.id, probe_change > 0 ? node.drain_reason : "health probe passed",
                             &err);
    /* on disk before the agent hears of its token: every answer waits for
     * store_sync (http.c), outside the lock, so agents that register
     * together share the disk's flushes */
    if (!rc)
        rc = store_commit_deferred(srv->store, &err);
    if (rc)
        store_rollback(srv->store);
    else if (!cluster_put_node(&srv->cluster, &node))
        rc = tide_err_set(&err, TIDE_ENOMEM, NULL, "out of memory");
    if (!rc)
        sched_loop_kick(srv);
    pthread_mutex_unlock(&srv->lock);
    json_decref(body);
    if (rc)
        return api_error(reply, &err);
    log_info("node %s (id %lld) registered with %d GPUs", node.name, (long long)node.id, node.ngpus);
    reply->json = json_pack("{s:I, s:s, s:i, s:I}", "node_id", (json_int_t)node.id, "node_token",
                            token, "heartbeat_interval_ms", srv->cfg.heartbeat_interval_ms,
                            "epoch", (json_int_t)lead_epoch(&srv->lead));
    return 0;
}

/* Reads a heartbeat's GPU telemetry into node, all of it checked first so
 * that a bad value changes nothing. */
static int update_telemetry(struct node *node, json_t *gpus, struct api_reply *reply)
{
    if (gpus && !json_is_array(gpus))
        return api_error_msg(reply, TIDE_EINVAL, "gpus", "gpus: must be an array"), -1;
    if (json_array_size(gpus) > TIDE_MAX_GPUS_PER_NODE)
        return api_error_msg(reply, TIDE_EINVAL, "gpus", "gpus: at most %d per node",
                             TIDE_MAX_GPUS_PER_NODE), -1;
    struct {
        long long index, memory_used_mib, utilization_pct, temperature_c, power_w;
    } read[TIDE_MAX_GPUS_PER_NODE];
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        char where[32];
        snprintf(where, sizeof where, "gpus[%zu].", i);
        if (!json_is_object(g))
            return api_error_msg(reply, TIDE_EINVAL, "gpus", "gpus[%zu]: must be an object", i), -1;
        if (bounded_field(g, "index", 0, AGENT_MAX_GPU_INDEX, -1, where, &read[i].index, reply) ||
            bounded_field(g, "memory_used_mib", 0, AGENT_MAX_GPU_MEMORY_MIB, 0, where,
                          &read[i].memory_used_mib, reply) ||
            bounded_field(g, "utilization_pct", 0, 100, 0, where, &read[i].utilization_pct, reply) ||
            bounded_field(g, "temperature_c", -100, 300, 0, where, &read[i].temperature_c, reply) ||
            bounded_field(g, "power_w", 0, AGENT_MAX_GPU_POWER_W, 0, where, &read[i].power_w, reply))
            return -1;
    }
    for (size_t r = 0; r < json_array_size(gpus); r++)
        for (int k = 0; k < node->ngpus; k++) {
            struct gpu *gpu = &node->gpus[k];
            if (gpu->index != read[r].index)
                continue;
            gpu->memory_used_mib = read[r].memory_used_mib;
            gpu->utilization_pct = (int)read[r].utilization_pct;
            gpu->temperature_c = (int)read[r].temperature_c;
            gpu->power_w = (int)read[r].power_w;
        }
    return 0;
}

/* Whether a log chunk comes from where job_id's attempt runs, or ran: its
 * (first) node. A finished job has left the cluster but its output may still
 * be on the way, so the store answers for it. */
static bool log_is_from(struct server *srv, const struct node *node, int64_t job_id, int attempt)
{
    struct job *job = cluster_find_job(&srv->cluster, job_id);
    if (job) /* a gang job's log is its first node's (rank 0) output */
        return job->node_id == node->id && job->attempt == attempt;
    int64_t ran_on = 0;
    int ran_as = 0;
    struct tide_err err;
    return store_job_last_placement(srv->store, job_id, &ran_on, &ran_as, &err) == 0 &&
           ran_on == node->id && ran_as == attempt;
}

/* Appends each log chunk of a task that is (or just was) placed on this
 * node; returns the offsets the server now holds. */
/* A task (job and attempt) whose log is flushed before the answer. */
struct task_report_key {
    int64_t job_id;
    int attempt;
};

/* Room for every task reported and every finished task's late output. */
#define MAX_FLUSHES (2 * MAX_TASKS_PER_HEARTBEAT)

static void flush_later(struct task_report_key *keys, size_t *n, int64_t job_id, int attempt)
{
    for (size_t i = 0; i < *n; i++)
        if (keys[i].job_id == job_id && keys[i].attempt == attempt)
            return;
    if (*n < MAX_FLUSHES)
        keys[(*n)++] = (struct task_report_key){job_id, attempt};
}

/* Appends the heartbeat's log chunks. Output of an attempt that has ended
 * goes into flush (flushed before the answer): the answer's offsets let
 * the agent delete what it sent, and its exit, already acknowledged, made
 * no flush of these later bytes. */
static json_t *store_log_chunks(struct server *srv, struct node *node, json_t *logs,
                                struct task_report_key *flush, size_t *nflush)
{
    json_t *offsets = json_array();
    size_t i;
    json_t *chunk;
    json_array_foreach(logs, i, chunk)
    {
        int64_t job_id = int_field(chunk, "job_id", 0);
        long long given_attempt = int_field(chunk, "attempt", 0);
        int attempt = given_attempt > 0 && given_attempt <= INT_MAX ? (int)given_attempt : 0;
        int64_t offset = int_field(chunk, "offset", -1);
        json_t *data = json_object_get(chunk, "data");
        if (offset < 0 || !json_is_string(data) || !log_is_from(srv, node, job_id, attempt))
            continue;
        int64_t have = log_store_append(srv->cfg.data_dir, job_id, attempt, offset,
                                        json_string_value(data), json_string_length(data));
        if (have < 0) {
            log_warn("cannot store log of job %lld: %s", (long long)job_id, strerror((int)-have));
            continue;
        }
        if (!job_attempt_on_node(cluster_find_job(&srv->cluster, job_id), attempt, node->id))
            flush_later(flush, nflush, job_id, attempt);
        json_array_append_new(offsets, json_pack("{s:I, s:i, s:I}", "job_id", (json_int_t)job_id,
                                                 "attempt", attempt, "offset", (json_int_t)have));
    }
    return offsets;
}

/* Task report i into r, every field checked before it is narrowed (an
 * exit code of 2^32 read as 0 recorded a failed job as succeeded). 0, or
 * -1 with a 400 naming the field. */
static int parse_report(json_t *t, size_t i, struct task_report *r, struct api_reply *reply)
{
    memset(r, 0, sizeof *r);
    if (!json_is_object(t))
        return api_error_msg(reply, TIDE_EINVAL, "tasks", "tasks[%zu]: must be an object", i), -1;
    char where[32];
    snprintf(where, sizeof where, "tasks[%zu].", i);
    long long job_id, attempt, exit_code, signal;
    if (bounded_field(t, "job_id", 1, INT64_MAX, 0, where, &job_id, reply) ||
        bounded_field(t, "attempt", 1, INT_MAX, 0, where, &attempt, reply) ||
        bounded_field(t, "exit_code", 0, 255, -1, where, &exit_code, reply) ||
        bounded_field(t, "signal", 0, 127, 0, where, &signal, reply))
        return -1;
    if (!job_id || !attempt)
        return api_error_msg(reply, TIDE_EINVAL, job_id ? "attempt" : "job_id",
                             "tasks[%zu]: needs a job_id and an attempt", i), -1;
    json_t *given = json_object_get(t, "state");
    const char *state = given ? json_string_value(given) : "running"; /* NULL: not a string */
    r->exited = state && !strcmp(state, "exited");
    if (!state || (!r->exited && strcmp(state, "running") != 0))
        return api_error_msg(reply, TIDE_EINVAL, "state",
                             "tasks[%zu].state: must be running or exited", i), -1;
    json_t *reason = json_object_get(t, "reason");
    if (reason && !json_is_string(reason) && !json_is_null(reason))
        return api_error_msg(reply, TIDE_EINVAL, "reason", "tasks[%zu].reason: must be a string",
                             i), -1;
    r->job_id = job_id;
    r->attempt = (int)attempt;
    r->exit_code = (int)exit_code;
    r->signal = (int)signal;
    utf8_copy(r->reason, sizeof r->reason, string_field(t, "reason", ""));
    if (r->exited && !r->reason[0]) {
        if (r->signal)
            snprintf(r->reason, sizeof r->reason, "signal %d", r->signal);
        else
            snprintf(r->reason, sizeof r->reason, "exit %d", r->exit_code);
    }
    return 0;
}

static int parse_reports(json_t *tasks, struct task_report *out, size_t *n, struct api_reply *reply)
{
    *n = 0;
    if (tasks && !json_is_array(tasks))
        return api_error_msg(reply, TIDE_EINVAL, "tasks", "tasks: must be an array"), -1;
    if (json_array_size(tasks) > MAX_TASKS_PER_HEARTBEAT)
        return api_error_msg(reply, TIDE_EINVAL, "tasks", "tasks: at most %d",
                             MAX_TASKS_PER_HEARTBEAT), -1;
    size_t i;
    json_t *t;
    json_array_foreach(tasks, i, t)
    {
        if (parse_report(t, i, &out[(*n)++], reply) != 0)
            return -1;
    }
    return 0;
}

/* What a task of a gang job needs to find the others: its rank, the gang's
 * size and every member's node, rank 0 first. */
static void add_gang_env(struct server *srv, const struct job *job, const struct node *node,
                         json_t *env)
{
    char hosts[1024], value[32];
    size_t used = 0;
    int rank = 0;
    struct node *first = cluster_find_node(&srv->cluster, job->node_id);
    used += (size_t)snprintf(hosts, sizeof hosts, "%s", first ? first->name : "?");
    for (int i = 0; i < job->nparts && used < sizeof hosts; i++) {
        struct node *n = cluster_find_node(&srv->cluster, job->parts[i].node_id);
        used += (size_t)snprintf(hosts + used, sizeof hosts - used, ",%s", n ? n->name : "?");
        if (job->parts[i].node_id == node->id)
            rank = i + 1;
    }
    json_object_set_new(env, "TIDE_GANG_NODES", json_string(hosts));
    snprintf(value, sizeof value, "%d", rank);
    json_object_set_new(env, "TIDE_GANG_RANK", json_string(value));
    snprintf(value, sizeof value, "%d", job->nparts + 1);
    json_object_set_new(env, "TIDE_GANG_SIZE", json_string(value));
}

static json_t *start_message(struct server *srv, struct node *node, const struct action *a)
{
    struct job *job = cluster_find_job(&srv->cluster, a->job_id);
    json_t *spec = NULL;
    struct tide_err err;
    if (!job || store_job_spec(srv->store, a->job_id, &spec, &err) != 0)
        return NULL;
    json_t *gpus = json_array(), *uuids = json_array();
    int here[TIDE_MAX_GPUS_PER_NODE];
    int nhere = job_gpus_on_node(job, node->id, here);
    for (int i = 0; i < nhere; i++) {
        json_array_append_new(gpus, json_integer(here[i]));
        for (int g = 0; g < node->ngpus; g++)
            if (node->gpus[g].index == here[i])
                json_array_append_new(uuids, json_string(node->gpus[g].uuid));
    }
    json_t *env = json_deep_copy(json_object_get(spec, "env"));
    if (!env)
        env = json_object();
    if (job->nparts > 0)
        add_gang_env(srv, job, node, env);
    json_t *workdir = json_object_get(spec, "workdir");
    /* Every attempt, wherever it runs, sees the same checkpoint directory;
     * api_agent_make_checkpoint_dirs creates it, off the lock. */
    char checkpoint_dir[1200];
    snprintf(checkpoint_dir, sizeof checkpoint_dir, "%s/checkpoints/%lld", srv->cfg.data_dir,
             (long long)job->id);
    json_t *msg = json_pack("{s:s, s:I, s:i, s:O, s:o, s:o, s:o, s:I, s:O, s:i}", "type", "start",
                            "job_id", (json_int_t)job->id, "attempt", job->attempt, "command",
                            json_object_get(spec, "command"), "env", env,
                            "gpus", gpus, "gpu_uuids", uuids, "max_runtime",
                            (json_int_t)job->max_runtime_s, "workdir",
                            workdir ? workdir : json_null(), "kill_grace_s", srv->cfg.kill_grace_s);
    if (msg)
        json_object_set_new(msg, "checkpoint_dir", json_string(checkpoint_dir));
    /* the job's own user, else its project's (tide.yaml projects: user) */
    json_t *user = json_incref(json_object_get(spec, "user"));
    for (int i = 0; !user && i < srv->cfg.nproject_users; i++)
        if (!strcmp(srv->cfg.project_users[i].project, job->project))
            user = json_string(srv->cfg.project_users[i].user);
    if (msg && user)
        json_object_set(msg, "user", user);
    json_decref(user);
    /* a container: the agent runs command in it (podman or docker) */
    json_t *image = json_object_get(spec, "image"), *mounts = json_object_get(spec, "mounts");
    if (msg && json_is_string(image)) {
        json_object_set(msg, "image", image);
        json_object_set_new(msg, "image_cached",
                            json_boolean(image_node_holds(node, job->image_key)));
        if (mounts)
            json_object_set(msg, "mounts", mounts);
    }
    int64_t limit = share_limit_mib(node, job);
    if (msg && limit > 0)
        json_object_set_new(msg, "gpu_memory_limit_mib", json_integer(limit));
    /* the job's memory and CPUs, which the agent turns into cgroup limits */
    if (msg && job->memory_mib > 0)
        json_object_set_new(msg, "memory_mib", json_integer(job->memory_mib));
    if (msg && job->cpus > 0)
        json_object_set_new(msg, "cpus", json_integer(job->cpus));
    json_decref(spec);
    return msg;
}

void api_agent_make_checkpoint_dirs(struct server *srv, json_t *actions)
{
    size_t i;
    json_t *msg;
    json_array_foreach(actions, i, msg)
    {
        const char *dir = json_string_value(json_object_get(msg, "checkpoint_dir"));
        if (!dir)
            continue;
        /* there already for an earlier attempt, or a start sent before */
        bool made;
        int rc = dir_spares_make(srv->checkpoint_spares, dir, 0700, &made);
        if (rc < 0)
            log_warn("cannot create %s: %s", dir, strerror(-rc));
    }
}

/* The signal that asks job to checkpoint and stop: its checkpoint_signal,
 * else SIGTERM. */
static int checkpoint_signal_of(struct server *srv, int64_t job_id)
{
    json_t *spec = NULL;
    struct tide_err err;
    int sig = 15;
    if (store_job_spec(srv->store, job_id, &spec, &err) == 0) {
        const char *name = json_string_value(json_object_get(spec, "checkpoint_signal"));
        if (name && job_spec_signal_number(name) > 0)
            sig = job_spec_signal_number(name);
    }
    json_decref(spec);
    return sig;
}

/* A stop for job_id's task on node; a checkpoint asked by a spot
 * interruption gets the time left to the deadline (of any interrupted node
 * the job holds: a gang's ranks checkpoint together). */
static json_t *stop_message(struct server *srv, const struct node *node, int64_t job_id,
                            int attempt, const char *reason)
{
    bool checkpoint = !strcmp(reason, "preempted");
    int sig = checkpoint ? checkpoint_signal_of(srv, job_id) : 15;
    const struct job *job = cluster_find_job(&srv->cluster, job_id);
    int64_t now = clock_now_ms();
    int grace = !checkpoint ? srv->cfg.kill_grace_s
                : job       ? spot_job_kill_grace_s(&srv->cluster, job, now, srv->cfg.kill_grace_s)
                            : spot_kill_grace_s(node, now, srv->cfg.kill_grace_s);
    return json_pack("{s:s, s:I, s:i, s:s, s:i, s:i}", "type", "stop", "job_id", (json_int_t)job_id,
                     "attempt", attempt, "reason", reason, "kill_grace_s", grace, "signal", sig);
}

/* Whether node's agent has mentioned job's task there (reconcile.c marks
 * it): a job that is running, or a gang part it reported. */
static bool task_reported(const struct job *job, int64_t node_id)
{
    return job->nparts == 0 ? job->state != JOB_STARTING : job_part_reported(job, node_id);
}

json_t *api_agent_node_actions(struct server *srv, const struct node *node)
{
    json_t *actions = json_array();
    /* The node's jobs by the cluster's index: O(jobs there), not O(jobs). */
    int64_t some[64], *ids = some;
    size_t nids = cluster_node_job_ids(&srv->cluster, node->id, some, 64);
    if (nids > 64) {
        ids = malloc(nids * sizeof *ids);
        if (!ids) {
            json_decref(actions);
            return NULL;
        }
        cluster_node_job_ids(&srv->cluster, node->id, ids, nids);
    }
    for (size_t k = 0; actions && k < nids; k++) {
        const struct job *job = cluster_find_job(&srv->cluster, ids[k]);
        if (!job || !job_state_is_on_node(job->state) || job_part_exited(job, node->id))
            continue;
        json_t *msg = NULL;
        if (!task_reported(job, node->id)) {
            /* as reconcile_heartbeat: a start until the agent reports it */
            if (!job->cancel_requested && !job->gang_failed) {
                struct action a = {.type = ACTION_SEND_START, .job_id = job->id};
                msg = start_message(srv, (struct node *)node, &a);
            }
        } else if (job->cancel_requested) {
            msg = stop_message(srv, node, job->id, job->attempt, "cancelled");
        } else if (job->reclaim_requested) {
            msg = stop_message(srv, node, job->id, job->attempt, "idle reclaim");
        } else if (job->state == JOB_PREEMPTED) {
            msg = stop_message(srv, node, job->id, job->attempt, "preempted");
        } else if (job->gang_failed) {
            msg = stop_message(srv, node, job->id, job->attempt, "gang member failed");
        }
        if (msg)
            json_array_append_new(actions, msg);
    }
    if (ids != some)
        free(ids);
    return actions;
}

/* How long a heartbeat that reported an exit waits for the scheduling pass
 * it kicked, so that its reply carries what that pass decides for the node
 * (the next start, above all) instead of the long-poll answering it
 * separately: one request per job fewer. Bounded, as the agent's loop waits
 * for the reply; the wait answer still brings whatever comes later. */
#define REPORT_PASS_WAIT_MS 20

/* Whether jobs waited at the last pass (the next may then place one here):
 * its count, not a walk over every job the server holds, finished ones
 * too. Off only when a submit came after that pass; the long-poll then
 * brings the start. */
static bool jobs_waited(const struct server *srv)
{
    return srv->sched.norder > 0;
}

/* Adds to actions the node's starts and stops (api_agent_node_actions)
 * that it does not hold yet, by type and job. */
static void add_node_actions(struct server *srv, const struct node *node, json_t *actions)
{
    json_t *more = api_agent_node_actions(srv, node);
    size_t i, k;
    json_t *m, *a;
    json_array_foreach(more, i, m)
    {
        const char *type = json_string_value(json_object_get(m, "type"));
        json_int_t job_id = json_integer_value(json_object_get(m, "job_id"));
        bool have = false;
        json_array_foreach(actions, k, a)
        {
            const char *t = json_string_value(json_object_get(a, "type"));
            if (t && type && !strcmp(t, type) &&
                json_integer_value(json_object_get(a, "job_id")) == job_id)
                have = true;
        }
        if (!have)
            json_array_append(actions, m);
    }
    json_decref(more);
}

/* A heartbeat waiting for the next scheduling pass (await_pass), in
 * srv->report_waiters. */
struct report_waiter {
    int64_t node_id;
    json_t *actions; /* its reply's, which the pass adds to */
    bool done;       /* the pass added them and marked them delivered */
    struct report_waiter *next;
};

/* The scheduler thread holds srv->lock from its pass through the apply, so
 * every heartbeat waiting now recorded its exit before this pass began:
 * this is the pass each waits for. */
void api_agent_actions_applying(struct server *srv)
{
    for (struct report_waiter *w = srv->report_waiters; w; w = w->next)
        agent_wake_hold(srv, w->node_id);
}

void api_agent_actions_applied(struct server *srv)
{
    for (struct report_waiter *w = srv->report_waiters; w; w = w->next) {
        const struct node *node = cluster_find_node(&srv->cluster, w->node_id);
        if (node)
            add_node_actions(srv, node, w->actions);
        agent_wake_delivered(srv, w->node_id); /* also ends the hold */
        w->done = true;
    }
    if (srv->report_waiters)
        pthread_cond_broadcast(&srv->report_pass);
}

/* Waits, lock held (released meanwhile), until the next scheduling pass has
 * added what it decided for node_id to actions, or REPORT_PASS_WAIT_MS. */
static void await_pass(struct server *srv, int64_t node_id, json_t *actions)
{
    struct report_waiter w = {.node_id = node_id, .actions = actions, .next = srv->report_waiters};
    srv->report_waiters = &w;
    struct timespec until = clock_in_us(CLOCK_MONOTONIC, (int64_t)REPORT_PASS_WAIT_MS * 1000);
    while (!w.done && !srv->stopping)
        if (pthread_cond_timedwait(&srv->report_pass, &srv->lock, &until) == ETIMEDOUT)
            break;
    struct report_waiter **p = &srv->report_waiters;
    while (*p != &w)
        p = &(*p)->next;
    *p = w.next;
}

/* A heartbeat's numbering: its agent run and its number (docs/api.md). */
struct heartbeat_number {
    char run[sizeof((struct node *)0)->heartbeat_run]; /* "": not numbered */
    long long seq;
    int64_t arrived_ms; /* monotonic, taken before the lock */
};

/* A heartbeat older than one already read from its agent: of the same run
 * with a lower number (it waited for the lock while a newer one went
 * first, its agent having timed it out), or of another run that arrived
 * before the current run's first was read (the agent restarted
 * meanwhile). Its task list is out of date, and read now it would take a
 * task started since for one that vanished. Otherwise notes it as the
 * node's latest. A heartbeat without "run" and "seq" is never stale. */
static bool heartbeat_is_stale(struct node *node, const struct heartbeat_number *h)
{
    if (!h->run[0] || !h->seq)
        return false;
    bool same_run = !strcmp(h->run, node->heartbeat_run);
    if (same_run ? h->seq < node->heartbeat_seq : h->arrived_ms < node->heartbeat_run_ms)
        return true;
    if (!same_run) {
        snprintf(node->heartbeat_run, sizeof node->heartbeat_run, "%s", h->run);
        node->heartbeat_run_ms = h->arrived_ms;
    }
    node->heartbeat_seq = h->seq;
    return false;
}

int api_agent_heartbeat(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    if (req->token.kind != TOKEN_NODE)
        return api_error_msg(reply, TIDE_EPERM, NULL, "heartbeats need a node token");
    json_t *body = parse_body(req, reply);
    if (!body)
        return 0;
    static struct task_report reports[MAX_TASKS_PER_HEARTBEAT];
    struct tide_err err;
    tide_err_clear(&err);
    int64_t now = clock_now_ms();
    struct heartbeat_number number = {.arrived_ms = clock_mono_ms()};
    bool stopping;
    if (run_field(body, number.run, sizeof number.run, reply) ||
        stopping_field(body, &stopping, reply) ||
        bounded_field(body, "seq", 1, INT64_MAX, 0, "", &number.seq, reply)) {
        json_decref(body);
        return 0;
    }
    pthread_mutex_lock(&srv->lock);
    size_t nreports = 0;
    struct node *node = cluster_find_node(&srv->cluster, req->token.node_id);
    if (!node) {
        pthread_mutex_unlock(&srv->lock);
        json_decref(body);
        return api_error_msg(reply, TIDE_EAUTH, NULL, "unknown node: register again");
    }
    if (heartbeat_is_stale(node, &number)) {
        pthread_mutex_unlock(&srv->lock);
        json_decref(body);
        return api_error_msg(reply, TIDE_ECONFLICT, "seq",
                             "stale heartbeat: a newer one from this agent was already read");
    }
    agent_wake_hold(srv, node->id); /* the reply carries what this heartbeat decides */
    if (parse_reports(json_object_get(body, "tasks"), reports, &nreports, reply) != 0) {
        agent_wake_delivered(srv, node->id); /* no wake storm for a refused heartbeat */
        pthread_mutex_unlock(&srv->lock);
        json_decref(body);
        return 0;
    }
    if (update_telemetry(node, json_object_get(body, "gpus"), reply) != 0 ||
        read_images(node, json_object_get(body, "images"), reply) != 0) {
        agent_wake_delivered(srv, node->id);
        pthread_mutex_unlock(&srv->lock);
        json_decref(body);
        return 0;
    }
    action_list_clear(&srv->actions);
    static struct health_notes health;
    if (api_health_from_heartbeat(srv, node, body, now, &srv->actions, &health, reply) != 0) {
        agent_wake_delivered(srv, node->id); /* ends the hold, as above */
        pthread_mutex_unlock(&srv->lock);
        json_decref(body);
        return 0;
    }
    /* The answer acknowledges the exits reported here and their logs' last
     * bytes, after which the agent forgets those tasks: their logs go to
     * disk first (off the lock, below), as do the later bytes of tasks it
     * already forgot. Copied: reports is static. */
    struct task_report_key ended[MAX_FLUSHES];
    size_t nended = 0;
    json_t *offsets = store_log_chunks(srv, node, json_object_get(body, "logs"), ended, &nended);
    for (size_t i = 0; i < nreports; i++)
        if (reports[i].exited)
            flush_later(ended, &nended, reports[i].job_id, reports[i].attempt);
    node->agent_stopping = stopping;
    node->heard_mono_ms = number.arrived_ms; /* monotonic, as it arrived */
    int rc = reconcile_heartbeat(&srv->cluster, node, reports, nreports, now, &srv->actions);
    if (rc)
        tide_err_set(&err, rc, NULL, "out of memory");
    if (!rc)
        rc = apply_actions_deferred(srv, &srv->actions, now, &err);
    if (!rc && (health.nfaults || health.probe))
        rc = api_health_persist(srv, req->token.node_id, &health, now, &err);
    json_t *actions = json_array(), *acks = json_array();
    bool kick = false;
    /* The node pointer may have moved if the apply reloaded the cluster. */
    node = cluster_find_node(&srv->cluster, req->token.node_id);
    for (size_t i = 0; !rc && node && i < srv->actions.len; i++) {
        const struct action *a = &srv->actions.items[i];
        switch (a->type) {
        case ACTION_SEND_START: {
            json_t *msg = start_message(srv, node, a);
            if (msg)
                json_array_append_new(actions, msg);
            break;
        }
        case ACTION_SEND_STOP:
            json_array_append_new(actions,
                                  stop_message(srv, node, a->job_id, a->attempt, a->reason));
            break;
        case ACTION_ACK:
            json_array_append_new(acks, json_pack("{s:I, s:i}", "job_id", (json_int_t)a->job_id,
                                                  "attempt", a->attempt));
            break;
        case ACTION_FINISH:
        case ACTION_REQUEUE:
        case ACTION_NODE_BACK:
        case ACTION_PREEMPT:
            kick = true;
            break;
        default:
            break;
        }
    }
    if (kick)
        sched_loop_kick(srv);
    /* A gang member's exit stops its others: their agents hear now. */
    for (size_t i = 0; !rc && i < srv->actions.len; i++)
        if (srv->actions.items[i].type == ACTION_ACK)
            agent_wake_job(srv, srv->actions.items[i].job_id);
    /* An exit freed room here and jobs wait: the pass just kicked will
     * likely start one on this node, and this reply can carry it (srv->
     * actions is another heartbeat's once the lock is let go). */
    if (!rc && kick && node && jobs_waited(srv)) {
        /* what it holds so far, so the long-poll woken by its own apply
         * does not answer while it waits */
        agent_wake_delivered(srv, req->token.node_id);
        await_pass(srv, req->token.node_id, actions);
    }
    /* This reply carries all that is decided for the node so far: also what
     * other threads decided for it (a cancel, a gang member's stop) while
     * this heartbeat applied or waited, which its own actions lack. The
     * node's state says it all, as a wait answer's does. */
    node = cluster_find_node(&srv->cluster, req->token.node_id);
    if (!rc && node)
        add_node_actions(srv, node, actions);
    uint64_t decision = agent_wake_delivered(srv, req->token.node_id);
    pthread_mutex_unlock(&srv->lock);
    json_decref(body);
    for (size_t i = 0; !rc && i < nended; i++) { /* a failure: the agent sends it all again */
        int e = log_store_sync(srv->cfg.data_dir, ended[i].job_id, ended[i].attempt);
        if (e > 0)
            __atomic_fetch_add(&srv->log_syncs, 1, __ATOMIC_RELAXED);
        else if (e < 0)
            rc = tide_err_set(&err, TIDE_EIO, NULL, "cannot flush the log of job %lld to disk: %s",
                              (long long)ended[i].job_id, strerror(-e));
    }
    if (rc) {
        json_decref(actions);
        json_decref(acks);
        json_decref(offsets);
        return api_error(reply, &err);
    }
    api_agent_make_checkpoint_dirs(srv, actions);
    /* epoch: agents ignore replies of a deposed leader (docs/ha.md);
     * decision: and wait answers derived before this reply */
    reply->json = json_pack("{s:o, s:o, s:o, s:I, s:I, s:I}", "actions", actions, "ack", acks,
                            "log_offsets", offsets, "node_timeout_ms",
                            (json_int_t)srv->cfg.node_timeout_ms, "epoch",
                            (json_int_t)lead_epoch(&srv->lead), "decision", (json_int_t)decision);
    return 0;
}

/* The body parsers above, callable without a server (server.h); the fuzz
 * harnesses in tests/fuzz/ drive them. */
int api_agent_parse_registration(json_t *body, struct node *node, struct api_reply *reply)
{
    return node_from_registration(body, node, reply);
}

int api_agent_parse_reports(json_t *tasks, struct task_report *out, size_t *n,
                            struct api_reply *reply)
{
    return parse_reports(tasks, out, n, reply);
}

int api_agent_update_telemetry(struct node *node, json_t *gpus, struct api_reply *reply)
{
    return update_telemetry(node, gpus, reply);
}
