/* The autoscaler's pure decisions (see autoscaler.h). */
#include "core/autoscaler.h"
#include "core/array.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"
#include "common/utf8.h"
#include "core/gang.h"
#include "core/gpu_share.h"
#include "core/order_keep.h"
#include "core/placement_index.h"

#include "core/queue.h"

#include "core/core_banned.h"

/* Free GPUs of one node, existing or to be created, while packing jobs. */
struct scale_bin {
    int pool;           /* -1 for a node joined by hand */
    struct node *node; /* NULL for a node to be created */
    int free_gpus;
    bool draining; /* a draining node: used only when nothing else fits */
};

const char *pool_action_type_name(enum pool_action_type t)
{
    switch (t) {
    case POOL_CREATE: return "create";
    case POOL_DRAIN: return "drain";
    case POOL_RELEASE: return "release";
    case POOL_FAIL: return "fail";
    case POOL_UNDRAIN: return "undrain";
    }
    return "unknown";
}

void pool_action_list_init(struct pool_action_list *l)
{
    memset(l, 0, sizeof *l);
}

void pool_action_list_release(struct pool_action_list *l)
{
    if (!l)
        return;
    free(l->items);
    memset(l, 0, sizeof *l);
}

void pool_action_list_clear(struct pool_action_list *l)
{
    l->len = 0;
}

struct pool_action *pool_action_list_push(struct pool_action_list *l, const struct pool_action *a)
{
    if (array_reserve((void **)&l->items, &l->cap, l->len + 1, sizeof *l->items) != 0)
        return NULL;
    l->items[l->len] = *a;
    return &l->items[l->len++];
}

void autoscaler_init(struct autoscaler *a, const struct pool *pools, int npools)
{
    memset(a, 0, sizeof *a);
    a->pools = pools;
    a->npools = npools < TIDE_MAX_POOLS ? npools : TIDE_MAX_POOLS;
    for (int p = 0; p < a->npools; p++)
        forecast_init(&a->state[p].forecast,
                      pools[p].forecast_alpha_pct ? pools[p].forecast_alpha_pct / 100.0 : 0.5);
}

/* Predictive pools: records the GPUs wanted now (held on the pool's nodes
 * plus waiting jobs that fit it) and sets how many nodes the forecast wants
 * ready by the time a node started now would have booted. */
static void update_forecasts(struct autoscaler *a, const struct cluster *c, int64_t now_ms)
{
    for (int p = 0; p < a->npools; p++) {
        const struct pool *pool = &a->pools[p];
        struct pool_scale_state *st = &a->state[p];
        st->predicted_nodes = 0;
        if (!pool->predictive || pool->gpus_per_node <= 0)
            continue;
        double wanted = 0;
        for (size_t i = 0; i < c->nnodes; i++)
            if (!strcmp(c->nodes[i].pool, pool->name))
                for (int g = 0; g < c->nodes[i].ngpus; g++)
                    wanted += gpu_in_use(&c->nodes[i].gpus[g]);
        for (size_t j = 0; j < c->njobs; j++)
            if (c->jobs[j].state == JOB_PENDING && pool_fits_job(pool, &c->jobs[j]))
                wanted += c->jobs[j].gpus;
        forecast_observe(&st->forecast, now_ms, wanted);
        double ahead = forecast_predict(&st->forecast, now_ms + pool_boot_estimate_s(pool) * 1000);
        int nodes = (int)((ahead + pool->gpus_per_node - 1e-9) / pool->gpus_per_node);
        st->predicted_nodes = nodes < pool->max_nodes ? nodes : pool->max_nodes;
    }
}

/* The nodes a pool keeps up now: min_nodes, raised by open windows and by
 * the forecast. */
static int wanted_min_nodes(const struct autoscaler *a, int p, int64_t now_ms)
{
    int min = pool_min_nodes_at(&a->pools[p], now_ms);
    return a->state[p].predicted_nodes > min ? a->state[p].predicted_nodes : min;
}

void autoscaler_release(struct autoscaler *a)
{
    if (!a)
        return;
    free(a->jobs);
    free(a->bins);
    free(a->walk);
    a->walk = NULL;
    a->walk_cap = 0;
    free(a->pool_of);
    a->pool_of = NULL;
    a->pool_of_cap = a->pool_of_n = 0;
    order_keep_release(&a->kept);
    a->jobs = NULL;
    a->bins = NULL;
    a->jobs_cap = a->bins_cap = 0;
}

void autoscaler_count_nodes(const struct cluster *c, const struct pool *pool,
                            int counts[NODE_STATE_COUNT])
{
    memset(counts, 0, sizeof(int) * NODE_STATE_COUNT);
    for (size_t i = 0; i < c->nnodes; i++)
        if (!strcmp(c->nodes[i].pool, pool->name))
            counts[c->nodes[i].state]++;
}

static int node_pool(const struct autoscaler *a, const struct node *n)
{
    if (a->pool_of && n >= a->pool_of_nodes && n < a->pool_of_nodes + a->pool_of_n)
        return a->pool_of[n - a->pool_of_nodes];
    return n->pool[0] ? pool_find(a->pools, a->npools, n->pool) : -1;
}

/* node_pool of a node released or failed before the call: nothing in a
 * call looks at such a node, so the walks skip it without reading it
 * (released nodes stay in the cluster's array). */
#define GONE (-2)

