/* Per-node lists of job ids, found by node id through open addressing
 * (node_jobs.h). Lists are never removed: a node's empty list stays for
 * its next job, so slots need no deletion. */
#include "core/node_jobs.h"

#include <stdlib.h>
#include <string.h>

#include "core/array.h"

#include "core/core_banned.h"

void node_jobs_init(struct node_jobs *ix)
{
    memset(ix, 0, sizeof *ix);
}

void node_jobs_release(struct node_jobs *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < ix->nlists; i++)
        free(ix->lists[i].job_ids);
    free(ix->lists);
    free(ix->slots);
    memset(ix, 0, sizeof *ix);
}

static size_t home_slot(size_t cap, int64_t node_id)
{
    uint64_t h = (uint64_t)node_id * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static size_t slot_of(const struct node_jobs_slot *slots, size_t cap, int64_t node_id)
{
    size_t h = home_slot(cap, node_id);
    while (slots[h].pos && slots[h].node_id != node_id)
        h = (h + 1) & (cap - 1);
    return h;
}

static struct node_jobs_list *find_list(const struct node_jobs *ix, int64_t node_id)
{
    if (!ix->cap)
        return NULL;
    uint32_t pos = ix->slots[slot_of(ix->slots, ix->cap, node_id)].pos;
    return pos ? &ix->lists[pos - 1] : NULL;
}

/* Doubles the slots (kept at most half full) and places every list again. */
static int grow_slots(struct node_jobs *ix)
{
    size_t cap = ix->cap ? ix->cap * 2 : 16;
    struct node_jobs_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < ix->nlists; i++) {
        size_t h = slot_of(slots, cap, ix->lists[i].node_id);
        slots[h].node_id = ix->lists[i].node_id;
        slots[h].pos = (uint32_t)i + 1;
    }
    free(ix->slots);
    ix->slots = slots;
    ix->cap = cap;
    return 0;
}

static struct node_jobs_list *list_for(struct node_jobs *ix, int64_t node_id)
{
    struct node_jobs_list *l = find_list(ix, node_id);
    if (l)
        return l;
    if (ix->nlists >= UINT32_MAX - 1 || (2 * (ix->nlists + 1) > ix->cap && grow_slots(ix) != 0))
        return NULL;
    if (array_reserve((void **)&ix->lists, &ix->lists_cap, ix->nlists + 1, sizeof *ix->lists) != 0)
        return NULL;
    l = &ix->lists[ix->nlists];
    memset(l, 0, sizeof *l);
    l->node_id = node_id;
    size_t h = slot_of(ix->slots, ix->cap, node_id);
    ix->slots[h].node_id = node_id;
    ix->slots[h].pos = (uint32_t)++ix->nlists;
    return l;
}

int node_jobs_add(struct node_jobs *ix, int64_t node_id, int64_t job_id)
{
    struct node_jobs_list *l = list_for(ix, node_id);
    if (!l)
        return -1;
    if (l->n == l->cap) {
        size_t cap = l->cap;
        if (cap >= UINT32_MAX / 2 ||
            array_reserve((void **)&l->job_ids, &cap, (size_t)l->n + 1, sizeof *l->job_ids) != 0)
            return -1;
        l->cap = (uint32_t)cap;
    }
    l->job_ids[l->n++] = job_id;
    return 0;
}

void node_jobs_clear(struct node_jobs *ix)
{
    for (size_t i = 0; i < ix->nlists; i++)
        ix->lists[i].n = 0;
}

void node_jobs_remove(struct node_jobs *ix, int64_t node_id, int64_t job_id)
{
    struct node_jobs_list *l = find_list(ix, node_id);
    for (uint32_t i = 0; l && i < l->n; i++) {
        if (l->job_ids[i] != job_id)
            continue;
        l->job_ids[i] = l->job_ids[--l->n];
        return;
    }
}

const int64_t *node_jobs_of(const struct node_jobs *ix, int64_t node_id, size_t *n)
{
    const struct node_jobs_list *l = find_list(ix, node_id);
    *n = l ? l->n : 0;
    return l && l->n ? l->job_ids : NULL;
}
