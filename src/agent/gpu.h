/*
 * The agent's view of a node's GPUs: a backend (NVML or fake) discovers the
 * devices once and samples their telemetry on every heartbeat. A backend is
 * a struct of function pointers, so a new one is a new file, not a new `if`.
 */
#ifndef TIDE_AGENT_GPU_H
#define TIDE_AGENT_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/tide_err.h"

/* Most GPUs one node may report; the API allows at most 512 per job. */
#define GPU_MAX_DEVICES 512

struct gpu_device {
    int index;
    char uuid[96];
    char name[96];
    int64_t memory_total_mib;
    bool mig_mode;
    /* A MIG instance: its profile ("3g.40gb") and its GPU's index; "" and
     * -1 for a physical GPU. Instances follow all physical GPUs. */
    char mig_profile[24];
    int parent_index;
    /* The minor number of its /dev/nvidiaN (what device isolation denies
     * by); -1 for a MIG instance or when unknown. */
    int minor;
};

struct gpu_telemetry {
    int64_t memory_used_mib;
    int utilization_pct;
    int temperature_c;
    int power_w;
};

/* A GPU's health as its backend sees it: seq counts the faults seen on it
 * since the agent started (0: none; heartbeats carry the agent's run, which
 * tells the server where the count began) and what names the latest ("xid 79",
 * "ecc 5", "temp 95", "lost"); node_wide once it has fallen off the bus. */
struct gpu_health {
    int64_t seq;
    char what[48];
    bool node_wide;
};

/* What a backend last read for one task, kept with the task: heartbeats
 * come after every start and exit, far more often than a task's telemetry
 * changes, and need not each read it again (the fake backend's file). */
struct gpu_claim_reading {
    int64_t at_ms; /* monotonic, when read; 0: never */
    int utilization_pct;
    int64_t memory_used_mib;
};

/* The GPUs one running task holds, the file where a task may script its
 * fake telemetry (only the fake backend reads it), and where its last
 * reading is kept (NULL: read every time). */
struct gpu_claim {
    const int *gpus;
    size_t ngpus;
    const char *telemetry_file;
    struct gpu_claim_reading *reading;
    /* whose processes: the task's job (leftovers.h), found also outside its
     * process group; NULL jobs_dir: by its process group alone */
    const char *jobs_dir;
    int64_t job_id;
};

struct gpu_backend;

struct gpu_ops {
    const char *name;
    /* Tasks see GPU indices (true) or UUIDs (false) in CUDA_VISIBLE_DEVICES;
     * true also means tasks get TIDE_FAKE_GPU_FILE. */
    bool visible_by_index;
    /* Discovers devices into be->devices/be->count and fills be->driver.
     * spec is backend-specific (the --fake-gpus value; NULL for NVML),
     * node_name makes fake UUIDs unique per node. */
    int (*open)(struct gpu_backend *be, const char *spec, const char *node_name,
                struct tide_err *err);
    /* Fills out[0..be->count) for the current moment. claims lists what
     * each running task holds. */
    int (*sample)(struct gpu_backend *be, const struct gpu_claim *claims, size_t nclaims,
                  struct gpu_telemetry *out, struct tide_err *err);
    /* GPU memory the task of claim (its processes are process group pgid)
     * uses now on its GPUs, in MiB, into *mib; 0 on success, TIDE_ENOENT
     * when the backend cannot tell. NULL: the backend never can. */
    int (*task_memory_mib)(struct gpu_backend *be, const struct gpu_claim *claim, pid_t pgid,
                           int64_t *mib);
    /* Fills out[0..be->count) with each GPU's health; faults are counted,
     * never forgotten, while the agent runs. NULL: the backend sees none. */
    int (*health)(struct gpu_backend *be, struct gpu_health *out, struct tide_err *err);
    /* Frees what open set up (devices and private state). */
    void (*close)(struct gpu_backend *be);
};

struct gpu_backend {
    const struct gpu_ops *ops;
    void *priv;
    char driver[96]; /* "fake", "none" or "nvidia <version>" */
    struct gpu_device *devices;
    size_t count;
    /* The fake backend's injected faults (--fake-fault-file, set by
     * gpu_fake_watch_faults); NULL: none. What the file held when the agent
     * started (that file and its size) was an earlier run's. */
    const char *fault_file;
    struct {
        unsigned long long dev, ino;
        long long bytes;
    } fault_origin;
};

extern const struct gpu_ops gpu_fake_ops; /* gpu_fake.c */
extern const struct gpu_ops gpu_nvml_ops; /* gpu_nvml.c */

/* Opens be with ops (see gpu_ops.open). On failure be is left empty and
 * safe to release. */
int gpu_backend_open(struct gpu_backend *be, const struct gpu_ops *ops, const char *spec,
                     const char *node_name, struct tide_err *err);

/* Makes be an empty backend with no devices, for nodes without GPUs. */
void gpu_backend_init_empty(struct gpu_backend *be, const char *driver);

/* Closes the backend; accepts an empty or already released one. */
void gpu_backend_release(struct gpu_backend *be);

/* The device with this index, or NULL. */
const struct gpu_device *gpu_backend_find(const struct gpu_backend *be, int index);

/* The minor number of the physical GPU behind index (a MIG instance's
 * GPU's); -1 when unknown. */
int gpu_backend_minor_of(const struct gpu_backend *be, int index);

/* The minors of the node's physical GPUs that a task holding gpus[0..n)
 * (indices) may not open, into deny (room for be->count); how many. */
size_t gpu_backend_denied_minors(const struct gpu_backend *be, const int *gpus, size_t n,
                                 int *deny);

/* Whether XID xid is one a program causes (13 graphics engine exception,
 * 31 memory page fault, 43 stopped processing, 45 preemptive cleanup):
 * the job's bug, not the GPU's fault. Counted as faults, a user's buggy
 * kernels would drain and fail every node they ran on. */
bool gpu_xid_is_a_programs(unsigned long long xid);

#endif
