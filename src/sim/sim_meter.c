/*
 * Elastic runs' metering into the core's billing (core/billing.h) without
 * billing_tick's walk of every node's GPUs at every event batch. What
 * billing_tick adds is, per pool, billed nodes x dt and, per project and
 * pool, GPUs held x dt. The driver knows both as they change: the nodes
 * alive per pool (created, booting, ready or draining: the billed states)
 * and each run's GPUs per pool from its start to its stop, which it adds up
 * per project anyway (sim_stop_running). So node-ms are added at each
 * batch, and GPU-ms, which nothing reads before the report, once at the
 * end: the same integers (sums of the same products), checked against
 * billing_tick itself by cfg->meter_by_walk (tests/unit/test_sim_elastic.c).
 */
#include "sim/sim_state.h"

#include "core/billing.h"

int sim_meter_tick(struct sim_state *st, int64_t t)
{
    struct billing *b = &st->el->billing;
    if (st->cfg->meter_by_walk)
        return billing_tick(b, &st->c, st->el->pools, st->el->npools, t);
    int64_t dt = billing_clock_step(b, t);
    for (int p = 0; dt && p < st->el->npools; p++)
        b->pools[p].node_ms +=
            (int64_t)billing_nodes_billed(&st->el->pools[p], st->alive_by_pool[p]) * dt;
    return 0;
}

int sim_meter_finish(struct sim_state *st)
{
    if (st->cfg->meter_by_walk)
        return 0;
    struct billing *b = &st->el->billing;
    const struct sim_result *res = st->res;
    for (int p = 0; p < st->el->npools; p++)
        b->pools[p].gpu_ms += res->gpu_ms_allocated_by_pool[p];
    for (size_t i = 0; i < res->nprojects; i++)
        for (int p = 0; p < st->el->npools; p++) {
            int64_t gpu_ms = res->projects[i].gpu_ms_by_pool[p];
            if (gpu_ms > 0 && billing_add_usage(b, res->projects[i].name, p, gpu_ms))
                return TIDE_ENOMEM;
        }
    return 0;
}
