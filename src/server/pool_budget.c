/* Budget alerts of the pool loop: events, log lines and alert hooks (see
 * core/budget.h for the metering). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/spawn_env.h"
#include "server/pool_loop_state.h"
#include "store/store_events.h"

/* Runs a budget's alert hook with /bin/sh, detached (no zombie, no wait). */
static void run_alert_hook(const struct budget *b, const struct budget_alert *a)
{
    char env[5][160];
    snprintf(env[0], sizeof env[0], "TIDE_PROJECT=%s", b->project);
    snprintf(env[1], sizeof env[1], "TIDE_BUDGET_PERIOD=%s", budget_period_name(a->period));
    snprintf(env[2], sizeof env[2], "TIDE_BUDGET_PCT=%d", a->pct);
    snprintf(env[3], sizeof env[3], "TIDE_BUDGET_SPENT_MICROS=%lld", (long long)a->spent_micros);
    snprintf(env[4], sizeof env[4], "TIDE_BUDGET_CAP_MICROS=%lld", (long long)a->cap_micros);
    char *extra[] = {env[0], env[1], env[2], env[3], env[4], NULL};
    char **envp = spawn_env_build(extra);
    if (!envp) {
        log_warn("alert hook for %s: out of memory", b->project);
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        log_warn("alert hook for %s: fork: %s", b->project, strerror(errno));
        free(envp);
        return;
    }
    if (pid == 0) {
        /* Only async-signal-safe calls between fork and exec. */
        setsid();
        if (fork() != 0)
            _exit(0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        char *const args[] = {"sh", "-c", (char *)b->alert_hook, NULL};
        execve("/bin/sh", args, envp);
        _exit(127);
    }
    free(envp);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* Projects at a hard cap with stop_running: their running jobs are
 * checkpoint-preempted and wait (held by the cap) for the next period. */
static void stop_running_over_cap(struct server *srv, int64_t now)
{
    action_list_clear(&srv->actions);
    int n = budget_stop_running(&srv->cfg.budgets, &srv->cluster, &srv->actions);
    if (n == 0)
        return;
    struct tide_err err;
    tide_err_clear(&err);
    if (n < 0)
        log_error("budget stop: out of memory");
    else if (apply_actions(srv, &srv->actions, now, &err) != 0)
        log_error("budget stop not persisted: %s", err.message);
    else
        log_warn("budget: %d running job%s stopped (checkpoint, then wait)", n, n == 1 ? "" : "s");
}

/* The message of alert a of budget b (its event and log line). */
static void alert_message(const struct budget *b, const struct budget_alert *a, char *msg,
                          size_t size)
{
    char spent[40], cap[40];
    pool_money(spent, sizeof spent, a->spent_micros);
    pool_money(cap, sizeof cap, a->cap_micros);
    snprintf(msg, size, "project %s reached %d%% of its %s budget (%s of %s)%s", b->project, a->pct,
             budget_period_name(a->period), spent, cap,
             b->hard_cap && a->pct >= 100 ? ": new jobs wait (hard cap)" : "");
}

int pool_budgets_tick(struct server *srv, struct pool_loop *pl, int64_t now)
{
    struct budget_set *bs = &srv->cfg.budgets;
    pl->nbudget_alerts = 0;
    if (bs->count && !pl->budget_alerts) {
        pl->budget_alerts = calloc(BUDGET_TICK_ALERTS_MAX, sizeof *pl->budget_alerts);
        if (!pl->budget_alerts)
            return TIDE_ENOMEM;
    }
    pl->nbudget_alerts = budget_tick(bs, &srv->cluster, srv->cfg.pools, srv->cfg.npools, now,
                                     pl->budget_alerts, BUDGET_TICK_ALERTS_MAX);
    stop_running_over_cap(srv, now);
    return 0;
}

int pool_budgets_alerts_store(struct server *srv, struct pool_loop *pl, int64_t now,
                              struct tide_err *err)
{
    int rc = 0;
    for (int i = 0; !rc && i < pl->nbudget_alerts; i++) {
        const struct budget_alert *a = &pl->budget_alerts[i];
        const struct budget *b = &srv->cfg.budgets.items[a->budget];
        char msg[300];
        alert_message(b, a, msg, sizeof msg);
        rc = store_event_add_in(srv->store, now, "budget_alert", 0, 0, NULL, b->project, msg, err);
    }
    return rc;
}

void pool_budgets_alerts_unsaved(struct server *srv, struct pool_loop *pl)
{
    /* Reported again by the next tick: each threshold back below itself. */
    for (int i = pl->nbudget_alerts; i-- > 0;) {
        const struct budget_alert *a = &pl->budget_alerts[i];
        struct budget *b = &srv->cfg.budgets.items[a->budget];
        if (b->alerted_pct[a->period] >= a->pct)
            b->alerted_pct[a->period] = a->pct - 1;
    }
    pl->nbudget_alerts = 0;
}

void pool_budgets_alerts_saved(struct server *srv, struct pool_loop *pl)
{
    for (int i = 0; i < pl->nbudget_alerts; i++) {
        const struct budget_alert *a = &pl->budget_alerts[i];
        const struct budget *b = &srv->cfg.budgets.items[a->budget];
        char msg[300];
        alert_message(b, a, msg, sizeof msg);
        log_warn("%s", msg);
        if (b->alert_hook[0])
            run_alert_hook(b, a);
        if (a->pct >= 100)
            sched_loop_kick(srv);
    }
    pl->nbudget_alerts = 0;
}
