/*
 * The autoscaler's decisions, pure: from the cluster, the pools and `now`
 * to a list of pool actions (create k nodes in pool P, drain node N,
 * release node N, fail node N). The shell (server/pool_loop.c) carries
 * them out through providers and persists them.
 *
 *   scale up:   pending jobs that no existing or booting node can take and
 *               that waited scale_up_delay_s get exactly the nodes they need,
 *               first-fit-decreasing bin packing, each job in the cheapest
 *               pool that fits it (price per GPU-hour, then boot time) and
 *               is below max_nodes; min_nodes are kept up from zero. Room
 *               on a node still to come counts for a job only if placement
 *               will let the job on it (spot: preemptible jobs, or a queue
 *               with allow_spot; the queue's pools). A
 *               draining node such a job fits is made ready again first
 *               (cheaper and faster than a new one). A gang job (nodes: k)
 *               that no one node holds gets its equal shares as the
 *               scheduler's gang placement will split it (gang.h): the
 *               fewest nodes m <= k, from nodes with room and then m' new
 *               nodes of the cheapest pool whose nodes fit a share and
 *               that has room for all m' under max_nodes; if no split can
 *               be had, none are created and held_back says why.
 *   scale down: a ready node with no tasks (or, when nothing waits for its
 *               pool, with GPUs under scale_down_utilization_pct) for
 *               scale_down_window_s is drained, never below min_nodes and
 *               not within cooldown_s of the pool's last scale-up; a drained
 *               node without tasks is released.
 *   failures:   a node still provisioning after boot_timeout_s, or lost for
 *               that long, is failed (the shell deletes it) and replaced by
 *               the same pass if still needed.
 *
 * Nodes of a pool live in the cluster like any other; node->pool names the
 * pool. Each call also updates the cluster (node states, idle_since_ms),
 * except that created nodes are added by the shell, which gives them ids.
 */
#ifndef TIDE_AUTOSCALER_H
#define TIDE_AUTOSCALER_H

#include <stddef.h>
#include <stdint.h>

#include "core/budget.h"
#include "core/cluster.h"
#include "core/demand.h"
#include "core/forecast.h"
#include "core/order_keep.h"
#include "core/pool.h"

enum pool_action_type {
    POOL_CREATE,  /* create `count` nodes in `pool` */
    POOL_DRAIN,   /* node_id: no new tasks (already set in the cluster) */
    POOL_RELEASE, /* node_id: delete it through the provider; state released */
    POOL_FAIL,    /* node_id: never registered / lost too long: delete; state failed */
    POOL_UNDRAIN, /* node_id: draining, but waiting jobs fit it: ready again (set already) */
};

const char *pool_action_type_name(enum pool_action_type t);

struct pool_action {
    enum pool_action_type type;
    int pool; /* index into the pools */
    int count;
    int64_t node_id;
    char reason[TIDE_REASON_MAX];
};

struct pool_action_list {
    struct pool_action *items;
    size_t len, cap;
};

void pool_action_list_init(struct pool_action_list *l);
void pool_action_list_release(struct pool_action_list *l);
void pool_action_list_clear(struct pool_action_list *l);
/* Appends a copy; NULL when out of memory. */
struct pool_action *pool_action_list_push(struct pool_action_list *l, const struct pool_action *a);

/* What the autoscaler remembers of each pool between calls. */
struct pool_scale_state {
    int64_t last_scale_up_ms;
    int64_t last_scale_down_ms;
    int64_t create_not_before_ms; /* provider backoff, set by the shell */
    int pending_jobs;             /* jobs that fit it and wait (set by each call) */
    int nodes_wanted;             /* nodes the last call asked for (set by each call) */
    /* Why the last call created no nodes here for a waiting job whose
     * shares this pool's nodes fit (a gang that needs more nodes than
     * max_nodes leaves room for, or, in a spot pool, a job that may not
     * run on spot; the first such job, most GPUs then oldest); "" when
     * none. */
    char held_back[TIDE_REASON_MAX];
    struct forecast forecast;     /* predictive pools: demand per hour of the week */
    int predicted_nodes;          /* nodes the forecast wants ready now (set by each call) */
};

struct autoscaler {
    const struct pool *pools; /* not owned */
    int npools;
    const struct budget_set *budgets; /* projects at a hard cap get no nodes; NULL: none */
    /* The waiting jobs by shape (demand.h), kept by the caller: every job
     * in it pending, not held, on hold, cancelled, backing off or over a
     * budget, and every such job in it. NULL: each call scans the
     * cluster's jobs (the same decisions, more work in deep queues). */
    const struct demand *demand;
    /* Node i's pool (its index in pools, as pool_find by its name gives;
     * -1: none) for i < nnode_pools, kept by the caller (the simulator);
     * a node past them is looked up by name. */
    const int *node_pools;
    size_t nnode_pools;
    struct pool_scale_state state[TIDE_MAX_POOLS];
    /* Set by each call: when it appended no action, no call before this
     * time on the same cluster (nothing changed in it since) would append
     * one or change anything either: the first moment a wait, window,
     * cooldown or timeout it looked at runs out (INT64_MAX: none). now_ms
     * when the call acted or cannot say (scheduled windows, predictive
     * pools, budgets): the next look must be made. */
    int64_t quiet_until_ms;
    /* scratch, grown as needed, freed by autoscaler_release */
    struct order_keep kept; /* the last call's order of waiting jobs */
    struct job **jobs;
    size_t jobs_cap;
    struct shape_walk *walk;
    int walk_cap;
    int *pool_of; /* per node of the call's cluster, its pool (-1: none) */
    const struct node *pool_of_nodes;
    size_t pool_of_n, pool_of_cap;
    struct scale_bin *bins;
    size_t bins_cap;
};

void autoscaler_init(struct autoscaler *a, const struct pool *pools, int npools);
void autoscaler_release(struct autoscaler *a);

/* One pass at now_ms; appends to out. Returns the number of actions
 * appended or TIDE_ENOMEM. */
int autoscaler_decide(struct autoscaler *a, struct cluster *c, int64_t now_ms,
                      struct pool_action_list *out);

/* Nodes of pool (by index) in each state, for reports. */
void autoscaler_count_nodes(const struct cluster *c, const struct pool *pool,
                            int counts[NODE_STATE_COUNT]);

#endif
