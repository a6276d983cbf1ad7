/*
 * Tournament trees of nodes by load, one per GPU count (see
 * placement_load.h). A tree's inner slot holds the position of the best
 * node below it; the root is the best of all.
 */
#include "core/placement_load.h"

#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"
#include "core/gpu_share.h"

#include "core/core_banned.h"

#define NO_NODE UINT32_MAX
#define LOAD_MAX ((UINT64_C(1) << 48) - 1)

void placement_load_init(struct placement_load *pl)
{
    memset(pl, 0, sizeof *pl);
}

void placement_load_release(struct placement_load *pl)
{
    if (!pl)
        return;
    free(pl->key);
    free(pl->tree);
    memset(pl, 0, sizeof *pl);
}

static uint64_t *key_row(const struct placement_load *pl, int g)
{
    return pl->key + (size_t)g * pl->leaves;
}

static uint32_t *tree_of(const struct placement_load *pl, int g)
{
    return pl->tree + (size_t)g * 2 * pl->leaves;
}

/* a beats b: lower key, then lower position (NO_NODE loses to all). */
static bool beats(const uint64_t *keys, uint32_t a, uint32_t b)
{
    if (b == NO_NODE)
        return a != NO_NODE;
    if (a == NO_NODE)
        return false;
    return keys[a] < keys[b] || (keys[a] == keys[b] && a < b);
}

/* The keys of one node for every g: as placement_try_node sums them, the
 * g lowest load keys of its free, whole, not overloaded GPUs; then the
 * free whole GPUs it would keep. */
static void node_keys(const struct placement_load *pl, const struct node *node, uint64_t *out)
{
    for (int g = 0; g <= pl->max_gpus; g++)
        out[g] = UINT64_MAX;
    if (node->state != NODE_READY)
        return;
    int keys[TIDE_MAX_GPUS_PER_NODE], n = 0, free_whole = 0;
    for (int g = 0; g < node->ngpus; g++) {
        const struct gpu *gpu = &node->gpus[g];
        if (!gpu_is_free(gpu) || !gpu_is_whole(gpu))
            continue;
        free_whole++;
        if (!placement_gpu_overloaded(&pl->cfg, gpu))
            keys[n++] = placement_gpu_load_key(gpu);
    }
    /* Insertion sort: a node has few GPUs. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && keys[j] < keys[j - 1]; j--) {
            int k = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = k;
        }
    uint64_t load = 0;
    for (int g = 0; g <= pl->max_gpus && g <= n; g++) {
        if (g > 0)
            load += (uint64_t)keys[g - 1];
        uint64_t l = load < LOAD_MAX ? load : LOAD_MAX;
        out[g] = l << 8 | (uint64_t)(free_whole - g);
    }
}

static void replay(const struct placement_load *pl, int g, size_t leaf)
{
    const uint64_t *keys = key_row(pl, g);
    uint32_t *t = tree_of(pl, g);
    for (size_t v = leaf / 2; v >= 1; v /= 2)
        t[v] = beats(keys, t[2 * v + 1], t[2 * v]) ? t[2 * v + 1] : t[2 * v];
}

int placement_load_build(struct placement_load *pl, const struct cluster *c,
                         const struct placement_config *cfg)
{
    pl->on = false;
    pl->cfg = *cfg;
    int max_gpus = 0;
    for (size_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].ngpus > max_gpus)
            max_gpus = c->nodes[i].ngpus;
    size_t leaves = 1;
    while (leaves < c->nnodes)
        leaves *= 2;
    size_t need = (size_t)(max_gpus + 1) * leaves;
    if (need > pl->cap) {
        uint64_t *key = realloc(pl->key, need * sizeof *key);
        if (key)
            pl->key = key;
        uint32_t *tree = realloc(pl->tree, 2 * need * sizeof *tree);
        if (tree)
            pl->tree = tree;
        if (!key || !tree)
            return TIDE_ENOMEM;
        pl->cap = need;
    }
    pl->max_gpus = max_gpus;
    pl->leaves = leaves;
    uint64_t keys[TIDE_MAX_GPUS_PER_NODE + 1];
    for (size_t i = 0; i < leaves; i++) {
        if (i < c->nnodes)
            node_keys(pl, &c->nodes[i], keys);
        for (int g = 0; g <= max_gpus; g++) {
            key_row(pl, g)[i] = i < c->nnodes ? keys[g] : UINT64_MAX;
            tree_of(pl, g)[leaves + i] = i < c->nnodes ? (uint32_t)i : NO_NODE;
        }
    }
    for (int g = 0; g <= max_gpus; g++) {
        const uint64_t *k = key_row(pl, g);
        uint32_t *t = tree_of(pl, g);
        t[0] = NO_NODE;
        for (size_t v = leaves - 1; v >= 1; v--)
            t[v] = beats(k, t[2 * v + 1], t[2 * v]) ? t[2 * v + 1] : t[2 * v];
    }
    pl->on = true;
    return 0;
}

void placement_load_refresh(struct placement_load *pl, const struct node *node, size_t pos)
{
    if (!pl->on || pos >= pl->leaves)
        return;
    if (node->ngpus > pl->max_gpus) {
        pl->on = false; /* grew past the trees: scan until the next build */
        return;
    }
    uint64_t keys[TIDE_MAX_GPUS_PER_NODE + 1];
    node_keys(pl, node, keys);
    for (int g = 0; g <= pl->max_gpus; g++) {
        if (key_row(pl, g)[pos] == keys[g])
            continue;
        key_row(pl, g)[pos] = keys[g];
        replay(pl, g, pl->leaves + pos);
    }
}

bool placement_load_usable(const struct placement_load *pl, const struct placement_config *cfg)
{
    return pl->on && pl->cfg.max_gpu_memory_used_pct == cfg->max_gpu_memory_used_pct &&
           pl->cfg.max_gpu_utilization_pct == cfg->max_gpu_utilization_pct;
}

/* The best node below v whose key beats *best and that takes job's host
 * needs; children in the order of their winners, and none whose winner
 * cannot beat what was found. */
static void search(const struct placement_load *pl, struct cluster *c, const struct job *job,
                   int g, size_t v, uint32_t *best)
{
    const uint64_t *keys = key_row(pl, g);
    const uint32_t *t = tree_of(pl, g);
    uint32_t w = t[v];
    if (w == NO_NODE || keys[w] == UINT64_MAX || !beats(keys, w, *best))
        return;
    if (placement_host_fits_now(&c->nodes[w], job)) {
        *best = w; /* the best below v, and it fits */
        return;
    }
    if (v >= pl->leaves)
        return;
    size_t a = 2 * v, b = 2 * v + 1;
    if (beats(keys, t[b], t[a])) {
        size_t x = a;
        a = b;
        b = x;
    }
    search(pl, c, job, g, a, best);
    search(pl, c, job, g, b, best);
}

struct node *placement_load_best(const struct placement_load *pl, struct cluster *c,
                                 const struct job *job)
{
    int g = job->gpus > 0 ? job->gpus : 0;
    if (g > pl->max_gpus)
        return NULL;
    uint32_t best = NO_NODE;
    search(pl, c, job, g, 1, &best);
    return best == NO_NODE ? NULL : &c->nodes[best];
}
