/*
 * Metering and cost, pure: billing_tick() is called with `now` (every
 * second by the server, on the virtual clock by the simulator) and adds the
 * milliseconds since its last call to each pool node that exists
 * (provisioning, ready, draining or lost) and to each project whose tasks
 * hold GPUs on pool nodes, and to the usage ledger by day when one is set
 * (core/usage_ledger.h). Costs are derived from those integer counters
 * when asked, so rounding never accumulates:
 *
 *   on_demand  node-ms x price per node-hour
 *   reserved   max(min_nodes, nodes alive) are billed, used or not
 *   spot       node-ms x spot price (price when no spot price is set)
 *   pack       the first pack_gpu_hours GPU-hours are prepaid, then price
 *
 * A project's cost is its share of its pool's cost by GPU-ms used; the rest
 * is the pool's idle cost. Money is integer micro-units, rounded down.
 */
#ifndef TIDE_BILLING_H
#define TIDE_BILLING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/pool.h"
#include "core/usage_ledger.h"

struct billing_usage {
    char project[TIDE_NAME_MAX];
    int pool;
    int64_t gpu_ms;
};

struct billing_pool {
    int64_t node_ms; /* billed node-milliseconds (reserved: includes unused reserved nodes) */
    int64_t gpu_ms;  /* GPU-milliseconds held by tasks */
};

struct billing {
    int64_t last_ms; /* the last tick's time */
    bool started;    /* false before the first tick (virtual clocks start at 0) */
    struct billing_pool pools[TIDE_MAX_POOLS];
    struct billing_usage *usage;
    size_t nusage, usage_cap;
    struct usage_ledger *ledger; /* also fed per UTC day when not NULL (not owned) */
    /* Where a project's row was last found, by the address of the name it
     * was asked with (a hint, checked before use): metering asks for the
     * same few rows every tick. */
    struct {
        const char *project;
        size_t row;
    } hint[64];
};

void billing_init(struct billing *b);
void billing_release(struct billing *b);

/* Meters from the last tick to now_ms (the first call only starts the
 * clock). Returns 0 or TIDE_ENOMEM. */
int billing_tick(struct billing *b, const struct cluster *c, const struct pool *pools, int npools,
                 int64_t now_ms);

/* The clock's step to now_ms: the ms since the last tick, moving the clock
 * to now_ms; 0 on the first call (which only starts it) and when now_ms is
 * not past the last tick. For a caller that meters by itself (the
 * simulator's sim_meter.c) as billing_tick would. */
int64_t billing_clock_step(struct billing *b, int64_t now_ms);

/* The nodes pool bills while alive of them exist: reserved pools bill
 * min_nodes at least, used or not. */
int billing_nodes_billed(const struct pool *pool, int alive);

/* Adds gpu_ms to (project, pool), e.g. when loading saved counters. */
int billing_add_usage(struct billing *b, const char *project, int pool, int64_t gpu_ms);

/* ms at price_per_hour_micros, rounded down. */
int64_t billing_cost_micros(int64_t ms, int64_t price_per_hour_micros);

/* What pool costs for node_ms billed node-milliseconds in all (packs
 * drawn first). */
int64_t billing_pool_cost_at(const struct pool *pool, int64_t node_ms);

/* What pool i has cost so far. */
int64_t billing_pool_cost_micros(const struct billing *b, const struct pool *pools, int i);
/* The part of pool i's cost no task used. */
int64_t billing_pool_idle_cost_micros(const struct billing *b, const struct pool *pools, int i);
/* The share of its pool's cost attributed to one usage row. */
int64_t billing_usage_cost_micros(const struct billing *b, const struct pool *pools,
                                  const struct billing_usage *u);
/* One node's cost from created_ms to ended_ms (or now_ms while alive). */
int64_t billing_node_cost_micros(const struct pool *pool, const struct node *n, int64_t now_ms);

#endif
