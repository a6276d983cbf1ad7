/*
 * The state of one running agent, shared by its parts: the node identity
 * (agent_node.c), the heartbeat (agent_heartbeat.c), the actions it carries
 * out (agent_actions.c) and the loop that drives them (agent_loop.c).
 * Single-threaded: only the loop touches it.
 */
#ifndef TIDE_AGENT_AGENT_H
#define TIDE_AGENT_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/agent_opts.h"
#include "agent/agent_probe.h"
#include "agent/agent_servers.h"
#include "agent/cgroup.h"
#include "agent/gpu.h"
#include "agent/job_dir_sweep.h"
#include "agent/task.h"
#include "agent/task_guard.h"
#include "common/dir_spares.h"

/* Most tasks one agent tracks at once (running plus unacknowledged). */
#define AGENT_MAX_TASKS 1024
/* Acknowledged tasks remembered after they are forgotten. */
#define AGENT_FORGOTTEN_MAX 256
/* How often the agent lists its images again, when nothing else asks it to. */
#define AGENT_IMAGES_REFRESH_MS 30000
/* How long after its start the agent first lists its images (without
 * --prewarm-image): its registration and first tasks go first. Past that,
 * the first listing waits until no task runs on the node, at most
 * AGENT_IMAGES_REFRESH_MS after the start. */
#define AGENT_IMAGES_FIRST_DELAY_MS 1000

struct agent_node {
    int64_t node_id;
    char *node_token;
    int heartbeat_ms; /* what the server asked for, 0 if it said nothing */
    int node_timeout_ms; /* after this long unheard the server calls the node lost; 0: not told */
};

struct agent {
    const struct agent_opts *opts;
    struct agent_servers servers; /* opts' --server list and the leader among them */
    char *work_dir; /* absolute */
    struct gpu_backend gpus;
    struct gpu_telemetry *telemetry; /* one per GPU */
    struct gpu_health *health;       /* one per GPU */
    struct agent_probe probe;        /* the health probe (--health-command) */
    struct agent_task_guard guard;
    struct agent_cgroups cgroups; /* what the machine offers for task limits */
    struct dir_spares *job_dirs;  /* spares for WORK/jobs/ID; NULL: each is made */
    struct job_dir_sweep *job_dir_sweep; /* removes WORK/jobs/ID kept long enough; NULL: none */

    struct agent_task *tasks[AGENT_MAX_TASKS];
    size_t ntasks;

    struct agent_node node;
    bool registered;
    int heartbeat_ms;

    bool shutting_down; /* start actions are refused from now on */

    /* recently forgotten tasks, so a late resent start cannot rerun one */
    struct {
        int64_t job_id, attempt;
    } forgotten[AGENT_FORGOTTEN_MAX];
    size_t nforgotten;

    size_t log_rotate;    /* which task's log goes first, for fairness */
    bool server_down;     /* the last call did not reach the server */
    int64_t down_warn_ms; /* when that was last logged (monotonic) */
    int64_t down_since_ms;
    /* When the last heartbeat the server answered was sent (monotonic):
     * the server heard from the node no earlier, however late its answer
     * came back. Near node_timeout_ms from it the server gives this node's
     * tasks away, so the agent stops them first (agent_fence_at_ms). */
    int64_t last_contact_ms;
    /* This run's id and the number of its last heartbeat: the server
     * refuses a heartbeat older than one it has read (docs/api.md). */
    char heartbeat_run[33];
    int64_t heartbeat_seq;
    /* The "decision" of the last heartbeat reply or wait answer applied: a
     * wait answer with a lower one was derived before that reply, from
     * state the reply already corrected, and is not applied. */
    uint64_t last_decision;
    /* Containers (task_container.h): the runtime, NULL when none is
     * installed, and the images it holds as last listed (NULL-terminated,
     * may be NULL), refreshed every AGENT_IMAGES_REFRESH_MS or after a
     * containerised task started, and sent with every heartbeat once
     * known. A listing runs in a child whose output the loop reads
     * (agent_images.h): images_pid > 0 while one runs, images_fd its
     * output until EOF (else -1), images_out what it said so far. */
    const char *container_runtime;
    char **images;
    int64_t images_at_ms; /* monotonic, when the last listing began; 0: never */
    int64_t images_begun_ms; /* when agent_images_start ran (monotonic): the first listing waits from it */
    bool images_stale;
    pid_t images_pid;
    int images_fd;
    char *images_out;
    size_t images_len;
};

/* Whether a task ever ran in work_dir. Every task's directory is made
 * under WORK/jobs before it starts, and stays there until the agent leaves
 * WORK/jobs/.ran and removes it (job_dir_sweep.h); the agent makes
 * WORK/jobs itself (empty) at start: one that holds only spares
 * (".spare-N") or a missing one never ran a task, so nothing of an
 * earlier run is looked for (its containers, its processes). In doubt:
 * true. */
bool agent_work_ran_tasks(const char *work_dir);

/* When the node must have stopped its tasks (monotonic), or 0 when it has
 * no deadline yet: a tenth of the node timeout (at least
 * AGENT_FENCE_MARGIN_MIN_MS, at most half) before the server, which counts
 * from when it received the last heartbeat, may declare the node lost and
 * start its jobs elsewhere. The margin covers a heartbeat's shortest wait,
 * the agent's loop tick and the kill. No heartbeat waits past it. */
#define AGENT_FENCE_MARGIN_MIN_MS 250
int64_t agent_fence_at_ms(const struct agent *a);

/* Tasks running (or starting) on the node. */
size_t agent_running_tasks(const struct agent *a);
/* Whether a task of job_id (any attempt, any state) is in agent's table: its
 * directory is in use (job_dir_sweep_retire_due's in_use). */
bool agent_job_has_task(int64_t job_id, void *agent);
/* The task for (job_id, attempt), or NULL. */
struct agent_task *agent_find_task(struct agent *a, int64_t job_id, int64_t attempt);

/* True when (job_id, attempt) was acknowledged and forgotten lately. */
bool agent_was_forgotten(const struct agent *a, int64_t job_id, int64_t attempt);

/* Removes the task at index i, remembers it as forgotten, and frees it. */
void agent_drop_task(struct agent *a, size_t i);

/* Logs that the server could not be reached, at most every 30 s while it
 * stays away, and clears that once it answers (ok true). */
void agent_note_server(struct agent *a, bool ok, const char *what, int64_t now_ms);

struct http_response;

/* The server's error message in resp ("HTTP 500" when it gave none), written
 * into buf of size n, which is returned. */
const char *agent_server_message(const struct http_response *resp, char *buf, size_t n);

#endif
