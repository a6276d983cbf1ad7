/*
 * The job state machine (DESIGN.md): which states exist, which transitions
 * are legal, which states are final. Every transition carries a reason;
 * the store persists it before anyone is told.
 */
#ifndef TIDE_JOB_STATE_H
#define TIDE_JOB_STATE_H

#include <stdbool.h>

enum job_state {
    JOB_PENDING,
    JOB_STARTING,
    JOB_RUNNING,
    JOB_SUCCEEDED,
    JOB_FAILED,
    JOB_CANCELLED,
    JOB_TIMEOUT,
    JOB_PREEMPTED,
    JOB_LOST,
    JOB_STATE_COUNT
};

/* "pending", "running", ...; "unknown" for an out-of-range value. */
const char *job_state_name(enum job_state s);

/* Parses a state name; returns 0 and sets *out, or -1 when unknown. */
int job_state_parse(const char *name, enum job_state *out);

/* True for succeeded, failed, cancelled and timeout. */
bool job_state_is_final(enum job_state s);

/* True when the job holds (or is about to hold) resources on a node. */
bool job_state_is_on_node(enum job_state s);

/* True when from → to is a transition the design allows. */
bool job_transition_allowed(enum job_state from, enum job_state to);

#endif
