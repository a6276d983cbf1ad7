/* Metering and cost from integer counters (see billing.h). */
#include "core/billing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"
#include "core/budget.h"
#include "core/gpu_usage.h"

#include "core/core_banned.h"

#define MS_PER_HOUR 3600000

void billing_init(struct billing *b)
{
    memset(b, 0, sizeof *b);
}

void billing_release(struct billing *b)
{
    if (!b)
        return;
    free(b->usage);
    memset(b, 0, sizeof *b);
}

static bool node_billed(const struct node *n)
{
    return n->state == NODE_PROVISIONING || node_state_is_up(n->state) || n->state == NODE_LOST;
}

int billing_add_usage(struct billing *b, const char *project, int pool, int64_t gpu_ms)
{
    /* Names sit in jobs a few KiB apart: mix the address's bits. */
    uint64_t mixed = ((uint64_t)(uintptr_t)project ^ (uint64_t)pool) * 0x9E3779B97F4A7C15ULL;
    size_t h = (size_t)(mixed >> 58); /* one of 64 */
    size_t row = b->hint[h].row;
    if (b->hint[h].project == project && row < b->nusage && b->usage[row].pool == pool &&
        !strcmp(b->usage[row].project, project)) {
        b->usage[row].gpu_ms += gpu_ms;
        return 0;
    }
    for (size_t i = 0; i < b->nusage; i++)
        if (b->usage[i].pool == pool && !strcmp(b->usage[i].project, project)) {
            b->usage[i].gpu_ms += gpu_ms;
            b->hint[h].project = project;
            b->hint[h].row = i;
            return 0;
        }
    if (b->nusage == b->usage_cap) {
        size_t cap = b->usage_cap ? b->usage_cap * 2 : 16;
        struct billing_usage *grown = realloc(b->usage, cap * sizeof *grown);
        if (!grown)
            return TIDE_ENOMEM;
        b->usage = grown;
        b->usage_cap = cap;
    }
    struct billing_usage *u = &b->usage[b->nusage++];
    memset(u, 0, sizeof *u);
    snprintf(u->project, sizeof u->project, "%s", project);
    u->pool = pool;
    u->gpu_ms = gpu_ms;
    return 0;
}

#define MS_PER_DAY 86400000LL

struct metering {
    struct billing *b;
    int pool;
    int64_t day;
    int64_t *gpu_ms; /* the pool's */
};

/* One job's GPU time on a node of the pool (gpu_usage_fn). */
static int meter_job(const struct job *job, int64_t job_id, int64_t ms, void *ctx)
{
    (void)job_id;
    struct metering *m = ctx;
    const char *project = job ? job->project : "?";
    *m->gpu_ms += ms;
    if (billing_add_usage(m->b, project, m->pool, ms))
        return TIDE_ENOMEM;
    if (m->b->ledger && usage_ledger_add_user_use(m->b->ledger, m->day, m->pool, project,
                                                  job ? job->queue : "?", job ? job->user : "", ms))
        return TIDE_ENOMEM;
    return 0;
}

/* Meters from_ms to to_ms of the cluster as it is now into day. */
static int meter(struct billing *b, const struct cluster *c, const struct pool *pools, int npools,
                 int64_t day, int64_t from_ms, int64_t to_ms)
{
    int64_t dt = to_ms - from_ms;
    int alive[TIDE_MAX_POOLS] = {0};
    int64_t gpu_ms[TIDE_MAX_POOLS] = {0};
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct node *n = &c->nodes[i];
        if (!node_billed(n))
            continue; /* gone (released nodes stay in the array): no name to look up */
        int p = n->pool[0] ? pool_find(pools, npools, n->pool) : -1;
        if (p < 0)
            continue;
        alive[p]++;
        struct metering m = {.b = b, .pool = p, .day = day, .gpu_ms = &gpu_ms[p]};
        int rc = gpu_usage_on_node((struct cluster *)c, n, from_ms, to_ms, meter_job, &m);
        if (rc)
            return rc;
    }
    for (int p = 0; p < npools && p < TIDE_MAX_POOLS; p++) {
        int billed = billing_nodes_billed(&pools[p], alive[p]);
        b->pools[p].node_ms += (int64_t)billed * dt;
        b->pools[p].gpu_ms += gpu_ms[p];
        if (b->ledger && (billed || gpu_ms[p]) &&
            usage_ledger_add_pool(b->ledger, day, p, (int64_t)billed * dt, gpu_ms[p]))
            return TIDE_ENOMEM;
    }
    return 0;
}

int billing_nodes_billed(const struct pool *pool, int alive)
{
    return pool->billing == BILLING_RESERVED && alive < pool->min_nodes ? pool->min_nodes : alive;
}

/* Whether a tick at now_ms has time to meter; the first only starts the
 * clock. */