/* Each node's pool, looked up once per call (node_pool reads it). */
static int note_node_pools(struct autoscaler *a, const struct cluster *c)
{
    a->pool_of_n = 0;
    if (c->nnodes > a->pool_of_cap) {
        int *grown = realloc(a->pool_of, c->nnodes * sizeof *grown);
        if (!grown)
            return TIDE_ENOMEM;
        a->pool_of = grown;
        a->pool_of_cap = c->nnodes;
    }
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct node *n = &c->nodes[i];
        bool gone = n->state == NODE_RELEASED || n->state == NODE_FAILED;
        a->pool_of[i] = gone                   ? GONE
                        : i < a->nnode_pools   ? a->node_pools[i]
                        : n->pool[0]           ? pool_find(a->pools, a->npools, n->pool)
                                               : -1;
    }
    a->pool_of_nodes = c->nodes;
    a->pool_of_n = c->nnodes;
    return 0;
}

/* A condition that depends on time turns at t: a call before then on the
 * same cluster decides the same (see quiet_until_ms). */
static void turns_at(struct autoscaler *a, int64_t now_ms, int64_t t)
{
    if (t > now_ms && t < a->quiet_until_ms)
        a->quiet_until_ms = t;
}

static bool node_has_tasks(struct cluster *c, const struct node *n)
{
    if (n->cpus_allocated > 0 || n->memory_allocated_mib > 0)
        return true;
    for (int g = 0; g < n->ngpus; g++)
        if (gpu_in_use(&n->gpus[g]))
            return true;
    /* a job that asked for none of these still runs there */
    int64_t one;
    return cluster_node_job_ids(c, n->id, &one, 1) > 0;
}

static int node_utilization_pct(const struct node *n)
{
    if (n->ngpus == 0)
        return 0;
    int sum = 0;
    for (int g = 0; g < n->ngpus; g++)
        sum += n->gpus[g].utilization_pct;
    return sum / n->ngpus;
}

static int push(struct pool_action_list *out, enum pool_action_type type, int pool, int count,
                int64_t node_id, const char *reason)
{
    struct pool_action act = {.type = type, .pool = pool, .count = count, .node_id = node_id};
    snprintf(act.reason, sizeof act.reason, "%s", reason);
    return pool_action_list_push(out, &act) ? 0 : TIDE_ENOMEM;
}

/* Nodes that exist or are coming and count against max_nodes. */
static int pool_alive(const int counts[NODE_STATE_COUNT])
{
    return counts[NODE_PROVISIONING] + counts[NODE_READY] + counts[NODE_DRAINING] +
           counts[NODE_STOPPING] + counts[NODE_LOST];
}

/* Boot timeouts and long-lost nodes become failed. */
static int fail_stuck_nodes(struct autoscaler *a, struct cluster *c, int64_t now_ms,
                            struct pool_action_list *out)
{
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node *n = &c->nodes[i];
        int p = node_pool(a, n);
        if (p < 0)
            continue;
        int64_t limit_ms = a->pools[p].boot_timeout_s * 1000;
        char why[TIDE_REASON_MAX];
        /* (The state first: a ready node's health fields are not read.) */
        if (n->state == NODE_PROVISIONING)
            turns_at(a, now_ms, n->created_ms + limit_ms + 1);
        else if (n->state == NODE_LOST)
            turns_at(a, now_ms, n->last_heartbeat_ms + limit_ms + 1);
        else if (n->state == NODE_DRAINING && n->probe_drained)
            turns_at(a, now_ms, n->probe_drained_ms + limit_ms + 1);
        if (n->state == NODE_READY)
            continue; /* none of the below */
        if (n->state == NODE_PROVISIONING && now_ms - n->created_ms > limit_ms)
            snprintf(why, sizeof why, "did not register within boot_timeout %llds",
                     (long long)a->pools[p].boot_timeout_s);
        else if (n->state == NODE_LOST && !node_has_tasks(c, n) &&
                 now_ms - n->last_heartbeat_ms > limit_ms)
            snprintf(why, sizeof why, "lost for over %llds", (long long)a->pools[p].boot_timeout_s);
        else if (n->health_failed && (n->state == NODE_DRAINING || n->state == NODE_LOST) &&
                 !node_has_tasks(c, n)) /* gpu_health.h: repeated faults */
            snprintf(why, sizeof why, "%s", n->drain_reason);
        else if (n->probe_drained && n->state == NODE_DRAINING && !node_has_tasks(c, n) &&
                 now_ms - n->probe_drained_ms > limit_ms) /* gpu_health.h: its probe */
        {
            char cause[101];
            utf8_copy(cause, sizeof cause, n->drain_reason); /* its probe's words */
            snprintf(why, sizeof why, "%s for over %llds", cause,
                     (long long)a->pools[p].boot_timeout_s);
        } else
            continue;
        n->state = NODE_FAILED;
        n->ended_ms = now_ms;
        if (push(out, POOL_FAIL, p, 1, n->id, why))
            return TIDE_ENOMEM;
    }
    return 0;
}

static int grow_scratch(struct autoscaler *a, size_t njobs, size_t nbins)
{
    if (njobs > a->jobs_cap) {
        struct job **j = realloc(a->jobs, njobs * sizeof *j);
        if (!j)
            return TIDE_ENOMEM;
        a->jobs = j;
        a->jobs_cap = njobs;
    }
    if (nbins > a->bins_cap) {
        struct scale_bin *b = realloc(a->bins, nbins * sizeof *b);
        if (!b)
            return TIDE_ENOMEM;
        a->bins = b;
        a->bins_cap = nbins;
    }
    return 0;
}

