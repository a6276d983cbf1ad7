/*
 * Per-node wake slots (wake_slots.h): each slot is allocated once and never
 * moves, so its condition variable stays valid while the table of
 * pointers grows; a wait is woken by its own node's broadcast only.
 */
#include "server/wake_slots.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"

struct wake_slot {
    uint64_t decided;   /* bumped per decision for the node */
    uint64_t delivered; /* decided as of the last reply that carried it */
    pthread_cond_t cond; /* CLOCK_MONOTONIC; broadcast by decisions for this node */
    int parked;          /* waits in wake_slots_wait now */
    bool held;           /* by holder (wake_slots_hold) */
    pthread_t holder;
    uint64_t wakeups;    /* times a parked wait returned from the condition */
};

int wake_slots_init(struct wake_slots *w)
{
    w->slots = NULL;
    w->nslots = 0;
    w->slotless_parked = 0;
    return clock_cond_init(&w->slotless, CLOCK_MONOTONIC);
}

void wake_slots_release(struct wake_slots *w)
{
    for (size_t i = 0; i < w->nslots; i++)
        if (w->slots[i]) {
            pthread_cond_destroy(&w->slots[i]->cond);
            free(w->slots[i]);
        }
    free(w->slots);
    w->slots = NULL;
    w->nslots = 0;
    pthread_cond_destroy(&w->slotless);
}

static bool in_range(int64_t node_id)
{
    return node_id > 0 && node_id <= WAKE_SLOTS_MAX_NODE_ID;
}

/* The slot of node_id, or NULL (none yet). */
static struct wake_slot *find(const struct wake_slots *w, int64_t node_id)
{
    if (!in_range(node_id) || (size_t)node_id >= w->nslots)
        return NULL;
    return w->slots[node_id];
}

/* The slot of node_id, made on first use; NULL out of range or memory. */
static struct wake_slot *get(struct wake_slots *w, int64_t node_id)
{
    if (!in_range(node_id))
        return NULL;
    if ((size_t)node_id >= w->nslots) {
        size_t n = w->nslots ? w->nslots : 64;
        while (n <= (size_t)node_id)
            n *= 2;
        struct wake_slot **grown = realloc(w->slots, n * sizeof *grown);
        if (!grown)
            return NULL;
        memset(grown + w->nslots, 0, (n - w->nslots) * sizeof *grown);
        w->slots = grown;
        w->nslots = n;
    }
    if (!w->slots[node_id]) {
        struct wake_slot *s = calloc(1, sizeof *s);
        if (!s || clock_cond_init(&s->cond, CLOCK_MONOTONIC) != 0) {
            free(s);
            return NULL;
        }
        w->slots[node_id] = s;
    }
    return w->slots[node_id];
}

void wake_slots_decided(struct wake_slots *w, int64_t node_id)
{
    struct wake_slot *s = get(w, node_id);
    if (!s)
        return;
    s->decided++;
    /* the holder's reply carries it; a wait woken now would only find it
     * delivered once it had the lock back */
    if (s->parked && !(s->held && pthread_equal(s->holder, pthread_self())))
        pthread_cond_broadcast(&s->cond);
}

void wake_slots_hold(struct wake_slots *w, int64_t node_id)
{
    struct wake_slot *s = get(w, node_id);
    if (s) {
        s->held = true;
        s->holder = pthread_self();
    }
}

uint64_t wake_slots_delivered(struct wake_slots *w, int64_t node_id)
{
    struct wake_slot *s = get(w, node_id);
    if (!s)
        return 0;
    s->delivered = s->decided;
    s->held = false;
    return s->delivered;
}

bool wake_slots_undelivered(struct wake_slots *w, int64_t node_id)
{
    const struct wake_slot *s = find(w, node_id);
    return s && s->decided != s->delivered;
}

void wake_slots_wake_all(struct wake_slots *w)
{
    for (size_t i = 0; i < w->nslots; i++)
        if (w->slots[i] && w->slots[i]->parked)
            pthread_cond_broadcast(&w->slots[i]->cond);
    if (w->slotless_parked)
        pthread_cond_broadcast(&w->slotless);
}

bool wake_slots_wait(struct wake_slots *w, pthread_mutex_t *mu, int64_t node_id,
                     const struct timespec *deadline, const volatile int *stop)
{
    /* the slot, not its index: the table may grow while this one sleeps */
    struct wake_slot *s = get(w, node_id);
    if (!s) {
        w->slotless_parked++;
        while (!*stop && pthread_cond_timedwait(&w->slotless, mu, deadline) != ETIMEDOUT)
            ;
        w->slotless_parked--;
        return false;
    }
    s->parked++;
    while (!*stop && s->decided == s->delivered) {
        if (pthread_cond_timedwait(&s->cond, mu, deadline) == ETIMEDOUT)
            break;
        s->wakeups++;
    }
    s->parked--;
    return s->decided != s->delivered;
}

int wake_slots_parked(const struct wake_slots *w, int64_t node_id)
{
    const struct wake_slot *s = find(w, node_id);
    return s ? s->parked : 0;
}

uint64_t wake_slots_wakeups(const struct wake_slots *w, int64_t node_id)
{
    const struct wake_slot *s = find(w, node_id);
    return s ? s->wakeups : 0;
}
