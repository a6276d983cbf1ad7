/* Building heartbeats and applying their replies (agent_heartbeat.h). */
#include "agent/agent_heartbeat.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_actions.h"
#include "agent/agent_images.h"
#include "agent/log_spares.h"
#include "agent/task_log.h"
#include "common/fsutil.h"
#include "common/http_client.h"
#include "common/log.h"

#define HEARTBEAT_TIMEOUT_MS 5000
#define HEARTBEAT_MIN_TIMEOUT_MS 100
/* Heartbeats an acknowledged task waits for the server to take the rest of
 * its log before the agent gives up on it. */
#define DRAIN_MAX_TRIES 5

static json_t *gpus_json(struct agent *a)
{
    json_t *arr = json_array();
    if (!arr || a->gpus.count == 0)
        return arr;
    struct gpu_claim claims[AGENT_MAX_TASKS];
    size_t n = 0;
    for (size_t i = 0; i < a->ntasks; i++) {
        struct agent_task *t = a->tasks[i];
        if (t->state == AGENT_TASK_RUNNING && t->ngpus)
            claims[n++] = (struct gpu_claim){t->gpus, t->ngpus, t->telemetry_file,
                                             &t->telemetry_reading, t->jobs_dir, t->job_id};
    }
    struct tide_err err;
    tide_err_clear(&err);
    if (a->gpus.ops->sample(&a->gpus, claims, n, a->telemetry, &err) != 0) {
        /* no telemetry this time is better than no heartbeat */
        log_warn("GPU telemetry: %s", err.message);
        return arr;
    }
    bool health = a->gpus.ops->health != NULL;
    if (health && a->gpus.ops->health(&a->gpus, a->health, &err) != 0)
        log_warn("GPU health: %s", err.message); /* what could be read still counts */
    for (size_t i = 0; i < a->gpus.count; i++) {
        const struct gpu_telemetry *t = &a->telemetry[i];
        json_t *g =
            json_pack("{s:i, s:I, s:i, s:i, s:i}", "index", a->gpus.devices[i].index,
                      "memory_used_mib", (json_int_t)t->memory_used_mib, "utilization_pct",
                      t->utilization_pct, "temperature_c", t->temperature_c, "power_w", t->power_w);
        const struct gpu_health *h = &a->health[i];
        if (g && health && h->seq > 0 &&
            (json_object_set_new(g, "health", json_string("fault")) ||
             json_object_set_new(g, "fault", json_string(h->what)) ||
             json_object_set_new(g, "fault_seq", json_integer(h->seq)) ||
             json_object_set_new(g, "node_wide", json_boolean(h->node_wide)))) {
            json_decref(g);
            g = NULL;
        }
        if (!g || json_array_append_new(arr, g) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static json_t *task_json(const struct agent_task *t)
{
    if (t->state == AGENT_TASK_RUNNING)
        return json_pack("{s:I, s:I, s:s, s:i}", "job_id", (json_int_t)t->job_id, "attempt",
                         (json_int_t)t->attempt, "state", "running", "pid", (int)t->pid);
    return json_pack("{s:I, s:I, s:s, s:o, s:o, s:s}", "job_id", (json_int_t)t->job_id, "attempt",
                     (json_int_t)t->attempt, "state", "exited", "exit_code",
                     t->has_exit_code ? json_integer(t->exit_code) : json_null(), "signal",
                     t->has_signal ? json_integer(t->signal) : json_null(), "reason", t->reason);
}

/* Appends t's next log chunk (if any) to logs, within *budget bytes. A
 * running task whose log had nothing new is looked at again only after
 * recheck_ms: heartbeats follow every start and exit (milliseconds apart
 * under load), and a stat per task each time was most of the agent's file
 * system calls. An exited task's is read at every heartbeat until drained. */
static int add_log(json_t *logs, struct agent_task *t, size_t *budget, bool *more, int64_t now,
                   int64_t recheck_ms)
{
    size_t max = *budget < TASK_LOG_CHUNK_MAX ? *budget : TASK_LOG_CHUNK_MAX;
    if (max == 0) {
        *more = true;
        return 0;
    }
    bool running = t->state == AGENT_TASK_RUNNING;
    if (running && t->log_idle_ms && now - t->log_idle_ms < recheck_ms)
        return 0;
    char *data = NULL;
    size_t len = 0;
    bool left = false;
    int e = agent_task_log_chunk(t->log_path, t->log_acked, max, t->state == AGENT_TASK_EXITED,
                                 &data, &len, &left);
    if (e != 0) {
        log_warn("log %s: %s", t->log_path, strerror(-e));
        return 0;
    }
    if (left)
        *more = true;
    t->log_idle_ms = running && !data && !left ? now : 0;
    if (!data)
        return 0;
    size_t encoded = 0;
    size_t fits = agent_task_log_fit_json(data, len, max, &encoded);
    if (fits < len)
        *more = true; /* the rest goes in a later heartbeat */
    if (fits == 0) {
        free(data);
        return 0;
    }
    json_t *chunk =
        json_pack("{s:I, s:I, s:I, s:s%}", "job_id", (json_int_t)t->job_id, "attempt",
                  (json_int_t)t->attempt, "offset", (json_int_t)t->log_acked, "data", data, fits);
    free(data);
    if (!chunk || json_array_append_new(logs, chunk) != 0)
        return TIDE_ENOMEM;
    *budget -= encoded;
    return 0;
}

char *agent_heartbeat_body(struct agent *a, bool *more_logs)
{
    *more_logs = false;
    json_t *gpus = gpus_json(a);
    json_t *tasks = json_array(), *logs = json_array();
    json_t *root = NULL;
    char *text = NULL;
    if (!gpus || !tasks || !logs)
        goto done;
    for (size_t i = 0; i < a->ntasks; i++) {
        if (a->tasks[i]->acked)
            continue;
        json_t *t = task_json(a->tasks[i]);
        if (!t || json_array_append_new(tasks, t) != 0)
            goto done;
    }
    size_t budget = HEARTBEAT_LOG_BUDGET;
    int64_t now = clock_mono_ms();
    /* each heartbeat on the interval looks at every log (a tenth of it is
     * slack for a heartbeat that comes a little early) */
    int64_t recheck_ms = a->heartbeat_ms > 1 ? a->heartbeat_ms * 9 / 10 : 1;
    /* start with a different task each time so one chatty task cannot
     * keep the others' output waiting */
    for (size_t k = 0; k < a->ntasks; k++) {
        struct agent_task *t = a->tasks[(a->log_rotate + k) % a->ntasks];
        if (add_log(logs, t, &budget, more_logs, now, recheck_ms) != 0)
            goto done;
    }
    a->log_rotate++;
    root = json_pack("{s:o, s:o, s:o, s:s, s:I}", "gpus", gpus, "tasks", tasks, "logs", logs,
                     "run", a->heartbeat_run, "seq", (json_int_t)++a->heartbeat_seq);
    gpus = tasks = logs = NULL; /* json_pack's "o" took them, even on failure */
    /* the server gives a stopping agent's node no new work */
    if (root && a->shutting_down && json_object_set_new(root, "stopping", json_true())) {
        json_decref(root);
        root = NULL;
    }
    if (root && a->probe.has_result &&
        json_object_set_new(root, "health_probe",
                            json_pack("{s:b, s:s}", "ok", a->probe.ok, "output", a->probe.output))) {
        json_decref(root);
        root = NULL;
    }
    agent_images_refresh(a, clock_mono_ms());
    json_t *images = agent_images_json(a);
    if (!root)
        json_decref(images);
    else if (images && json_object_set_new(root, "images", images) != 0)
        goto done;
    if (root)
        text = json_dumps(root, JSON_COMPACT);
done:
    json_decref(gpus);
    json_decref(tasks);
    json_decref(logs);
    json_decref(root);
    return text;
}

/* (job_id, attempt) of an ack or log_offsets entry. */
static bool entry_ids(json_t *e, int64_t *job_id, int64_t *attempt)
{
    json_t *j = json_object_get(e, "job_id"), *at = json_object_get(e, "attempt");
    if (!json_is_integer(j) || !json_is_integer(at))
        return false;
    *job_id = json_integer_value(j);
    *attempt = json_integer_value(at);
    return true;
}

static int64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

/* Removes a drained log, or keeps it for a later task where no process of
 * its own can still write to it. 0 or -errno. */
static int release_log(const struct agent_task *t)
{
    if (agent_task_log_reusable(t))
        return log_spares_put(t->log_path);
    return unlink(t->log_path) == 0 ? 0 : -errno;
}

/* Forgets acknowledged tasks once the server holds their whole log (or has
 * stopped taking it). */
static void forget_acked(struct agent *a, const int64_t *before)
{
    for (size_t i = a->ntasks; i-- > 0;) {
        struct agent_task *t = a->tasks[i];
        if (!t->acked)
            continue;
        if (t->log_acked == before[i])
            t->drain_tries++;
        else
            t->drain_tries = 0;
        bool drained = t->log_acked >= file_size(t->log_path);
        int e;
        if (!drained && t->drain_tries <= DRAIN_MAX_TRIES)
            continue;
        if (!drained)
            log_warn("job %" PRId64 ".%" PRId64 ": server stopped taking its log at byte %" PRId64
                     "; %s is kept",
                     t->job_id, t->attempt, t->log_acked, t->log_path);
        else if ((e = release_log(t)) != 0 && e != -ENOENT) /* the server holds all of it */
            log_warn("cannot remove %s: %s", t->log_path, strerror(-e));
        agent_drop_task(a, i);
    }
}

/* The reply body as JSON in *root when it is an object from the current
 * leader: TIDE_EINVAL when it is not JSON, TIDE_ECONFLICT when a deposed
 * leader sent it (docs/ha.md): neither its acks nor its actions count; the
 * current leader will say again what it wants. */
static int parse_current_reply(struct agent *a, const char *body, json_t **root)
{
    *root = json_loads(body, 0, NULL);
    if (!json_is_object(*root)) {
        json_decref(*root);
        return TIDE_EINVAL;
    }
    json_t *epoch = json_object_get(*root, "epoch");
    if (json_is_integer(epoch) && !agent_servers_epoch_ok(&a->servers, json_integer_value(epoch))) {
        json_decref(*root);
        return TIDE_ECONFLICT;
    }
    return 0;
}

/* The reply's "decision" (the node's count of server decisions it
 * reflects), 0 when it has none. */
static uint64_t decision_of(json_t *root)
{
    json_t *d = json_object_get(root, "decision");
    return json_is_integer(d) && json_integer_value(d) > 0 ? (uint64_t)json_integer_value(d) : 0;
}

static void apply_actions(struct agent *a, json_t *root, int64_t now_ms, bool *changed)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(root, "actions"), i, e)
    {
        if (agent_actions_apply(a, e, now_ms))
            *changed = true;
    }
}

int agent_heartbeat_apply_reply(struct agent *a, const char *body, int64_t now_ms, bool *changed)
{
    *changed = false;
    json_t *root;
    int rc = parse_current_reply(a, body, &root);
    if (rc)
        return rc;
    int64_t before[AGENT_MAX_TASKS];
    for (size_t i = 0; i < a->ntasks; i++)
        before[i] = a->tasks[i]->log_acked;
    size_t i;
    json_t *e;
    int64_t job_id, attempt;
    json_array_foreach(json_object_get(root, "log_offsets"), i, e)
    {
        json_t *off = json_object_get(e, "offset");
        struct agent_task *t;
        if (entry_ids(e, &job_id, &attempt) && json_is_integer(off) &&
            json_integer_value(off) >= 0 && (t = agent_find_task(a, job_id, attempt)))
            t->log_acked = json_integer_value(off);
    }
    json_array_foreach(json_object_get(root, "ack"), i, e)
    {
        struct agent_task *t;
        if (entry_ids(e, &job_id, &attempt) && (t = agent_find_task(a, job_id, attempt)) &&
            t->state == AGENT_TASK_EXITED)
            t->acked = true;
    }
    forget_acked(a, before);
    /* heartbeat replies come in order: each sets it, also lower (a new
     * server counts from 0) */
    a->last_decision = decision_of(root);
    json_t *timeout = json_object_get(root, "node_timeout_ms");
    if (json_is_integer(timeout) && json_integer_value(timeout) > 0 &&
        json_integer_value(timeout) <= INT32_MAX)
        a->node.node_timeout_ms = (int)json_integer_value(timeout);
    apply_actions(a, root, now_ms, changed);
    json_decref(root);
    return 0;
}

int agent_heartbeat_apply_actions(struct agent *a, const char *body, int64_t now_ms,
                                  bool *changed)
{
    *changed = false;
    json_t *root;
    int rc = parse_current_reply(a, body, &root);
    if (rc)
        return rc;
    uint64_t decision = decision_of(root);
    if (decision && decision < a->last_decision) {
        json_decref(root);
        return 1; /* derived before the last reply applied: stale */
    }
    if (decision)
        a->last_decision = decision;
    apply_actions(a, root, now_ms, changed);
    json_decref(root);
    return 0;
}

int agent_heartbeat_send(struct agent *a, int64_t now_ms, bool *changed, bool *more_logs,
                         struct tide_err *err)
{
    *changed = false;
    char *body = agent_heartbeat_body(a, more_logs);
    if (!body)
        return tide_err_set(err, TIDE_EIO, NULL, "heartbeat: out of memory");
    /* Never wait past the moment this node must fence itself (agent_loop.c). */
    int64_t timeout_ms = HEARTBEAT_TIMEOUT_MS, fence_at = agent_fence_at_ms(a);
    if (fence_at) {
        int64_t left = fence_at - now_ms;
        if (left < timeout_ms)
            timeout_ms = left > HEARTBEAT_MIN_TIMEOUT_MS ? left : HEARTBEAT_MIN_TIMEOUT_MS;
    }
    struct http_response resp;
    int rc = agent_servers_request(&a->servers, "POST", "/v1/agent/heartbeat", a->node.node_token,
                                   body, (int)timeout_ms, &resp, err);
    free(body);
    if (rc != 0)
        return TIDE_EIO;
    char msg[512];
    if (resp.status == 401) {
        rc = tide_err_set(err, TIDE_EAUTH, NULL, "heartbeat: node token refused");
    } else if (resp.status != 200) {
        rc = tide_err_set(err, TIDE_EIO, NULL, "heartbeat: %s",
                          agent_server_message(&resp, msg, sizeof msg));
    } else if ((rc = agent_heartbeat_apply_reply(a, resp.body, now_ms, changed)) == TIDE_ECONFLICT) {
        rc = tide_err_set(err, TIDE_EIO, NULL, "heartbeat: answered by a deposed leader; ignored");
    } else if (rc != 0) {
        rc = tide_err_set(err, TIDE_EIO, NULL, "heartbeat: the reply is not a JSON object");
    }
    http_response_release(&resp);
    return rc;
}
