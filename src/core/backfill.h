/*
 * EASY backfill: when the first job in line cannot start, it gets a
 * reservation at the earliest time enough GPUs free up on one node, or for
 * a gang job (max_nodes > 1) on m nodes in equal shares as gang placement
 * splits it, the fewest nodes among equally early splits (from the running
 * jobs' est_runtime, else max_runtime). Later jobs may start
 * now only where they do not touch the reserved GPUs, or on them if they
 * will be done before the reservation begins. Jobs without any runtime
 * bound are taken to run forever, so they never delay a reservation.
 * When no node's time is known (the GPUs it waits for are held by jobs
 * that give no runtime, the default), it still reserves, on the node(s)
 * with the fewest such GPUs to wait for, and its start is unknown: their
 * GPUs are held for it as they free up, since any job put there could
 * delay it by an unknown amount, while other nodes keep taking jobs.
 */
#ifndef TIDE_BACKFILL_H
#define TIDE_BACKFILL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/placement.h"

struct backfill_part {
    struct node *node;
    int ngpus;
    int gpu_index[TIDE_MAX_GPUS_PER_NODE];
};

/* A reservation's start_ms when no node's time is known. */
#define BACKFILL_START_UNKNOWN INT64_MAX

struct backfill_reservation {
    bool active;
    int64_t job_id;
    struct node *node; /* parts[0].node */
    int64_t start_ms;  /* or BACKFILL_START_UNKNOWN */
    int nparts; /* 1, or a gang's nodes */
    struct backfill_part parts[TIDE_MAX_GANG_NODES];
    struct job holder; /* a stand-in job that holds the reserved free GPUs */
};

/* The job's expected end if started at now_ms: est_runtime, else
 * max_runtime; INT64_MAX when it gives neither. */
int64_t backfill_expected_end_ms(const struct job *job, int64_t start_ms);

/* Finds the earliest reservation for `blocked`, one with an unknown start
 * when no node frees enough GPUs in a known time. Returns false when no
 * node (or split) could ever hold it, or for a GPU share (nothing is
 * reserved then). */
bool backfill_reserve(const struct placement_config *cfg, struct cluster *c,
                      const struct job *blocked, int64_t now_ms, struct backfill_reservation *out);

/* Holds the reservation's GPUs that are free now (on = true) so a placement
 * does not pick them, or frees them again (on = false). */
void backfill_hold(struct cluster *c, struct backfill_reservation *r, bool on);

/* True when r is active with a known start: a job that ends before it may
 * use its GPUs (one with an unknown start lends none). */
bool backfill_lends(const struct backfill_reservation *r);

/* True when job, started now, ends before the reservation starts (never
 * before an unknown start). */
bool backfill_fits_before(const struct backfill_reservation *r, const struct job *job,
                          int64_t now_ms);

#endif
