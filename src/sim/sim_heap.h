/*
 * The simulator's event queue: a binary min-heap of timed events ordered by
 * (time, kind, job, gen), so events at the same time always come out in the same
 * order and a run is deterministic.
 */
#ifndef TIDE_SIM_HEAP_H
#define TIDE_SIM_HEAP_H

#include <stddef.h>
#include <stdint.h>

/* BOOT: node (id in job) of an elastic pool is ready; INTERRUPT: a
 * spot node is reclaimed; SPOT: an interrupted node's deadline; BUDGET: a
 * budget threshold is crossed or a budget period ends. (The autoscaler's
 * periodic looks are planned by sim_looks.c, not queued here.) */
enum sim_event_kind {
    SIM_EV_FINISH = 0,
    SIM_EV_TICK = 1,
    SIM_EV_BOOT = 2,
    SIM_EV_INTERRUPT = 4,
    SIM_EV_SPOT = 5,
    SIM_EV_BUDGET = 6,
};

struct sim_event {
    int64_t t_ms;
    uint32_t kind;
    uint32_t job; /* index into the trace (BOOT: node index) */
    uint32_t gen; /* the job's run generation: stale finishes are skipped */
};

struct sim_heap {
    struct sim_event *items;
    size_t len, cap;
};

void sim_heap_init(struct sim_heap *h);
void sim_heap_release(struct sim_heap *h);
/* Returns 0 or -1 when out of memory. */
int sim_heap_push(struct sim_heap *h, struct sim_event ev);
/* Removes the earliest event into *out; -1 when empty. */
int sim_heap_pop(struct sim_heap *h, struct sim_event *out);
/* The earliest event, or NULL when empty. */
const struct sim_event *sim_heap_peek(const struct sim_heap *h);

#endif