static bool clock_runs(struct billing *b, int64_t now_ms)
{
    if (!b->started) {
        b->started = true;
        b->last_ms = now_ms;
        return false;
    }
    return now_ms > b->last_ms;
}

int64_t billing_clock_step(struct billing *b, int64_t now_ms)
{
    if (!clock_runs(b, now_ms))
        return 0;
    int64_t dt = now_ms - b->last_ms;
    b->last_ms = now_ms;
    return dt;
}

int billing_tick(struct billing *b, const struct cluster *c, const struct pool *pools, int npools,
                 int64_t now_ms)
{
    if (!clock_runs(b, now_ms))
        return 0;
    /* Without a ledger days don't matter: one step. With one, a tick that
     * spans midnight UTC is split there. */
    while (b->last_ms < now_ms) {
        int64_t day = budget_day_of(b->last_ms);
        int64_t end = b->ledger ? (day + 1) * MS_PER_DAY : now_ms;
        if (end > now_ms)
            end = now_ms;
        if (meter(b, c, pools, npools, day, b->last_ms, end))
            return TIDE_ENOMEM;
        b->last_ms = end;
    }
    return 0;
}

int64_t billing_cost_micros(int64_t ms, int64_t price_per_hour_micros)
{
    if (ms <= 0 || price_per_hour_micros <= 0)
        return 0;
    return (int64_t)((__int128)ms * price_per_hour_micros / MS_PER_HOUR);
}

static int64_t node_price(const struct pool *p)
{
    if (p->billing == BILLING_SPOT && p->spot_price_per_node_hour_micros > 0)
        return p->spot_price_per_node_hour_micros;
    return p->price_per_node_hour_micros;
}

int64_t billing_pool_cost_micros(const struct billing *b, const struct pool *pools, int i)
{
    return billing_pool_cost_at(&pools[i], b->pools[i].node_ms);
}

int64_t billing_pool_cost_at(const struct pool *p, int64_t node_ms)
{
    if (p->billing == BILLING_PACK && p->gpus_per_node > 0) {
        /* GPU-ms beyond the prepaid pack, at the per-GPU rate. */
        int64_t gpu_ms = node_ms * p->gpus_per_node - p->pack_gpu_hours * MS_PER_HOUR;
        if (gpu_ms <= 0)
            return 0;
        return (int64_t)((__int128)gpu_ms * node_price(p) / ((__int128)MS_PER_HOUR * p->gpus_per_node));
    }
    return billing_cost_micros(node_ms, node_price(p));
}

/* The cost of part of pool i's GPU time: gpu_ms of its capacity so far,
 * at the share of the pool's cost that much capacity bears. Rounded down
 * once, from exact products, so that it never falls as time goes on (the
 * cost counters of /metrics are rated: a dip of one micro reads as a
 * reset). */
static int64_t part_cost(const struct billing *b, const struct pool *pools, int i, int64_t gpu_ms)
{
    const struct pool *p = &pools[i];
    int gpn = p->gpus_per_node > 0 ? p->gpus_per_node : 1;
    int64_t capacity = b->pools[i].node_ms * gpn, charged = capacity; /* GPU-ms */
    if (p->billing == BILLING_PACK && p->gpus_per_node > 0)
        charged = capacity - p->pack_gpu_hours * MS_PER_HOUR; /* the pack's are paid for */
    if (capacity <= 0 || charged <= 0 || gpu_ms <= 0)
        return 0;
    if (gpu_ms > capacity)
        gpu_ms = capacity;
    __int128 part = (__int128)charged * gpu_ms / capacity; /* its charged GPU-ms */
    return (int64_t)(part * node_price(p) / ((__int128)MS_PER_HOUR * gpn));
}

int64_t billing_usage_cost_micros(const struct billing *b, const struct pool *pools,
                                  const struct billing_usage *u)
{
    return part_cost(b, pools, u->pool, u->gpu_ms);
}

int64_t billing_pool_idle_cost_micros(const struct billing *b, const struct pool *pools, int i)
{
    int64_t capacity = b->pools[i].node_ms * (pools[i].gpus_per_node > 0 ? pools[i].gpus_per_node : 1);
    int64_t idle = capacity;
    for (size_t k = 0; k < b->nusage; k++)
        if (b->usage[k].pool == i)
            idle -= b->usage[k].gpu_ms < capacity ? b->usage[k].gpu_ms : capacity;
    return part_cost(b, pools, i, idle);
}

int64_t billing_node_cost_micros(const struct pool *pool, const struct node *n, int64_t now_ms)
{
    if (!n->created_ms)
        return 0;
    int64_t end = n->ended_ms ? n->ended_ms : now_ms;
    return billing_cost_micros(end - n->created_ms, node_price(pool));
}
