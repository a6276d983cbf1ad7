/*
 * Placement of slices of a GPU (gpu_share.h): shares, packed by memory onto
 * one GPU, and MIG instances. Every strategy hands such jobs here, since
 * the placement index counts only whole free GPUs and a slice needs none.
 */
#ifndef TIDE_PLACEMENT_SLICE_H
#define TIDE_PLACEMENT_SLICE_H

#include "core/placement.h"

/* For a job that gpu_job_wants_slice: a MIG job gets the first free
 * instance of its profile (cluster order, then position on the node); a
 * share gets, best fit, the already shared GPU with the least memory left
 * that still fits it, else the smallest free GPU that fits, so whole GPUs
 * stay whole. A GPU over the utilisation threshold is skipped; the memory
 * threshold applies only to a GPU nobody shares yet (the memory of a
 * shared one is its shares', accounted by promise, not telemetry).
 * PLACEMENT_NEVER when no ready node has a GPU (or instance) that could
 * ever take it, with the reason in why. */
enum placement_result placement_slice_choose(const struct placement_config *cfg, struct cluster *c,
                                             const struct job *job, struct placement_choice *choice,
                                             const struct wait_why *why);

#endif
