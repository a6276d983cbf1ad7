/*
 * One task: one attempt of a job, run as its own process group with output
 * appended to WORK/logs/<job>.<attempt>.log. The agent's loop polls it,
 * stops it on request or at its deadline, and reports how it ended.
 * The child is vforked: the agent's thread waits only until the kernel has
 * taken the child's exec (or the child gave up), not for the program to
 * load. Whether it exec'd comes through a close-on-exec pipe that the loop
 * reads (agent_task_confirm) among its other work.
 */
#ifndef TIDE_AGENT_TASK_H
#define TIDE_AGENT_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/cgroup.h"
#include "agent/gpu.h"
#include "agent/run_as.h"
#include "agent/task_container.h"
#include "agent/task_guard.h"
#include "common/dir_spares.h"
#include "common/tide_err.h"

enum agent_task_state {
    AGENT_TASK_RUNNING,
    AGENT_TASK_EXITED,
};

/* What a start action asks for. Strings and arrays stay owned by the caller;
 * agent_task_start copies what it keeps. */
struct agent_task_spec {
    int64_t job_id;
    int64_t attempt;
    char **command; /* NULL-terminated argv, at least one entry */
    char **env;     /* "NAME=VALUE" entries from the job spec */
    size_t nenv;
    const int *gpus; /* GPU indices on this node */
    size_t ngpus;
    char **gpu_uuids;      /* same order as gpus; NULL to use the indices */
    const int *gpu_minors; /* same order: their /dev/nvidiaN minors (-1 unknown); NULL: the indices */
    /* the minors of the node's GPUs it was not given: closed to a bare task
     * where the agent manages device cgroups (cgroup_devices.c) */
    const int *deny_minors;
    size_t ndeny;
    int64_t max_runtime_s; /* 0: no limit */
    const char *workdir;   /* NULL: the job's directory under WORK/jobs */
    int kill_grace_s;
    /* a share of one GPU: its memory limit (MiB), enforced by the agent and
     * told to CUDA MPS; 0 for whole GPUs */
    int64_t gpu_memory_limit_mib;
    const char *checkpoint_dir; /* TIDE_CHECKPOINT_DIR; NULL: WORK/jobs/<id>/checkpoint */
    int64_t memory_mib;         /* the job's memory (MiB), a cgroup limit where possible; 0: none */
    int cpus;                   /* the job's CPUs, a quota on cgroup v2 with cpu; 0: none */
    /* a container: run command in this image (task_container.h); NULL: a
     * bare process. mounts are "HOST:CONTAINER[:ro|rw]". */
    const char *image;
    char **mounts;
    size_t nmounts;
    /* why the action cannot be run at all (e.g. a malformed field), or NULL;
     * the task is then reported as `start failed: <this>` without a child */
    const char *invalid;
    /* the user to run as (run_as.h); NULL or change false: the agent's own.
     * The job directory, its log and a checkpoint directory on this machine
     * then belong to that user, and the workdir is entered as that user. */
    const struct agent_run_as *run_as;
};

/* Where tasks live and how GPUs are shown to them. */
struct agent_task_site {
    const char *work_dir;                /* absolute */
    bool visible_by_index;               /* CUDA_VISIBLE_DEVICES gets indices */
    bool fake_telemetry;                 /* give tasks TIDE_FAKE_GPU_FILE */
    struct agent_task_guard *guard;      /* kills groups if the agent dies; may be NULL */
    const struct agent_cgroups *cgroups; /* per-task cgroups; NULL or no ops: none */
    const char *container_runtime;       /* podman or docker; NULL: images cannot run */
    struct dir_spares *job_dirs;         /* spare job directories; may be NULL */
};

struct agent_task {
    int64_t job_id;
    int64_t attempt;
    enum agent_task_state state;
    pid_t pid; /* also the process group id; 0 when none was started */

    int64_t started_ms;  /* monotonic */
    int64_t deadline_ms; /* monotonic max_runtime deadline, 0 for none */
    int64_t kill_at_ms;  /* monotonic SIGKILL deadline while stopping, else 0 */
    int kill_grace_s;
    bool stopping;
    bool fenced; /* killed because the server stopped hearing from this node */
    char stop_reason[128]; /* empty: report the wait status */

    /* how it ended, once state is AGENT_TASK_EXITED */
    bool has_exit_code;
    int exit_code;
    bool has_signal;
    int signal;
    char reason[256];

    int *gpus;
    size_t ngpus;
    int64_t gpu_memory_limit_mib; /* 0: none */
    char *log_path;
    char *telemetry_file; /* NULL unless the GPUs are fake */
    struct gpu_claim_reading telemetry_reading; /* its last, for heartbeats */
    char *jobs_dir;       /* WORK/jobs, to find what the task left behind */

