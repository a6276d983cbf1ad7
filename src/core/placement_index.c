/*
 * Bitmaps of ready nodes by free GPU count (see placement_index.h). Memory
 * is reused from pass to pass, so a pass allocates only when the cluster
 * grew; refreshing a node is O(its GPUs).
 */
#include "core/placement_index.h"

#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"
#include "core/gpu_share.h"

#include "core/core_banned.h"

void placement_index_init(struct placement_index *idx)
{
    memset(idx, 0, sizeof *idx);
}

void placement_index_release(struct placement_index *idx)
{
    if (!idx)
        return;
    free(idx->order);
    free(idx->rank);
    free(idx->free);
    free(idx->at_least);
    placement_load_release(&idx->load);
    memset(idx, 0, sizeof *idx);
}

int placement_node_free_gpus(const struct node *node)
{
    int n = 0;
    for (int g = 0; g < node->ngpus; g++)
        n += gpu_is_free(&node->gpus[g]);
    return n;
}

static uint64_t *bitmap(const struct placement_index *idx, int f)
{
    return idx->at_least + (size_t)f * idx->words;
}

static void set_free(struct placement_index *idx, size_t pos, int now)
{
    int was = idx->free[pos];
    if (was == now)
        return;
    size_t r = idx->rank[pos], w = r / 64;
    uint64_t bit = (uint64_t)1 << (r % 64);
    if (was != PLACEMENT_INDEX_NONE) {
        for (int f = 0; f <= was; f++)
            bitmap(idx, f)[w] &= ~bit;
        idx->count[was]--;
    }
    if (now != PLACEMENT_INDEX_NONE) {
        for (int f = 0; f <= now; f++)
            bitmap(idx, f)[w] |= bit;
        idx->count[now]++;
        if (now > idx->max_free)
            idx->max_free = now;
    }
    idx->free[pos] = (uint8_t)now;
    if ((was == PLACEMENT_INDEX_NONE) != (now == PLACEMENT_INDEX_NONE))
        idx->nmemo = 0; /* a node came or went: what could ever fit may differ */
}

/* The node's free GPUs, or NONE when it is not ready; the load index,
 * when on, takes the node's keys in the same look at its GPUs. */
static int node_free_or_none(struct placement_index *idx, const struct node *node, size_t pos)
{
    if (idx->load.on) {
        int f = placement_load_put(&idx->load, node, pos);
        return f < 0 ? PLACEMENT_INDEX_NONE : f;
    }
    return node->state == NODE_READY ? placement_node_free_gpus(node) : PLACEMENT_INDEX_NONE;
}

struct rank_ctx {
    const struct node *nodes;
    placement_node_order_fn order;
};

static int by_rank(const void *a, const void *b, void *ctx)
{
    const struct rank_ctx *rc = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int d = rc->order(&rc->nodes[x], &rc->nodes[y]);
    if (d)
        return d;
    return (x > y) - (x < y);
}

static int grow_arrays(struct placement_index *idx, size_t n)
{
    if (n <= idx->cap && idx->at_least)
        return 0;
    size_t cap = idx->cap ? idx->cap : 64;
    while (cap < n)
        cap *= 2;
    size_t words = (cap + 63) / 64;
    uint32_t *order = realloc(idx->order, cap * sizeof *order);
    if (order)
        idx->order = order;
    uint32_t *rank = realloc(idx->rank, cap * sizeof *rank);
    if (rank)
        idx->rank = rank;
    uint8_t *fr = realloc(idx->free, cap * sizeof *fr);
    if (fr)
        idx->free = fr;
    uint64_t *bits = realloc(idx->at_least, PLACEMENT_INDEX_BUCKETS * words * sizeof *bits);
    if (bits)
        idx->at_least = bits;
    if (!order || !rank || !fr || !bits)
        return TIDE_ENOMEM;
    idx->cap = cap;
    idx->words = words;
    return 0;
}

int placement_index_build(struct placement_index *idx, const struct cluster *c,
                          placement_node_order_fn node_order, const struct placement_config *load)
{
    idx->nodes = NULL;
    idx->nnodes = 0;
    idx->memo_on = false;
    idx->nmemo = 0;
    idx->load.on = false;
    if (c->nnodes > UINT32_MAX || grow_arrays(idx, c->nnodes) != 0)
        return TIDE_ENOMEM;
    idx->node_order = node_order;
    for (size_t i = 0; i < c->nnodes; i++)
        idx->order[i] = (uint32_t)i;
    if (node_order) {
        struct rank_ctx rc = {c->nodes, node_order};
        bool sorted = true;
        for (size_t i = 1; i < c->nnodes && sorted; i++)
            sorted = by_rank(&idx->order[i - 1], &idx->order[i], &rc) < 0;
        if (!sorted)
            qsort_r(idx->order, c->nnodes, sizeof *idx->order, by_rank, &rc);
    }
    for (size_t r = 0; r < c->nnodes; r++)
        idx->rank[idx->order[r]] = (uint32_t)r;
    memset(idx->at_least, 0, PLACEMENT_INDEX_BUCKETS * idx->words * sizeof *idx->at_least);
    memset(idx->count, 0, sizeof idx->count);
    memset(idx->free, PLACEMENT_INDEX_NONE, c->nnodes);
    idx->max_free = 0;
    if (load) /* without memory for it loadaware scans: slower, the same */
        (void)placement_load_start(&idx->load, c, load);
    for (size_t i = 0; i < c->nnodes; i++)
        set_free(idx, i, node_free_or_none(idx, &c->nodes[i], i));
    idx->nodes = c->nodes;
    idx->nnodes = c->nnodes;
    return 0;
}

