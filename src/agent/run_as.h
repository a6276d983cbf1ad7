/*
 * Which user a task runs as, and switching to it in the child between vfork
 * and exec. An agent running as root runs each job as an unprivileged user:
 * the job's own `user` when the agent's --allow-users lists it, else
 * --job-user, else `tide-job` where that user exists, else `nobody`. Root
 * only with --allow-root-jobs. An agent that is not root cannot switch:
 * jobs run as the agent's user, and a job asking for another is refused.
 */
#ifndef TIDE_AGENT_RUN_AS_H
#define TIDE_AGENT_RUN_AS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/agent_opts.h"

#define RUN_AS_MAX_GROUPS 64

struct agent_run_as {
    bool change; /* false: run as the agent's own user, no switch */
    uid_t uid;
    gid_t gid;
    gid_t groups[RUN_AS_MAX_GROUPS]; /* supplementary groups, found before fork */
    int ngroups;
    char name[64];
    char home[PATH_MAX];
};

/* The user of the agent's jobs when they name none: what the policy above
 * gives for the agent's options. Writes the name into out; false (with why)
 * when the agent cannot switch users (it is not root). */
bool agent_run_as_default(const struct agent_opts *o, char *out, size_t n);

/* Resolves the user a job runs as: requested is the job's `user` (NULL for
 * the default). 0 with *r filled, or -1 with why set to a sentence naming
 * the field (`user ...`) when the policy refuses it or it does not exist. */
int agent_run_as_resolve(const struct agent_opts *o, const char *requested, struct agent_run_as *r,
                         char *why, size_t why_n);

/* agent_run_as_resolve, answered from what it said for the same options
 * and `user` within RUN_AS_CACHE_TTL_MS (monotonic now_ms): a user changed
 * in the password or group files is seen that much later. Refusals are not
 * kept. */
#define RUN_AS_CACHE_TTL_MS 10000
int agent_run_as_resolve_cached(const struct agent_opts *o, const char *requested,
                                struct agent_run_as *r, char *why, size_t why_n, int64_t now_ms);

/* In the child: drops to r's user (groups, gid, uid: real, effective and
 * saved, each checked, and a check that root cannot be regained). Raw
 * system calls only, so it is safe in a vfork child of a threaded agent
 * (it changes the calling process alone). 0 or an errno. */
int agent_run_as_enter(const struct agent_run_as *r);

#endif
