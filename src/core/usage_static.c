/* Metering of nodes joined by hand into the usage ledger (see
 * usage_meter_static() in usage_ledger.h): what billing does for pool
 * nodes, for the nodes no pool bills. */
#include "core/usage_ledger.h"

#include "common/tide_err.h"
#include "core/budget.h"
#include "core/gpu_usage.h"

#include "core/core_banned.h"

#define MS_PER_DAY 86400000LL

static bool node_metered(const struct node *n)
{
    return !n->pool[0] && node_state_is_up(n->state);
}

struct static_use {
    struct usage_ledger *l;
    int pool;
    int64_t day, used_ms;
};

/* A job's GPU time on a node joined by hand (gpu_usage_fn). */
static int use_static(const struct job *job, int64_t job_id, int64_t gpu_ms, void *ctx)
{
    (void)job_id;
    struct static_use *u = ctx;
    u->used_ms += gpu_ms;
    return usage_ledger_add_user_use(u->l, u->day, u->pool, job ? job->project : "?",
                                     job ? job->queue : "?", job ? job->user : "", gpu_ms)
               ? TIDE_ENOMEM
               : 0;
}

/* Meters from_ms to from_ms + dt of the cluster as it is now into day. */
static int meter_day(struct usage_ledger *l, const struct cluster *c, int pool, int64_t day,
                     int64_t from_ms, int64_t dt)
{
    int64_t capacity_ms = 0;
    struct static_use u = {.l = l, .pool = pool, .day = day};
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct node *n = &c->nodes[i];
        if (!node_metered(n))
            continue;
        for (int g = 0; g < n->ngpus; g++)
            if (!n->gpus[g].mig_profile[0]) /* MIG instances are parts of a GPU counted already */
                capacity_ms += dt;
        int rc = gpu_usage_on_node((struct cluster *)c, n, from_ms, from_ms + dt, use_static, &u);
        if (rc)
            return rc;
    }
    int64_t used_ms = u.used_ms;
    if ((capacity_ms || used_ms) && usage_ledger_add_pool(l, day, pool, capacity_ms, used_ms))
        return TIDE_ENOMEM;
    return 0;
}

int usage_meter_static(struct usage_ledger *l, const struct cluster *c, int pool, int64_t from_ms,
                       int64_t to_ms)
{
    while (from_ms < to_ms) {
        int64_t day = budget_day_of(from_ms);
        int64_t end = (day + 1) * MS_PER_DAY;
        if (end > to_ms)
            end = to_ms;
        int rc = meter_day(l, c, pool, day, from_ms, end - from_ms);
        if (rc)
            return rc;
        from_ms = end;
    }
    return 0;
}
