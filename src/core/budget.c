/* Project budgets: metering, periods, alerts and hard caps (see budget.h). */
#include "core/budget.h"

#include <stdio.h>
#include <string.h>

#include "common/tide_err.h"
#include "core/gpu_usage.h"

#include "core/core_banned.h"

#define MS_PER_DAY 86400000LL
#define MS_PER_HOUR 3600000LL

const char *budget_period_name(enum budget_period p)
{
    return p == BUDGET_DAILY ? "daily" : p == BUDGET_MONTHLY ? "monthly" : "?";
}

void budget_set_init(struct budget_set *bs)
{
    memset(bs, 0, sizeof *bs);
}

const struct budget *budget_find(const struct budget_set *bs, const char *project)
{
    for (int i = 0; bs && i < bs->count; i++)
        if (!strcmp(bs->items[i].project, project))
            return &bs->items[i];
    return NULL;
}

struct budget *budget_add(struct budget_set *bs, const struct budget *b)
{
    if (bs->count == TIDE_MAX_BUDGETS || budget_find(bs, b->project))
        return NULL;
    bs->items[bs->count] = *b;
    return &bs->items[bs->count++];
}

int64_t budget_day_of(int64_t now_ms)
{
    return now_ms >= 0 ? now_ms / MS_PER_DAY : (now_ms - MS_PER_DAY + 1) / MS_PER_DAY;
}

static bool leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int64_t budget_month_of(int64_t now_ms)
{
    static const int days_in[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int64_t day = budget_day_of(now_ms);
    if (day < 0)
        return -1; /* before 1970: one period for all of it */
    int64_t year = 1970;
    for (;;) {
        int64_t len = leap(year) ? 366 : 365;
        if (day < len)
            break;
        day -= len;
        year++;
    }
    int month = 0;
    for (; month < 11; month++) {
        int len = days_in[month] + (month == 1 && leap(year));
        if (day < len)
            break;
        day -= len;
    }
    return (year - 1970) * 12 + month;
}

int64_t budget_spent_micros(const struct budget *b, enum budget_period period)
{
    return b->spent_micros[period];
}

static void roll(struct budget *b, int64_t now_ms)
{
    int64_t now_period[BUDGET_PERIODS] = {budget_day_of(now_ms), budget_month_of(now_ms)};
    for (int p = 0; p < BUDGET_PERIODS; p++)
        if (b->period[p] != now_period[p]) {
            b->period[p] = now_period[p];
            b->spent_micros[p] = 0;
            b->spent_rem[p] = 0;
            b->alerted_pct[p] = 0;
        }
}

void budget_roll_all(struct budget_set *bs, int64_t now_ms)
{
    for (int i = 0; i < bs->count; i++)
        roll(&bs->items[i], now_ms);
}

struct spending {
    struct budget_set *bs;
    int64_t price; /* per GPU-hour */
};

/* A job's GPU time on a pool node, charged to its project (gpu_usage_fn). */
static int spend(const struct job *job, int64_t job_id, int64_t gpu_ms, void *ctx)
{
    (void)job_id;
    struct spending *sp = ctx;
    struct budget *b = job ? (struct budget *)budget_find(sp->bs, job->project) : NULL;
    for (int k = 0; b && k < BUDGET_PERIODS; k++) {
        /* Whole micro-units carried out of the remainder: no int64
         * overflow on a month of a large cluster, no rounding. */
        b->spent_rem[k] += gpu_ms * sp->price;
        b->spent_micros[k] += b->spent_rem[k] / MS_PER_HOUR;
        b->spent_rem[k] %= MS_PER_HOUR;
    }
    return 0;
}

/* Charges from_ms to to_ms (one period's) of the GPU-time on pool nodes. */
static void charge(struct budget_set *bs, const struct cluster *c, const struct pool *pools,
                   int npools, int64_t from_ms, int64_t to_ms)
{
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct node *n = &c->nodes[i];
        if (n->state == NODE_RELEASED || n->state == NODE_FAILED || !n->pool[0])
            continue;
        int p = pool_find(pools, npools, n->pool);
        if (p < 0)
            continue;
        struct spending sp = {.bs = bs, .price = pool_price_per_gpu_hour_micros(&pools[p])};
        gpu_usage_on_node((struct cluster *)c, n, from_ms, to_ms, spend, &sp);
    }
}

/* Adds to alerts (n so far, room for max) each threshold of budget i's
 * period k crossed and not reported yet, lowest first; returns the new n.
 * One that finds no room stays unreported, for the next tick. */
