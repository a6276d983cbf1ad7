/* Binary min-heap of simulator events (see sim_heap.h). */
#include "sim/sim_heap.h"

#include <stdlib.h>

static int before(const struct sim_event *a, const struct sim_event *b)
{
    if (a->t_ms != b->t_ms)
        return a->t_ms < b->t_ms;
    if (a->kind != b->kind)
        return a->kind < b->kind;
    if (a->job != b->job)
        return a->job < b->job;
    return a->gen < b->gen;
}

void sim_heap_init(struct sim_heap *h)
{
    h->items = NULL;
    h->len = h->cap = 0;
}

void sim_heap_release(struct sim_heap *h)
{
    if (!h)
        return;
    free(h->items);
    sim_heap_init(h);
}

int sim_heap_push(struct sim_heap *h, struct sim_event ev)
{
    if (h->len == h->cap) {
        size_t next = h->cap ? h->cap * 2 : 256;
        struct sim_event *grown = realloc(h->items, next * sizeof *grown);
        if (!grown)
            return -1;
        h->items = grown;
        h->cap = next;
    }
    size_t i = h->len++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&ev, &h->items[parent]))
            break;
        h->items[i] = h->items[parent];
        i = parent;
    }
    h->items[i] = ev;
    return 0;
}

int sim_heap_pop(struct sim_heap *h, struct sim_event *out)
{
    if (h->len == 0)
        return -1;
    *out = h->items[0];
    struct sim_event last = h->items[--h->len];
    size_t i = 0, n = h->len;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const struct sim_event *best = &last;
        if (l < n && before(&h->items[l], best))
            m = l, best = &h->items[l];
        if (r < n && before(&h->items[r], best))
            m = r;
        if (m == i)
            break;
        h->items[i] = h->items[m];
        i = m;
    }
    if (n > 0)
        h->items[i] = last;
    return 0;
}

const struct sim_event *sim_heap_peek(const struct sim_heap *h)
{
    return h->len ? &h->items[0] : NULL;
}
