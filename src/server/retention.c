/* The retention sweeper (see retention.h). */
#include "server/retention.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "store/store_retention.h"

/* Rows per transaction: a batch holds the lock for milliseconds. */
#define RETENTION_BATCH 500

struct retention {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;
};

/* The files of a forgotten job: its logs and its checkpoint directory. */
static void drop_job_files(const struct server *srv, int64_t job_id)
{
    static const char *const dirs[] = {"logs", "checkpoints"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char path[1100];
        snprintf(path, sizeof path, "%s/%s/%lld", srv->cfg.data_dir, dirs[i], (long long)job_id);
        int rc = fs_remove_tree(path);
        if (rc)
            log_warn("retention: cannot remove %s: %s", path, strerror(-rc));
    }
}

size_t retention_sweep(struct server *srv, int64_t now_ms)
{
    size_t dropped = 0;
    int64_t ids[RETENTION_BATCH];
    struct tide_err err;
    for (size_t n = RETENTION_BATCH; srv->cfg.retention_jobs_s > 0 && n == RETENTION_BATCH;) {
        pthread_mutex_lock(&srv->lock);
        int rc = store_retention_drop_jobs(srv->store, now_ms - srv->cfg.retention_jobs_s * 1000,
                                           RETENTION_BATCH, ids, &n, &err);
        pthread_mutex_unlock(&srv->lock);
        if (rc) {
            log_warn("retention: %s", err.message);
            break;
        }
        for (size_t i = 0; i < n; i++)
            drop_job_files(srv, ids[i]);
        dropped += n;
    }
    for (size_t n = RETENTION_BATCH; srv->cfg.retention_events_s > 0 && n == RETENTION_BATCH;) {
        pthread_mutex_lock(&srv->lock);
        int rc = store_retention_drop_events(
            srv->store, now_ms - srv->cfg.retention_events_s * 1000, RETENTION_BATCH, &n, &err);
        pthread_mutex_unlock(&srv->lock);
        if (rc) {
            log_warn("retention: %s", err.message);
            break;
        }
        dropped += n;
    }
    return dropped;
}

static void *sweeper(void *arg)
{
    struct server *srv = arg;
    struct retention *r = srv->retention;
    pthread_mutex_lock(&r->mu);
    while (!srv->stopping) {
        pthread_mutex_unlock(&r->mu);
        size_t dropped = retention_sweep(srv, clock_now_ms());
        if (dropped)
            log_info("retention: forgot %zu old jobs and events", dropped);
        pthread_mutex_lock(&r->mu);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += srv->cfg.retention_sweep_s;
        while (!srv->stopping && pthread_cond_timedwait(&r->wake, &r->mu, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

int retention_start(struct server *srv, struct tide_err *err)
{
    if (srv->cfg.retention_jobs_s <= 0 && srv->cfg.retention_events_s <= 0)
        return 0;
    struct retention *r = calloc(1, sizeof *r);
    if (!r)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    pthread_mutex_init(&r->mu, NULL);
    if (clock_cond_init(&r->wake, CLOCK_MONOTONIC) != 0) {
        free(r);
        return tide_err_set(err, TIDE_ENOMEM, NULL, "cannot set up the retention thread's condition");
    }
    srv->retention = r;
    if (pthread_create(&r->thread, NULL, sweeper, srv) != 0) {
        srv->retention = NULL;
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->wake);
        free(r);
        return tide_err_set(err, TIDE_EIO, NULL, "cannot start the retention thread");
    }
    return 0;
}

void retention_stop(struct server *srv)
{
    struct retention *r = srv->retention;
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->wake);
    free(r);
    srv->retention = NULL;
}
