/*
 * Per-task control groups. Where the machine lets the agent manage cgroups,
 * every task runs in its own group under the agent's, with the job's memory
 * limit (and, on v2, its CPU quota), so the kernel enforces them and the
 * agent can tell an OOM kill from any other SIGKILL. What the machine offers
 * is found once at start (agent_cgroups_detect); the differences between
 * cgroup v2 and v1 live in cgroup_v2.c and cgroup_v1.c behind
 * struct agent_cgroup_ops. Without usable cgroups tasks run as plain process
 * groups and nothing claims that limits were applied.
 */
#ifndef TIDE_AGENT_CGROUP_H
#define TIDE_AGENT_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/tide_err.h"

/* What a task may use; 0 means no limit of that kind. */
struct agent_cgroup_limits {
    int64_t memory_mib;
    int cpus;
    /* NVIDIA GPU device minors (/dev/nvidiaN, major 195) it may not open:
     * the node's GPUs it was not given (cgroup_devices.c). */
    const int *deny_minors;
    size_t ndeny;
};

/* How tasks are kept off GPUs they were not given. */
enum agent_devices_mode {
    AGENT_DEVICES_NONE, /* only CUDA_VISIBLE_DEVICES steers them */
    AGENT_DEVICES_V1,   /* a group per task in the v1 devices hierarchy, with devices.deny */
    AGENT_DEVICES_BPF,  /* a cgroup device program on the task's v2 group */
};

/* One cgroup version. Texts are the contents of /proc/self/cgroup and
 * /proc/self/mountinfo; `why` buffers get a sentence for the agent's log. */
struct agent_cgroup_ops {
    const char *name; /* "v2", "v1" */
    /* Writes the directory of the agent's own group for this version into
     * dir. 0, or TIDE_ENOENT with why filled. */
    int (*locate)(const char *proc_cgroup, const char *mountinfo, char *dir, size_t n, char *why,
                  size_t why_n);
    /* Whether dir can hold task groups with a memory limit; *cpu tells
     * whether a CPU quota can be set too. 0, or TIDE_ENOENT with why. */
    int (*check)(const char *dir, bool *cpu, char *why, size_t why_n);
    /* Applies lim to the (empty, new) group at path. 0 or a TIDE_E* code
     * with why filled. */
    int (*set_limits)(const char *path, const struct agent_cgroup_limits *lim, bool cpu, char *why,
                      size_t why_n);
    /* Sets *killed when the kernel's OOM killer ended a process of the group
     * at path; leader_signal is the signal that ended the task's first
     * process (0 if it exited), for kernels that keep no OOM-kill count. */
    int (*oom_killed)(const char *path, int leader_signal, bool *killed);
    /* The file of a group that a task's child writes "0" (itself) to, to
     * join it: v1's `tasks`, which moves the one thread without the
     * kernel's global lock on every thread group (whose taking can wait
     * out an RCU grace period, milliseconds, while the agent waits on the
     * vfork); v2's `cgroup.procs`. */
    const char *join_file;
};

extern const struct agent_cgroup_ops agent_cgroup_v2_ops;
extern const struct agent_cgroup_ops agent_cgroup_v1_ops;

/* What this machine offers, found once by agent_cgroups_detect. */
struct agent_cgroups {
    const struct agent_cgroup_ops *ops; /* NULL: no usable cgroups */
    char dir[4096];                     /* the agent's own group */
    bool cpu;                           /* a CPU quota can be set (v2 with cpu) */
    char prefix[32];                    /* "tide-<agent pid>-", names of its task groups */
    enum agent_devices_mode devices;    /* GPU device isolation */
    char devices_dir[4096];             /* v1: the agent's group in the devices hierarchy */
    char summary[8192];                 /* one line for the log: what was found, or why not */
};

/* Finds what the machine offers: cgroup v2 with the memory controller
 * enabled in the agent's group's cgroup.subtree_control, else a writable
 * cgroup v1 memory hierarchy, else none. Tries creating and removing a probe
 * group, and removes empty task groups left by agents that are gone. Never
 * fails: cg->ops is NULL and cg->summary says why when nothing is usable. */
void agent_cgroups_detect(struct agent_cgroups *cg);

/* The same from given texts of /proc/self/cgroup and /proc/self/mountinfo
 * (for tests and odd setups); probe false skips touching the file system
 * beyond reading (ops->check still reads the controllers). */
void agent_cgroups_detect_from(struct agent_cgroups *cg, const char *proc_cgroup,
                               const char *mountinfo, bool probe);

/* One task's group. */
struct agent_cgroup {
    const struct agent_cgroups *site;
    char *path;
    int procs_fd;        /* its ops->join_file, open until the child has joined; -1 after */
    char *devices_path;  /* v1: its group in the devices hierarchy; NULL: none */
    int devices_fd;      /* that group's tasks file, as procs_fd; -1: none */
    bool memory_limited; /* a memory limit was applied */
    int64_t memory_mib;
    bool removed;
};

