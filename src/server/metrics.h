/*
 * What /metrics counts as it happens, beside what it reads from the
 * cluster at scrape time: histograms of job wait (by queue), scheduling
 * pass duration and submit latency, and finished jobs by state and queue.
 * A mutex of its own guards it, so observing never waits on the server
 * lock and a scrape copies it in microseconds.
 */
#ifndef TIDE_SERVER_METRICS_H
#define TIDE_SERVER_METRICS_H

#include <pthread.h>

#include "core/cluster.h"
#include "core/histogram.h"
#include "core/job_state.h"
#include "core/queue.h"

/* One more than the queues tide.yaml may name: the last is METRICS_OTHER_QUEUE. */
#define METRICS_MAX_QUEUES (TIDE_MAX_QUEUES + 1)
/* The label of the row past the table's last: no queue can be named so
 * (queue names are identifiers), so a queue called "other" keeps its own. */
#define METRICS_OTHER_QUEUE "(other)"

struct metrics_counts {
    struct histogram pass_seconds;     /* one scheduling pass, lock held */
    struct histogram submit_seconds;   /* POST /v1/jobs: request arrival to durable 201 */
    struct histogram snapshot_seconds; /* /metrics: the server lock held for its snapshot */
    int nqueues;
    char queues[METRICS_MAX_QUEUES][TIDE_NAME_MAX];
    struct histogram wait_seconds[METRICS_MAX_QUEUES]; /* submit to first start */
    long long finished[METRICS_MAX_QUEUES][JOB_STATE_COUNT];
    long long image_cache_hits, image_cache_misses; /* containerised starts */
};

struct server_metrics {
    pthread_mutex_t mu;
    struct metrics_counts c;
};

void server_metrics_init(struct server_metrics *m);
void server_metrics_release(struct server_metrics *m);

void metrics_observe_pass(struct server_metrics *m, double seconds);
void metrics_observe_submit(struct server_metrics *m, double seconds);
void metrics_observe_snapshot(struct server_metrics *m, double seconds);
/* A job's first attempt was placed wait_s after it was submitted. */
void metrics_job_started(struct server_metrics *m, const char *queue, double wait_s);
/* A job reached a final state. */
void metrics_job_finished(struct server_metrics *m, const char *queue, enum job_state state);
/* A containerised attempt was placed on a node that held its image (or not). */
void metrics_image_placed(struct server_metrics *m, bool cached);
/* Copies the counts (under the mutex) into out. */
void metrics_copy(struct server_metrics *m, struct metrics_counts *out);

/* Seconds on the monotonic clock, for durations. */
double metrics_now_s(void);

#endif
