/*
 * Carrying out the core's decisions durably: each action list becomes one
 * transaction of job-row updates and events. Messages for agents
 * (send_start, send_stop, ack) are not persisted; the heartbeat reply
 * carries them after this commit.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "core/image.h"
#include "server/agent_wake.h"
#include "server/server.h"
#include "store/store_health.h"
#include "store/store_events.h"
#include "store/store_pools.h"

/* [[node_id, [gpu, ...]], ...] for a gang job's other nodes (new reference). */
static json_t *gang_parts_json(const struct job *job)
{
    json_t *parts = json_array();
    for (int i = 0; i < job->nparts; i++) {
        int idx[TIDE_MAX_GPUS_PER_NODE];
        int n = job_gpus_on_node(job, job->parts[i].node_id, idx);
        json_t *gpus = json_array();
        for (int k = 0; k < n; k++)
            json_array_append_new(gpus, json_integer(idx[k]));
        json_array_append_new(parts, json_pack("[I, o]", (json_int_t)job->parts[i].node_id, gpus));
    }
    return parts;
}

/* For a containerised job's start event: whether its node held the image. */
static const char *image_words(struct server *srv, const struct job *job, int64_t node_id)
{
    if (!job || !job->image_key)
        return "";
    const struct node *node = cluster_find_node(&srv->cluster, node_id);
    return node && image_node_holds(node, job->image_key) ? ", image cached"
                                                          : ", image not cached (pulled on start)";
}

static int apply_one(struct server *srv, const struct action *a, int64_t now_ms,
                     struct tide_err *err)
{
    struct store *st = srv->store;
    struct job_update u = {.job_id = a->job_id, .attempt = -1, .node_id = -1, .exit_code = -2,
                           .signal = -1, .cancel_requested = -1, .reason = a->reason};
    switch (a->type) {
    case ACTION_START: {
        struct job *job = cluster_find_job(&srv->cluster, a->job_id);
        u.state = JOB_STARTING;
        u.attempt = a->attempt;
        u.node_id = a->node_id;
        if (job) {
            u.gpus = job->gpu_index;
            u.ngpus = job->ngpus_assigned;
        }
        u.exit_code = -1;
        u.signal = 0;
        u.end_ms = 0;
        json_t *parts = job && job->nparts ? gang_parts_json(job) : NULL;
        u.parts = parts;
        int rc = store_job_update(st, &u, err);
        json_decref(parts);
        char msg[TIDE_REASON_MAX + 64];
        snprintf(msg, sizeof msg, "%s (attempt %d)%s", a->reason, a->attempt,
                 image_words(srv, job, a->node_id));
        return rc ? rc : store_event_add(st, now_ms, "job_starting", a->job_id, a->node_id, msg, err);
    }
    case ACTION_RUNNING: {
        u.state = JOB_RUNNING;
        char reason[TIDE_REASON_MAX];
        struct node *node = cluster_find_node(&srv->cluster, a->node_id);
        snprintf(reason, sizeof reason, "running on %s (attempt %d)", node ? node->name : "?",
                 a->attempt);
        u.reason = reason;
        u.start_ms = now_ms;
        int rc = store_job_update(st, &u, err);
        return rc ? rc : store_event_add(st, now_ms, "job_running", a->job_id, a->node_id, reason, err);
    }
    case ACTION_FINISH: {
        u.state = a->state;
        u.exit_code = a->exit_code;
        u.signal = a->signal;
        u.end_ms = now_ms;
        if (a->node_id) /* a task may end before it was ever reported running */
            u.start_ms = -now_ms;
        int rc = store_job_update(st, &u, err);
        char kind[48];
        snprintf(kind, sizeof kind, "job_%s", job_state_name(a->state));
        return rc ? rc : store_event_add(st, now_ms, kind, a->job_id, a->node_id, a->reason, err);
    }
    case ACTION_REQUEUE: {
        u.state = JOB_PENDING;
        u.node_id = 0;
        u.exit_code = a->exit_code;
        u.signal = a->signal;
        int rc = store_job_update(st, &u, err);
        /* as sched_fail_attempt counted it in memory: no retry used for a
         * preemption or a loss; the losses in a row */
        const struct job *job = cluster_find_job(&srv->cluster, a->job_id);
        if (!rc && job)
            rc = store_job_count_attempt(st, a->job_id,
                                         a->state == JOB_PREEMPTED || a->state == JOB_LOST,
                                         job->lost_attempts, err);
        if (!rc && a->not_before_ms)
            rc = store_job_set_restart_after(st, a->job_id, a->not_before_ms, err);
        char msg[TIDE_REASON_MAX + 48];
        snprintf(msg, sizeof msg, "attempt %d %s: %s", a->attempt, job_state_name(a->state),
                 a->reason);
        return rc ? rc : store_event_add(st, now_ms, "job_requeued", a->job_id, a->node_id, msg, err);
    }
    case ACTION_PREEMPT: {
        u.state = JOB_PREEMPTED;
        int rc = store_job_update(st, &u, err);
        return rc ? rc : store_event_add(st, now_ms, "job_preempted", a->job_id, a->node_id, a->reason, err);
    }
    case ACTION_IDLE_WARN:
        return store_event_add(st, now_ms, "job_idle_warning", a->job_id, a->node_id, a->reason, err);
    case ACTION_PART_EXITED: {
        const struct job *job = cluster_find_job(&srv->cluster, a->job_id);
        return job ? store_job_gang_save(st, job, err) : 0;
    }
    case ACTION_NODE_LOST: {
        int rc = store_node_set_state(st, a->node_id, NODE_LOST, err);
        return rc ? rc : store_event_add(st, now_ms, "node_lost", 0, a->node_id, a->reason, err);
    }
    case ACTION_NODE_BACK: {
        /* A drained node comes back draining (core/operator.h). */
        struct node *node = cluster_find_node(&srv->cluster, a->node_id);
        int rc = store_node_set_state(st, a->node_id, node ? node->state : NODE_READY, err);
        return rc ? rc : store_event_add(st, now_ms, "node_back", 0, a->node_id, a->reason, err);
    }
    case ACTION_NODE_STOPPING: {
        int rc = store_node_set_state(st, a->node_id, NODE_STOPPING, err);
        return rc ? rc : store_event_add(st, now_ms, "node_stopping", 0, a->node_id, a->reason, err);
    }
    case ACTION_SEND_START:
    case ACTION_SEND_STOP:
    case ACTION_ACK:
        return 0;
    }
    return 0;
}

