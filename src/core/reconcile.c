/* Agent heartbeat → job state changes and agent messages. */
#include "core/reconcile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"
#include "common/utf8.h"
#include "core/sched.h"

#include "core/core_banned.h"

static int push(struct action_list *out, enum action_type type, const struct job *job,
                int64_t job_id, int attempt, int64_t node_id, const char *reason)
{
    struct action a = {.type = type, .job_id = job ? job->id : job_id,
                       .attempt = job ? job->attempt : attempt, .node_id = node_id,
                       .state = job ? job->state : JOB_PENDING, .exit_code = -1};
    snprintf(a.reason, sizeof a.reason, "%s", reason);
    return action_list_push(out, &a) ? 0 : TIDE_ENOMEM;
}

static void record_exit(struct cluster *c, struct job *job, const struct task_report *r,
                        int64_t now_ms, struct action_list *out)
{
    enum job_state final_state;
    if (job->state == JOB_PREEMPTED && !job->cancel_requested) {
        /* Even exit 0: a job told to checkpoint and stop is not done. */
        char why[TIDE_REASON_MAX], cause[121];
        utf8_copy(cause, sizeof cause, r->reason); /* the agent's words, cut on a character */
        if (job->requeue_reason[0]) /* who stopped it says more than the agent's "preempted" */
            snprintf(why, sizeof why, "%s", job->requeue_reason);
        else
            snprintf(why, sizeof why, "preempted (%s)", cause);
        sched_fail_attempt(c, job, JOB_PREEMPTED, JOB_FAILED, why, r->exit_code, r->signal,
                           now_ms, out);
        return;
    }
    if (!strcmp(r->reason, AGENT_STOPPED_REASON) && !job->cancel_requested) {
        /* Its agent was stopped (a restart, the machine going down) and
         * stopped it: as a preemption, it resumes from its checkpoint. */
        char why[TIDE_REASON_MAX];
        snprintf(why, sizeof why, "%s (%s %d)", AGENT_STOPPED_REASON, r->signal ? "signal" : "exit",
                 r->signal ? r->signal : r->exit_code);
        job->state = JOB_PREEMPTED;
        sched_fail_attempt(c, job, JOB_PREEMPTED, JOB_FAILED, why, r->exit_code, r->signal,
                           now_ms, out);
        return;
    }
    if (!strncmp(r->reason, "fenced", 6) && !job->cancel_requested) {
        /* Its agent lost the server and stopped it: the node's fault, not the job's. */
        sched_fail_attempt(c, job, JOB_LOST, JOB_FAILED, r->reason, r->exit_code, r->signal,
                           now_ms, out);
        return;
    }
    /* (the reason too: a stop sent before a restart or failover is not in
     * the new leader's memory) */
    if ((job->reclaim_requested || !strcmp(r->reason, "idle reclaim")) && !job->cancel_requested) {
        /* Reclaimed for idling: retrying would only idle again. */
        struct action a = {.type = ACTION_FINISH, .job_id = job->id, .attempt = job->attempt,
                           .node_id = job->node_id, .state = JOB_FAILED,
                           .exit_code = r->exit_code, .signal = r->signal};
        snprintf(a.reason, sizeof a.reason, "idle reclaim: GPUs under %d%% for %lld s",
                 job->idle_util_pct, (long long)job->idle_after_s);
        action_list_push(out, &a);
        cluster_remove_job(c, job->id);
        return;
    }
    if (job->cancel_requested || !strcmp(r->reason, "cancelled"))
        final_state = JOB_CANCELLED;
    else if (!strcmp(r->reason, "max_runtime"))
        final_state = JOB_TIMEOUT;
    else if (r->exit_code == 0 && r->signal == 0 && strncmp(r->reason, "start failed", 12) != 0)
        final_state = JOB_SUCCEEDED;
    else
        final_state = JOB_FAILED;

    if (final_state == JOB_FAILED) {
        sched_fail_attempt(c, job, JOB_FAILED, JOB_FAILED, r->reason, r->exit_code, r->signal,
                           now_ms, out);
        return;
    }
    struct action a = {.type = ACTION_FINISH, .job_id = job->id, .attempt = job->attempt,
                       .node_id = job->node_id, .state = final_state,
                       .exit_code = r->exit_code, .signal = r->signal};
    if (final_state == JOB_TIMEOUT)
        snprintf(a.reason, sizeof a.reason, "max_runtime (%lld s) exceeded",
                 (long long)job->max_runtime_s);
    else if (final_state == JOB_CANCELLED)
        snprintf(a.reason, sizeof a.reason, "cancelled by user");
    else
        snprintf(a.reason, sizeof a.reason, "%s", r->reason[0] ? r->reason : "exit 0");
    action_list_push(out, &a);
    cluster_remove_job(c, job->id);
}