    int64_t log_acked; /* bytes of the log the server holds */
    int64_t log_size_checked_ms; /* when its size was last held against the cap */
    /* when a heartbeat last found nothing new in the running task's log
     * (monotonic); 0: never looked or it had more */
    int64_t log_idle_ms;
    bool acked;        /* the server has recorded the exit */
    int drain_tries;   /* heartbeats since acked without log progress */
    struct agent_task_guard *guard;
    struct agent_cgroup *cgroup; /* NULL when the task runs without one */
    /* a containerised task: its container's name and the runtime that runs
     * it (the site's), so stops and cleanup reach the container too */
    char container_name[AGENT_CONTAINER_NAME_MAX];
    const char *container_runtime; /* NULL: a bare process */

    /* The start handshake: the read end of the child's report pipe until
     * the child has exec'd (the pipe closed empty) or said why it could
     * not; -1 after. The rest is what a failure's reason names. */
    int start_fd;
    char *start_cwd;
    char *start_program;
    bool start_in_workdir; /* start_cwd is the spec's workdir */
    char start_user[64];   /* the run-as user's name, empty without a switch */
};

/* Creates the task and starts its process: vfork, a new process group,
 * SIGKILL on the agent's death, the job directory as cwd (created, kept
 * across attempts), stdin /dev/null, stdout and stderr appended to the log.
 * Where site->cgroups has a backend the process runs in its own cgroup with
 * the spec's memory (and CPU) limit, joined before exec; a group that cannot
 * be made is a start failure.
 * The child shares the agent's memory until its exec, so this returns once
 * the child has exec'd or failed, which is also why a child that cannot get
 * on (a workdir on a hung network mount) holds up the calling thread; the
 * answer is not read here: the task is then running and starting
 * (agent_task_starting) until agent_task_confirm or agent_task_poll reads
 * it. When the process cannot be started (before the vfork, or the child's
 * setup or exec fails) the task is exited with reason `start failed: ...`
 * (the same text goes to its log) and exit code 127 where a child ran.
 * Returns 0 with a new task in *out (agent_task_destroy frees it), or
 * TIDE_ENOMEM / TIDE_EIO when not even that could be done. */
int agent_task_start(const struct agent_task_spec *spec, const struct agent_task_site *site,
                     int64_t now_ms, struct agent_task **out, struct tide_err *err);

/* Whether the task's child has not yet exec'd or failed as far as the
 * agent knows (its start handshake is open). */
bool agent_task_starting(const struct agent_task *t);

/* The start handshake's descriptor to poll for reading while the task is
 * starting, else -1. */
int agent_task_start_fd(const struct agent_task *t);

/* Reads the start handshake without blocking. Returns true when it has just
 * been answered: the child exec'd (the task stays running), or it failed
 * before exec, in which case it is reaped and the task has exited with
 * `start failed: <why>` (a workdir, user, cgroup or exec error). False while
 * the child is still setting up, and for a task that is not starting. */
bool agent_task_confirm(struct agent_task *t);

/* Reaps the process if it ended and enforces max_runtime and the kill
 * deadline. Once the group leader has exited the whole group is SIGKILLed,
 * so nothing it forked survives it, and its cgroup is emptied and removed
 * (without a cgroup, processes that left the group, e.g. by setsid, are
 * found by their TIDE_WORK_DIR and killed: leftovers.h);
 * when the kernel's OOM killer ended it the reason is `oom`. A starting
 * task that ended is confirmed first, so a child that failed before exec
 * is reported with its reason, not as `exit 127`. Returns true when the
 * task just exited. */
bool agent_task_poll(struct agent_task *t, int64_t now_ms);

/* agent_task_poll, where maybe_exited false says no child can have exited
 * since the last poll (no SIGCHLD came): only the deadlines are checked,
 * without a system call. */
bool agent_task_poll_since(struct agent_task *t, bool maybe_exited, int64_t now_ms);

/* Asks a running task to stop: SIGTERM to its group now, SIGKILL after
 * grace_s. The first stop's reason is the one reported (NULL: report how
 * the process actually ended); a later stop can only bring the SIGKILL
 * forward. Does nothing to an exited task. */
void agent_task_stop(struct agent_task *t, const char *reason, int grace_s, int first_signal,
                     int64_t now_ms);

/* SIGKILLs a running task's group at once (a second shutdown signal). */
void agent_task_kill_now(struct agent_task *t);

/* Whether no process of the exited task can still hold its log open (its
 * cgroup was removed empty, and no container runtime ran it), so the log
 * may become a later task's (log_spares.h). */
bool agent_task_log_reusable(const struct agent_task *t);

/* Frees the task; it must have exited (or never started). Accepts NULL. */
void agent_task_destroy(struct agent_task *t);

#endif
