/*
 * Project budgets in the simulator: the core's budget_tick (core/budget.c)
 * meters the GPU-time each project's jobs hold at their pool's price on the
 * virtual clock, as the server's pool loop does every second; its alerts
 * are recorded, and a project at a hard cap has its waiting jobs held by
 * the same sched_pass and autoscaler check as in the server.
 *
 * The metering is exact: budget_tick runs just before the GPUs a budgeted
 * project holds change (a start, a finish, a requeue; between those the
 * charge is constant, so ticking less often loses nothing), and at budget
 * events: the millisecond the next threshold is crossed at the current
 * spending rate, and just before and at each UTC midnight, when spend
 * starts again at 0 (budget_tick splits a tick at midnight, as in the
 * server, so the old day's crossings are reported before its spend ends).
 *
 * The clock: virtual time 0 (the first submit) is 1970-01-01 00:00 UTC and
 * budget periods are the UTC days and calendar months of virtual time.
 */
#include <stdlib.h>
#include <string.h>

#include "sim/sim_state.h"

#define DAY_MS 86400000LL
#define HOUR_MS 3600000LL

int sim_budget_init(struct sim_state *st, const struct pool *pools, int npools,
                    struct tide_err *err)
{
    const struct sim_config *cfg = st->cfg;
    if (cfg->budgets.count == 0)
        return 0;
    struct sim_budget_state *b = calloc(1, sizeof *b);
    st->res->budgets = calloc(1, sizeof *st->res->budgets);
    if (!b || !st->res->budgets) {
        free(b);
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    }
    st->bud = b;
    b->set = cfg->budgets;
    b->set.last_ms = 0;
    b->set.started = false;
    for (int i = 0; i < b->set.count; i++) {
        struct budget *x = &b->set.items[i];
        memset(x->period, 0, sizeof x->period);
        memset(x->spent_micros, 0, sizeof x->spent_micros);
        memset(x->spent_rem, 0, sizeof x->spent_rem);
        memset(x->alerted_pct, 0, sizeof x->alerted_pct);
    }
    b->pools = pools;
    b->npools = npools;
    b->event_at = -1;
    b->of_project = malloc((st->res->nprojects + 1) * sizeof *b->of_project);
    b->held_mark = calloc(st->trace->njobs + 1, sizeof *b->held_mark);
    b->parked = malloc((st->trace->njobs + 1) * sizeof *b->parked);
    b->parked_pos = malloc((st->trace->njobs + 1) * sizeof *b->parked_pos);
    st->res->budgets->alerts = calloc(SIM_MAX_BUDGET_ALERTS, sizeof *st->res->budgets->alerts);
    if (!b->of_project || !b->held_mark || !b->parked || !b->parked_pos ||
        !st->res->budgets->alerts)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    memset(b->parked_pos, 0xff, (st->trace->njobs + 1) * sizeof *b->parked_pos);
    bool matched[TIDE_MAX_BUDGETS] = {false};
    for (size_t p = 0; p < st->res->nprojects; p++) {
        const struct budget *x = budget_find(&b->set, st->res->projects[p].name);
        b->of_project[p] = x ? (int32_t)(x - b->set.items) : -1;
        if (x)
            matched[x - b->set.items] = true;
    }
    /* A budget no job is charged to is a typo or the wrong trace: say so
     * rather than report a spend of 0. */
    for (int k = 0; k < b->set.count; k++)
        if (!matched[k])
            return tide_err_set(err, TIDE_EINVAL, "projects",
                                "projects[%d]: no job of the trace is in project '%s'", k,
                                b->set.items[k].project);
    /* Start the clock (the first call only does that). */
    budget_tick(&b->set, &st->c, pools, npools, 0, NULL, 0);
    return 0;
}

void sim_budget_release(struct sim_state *st)
{
    if (!st->bud)
        return;
    free(st->bud->of_project);
    free(st->bud->held_mark);
    free(st->bud->parked);
    free(st->bud->parked_pos);
    free(st->bud);
    st->bud = NULL;
}

static int budget_of_job(const struct sim_state *st, size_t i)
{
    return st->bud->of_project[st->res->jobs[i].project];
}

void sim_budget_gpus(struct sim_state *st, size_t i, int pool, int gpus, int sign)
{
    int k = budget_of_job(st, i);
    if (k >= 0)
        st->bud->rate[k] +=
            (int64_t)sign * gpus * pool_price_per_gpu_hour_micros(&st->bud->pools[pool]);
}

