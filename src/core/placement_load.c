/*
 * Tournament trees of nodes by load, one per GPU count, over keys kept per
 * node (see placement_load.h). A slot is a node's key and position in one
 * 64-bit word, so the lesser word is the better node; an inner slot is a
 * copy of the best leaf below it and the root is the best of all.
 */
#include "core/placement_load.h"

#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"
#include "core/gpu_share.h"
#include "core/placement_index.h"

#include "core/core_banned.h"

#define CANNOT UINT32_MAX
#define EMPTY UINT64_MAX /* a leaf past the last node: loses to every node */
/* The summed load a key holds; no node with GPUs under thresholds of at
 * most 100 % comes near it (64 GPUs at most 12900 each). */
#define LOAD_MAX ((UINT32_C(1) << 24) - 2)

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

static uint32_t *keys_of(const struct placement_load *pl, size_t pos)
{
    return pl->key + pos * (size_t)(pl->max_gpus + 1);
}

static uint64_t *tree_of(const struct placement_load *pl, int g)
{
    return pl->tree + (size_t)g * 2 * pl->leaves;
}

static uint64_t slot(uint32_t key, size_t pos)
{
    return (uint64_t)key << 32 | (uint64_t)pos;
}

static uint64_t least(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

int placement_load_start(struct placement_load *pl, const struct cluster *c,
                         const struct placement_config *cfg)
{
    pl->on = false;
    pl->cfg = *cfg;
    memset(pl->built, 0, sizeof pl->built);
    int max_gpus = 0;
    for (size_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].ngpus > max_gpus)
            max_gpus = c->nodes[i].ngpus;
    if (c->nnodes >= UINT32_MAX)
        return TIDE_ENOMEM;
    size_t leaves = 1;
    while (leaves < c->nnodes)
        leaves *= 2;
    size_t rows = (size_t)(max_gpus + 1);
    if (rows * leaves > pl->key_cap) {
        uint32_t *key = realloc(pl->key, rows * leaves * sizeof *key);
        if (!key)
            return TIDE_ENOMEM;
        pl->key = key;
        pl->key_cap = rows * leaves;
    }
    if (2 * rows * leaves > pl->tree_cap) {
        uint64_t *tree = realloc(pl->tree, 2 * rows * leaves * sizeof *tree);
        if (!tree)
            return TIDE_ENOMEM;
        pl->tree = tree;
        pl->tree_cap = 2 * rows * leaves;
    }
    pl->max_gpus = max_gpus;
    pl->leaves = leaves;
    memset(pl->key, 0xff, rows * leaves * sizeof *pl->key); /* CANNOT until put */
    pl->on = true;
    return 0;
}

/* A node's keys for every g: as placement_try_node sums them, the g lowest
 * load keys of its free, whole, not overloaded GPUs; then the free whole
 * GPUs it would keep. Returns its free whole GPUs, or -1 when not ready. */
