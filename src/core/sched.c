/* Scheduler v1: priority then FIFO, placement by strategy, node loss. */
#include "core/sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"

#include "core/core_banned.h"

void sched_config_defaults(struct sched_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->order = &order_priority;
    cfg->placement = &placement_loadaware;
    placement_config_defaults(&cfg->placement_cfg);
    cfg->node_timeout_ms = 30000;
}

void sched_init(struct scheduler *s, const struct sched_config *cfg)
{
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
}

void sched_release(struct scheduler *s)
{
    if (!s)
        return;
    free(s->order);
    s->order = NULL;
    s->order_cap = 0;
}

static int by_order_policy(const void *a, const void *b, void *ops)
{
    const struct order_ops *order = ops;
    return order->compare(*(const struct job *const *)a, *(const struct job *const *)b);
}

static void format_gpu_list(char *out, size_t size, const int *gpus, int n)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%d", i ? "," : "", gpus[i]);
}

/* A pass only ever takes capacity, so once a job found no room, every later
 * job that asks for at least as much with no extra constraint finds none
 * either. Remembering a few such shapes skips most of the hopeless scans. */
struct failed_shape {
    int gpus, cpus;
    int64_t memory_mib;
};

#define FAILED_SHAPES 8

static bool unconstrained(const struct job *job)
{
    return job->gpu_model[0] == '\0' && job->gpu_memory_mib == 0;
}

static bool dominating_failure(const struct failed_shape *shapes, int n, const struct job *job)
{
    for (int i = 0; i < n; i++)
        if (job->gpus >= shapes[i].gpus && job->cpus >= shapes[i].cpus &&
            job->memory_mib >= shapes[i].memory_mib)
            return true;
    return false;
}

/* Whether one ready node is big enough for job (GPUs, CPUs and memory
 * together): a job that none could ever hold must get that answer rather
 * than "waiting". */
static bool fits_a_ready_node(const struct cluster *c, const struct job *job)
{
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct node *n = &c->nodes[i];
        if (n->state == NODE_READY && n->ngpus >= job->gpus &&
            (n->cpus <= 0 || job->cpus <= n->cpus) &&
            (n->memory_mib <= 0 || job->memory_mib <= n->memory_mib))
            return true;
    }
    return false;
}

int sched_pass(struct scheduler *s, struct cluster *c, int64_t now_ms, struct action_list *out)
{
    struct failed_shape failed[FAILED_SHAPES];
    int nfailed = 0;
    if (c->njobs > s->order_cap) {
        struct job **grown = realloc(s->order, c->njobs * sizeof *grown);
        if (!grown)
            return TIDE_ENOMEM;
        s->order = grown;
        s->order_cap = c->njobs;
    }
    size_t npending = 0;
    for (size_t i = 0; i < c->njobs; i++) {
        struct job *job = &c->jobs[i];
        if (job->state != JOB_PENDING)
            continue;
        if (job->not_before_ms > now_ms) {
            snprintf(job->wait_reason, sizeof job->wait_reason, "retry backoff: not before %lld ms from now",
                     (long long)(job->not_before_ms - now_ms));
            continue;
        }
        job->effective_priority = job->priority;
        s->order[npending++] = job;
    }
    if (npending > 1)
        qsort_r(s->order, npending, sizeof *s->order, by_order_policy, (void *)s->cfg.order);

    int placed = 0;
    for (size_t i = 0; i < npending; i++) {
        struct job *job = s->order[i];
        if (unconstrained(job) && dominating_failure(failed, nfailed, job) &&
            fits_a_ready_node(c, job)) {
            snprintf(job->wait_reason, sizeof job->wait_reason,
                     "waiting for %d free GPU%s and the CPUs/memory asked for on one node",
                     job->gpus, job->gpus == 1 ? "" : "s");
            continue;
        }
        struct placement_choice choice;
        char why[TIDE_REASON_MAX] = "";
        enum placement_result r =
            s->cfg.placement->choose(&s->cfg.placement_cfg, c, job, &choice, why);
        if (r != PLACEMENT_FOUND) {
            snprintf(job->wait_reason, sizeof job->wait_reason, "%s", why);
            if (r == PLACEMENT_NOT_NOW && unconstrained(job) && nfailed < FAILED_SHAPES) {
                failed[nfailed++] = (struct failed_shape){.gpus = job->gpus, .cpus = job->cpus,
                                                          .memory_mib = job->memory_mib};
            }
            continue;
        }
        cluster_assign(c, job, choice.node, choice.gpu_index, choice.ngpus);
        job->state = JOB_STARTING;
        job->attempt++;
        job->start_ms = now_ms;
        job->wait_reason[0] = '\0';
        struct action a = {.type = ACTION_START, .job_id = job->id, .attempt = job->attempt,
                           .node_id = choice.node->id, .state = JOB_STARTING, .exit_code = -1};
        char gpus[128];
        format_gpu_list(gpus, sizeof gpus, choice.gpu_index, choice.ngpus);
        snprintf(a.reason, sizeof a.reason, "placed on %s%s%.80s", choice.node->name,
                 choice.ngpus ? " GPUs " : "", gpus);
        if (!action_list_push(out, &a))
            return TIDE_ENOMEM;
        placed++;
    }
    return placed;
}