static void park(struct sim_budget_state *b, size_t i)
{
    b->parked_pos[i] = (int32_t)b->nparked;
    b->parked[b->nparked++] = (int32_t)i;
}

static void unpark(struct sim_budget_state *b, size_t i)
{
    int32_t pos = b->parked_pos[i];
    if (pos < 0)
        return;
    int32_t last = b->parked[--b->nparked];
    b->parked[pos] = last;
    b->parked_pos[last] = pos;
    b->parked_pos[i] = -1;
}

bool sim_budget_waiting(struct sim_state *st, size_t i, int sign)
{
    struct sim_budget_state *b = st->bud;
    int k = budget_of_job(st, i);
    if (k < 0)
        return false;
    b->pending[k] += sign;
    if (sign < 0) {
        st->res->jobs[i].budget_held_ms += st->res->budgets->held_ms[k] - b->held_mark[i];
        unpark(b, i);
        return false;
    }
    b->held_mark[i] = st->res->budgets->held_ms[k];
    if (!b->held[k])
        return false;
    park(b, i);
    return true;
}

void sim_budget_meter_job(struct sim_state *st, size_t i, int64_t t)
{
    if (budget_of_job(st, i) >= 0)
        sim_budget_tick(st, t);
}

void sim_budget_meter_starts(struct sim_state *st, int64_t t)
{
    struct sim_budget_state *b = st->bud;
    for (int k = 0; k < b->set.count; k++)
        if (b->pending[k] > 0 && !b->held[k]) {
            sim_budget_tick(st, t);
            return;
        }
}

bool sim_budget_holds(const struct sim_state *st, size_t i)
{
    int k = budget_of_job(st, i);
    return k >= 0 && st->bud->held[k];
}

void sim_budget_unpark_all(struct sim_state *st)
{
    struct sim_budget_state *b = st->bud;
    while (b->nparked > 0) {
        size_t i = (size_t)b->parked[b->nparked - 1];
        unpark(b, i);
        sim_waiting_list_add(st, i);
    }
}

/* Budget k's hold began (held) or ended: its waiting jobs leave or rejoin
 * the passes' list. */
static void hold_changed(struct sim_state *st, int k, bool held)
{
    struct sim_budget_state *b = st->bud;
    if (held) {
        for (size_t w = st->nwaiting; w-- > 0;) {
            size_t i = (size_t)(st->waiting[w] - 1);
            if (budget_of_job(st, i) == k) {
                sim_waiting_list_remove(st, i);
                park(b, i);
            }
        }
    } else {
        for (size_t w = b->nparked; w-- > 0;) {
            size_t i = (size_t)b->parked[w];
            if (budget_of_job(st, i) == k) {
                unpark(b, i);
                sim_waiting_list_add(st, i);
            }
        }
    }
}

void sim_budget_integrate(struct sim_state *st, int64_t dt)
{
    struct sim_budget_state *b = st->bud;
    struct sim_budgets *out = st->res->budgets;
    for (int k = 0; k < b->set.count; k++) {
        if (!b->held[k])
            continue;
        out->held_ms[k] += dt;
        out->held_job_ms[k] += (int64_t)b->pending[k] * dt;
        out->held_job_ms_total += (int64_t)b->pending[k] * dt;
    }
}

void sim_budget_tick(struct sim_state *st, int64_t t)
{
    struct sim_budget_state *b = st->bud;
    struct sim_budgets *out = st->res->budgets;
    if (b->set.last_ms >= t)
        return; /* metered to t already */
    struct budget_alert alerts[TIDE_MAX_BUDGETS * BUDGET_PERIODS];
    int n = budget_tick(&b->set, &st->c, b->pools, b->npools, t, alerts,
                        TIDE_MAX_BUDGETS * BUDGET_PERIODS);
    for (int a = 0; a < n; a++) {
        out->alerts_total++;
        out->alerts_by_budget[alerts[a].budget]++;
        if (out->nalerts >= SIM_MAX_BUDGET_ALERTS)
            continue;
        out->alerts[out->nalerts++] =
            (struct sim_budget_alert){.t_ms = t,
                                      .budget = alerts[a].budget,
                                      .period = alerts[a].period,
                                      .pct = alerts[a].pct,
                                      .spent_micros = alerts[a].spent_micros,
                                      .cap_micros = alerts[a].cap_micros};
    }
    /* Who is at a hard cap now (what budget_holds_job asks of each job). */
    for (int k = 0; k < b->set.count; k++) {
        if (!b->set.items[k].hard_cap)
            continue;
        bool held = budget_exhausted(&b->set.items[k]);
        if (b->held[k] == held)
            continue;
        b->unheld |= !held;
        b->held[k] = held;
        hold_changed(st, k, held);
    }
}

