/*
 * The waiting jobs by shape, each shape's jobs in policy order (an indexed
 * binary heap per shape), so a pass over a deep queue is given only the
 * jobs that could start: a pass places jobs of one shape in their order
 * and stops placing them at the first that does not fit (capacity only
 * shrinks within a pass), and never more of them than the free GPUs hold.
 * Given the first free_gpus / gpus jobs of each shape, sched_pass_ids
 * places exactly what it would place given every waiting job; under a
 * strict order one more of each shape, so that the first job that cannot
 * start (where the pass stops) is among them. Not with backfill (a job
 * behind a reservation may start where an earlier one of its shape could
 * not), budgets or queue rules; the driver uses it only without those.
 */
#ifndef TIDE_SIM_QUEUE_H
#define TIDE_SIM_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/order.h"

#define SIM_QUEUE_SHAPES 64

struct sim_queue_shape {
    int gpus, max_nodes;
    int64_t gpu_memory_mib;
    bool unbounded; /* needs no free GPU (a share, or none): all are candidates */
    int64_t *heap;  /* job ids, best first */
    size_t n, cap;
};

struct sim_queue {
    bool on;
    const struct order_ops *order;
    size_t extra; /* candidates per shape beyond what the free GPUs hold */
    struct cluster *c;
    int nshapes;
    struct sim_queue_shape shapes[SIM_QUEUE_SHAPES];
    int8_t *shape_of; /* per trace job (id - 1) while queued */
    int32_t *pos;     /* per trace job: its place in its shape's heap, -1: not queued */
    int64_t *out;     /* candidates of the last sim_queue_candidates */
    size_t out_cap;
};

/* Turns q on for njobs trace jobs ordered by order over c's jobs. Returns
 * 0 or TIDE_ENOMEM (q stays off). */
int sim_queue_init(struct sim_queue *q, struct cluster *c, const struct order_ops *order,
                   size_t njobs);
void sim_queue_release(struct sim_queue *q);

/* Job (in c, pending, its order fields final while it waits) begins or
 * ends waiting. More shapes than SIM_QUEUE_SHAPES, or no memory, turns q
 * off for the rest of the run. */
void sim_queue_add(struct sim_queue *q, const struct job *job);
void sim_queue_remove(struct sim_queue *q, int64_t id);

/* The ids a pass needs when at most free_gpus GPUs are free: per shape
 * its first free_gpus / gpus jobs, plus one under a strict order (all of
 * an unbounded shape). Returns
 * their number; *ids points into q. */
size_t sim_queue_candidates(struct sim_queue *q, int free_gpus, const int64_t **ids);

/* The first `want` queued jobs in policy order among shapes that `keep`
 * accepts (judged on the shape's first job), best first, into out. */
size_t sim_queue_first(struct sim_queue *q, size_t want, bool (*keep)(const struct job *, void *),
                       void *ctx, struct job **out);

#endif
