/*
 * Start-time ETAs in the server: after a scheduling pass, at most once per
 * ETA_REFRESH_MS, the core's plan (core/eta.h) runs over the pass's order
 * under the lock and leaves each pending job's ETA in the cluster for the
 * job JSON; every attempt that ends feeds the learned runtimes, which a
 * restarted server first learns again from the store's recent jobs. How
 * long the last and the longest plan held the lock is kept for /metrics.
 */
#include <stdlib.h>
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
    srv->eta_plan.strict = srv->sched.cfg.order->strict && !srv->sched.cfg.backfill;
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

static int by_id(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "id"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "id"));
    return (x > y) - (x < y);
}

void eta_refresh_seed(struct server *srv)
{
    /* The newest of each ended state, not the newest jobs: a deep queue of
     * pending ones would hide every run the store holds. */
    static const char *const ended[] = {"succeeded", "failed", "timeout", "cancelled"};
    json_t *lists[4] = {NULL};
    json_t **runs = NULL;
    size_t n = 0;
    struct tide_err err;
    for (size_t s = 0; s < 4; s++) {
        struct job_filter f = {.state = ended[s], .limit = ETA_SEED_JOBS};
        if (store_jobs_list(srv->store, &f, &lists[s], &err) != 0) {
            log_error("start-time ETAs: cannot read past jobs (%s); learning from scratch",
                      err.message);
            goto done;
        }
    }
    runs = malloc(4 * ETA_SEED_JOBS * sizeof *runs);
    if (!runs)
        goto done;
    for (size_t s = 0; s < 4; s++)
        for (size_t i = 0; i < json_array_size(lists[s]); i++) {
            json_t *job = json_array_get(lists[s], i);
            if (json_is_number(json_object_get(job, "start_time")) &&
                json_is_number(json_object_get(job, "end_time")))
                runs[n++] = job; /* it ran */
        }
    qsort(runs, n, sizeof *runs, by_id);
    for (size_t i = n > ETA_SEED_JOBS ? n - ETA_SEED_JOBS : 0; i < n; i++) { /* oldest first */
        json_t *job = runs[i];
        int64_t run_ms = (int64_t)((json_number_value(json_object_get(job, "end_time")) -
                                    json_number_value(json_object_get(job, "start_time"))) *
                                   1000.0);
        if (eta_estimator_observe(&srv->eta_est, json_string_value(json_object_get(job, "project")),
                                  json_string_value(json_object_get(job, "queue")), run_ms) != 0)
            break;
    }
done:
    free(runs);
    for (size_t s = 0; s < 4; s++)
        json_decref(lists[s]);
}
