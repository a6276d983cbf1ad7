/*
 * The waiting jobs as the autoscaler sees them, kept up to date by the
 * caller instead of found again in every call: grouped by scale shape
 * (GPUs, gang nodes, GPU memory and model, preemptible, queue rules: all
 * that decides which nodes and pools may hold a job), each group in age
 * order (submit time, then id). With it autoscaler_decide visits only the
 * jobs that can still get something (autoscaler.h, demand), so a deep
 * queue at max_nodes costs a few steps per shape rather than a sort of
 * every waiting job. The simulator keeps one; the server does not (it
 * scans, as without one).
 *
 * A job's slot is found again by its shape and (submit_ms, id), which must
 * not change while it is in. Removed slots are marked and swept out once
 * they outnumber the live ones.
 */
#ifndef TIDE_DEMAND_H
#define TIDE_DEMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"

struct demand_slot {
    int64_t submit_ms;
    int64_t id; /* negative: removed */
};

struct demand_shape {
    struct job key;           /* the shape's fields (the rest zero): a stand-in job */
    struct demand_slot *slots; /* by (submit_ms, |id|) */
    size_t n, cap, live;
    size_t head; /* no live slot before it */
};

struct demand {
    struct demand_shape *shapes;
    int nshapes, cap;
};

void demand_init(struct demand *d);
void demand_release(struct demand *d);

/* Job begins to wait. 0, or TIDE_ENOMEM (then d no longer has every
 * waiting job: stop using it). */
int demand_add(struct demand *d, const struct job *job);
/* Job stops waiting (started, gone); no-op when not in. */
void demand_remove(struct demand *d, const struct job *job);

/* Jobs in it. */
size_t demand_count(const struct demand *d);

/* Whether two jobs have the same scale shape. */
bool demand_same_shape(const struct job *a, const struct job *b);

/* The first slot of shape s at or after `from` whose (submit_ms, id) comes
 * after (submit_ms, id) (all when id is 0), skipping removed ones; s->n
 * when none. */
size_t demand_next(const struct demand_shape *s, size_t from, int64_t submit_ms, int64_t id);

#endif
