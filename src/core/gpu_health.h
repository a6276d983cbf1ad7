/*
 * GPU and node health: what a fault an agent reports (XID, ECC, heat, a GPU
 * fallen off the bus) or a failing health probe does to the cluster. A
 * faulty GPU gets no new work and its jobs are stopped through the
 * preemption path (checkpoint signal, requeued, no retry used); a node-wide
 * fault drains the node; repeated faults fail it. Pure: the shell persists.
 */
#ifndef TIDE_GPU_HEALTH_H
#define TIDE_GPU_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include "common/tide_err.h"
#include "core/action.h"
#include "core/cluster.h"

/* Drain reasons start with these, so what health did can be told apart. */
#define GPU_HEALTH_FAULT_PREFIX "gpu fault: "
#define GPU_HEALTH_PROBE_PREFIX "health probe failed: "

struct gpu_health_config {
    int node_fault_limit;    /* faults within the window that fail a node; 0: never */
    int64_t fault_window_ms; /* the window they are counted in */
};

/* What gpu_health_fault did, as bits of its return value. */
enum {
    GPU_HEALTH_NEW = 1,     /* the GPU (or node) was healthy until now */
    GPU_HEALTH_DRAINED = 2, /* the node was drained by this fault */
    GPU_HEALTH_FAILED = 4,  /* the node reached node_fault_limit */
};

/* Records fault ("xid 79") on the GPU with index gpu_index of node, and
 * on its MIG instances ("GPU n: FAULT"): they are cut from the same
 * hardware, and NVML reports faults only for whole GPUs. With node_wide
 * (fell off the bus), or when no GPU or instance of the node is healthy
 * any more, the whole node is drained with reason "gpu fault: GPU n:
 * FAULT". Jobs with a task on that GPU or its instances (every job on the
 * node when node_wide) get ACTION_PREEMPT (reason "gpu fault: ...") in out,
 * unless already stopping. A fault of a GPU that was healthy counts towards
 * cfg's limit (a faulty GPU's further faults do not); reaching it
 * sets node->health_failed (the node is drained; one joined by hand becomes
 * NODE_FAILED at once, a pool's node when its tasks have ended, see
 * autoscaler.c). Returns the GPU_HEALTH_* bits, TIDE_ENOENT (no such GPU)
 * or TIDE_ENOMEM. */
int gpu_health_fault(struct cluster *c, struct node *node, int gpu_index, const char *fault,
                     bool node_wide, const struct gpu_health_config *cfg, int64_t now_ms,
                     struct action_list *out);

/* Marks the MIG instances of node's faulty GPUs faulty too (an agent that
 * registers again may have cut new ones). */
void gpu_health_spread_to_instances(struct node *node);

/* The operator says the hardware is fine (tide nodes undrain): clears every
 * GPU fault, the fault count and a failed node's mark. The drain itself is
 * operator_undrain_node's. Returns how many GPUs were faulty. */
int gpu_health_clear(struct node *node);

/* A health probe's result at now_ms. Failing drains a node that is not
 * drained already (reason "health probe failed: OUTPUT", probe_drained
 * set); passing undrains only a drain the probe made. A pool's node stays
 * drained by its probe (not released as idle) until its pool's
 * boot_timeout_s has passed, then its autoscaler fails it for a new one.
 * Returns 1 when it drained the node, -1 when it undrained it, 0 when
 * nothing changed. */
int gpu_health_probe(struct node *node, bool ok, const char *output, int64_t now_ms);

/* GPUs of node that are faulty. */
int gpu_health_faulty_count(const struct node *node);

#endif
