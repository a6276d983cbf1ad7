/*
 * A watchdog process that kills every task's process group, and removes
 * every task's container, when the agent dies, even by SIGKILL.
 * PR_SET_PDEATHSIG only reaches a task's first process; what it forked, and
 * a container, would outlive the node otherwise, and run on beside the
 * job's next attempt once the server requeues it. The guard holds the read
 * end of a pipe and sees EOF when the agent is gone.
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
 * that the group is gone (remove). For a containerised task, runtime and
 * container name its runtime and container (NULL both for a bare task): the
 * guard then also removes the container (task_container.h), whose parent is
 * the runtime's monitor, not the task's group. Failures are logged, not
 * returned: the guard is a safety net and the task runs without it. */
void agent_task_guard_add(struct agent_task_guard *g, pid_t pgid, const char *runtime,
                          const char *container);
void agent_task_guard_remove(struct agent_task_guard *g, pid_t pgid);

/* Closes the pipe and reaps the guard; call after every task has ended. */
void agent_task_guard_stop(struct agent_task_guard *g);

#endif
