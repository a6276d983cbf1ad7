/*
 * Learned runtimes for start-time ETAs (eta.h): the last ETA_SAMPLES
 * runtimes of finished jobs per project and per queue, fed as jobs finish.
 * From them, the run of a job that gives neither est_runtime nor
 * max_runtime, and the remaining run of one that has already run for a
 * while: a quantile of the sample (of the runs longer than that), the
 * quantile spread over jobs by id, so that the runs planned for many jobs
 * spread as the finished ones did. Pure: fixed memory per key and at most
 * ETA_MAX_KEYS keys of each kind.
 */
#ifndef TIDE_ETA_ESTIMATE_H
#define TIDE_ETA_ESTIMATE_H

#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"

#define ETA_SAMPLES 512   /* runtimes kept per project and per queue */
#define ETA_MIN_SAMPLES 3 /* fewer than this: the key is not trusted yet */
#define ETA_MAX_KEYS 4096 /* projects (and queues) learned; later ones are not */
#define ETA_DEFAULT_RUNTIME_MS (3600LL * 1000)

/* What an ETA rests on, from the most to the least certain. A plan's ETA
 * carries the least certain basis among the runtimes that decided it. */
enum eta_basis {
    ETA_BASIS_UNKNOWN = 0, /* no ETA: held, or no node could hold it as planned */
    ETA_BASIS_NOW,         /* GPUs are free now */
    ETA_BASIS_RESERVATION, /* the backfill reservation it holds */
    ETA_BASIS_MAX_RUNTIME,
    ETA_BASIS_EST_RUNTIME,
    ETA_BASIS_ESTIMATE_PROJECT, /* learned from its project's finished jobs */
    ETA_BASIS_ESTIMATE_QUEUE,   /* learned from its queue's finished jobs */
    ETA_BASIS_DEFAULT,          /* nothing known: the estimator's default run */
    ETA_BASIS_COUNT
};

/* "unknown", "now", "reservation", "max_runtime", "est_runtime",
 * "estimate:project", "estimate:queue", "default". */
const char *eta_basis_name(enum eta_basis b);

/* The less certain of two bases (UNKNOWN counts as least certain). */
enum eta_basis eta_basis_weaker(enum eta_basis a, enum eta_basis b);

struct eta_samples {
    char key[TIDE_NAME_MAX];
    int n, next;                    /* samples held; ring position of the next */
    int64_t ring_ms[ETA_SAMPLES];   /* in the order they came */
    int64_t sorted_ms[ETA_SAMPLES]; /* the same, ascending */
};

/* Samples by key: open addressing over positions in items. */
struct eta_table {
    struct eta_samples *items;
    size_t n, cap;
    int32_t *slots; /* position + 1; 0: empty */
    size_t nslots;  /* a power of two, twice cap */
};

struct eta_estimator {
    struct eta_table projects, queues;
    int64_t default_ms; /* the run assumed when nothing is known */
};

/* default_ms <= 0: ETA_DEFAULT_RUNTIME_MS. */
void eta_estimator_init(struct eta_estimator *e, int64_t default_ms);
void eta_estimator_release(struct eta_estimator *e);

/* Records that a job of project and queue ran runtime_ms (one attempt,
 * from start to end). Returns 0, or TIDE_ENOMEM (nothing learned). A key
 * beyond ETA_MAX_KEYS is not learned (0). */
int eta_estimator_observe(struct eta_estimator *e, const char *project, const char *queue,
                          int64_t runtime_ms);

/* The run still ahead of job after elapsed_ms of running (0 for a
 * pending job), from its est_runtime, else max_runtime, else its
 * project's or queue's sample (at the job's quantile), else the default;
 * *basis says which. A running job past its est_runtime falls back to the
 * next source; past its max_runtime it is ending (0). Always >= 0. */
int64_t eta_estimator_remaining_ms(const struct eta_estimator *e, const struct job *job,
                                   int64_t elapsed_ms, enum eta_basis *basis);

#endif