/* The idle clock of job's task on node_id (the first node's is the job's
 * own), or NULL when it has none there. */
static int64_t *idle_clock(struct job *job, int64_t node_id)
{
    if (job->node_id == node_id)
        return &job->idle_since_ms;
    for (int i = 0; i < job->nparts; i++)
        if (job->parts[i].node_id == node_id)
            return &job->parts[i].idle_since_ms;
    return NULL;
}

/* Since when every task of job still running has been idle: the latest of
 * their clocks; 0 while one is busy or not heard of yet. */
static int64_t idle_since(const struct job *job)
{
    int64_t since = job->first_part_exited ? 0 : job->idle_since_ms;
    if (!job->first_part_exited && !since)
        return 0;
    for (int i = 0; i < job->nparts; i++) {
        const struct job_part *p = &job->parts[i];
        if (p->exited)
            continue;
        if (!p->idle_since_ms)
            return 0;
        if (p->idle_since_ms > since)
            since = p->idle_since_ms;
    }
    return since;
}

/* Idle reclaim: follows how long all of a running job's GPUs have stayed
 * under its threshold, on every node of a gang (one busy part keeps the
 * job); warns at half the window, reclaims at the end. */
static void track_idle(const struct node *node, struct job *job, int64_t now_ms,
                       struct action_list *out)
{
    int gpus[TIDE_MAX_GPUS_PER_NODE];
    int64_t *clock = idle_clock(job, node->id);
    int ngpus = job_gpus_on_node(job, node->id, gpus);
    if (job->idle_after_s <= 0 || ngpus == 0 || !clock || job->state != JOB_RUNNING)
        return;
    int busiest = 0;
    for (int i = 0; i < ngpus; i++)
        for (int g = 0; g < node->ngpus; g++)
            if (node->gpus[g].index == gpus[i] && node->gpus[g].utilization_pct > busiest)
                busiest = node->gpus[g].utilization_pct;
    if (busiest >= job->idle_util_pct) {
        *clock = 0;
        job->idle_warned = false;
        return;
    }
    if (!*clock)
        *clock = now_ms;
    int64_t since = idle_since(job);
    if (!since)
        return;
    int64_t idle_ms = now_ms - since;
    if (!job->idle_warned && idle_ms * 2 >= job->idle_after_s * 1000) {
        job->idle_warned = true;
        struct action a = {.type = ACTION_IDLE_WARN, .job_id = job->id, .attempt = job->attempt,
                           .node_id = job->node_id, .state = job->state, .exit_code = -1};
        snprintf(a.reason, sizeof a.reason,
                 "GPUs under %d%% for %lld s: reclaimed after %lld s unless they get busy",
                 job->idle_util_pct, (long long)(idle_ms / 1000), (long long)job->idle_after_s);
        action_list_push(out, &a);
    }
    if (idle_ms >= job->idle_after_s * 1000)
        job->reclaim_requested = true;
}

static void mark_part_reported(struct job *job, int64_t node_id)
{
    if (job->node_id == node_id)
        job->first_part_reported = true;
    for (int i = 0; i < job->nparts; i++)
        if (job->parts[i].node_id == node_id)
            job->parts[i].reported = true;
}

static bool report_is_success(const struct task_report *r)
{
    return r->exit_code == 0 && r->signal == 0 && strncmp(r->reason, "start failed", 12) != 0 &&
           strcmp(r->reason, "max_runtime") != 0 && strcmp(r->reason, "cancelled") != 0;
}

/* The last task of a gang job whose part failed ended (or will never
 * start): the job ends as that first failure. */
