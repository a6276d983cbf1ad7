/*
 * Could a job ever run here? Asked at submit, so that a job no node and no
 * pool could ever hold is refused with the reason (the field to blame and
 * what the largest node or pool offers) instead of waiting forever; a job
 * that only cannot run *now* is accepted and waits (STYLE.md: "never" and
 * "not now" stay apart up to the user). The simulator makes the same call
 * at arrival (sim_driver.c, fits_ever).
 */
#ifndef TIDE_FEASIBLE_H
#define TIDE_FEASIBLE_H

#include "common/tide_err.h"
#include "core/cluster.h"
#include "core/pool.h"

/* Checks job (its GPUs, GPU model and memory, MIG profile, CPUs, memory,
 * `nodes` for a gang, its queue's pools) against every node of c that is
 * not provisioning, released or failed (a lost or draining node may come
 * back) and against the nodes each pool could make (max_nodes of its
 * shape). Pool nodes are taken to have any CPUs and memory (a pool does
 * not say). When c has no such node and there is no pool with
 * max_nodes > 0, nothing is known yet and the job is accepted.
 * Returns 0, or TIDE_EINVAL with err naming the field (gpus, gpu_model,
 * gpu_memory, mig, cpus, memory, queue) and what is on offer. */
int feasible_check(const struct cluster *c, const struct pool *pools, int npools,
                   const struct job *job, struct tide_err *err);

#endif