int server_reload_cluster(struct server *srv, int64_t now_ms, struct tide_err *err)
{
    /* Loaded aside and put in place whole: a load that fails halfway
     * leaves the cluster as it was, never nodes without their jobs. */
    struct cluster fresh;
    cluster_init(&fresh);
    /* Passes sort (ties by id), and agents' messages go by the per-node
     * index in id order: nothing needs the jobs in submission order, and
     * keeping it made each finished job move every later one (O(jobs),
     * under the lock). */
    fresh.jobs_any_order = true;
    int rc = store_nodes_load(srv->store, &fresh, now_ms, err);
    if (!rc) /* which pool each node belongs to */
        rc = store_pool_nodes_load(srv->store, &fresh, NULL, NULL, err);
    if (!rc)
        rc = store_gpu_faults_load(srv->store, &fresh, err);
    if (!rc)
        rc = store_jobs_load_active(srv->store, &fresh, err);
    /* What a job takes from its queue and its project rather than its spec. */
    for (size_t i = 0; !rc && i < fresh.njobs; i++) {
        struct job *job = &fresh.jobs[i];
        const struct queue_config *q = queue_find(&srv->cfg.queues, job->queue);
        /* a running job's is what it was when it started: its run is no wait */
        job->effective_priority = queue_effective_priority(
            q, job, job_state_is_on_node(job->state) && job->start_ms ? job->start_ms : now_ms);
        job->rules = q;
        if (q) {
            job->idle_util_pct = q->idle_util_pct;
            job->idle_after_s = q->idle_after_s;
        }
    }
    if (!rc && fairshare_mark_borrowed(&srv->cfg.fairshare, &fresh) != 0)
        rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    if (rc) {
        cluster_release(&fresh);
        return rc;
    }
    /* Which heartbeat of each agent was read last is not stored: kept
     * across the reload, so an older heartbeat still on its way (its task
     * list predating a start) is refused as before (api_agent.c). */
    for (size_t i = 0; i < fresh.nnodes; i++) {
        struct node *n = &fresh.nodes[i];
        const struct node *old = cluster_find_node(&srv->cluster, n->id);
        if (!old)
            continue;
        memcpy(n->heartbeat_run, old->heartbeat_run, sizeof n->heartbeat_run);
        n->heartbeat_seq = old->heartbeat_seq;
        n->heartbeat_run_ms = old->heartbeat_run_ms;
        n->agent_stopping = old->agent_stopping;
        n->heard_mono_ms = old->heard_mono_ms;
        if (old->heard_mono_ms)
            n->last_heartbeat_ms = old->last_heartbeat_ms;
    }
    cluster_release(&srv->cluster);
    srv->cluster = fresh;
    return 0;
}

void server_resync_cluster(struct server *srv, int64_t now_ms)
{
    struct tide_err err;
    tide_err_clear(&err);
    if (server_reload_cluster(srv, now_ms, &err) == 0)
        return;
    /* The cache holds what the store refused: acting on it could stop
     * tasks that run, forget exits that were never stored, or place jobs
     * on GPUs that are busy. A restart loads what is stored. */
    log_error("reloading the cluster from the database failed too (%s): stopping at once; "
              "restart this server",
              err.message);
    fflush(NULL);
    _exit(3);
}

