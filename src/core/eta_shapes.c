/* Special ETA plan items grouped by shape (eta_shapes.h). */
#include "core/eta_shapes.h"

#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"

#include "core/core_banned.h"

void eta_shapes_release(struct eta_shapes *s)
{
    free(s->shapes);
    free(s->members);
    free(s->slots);
    free(s->heap);
    memset(s, 0, sizeof *s);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
}

/* What special_fits, node_takes and the round read of an item (eta.c). */
static uint64_t shape_hash(const struct eta_item *it)
{
    const struct job *j = it->job;
    uint64_t h = 1469598103934665603ULL;
    for (const char *c = j->gpu_model; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    h = mix(h, (uint64_t)j->gpus);
    h = mix(h, (uint64_t)j->max_nodes);
    h = mix(h, (uint64_t)j->gpu_memory_mib);
    h = mix(h, (uint64_t)(uintptr_t)j->rules);
    h = mix(h, (uint64_t)j->preemptible);
    h = mix(h, (uint64_t)(it->queue + 1));
    return mix(h, (uint64_t)it->not_before_ms);
}

static bool same_shape(const struct eta_item *a, const struct eta_item *b)
{
    const struct job *x = a->job, *y = b->job;
    return x->gpus == y->gpus && x->max_nodes == y->max_nodes &&
           x->gpu_memory_mib == y->gpu_memory_mib && x->rules == y->rules &&
           x->preemptible == y->preemptible && a->queue == b->queue &&
           a->not_before_ms == b->not_before_ms && !strcmp(x->gpu_model, y->gpu_model);
}

static int reserve(void **buf, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    void *b = realloc(*buf, need * size);
    if (!b)
        return TIDE_ENOMEM;
    *buf = b;
    *cap = need;
    return 0;
}

/* The shape of items[i], added when new; -1 when out of memory. */
static int32_t shape_of(struct eta_shapes *s, const struct eta_item *items, int32_t i)
{
    size_t mask = s->nslots - 1;
    for (size_t k = (size_t)shape_hash(&items[i]) & mask;; k = (k + 1) & mask) {
        int32_t sh = s->slots[k] - 1;
        if (sh < 0) {
            if (reserve((void **)&s->shapes, &s->cap, s->n + 1 > s->cap ? 2 * s->n + 16 : s->cap,
                        sizeof *s->shapes))
                return -1;
            /* start: its first item, to compare with, until the ranges are set */
            s->shapes[s->n] = (struct eta_shape){.start = i};
            s->slots[k] = (int32_t)++s->n;
            return (int32_t)s->n - 1;
        }
        if (same_shape(&items[s->shapes[sh].start], &items[i]))
            return sh;
    }
}

int eta_shapes_build(struct eta_shapes *s, struct eta_item *items, const int32_t *special, size_t n)
{
    s->n = s->nheap = 0;
    size_t slots = 16;
    while (slots < 2 * n)
        slots *= 2;
    if (slots > s->nslots) {
        free(s->slots);
        s->nslots = 0;
        if (!(s->slots = malloc(slots * sizeof *s->slots)))
            return TIDE_ENOMEM;
        s->nslots = slots;
    }
    memset(s->slots, 0, s->nslots * sizeof *s->slots);
    if (reserve((void **)&s->members, &s->members_cap, n ? n : 1, sizeof *s->members))
        return TIDE_ENOMEM;
    /* each item's shape, counted in its end; then the shapes' ranges; then
     * each range filled in order */
    for (size_t k = 0; k < n; k++) {
        int32_t sh = shape_of(s, items, special[k]);
        if (sh < 0)
            return TIDE_ENOMEM;
        items[special[k]].shape = sh;
        s->shapes[sh].end++;
    }
    int32_t at = 0;
    for (size_t sh = 0; sh < s->n; sh++) {
        int32_t count = s->shapes[sh].end;
        s->shapes[sh].start = s->shapes[sh].head = s->shapes[sh].end = at;
        at += count;
    }
    for (size_t k = 0; k < n; k++)
        s->members[s->shapes[items[special[k]].shape].end++] = special[k];
    return reserve((void **)&s->heap, &s->heap_cap, s->n, sizeof *s->heap);
}

/* --- this round's shapes, a binary heap by head item --- */

static int32_t head_item(const struct eta_shapes *s, int32_t sh)
{
    return s->members[s->shapes[sh].head];
}

static void sift_down(struct eta_shapes *s, size_t i)
{
    for (;;) {
        size_t least = i, l = 2 * i + 1, r = l + 1;
        if (l < s->nheap && head_item(s, s->heap[l]) < head_item(s, s->heap[least]))
            least = l;
        if (r < s->nheap && head_item(s, s->heap[r]) < head_item(s, s->heap[least]))
            least = r;
        if (least == i)
            return;
        int32_t t = s->heap[i];
        s->heap[i] = s->heap[least];
        s->heap[least] = t;
        i = least;
    }
}

void eta_shapes_round_begin(struct eta_shapes *s)
{
    s->nheap = 0;
    for (size_t sh = 0; sh < s->n; sh++)
        if (s->shapes[sh].head < s->shapes[sh].end)
            s->heap[s->nheap++] = (int32_t)sh;
    for (size_t i = s->nheap / 2; i-- > 0;)
        sift_down(s, i);
}

int32_t eta_shapes_top(const struct eta_shapes *s)
{
    return s->nheap ? head_item(s, s->heap[0]) : INT32_MAX;
}

void eta_shapes_drop_top(struct eta_shapes *s)
{
    if (!s->nheap)
        return;
    s->heap[0] = s->heap[--s->nheap];
    sift_down(s, 0);
}

void eta_shapes_start_top(struct eta_shapes *s)
{
    if (!s->nheap)
        return;
    struct eta_shape *sh = &s->shapes[s->heap[0]];
    if (++sh->head < sh->end)
        sift_down(s, 0); /* its next item comes later in the order */
    else
        eta_shapes_drop_top(s);
}
