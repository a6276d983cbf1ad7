/* Waiting jobs by scale shape, in age order (see demand.h). */
#include "core/demand.h"

#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"
#include "core/array.h"

#include "core/core_banned.h"

void demand_init(struct demand *d)
{
    memset(d, 0, sizeof *d);
}

void demand_release(struct demand *d)
{
    if (!d)
        return;
    for (int s = 0; s < d->nshapes; s++)
        free(d->shapes[s].slots);
    free(d->shapes);
    memset(d, 0, sizeof *d);
}

bool demand_same_shape(const struct job *a, const struct job *b)
{
    return a->gpus == b->gpus && a->max_nodes == b->max_nodes &&
           a->gpu_memory_mib == b->gpu_memory_mib && a->preemptible == b->preemptible &&
           a->rules == b->rules && !strcmp(a->gpu_model, b->gpu_model);
}

static struct demand_shape *find_shape(const struct demand *d, const struct job *job)
{
    for (int s = 0; s < d->nshapes; s++)
        if (demand_same_shape(&d->shapes[s].key, job))
            return &d->shapes[s];
    return NULL;
}

static struct demand_shape *add_shape(struct demand *d, const struct job *job)
{
    if (d->nshapes == d->cap) {
        int cap = d->cap ? d->cap * 2 : 8;
        struct demand_shape *grown = realloc(d->shapes, (size_t)cap * sizeof *grown);
        if (!grown)
            return NULL;
        d->shapes = grown;
        d->cap = cap;
    }
    struct demand_shape *s = &d->shapes[d->nshapes++];
    memset(s, 0, sizeof *s);
    s->key.gpus = job->gpus;
    s->key.max_nodes = job->max_nodes;
    s->key.gpu_memory_mib = job->gpu_memory_mib;
    s->key.preemptible = job->preemptible;
    s->key.rules = job->rules;
    memcpy(s->key.gpu_model, job->gpu_model, sizeof s->key.gpu_model);
    return s;
}

static int64_t abs_id(int64_t id)
{
    return id < 0 ? -id : id;
}

/* Whether slot a comes before (submit_ms, id). */
static bool slot_before(const struct demand_slot *a, int64_t submit_ms, int64_t id)
{
    return a->submit_ms != submit_ms ? a->submit_ms < submit_ms : abs_id(a->id) < id;
}

/* The first slot not before (submit_ms, id), removed ones included. */
static size_t lower_bound(const struct demand_shape *s, int64_t submit_ms, int64_t id)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (slot_before(&s->slots[mid], submit_ms, id))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Drops the removed slots once they are the most. */
static void sweep(struct demand_shape *s)
{
    if (s->n < 64 || s->n - s->live <= s->live)
        return;
    size_t out = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->slots[i].id > 0)
            s->slots[out++] = s->slots[i];
    s->n = out;
    s->head = 0;
}

int demand_add(struct demand *d, const struct job *job)
{
    struct demand_shape *s = find_shape(d, job);
    if (!s && !(s = add_shape(d, job)))
        return TIDE_ENOMEM;
    size_t at = lower_bound(s, job->submit_ms, job->id);
    if (at < s->n && s->slots[at].submit_ms == job->submit_ms &&
        abs_id(s->slots[at].id) == job->id) {
        if (s->slots[at].id < 0) { /* back again (requeued) */
            s->slots[at].id = job->id;
            s->live++;
            if (at < s->head)
                s->head = at;
        }
        return 0;
    }
    if (array_reserve((void **)&s->slots, &s->cap, s->n + 1, sizeof *s->slots) != 0)
        return TIDE_ENOMEM;
    memmove(&s->slots[at + 1], &s->slots[at], (s->n - at) * sizeof *s->slots);
    s->slots[at] = (struct demand_slot){.submit_ms = job->submit_ms, .id = job->id};
    s->n++;
    s->live++;
    if (at < s->head)
        s->head = at; /* after it, nothing before it moved */
    return 0;
}

void demand_remove(struct demand *d, const struct job *job)
{
    struct demand_shape *s = find_shape(d, job);
    if (!s)
        return;
    size_t at = lower_bound(s, job->submit_ms, job->id);
    if (at >= s->n || s->slots[at].id != job->id || s->slots[at].submit_ms != job->submit_ms)
        return;
    s->slots[at].id = -job->id;
    s->live--;
    while (s->head < s->n && s->slots[s->head].id < 0)
        s->head++;
    sweep(s);
}

size_t demand_count(const struct demand *d)
{
    size_t n = 0;
    for (int s = 0; s < d->nshapes; s++)
        n += d->shapes[s].live;
    return n;
}

size_t demand_next(const struct demand_shape *s, size_t from, int64_t submit_ms, int64_t id)
{
    size_t at = id ? lower_bound(s, submit_ms, id + 1) : 0;
    if (at < from)
        at = from;
    if (at < s->head)
        at = s->head;
    while (at < s->n && s->slots[at].id < 0)
        at++;
    return at;
}
