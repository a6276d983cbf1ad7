/* Operator actions on jobs and nodes (see operator.h). */
#include "core/operator.h"

#include <stdio.h>
#include <string.h>

#include "core/gpu_health.h"
#include "core/sched.h"
#include "core/core_banned.h"

static struct job *active_job(struct cluster *c, int64_t job_id, struct tide_err *err)
{
    struct job *job = cluster_find_job(c, job_id);
    if (!job)
        tide_err_set(err, TIDE_ENOENT, "id", "job %lld is not waiting or running",
                     (long long)job_id);
    return job;
}

int operator_hold_job(struct cluster *c, int64_t job_id, const char *reason, struct tide_err *err)
{
    struct job *job = active_job(c, job_id, err);
    if (!job)
        return TIDE_ENOENT;
    if (job->state != JOB_PENDING)
        return tide_err_set(err, TIDE_ECONFLICT, "id",
                            "job %lld is %s: only a pending job can be held (requeue it first)",
                            (long long)job_id, job_state_name(job->state));
    if (job->on_hold)
        return tide_err_set(err, TIDE_ECONFLICT, "id", "job %lld is already held",
                            (long long)job_id);
    job->on_hold = true;
    job->reserved_start_ms = 0;
    job->reserved_node_id = 0;
    snprintf(wait_reason_text(job), sizeof job->wait_reason, "held: %.150s",
             reason && *reason ? reason : "by operator");
    return 0;
}

int operator_release_job(struct cluster *c, int64_t job_id, struct tide_err *err)
{
    struct job *job = active_job(c, job_id, err);
    if (!job)
        return TIDE_ENOENT;
    if (!job->on_hold)
        return tide_err_set(err, TIDE_ECONFLICT, "id", "job %lld is not held", (long long)job_id);
    job->on_hold = false;
    snprintf(wait_reason_text(job), sizeof job->wait_reason, "released; waiting for the next pass");
    return 0;
}

int operator_requeue_job(struct cluster *c, int64_t job_id, const char *reason,
                         struct action_list *out, struct tide_err *err)
{
    struct job *job = active_job(c, job_id, err);
    if (!job)
        return TIDE_ENOENT;
    if (job->state != JOB_STARTING && job->state != JOB_RUNNING)
        return tide_err_set(err, TIDE_ECONFLICT, "id",
                            "job %lld is %s: only a starting or running job can be requeued",
                            (long long)job_id, job_state_name(job->state));
    if (job->cancel_requested || job->gang_failed || job->reclaim_requested)
        return tide_err_set(err, TIDE_ECONFLICT, "id", "job %lld is already being stopped",
                            (long long)job_id);
    struct action *a = action_push_preempt(out, job);
    if (!a)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    snprintf(a->reason, sizeof a->reason, "requeued: %.140s",
             reason && *reason ? reason : "by operator");
    snprintf(job->requeue_reason, sizeof job->requeue_reason, "%s", a->reason);
    return 0;
}

/* The node, if it exists and was joined by hand (pool nodes are the autoscaler's). */
static int hand_joined_node(struct cluster *c, int64_t node_id, const char *what, struct node **out,
                            struct tide_err *err)
{
    struct node *node = cluster_find_node(c, node_id);
    *out = node;
    if (!node)
        return tide_err_set(err, TIDE_ENOENT, "node", "node %lld does not exist",
                            (long long)node_id);
    if (node->pool[0])
        return tide_err_set(err, TIDE_ECONFLICT, "node",
                            "node %s belongs to pool %s, whose autoscaler %s its nodes", node->name,
                            node->pool, what);
    return 0;
}

int operator_drain_node(struct cluster *c, int64_t node_id, const char *reason,
                        struct tide_err *err)
{
    struct node *node;
    int rc = hand_joined_node(c, node_id, "drains", &node, err);
    if (rc)
        return rc;
    if (node->drained)
        return tide_err_set(err, TIDE_ECONFLICT, "node", "node %s is already drained", node->name);
    node->drained = true;
    snprintf(node->drain_reason, sizeof node->drain_reason, "%s",
             reason && *reason ? reason : "drained by operator");
    if (node->state == NODE_READY)
        node->state = NODE_DRAINING;
    return 0;
}