static int add_alerts(struct budget_set *bs, int i, int k, struct budget_alert *alerts, int n,
                      int max)
{
    struct budget *b = &bs->items[i];
    if (b->cap_micros[k] <= 0)
        return n;
    int64_t spent = budget_spent_micros(b, (enum budget_period)k);
    int crossed = 0;
    for (int a = 0; a < b->nalerts; a++)
        if ((__int128)spent * 100 >= (__int128)b->alert_pct[a] * b->cap_micros[k])
            crossed = b->alert_pct[a];
    if (crossed < b->alerted_pct[k])
        b->alerted_pct[k] = crossed; /* a raised cap: crossing again alerts again */
    for (int a = 0; a < b->nalerts && n < max; a++) {
        int pct = b->alert_pct[a];
        if (pct <= b->alerted_pct[k] || pct > crossed)
            continue;
        b->alerted_pct[k] = pct;
        alerts[n++] = (struct budget_alert){i, (enum budget_period)k, pct, spent, b->cap_micros[k]};
    }
    return n;
}

int budget_tick(struct budget_set *bs, const struct cluster *c, const struct pool *pools,
                int npools, int64_t now_ms, struct budget_alert *alerts, int max_alerts)
{
    if (!bs->started || now_ms <= bs->last_ms) {
        if (!bs->started) {
            bs->started = true;
            bs->last_ms = now_ms;
            for (int i = 0; i < bs->count; i++)
                roll(&bs->items[i], now_ms);
        }
        return 0;
    }
    /* Split at midnight UTC, as billing is: each part is charged to its own
     * day and month, and the old day's crossings are reported before its
     * spend starts again. */
    int nalerts = 0;
    while (bs->last_ms < now_ms) {
        int64_t end = (budget_day_of(bs->last_ms) + 1) * MS_PER_DAY;
        if (end > now_ms)
            end = now_ms;
        for (int i = 0; i < bs->count; i++)
            roll(&bs->items[i], bs->last_ms);
        charge(bs, c, pools, npools, bs->last_ms, end);
        bs->last_ms = end;
        for (int i = 0; i < bs->count; i++)
            for (int k = 0; k < BUDGET_PERIODS; k++)
                nalerts = add_alerts(bs, i, k, alerts, nalerts, max_alerts);
    }
    for (int i = 0; i < bs->count; i++)
        roll(&bs->items[i], now_ms);
    return nalerts;
}

/* The first period of b at or over its cap, or -1. */
static int exhausted_period(const struct budget *b)
{
    for (int k = 0; k < BUDGET_PERIODS; k++)
        if (b->cap_micros[k] > 0 && b->spent_micros[k] >= b->cap_micros[k])
            return k;
    return -1;
}

bool budget_exhausted(const struct budget *b)
{
    return exhausted_period(b) >= 0;
}

static void exhausted_reason(const struct budget *b, int k, char *why)
{
    int64_t spent = b->spent_micros[k];
    snprintf(why, TIDE_REASON_MAX,
             "budget exhausted: project %.60s spent %lld.%02lld of its %s %lld.%02lld", b->project,
             (long long)(spent / 1000000), (long long)(spent % 1000000 / 10000),
             budget_period_name((enum budget_period)k), (long long)(b->cap_micros[k] / 1000000),
             (long long)(b->cap_micros[k] % 1000000 / 10000));
}

/* The budget of project at a hard cap (with reject_when_exhausted when
 * rejecting), with its reason in why when not NULL; NULL when none. */
static const struct budget *capped(const struct budget_set *bs, const char *project, bool rejecting,
                                   char *why)
{
    const struct budget *b = budget_find(bs, project);
    if (!b || !b->hard_cap || (rejecting && !b->reject_when_exhausted))
        return NULL;
    int k = exhausted_period(b);
    if (k < 0)
        return NULL;
    if (why)
        exhausted_reason(b, k, why);
    return b;
}

bool budget_holds_job(const struct budget_set *bs, const struct job *job, char *why)
{
    return capped(bs, job->project, false, why) != NULL;
}

bool budget_rejects_submit(const struct budget_set *bs, const char *project, char *why)
{
    return capped(bs, project, true, why) != NULL;
}

int budget_stop_running(const struct budget_set *bs, struct cluster *c, struct action_list *out)
{
    bool any = false;
    for (int i = 0; i < bs->count && !any; i++)
        any = bs->items[i].hard_cap && bs->items[i].stop_running && exhausted_period(&bs->items[i]) >= 0;
    if (!any)
        return 0;
    int stopped = 0;
    for (size_t j = 0; j < c->njobs; j++) {
        struct job *job = &c->jobs[j];
        if (job->state != JOB_RUNNING && job->state != JOB_STARTING)
            continue;
        const struct budget *b = budget_find(bs, job->project);
        int k = b && b->hard_cap && b->stop_running ? exhausted_period(b) : -1;
        if (k < 0)
            continue;
        struct action *a = action_push_preempt(out, job);
        if (!a)
            return TIDE_ENOMEM;
        exhausted_reason(b, k, a->reason);
        snprintf(job->requeue_reason, sizeof job->requeue_reason, "%s", a->reason);
        stopped++;
    }
    return stopped;
}
