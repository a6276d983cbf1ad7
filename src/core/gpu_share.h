/*
 * What a GPU entry of struct gpu can be handed out as: whole (one exclusive
 * holder in job_id), as shares (jobs with gpus 1 and a gpu_memory below the
 * GPU's memory, packed by memory), or, for a GPU in MIG mode, only through
 * its instances (entries of their own with mig_profile set). Every test of
 * "is this GPU free" goes through here, so the three never mix.
 */
#ifndef TIDE_GPU_SHARE_H
#define TIDE_GPU_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"

/* True for a GPU that can be handed out whole: not a MIG instance and not
 * in MIG mode (free or not). */
bool gpu_is_whole(const struct gpu *g);

/* True when an exclusive job could take g now: whole, no holder, no share. */
bool gpu_is_free(const struct gpu *g);

/* True when g is in use by tide: held, shared, or (an instance) held. */
bool gpu_in_use(const struct gpu *g);

/* True when job asks for a slice rather than whole GPUs: a MIG instance, or
 * gpus 1 with a gpu_memory (a share wherever that is below the GPU's memory). */
bool gpu_job_wants_slice(const struct job *job);

/* True when job, placed on g, is a share of it rather than its holder. */
bool gpu_job_is_share_of(const struct gpu *g, const struct job *job);

/* Memory of g not yet promised to shares (all of it when none). */
int64_t gpu_share_memory_left_mib(const struct gpu *g);

/* Records job on g: as a share (shared_jobs, shared_memory_mib) when
 * gpu_job_is_share_of, else as its exclusive holder (job_id). */
void gpu_take(struct gpu *g, const struct job *job);

/* Undoes gpu_take for job; a GPU job does not hold is left alone. */
void gpu_give_back(struct gpu *g, const struct job *job);

/* Gives back job's shares on node (the GPUs it was assigned there that it
 * does not hold whole); cluster_unassign's part for shares. */
void gpu_share_release_node(struct node *node, const struct job *job);

/* Physical GPUs of node: whole ones and those in MIG mode, not instances. */
int gpu_node_gpus_whole_or_mig(const struct node *node);

/* Physical GPUs of node in use: held or shared, or in MIG mode with an
 * instance held. */
int gpu_node_gpus_in_use(const struct node *node);

/* True when s has the shape of a MIG profile, <n>g.<m>gb (n 1..8, m >= 1),
 * as NVML names GPU instances ("1g.10gb", "3g.40gb"). */
bool gpu_mig_profile_valid(const char *s);

#endif
