/*
 * GPU time as metering counts it: in physical GPUs. A job holding a whole
 * GPU uses all of it; a MIG instance is its compute slices of its GPU's
 * ("3g.40gb": 3 of 7; an A30 has 4); a share (gpu_memory below the GPU's)
 * is its promised memory of the GPU's. Billing, budgets and the usage of
 * nodes joined by hand all meter through it, so that seven 1g instances
 * cost one GPU and a share costs its part, not nothing.
 */
#ifndef TIDE_GPU_USAGE_H
#define TIDE_GPU_USAGE_H

#include <stdint.h>

#include "core/cluster.h"

/* Told each job's GPU time on a node (job NULL: an id no longer in the
 * cluster; job_id says which). Non-zero stops the walk and is returned. */
typedef int (*gpu_usage_fn)(const struct job *job, int64_t job_id, int64_t gpu_ms, void *ctx);

/* Calls use once per job with GPU time on node n from from_ms to to_ms
 * (a job's whole GPUs together). A part of a GPU is counted as the
 * difference of its whole milliseconds at the two times, so that
 * consecutive intervals add up to the exact total (no rounding lost per
 * tick). c is not changed, but finding a node's shares may rebuild its job
 * index. Returns 0 or use's first non-zero. */
int gpu_usage_on_node(struct cluster *c, const struct node *n, int64_t from_ms, int64_t to_ms,
                      gpu_usage_fn use, void *ctx);

/* The compute slices of a MIG profile ("3g.40gb": 3) and of the whole GPU
 * it is carved from (named gpu_name): 7, or 4 on an A30. */
int gpu_mig_slices(const char *profile);
int gpu_mig_slices_of_gpu(const char *gpu_name);

#endif