static void record_gang_failure(struct cluster *c, struct job *job, int64_t now_ms,
                                struct action_list *out)
{
    if (job->gang_lost) { /* not the job's fault: requeued as its node's loss */
        sched_fail_attempt(c, job, JOB_LOST, JOB_FAILED, job->gang_reason, job->gang_exit_code,
                           job->gang_signal, now_ms, out);
        return;
    }
    struct task_report whole = {.job_id = job->id, .attempt = job->attempt, .exited = true,
                                .exit_code = job->gang_exit_code, .signal = job->gang_signal};
    snprintf(whole.reason, sizeof whole.reason, "%s", job->gang_reason);
    record_exit(c, job, &whole, now_ms, out);
}

/* A gang job's task on node_id ended and others have not: what its parts
 * did so far is to be kept (so that a restarted server neither starts that
 * task again nor forgets the failure). 0, or 1 when out of memory. */
static int part_exited(const struct job *job, int64_t node_id, struct action_list *out)
{
    struct action a = {.type = ACTION_PART_EXITED, .job_id = job->id, .attempt = job->attempt,
                       .node_id = node_id, .exit_code = -1};
    return action_list_push(out, &a) ? 0 : 1;
}

/* A part that ended was busy until then, as far as anyone knows: the
 * others' idle clocks start again, so an idle coordinator is warned and
 * given the window after its workers finish, not reclaimed at once. */
static void restart_idle_clocks(struct job *job, int64_t now_ms)
{
    if (job->idle_since_ms)
        job->idle_since_ms = now_ms;
    for (int i = 0; i < job->nparts; i++)
        if (job->parts[i].idle_since_ms)
            job->parts[i].idle_since_ms = now_ms;
    job->idle_warned = false;
}

/* One task of a gang job ended. The job ends when all have: as its first
 * failure, or as a success when every task succeeded. A failure makes the
 * others be stopped (see the running branch). 0, or 1 when out of memory. */
static int record_gang_exit(struct cluster *c, struct job *job, int64_t node_id,
                            const struct task_report *r, int64_t now_ms, struct action_list *out)
{
    if (!report_is_success(r) && !job->gang_failed) {
        job->gang_failed = true;
        job->gang_exit_code = r->exit_code;
        job->gang_signal = r->signal;
        snprintf(job->gang_reason, sizeof job->gang_reason, "%s", r->reason);
    }
    if (!job_mark_part_exited(job, node_id)) {
        restart_idle_clocks(job, now_ms);
        return part_exited(job, node_id, out);
    }
    if (job->gang_failed)
        record_gang_failure(c, job, now_ms, out);
    else
        record_exit(c, job, r, now_ms, out);
    return 0;
}

/* A stopping agent's node takes no new work; a heartbeat that no longer
 * says so (its agent's next run) makes it ready again. A drained node
 * stays draining either way. */
static int follow_agent_stopping(struct node *node, struct action_list *out)
{
    if (node->agent_stopping && node->state == NODE_READY) {
        node->state = NODE_STOPPING;
        return push(out, ACTION_NODE_STOPPING, NULL, 0, 0, node->id,
                    "its agent is stopping: no new work lands here");
    }
    if (!node->agent_stopping && node->state == NODE_STOPPING) {
        node->state = node->drained ? NODE_DRAINING : NODE_READY;
        return push(out, ACTION_NODE_BACK, NULL, 0, 0, node->id, "its agent runs again");
    }
    return 0;
}

/* Whether no task of job has started anywhere (a gang's parts included). */
static bool nothing_started(const struct job *job)
{
    if (job->state != JOB_STARTING || job->first_part_reported)
        return false;
    for (int k = 0; k < job->nparts; k++)
        if (job->parts[k].reported)
            return false;
    return true;
}

static bool job_reported(const struct task_report *tasks, size_t n, const struct job *job)
{
    for (size_t i = 0; i < n; i++)
        if (tasks[i].job_id == job->id && tasks[i].attempt == job->attempt)
            return true;
    return false;
}

