/* What a pass that changed nothing leaves for the next (see sched_quiet.h). */
#include "core/sched_quiet.h"

#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"

#include "core/core_banned.h"

void sched_quiet_init(struct sched_quiet *q)
{
    memset(q, 0, sizeof *q);
}

void sched_quiet_release(struct sched_quiet *q)
{
    if (!q)
        return;
    free(q->words);
    memset(q, 0, sizeof *q);
}

/* Where the words go: appended (take) or compared with the stored ones. */
struct words_sink {
    uint64_t *w;
    size_t n, cap;
    bool compare, differ, nomem;
};

static void put(struct words_sink *k, uint64_t word)
{
    if (k->compare) {
        if (k->n >= k->cap || k->w[k->n] != word)
            k->differ = true;
        k->n++;
        return;
    }
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 256;
        uint64_t *grown = realloc(k->w, cap * sizeof *grown);
        if (!grown) {
            k->nomem = true;
            return;
        }
        k->w = grown;
        k->cap = cap;
    }
    k->w[k->n++] = word;
}

/* A string as one word (FNV-1a): names and profiles, which rarely change. */
static uint64_t text_word(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void node_words(struct words_sink *k, const struct cluster *c)
{
    put(k, c->nnodes);
    put(k, (uint64_t)c->last_assigned_node_id); /* roundrobin starts after it */
    for (size_t i = 0; i < c->nnodes && !k->differ && !k->nomem; i++) {
        const struct node *n = &c->nodes[i];
        put(k, (uint64_t)n->id);
        put(k, ((uint64_t)n->state << 32) | (uint32_t)n->ngpus);
        put(k, ((uint64_t)(uint32_t)n->cpus << 32) | (uint32_t)n->cpus_allocated);
        put(k, (uint64_t)n->memory_mib);
        put(k, (uint64_t)n->memory_allocated_mib);
        put(k, (uint64_t)n->spot | (uint64_t)n->drained << 1 | (uint64_t)n->health_failed << 2 |
                   (uint64_t)n->probe_drained << 3);
        put(k, (uint64_t)n->interrupt_deadline_ms);
        put(k, text_word(n->pool));
        put(k, text_word(n->name));
        for (int g = 0; g < n->ngpus; g++) {
            const struct gpu *gpu = &n->gpus[g];
            put(k, ((uint64_t)(uint32_t)gpu->index << 32) | (uint32_t)gpu->utilization_pct);
            put(k, (uint64_t)gpu->memory_total_mib);
            put(k, (uint64_t)gpu->memory_used_mib);
            put(k, (uint64_t)gpu->job_id);
            put(k, ((uint64_t)(uint32_t)gpu->shared_jobs << 32) | (uint32_t)gpu->mig_parent);
            put(k, (uint64_t)gpu->shared_memory_mib);
            put(k, (uint64_t)gpu->mig_mode | (uint64_t)gpu->faulty << 1);
            put(k, text_word(gpu->name) ^ (text_word(gpu->mig_profile) << 1));
        }
    }
}

int sched_quiet_nodes_take(struct sched_quiet *q, const struct cluster *c)
{
    struct words_sink k = {.w = q->words, .cap = q->cap};
    node_words(&k, c);
    q->words = k.w;
    q->cap = k.cap;
    q->nwords = k.nomem ? 0 : k.n;
    if (k.nomem) {
        q->valid = false;
        return TIDE_ENOMEM;
    }
    return 0;
}

bool sched_quiet_nodes_same(const struct sched_quiet *q, const struct cluster *c)
{
    struct words_sink k = {.w = q->words, .cap = q->nwords, .compare = true};
    node_words(&k, c);
    return !k.differ && k.n == q->nwords;
}

bool sched_quiet_rules_timeless(bool fairshare, bool budgets, bool queue_round_robin)
{
    return !fairshare && !budgets && !queue_round_robin;
}
