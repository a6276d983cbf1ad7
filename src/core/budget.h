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

#include "core/action.h"
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
    bool reject_when_exhausted; /* with hard_cap: refuse new jobs at submit instead */
    bool stop_running;          /* with hard_cap: checkpoint-preempt its running jobs too */
    char alert_hook[256]; /* run by the server on each alert; "" for none */
    /* Metered state: */
    int64_t period[BUDGET_PERIODS];      /* UTC day / month number the spend is for */
    int64_t spent_micros[BUDGET_PERIODS]; /* whole micro-units spent */
    int64_t spent_rem[BUDGET_PERIODS];    /* and the rest, in micro-units x ms/hour (< 3,600,000) */
    int alerted_pct[BUDGET_PERIODS];     /* highest threshold reported this period */
};

struct budget_set {
    struct budget items[TIDE_MAX_BUDGETS];
    int count;
    int64_t last_ms; /* the last tick's time */
    bool started;    /* false before the first tick (virtual clocks start at 0) */
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

/* Starts a new period for every budget whose day or month is not now_ms's
 * (spend and alerts at 0): for a state loaded at start, which a server
 * without pools never ticks. */
void budget_roll_all(struct budget_set *bs, int64_t now_ms);

/* Every threshold of every budget, on both sides of a midnight: room for
 * this many alerts misses none in a tick. */
#define BUDGET_TICK_ALERTS_MAX (2 * TIDE_MAX_BUDGETS * BUDGET_PERIODS * BUDGET_MAX_ALERTS)

/* Meters from the last tick to now_ms, each part to its own day and month
 * (split at midnight UTC), and rolls periods over; writes each threshold
 * crossed, lowest first, into alerts and returns how many. Past max_alerts
 * the rest stay unreported and come with a later tick (an old day's, before
 * a midnight the tick spans, are lost then). */
int budget_tick(struct budget_set *bs, const struct cluster *c, const struct pool *pools,
                int npools, int64_t now_ms, struct budget_alert *alerts, int max_alerts);

/* Spend of budget b in period, micro-units, rounded down. */
int64_t budget_spent_micros(const struct budget *b, enum budget_period period);

/* Whether b is at or over one of its caps this period (hard cap or not). */
bool budget_exhausted(const struct budget *b);

/* Whether job must wait because its project is at a hard cap; fills why
 * (TIDE_REASON_MAX) when it must and why is not NULL. */
bool budget_holds_job(const struct budget_set *bs, const struct job *job, char *why);

/* Whether a new job of project is refused at submit (a hard cap with
 * reject_when_exhausted, reached); fills why (TIDE_REASON_MAX) then. */
bool budget_rejects_submit(const struct budget_set *bs, const char *project, char *why);

/* For projects at a hard cap with stop_running: marks each of their running
 * or starting jobs preempted and adds an ACTION_PREEMPT for it to out (the
 * agent checkpoints and stops it; it then waits, held by the cap, without
 * using a retry). Returns how many, or TIDE_ENOMEM. */
int budget_stop_running(const struct budget_set *bs, struct cluster *c, struct action_list *out);

#endif
