/*
 * EASY backfill: when the first job in line cannot start, it gets a
 * reservation at the earliest time enough GPUs free up on one node, or for
 * a gang job (max_nodes > 1) on m nodes in equal shares as gang placement
 * splits it, the fewest nodes among equally early splits (from the running
 * jobs' est_runtime, else max_runtime). Later jobs may start
 * now only where they do not touch the reserved GPUs, or on them if they
 * will be done before the reservation begins. Jobs without any runtime
 * bound are taken to run forever, so they never delay a reservation.
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

struct backfill_reservation {
    bool active;
    int64_t job_id;
    struct node *node; /* parts[0].node */
    int64_t start_ms;
    int nparts; /* 1, or a gang's nodes */
    struct backfill_part parts[TIDE_MAX_GANG_NODES];
    struct job holder; /* a stand-in job that holds the reserved free GPUs */
};

/* The job's expected end if started at now_ms: est_runtime, else
 * max_runtime; INT64_MAX when it gives neither. */
int64_t backfill_expected_end_ms(const struct job *job, int64_t start_ms);

/* Finds the earliest reservation for `blocked`. Returns false when no node
 * will ever free enough GPUs in a known time (then nothing is reserved). */
bool backfill_reserve(const struct placement_config *cfg, struct cluster *c,
                      const struct job *blocked, int64_t now_ms, struct backfill_reservation *out);

/* Holds the reservation's GPUs that are free now (on = true) so a placement
 * does not pick them, or frees them again (on = false). */
void backfill_hold(struct cluster *c, struct backfill_reservation *r, bool on);

/* True when job, started now, ends before the reservation starts. */
bool backfill_fits_before(const struct backfill_reservation *r, const struct job *job,
                          int64_t now_ms);

#endif
