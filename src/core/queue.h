/*
 * Queues: named classes of work with a priority range, caps on what may
 * run at once, a maximum wait after which waiting jobs are escalated, and
 * runtime defaults and limits. Admission (at submit) fills a job's defaults
 * from its queue and refuses what the queue does not allow; each
 * scheduling pass computes effective priorities and enforces the caps.
 */
#ifndef TIDE_QUEUE_H
#define TIDE_QUEUE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/tide_err.h"
#include "core/cluster.h"

#define TIDE_MAX_QUEUES 64
#define TIDE_MAX_QUEUE_POOLS 8

struct queue_config {
    char name[TIDE_NAME_MAX];
    int priority_min, priority_max;
    int priority_default;
    int max_running_jobs; /* 0: no cap */
    int max_running_gpus; /* 0: no cap */
    int64_t max_wait_s;   /* 0: never escalated */
    int escalation;       /* priority added for each max_wait_s waited */
    int64_t default_runtime_s; /* max_runtime for jobs that give none; 0: none */
    int64_t max_runtime_s;     /* the most a job may ask for; 0: no limit */
    bool preemptible;          /* default for jobs that do not say */
    int idle_util_pct;         /* idle reclaim: GPUs under this utilisation ... */
    int64_t idle_after_s;      /* ... for this long are reclaimed; 0: never */
    bool allow_spot;           /* its non-preemptible jobs may use spot nodes too */
    int npools;                /* pools its jobs may use; 0: any node */
    char pools[TIDE_MAX_QUEUE_POOLS][TIDE_NAME_MAX];
};

struct queue_set {
    struct queue_config queues[TIDE_MAX_QUEUES];
    int count;
    char default_queue[TIDE_NAME_MAX]; /* for jobs that name none */
};

/* The built-in queues: default, inference, training, batch (preemptible), render. */
void queue_set_defaults(struct queue_set *qs);

/* The queue called name, or NULL. */
const struct queue_config *queue_find(const struct queue_set *qs, const char *name);

/* job's queue (queue_find of job->queue), looked for first at the place
 * in qs that job->queue_slot remembers, so that a known job costs one
 * name compared instead of every queue's (each scheduling pass and ETA
 * plan asks for every pending job). */
const struct queue_config *queue_of_job(const struct queue_set *qs, const struct job *job);

/* queue_of_job, remembering the answer's place in job->queue_slot. */
const struct queue_config *queue_of_job_remember(const struct queue_set *qs, struct job *job);

/* Admission at submit: `given` is the spec as the user sent it (to tell
 * which fields were left out), `spec` the canonical spec job_spec made and
 * `job` its struct. Puts the job in the default queue when it names none,
 * refuses unknown queues and priorities or runtimes outside the queue's
 * limits (TIDE_EINVAL naming the field), fills priority, max_runtime and
 * preemptible from the queue where they were left out, in both spec and job. */
int queue_admit(const struct queue_set *qs, json_t *given, json_t *spec, struct job *job,
                struct tide_err *err);

/* Whether a job under queue q (NULL: no rules) may run on a node of `pool`
 * ("" for a node joined by hand, which only unrestricted queues use). */
bool queue_allows_pool(const struct queue_config *q, const char *pool);

/* Whether job may run on node: its queue allows the node's pool, and a
 * spot node takes only preemptible jobs unless the queue allows spot. */
bool queue_allows_node(const struct job *job, const struct node *node);

/* A waiting job's priority after escalation for waiting past max_wait_s. */
/* Whether job may run on spot nodes: it is preemptible, or its queue has
 * allow_spot. */
bool queue_job_may_use_spot(const struct job *job);

int queue_effective_priority(const struct queue_config *q, const struct job *job, int64_t now_ms);

/* When queue_effective_priority next changes for job after now_ms
 * (INT64_MAX: never; now_ms when it cannot tell). */
int64_t queue_next_escalation_ms(const struct queue_config *q, const struct job *job,
                                 int64_t now_ms);

#endif
