/* Spot interruption: preempt, then requeue at the deadline (see spot.h). */
#include "core/spot.h"

#include <stdio.h>
#include <string.h>

#include "common/tide_err.h"
#include "core/sched.h"

#include "core/core_banned.h"

int spot_interrupt(struct cluster *c, struct node *node, int64_t now_ms, int64_t grace_ms,
                   const char *why, struct action_list *out)
{
    if (node->interrupt_deadline_ms || node->state == NODE_RELEASED || node->state == NODE_FAILED)
        return TIDE_EINVAL;
    node->state = NODE_DRAINING;
    node->interrupt_deadline_ms = now_ms + (grace_ms > 0 ? grace_ms : 1);
    int asked = 0;
    for (size_t j = 0; j < c->njobs; j++) {
        struct job *job = &c->jobs[j];
        if (!job_on_node(job, node->id) ||
            (job->state != JOB_RUNNING && job->state != JOB_STARTING))
            continue;
        struct action *a = action_push_preempt(out, job);
        if (!a)
            return TIDE_ENOMEM;
        snprintf(a->reason, sizeof a->reason, "spot interruption of %.40s: %.60s", node->name, why);
        snprintf(job->requeue_reason, sizeof job->requeue_reason, "%s", a->reason);
        asked++;
    }
    return asked;
}

int spot_kill_grace_s(const struct node *node, int64_t now_ms, int kill_grace_s)
{
    if (!node || !node->interrupt_deadline_ms)
        return kill_grace_s;
    /* Rounded down: SIGKILL comes before the node is gone, not after. */
    int64_t left_s = (node->interrupt_deadline_ms - now_ms) / 1000;
    return left_s > kill_grace_s ? (int)left_s : kill_grace_s;
}

int spot_job_kill_grace_s(struct cluster *c, const struct job *job, int64_t now_ms,
                          int kill_grace_s)
{
    int grace = kill_grace_s;
    for (int k = -1; job && k < job->nparts; k++) {
        int64_t node_id = k < 0 ? job->node_id : job->parts[k].node_id;
        int g = spot_kill_grace_s(cluster_find_node(c, node_id), now_ms, kill_grace_s);
        if (g > grace)
            grace = g;
    }
    return grace;
}

int spot_check(struct cluster *c, int64_t now_ms, struct action_list *out)
{
    int requeued = 0;
    for (size_t n = 0; n < c->nnodes; n++) {
        struct node *node = &c->nodes[n];
        if (!node->interrupt_deadline_ms || now_ms < node->interrupt_deadline_ms ||
            node->state == NODE_RELEASED || node->state == NODE_FAILED)
            continue;
        int64_t node_id = node->id;
        char why[TIDE_REASON_MAX];
        snprintf(why, sizeof why, "spot interruption: %.60s reclaimed", node->name);
        for (size_t j = 0; j < c->njobs;) {
            struct job *job = &c->jobs[j];
            if (!job_on_node(job, node_id) || !job_state_is_on_node(job->state)) {
                j++;
                continue;
            }
            job->state = JOB_PREEMPTED; /* requeued without using a retry */
            sched_fail_attempt(c, job, JOB_PREEMPTED, JOB_FAILED, why, -1, 9, now_ms, out);
            requeued++;
        }
    }
    return requeued;
}
