/*
 * Project budgets, pure: daily and monthly caps in micro-units, metered by
 * budget_tick() (called with `now`, like billing) from the GPU-time each
 * project's tasks hold on pool nodes at the pool's price per GPU-hour.
 * Periods are UTC days and calendar months; spend starts again at zero in
 * each. Crossing an alert threshold (percent of a cap) is reported once per
 * period; a project over a cap with hard_cap has its pending jobs held with
 * the reason "budget exhausted" and the autoscaler adds no nodes for them.
 */
#ifndef TIDE_BUDGET_H
#define TIDE_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/pool.h"

#define TIDE_MAX_BUDGETS 64
#define BUDGET_MAX_ALERTS 8

enum budget_period { BUDGET_DAILY, BUDGET_MONTHLY, BUDGET_PERIODS };

const char *budget_period_name(enum budget_period p);

struct budget {
    char project[TIDE_NAME_MAX];
    int64_t cap_micros[BUDGET_PERIODS]; /* 0: no cap for that period */
    int alert_pct[BUDGET_MAX_ALERTS];   /* ascending */
    int nalerts;
    bool hard_cap; /* at 100 %: hold the project's pending jobs */
    char alert_hook[256]; /* run by the server on each alert; "" for none */
    /* Metered state: */
    int64_t period[BUDGET_PERIODS];      /* UTC day / month number the spend is for */
    int64_t spent_num[BUDGET_PERIODS];   /* micro-units x ms/hour: exact, no rounding */
    int alerted_pct[BUDGET_PERIODS];     /* highest threshold reported this period */
};

struct budget_set {
    struct budget items[TIDE_MAX_BUDGETS];
    int count;
    int64_t last_ms; /* 0 before the first tick */
};

/* One threshold crossed by a tick. */
struct budget_alert {
    int budget; /* index into items */
    enum budget_period period;
    int pct;
    int64_t spent_micros, cap_micros;
};

void budget_set_init(struct budget_set *bs);
/* The budget of project, or NULL. */
const struct budget *budget_find(const struct budget_set *bs, const char *project);
/* Adds a copy of b; NULL when full or the project is there already. */
struct budget *budget_add(struct budget_set *bs, const struct budget *b);

/* UTC day number and month number (months since January 1970) of now_ms. */
int64_t budget_day_of(int64_t now_ms);
int64_t budget_month_of(int64_t now_ms);

/* Meters from the last tick to now_ms and rolls periods over; writes up to
 * max_alerts thresholds crossed into alerts and returns how many. */
int budget_tick(struct budget_set *bs, const struct cluster *c, const struct pool *pools,
                int npools, int64_t now_ms, struct budget_alert *alerts, int max_alerts);

/* Spend of budget b in period, micro-units, rounded down. */
int64_t budget_spent_micros(const struct budget *b, enum budget_period period);

/* Whether job must wait because its project is at a hard cap; fills why
 * (TIDE_REASON_MAX) when it must and why is not NULL. */
bool budget_holds_job(const struct budget_set *bs, const struct job *job, char *why);

#endif
