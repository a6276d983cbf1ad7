/*
 * The scheduler thread: wakes when kicked (submit, finished task, new node)
 * or every sched_interval_ms, declares silent nodes lost, runs one pass and
 * persists what it decided. A pass that nothing but submissions or the
 * interval woke, after one that changed nothing, looks at the new jobs only
 * (sched_pass_new). Agents learn of new starts at once: the apply
 * wakes their parked POST /v1/agent/wait (agent_wake.h), and they heartbeat.
 */
#include <errno.h>
#include <stdbool.h>
#include <time.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "core/deps.h"
#include "server/server.h"
#include "server/usage_meter.h"

/* Kicks wake the scheduler thread only while it waits for one
 * (srv->sched_waiting): during a pass or its rest it reads the flags when
 * it next looks for work, and a wake-up then would only have it take the
 * lock (which the kicker holds) to sleep again. */
void sched_loop_kick(struct server *srv)
{
    bool known = srv->sched_wanted;
    srv->sched_wanted = true;
    if (!known && srv->sched_waiting)
        pthread_cond_signal(&srv->wake);
}

void sched_loop_kick_submitted(struct server *srv)
{
    /* Already known, the scheduler waits for its rest to end, not for this
     * kick: waking it per commit would only have it wait for the lock. */
    if (srv->sched_submitted)
        return;
    srv->sched_submitted = true;
    if (srv->sched_waiting)
        pthread_cond_signal(&srv->wake);
}

/* The shortest rest before a pass that only submissions kicked: a new
 * job waits at most this long (after a pass) for its first pass. */
#define SCHED_SUBMIT_REST_MIN_US 1000

static bool before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Waits (lock held, released while waiting) for a kick or the interval.
 * Kicks are not taken before pass_us has passed: a pass is followed by a
 * rest as long as itself, so that passes over a long queue take at most
 * half the lock, not all of it. New submissions alone wait for a rest of
 * SCHED_SUBMIT_REST passes: under a storm of submits (each batch a kick)
 * the commits then hold the lock most of the time and the pass, whose
 * cost grows with the queue, at most 1 / (1 + SCHED_SUBMIT_REST) of it;
 * and at least SCHED_SUBMIT_REST_MIN_US, so that passes over new jobs only
 * (which cost next to nothing) do not run back to back with every commit.
 * Returns true when nothing but new submissions or the interval woke it (no
 * other kick): then a pass over the new jobs may do (sched_pass_new). */
static bool wait_for_work(struct server *srv, int64_t pass_us)
{
    struct timespec rest = clock_in_us(CLOCK_MONOTONIC, pass_us);
    while (pass_us > 0 && !srv->stopping)
        if (pthread_cond_timedwait(&srv->wake, &srv->lock, &rest) == ETIMEDOUT)
            break;
    int64_t submit_rest_us = pass_us * (SCHED_SUBMIT_REST - 1);
    if (submit_rest_us < SCHED_SUBMIT_REST_MIN_US - pass_us)
        submit_rest_us = SCHED_SUBMIT_REST_MIN_US - pass_us;
    struct timespec submits_due = clock_in_us(CLOCK_MONOTONIC, submit_rest_us);
    struct timespec deadline = clock_in_us(CLOCK_MONOTONIC, (int64_t)srv->cfg.sched_interval_ms * 1000);
    srv->sched_waiting = true;
    while (!srv->sched_wanted && !srv->stopping) {
        const struct timespec *until = &deadline;
        if (srv->sched_submitted) {
            struct timespec now = clock_in_us(CLOCK_MONOTONIC, 0);
            if (!before(&now, &submits_due))
                break;
            if (before(&submits_due, &deadline))
                until = &submits_due;
        }
        if (pthread_cond_timedwait(&srv->wake, &srv->lock, until) == ETIMEDOUT && until == &deadline)
            break;
    }
    srv->sched_waiting = false;
    bool unkicked = !srv->sched_wanted;
    srv->sched_wanted = false;
    srv->sched_submitted = false;
    return unkicked;
}

/* The longest a pass over new jobs only (sched_pass_new) may follow the
 * last full pass. */
#define SCHED_FULL_PASS_MS 5000

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

/* A node's silence is judged on the wall clock (heartbeat times are kept
 * and shown as such), which an operator or NTP may step: forward by less
 * than half a node timeout, it made a live node lost early, and its jobs
 * ran elsewhere while its agent, fencing by its own monotonic clock, still
 * ran them. Each node heard since this server started has its last
 * heartbeat set from the monotonic time since then, as of the wall now. */
static void silence_by_monotonic_clock(struct server *srv, int64_t now_ms)
{
    int64_t mono = clock_mono_ms();
    for (size_t i = 0; i < srv->cluster.nnodes; i++) {
        struct node *n = &srv->cluster.nodes[i];
        if (n->heard_mono_ms && mono >= n->heard_mono_ms)
            n->last_heartbeat_ms = now_ms - (mono - n->heard_mono_ms);
    }
}

static void *sched_thread(void *arg)
{
    struct server *srv = arg;
    struct action_list actions;
    action_list_init(&actions);
    pthread_mutex_lock(&srv->lock);
    int64_t pass_us = 0, last_full_ms = 0;
    while (!srv->stopping) {
        bool unkicked = wait_for_work(srv, pass_us);
        if (srv->stopping)
            break;
        int64_t now = clock_now_ms();
        double pass_start = metrics_now_s();
        action_list_clear(&actions);
        silence_by_monotonic_clock(srv, now);
        sched_check_nodes(&srv->sched, &srv->cluster, now, &actions);
        /* Woken by submissions or the interval, after a pass that changed
         * nothing: what else changes a pending job's answer kicks (a task
         * ending, a node joining, an operator's hold) or shows in the
         * cluster (sched_pass_new checks), so the pass looks at the new
         * jobs alone. A full pass at least every SCHED_FULL_PASS_MS all the
         * same. */
        int placed = TIDE_ECONFLICT;
        if (unkicked && actions.len == 0 && now - last_full_ms < SCHED_FULL_PASS_MS &&
            now >= last_full_ms)
            placed = sched_pass_new(&srv->sched, &srv->cluster, now, &actions);
        if (placed == TIDE_ECONFLICT) {
            deps_resolve(&srv->cluster, stored_final_state, srv, &actions);
            placed = sched_pass(&srv->sched, &srv->cluster, now, &actions);
            last_full_ms = now;
        }
        if (placed < 0)
            log_error("scheduling pass ran out of memory");
        else
            eta_refresh(srv, now); /* before apply: a failed apply reloads the cluster */
        srv->sched_passes++;
        usage_meter_tick(srv, now);
        struct tide_err err;
        /* heartbeats waiting for this pass carry what it decides for their
         * nodes: those long-polls are not woken for it (api_agent.c) */
        api_agent_actions_applying(srv);
        if (apply_actions_deferred(srv, &actions, now, &err) != 0)
            log_error("scheduling pass not persisted: %s", err.message);
        api_agent_actions_applied(srv);
        double pass_s = metrics_now_s() - pass_start;
        metrics_observe_pass(&srv->metrics, pass_s);
        pass_us = (int64_t)(pass_s * 1e6);
    }
    pthread_mutex_unlock(&srv->lock);
    action_list_release(&actions);
    return NULL;
}

int sched_loop_start(struct server *srv, pthread_t *thread)
{
    return pthread_create(thread, NULL, sched_thread, srv) == 0 ? 0 : TIDE_EIO;
}
