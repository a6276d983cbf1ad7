/*
 * The scheduler thread: wakes when kicked (submit, finished task, new node)
 * or every sched_interval_ms, declares silent nodes lost, runs one pass and
 * persists what it decided. Agents learn of new starts on their next
 * heartbeat.
 */
#include <errno.h>
#include <time.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "core/deps.h"
#include "server/server.h"

void sched_loop_kick(struct server *srv)
{
    srv->sched_wanted = true;
    pthread_cond_signal(&srv->wake);
}

static void wait_for_work(struct server *srv)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    int64_t ns = deadline.tv_nsec + (int64_t)srv->cfg.sched_interval_ms * 1000000;
    deadline.tv_sec += ns / 1000000000;
    deadline.tv_nsec = ns % 1000000000;
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
    while (!srv->stopping) {
        wait_for_work(srv);
        if (srv->stopping)
            break;
        int64_t now = clock_now_ms();
        action_list_clear(&actions);
        sched_check_nodes(&srv->sched, &srv->cluster, now, &actions);
        deps_resolve(&srv->cluster, stored_final_state, srv, &actions);
        int placed = sched_pass(&srv->sched, &srv->cluster, now, &actions);
        if (placed < 0)
            log_error("scheduling pass ran out of memory");
        srv->sched_passes++;
        struct tide_err err;
        if (apply_actions(srv, &actions, now, &err) != 0)
            log_error("scheduling pass not persisted: %s", err.message);
    }
    pthread_mutex_unlock(&srv->lock);
    action_list_release(&actions);
    return NULL;
}

int sched_loop_start(struct server *srv, pthread_t *thread)
{
    return pthread_create(thread, NULL, sched_thread, srv) == 0 ? 0 : TIDE_EIO;
}