static int node_keys(const struct placement_config *cfg, int max_gpus, const struct node *node,
                     uint32_t *out)
{
    for (int g = 0; g <= max_gpus; g++)
        out[g] = CANNOT;
    if (node->state != NODE_READY)
        return -1;
    int keys[TIDE_MAX_GPUS_PER_NODE], n = 0, free_whole = 0;
    for (int g = 0; g < node->ngpus; g++) {
        const struct gpu *gpu = &node->gpus[g];
        if (!gpu_is_free(gpu)) /* a free GPU is whole */
            continue;
        free_whole++;
        if (!placement_gpu_overloaded(cfg, gpu))
            keys[n++] = placement_gpu_load_key(gpu);
    }
    /* Insertion sort: a node has few GPUs. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && keys[j] < keys[j - 1]; j--) {
            int k = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = k;
        }
    uint32_t load = 0;
    for (int g = 0; g <= max_gpus && g <= n; g++) {
        if (g > 0)
            load =
                load + (uint32_t)keys[g - 1] < LOAD_MAX ? load + (uint32_t)keys[g - 1] : LOAD_MAX;
        out[g] = load << 8 | (uint32_t)(free_whole - g);
    }
    return free_whole;
}

/* After the leaf of pos changed: recomputes the slots above it, and stops
 * at the first that stays as it was (a slot holds its node's key, so pos
 * with its new key never equals what was there): nothing above changes. */
static void replay(uint64_t *t, size_t leaves, size_t pos)
{
    for (size_t v = (leaves + pos) / 2; v >= 1; v /= 2) {
        uint64_t w = least(t[2 * v], t[2 * v + 1]);
        if (w == t[v])
            return;
        t[v] = w;
    }
}

int placement_load_put(struct placement_load *pl, const struct node *node, size_t pos)
{
    if (!pl->on || pos >= pl->leaves)
        return node->state == NODE_READY ? placement_node_free_gpus(node) : -1;
    if (node->ngpus > pl->max_gpus) {
        pl->on = false; /* grew past the keys: scan until the next fill */
        return node->state == NODE_READY ? placement_node_free_gpus(node) : -1;
    }
    uint32_t keys[TIDE_MAX_GPUS_PER_NODE + 1];
    int free = node_keys(&pl->cfg, pl->max_gpus, node, keys);
    uint32_t *row = keys_of(pl, pos);
    for (int g = 0; g <= pl->max_gpus; g++) {
        if (row[g] == keys[g])
            continue;
        row[g] = keys[g];
        if (pl->built[g]) {
            uint64_t *t = tree_of(pl, g);
            t[pl->leaves + pos] = slot(keys[g], pos);
            replay(t, pl->leaves, pos);
        }
    }
    return free;
}

static void build_tree(struct placement_load *pl, size_t nnodes, int g)
{
    uint64_t *t = tree_of(pl, g);
    for (size_t i = 0; i < pl->leaves; i++)
        t[pl->leaves + i] = i < nnodes ? slot(keys_of(pl, i)[g], i) : EMPTY;
    t[0] = EMPTY;
    for (size_t v = pl->leaves - 1; v >= 1; v--)
        t[v] = least(t[2 * v], t[2 * v + 1]);
    pl->built[g] = true;
}

bool placement_load_usable(const struct placement_load *pl, const struct placement_config *cfg)
{
    return pl->on && pl->cfg.max_gpu_memory_used_pct == cfg->max_gpu_memory_used_pct &&
           pl->cfg.max_gpu_utilization_pct == cfg->max_gpu_utilization_pct;
}

/* The best node below v whose slot is below *best and that takes job's
 * host needs; children in the order of their slots, and none whose best
 * cannot beat what was found. */
static void search(const uint64_t *t, size_t leaves, struct cluster *c, const struct job *job,
                   size_t v, uint64_t *best)
{
    uint64_t w = t[v];
    if (w >= *best || (uint32_t)(w >> 32) == CANNOT)
        return;
    if (placement_host_fits_now(&c->nodes[(uint32_t)w], job)) {
        *best = w; /* the best below v, and it fits */
        return;
    }
    if (v >= leaves)
        return;
    size_t a = 2 * v, b = 2 * v + 1;
    if (t[b] < t[a]) {
        size_t x = a;
        a = b;
        b = x;
    }
    search(t, leaves, c, job, a, best);
    search(t, leaves, c, job, b, best);
}

struct node *placement_load_best(struct placement_load *pl, struct cluster *c,
                                 const struct job *job)
{
    int g = job->gpus > 0 ? job->gpus : 0;
    if (g > pl->max_gpus)
        return NULL;
    if (!pl->built[g])
        build_tree(pl, c->nnodes, g);
    uint64_t best = EMPTY;
    search(tree_of(pl, g), pl->leaves, c, job, 1, &best);
    return best == EMPTY ? NULL : &c->nodes[(uint32_t)best];
}
