/*
 * Fair share between projects. Each project has a quota (GPUs) and a
 * weight. Jobs that fit in their project's quota are served first; beyond
 * it a job borrows idle capacity, borrowers ordered by their project's
 * recent use per weight, and borrowed GPUs are taken back (borrowed,
 * preemptible work is preempted) when a project within its quota needs
 * them. Use decays with a half-life, so fairness is over recent history.
 * Without configured projects every job counts as within quota.
 */
#ifndef TIDE_FAIRSHARE_H
#define TIDE_FAIRSHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"

#define TIDE_MAX_PROJECTS 256

struct project_config {
    char name[TIDE_NAME_MAX];
    int quota_gpus;
    int weight; /* >= 1 */
};

struct project_share {
    struct project_config cfg;
    int running_gpus;         /* held by its jobs now */
    int borrowed_gpus;        /* of which beyond its quota */
    double usage_gpu_s;       /* decayed GPU-seconds */
};

struct fairshare {
    struct project_share projects[TIDE_MAX_PROJECTS];
    int count;
    int64_t half_life_s;
    int64_t updated_ms; /* 0 before the first update */
};

void fairshare_init(struct fairshare *fs, int64_t half_life_s);

/* Adds a project; returns it, or NULL when full or the name exists. */
struct project_share *fairshare_add(struct fairshare *fs, const struct project_config *cfg);

struct project_share *fairshare_find(struct fairshare *fs, const char *name);

/* Decays use to now_ms, adds the GPU time of running jobs since the last
 * update, and recounts running and borrowed GPUs per project; the jobs of
 * a project back within its quota no longer count as borrowed. */
void fairshare_update(struct fairshare *fs, struct cluster *c, int64_t now_ms);

/* Sets job->in_quota and job->share_key for a pending job. */
void fairshare_classify(const struct fairshare *fs, struct job *job);

/* Quota left after the jobs ahead in line: walks pending jobs in scheduling
 * order and makes borrowers of those within quota on their own that would
 * pass it together with their project's earlier ones. Returns true when any
 * job changed (the order must then be sorted again). */
bool fairshare_claim_in_order(const struct fairshare *fs, struct job **order, size_t n);

/* After a restart: marks running jobs beyond their project's quota as
 * borrowed, as if they had started oldest first. 0 or TIDE_ENOMEM. */
int fairshare_mark_borrowed(struct fairshare *fs, struct cluster *c);

/* Records that job is being started now (counts its GPUs, marks it borrowed
 * when beyond quota). */
void fairshare_note_start(struct fairshare *fs, struct job *job);

#endif
