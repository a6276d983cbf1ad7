/*
 * The counts /metrics keeps as things happen (metrics.h): histograms with
 * fixed buckets chosen for what they measure, and finished jobs by state
 * and queue.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/metrics.h"

/* Seconds; a pass over a long queue may take a large part of a second. */
static const double pass_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                     0.1,    0.25,  0.5,    1,     2.5,  5,     10};
/* Seconds; a durable commit is an fsync or a few. */
static const double submit_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                       0.25,  0.5,    1,     2.5,  5,     10};
/* Seconds; a snapshot is a pass over the unfinished jobs and some copies. */
static const double snapshot_bounds[] = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
                                         0.0025,  0.005,    0.01,    0.025,  0.05,    0.1};
/* Seconds, from an instant start to a day in the queue. */
static const double wait_bounds[] = {1,   5,    10,   30,   60,    120,   300,
                                     600, 1800, 3600, 7200, 14400, 28800, 86400};

#define NBOUNDS(a) ((int)(sizeof(a) / sizeof((a)[0])))

void server_metrics_init(struct server_metrics *m)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    histogram_init(&m->c.pass_seconds, pass_bounds, NBOUNDS(pass_bounds));
    histogram_init(&m->c.submit_seconds, submit_bounds, NBOUNDS(submit_bounds));
    histogram_init(&m->c.snapshot_seconds, snapshot_bounds, NBOUNDS(snapshot_bounds));
}

void server_metrics_release(struct server_metrics *m)
{
    pthread_mutex_destroy(&m->mu);
}

/* The row of queue, added when new; the last row (METRICS_OTHER_QUEUE) once full.
 * Caller holds m->mu. */
static int queue_row(struct metrics_counts *c, const char *queue)
{
    for (int i = 0; i < c->nqueues; i++)
        if (!strcmp(c->queues[i], queue))
            return i;
    int i = c->nqueues < METRICS_MAX_QUEUES - 1 ? c->nqueues : METRICS_MAX_QUEUES - 1;
    if (i == c->nqueues) {
        snprintf(c->queues[i], sizeof c->queues[i], "%s",
                 i == METRICS_MAX_QUEUES - 1 ? METRICS_OTHER_QUEUE : queue);
        histogram_init(&c->wait_seconds[i], wait_bounds, NBOUNDS(wait_bounds));
        c->nqueues++;
    }
    return i;
}

void metrics_observe_pass(struct server_metrics *m, double seconds)
{
    pthread_mutex_lock(&m->mu);
    histogram_observe(&m->c.pass_seconds, seconds);
    pthread_mutex_unlock(&m->mu);
}

void metrics_observe_submit(struct server_metrics *m, double seconds)
{
    pthread_mutex_lock(&m->mu);
    histogram_observe(&m->c.submit_seconds, seconds);
    pthread_mutex_unlock(&m->mu);
}

void metrics_observe_snapshot(struct server_metrics *m, double seconds)
{
    pthread_mutex_lock(&m->mu);
    histogram_observe(&m->c.snapshot_seconds, seconds);
    pthread_mutex_unlock(&m->mu);
}

void metrics_job_started(struct server_metrics *m, const char *queue, double wait_s)
{
    pthread_mutex_lock(&m->mu);
    histogram_observe(&m->c.wait_seconds[queue_row(&m->c, queue)], wait_s < 0 ? 0 : wait_s);
    pthread_mutex_unlock(&m->mu);
}

void metrics_job_finished(struct server_metrics *m, const char *queue, enum job_state state)
{
    if ((int)state < 0 || state >= JOB_STATE_COUNT)
        return;
    pthread_mutex_lock(&m->mu);
    m->c.finished[queue_row(&m->c, queue)][state]++;
    pthread_mutex_unlock(&m->mu);
}

void metrics_image_placed(struct server_metrics *m, bool cached)
{
    pthread_mutex_lock(&m->mu);
    if (cached)
        m->c.image_cache_hits++;
    else
        m->c.image_cache_misses++;
    pthread_mutex_unlock(&m->mu);
}

void metrics_copy(struct server_metrics *m, struct metrics_counts *out)
{
    pthread_mutex_lock(&m->mu);
    memcpy(out, &m->c, sizeof *out);
    pthread_mutex_unlock(&m->mu);
}

double metrics_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