/* Classifies how an attempt ended, for tide_job_failures_total. */
static int failure_class(const struct action *a)
{
    if (a->type == ACTION_FINISH && a->state == JOB_TIMEOUT)
        return FAILURE_TIMEOUT;
    if (a->type == ACTION_REQUEUE && a->state == JOB_PREEMPTED)
        return FAILURE_PREEMPTED;
    if ((a->type == ACTION_FINISH && a->state == JOB_FAILED) || a->type == ACTION_REQUEUE) {
        if (strstr(a->reason, "node lost") || strstr(a->reason, "vanished"))
            return FAILURE_NODE_LOST;
        if (strstr(a->reason, "oom"))
            return FAILURE_OOM;
        if (strstr(a->reason, "idle reclaim"))
            return FAILURE_IDLE_RECLAIM;
        if (a->signal > 0 || strstr(a->reason, "signal"))
            return FAILURE_SIGNAL;
        if (strstr(a->reason, "start failed"))
            return FAILURE_START;
        return FAILURE_EXIT;
    }
    return -1;
}

const char *const failure_class_names[FAILURE_CLASS_COUNT] = {
    [FAILURE_EXIT] = "exit",           [FAILURE_SIGNAL] = "signal",
    [FAILURE_OOM] = "oom",             [FAILURE_NODE_LOST] = "node_lost",
    [FAILURE_TIMEOUT] = "timeout",     [FAILURE_PREEMPTED] = "preempted",
    [FAILURE_IDLE_RECLAIM] = "idle_reclaim", [FAILURE_START] = "start_failed",
};

/* After the commit: a first start is a job's wait, a finish is counted by
 * state and queue (the job has left the cluster: its queue is read back). */
static void count_for_metrics(struct server *srv, const struct action *a, int64_t now_ms)
{
    if (a->type == ACTION_START) {
        const struct job *job = cluster_find_job(&srv->cluster, a->job_id);
        const struct node *node = cluster_find_node(&srv->cluster, a->node_id);
        if (job && job->image_key && node)
            metrics_image_placed(&srv->metrics, image_node_holds(node, job->image_key));
    }
    if (a->type == ACTION_START && a->attempt == 1) {
        const struct job *job = cluster_find_job(&srv->cluster, a->job_id);
        if (job)
            metrics_job_started(&srv->metrics, job->queue,
                                (double)(now_ms - job->submit_ms) / 1000.0);
    } else if (a->type == ACTION_FINISH) {
        char queue[TIDE_NAME_MAX];
        struct tide_err err;
        if (store_job_queue(srv->store, a->job_id, queue, &err) != 0)
            snprintf(queue, sizeof queue, "unknown");
        metrics_job_finished(&srv->metrics, queue, a->state);
    }
}

static int apply_and_commit(struct server *srv, const struct action_list *actions, int64_t now_ms,
                            bool deferred, struct tide_err *err)
{
    bool durable = false;
    for (size_t i = 0; i < actions->len && !durable; i++)
        durable = actions->items[i].type != ACTION_SEND_START &&
                  actions->items[i].type != ACTION_SEND_STOP && actions->items[i].type != ACTION_ACK;
    if (!durable)
        return 0;
    int rc = store_begin(srv->store, err);
    for (size_t i = 0; !rc && i < actions->len; i++)
        rc = apply_one(srv, &actions->items[i], now_ms, err);
    if (!rc)
        rc = deferred ? store_commit_deferred(srv->store, err) : store_commit(srv->store, err);
    if (!rc)
        eta_refresh_learn(srv, actions, now_ms);
    for (size_t i = 0; !rc && i < actions->len; i++) {
        /* their agents hear of it now, not at their next heartbeat */
        agent_wake_node(srv, actions->items[i].node_id);
        agent_wake_job(srv, actions->items[i].job_id);
        int cls = failure_class(&actions->items[i]);
        if (cls >= 0)
            srv->failures[cls]++;
        count_for_metrics(srv, &actions->items[i], now_ms);
    }
    if (rc) {
        store_rollback(srv->store);
        log_error("persisting %zu actions failed (%s); reloading state from the database",
                  actions->len, err ? err->message : "?");
        server_resync_cluster(srv, now_ms);
    }
    return rc;
}

int apply_actions(struct server *srv, const struct action_list *actions, int64_t now_ms,
                  struct tide_err *err)
{
    return apply_and_commit(srv, actions, now_ms, false, err);
}

int apply_actions_deferred(struct server *srv, const struct action_list *actions, int64_t now_ms,
                           struct tide_err *err)
{
    return apply_and_commit(srv, actions, now_ms, true, err);
}
