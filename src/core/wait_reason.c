/* Wording a pending job's compact wait cause (wait_reason.h). */
#include "core/wait_reason.h"

#include <stdio.h>

#include "core/cluster.h"
#include "core/placement.h"

#include "core/core_banned.h"

char *wait_reason_format(const struct job *job, char *out, size_t size)
{
    const struct wait_cause *w = &job->wait_cause;
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
    case WAIT_TEXT:
    default:
        snprintf(out, size, "%s", job->wait_reason);
        break;
    }
    return out;
}

char *wait_reason_text(struct job *job)
{
    job->wait_cause.kind = WAIT_TEXT;
    return job->wait_reason;
}

void wait_reason_set(struct job *job, enum wait_kind kind, int32_t n1, int32_t n2, int64_t id,
                     const char *policy)
{
    job->wait_cause =
        (struct wait_cause){.kind = (uint8_t)kind, .n1 = n1, .n2 = n2, .id = id, .policy = policy};
}