int operator_undrain_node(struct cluster *c, int64_t node_id, struct tide_err *err)
{
    struct node *node = cluster_find_node(c, node_id);
    if (!node)
        return tide_err_set(err, TIDE_ENOENT, "node", "node %lld does not exist",
                            (long long)node_id);
    bool faults = gpu_health_faulty_count(node) > 0 || node->health_failed;
    if (node->pool[0] && (node->state == NODE_FAILED || node->state == NODE_RELEASED))
        return tide_err_set(err, TIDE_ECONFLICT, "node", "node %s is %s: its provider deletes it",
                            node->name, node_state_name(node->state));
    /* A pool's node is drained by hand only through health (gpu_health.h). */
    if (node->pool[0] && !node->drained && !faults)
        return tide_err_set(err, TIDE_ECONFLICT, "node",
                            "node %s belongs to pool %s, whose autoscaler drains its nodes",
                            node->name, node->pool);
    if (!node->drained && !faults)
        return tide_err_set(err, TIDE_ECONFLICT, "node", "node %s is not drained", node->name);
    gpu_health_clear(node);
    /* a pool node its autoscaler is draining (not drained) stays draining */
    bool lift = node->drained || !node->pool[0];
    node->drained = false;
    node->drain_reason[0] = '\0';
    if (lift && (node->state == NODE_DRAINING || node->state == NODE_FAILED))
        node->state = NODE_READY;
    return 0;
}

int operator_node_jobs(const struct cluster *c, int64_t node_id)
{
    int n = 0;
    for (size_t i = 0; i < c->njobs; i++)
        if (job_state_is_on_node(c->jobs[i].state) && job_on_node(&c->jobs[i], node_id) &&
            !job_part_exited(&c->jobs[i], node_id))
            n++;
    return n;
}

int operator_remove_node(struct cluster *c, int64_t node_id, int64_t now_ms, int64_t stop_ms,
                         struct action_list *out, struct tide_err *err)
{
    struct node *node;
    int rc = hand_joined_node(c, node_id, "deletes", &node, err);
    if (rc)
        return rc;
    char why[TIDE_REASON_MAX];
    snprintf(why, sizeof why, "node %s deleted", node->name);
    int64_t stopped_by = node->state == NODE_LOST ? 0 : node->last_heartbeat_ms + stop_ms;
    int moved = 0;
    for (size_t j = 0; j < c->njobs;) {
        struct job *job = &c->jobs[j];
        /* a gang part ended there (its node was lost) leaves the job to its
         * other ranks, whose GPUs it keeps until they have stopped */
        if (!job_state_is_on_node(job->state) || !job_on_node(job, node_id) ||
            job_part_exited(job, node_id)) {
            j++;
            continue;
        }
        size_t before = out->len;
        /* Passing through "preempted" is what makes the requeue use no retry. */
        int64_t job_id = job->id;
        job->state = JOB_PREEMPTED;
        sched_fail_attempt(c, job, JOB_PREEMPTED, JOB_FAILED, why, -1, 0, now_ms, out);
        if (out->len == before)
            return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        struct job *again = cluster_find_job(c, job_id); /* requeued, unless it ended */
        if (again && again->restart_after_ms < stopped_by) {
            again->restart_after_ms = stopped_by;
            for (size_t k = before; k < out->len; k++) /* kept with the requeue */
                if (out->items[k].type == ACTION_REQUEUE && out->items[k].job_id == job_id)
                    out->items[k].not_before_ms = stopped_by;
        }
        moved++;
        /* Requeued (now off the node) or removed: look at index j again. */
    }
    cluster_remove_node(c, node_id);
    return moved;
}