static bool covers(const struct placement_index *idx, const struct cluster *c)
{
    return idx->nodes && idx->nodes == c->nodes && idx->nnodes == c->nnodes;
}

void placement_index_refresh(struct placement_index *idx, const struct cluster *c,
                             const struct node *node)
{
    if (!covers(idx, c) || node < c->nodes || node >= c->nodes + c->nnodes)
        return;
    size_t pos = (size_t)(node - c->nodes);
    set_free(idx, pos, node_free_or_none(idx, node, pos));
    idx->changes++;
}

struct placement_load *placement_index_load(const struct cluster *c,
                                            const struct placement_config *cfg)
{
    struct placement_index *idx = c->index;
    if (!idx || !covers(idx, c) || !placement_load_usable(&idx->load, cfg))
        return NULL;
    return &idx->load;
}

const struct placement_index *placement_index_for(const struct cluster *c,
                                                  placement_node_order_fn node_order)
{
    const struct placement_index *idx = c->index;
    if (!idx || !covers(idx, c) || idx->node_order != node_order)
        return NULL;
    return idx;
}

const struct placement_index *placement_index_current(const struct cluster *c)
{
    const struct placement_index *idx = c->index;
    return idx && covers(idx, c) ? idx : NULL;
}

int placement_index_nodes_with_free(const struct cluster *c, int k)
{
    const struct placement_index *idx = c->index;
    if (!idx || !covers(idx, c))
        return -1;
    if (k > TIDE_MAX_GPUS_PER_NODE)
        return 0;
    size_t n = 0; /* at most TIDE_MAX_GPUS_PER_NODE + 1 buckets */
    for (int f = k > 0 ? k : 0; f <= idx->max_free; f++)
        n += idx->count[f];
    return (int)n;
}

int placement_index_free_gpus(const struct cluster *c)
{
    const struct placement_index *idx = c->index;
    if (!idx || !covers(idx, c))
        return -1;
    long n = 0;
    for (int f = 1; f <= idx->max_free; f++)
        n += (long)f * (long)idx->count[f];
    return n > INT32_MAX ? INT32_MAX : (int)n;
}

void placement_index_memo_start(struct placement_index *idx)
{
    idx->memo_on = true;
    idx->nmemo = 0;
}

void placement_index_memo_stop(struct placement_index *idx)
{
    idx->memo_on = false;
    idx->nmemo = 0;
}

static struct placement_index *memo_of(const struct cluster *c)
{
    struct placement_index *idx = c->index;
    return idx && idx->memo_on && covers(idx, c) ? idx : NULL;
}

static bool same_shape(const struct placement_shape *s, const struct job *job)
{
    return s->gpus == job->gpus && s->cpus == job->cpus && s->memory_mib == job->memory_mib &&
           s->gpu_memory_mib == job->gpu_memory_mib && s->rules == job->rules &&
           s->preemptible == job->preemptible && !strcmp(s->gpu_model, job->gpu_model);
}

int placement_index_memo_find(const struct cluster *c, const struct job *job)
{
    const struct placement_index *idx = memo_of(c);
    for (int i = 0; idx && i < idx->nmemo; i++)
        if (same_shape(&idx->memo[i], job))
            return idx->memo[i].ever;
    return -1;
}

void placement_index_memo_put(const struct cluster *c, const struct job *job, bool ever)
{
    struct placement_index *idx = memo_of(c);
    if (!idx || idx->nmemo >= PLACEMENT_SHAPE_MEMO)
        return;
    struct placement_shape *s = &idx->memo[idx->nmemo++];
    s->gpus = job->gpus;
    s->cpus = job->cpus;
    s->memory_mib = job->memory_mib;
    s->gpu_memory_mib = job->gpu_memory_mib;
    s->rules = job->rules;
    s->preemptible = job->preemptible;
    memcpy(s->gpu_model, job->gpu_model, sizeof s->gpu_model);
    s->ever = ever;
    s->why_known = false;
}

static struct placement_shape *memo_entry(const struct cluster *c, const struct job *job)
{
    struct placement_index *idx = memo_of(c);
    for (int i = 0; idx && i < idx->nmemo; i++)
        if (same_shape(&idx->memo[i], job))
            return &idx->memo[i];
    return NULL;
}

bool placement_index_memo_find_why(const struct cluster *c, const struct job *job, int *most_free,
                                   int *busy)
{
    const struct placement_shape *s = memo_entry(c, job);
    if (!s || !s->why_known || s->why_at != c->index->changes)
        return false;
    *most_free = s->most_free;
    *busy = s->most_free_busy;
    return true;
}

void placement_index_memo_put_why(const struct cluster *c, const struct job *job, int most_free,
                                  int busy)
{
    struct placement_shape *s = memo_entry(c, job);
    if (!s)
        return;
    s->why_known = true;
    s->why_at = c->index->changes;
    s->most_free = most_free;
    s->most_free_busy = busy;
}

long placement_index_next(const struct placement_index *idx, int f, bool exact, size_t from)
{
    if (f < 0 || f > TIDE_MAX_GPUS_PER_NODE || from >= idx->nnodes)
        return -1;
    const uint64_t *at = bitmap(idx, f), *above = bitmap(idx, f + 1);
    uint64_t mask = ~(uint64_t)0 << (from % 64);
    size_t words = (idx->nnodes + 63) / 64;
    for (size_t w = from / 64; w < words; w++, mask = ~(uint64_t)0) {
        uint64_t bits = at[w] & mask;
        if (exact)
            bits &= ~above[w];
        if (bits)
            return (long)(w * 64 + (size_t)__builtin_ctzll(bits));
    }
    return -1;
}