void sched_fail_attempt(struct cluster *c, struct job *job, enum job_state passed_through,
                        enum job_state final_state, const char *failure, int exit_code,
                        int signal, struct action_list *out)
{
    struct action a = {.job_id = job->id, .attempt = job->attempt, .node_id = job->node_id,
                       .exit_code = exit_code, .signal = signal};
    cluster_unassign(c, job);
    if (job->cancel_requested) {
        a.type = ACTION_FINISH;
        a.state = JOB_CANCELLED;
        snprintf(a.reason, sizeof a.reason, "cancelled (%s)", failure);
    } else if (final_state == JOB_FAILED && job->attempt <= job->retries) {
        a.type = ACTION_REQUEUE;
        a.state = passed_through;
        snprintf(a.reason, sizeof a.reason, "%s; retry %d of %d", failure, job->attempt,
                 job->retries);
        job->state = JOB_PENDING;
    } else {
        a.type = ACTION_FINISH;
        a.state = final_state;
        snprintf(a.reason, sizeof a.reason, "%s", failure);
    }
    action_list_push(out, &a);
    if (a.type == ACTION_FINISH)
        cluster_remove_job(c, job->id);
}

int sched_check_nodes(struct scheduler *s, struct cluster *c, int64_t now_ms,
                      struct action_list *out)
{
    int lost = 0;
    for (size_t n = 0; n < c->nnodes; n++) {
        struct node *node = &c->nodes[n];
        if (node->state != NODE_READY || now_ms - node->last_heartbeat_ms <= s->cfg.node_timeout_ms)
            continue;
        node->state = NODE_LOST;
        lost++;
        struct action a = {.type = ACTION_NODE_LOST, .node_id = node->id, .exit_code = -1};
        snprintf(a.reason, sizeof a.reason, "no heartbeat for %lld s",
                 (long long)((now_ms - node->last_heartbeat_ms) / 1000));
        action_list_push(out, &a);
        int64_t node_id = node->id;
        for (size_t j = 0; j < c->njobs;) {
            struct job *job = &c->jobs[j];
            if (job->node_id != node_id || !job_state_is_on_node(job->state)) {
                j++;
                continue;
            }
            /* Requeued (now off this node) or removed: look at index j again. */
            sched_fail_attempt(c, job, JOB_LOST, JOB_FAILED, "node lost", -1, 0, out);
        }
    }
    return lost;
}

int sched_cancel(struct cluster *c, int64_t job_id, struct action_list *out)
{
    struct job *job = cluster_find_job(c, job_id);
    if (!job)
        return TIDE_ENOENT;
    if (job->state == JOB_PENDING || job->state == JOB_PREEMPTED || job->state == JOB_LOST) {
        struct action a = {.type = ACTION_FINISH, .job_id = job_id, .attempt = job->attempt,
                           .state = JOB_CANCELLED, .exit_code = -1};
        snprintf(a.reason, sizeof a.reason, "cancelled by user");
        action_list_push(out, &a);
        cluster_remove_job(c, job_id);
        return 1;
    }
    job->cancel_requested = true;
    return 0;
}
