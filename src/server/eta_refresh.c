/*
 * Start-time ETAs in the server: after a scheduling pass, at most once per
 * ETA_REFRESH_MS, the core's plan (core/eta.h) runs over the pass's order
 * under the lock and leaves each pending job's ETA in the cluster for the
 * job JSON; every attempt that ends feeds the learned runtimes, which a
 * restarted server first learns again from the store's recent jobs. How
 * long the last and the longest plan held the lock is kept for /metrics.
 */
#include <time.h>

#include "common/log.h"
#include "server/server.h"

static int64_t monotonic_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

void eta_refresh(struct server *srv, int64_t now_ms)
{
    if (srv->eta_refreshed_ms && now_ms - srv->eta_refreshed_ms < ETA_REFRESH_MS &&
        now_ms >= srv->eta_refreshed_ms)
        return;
    int64_t t0 = monotonic_us();
    if (eta_plan_run(&srv->eta_plan, &srv->cluster, &srv->eta_est, srv->sched.order,
                     srv->sched.norder, now_ms) != 0)
        log_error("start-time ETAs: out of memory; pending jobs show none");
    srv->eta_refreshed_ms = now_ms;
    srv->eta_last_us = monotonic_us() - t0;
    if (srv->eta_last_us > srv->eta_max_us)
        srv->eta_max_us = srv->eta_last_us;
    srv->eta_refreshes++;
}

void eta_refresh_learn(struct server *srv, const struct action_list *actions, int64_t now_ms)
{
    for (size_t i = 0; i < actions->len; i++) {
        const struct action *a = &actions->items[i];
        if ((a->type != ACTION_FINISH && a->type != ACTION_REQUEUE) || !a->node_id)
            continue; /* only attempts that ran */
        char project[TIDE_NAME_MAX], queue[TIDE_NAME_MAX];
        int64_t start_ms = 0;
        struct tide_err err;
        if (store_job_ran(srv->store, a->job_id, project, queue, &start_ms, &err) != 0)
            continue;
        if (start_ms > 0 && eta_estimator_observe(&srv->eta_est, project, queue,
                                                  now_ms - start_ms) != 0)
            log_error("start-time ETAs: out of memory learning runtimes");
    }
}

void eta_refresh_seed(struct server *srv)
{
    struct job_filter f = {.limit = ETA_SEED_JOBS};
    json_t *jobs = NULL;
    struct tide_err err;
    if (store_jobs_list(srv->store, &f, &jobs, &err) != 0) {
        log_error("start-time ETAs: cannot read past jobs (%s); learning from scratch",
                  err.message);
        return;
    }
    for (size_t i = json_array_size(jobs); i-- > 0;) { /* oldest first */
        json_t *job = json_array_get(jobs, i);
        json_t *start = json_object_get(job, "start_time"), *end = json_object_get(job, "end_time");
        if (!json_is_number(start) || !json_is_number(end))
            continue; /* never ran, or not over */
        int64_t run_ms = (int64_t)((json_number_value(end) - json_number_value(start)) * 1000.0);
        if (eta_estimator_observe(&srv->eta_est, json_string_value(json_object_get(job, "project")),
                                  json_string_value(json_object_get(job, "queue")), run_ms) != 0)
            break;
    }
    json_decref(jobs);
}
