/*
 * What a scheduling pass that changed nothing leaves for the next one
 * (sched_pass_new): the end of its walk (failed shapes, queue use, the job
 * a strict order stopped at), where the job array ended, and the nodes as
 * the pass saw them. When the next pass finds the same nodes, the same
 * jobs and only new ones appended behind them, every earlier job would
 * meet the same cluster in the same place and get the same answer, so
 * only the new ones need a look.
 */
#ifndef TIDE_SCHED_QUIET_H
#define TIDE_SCHED_QUIET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/backfill.h"
#include "core/cluster.h"
#include "core/queue.h"

/* A pass only ever takes capacity, so once a job found no room, every later
 * job that asks for at least as much with no extra constraint finds none
 * either. Remembering a few such shapes skips most of the hopeless scans. */
struct failed_shape {
    int gpus, cpus;
    int64_t memory_mib;
    /* what it could preempt: a job of higher priority, or within its
     * quota where this one was not, may preempt more (sched.c) */
    int priority;
    bool in_quota;
};

#define FAILED_SHAPES 8

/* Running jobs and GPUs per queue, for the caps. */
struct queue_usage {
    int jobs[TIDE_MAX_QUEUES];
    int gpus[TIDE_MAX_QUEUES];
};

struct sched_quiet {
    /* The owner calls sched_pass_new: only then do passes keep this (the
     * nodes' copy costs O(nodes) a pass; the simulator never asks). */
    bool wanted;
    /* the last pass placed and preempted nothing, and reserved nothing
     * but what it would again (a reservation with an unknown start) */
    bool valid;
    /* The job array at its end: length, removals so far, last job's id,
     * base address. */
    size_t njobs;
    uint64_t jobs_removed; /* the cluster's count then */
    int64_t tail_id;
    const struct job *jobs_base;
    /* Its walk's state after the last job. */
    struct failed_shape failed[FAILED_SHAPES];
    int nfailed;
    bool reservation_tried;
    struct backfill_reservation reservation; /* held again by the next pass */
    int64_t stopped_at_id; /* strict order: the blocked job; 0: none */
    struct queue_usage usage;
    int64_t until_ms; /* a waiting job's priority escalates then: a full pass */
    /* The nodes as placement sees them, as words (sched_quiet_nodes_*). */
    uint64_t *words;
    size_t nwords, cap;
};

void sched_quiet_init(struct sched_quiet *q);
void sched_quiet_release(struct sched_quiet *q);

/* Remembers every node field placement, backfill and the explanations
 * read (not heartbeats). Returns 0, or TIDE_ENOMEM (then q is invalid). */
int sched_quiet_nodes_take(struct sched_quiet *q, const struct cluster *c);

/* Whether the nodes are as sched_quiet_nodes_take last found them. */
bool sched_quiet_nodes_same(const struct sched_quiet *q, const struct cluster *c);

/* Whether the rules leave a pending job's answer the same from one moment
 * to the next: no fair share (its use decays), no budgets, no round-robin
 * between queues. (Escalation falls due at known times: sched.c keeps the
 * first.) */
bool sched_quiet_rules_timeless(bool fairshare, bool budgets, bool queue_round_robin);

#endif
