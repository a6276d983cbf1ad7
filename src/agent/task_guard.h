/*
 * A watchdog process that kills every task's process group when the agent
 * dies, even by SIGKILL. PR_SET_PDEATHSIG only reaches a task's first
 * process; what it forked would outlive the node otherwise. The guard holds
 * the read end of a pipe and sees EOF when the agent is gone.
 */
#ifndef TIDE_AGENT_TASK_GUARD_H
#define TIDE_AGENT_TASK_GUARD_H

#include <sys/types.h>

struct agent_task_guard {
    pid_t pid; /* 0 when no guard runs */
    int fd;    /* write end, -1 when closed */
};

/* Forks the guard. Call before any thread exists (before the first HTTP
 * request), since the guard runs in a fork without exec. 0 or -errno. */
int agent_task_guard_start(struct agent_task_guard *g);

/* Tells the guard to kill process group pgid if the agent dies (add) or
 * that the group is gone (remove). Failures are logged, not returned: the
 * guard is a safety net and the task runs without it. */
void agent_task_guard_add(struct agent_task_guard *g, pid_t pgid);
void agent_task_guard_remove(struct agent_task_guard *g, pid_t pgid);

/* Closes the pipe and reaps the guard; call after every task has ended. */
void agent_task_guard_stop(struct agent_task_guard *g);

#endif
