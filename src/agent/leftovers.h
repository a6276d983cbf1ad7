/*
 * Processes a task left behind: a child that made its own session
 * (`setsid sleep 1000 &`) escapes the task's process group, so neither the
 * group kill at the task's end nor the guard's kill when the agent dies
 * reaches it, and it keeps using the task's GPUs. Every task's processes
 * carry TIDE_WORK_DIR=WORK/jobs/<id> in their environment; these helpers
 * find them in /proc by it (only this agent's, by its work dir) and
 * SIGKILL them. Tasks in a cgroup are also killed whole through it
 * (cgroup.c); this covers machines without usable cgroups.
 */
#ifndef TIDE_AGENT_LEFTOVERS_H
#define TIDE_AGENT_LEFTOVERS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* SIGKILLs every live process (not the caller) whose environment has
 * TIDE_WORK_DIR=<jobs_dir>/<job_id>, or, with job_id < 0, any
 * TIDE_WORK_DIR under jobs_dir/. Scans again until a scan finds none (a
 * forking process may add one during a scan), a few times at most.
 * proc is "/proc" (a parameter for tests). Returns how many it killed. */
int agent_leftovers_kill(const char *proc, const char *jobs_dir, int64_t job_id);

/* Whether process pid is one of job_id's: its environment has
 * TIDE_WORK_DIR=<jobs_dir>/<job_id>, in whatever session or process group
 * it put itself. */
bool agent_process_is_jobs(const char *proc, pid_t pid, const char *jobs_dir, int64_t job_id);

#endif