/* ceil(a / b) for a >= 0, b > 0. */
static int64_t div_up(__int128 a, int64_t b)
{
    return (int64_t)((a + b - 1) / b);
}

int sim_budget_schedule(struct sim_state *st, int64_t t)
{
    struct sim_budget_state *b = st->bud;
    if (st->finished >= st->trace->njobs)
        return 0;
    /* Spend as of the last tick, which may be before t. */
    int64_t last = b->set.last_ms;
    int64_t next = INT64_MAX;
    bool watch_midnight = false;
    for (int k = 0; k < b->set.count; k++) {
        const struct budget *x = &b->set.items[k];
        if (b->held[k] && b->pending[k] > 0)
            watch_midnight = true; /* the hold ends with the period */
        if (b->rate[k] <= 0)
            continue;
        watch_midnight = true; /* the spend is charged to its day */
        for (int p = 0; p < BUDGET_PERIODS; p++) {
            int64_t cap = x->cap_micros[p];
            if (cap <= 0)
                continue;
            /* The lowest threshold not yet reported, and the cap itself
             * for a hard cap: spent * 100 >= pct * cap, with spent the
             * metered spend rounded down to a micro-unit. */
            int64_t need = INT64_MAX;
            for (int a = 0; a < x->nalerts; a++)
                if (x->alert_pct[a] > x->alerted_pct[p]) {
                    need = div_up((__int128)x->alert_pct[a] * cap, 100);
                    break;
                }
            if (x->hard_cap && budget_spent_micros(x, (enum budget_period)p) < cap && cap < need)
                need = cap;
            if (need == INT64_MAX)
                continue;
            __int128 target = (__int128)need * HOUR_MS;
            /* Spend in micro-units x ms/hour, as budget_tick meters it. */
            __int128 spent = (__int128)x->spent_micros[p] * HOUR_MS + x->spent_rem[p];
            if (target <= spent)
                continue;
            __int128 wait = (target - spent + b->rate[k] - 1) / b->rate[k];
            int64_t when = sim_time_after(last, wait < SIM_TIME_MAX ? (int64_t)wait : SIM_TIME_MAX);
            if (when <= t)
                when = t + 1; /* cannot happen: a tick at t would have seen it */
            if (when < next)
                next = when;
        }
    }
    if (watch_midnight) {
        int64_t midnight = (budget_day_of(t) + 1) * DAY_MS;
        int64_t at = t < midnight - 1 ? midnight - 1 : midnight;
        if (at < next)
            next = at;
    }
    if (next == INT64_MAX || (b->event_at > t && b->event_at <= next))
        return 0;
    struct sim_event ev = {.t_ms = next, .kind = SIM_EV_BUDGET};
    if (sim_heap_push(&st->heap, ev) != 0)
        return TIDE_ENOMEM;
    b->event_at = next;
    return 0;
}

void sim_budget_finish(struct sim_state *st)
{
    struct sim_budget_state *b = st->bud;
    struct sim_budgets *out = st->res->budgets;
    for (size_t w = 0; w < st->nwaiting; w++) { /* never started: held until the end */
        size_t i = (size_t)(st->waiting[w] - 1);
        int k = budget_of_job(st, i);
        if (k >= 0)
            st->res->jobs[i].budget_held_ms += st->res->budgets->held_ms[k] - b->held_mark[i];
    }
    for (size_t i = 0; i < st->res->njobs; i++) {
        int k = budget_of_job(st, i);
        if (k >= 0 && st->res->jobs[i].budget_held_ms > 0)
            out->jobs_held[k]++;
    }
    for (int k = 0; k < b->set.count; k++)
        for (int p = 0; p < BUDGET_PERIODS; p++)
            out->spent_micros[k][p] = budget_spent_micros(&b->set.items[k], (enum budget_period)p);
}
