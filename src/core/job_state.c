/* Names and legal transitions of job states. */
#include "core/job_state.h"

#include <string.h>

#include "core/core_banned.h"

static const char *const state_names[JOB_STATE_COUNT] = {
    [JOB_PENDING] = "pending",     [JOB_STARTING] = "starting", [JOB_RUNNING] = "running",
    [JOB_SUCCEEDED] = "succeeded", [JOB_FAILED] = "failed",     [JOB_CANCELLED] = "cancelled",
    [JOB_TIMEOUT] = "timeout",     [JOB_PREEMPTED] = "preempted", [JOB_LOST] = "lost",
};

const char *job_state_name(enum job_state s)
{
    if ((unsigned)s >= JOB_STATE_COUNT)
        return "unknown";
    return state_names[s];
}

int job_state_parse(const char *name, enum job_state *out)
{
    for (int s = 0; s < JOB_STATE_COUNT; s++)
        if (!strcmp(name, state_names[s])) {
            *out = (enum job_state)s;
            return 0;
        }
    return -1;
}

bool job_state_is_final(enum job_state s)
{
    return s == JOB_SUCCEEDED || s == JOB_FAILED || s == JOB_CANCELLED || s == JOB_TIMEOUT;
}

bool job_state_is_on_node(enum job_state s)
{
    /* A preempted job holds its GPUs until its agent reports it stopped. */
    return s == JOB_STARTING || s == JOB_RUNNING || s == JOB_PREEMPTED;
}

bool job_transition_allowed(enum job_state from, enum job_state to)
{
    switch (from) {
    case JOB_PENDING:
        return to == JOB_STARTING || to == JOB_CANCELLED || to == JOB_FAILED;
    case JOB_STARTING:
        /* A task may finish before its agent ever reported it running. */
        return to == JOB_RUNNING || to == JOB_LOST || to == JOB_PREEMPTED ||
               job_state_is_final(to) || to == JOB_PENDING;
    case JOB_RUNNING:
        return job_state_is_final(to) || to == JOB_PREEMPTED || to == JOB_LOST ||
               to == JOB_PENDING;
    case JOB_PREEMPTED:
    case JOB_LOST:
        return to == JOB_PENDING || job_state_is_final(to);
    default:
        return false;
    }
}
