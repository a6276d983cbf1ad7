/* Learned runtimes per project and queue for start-time ETAs (see eta_estimate.h). */
#include "core/eta_estimate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"

#include "core/core_banned.h"

static const char *const basis_names[ETA_BASIS_COUNT] = {
    "unknown",        "now",     "reservation", "max_runtime", "est_runtime", "estimate:project",
    "estimate:queue", "default",
};

const char *eta_basis_name(enum eta_basis b)
{
    return b >= 0 && b < ETA_BASIS_COUNT ? basis_names[b] : "unknown";
}

enum eta_basis eta_basis_weaker(enum eta_basis a, enum eta_basis b)
{
    if (a == ETA_BASIS_UNKNOWN || b == ETA_BASIS_UNKNOWN)
        return ETA_BASIS_UNKNOWN;
    return a > b ? a : b;
}

static uint64_t hash_key(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void table_release(struct eta_table *t)
{
    free(t->items);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

void eta_estimator_init(struct eta_estimator *e, int64_t default_ms)
{
    memset(e, 0, sizeof *e);
    e->default_ms = default_ms > 0 ? default_ms : ETA_DEFAULT_RUNTIME_MS;
}

void eta_estimator_release(struct eta_estimator *e)
{
    if (!e)
        return;
    table_release(&e->projects);
    table_release(&e->queues);
}

static const struct eta_samples *table_find(const struct eta_table *t, const char *key)
{
    if (!t->nslots || !key)
        return NULL;
    for (size_t h = hash_key(key) & (t->nslots - 1);; h = (h + 1) & (t->nslots - 1)) {
        int32_t pos = t->slots[h];
        if (!pos)
            return NULL;
        if (!strcmp(t->items[pos - 1].key, key))
            return &t->items[pos - 1];
    }
}

static void slots_fill(struct eta_table *t)
{
    memset(t->slots, 0, t->nslots * sizeof *t->slots);
    for (size_t i = 0; i < t->n; i++) {
        size_t h = hash_key(t->items[i].key) & (t->nslots - 1);
        while (t->slots[h])
            h = (h + 1) & (t->nslots - 1);
        t->slots[h] = (int32_t)i + 1;
    }
}

/* The samples of key, added when new; NULL when out of memory or full. */
static struct eta_samples *table_get(struct eta_table *t, const char *key, int *rc)
{
    struct eta_samples *found = (struct eta_samples *)table_find(t, key);
    if (found)
        return found;
    if (t->n >= ETA_MAX_KEYS)
        return NULL;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 8;
        struct eta_samples *items = realloc(t->items, cap * sizeof *items);
        if (!items) {
            *rc = TIDE_ENOMEM;
            return NULL;
        }
        t->items = items;
        int32_t *slots = malloc(2 * cap * sizeof *slots);
        if (!slots) {
            *rc = TIDE_ENOMEM;
            return NULL;
        }
        free(t->slots);
        t->slots = slots;
        t->nslots = 2 * cap;
        t->cap = cap;
        slots_fill(t);
    }
    struct eta_samples *s = &t->items[t->n];
    memset(s, 0, sizeof *s);
    snprintf(s->key, sizeof s->key, "%s", key);
    size_t h = hash_key(s->key) & (t->nslots - 1);
    while (t->slots[h])
        h = (h + 1) & (t->nslots - 1);
    t->slots[h] = (int32_t)(++t->n);
    return s;
}

/* Replaces the oldest sample (when full) by v, keeping sorted_ms:
 * O(ETA_SAMPLES). */
static void samples_add(struct eta_samples *s, int64_t v)
{
    int n = s->n;
    if (n == ETA_SAMPLES) {
        int64_t old = s->ring_ms[s->next];
        int i = 0;
        while (i < n && s->sorted_ms[i] != old)
            i++;
        memmove(&s->sorted_ms[i], &s->sorted_ms[i + 1], (size_t)(n - 1 - i) * sizeof(int64_t));
        n--;
    }
    s->ring_ms[s->next] = v;
    s->next = (s->next + 1) % ETA_SAMPLES;
    int i = n;
    while (i > 0 && s->sorted_ms[i - 1] > v) {
        s->sorted_ms[i] = s->sorted_ms[i - 1];
        i--;
    }
    s->sorted_ms[i] = v;
    s->n = n + 1;
}

int eta_estimator_observe(struct eta_estimator *e, const char *project, const char *queue,
                          int64_t runtime_ms)
{
    if (runtime_ms < 0)
        runtime_ms = 0;
    int rc = 0;
    struct eta_samples *p = project && project[0] ? table_get(&e->projects, project, &rc) : NULL;
    if (p)
        samples_add(p, runtime_ms);
    struct eta_samples *q = queue && queue[0] ? table_get(&e->queues, queue, &rc) : NULL;
    if (q)
        samples_add(q, runtime_ms);
    return rc;
}

/* A job's place in a distribution, from its id: a low-discrepancy
 * sequence, so that any run of consecutive ids spreads evenly over 0..1. */
static double job_quantile(int64_t id)
{
    double x = (double)(id < 0 ? -id : id) * 0.6180339887498949;
    return x - (double)(int64_t)x;
}

/* The run beyond elapsed_ms of the samples that ran longer, at the job's
 * quantile of them: with runs spread as the finished ones were, the
 * plan's ends come as often as real ones do (the soonest of many running
 * jobs ends much sooner than any one is expected to). A job that has run
 * longer than any sample is taken to run as long again. */
static int64_t samples_remaining(const struct eta_samples *s, int64_t elapsed_ms, double q)
{
    int lo = 0, hi = s->n;
    while (lo < hi) { /* the first sample > elapsed_ms */
        int mid = (lo + hi) / 2;
        if (s->sorted_ms[mid] > elapsed_ms)
            hi = mid;
        else
            lo = mid + 1;
    }
    int above = s->n - lo;
    if (above == 0)
        return elapsed_ms;
    int at = lo + (int)(q * above);
    return s->sorted_ms[at < s->n ? at : s->n - 1] - elapsed_ms;
}

int64_t eta_estimator_remaining_ms(const struct eta_estimator *e, const struct job *job,
                                   int64_t elapsed_ms, enum eta_basis *basis)
{
    if (elapsed_ms < 0)
        elapsed_ms = 0;
    if (job->est_runtime_s > 0 && job->est_runtime_s * 1000 > elapsed_ms) {
        *basis = ETA_BASIS_EST_RUNTIME;
        return job->est_runtime_s * 1000 - elapsed_ms;
    }
    if (job->max_runtime_s > 0) {
        *basis = ETA_BASIS_MAX_RUNTIME;
        int64_t left = job->max_runtime_s * 1000 - elapsed_ms;
        return left > 0 ? left : 0;
    }
    const struct eta_samples *s = table_find(&e->projects, job->project);
    if (s && s->n >= ETA_MIN_SAMPLES) {
        *basis = ETA_BASIS_ESTIMATE_PROJECT;
        return samples_remaining(s, elapsed_ms, job_quantile(job->id));
    }
    s = table_find(&e->queues, job->queue);
    if (s && s->n >= ETA_MIN_SAMPLES) {
        *basis = ETA_BASIS_ESTIMATE_QUEUE;
        return samples_remaining(s, elapsed_ms, job_quantile(job->id));
    }
    *basis = ETA_BASIS_DEFAULT;
    return e->default_ms > elapsed_ms ? e->default_ms - elapsed_ms : elapsed_ms;
}