int reconcile_heartbeat(struct cluster *c, struct node *node, const struct task_report *tasks,
                        size_t ntasks, int64_t now_ms, struct action_list *out)
{
    int failed = 0;
    int64_t node_id = node->id;
    node->last_heartbeat_ms = now_ms;
    if (node->state == NODE_LOST) {
        node->state = node->drained ? NODE_DRAINING : NODE_READY;
        failed |= push(out, ACTION_NODE_BACK, NULL, 0, 0, node_id, "heartbeat after being lost");
    }
    failed |= follow_agent_stopping(node, out);

    for (size_t i = 0; i < ntasks; i++) {
        const struct task_report *r = &tasks[i];
        struct job *job = cluster_find_job(c, r->job_id);
        if (!job_attempt_on_node(job, r->attempt, node_id)) {
            /* Finished and recorded before, or an attempt the server gave up on. */
            if (r->exited)
                failed |= push(out, ACTION_ACK, NULL, r->job_id, r->attempt, node_id,
                               "already recorded");
            else
                failed |= push(out, ACTION_SEND_STOP, NULL, r->job_id, r->attempt, node_id,
                     "not scheduled on this node");
            continue;
        }
        mark_part_reported(job, node_id);
        if (r->exited) {
            if (job->nparts > 0)
                failed |= record_gang_exit(c, job, node_id, r, now_ms, out);
            else
                record_exit(c, job, r, now_ms, out);
            failed |= push(out, ACTION_ACK, NULL, r->job_id, r->attempt, node_id, "recorded");
            continue;
        }
        if (job->state == JOB_STARTING) {
            job->state = JOB_RUNNING;
            failed |= push(out, ACTION_RUNNING, job, 0, 0, node_id, "running");
        }
        track_idle(node, job, now_ms, out);
        if (job->cancel_requested)
            failed |= push(out, ACTION_SEND_STOP, job, 0, 0, node_id, "cancelled");
        else if (job->reclaim_requested)
            failed |= push(out, ACTION_SEND_STOP, job, 0, 0, node_id, "idle reclaim");
        else if (job->state == JOB_PREEMPTED)
            failed |= push(out, ACTION_SEND_STOP, job, 0, 0, node_id, "preempted");
        else if (job->gang_failed)
            failed |= push(out, ACTION_SEND_STOP, job, 0, 0, node_id, "gang member failed");
    }

    /* Jobs placed here that the agent did not mention: the node's own, by
     * the cluster's index, not every job in the cluster. */
    struct cluster_node_ids mine;
    if (cluster_node_ids_fill(c, node_id, &mine) != 0)
        return TIDE_ENOMEM;
    for (size_t k = 0; k < mine.n; k++) {
        /* Looked up each time: an earlier one's end may have moved jobs. */
        struct job *job = cluster_find_job(c, mine.ids[k]);
        if (!job || !job_on_node(job, node_id) || !job_state_is_on_node(job->state) ||
            job_part_exited(job, node_id) || job_reported(tasks, ntasks, job))
            continue;
        bool never_started = job->state == JOB_STARTING ||
                             (job->nparts > 0 && !job_part_reported(job, node_id));
        if (never_started && node->agent_stopping && nothing_started(job) &&
            !job->cancel_requested && !job->gang_failed) {
            /* A stopping agent starts nothing more, and what it has started
             * is in this list: the job goes elsewhere now, not after the
             * node is lost. Not the job's doing: no retry used. (A gang with
             * a part running elsewhere keeps its GPUs there: its start is
             * sent on, for the agent's next run, or the node's loss ends it.) */
            job->state = JOB_PREEMPTED;
            sched_fail_attempt(c, job, JOB_PREEMPTED, JOB_FAILED,
                               "not started: its node's agent is stopping", -1, 0, now_ms, out);
            continue;
        }
        if (never_started && !job->cancel_requested && !job->gang_failed) {
            failed |= push(out, ACTION_SEND_START, job, 0, 0, node_id, "start");
            continue;
        }
        if (never_started && job->nparts > 0 && job->gang_failed) {
            /* A part that will never start, the gang having failed: it ends
             * with nothing to stop, and as the last, ends the job as that
             * failure (not as vanished, which would requeue it for free). */
            if (job_mark_part_exited(job, node_id))
                record_gang_failure(c, job, now_ms, out);
            else
                failed |= part_exited(job, node_id, out);
            continue;
        }
        if (never_started && job->nparts > 0 && !job_mark_part_exited(job, node_id)) {
            failed |= part_exited(job, node_id, out); /* cancelled before it started */
            continue;
        }
        /* Running but unknown to its agent (it restarted), or cancelled before
         * it started: either way this attempt is over. */
        sched_fail_attempt(c, job, JOB_LOST, JOB_FAILED, "task vanished from its node", -1, 0,
                           now_ms, out);
    }
    cluster_node_ids_release(&mine);
    return failed ? TIDE_ENOMEM : 0;
}
