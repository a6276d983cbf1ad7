/* Wording a pending job's compact wait cause (wait_reason.h). */
#include "core/wait_reason.h"

#include <stdio.h>

#include "common/utf8.h"
#include "core/cluster.h"
#include "core/placement.h"

#include "core/core_banned.h"

char *wait_cause_format(const struct wait_cause *w, const char *text, const struct job *job,
                        char *out, size_t size)
{
    char host[48];
    if (!size)
        return out;
    switch ((enum wait_kind)w->kind) {
    case WAIT_BEHIND:
        snprintf(out, size, "behind job %lld, which cannot start yet (policy %s)", (long long)w->id,
                 w->policy ? w->policy : "?");
        break;
    case WAIT_RETRY:
        snprintf(out, size, "retry backoff: next attempt in %lld s", (long long)w->id);
        break;
    case WAIT_DELETED_NODE:
        snprintf(out, size,
                 "its last attempt may still run on a deleted node until its agent stops it: "
                 "next attempt in %lld s",
                 (long long)w->id);
        break;
    case WAIT_QUEUE_JOBS:
        snprintf(out, size, "queue %s is at its cap of %d running jobs", job->queue, (int)w->n1);
        break;
    case WAIT_QUEUE_GPUS:
        snprintf(out, size, "queue %s would pass its cap of %d GPUs (%d in use)", job->queue,
                 (int)w->n1, (int)w->n2);
        break;
    case WAIT_ONE_NODE:
        placement_host_words(job, host, sizeof host);
        snprintf(out, size, "waiting for %d free GPU%s%.38s on one node", job->gpus,
                 job->gpus == 1 ? "" : "s", host);
        break;
    case WAIT_NO_NODE:
        placement_host_words(job, host, sizeof host);
        snprintf(out, size, "no ready node has %d GPU%s%s%.50s%s%.38s", job->gpus,
                 job->gpus == 1 ? "" : "s", job->gpu_model[0] ? " matching " : "", job->gpu_model,
                 job->gpu_memory_mib ? " of enough memory" : "", host);
        break;
    case WAIT_OVER_LOAD:
        snprintf(out, size,
                 "free GPUs are over the load thresholds (memory %d%%, utilisation %d%%)",
                 (int)w->n1, (int)w->n2);
        break;
    case WAIT_HOST_SHARE:
        snprintf(out, size, "waiting for free CPUs or memory on a node with %d free GPUs",
                 job->gpus);
        break;
    case WAIT_GPUS_FREE:
        snprintf(out, size, "waiting for %d free GPU%s on one node (most free now: %d)", job->gpus,
                 job->gpus == 1 ? "" : "s", (int)w->n1);
        break;
    case WAIT_TEXT:
    default:
        snprintf(out, size, "%s", text);
        break;
    }
    utf8_trim_tail(out); /* a model name cut inside a character */
    return out;
}

char *wait_reason_format(const struct job *job, char *out, size_t size)
{
    return wait_cause_format(&job->wait_cause, job->wait_reason, job, out, size);
}

struct wait_why wait_why_of(struct job *job)
{
    return (struct wait_why){&job->wait_cause, job->wait_reason};
}

void wait_why_set(const struct wait_why *why, enum wait_kind kind, int32_t n1, int32_t n2,
                  int64_t id, const char *policy)
{
    *why->cause =
        (struct wait_cause){.kind = (uint8_t)kind, .n1 = n1, .n2 = n2, .id = id, .policy = policy};
}

char *wait_why_text(const struct wait_why *why)
{
    why->cause->kind = WAIT_TEXT;
    return why->text;
}

char *wait_reason_text(struct job *job)
{
    struct wait_why why = wait_why_of(job);
    return wait_why_text(&why);
}

void wait_reason_set(struct job *job, enum wait_kind kind, int32_t n1, int32_t n2, int64_t id,
                     const char *policy)
{
    struct wait_why why = wait_why_of(job);
    wait_why_set(&why, kind, n1, n2, id, policy);
}
