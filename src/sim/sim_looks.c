/*
 * Elastic runs: the autoscaler's looks every autoscale_interval, made only
 * when one could decide something.
 *
 * The server's pool loop looks every interval; the driver keeps that
 * chain of looks (after a batch with none coming, one interval later, then
 * every interval while jobs run or for SIM_POOL_HORIZON_MS after the last
 * change) but makes a look only at the first of its times at or after the
 * autoscaler's quiet_until_ms (autoscaler.h: before it, on a cluster that
 * did not change, a look decides nothing and changes nothing). The looks
 * in between are still counted, as decisions and as event batches, so the
 * report is the one every look would give: they would have been batches
 * with nothing in them but a look that decided nothing, which adds no
 * sample, and metering over a constant cluster is the same in one step.
 */
#include "sim/sim_state.h"

/* The last look of the chain when nothing runs: the first at or after
 * the horizon (it is made, then no more are planned). */
static int64_t chain_end(const struct sim_state *st)
{
    if (st->nrunning > 0)
        return INT64_MAX;
    int64_t horizon = st->last_activity_ms + SIM_POOL_HORIZON_MS;
    if (horizon <= st->pool_next_ms)
        return st->pool_next_ms;
    int64_t every = st->cfg->autoscale_interval_ms;
    return st->pool_next_ms + (horizon - st->pool_next_ms + every - 1) / every * every;
}

bool sim_looks_until(struct sim_state *st, int64_t t)
{
    if (!st->pool_tick_pending || st->pool_next_ms > t)
        return false;
    int64_t every = st->cfg->autoscale_interval_ms, end = chain_end(st);
    int64_t last = t - 1 < end ? t - 1 : end; /* the looks skipped: up to here */
    if (last >= st->pool_next_ms) {
        int64_t k = (last - st->pool_next_ms) / every + 1;
        st->el->decisions += k;
        st->res->batches += (size_t)k;
        st->pool_next_ms += k * every;
        if (st->pool_next_ms > end) {
            st->pool_tick_pending = false; /* the chain ended at its last look */
            return false;
        }
    }
    if (st->pool_next_ms != t)
        return false;
    st->pool_tick_pending = false; /* this batch makes the look */
    return true;
}

void sim_looks_plan(struct sim_state *st, int64_t t)
{
    size_t n = st->trace->njobs;
    if (!st->pool_tick_pending && st->finished < n &&
        (st->nrunning > 0 || t - st->last_activity_ms < SIM_POOL_HORIZON_MS)) {
        st->pool_next_ms = t + st->cfg->autoscale_interval_ms;
        st->pool_tick_pending = true;
    }
    if (!st->pool_tick_pending)
        return;
    int64_t every = st->cfg->autoscale_interval_ms, quiet = st->as.quiet_until_ms;
    int64_t wake = st->pool_next_ms;
    if (quiet > wake)
        wake = quiet == INT64_MAX ? INT64_MAX
                                  : wake + (quiet - wake + every - 1) / every * every;
    int64_t end = chain_end(st);
    st->pool_wake_ms = wake < end ? wake : end;
}
