/*
 * The scheduler thread: wakes when kicked (submit, finished task, new node)
 * or every sched_interval_ms, declares silent nodes lost, runs one pass and
 * persists what it decided. Agents learn of new starts at once: the apply
 * wakes their parked POST /v1/agent/wait (agent_wake.h), and they heartbeat.
 */
#include <errno.h>
#include <time.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "core/deps.h"
#include "server/server.h"
#include "server/usage_meter.h"

void sched_loop_kick(struct server *srv)
{
    srv->sched_wanted = true;
    pthread_cond_signal(&srv->wake);
}

static struct timespec realtime_in(int64_t ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    int64_t ns = t.tv_nsec + ms * 1000000;
    t.tv_sec += ns / 1000000000;
    t.tv_nsec = ns % 1000000000;
    return t;
}

/* Waits (lock held, released while waiting) for a kick or the interval.
 * Kicks are not taken before rest_ms has passed: a pass is followed by a
 * rest as long as itself, so that under a storm of submits (each one a
 * kick) passes over a long queue take at most half the lock, not all of it. */
static void wait_for_work(struct server *srv, int64_t rest_ms)
{
    struct timespec rest = realtime_in(rest_ms);
    while (rest_ms > 0 && !srv->stopping)
        if (pthread_cond_timedwait(&srv->wake, &srv->lock, &rest) == ETIMEDOUT)
            break;
    struct timespec deadline = realtime_in(srv->cfg.sched_interval_ms);
    while (!srv->sched_wanted && !srv->stopping)
        if (pthread_cond_timedwait(&srv->wake, &srv->lock, &deadline) == ETIMEDOUT)
            break;
    srv->sched_wanted = false;
}

/* Final state of a job that left the cluster, for deps_resolve. */
static int stored_final_state(int64_t job_id, void *ctx)
{
    struct server *srv = ctx;
    enum job_state state;
    struct tide_err err;
    if (store_job_state(srv->store, job_id, &state, NULL, &err) != 0)
        return -1;
    return (int)state;
}

static void *sched_thread(void *arg)
{
    struct server *srv = arg;
    struct action_list actions;
    action_list_init(&actions);
    pthread_mutex_lock(&srv->lock);
    int64_t rest_ms = 0;
    while (!srv->stopping) {
        wait_for_work(srv, rest_ms);
        if (srv->stopping)
            break;
        int64_t now = clock_now_ms();
        double pass_start = metrics_now_s();
        action_list_clear(&actions);
        sched_check_nodes(&srv->sched, &srv->cluster, now, &actions);
        deps_resolve(&srv->cluster, stored_final_state, srv, &actions);
        int placed = sched_pass(&srv->sched, &srv->cluster, now, &actions);
        if (placed < 0)
            log_error("scheduling pass ran out of memory");
        else
            eta_refresh(srv, now); /* before apply: a failed apply reloads the cluster */
        srv->sched_passes++;
        usage_meter_tick(srv, now);
        struct tide_err err;
        if (apply_actions(srv, &actions, now, &err) != 0)
            log_error("scheduling pass not persisted: %s", err.message);
        metrics_observe_pass(&srv->metrics, metrics_now_s() - pass_start);
        rest_ms = clock_now_ms() - now;
    }
    pthread_mutex_unlock(&srv->lock);
    action_list_release(&actions);
    return NULL;
}

int sched_loop_start(struct server *srv, pthread_t *thread)
{
    return pthread_create(thread, NULL, sched_thread, srv) == 0 ? 0 : TIDE_EIO;
}
