/*
 * Containerised tasks: the command line that runs a job's command in its
 * image with podman or docker (both take the same flags used here), and the
 * runtime calls around it: listing the images this node holds, pulling the
 * images a pool prewarms, signalling and removing a task's container.
 * The runtime process (`podman run`) is the task's process: its output is
 * the task's log, it forwards signals to the container (--init makes them
 * reach the command), and its exit status is the command's.
 */
#ifndef TIDE_AGENT_TASK_CONTAINER_H
#define TIDE_AGENT_TASK_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Most characters of the node name in a container name. */
#define AGENT_CONTAINER_NODE_MAX 24
/* Longest container name: "tide-<node>-<8 hex>-<job>-<attempt>". */
#define AGENT_CONTAINER_NAME_MAX 96

/* What `RUNTIME run` needs beyond the task spec. */
struct agent_container_run {
    const char *runtime;        /* "podman", "docker" or a path to one */
    const char *name;           /* the container's name */
    const char *owner;          /* label tide.agent: the agent's work dir; NULL: none */
    const char *image;
    char **command;             /* NULL-terminated argv inside the container */
    const char *env_file;       /* the job's variables (--env-file); NULL: none */
    char **mounts;              /* "HOST:CONTAINER[:ro|rw]" from the job spec */
    size_t nmounts;
    const char *job_dir;        /* mounted at the same path; the default workdir */
    const char *checkpoint_dir; /* mounted at the same path; NULL: none */
    const char *workdir;        /* inside the container; NULL: job_dir */
    const int *gpus;            /* the task's GPU indices on this node */
    const int *gpu_minors;      /* same order: their /dev/nvidiaN minors; NULL: the indices */
    char **gpu_uuids;           /* same order: their UUIDs (MIG-... for instances), or NULL */
    size_t ngpus;
    int64_t memory_mib; /* --memory; 0: none */
    int cpus;           /* --cpus; 0: none */
    const char *dev_dir; /* where NVIDIA device nodes would be ("/dev"; tests may differ) */
    const char *cdi_dirs; /* ':'-separated CDI spec dirs; NULL: /etc/cdi:/var/run/cdi */
    const char *user;     /* --user=UID:GID, the job's user (run_as.h); NULL: the image's */
};

/* Makes this process's container names its own: "tide-<node>-<hash>-",
 * node_name with characters a runtime refuses in a name made '_' and cut to
 * AGENT_CONTAINER_NODE_MAX, and 8 hex digits of a hash of work_dir (the
 * agent's absolute work dir). Two agents on one machine (of one cluster or
 * of two) have different work dirs, so their names never collide, even
 * with the same node name and job ids; a restarted agent gets its last
 * run's names back. Call once at start, before any task. */
void agent_container_set_scope(const char *node_name, const char *work_dir);

/* "tide-<node>-<hash>-<job>-<attempt>" into out (at least
 * AGENT_CONTAINER_NAME_MAX bytes); "tide-<job>-<attempt>" before any
 * agent_container_set_scope. */
void agent_container_name(int64_t job_id, int64_t attempt, char *out, size_t size);

/* The argv of `RUNTIME run --rm --name NAME --init --network host ...
 * IMAGE COMMAND...`: the job's GPUs as CDI devices when an NVIDIA CDI spec
 * is installed (nvidia.com/gpu=INDEX for a whole GPU, whose tide index is
 * its NVML index; nvidia.com/gpu=MIG-UUID for a MIG instance, whose tide
 * index is no index of nvidia-ctk's), else as --device /dev/nvidiaN plus
 * the control devices that exist; none for fake GPUs (no device nodes).
 * Returns a new NULL-terminated array (agent_container_argv_free), or NULL
 * when out of memory. */
char **agent_container_argv(const struct agent_container_run *r);
void agent_container_argv_free(char **argv);

/* Whether program is an executable file: itself when it holds a '/',
 * else in a directory of PATH (what execvp would run). Runs nothing. */
bool agent_container_on_path(const char *program);

/* The runtime to use: the given one, else podman, else docker, whichever
 * is on PATH (agent_container_on_path: a lookup, not a call, so the agent
 * need not wait for the runtime before it registers); NULL when none is.
 * Static string or `given`. Whether it actually runs shows at its first
 * call (agent_images.h). */
const char *agent_container_runtime_find(const char *given);

struct agent_task_spec;
/* The runtime's argv for a containerised task spec: the job's env and
 * tide's vars in env_file (task_env_file.h), the job directory and
 * checkpoint dir mounted at their own paths. New array
 * (agent_container_argv_free), or NULL when out of memory. */
char **agent_container_task_argv(const struct agent_task_spec *spec, const char *runtime,
                                 const char *name, const char *owner, const char *job_dir,
                                 const char *env_file);

/* Removes (in the foreground) every container labelled tide.agent=owner:
 * what an agent that died left running, since the runtime's monitor, not
 * the agent's task, is the container's parent. Returns how many it found,
 * or -1 when the runtime could not be asked. */
int agent_container_remove_leftovers(const char *runtime, const char *owner);

/* The reason for a containerised task that ended with exit_code and no
 * stop: podman and docker exit 125 when they could not make the container
 * (an image they cannot pull, a bad mount), 126 when the command cannot be
 * run and 127 when it is not in the image; those become `start failed:
 * ...` (written into why, size n) and true is returned. A command of the
 * job's own that exits 125 to 127 reads the same. Other codes: false. */
bool agent_container_start_failure(const char *runtime, int exit_code, char *why, size_t n);

/* Sends sig to the container by name (`RUNTIME kill --signal`), and
 * removes a container (`RUNTIME rm -f --time 0`), in the background: the
 * agent's loop does not wait for the runtime. */
void agent_container_signal(const char *runtime, const char *name, int sig);
void agent_container_remove(const char *runtime, const char *name);

/* The images this node holds ("repo:tag" lines of `RUNTIME images`), as a
 * new NULL-terminated array of at most max names (agent_container_argv_free
 * frees it); NULL when the runtime could not be asked. Blocking: for
 * start-up after prewarming; the agent's loop uses the spawn below. */
char **agent_container_images(const char *runtime, size_t max);

/* Starts `RUNTIME images --format {{.Repository}}:{{.Tag}}` in the
 * background, 10 nicer than the caller: its stdout is the read end put in *fd (non-blocking,
 * close-on-exec; the caller reads it to EOF and closes it), its stderr
 * discarded, and it exits 127 when the runtime cannot be run. Returns the
 * child's pid for the caller to reap, or -1 (*fd -1) when it could not
 * start. */
pid_t agent_container_images_spawn(const char *runtime, int *fd);

/* The image names in text (lines of `RUNTIME images`; empty lines and
 * untagged "<none>" ones left out), as a new NULL-terminated array of at
 * most max (agent_container_argv_free frees it); NULL when out of memory. */
char **agent_container_images_parse(const char *text, size_t max);

/* Makes sure image is here: pulls it unless the runtime already has it.
 * image may be any reference the runtime pulls, including
 * docker-archive:/path.tar. Returns 0, or -1 with the runtime's failure in
 * why (size n). Blocking: for start-up prewarming. */
int agent_container_prewarm(const char *runtime, const char *image, char *why, size_t n);

#endif
