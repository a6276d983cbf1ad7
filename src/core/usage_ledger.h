/*
 * The usage ledger, pure: what billing metered, kept per UTC day so that
 * cost can be asked for by project, pool, queue and day (GET /v1/usage,
 * `tide usage`). billing_tick() feeds it when billing.ledger is set,
 * splitting each tick at midnight UTC:
 *
 *   pool days  (day, pool): billed node-ms and GPU-ms held by tasks
 *   uses       (day, pool, project, queue, user): GPU-ms held by that work
 *
 * Nodes joined by hand (no pool) are metered too (usage_meter_static()),
 * under a pool index the owner reserves for them past its configured pools.
 *
 * A pool day's cost is the pool's cost of its node-ms counted on top of
 * every earlier day's (so prepaid packs are drawn once, in day order, and
 * the days add up to billing's total exactly). A use costs its share of
 * its pool day's cost by GPU-ms; the rest of the day is idle cost.
 */
#ifndef TIDE_USAGE_LEDGER_H
#define TIDE_USAGE_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/pool.h"

struct usage_pool_day {
    int64_t day; /* days since 1970-01-01 UTC */
    int pool;
    int64_t node_ms, gpu_ms;
    bool dirty; /* changed since usage_ledger_clean() */
};

struct usage_use {
    int64_t day;
    int pool;
    char project[TIDE_NAME_MAX];
    char queue[TIDE_NAME_MAX];
    char user[TIDE_NAME_MAX]; /* who submitted the work ("" when not known) */
    int64_t gpu_ms;
    bool dirty;
};

struct usage_ledger {
    struct usage_pool_day *days;
    size_t ndays, days_cap;
    struct usage_use *uses;
    size_t nuses, uses_cap;
    /* Uses before this index are of earlier days: searched only for a day
     * earlier than today's (a meter that crosses midnight late). */
    size_t today_from;
    /* Rows before these are all clean (saving and cleaning start there, so
     * a tick's cost does not grow with the ledger's history). */
    size_t days_dirty_from, uses_dirty_from;
};

void usage_ledger_init(struct usage_ledger *l);
void usage_ledger_release(struct usage_ledger *l);

/* Adds node_ms and gpu_ms to (day, pool). Returns 0 or TIDE_ENOMEM. */
int usage_ledger_add_pool(struct usage_ledger *l, int64_t day, int pool, int64_t node_ms,
                          int64_t gpu_ms);
/* Adds gpu_ms to (day, pool, project, queue, user ""). Returns 0 or TIDE_ENOMEM. */
int usage_ledger_add_use(struct usage_ledger *l, int64_t day, int pool, const char *project,
                         const char *queue, int64_t gpu_ms);
/* The same for work of a known user. */
int usage_ledger_add_user_use(struct usage_ledger *l, int64_t day, int pool, const char *project,
                              const char *queue, const char *user, int64_t gpu_ms);

/* Meters nodes joined by hand (pool "") from from_ms to to_ms as the cluster
 * is now, split at midnight UTC, into pool index `pool`: a node that is
 * ready or draining counts as provisioned (node-ms; its GPUs as capacity
 * through the pool's gpus_per_node, which the owner sets to 1 and so counts
 * GPU-ms of capacity in node_ms), each GPU a task holds as used by that
 * task's project, queue and user. Returns 0 or TIDE_ENOMEM. */
int usage_meter_static(struct usage_ledger *l, const struct cluster *c, int pool, int64_t from_ms,
                       int64_t to_ms);
/* Marks every row saved (store_usage_save() writes the dirty ones). */
void usage_ledger_clean(struct usage_ledger *l);

/* What a report is grouped by; 0 groups everything into one row. */
enum usage_group {
    USAGE_BY_PROJECT = 1,
    USAGE_BY_POOL = 2,
    USAGE_BY_QUEUE = 4,
    USAGE_BY_DAY = 8,
    USAGE_BY_USER = 16,
};

/* Parses "project,pool,queue,day,user" (any subset, any order) into a mask;
 * returns it, or -1 naming the bad word in bad (size 32). */
int usage_group_parse(const char *list, char *bad);

/* One row of a report. Keys not grouped by are "" (pool -1, day -1). Idle
 * rows hold the cost no task used, with project and queue "". */
struct usage_row {
    char project[TIDE_NAME_MAX];
    char queue[TIDE_NAME_MAX];
    char user[TIDE_NAME_MAX];
    int pool;
    int64_t day;
    bool idle;
    int64_t gpu_ms;      /* used by the row's work (idle rows: provisioned, unused) */
    int64_t cost_micros;
};

/* Capacity of one group of pool days, grouped by the pool and day keys of
 * the report only (pool -1 / day -1 when not grouped). */
struct usage_capacity {
    int pool;
    int64_t day;
    int64_t provisioned_gpu_ms, used_gpu_ms;
    int64_t cost_micros, idle_cost_micros;
};

struct usage_report {
    struct usage_row *rows;
    size_t nrows, rows_cap;
    struct usage_capacity *capacity;
    size_t ncapacity, capacity_cap;
    struct usage_capacity total; /* pool -1, day -1 */
};

/* Builds the report of days [from_day, to_day] (inclusive) grouped by
 * `group`, rows sorted by day, pool, project, queue (idle rows last in their
 * group). With project not NULL only that project's use is in the rows
 * (capacity, idle rows and the total stay the pools'). The caller frees it
 * with usage_report_release(). Returns 0 or TIDE_ENOMEM. */
int usage_ledger_report(const struct usage_ledger *l, const struct pool *pools, int npools,
                        unsigned group, int64_t from_day, int64_t to_day, const char *project,
                        struct usage_report *out);
void usage_report_release(struct usage_report *r);

#endif
