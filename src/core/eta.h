/*
 * Start-time ETAs for pending jobs: a forward run of the scheduler's own
 * rule on a copy of the free GPU counts. GPUs of ready nodes come free as
 * their holders' expected runs end (eta_estimate.h: est_runtime,
 * max_runtime, or learned); at now and at each such end, the pending
 * jobs are taken in the scheduler's order and every one that fits is
 * started (a job that does not fit holds nothing, as in a pass), for its
 * own expected run. A job's ETA is when it starts in that run; one that
 * holds a backfill reservation starts at the reservation, on its node, and
 * holds that node's free GPUs until then; one whose reservation has no
 * known start also keeps each GPU of that node that frees, and starts
 * when it has them all. Queue caps (queue.h) hold as in
 * a pass: each capped queue's running jobs and GPUs are counted at now, a
 * planned start counts against its queue and a planned end releases it,
 * so a job its queue's cap keeps waiting starts when its queue has room
 * and its GPUs fit. A job in retry backoff (not_before_ms after now) is
 * planned after the scheduler's order, not before its not_before_ms; a
 * job held by its dependencies, a budget or an operator gets no ETA.
 * Pure: now is passed in; the plan's scratch is reused from call to call.
 *
 * What it leaves out: jobs not yet submitted, CPUs, memory, nodes still
 * booting, and GPUs shared by memory (not counted free); MIG instances
 * get no ETA, a share is planned as a whole GPU, a node is taken to have
 * one GPU model (its first GPU's), and a job asking for no GPU gets now
 * (or the end of its backoff) whatever its queue's cap. Cost:
 * O((running parts + pending) x (log + GPU sizes asked)) for jobs that
 * may use any node;
 * a job with a GPU model, memory, pool rules or a gang split that the
 * counts do not settle scans the nodes when it is considered, as does a
 * job in retry backoff; jobs are kept in lists by (capped queue, GPU
 * count), and each time the plan looks for a job to start it reads the
 * head of every list (a few per capped queue in use).
 */
#ifndef TIDE_ETA_H
#define TIDE_ETA_H

#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/eta_estimate.h"
#include "core/queue.h"

struct eta_shapes;

/* GPUs coming free on (delta > 0) or taken from (< 0) a plan node at t
 * (node -1: none), and the running jobs and GPUs a capped queue gains
 * (a reservation begins) or loses (a job ends) then (queue -1: none). */
struct eta_event {
    int64_t t_ms;
    int32_t node;
    int32_t delta;
    int16_t queue; /* index in the plan's queue set */
    int16_t qjobs;
    int32_t qgpus;
    uint8_t basis;
    uint8_t kind; /* 0: an end (or a backoff ending); 1: a reservation begins (after the ends at t) */
};

/* A pending job in the plan, in the scheduler's order. */
struct eta_item {
    struct job *job;
    int64_t run_ms;
    uint8_t run_basis;
    bool special;         /* not a whole-GPU job for any one node: checked on its own */
    int min_share;        /* special: the fewest GPUs it needs free on one node */
    int32_t shape;        /* special: its shape (eta_shapes.h) */
    int64_t not_before_ms; /* retry backoff: not started before this (special) */
    int16_t queue;         /* its capped queue's index in the plan's queue set; -1: none */
    bool done;
};

/* Scratch of a plan, kept between calls. */
struct eta_plan {
    struct node **nodes;  /* ready nodes */
    int32_t *free, *size; /* free and plannable GPUs per plan node */
    int32_t *next, *prev; /* nodes by free count: doubly linked lists */
    int32_t head[TIDE_MAX_GPUS_PER_NODE + 1];
    int32_t count[TIDE_MAX_GPUS_PER_NODE + 1];
    int max_free;
    size_t nnodes, nodes_cap;
    bool any_spot;
    struct eta_event *heap;
    size_t nheap, heap_cap;
    struct eta_item *items;
    size_t nitems, items_cap;
    int32_t *by_size; /* items of each list (capped queue, GPU count), in order */
    size_t by_size_cap;
    int32_t *size_start, *size_head; /* per list: its first item in by_size, its head */
    int32_t *lists;                  /* the lists with items */
    size_t nlists;
    int32_t lists_end; /* lists past the last with items (counts are 0 past it) */
    const struct queue_set *queues; /* caps; NULL: none (eta_plan_set_queues) */
    int32_t qjobs[TIDE_MAX_QUEUES], qgpus[TIDE_MAX_QUEUES]; /* running in each capped queue */
    int32_t *special; /* special items, in order */
    size_t nspecial, special_cap, special_head;
    struct eta_shapes *shapes; /* the special items by shape */
    /* The order is strict (fifo_strict, sjf_strict) without backfill: as
     * the pass stops at the first job that cannot start, so does each
     * round of the plan. Set by the caller from its scheduler's config;
     * default false. (With EASY backfill, jobs pass a blocked one around
     * its reservation, which the plan holds.) */
    bool strict;
};

void eta_plan_init(struct eta_plan *p);
void eta_plan_release(struct eta_plan *p);

/* The queues whose caps the plan keeps (NULL: none, the default); qs
 * must outlive the plan's runs. */
void eta_plan_set_queues(struct eta_plan *p, const struct queue_set *qs);

/* Plans the pending jobs order[0..n) (in the scheduler's order; entries
 * not pending are skipped) on c's ready nodes from now_ms and sets each
 * one's eta_start_ms (>= now_ms; 0 when unknown) and eta_basis. A
 * pending job of c in retry backoff (not held nor on hold, not_before_ms
 * after now_ms: the scheduler leaves it out of its order and clears
 * not_before_ms of the jobs it holds) is planned after them; every other
 * pending job of c gets no ETA (unknown). est may be NULL (nothing
 * learned). Returns 0, or TIDE_ENOMEM (then no job has an ETA). */
int eta_plan_run(struct eta_plan *p, struct cluster *c, const struct eta_estimator *est,
                 struct job *const *order, size_t n, int64_t now_ms);

#endif