/* Creates the group `<prefix><job>-<attempt>` under cg->dir with lim
 * applied and its join file open for agent_cgroup_join. A leftover group
 * of the same name is emptied and replaced. Returns 0 with a new group in
 * *out (agent_cgroup_destroy frees it), or a TIDE_E* code with err saying
 * what failed; nothing is left behind then. */
int agent_cgroup_create(const struct agent_cgroups *cg, int64_t job_id, int64_t attempt,
                        const struct agent_cgroup_limits *lim, struct agent_cgroup **out,
                        struct tide_err *err);

/* Moves the calling process, which must have a single thread, into the
 * group through procs_fd (or devices_fd). One write: meant for a child
 * between (v)fork and exec. 0 or -errno. */
int agent_cgroup_join(int procs_fd);

/* ---- GPU device isolation (cgroup_devices.c) ---- */

/* Finds how cg (its ops found) can keep tasks off GPUs: v1's devices
 * hierarchy beside v1's memory one, or a device program on v2. Sets
 * cg->devices (and devices_dir); why says why not. probe false: no files
 * are touched and v1 is taken as it is found. */
void agent_cgroup_devices_detect(struct agent_cgroups *cg, const char *proc_cgroup,
                                 const char *mountinfo, bool probe, char *why, size_t why_n);

/* Denies g's task the device minors in lim (none: nothing to do). 0 or a
 * TIDE_E* code with why filled. */
int agent_cgroup_devices_apply(struct agent_cgroup *g, int64_t job_id, int64_t attempt,
                               const struct agent_cgroup_limits *lim, char *why, size_t why_n);

/* Removes g's devices group (v1) once its task is gone. 0 or -errno. */
int agent_cgroup_devices_remove(struct agent_cgroup *g);

/* Closes procs_fd in the agent once the child has been started. */
void agent_cgroup_close_procs(struct agent_cgroup *g);

/* Whether the kernel's OOM killer ended a process of the group (false when
 * it cannot be told). */
bool agent_cgroup_oom_killed(const struct agent_cgroup *g, int leader_signal);

/* SIGKILLs whatever is left in the group and removes it. 0, or TIDE_EIO
 * when it is still busy or cannot be removed (call again later). */
int agent_cgroup_remove(struct agent_cgroup *g);

/* Removes the group if that was not done yet (failures are logged) and
 * frees it. Accepts NULL. */
void agent_cgroup_destroy(struct agent_cgroup *g);

/* ---- parsing and formatting, exposed for unit tests ---- */

/* The group path of controller in /proc/self/cgroup text
 * ("4:memory:/a/b"); controller NULL means the v2 line ("0::/a"). Returns
 * 0, TIDE_ENOENT when absent, TIDE_ETOOBIG when it does not fit in n. */
int agent_cgroup_parse_proc(const char *text, const char *controller, char *path, size_t n);

/* Finds in mountinfo text a read-write mount of fstype ("cgroup2",
 * "cgroup") that, when option is not NULL, has option among its super
 * options ("memory"), and whose root is a prefix of cgpath; writes the
 * directory that holds cgpath (mount point + the rest of cgpath) into dir.
 * Mount points are unescaped (\040 is a space). Returns 0, TIDE_ENOENT when
 * there is no such mount, TIDE_EPERM when the only one is read-only,
 * TIDE_ETOOBIG when it does not fit. */
int agent_cgroup_find_mount(const char *mountinfo, const char *fstype, const char *option,
                            const char *cgpath, char *dir, size_t n);

/* The value of `key N` in text of such lines (memory.events,
 * memory.oom_control). 0 or TIDE_ENOENT. */
int agent_cgroup_read_key(const char *text, const char *key, int64_t *out);

/* Whether word is one of the space-separated words of list
 * ("cpuset cpu io memory" has "cpu" but not "mem"). */
bool agent_cgroup_list_has(const char *list, const char *word);

/* Bytes of mib as a decimal string ("67108864"), for memory.max and
 * memory.limit_in_bytes. 0 or TIDE_EINVAL (not positive, or too large). */
int agent_cgroup_format_memory(int64_t memory_mib, char *buf, size_t n);

/* cpu.max for cpus whole CPUs: "200000 100000"; cpus 0 gives
 * "max 100000". 0 or TIDE_EINVAL. */
int agent_cgroup_format_cpu_max(int cpus, char *buf, size_t n);

/* Writes value to dir/file. 0 or -errno. */
int agent_cgroup_write(const char *dir, const char *file, const char *value);

/* Reads dir/file (at most 64 KiB) into a new string the caller frees.
 * 0 or -errno. */
int agent_cgroup_read(const char *dir, const char *file, char **out);

#endif