static int by_size_then_age(const void *x, const void *y, void *ctx)
{
    (void)ctx;
    const struct job *a = *(struct job *const *)x, *b = *(struct job *const *)y;
    if (a->gpus != b->gpus)
        return b->gpus - a->gpus;
    if (a->submit_ms != b->submit_ms)
        return a->submit_ms < b->submit_ms ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Could gpus GPUs of job (all of them, or a gang's share) run on this
 * existing node (ignoring what is free)? */
static bool node_could_take(const struct node *n, const struct job *job, int gpus)
{
    if (gpus > n->ngpus || !queue_allows_node(job, n))
        return false;
    if (gpus == 0 || n->ngpus == 0)
        return true;
    const struct gpu *g = &n->gpus[0];
    if (job->gpu_memory_mib > g->memory_total_mib)
        return false;
    if (job->gpu_model[0]) {
        struct pool shape;
        memset(&shape, 0, sizeof shape);
        snprintf(shape.gpu_model, sizeof shape.gpu_model, "%s", g->name);
        shape.gpus_per_node = n->ngpus;
        shape.gpu_memory_mib = g->memory_total_mib;
        return pool_fits_share(&shape, job, gpus);
    }
    return true;
}

/* Whether the spot rule lets job on pool's nodes. */
static bool spot_allows(const struct pool *pool, const struct job *job)
{
    return pool->billing != BILLING_SPOT || queue_job_may_use_spot(job);
}

/* Whether pool's nodes may hold gpus GPUs of job (shape, spot, the
 * queue's pools). */
static bool pool_may_hold(const struct pool *pool, const struct job *job, int gpus)
{
    return spot_allows(pool, job) && pool_fits_share(pool, job, gpus) &&
           queue_allows_pool(job->rules, pool->name);
}

/* The pool `count` new nodes for gpus GPUs each of job should come from:
 * cheapest per GPU-hour, then fastest to boot, among those whose nodes fit
 * that and that have room for count more under max_nodes; -1 if none.
 * With count 0, room is not asked for (the cheapest pool that fits at all). */
static int cheapest_pool_for(const struct autoscaler *a, const struct job *job, int gpus,
                             const int *alive, int count, int64_t now_ms)
{
    int best = -1;
    for (int p = 0; p < a->npools; p++) {
        const struct pool *pool = &a->pools[p];
        if (!pool_may_hold(pool, job, gpus) || (count > 0 && alive[p] + count > pool->max_nodes) ||
            now_ms < a->state[p].create_not_before_ms)
            continue;
        if (best < 0)
            best = p;
        else {
            int64_t pp = pool_price_per_gpu_hour_micros(pool);
            int64_t bp = pool_price_per_gpu_hour_micros(&a->pools[best]);
            if (pp < bp ||
                (pp == bp && pool_boot_estimate_s(pool) < pool_boot_estimate_s(&a->pools[best])))
                best = p;
        }
    }
    return best;
}

/* A node joined by hand costs the autoscaler nothing. */
static int64_t bin_price(const struct autoscaler *a, const struct scale_bin *bin)
{
    return bin->pool >= 0 ? pool_price_per_gpu_hour_micros(&a->pools[bin->pool]) : 0;
}

/* Counts a job that waits for pool p's nodes, for the steps. */
static void note_waiting(int *waiting, int64_t *oldest_ms, int p, int64_t waited_ms)
{
    waiting[p]++;
    if (waited_ms > oldest_ms[p])
        oldest_ms[p] = waited_ms;
}

/* The most nodes a triggered step of pool asks for (0: none). */
static int step_nodes(const struct pool *pool, int waiting, int64_t oldest_wait_ms)
{
    int add = 0;
    for (int i = 0; i < pool->nsteps; i++) {
        const struct pool_step *s = &pool->steps[i];
        bool hit = (s->queue_length > 0 && waiting >= s->queue_length) ||
                   (s->wait_s > 0 && waiting > 0 && oldest_wait_ms >= s->wait_s * 1000);
        if (hit && s->add > add)
            add = s->add;
    }
    return add;
}

/* A draining node that a waiting job fits is made ready again. */
static int undrain(struct autoscaler *a, struct scale_bin *bin, const struct job *job,
                   int64_t now_ms, struct pool_action_list *out)
{
    struct node *n = bin->node;
    bin->draining = false;
    n->state = NODE_READY;
    n->idle_since_ms = 0;
    a->state[bin->pool].last_scale_up_ms = now_ms; /* no re-drain within the cooldown */
    char why[TIDE_REASON_MAX];
    snprintf(why, sizeof why, "job %lld (%d GPU%s) fits it", (long long)job->id, job->gpus,
             job->gpus == 1 ? "" : "s");
    return push(out, POOL_UNDRAIN, bin->pool, 1, n->id, why);
}

/* A job that got no nodes: a gang for want of room under max_nodes, or
 * (spot) a job the pool's nodes would fit but that may not run on spot. */
struct held_back {
    int64_t job_id; /* 0: none */
    int need, m, share, room;
    bool spot;
    int gpus;
};

/* What one scale-up call has decided so far, per pool. */
/* What a capped queue runs, plus the jobs this call found nodes for: a
 * job its queue's cap holds back gets none (it would leave them idle, to
 * be released and asked for again). */
struct queue_room {
    const struct queue_config *rules;
    int jobs, gpus;
};

struct scale_up {
    struct queue_room rooms[TIDE_MAX_QUEUES]; /* the capped queues met so far */
    int nrooms;
    struct held_back held[TIDE_MAX_POOLS]; /* the last gang job held back */
    int alive[TIDE_MAX_POOLS];    /* nodes that exist, are coming or will be created */
    int create[TIDE_MAX_POOLS];   /* nodes to create for waiting jobs */
    int waited[TIDE_MAX_POOLS];   /* longest wait (s) of a job new nodes are for */
    int unplaced[TIDE_MAX_POOLS]; /* jobs waiting for booting or new nodes (steps) */
    int64_t oldest_ms[TIDE_MAX_POOLS];
    size_t nbins;
    /* No bin that is not draining [0] / draining [1] has more free GPUs
     * (a bound: bins only lose room once added). */
    int max_free[2];
    int *live; /* ready or provisioning nodes per pool, for scale_down */
};

/* Appends a bin. */
static void add_bin(struct autoscaler *a, struct scale_up *u, struct scale_bin bin)
{
    a->bins[u->nbins++] = bin;
    if (bin.free_gpus > u->max_free[bin.draining])
        u->max_free[bin.draining] = bin.free_gpus;
}

/* The cheapest bin with room for gpus GPUs of job (all of them, or a
 * gang's share; a draining bin only when nothing else has room), other
 * than the ntaken in taken; -1 if none. */
static int best_bin(const struct autoscaler *a, const struct scale_up *u, const struct job *job,
                    int gpus, const int *taken, int ntaken)
{
    int best = -1;
    for (int draining = 0; draining < 2 && best < 0; draining++)
        for (size_t b = 0; b < u->nbins && gpus <= u->max_free[draining]; b++) {
            const struct scale_bin *bin = &a->bins[b];
            /* A node still to come is judged by its pool as placement
             * will judge the node: shape, spot, the queue's pools. */
            bool fits = bin->draining == draining && bin->free_gpus >= gpus &&
                        (bin->node ? node_could_take(bin->node, job, gpus)
                                   : pool_may_hold(&a->pools[bin->pool], job, gpus));
            for (int t = 0; fits && t < ntaken; t++)
                fits = taken[t] != (int)b;
            if (!fits)
                continue;
            if (best < 0 || bin_price(a, bin) < bin_price(a, &a->bins[best]))
                best = (int)b;
        }
    return best;
}

/* Takes gpus of a bin for job: it waits for the node when the node is still
 * to come, and a draining node is made ready again. */
static int take_bin(struct autoscaler *a, struct scale_up *u, int b, const struct job *job,
                    int gpus, int64_t now_ms, struct pool_action_list *out)
{
    struct scale_bin *bin = &a->bins[b];
    bin->free_gpus -= gpus;
    if (!bin->node)
        note_waiting(u->unplaced, u->oldest_ms, bin->pool, now_ms - job->submit_ms);
    if (!bin->draining)
        return 0;
    if (bin->free_gpus > u->max_free[0]) /* ready again: among the bins that are not draining */
        u->max_free[0] = bin->free_gpus;
    u->live[bin->pool]++;
    return undrain(a, bin, job, now_ms, out);
}

/* count new nodes of pool p for job, each with gpus of it taken. */
static void add_new_nodes(struct autoscaler *a, struct scale_up *u, int p, int count, int gpus,
                          const struct job *job, int64_t now_ms)
{
    for (int k = 0; k < count; k++)
        add_bin(a, u, (struct scale_bin){p, NULL, a->pools[p].gpus_per_node - gpus, false});
    u->alive[p] += count;
    u->create[p] += count;
    int waited_s = (int)((now_ms - job->submit_ms) / 1000);
    if (waited_s > u->waited[p])
        u->waited[p] = waited_s;
}

static bool pool_could_hold(const struct pool *pool, const struct job *job);

/* A job that found no room and no pool: when a spot pool's nodes would
 * hold it (the queue allowing that pool) and only the spot rule keeps it
 * off them, that pool's held_back says so (the first such job). */
static void note_spot_refused(const struct autoscaler *a, struct scale_up *u,
                              const struct job *job)
{
    if (queue_job_may_use_spot(job))
        return;
    for (int p = 0; p < a->npools; p++) {
        const struct pool *pool = &a->pools[p];
        if (pool->billing != BILLING_SPOT || pool->max_nodes <= 0 || u->held[p].job_id ||
            !queue_allows_pool(job->rules, pool->name) || !pool_could_hold(pool, job))
            continue;
        u->held[p] = (struct held_back){.job_id = job->id, .spot = true, .gpus = job->gpus};
    }
}

/* A gang job (nodes: k) that no one node can hold, split as gang_choose
 * will split it: the fewest nodes m (2..k, dividing its GPUs) that nodes
 * with room, and then new nodes of one pool under its max_nodes, can give
 * a share each. When no split can be had, nothing is created for it,
 * *nothing is set, and the cheapest pool whose nodes fit a share says why
 * (held_back: the first such job of the call). */
static int scale_for_gang(struct autoscaler *a, struct scale_up *u, const struct job *job,
                          int64_t now_ms, struct pool_action_list *out, bool *nothing)
{
    int short_pool = -1, short_m = 0, short_need = 0, short_share = 0;
    for (int m = gang_next_split(job, 1); m; m = gang_next_split(job, m)) {
        int share = job->gpus / m;
        int taken[TIDE_MAX_GANG_NODES], ntaken = 0;
        while (ntaken < m) {
            int b = best_bin(a, u, job, share, taken, ntaken);
            if (b < 0)
                break;
            taken[ntaken++] = b;
        }
        int need = m - ntaken, p = -1;
        if (need > 0 && (p = cheapest_pool_for(a, job, share, u->alive, need, now_ms)) < 0) {
            int fits = cheapest_pool_for(a, job, share, u->alive, 0, now_ms);
            if (fits >= 0 && short_pool < 0)
                short_pool = fits, short_m = m, short_need = need, short_share = share;
            continue;
        }
        if (p >= 0) {
            note_waiting(u->unplaced, u->oldest_ms, p, now_ms - job->submit_ms);
            if (now_ms - job->submit_ms < a->pools[p].scale_up_delay_s * 1000) {
                turns_at(a, now_ms, job->submit_ms + a->pools[p].scale_up_delay_s * 1000);
                return 0; /* not yet: nothing is taken for it */
            }
        }
        for (int t = 0; t < ntaken; t++) {
            int rc = take_bin(a, u, taken[t], job, share, now_ms, out);
            if (rc)
                return rc;
        }
        if (p >= 0)
            add_new_nodes(a, u, p, need, share, job, now_ms);
        return 0;
    }
    *nothing = true;
    if (short_pool < 0)
        note_spot_refused(a, u, job);
    if (short_pool >= 0 && !u->held[short_pool].job_id) {
        int room = a->pools[short_pool].max_nodes - u->alive[short_pool];
        u->held[short_pool] = (struct held_back){.job_id = job->id, .need = short_need,
                                                 .m = short_m, .share = short_share,
                                                 .room = room > 0 ? room : 0};
    }
    return 0;
}

/* The jobs of queue `rules` on nodes now (a gang counted once, on its
 * first node): O(the cluster's running jobs), once per capped queue. */
static struct queue_room count_queue(struct cluster *c, const struct queue_config *rules)
{
    struct queue_room r = {.rules = rules};
    for (size_t i = 0; i < c->nnodes; i++) {
        struct cluster_node_ids ids;
        cluster_node_ids_fill(c, c->nodes[i].id, &ids);
        for (size_t k = 0; k < ids.n; k++) {
            const struct job *job = cluster_find_job(c, ids.ids[k]);
            if (job && job->rules == rules && job->node_id == c->nodes[i].id &&
                job_state_is_on_node(job->state)) {
                r.jobs++;
                r.gpus += job->gpus;
            }
        }
        cluster_node_ids_release(&ids);
    }
    return r;
}

/* Takes job's place under its queue's caps; false when they hold it back. */
static bool queue_room_take(struct scale_up *u, struct cluster *c, const struct job *job)
{
    const struct queue_config *q = job->rules;
    if (!q || (q->max_running_jobs <= 0 && q->max_running_gpus <= 0))
        return true;
    int i = 0;
    while (i < u->nrooms && u->rooms[i].rules != q)
        i++;
    if (i == u->nrooms) {
        if (u->nrooms == TIDE_MAX_QUEUES)
            return true;
        u->rooms[u->nrooms++] = count_queue(c, q);
    }
    struct queue_room *r = &u->rooms[i];
    if ((q->max_running_jobs > 0 && r->jobs >= q->max_running_jobs) ||
        (q->max_running_gpus > 0 && r->gpus + job->gpus > q->max_running_gpus))
        return false;
    r->jobs++;
    r->gpus += job->gpus;
    return true;
}

/* Gives back what queue_room_take took for a job that got nothing. */
static void queue_room_give_back(struct scale_up *u, const struct job *job)
{
    for (int i = 0; i < u->nrooms; i++)
        if (u->rooms[i].rules == job->rules) {
            u->rooms[i].jobs--;
            u->rooms[i].gpus -= job->gpus;
        }
}

/* Finds job room on an existing or coming node, or new nodes for it;
 * *nothing is set when it found no room and no pool (a gang job: for no
 * split either). */
static int scale_for_job(struct autoscaler *a, struct scale_up *u, const struct job *job,
                         int64_t now_ms, struct pool_action_list *out, bool *nothing)
{
    *nothing = false;
    int best = best_bin(a, u, job, job->gpus, NULL, 0);
    if (best >= 0)
        return take_bin(a, u, best, job, job->gpus, now_ms, out);
    int p = cheapest_pool_for(a, job, job->gpus, u->alive, 1, now_ms);
    *nothing = p < 0 && job->max_nodes <= 1;
    if (p < 0 && job->max_nodes > 1)
        return scale_for_gang(a, u, job, now_ms, out, nothing);
    if (p >= 0)
        note_waiting(u->unplaced, u->oldest_ms, p, now_ms - job->submit_ms);
    if (p < 0) {
        note_spot_refused(a, u, job);
        return 0;
    }
    if (now_ms - job->submit_ms < a->pools[p].scale_up_delay_s * 1000) {
        turns_at(a, now_ms, job->submit_ms + a->pools[p].scale_up_delay_s * 1000);
        return 0;
    }
    add_new_nodes(a, u, p, 1, job->gpus, job, now_ms);
    return 0;
}

/* Whether job could run on pool's nodes: on one, or for a gang job in
 * equal shares on several. */
static bool pool_could_hold(const struct pool *pool, const struct job *job)
{
    if (pool_fits_job(pool, job))
        return true;
    for (int m = gang_next_split(job, 1); m && m <= pool->max_nodes; m = gang_next_split(job, m))
        if (pool_fits_share(pool, job, job->gpus / m))
            return true;
    return false;
}

/* Whether job waits for pool: its nodes could hold it, and the spot rule
 * and its queue let it on them (pending_jobs counts these: a job that
 * may not run on a spot pool keeps none of its nodes busy). Reads no
 * more than demand_same_shape compares. */
static bool pool_awaited_by(const struct pool *pool, const struct job *job)
{
    return spot_allows(pool, job) && queue_allows_pool(job->rules, pool->name) &&
           pool_could_hold(pool, job);
}

/* Job shapes that found no room and no pool in this call, since bins
 * last grew: bins only lose room and pools only fill until then, so one
 * more job of such a shape would find none either (a deep queue at
 * max_nodes is answered per shape, not per job and bin). */
#define HOPELESS_SHAPES 8

struct hopeless {
    int n;
    const struct job *shapes[HOPELESS_SHAPES];
};

static bool same_scale_shape(const struct job *a, const struct job *b)
{
    return a->gpus == b->gpus && a->gpu_memory_mib == b->gpu_memory_mib &&
           a->preemptible == b->preemptible && a->rules == b->rules &&
           !strcmp(a->gpu_model, b->gpu_model);
}

static bool known_hopeless(const struct hopeless *h, const struct job *job)
{
    for (int i = 0; i < h->n; i++)
        if (same_scale_shape(h->shapes[i], job))
            return true;
    return false;
}

static int scale_steps(struct autoscaler *a, struct scale_up *up, const int *booting,
                       int64_t now_ms, struct pool_action_list *out);

/* One shape's place in the walk below. */
struct shape_walk {
    const struct demand_shape *s;
    size_t at; /* its next slot */
    bool parked; /* found nothing: left out until new nodes' room comes */
};

/* The jobs of a->demand in the order the scan below sorts them (most GPUs
 * first, then oldest), each shape left out from its first job that found
 * no room and no pool until new nodes' room comes, which the scan's
 * hopeless shapes do too (without their limit of 8, and gangs too: bins
 * only lose room and pools only fill until then, so a job of such a shape
 * would find nothing and change nothing; held_back names the first). A
 * deep queue at max_nodes costs a few jobs per shape, not a sort of all. */
static int scale_up_by_shape(struct autoscaler *a, struct cluster *c, struct scale_up *u,
                             int64_t now_ms, struct pool_action_list *out)
{
    const struct demand *d = a->demand;
    if (d->nshapes > a->walk_cap) {
        struct shape_walk *w = realloc(a->walk, (size_t)d->nshapes * sizeof *w);
        if (!w)
            return TIDE_ENOMEM;
        a->walk = w;
        a->walk_cap = d->nshapes;
    }
    int m = 0;
    for (int i = 0; i < d->nshapes; i++) {
        const struct demand_shape *s = &d->shapes[i];
        if (!s->live)
            continue;
        for (int p = 0; p < a->npools; p++)
            a->state[p].pending_jobs += pool_awaited_by(&a->pools[p], &s->key) ? (int)s->live : 0;
        int at = m++;
        while (at > 0 && a->walk[at - 1].s->key.gpus < s->key.gpus) { /* most GPUs first */
            a->walk[at] = a->walk[at - 1];
            at--;
        }
        a->walk[at] = (struct shape_walk){.s = s, .at = demand_next(s, 0, 0, 0)};
    }
    for (int g = 0, end; g < m; g = end) {
        for (end = g; end < m && a->walk[end].s->key.gpus == a->walk[g].s->key.gpus; end++)
            ;
        for (;;) { /* the oldest next job among the group's shapes */
            struct shape_walk *best = NULL;
            for (int k = g; k < end; k++) {
                struct shape_walk *w = &a->walk[k];
                if (w->parked || w->at >= w->s->n)
                    continue;
                const struct demand_slot *x = &w->s->slots[w->at];
                if (!best || x->submit_ms < best->s->slots[best->at].submit_ms ||
                    (x->submit_ms == best->s->slots[best->at].submit_ms &&
                     x->id < best->s->slots[best->at].id))
                    best = w;
            }
            if (!best)
                break;
            struct demand_slot slot = best->s->slots[best->at];
            best->at = demand_next(best->s, best->at + 1, 0, 0);
            const struct job *job = cluster_find_job(c, slot.id);
            if (!job || job->state != JOB_PENDING)
                continue; /* the caller's list is behind: not waiting */
            if (!queue_room_take(u, c, job)) {
                best->parked = true; /* a shape is one queue's: its cap holds the rest */
                continue;
            }
            size_t nbins = u->nbins;
            bool nothing;
            int rc = scale_for_job(a, u, job, now_ms, out, &nothing);
            if (rc)
                return rc;
            if (nothing)
                queue_room_give_back(u, job);
            if (u->nbins != nbins) { /* new nodes' room: shapes may fit again */
                for (int k = g; k < end; k++)
                    if (a->walk[k].parked) {
                        a->walk[k].parked = false;
                        a->walk[k].at =
                            demand_next(a->walk[k].s, a->walk[k].at, slot.submit_ms, slot.id);
                    }
            } else if (nothing)
                best->parked = true;
        }
    }
    return 0;
}

/* Also sets live: each pool's nodes ready or provisioning once it is done
 * (draining ones it made ready again included). */
static int scale_up(struct autoscaler *a, struct cluster *c, int *live, int64_t now_ms,
                    struct pool_action_list *out)
{
    struct scale_up u;
    memset(&u, 0, sizeof u);
    u.live = live;
    size_t max_new = 0;
    int booting[TIDE_MAX_POOLS] = {0};
    int counts[TIDE_MAX_POOLS][NODE_STATE_COUNT];
    memset(counts, 0, sizeof counts);
    for (int p = 0; p < a->npools; p++) {
        a->state[p].pending_jobs = 0;
        a->state[p].nodes_wanted = 0;
        a->state[p].held_back[0] = '\0';
        max_new += (size_t)(a->pools[p].max_nodes > 0 ? a->pools[p].max_nodes : 0);
    }
    if (grow_scratch(a, c->njobs + 1, c->nnodes + max_new + 1))
        return TIDE_ENOMEM;

    /* Each pool's nodes by state, and bins: free GPUs of ready nodes and
     * whole booting nodes. A ready node's free GPUs are read from the
     * cluster's placement index when one is attached and current (the
     * simulator keeps one between passes): the same count, without a
     * walk of every GPU. */
    const struct placement_index *idx = placement_index_current(c);
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node *n = &c->nodes[i];
        int p = node_pool(a, n);
        if (p == GONE)
            continue;
        if (p >= 0)
            counts[p][n->state]++;
        if (n->state == NODE_PROVISIONING && p >= 0) {
            add_bin(a, &u, (struct scale_bin){p, NULL, a->pools[p].gpus_per_node, false});
        } else if (n->state == NODE_READY ||
                   (n->state == NODE_DRAINING && p >= 0 && !n->interrupt_deadline_ms && !n->drained)) {
            int free_gpus = n->state == NODE_READY && idx && idx->free[i] != PLACEMENT_INDEX_NONE
                                ? idx->free[i]
                                : placement_node_free_gpus(n);
            add_bin(a, &u, (struct scale_bin){p, n, free_gpus, n->state == NODE_DRAINING});
        }
    }
    for (int p = 0; p < a->npools; p++) {
        u.alive[p] = pool_alive(counts[p]);
        booting[p] = counts[p][NODE_PROVISIONING];
        live[p] = counts[p][NODE_READY] + counts[p][NODE_PROVISIONING];
    }

    /* min_nodes first, so their capacity counts for waiting jobs. */
    for (int p = 0; p < a->npools; p++) {
        int live = u.alive[p] - counts[p][NODE_DRAINING];
        int min_nodes = wanted_min_nodes(a, p, now_ms);
        int need = min_nodes - live;
        if (need <= 0 || now_ms < a->state[p].create_not_before_ms)
            continue;
        if (u.alive[p] + need > a->pools[p].max_nodes)
            need = a->pools[p].max_nodes - u.alive[p];
        for (int k = 0; k < need; k++)
            add_bin(a, &u, (struct scale_bin){p, NULL, a->pools[p].gpus_per_node, false});
        u.alive[p] += need;
        if (need > 0) {
            char why[TIDE_REASON_MAX];
            snprintf(why, sizeof why, "min_nodes %d%s", min_nodes,
                     min_nodes == a->state[p].predicted_nodes && min_nodes > pool_min_nodes_at(&a->pools[p], now_ms)
                         ? " (predicted demand)"
                     : min_nodes > a->pools[p].min_nodes ? " (scheduled window)" : "");
            if (push(out, POOL_CREATE, p, need, 0, why))
                return TIDE_ENOMEM;
            a->state[p].last_scale_up_ms = now_ms;
        }
    }

    if (a->demand) {
        int rc = scale_up_by_shape(a, c, &u, now_ms, out);
        if (rc)
            return rc;
        return scale_steps(a, &u, booting, now_ms, out);
    }
    size_t njobs = 0;
    for (size_t i = 0; i < c->njobs; i++) {
        struct job *j = &c->jobs[i];
        if (j->state == JOB_PENDING && j->not_before_ms > now_ms)
            turns_at(a, now_ms, j->not_before_ms);
        if (j->state == JOB_PENDING && !j->held && !j->on_hold && !j->cancel_requested && j->not_before_ms <= now_ms &&
            !(a->budgets && budget_holds_job(a->budgets, j, NULL)))
            a->jobs[njobs++] = j;
    }
    /* A fixed order (size, age, id): the last call's is still right for
     * the jobs still waiting, so only new ones are sorted. */
    order_keep_sort(&a->kept, c, a->jobs, njobs, by_size_then_age, NULL);

    struct hopeless hopeless = {.n = 0};
    const struct job *held_by = NULL; /* the last job whose pools were asked */
    bool holds[TIDE_MAX_POOLS] = {false};
    for (size_t k = 0; k < njobs; k++) {
        const struct job *job = a->jobs[k];
        if (!held_by || !demand_same_shape(held_by, job)) {
            held_by = job;
            for (int p = 0; p < a->npools; p++)
                holds[p] = pool_awaited_by(&a->pools[p], job);
        }
        for (int p = 0; p < a->npools; p++)
            a->state[p].pending_jobs += holds[p];
        if (job->max_nodes <= 1 && known_hopeless(&hopeless, job))
            continue;
        if (!queue_room_take(&u, c, job))
            continue;
        size_t nbins = u.nbins;
        bool nothing;
        int rc = scale_for_job(a, &u, job, now_ms, out, &nothing);
        if (rc)
            return rc;
        if (nothing)
            queue_room_give_back(&u, job);
        if (u.nbins != nbins)
            hopeless.n = 0; /* new nodes' room: shapes may fit again */
        else if (nothing && job->max_nodes <= 1 && hopeless.n < HOPELESS_SHAPES)
            hopeless.shapes[hopeless.n++] = job;
    }
    return scale_steps(a, &u, booting, now_ms, out);
}

/* Steps, then the creations decided, per pool. */
static int scale_steps(struct autoscaler *a, struct scale_up *up, const int *booting,
                       int64_t now_ms, struct pool_action_list *out)
{
    struct scale_up u = *up;
    for (int p = 0; p < a->npools; p++) {
        const struct held_back *h = &u.held[p];
        if (h->job_id && h->spot)
            snprintf(a->state[p].held_back, sizeof a->state[p].held_back,
                     "job %lld (%d GPU%s) is not preemptible and this pool's nodes are spot "
                     "(its queue would need allow_spot: true)",
                     (long long)h->job_id, h->gpus, h->gpus == 1 ? "" : "s");
        else if (h->job_id)
            snprintf(a->state[p].held_back, sizeof a->state[p].held_back,
                     "gang job %lld needs %d more node%s (%d x %d GPUs), room for %d under "
                     "max_nodes %d",
                     (long long)h->job_id, h->need, h->need == 1 ? "" : "s", h->m, h->share,
                     h->room, a->pools[p].max_nodes);
    }
    for (int p = 0; p < a->npools; p++) {
        /* A step asks for that many nodes on their way: the ones still
         * booting count, or a long queue would add a step every cooldown
         * while its own nodes boot. */
        int step = step_nodes(&a->pools[p], u.unplaced[p], u.oldest_ms[p]);
        int coming = u.create[p] + booting[p];
        for (int i = 0; i < a->pools[p].nsteps && u.unplaced[p] > 0; i++)
            turns_at(a, now_ms, now_ms - u.oldest_ms[p] + a->pools[p].steps[i].wait_s * 1000);
        if (step > coming && a->state[p].last_scale_up_ms)
            turns_at(a, now_ms, a->state[p].last_scale_up_ms + a->pools[p].cooldown_s * 1000);
        bool stepped = false;
        if (step > coming && (!a->state[p].last_scale_up_ms ||
                              now_ms - a->state[p].last_scale_up_ms >= a->pools[p].cooldown_s * 1000)) {
            int room = a->pools[p].max_nodes - u.alive[p];
            int extra = step - coming < room ? step - coming : room;
            if (extra > 0) {
                u.create[p] += extra;
                u.alive[p] += extra;
                stepped = true;
            }
        }
        a->state[p].nodes_wanted = u.create[p];
        if (!u.create[p])
            continue;
        char why[TIDE_REASON_MAX];
        snprintf(why, sizeof why, "%d pending job%s waited up to %ds%s", a->state[p].pending_jobs,
                 a->state[p].pending_jobs == 1 ? "" : "s",
                 u.waited[p] > u.oldest_ms[p] / 1000 ? u.waited[p] : (int)(u.oldest_ms[p] / 1000),
                 stepped ? " (step)" : "");
        if (push(out, POOL_CREATE, p, u.create[p], 0, why))
            return TIDE_ENOMEM;
        a->state[p].last_scale_up_ms = now_ms;
    }
    return 0;
}

/* live: each pool's nodes ready or provisioning now (scale_up's count). */
static int scale_down(struct autoscaler *a, struct cluster *c, int *live, int64_t now_ms,
                      struct pool_action_list *out)
{
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node *n = &c->nodes[i];
        int p = node_pool(a, n);
        if (p < 0)
            continue;
        const struct pool *pool = &a->pools[p];
        if (n->state == NODE_DRAINING && !node_has_tasks(c, n) && !n->probe_drained) {
            n->state = NODE_RELEASED;
            n->ended_ms = now_ms;
            if (push(out, POOL_RELEASE, p, 1, n->id,
                     n->interrupt_deadline_ms ? "spot interruption" : "drained and idle"))
                return TIDE_ENOMEM;
            continue;
        }
        if (n->state != NODE_READY)
            continue;
        bool tasks = node_has_tasks(c, n);
        bool idle = !tasks || (a->state[p].pending_jobs == 0 &&
                               node_utilization_pct(n) < pool->scale_down_utilization_pct);
        if (!idle) {
            n->idle_since_ms = 0;
            continue;
        }
        if (!n->idle_since_ms)
            n->idle_since_ms = now_ms;
        turns_at(a, now_ms, n->idle_since_ms + pool->scale_down_window_s * 1000);
        turns_at(a, now_ms, a->state[p].last_scale_up_ms + pool->cooldown_s * 1000);
        if (now_ms - n->idle_since_ms < pool->scale_down_window_s * 1000 ||
            live[p] <= wanted_min_nodes(a, p, now_ms) ||
            now_ms - a->state[p].last_scale_up_ms < pool->cooldown_s * 1000)
            continue;
        char why[TIDE_REASON_MAX];
        snprintf(why, sizeof why, "%s for %llds (window %llds)",
                 tasks ? "under-utilised" : "idle",
                 (long long)((now_ms - n->idle_since_ms) / 1000),
                 (long long)pool->scale_down_window_s);
        live[p]--;
        a->state[p].last_scale_down_ms = now_ms;
        if (tasks) {
            n->state = NODE_DRAINING;
            if (push(out, POOL_DRAIN, p, 1, n->id, why))
                return TIDE_ENOMEM;
        } else {
            /* Nothing to wait for: drain and release in one pass. */
            n->state = NODE_RELEASED;
            n->ended_ms = now_ms;
            if (push(out, POOL_DRAIN, p, 1, n->id, why) ||
                push(out, POOL_RELEASE, p, 1, n->id, why))
                return TIDE_ENOMEM;
        }
    }
    return 0;
}

int autoscaler_decide(struct autoscaler *a, struct cluster *c, int64_t now_ms,
                      struct pool_action_list *out)
{
    size_t before = out->len;
    int live[TIDE_MAX_POOLS] = {0};
    a->quiet_until_ms = INT64_MAX;
    for (int p = 0; p < a->npools; p++) {
        turns_at(a, now_ms, a->state[p].create_not_before_ms);
        if (a->pools[p].nwindows > 0 || a->pools[p].predictive)
            a->quiet_until_ms = now_ms; /* windows open and forecasts move with time */
    }
    if (a->budgets)
        a->quiet_until_ms = now_ms; /* holds end as spending is metered */
    update_forecasts(a, c, now_ms);
    int rc = note_node_pools(a, c);
    if (!rc)
        rc = fail_stuck_nodes(a, c, now_ms, out);
    if (!rc)
        rc = scale_up(a, c, live, now_ms, out);
    if (!rc)
        rc = scale_down(a, c, live, now_ms, out);
    a->pool_of_n = 0; /* the nodes may move before the next call */
    if (rc || out->len != before)
        a->quiet_until_ms = now_ms; /* what it did changes what the next call sees */
    return rc ? rc : (int)(out->len - before);
}
