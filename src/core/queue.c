/* Built-in queues, admission of jobs into queues, and escalation. */
#include "core/queue.h"

#include <stdio.h>
#include <string.h>

#include "core/core_banned.h"

static void add_queue(struct queue_set *qs, const char *name, int pmin, int pmax, int pdefault,
                      int64_t max_wait_s, bool preemptible)
{
    struct queue_config *q = &qs->queues[qs->count++];
    memset(q, 0, sizeof *q);
    snprintf(q->name, sizeof q->name, "%s", name);
    q->priority_min = pmin;
    q->priority_max = pmax;
    q->priority_default = pdefault;
    q->max_wait_s = max_wait_s;
    q->escalation = 100;
    q->preemptible = preemptible;
}

void queue_set_defaults(struct queue_set *qs)
{
    memset(qs, 0, sizeof *qs);
    /* Inference outranks everything so low-latency work never waits behind
     * training; batch sits lowest and may be preempted. */
    add_queue(qs, "default", -1000, 1000, 0, 0, false);
    add_queue(qs, "inference", 100, 200, 150, 60, false);
    add_queue(qs, "training", 0, 99, 50, 3600, false);
    add_queue(qs, "batch", -100, -1, -50, 0, true);
    add_queue(qs, "render", 0, 99, 40, 1800, false);
    snprintf(qs->default_queue, sizeof qs->default_queue, "default");
}

const struct queue_config *queue_find(const struct queue_set *qs, const char *name)
{
    for (int i = 0; i < qs->count; i++)
        if (!strcmp(qs->queues[i].name, name))
            return &qs->queues[i];
    return NULL;
}

const struct queue_config *queue_of_job(const struct queue_set *qs, const struct job *job)
{
    int k = job->queue_slot - 1;
    if (k >= 0 && k < qs->count && !strcmp(qs->queues[k].name, job->queue))
        return &qs->queues[k];
    return queue_find(qs, job->queue);
}

const struct queue_config *queue_of_job_remember(const struct queue_set *qs, struct job *job)
{
    const struct queue_config *q = queue_of_job(qs, job);
    job->queue_slot = q ? (int)(q - qs->queues) + 1 : 0;
    return q;
}

int queue_admit(const struct queue_set *qs, json_t *given, json_t *spec, struct job *job,
                struct tide_err *err)
{
    if (!json_object_get(given, "queue"))
        snprintf(job->queue, sizeof job->queue, "%s", qs->default_queue);
    const struct queue_config *q = queue_find(qs, job->queue);
    if (!q) {
        char known[512] = "";
        size_t used = 0;
        for (int i = 0; i < qs->count && used < sizeof known; i++)
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "",
                                     qs->queues[i].name);
        return tide_err_set(err, TIDE_EINVAL, "queue", "queue: no queue '%s' (known: %s)",
                            job->queue, known);
    }
    json_object_set_new(spec, "queue", json_string(q->name));

    if (!json_object_get(given, "priority"))
        job->priority = q->priority_default;
    if (job->priority < q->priority_min || job->priority > q->priority_max)
        return tide_err_set(err, TIDE_EINVAL, "priority",
                            "priority: queue %s allows %d to %d, got %d", q->name, q->priority_min,
                            q->priority_max, job->priority);
    json_object_set_new(spec, "priority", json_integer(job->priority));

    if (!json_object_get(given, "max_runtime"))
        job->max_runtime_s = q->default_runtime_s;
    if (q->max_runtime_s > 0 && (job->max_runtime_s == 0 || job->max_runtime_s > q->max_runtime_s))
        return tide_err_set(err, TIDE_EINVAL, "max_runtime",
                            "max_runtime: queue %s allows at most %lld s%s", q->name,
                            (long long)q->max_runtime_s,
                            job->max_runtime_s == 0 ? " (and requires one)" : "");
    json_object_set_new(spec, "max_runtime", json_integer(job->max_runtime_s));

    job->rules = q;
    job->idle_util_pct = q->idle_util_pct;
    job->idle_after_s = q->idle_after_s;
    if (!json_object_get(given, "preemptible"))
        job->preemptible = q->preemptible;
    json_object_set_new(spec, "preemptible", json_boolean(job->preemptible));
    return 0;
}

bool queue_allows_pool(const struct queue_config *q, const char *pool)
{
    if (!q || q->npools == 0)
        return true;
    for (int i = 0; i < q->npools; i++)
        if (!strcmp(q->pools[i], pool))
            return true;
    return false;
}

bool queue_allows_node(const struct job *job, const struct node *node)
{
    if (!queue_allows_pool(job->rules, node->pool))
        return false;
    return !node->spot || queue_job_may_use_spot(job);
}

bool queue_job_may_use_spot(const struct job *job)
{
    return job->preemptible || (job->rules && job->rules->allow_spot);
}

int queue_effective_priority(const struct queue_config *q, const struct job *job, int64_t now_ms)
{
    if (!q || q->max_wait_s <= 0 || q->escalation <= 0)
        return job->priority;
    int64_t waited_s = (now_ms - job->submit_ms) / 1000;
    int64_t steps = waited_s / q->max_wait_s;
    int64_t p = job->priority + steps * q->escalation;
    return p > 100000 ? 100000 : (int)p;
}

int64_t queue_next_escalation_ms(const struct queue_config *q, const struct job *job,
                                 int64_t now_ms)
{
    if (!q || q->max_wait_s <= 0 || q->escalation <= 0)
        return INT64_MAX;
    if (now_ms < job->submit_ms || q->max_wait_s > INT64_MAX / 2000000)
        return now_ms;
    int64_t steps = (now_ms - job->submit_ms) / 1000 / q->max_wait_s;
    if (job->priority + steps * q->escalation >= 100000)
        return INT64_MAX; /* queue_effective_priority's cap: no step left */
    return job->submit_ms + (steps + 1) * q->max_wait_s * 1000;
}
