/*
 * The elastic pools' thread (see pool_loop.h). Each second, under the
 * lock: meter, decide, persist the decisions in one transaction and queue
 * the provider calls; then, without the lock, make them (a blocking
 * provider's on worker threads, up to POOL_MAX_IN_FLIGHT at once, so a slow
 * create for one pool holds up no other call); then, under the lock again,
 * record the results of the calls that are done. A node is in at most one
 * call at a time. A failed create fails its node records and holds the
 * pool's creations back (2, 4, 8 ... 60 s); the next decision asks again. A
 * failed delete is retried with the same backoff.
 */
#include "server/pool_loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "core/autoscaler.h"
#include "core/billing.h"
#include "core/spot.h"
#include "providers/provider.h"
#include "server/pool_loop_state.h"
#include "store/store_events.h"
#include "store/store_pools.h"
#include "server/usage_meter.h"
#include "store/store_usage.h"

static struct pool_node_rt *rt_find(struct pool_loop *pl, int64_t node_id, bool add)
{
    for (size_t i = 0; i < pl->nnodes; i++)
        if (pl->nodes[i].node_id == node_id)
            return &pl->nodes[i];
    if (!add)
        return NULL;
    if (pl->nnodes == pl->nodes_cap) {
        size_t cap = pl->nodes_cap ? pl->nodes_cap * 2 : 32;
        struct pool_node_rt *grown = realloc(pl->nodes, cap * sizeof *grown);
        if (!grown)
            return NULL;
        pl->nodes = grown;
        pl->nodes_cap = cap;
    }
    struct pool_node_rt *r = &pl->nodes[pl->nnodes++];
    memset(r, 0, sizeof *r);
    r->node_id = node_id;
    r->pool = -1;
    return r;
}

/* A new queued call at the end of pl->calls, or NULL without memory. */
static struct pool_call *call_add(struct pool_loop *pl)
{
    if (pl->ncalls == pl->calls_cap) {
        size_t cap = pl->calls_cap ? pl->calls_cap * 2 : 8;
        struct pool_call **grown = realloc(pl->calls, cap * sizeof *grown);
        if (!grown)
            return NULL;
        pl->calls = grown;
        pl->calls_cap = cap;
    }
    struct pool_call *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->pl = pl;
    atomic_init(&c->done, 0);
    pl->calls[pl->ncalls++] = c;
    return c;
}

static void call_free(struct pool_call *c)
{
    if (c)
        free(c->listed);
    free(c);
}

/* Is a call of this kind for pool p queued, running or done but not yet
 * recorded? */
static bool pool_has_call(const struct pool_loop *pl, int p, enum pool_call_kind kind)
{
    for (size_t i = 0; i < pl->ncalls; i++)
        if (pl->calls[i]->kind == kind && pl->calls[i]->pool == p)
            return true;
    return false;
}

/* Is a delete of this node of pool p's provider on its way? */
static bool delete_queued(const struct pool_loop *pl, int p, const struct provider_node *pn)
{
    for (size_t i = 0; i < pl->ncalls; i++) {
        const struct pool_call *c = pl->calls[i];
        if (c->kind == CALL_DELETE && c->pool == p &&
            ((pn->id[0] && !strcmp(c->nodes[0].id, pn->id)) ||
             (pn->name[0] && !strcmp(c->nodes[0].name, pn->name))))
            return true;
    }
    return false;
}

/* The nodes of a call are free for another call again. */
static void call_release_nodes(struct pool_loop *pl, const struct pool_call *c)
{
    for (int k = 0; k < c->count; k++) {
        struct pool_node_rt *r = rt_find(pl, c->node_ids[k], false);
        if (r)
            r->call_in_flight = false;
    }
}

static void on_loaded_node(int64_t node_id, const char *provider_id, void *ctx)
{
    struct pool_loop *pl = ctx;
    struct pool_node_rt *r = rt_find(pl, node_id, true);
    if (r && provider_id)
        snprintf(r->provider_id, sizeof r->provider_id, "%s", provider_id);
}

/* A new node record in state provisioning, shaped like the pool. */
static int add_provisioning_node(struct pool_loop *pl, int p, int64_t now, struct pool_call *call,
                                 const char *reason, struct tide_err *err)
{
    struct server *srv = pl->srv;
    const struct pool *pool = &srv->cfg.pools[p];
    struct node n;
    memset(&n, 0, sizeof n);
    for (int seq = 1;; seq++) {
        snprintf(n.name, sizeof n.name, "%.50s-%d", pool->name, seq);
        if (!cluster_find_node_by_name(&srv->cluster, n.name))
            break;
    }
    n.state = NODE_PROVISIONING;
    snprintf(n.pool, sizeof n.pool, "%s", pool->name);
    snprintf(n.driver, sizeof n.driver, "%s", pool->driver);
    n.created_ms = now;
    n.last_heartbeat_ms = now;
    n.spot = pool->billing == BILLING_SPOT;
    n.ngpus = pool->gpus_per_node;
    json_t *gpus = json_array();
    for (int g = 0; g < n.ngpus; g++) {
        n.gpus[g].index = g;
        snprintf(n.gpus[g].name, sizeof n.gpus[g].name, "%s", pool->gpu_model);
        n.gpus[g].memory_total_mib = pool->gpu_memory_mib;
        json_array_append_new(gpus, json_pack("{s:i, s:s, s:s, s:I}", "index", g, "uuid", "",
                                              "name", pool->gpu_model, "memory_total_mib",
                                              (json_int_t)pool->gpu_memory_mib));
    }
    json_t *info = json_pack("{s:s, s:o, s:s}", "driver", pool->driver, "gpus", gpus, "pool",
                             pool->name);
    int rc = store_node_upsert(srv->store, &n, info, now, err);
    json_decref(info);
    if (!rc)
        rc = store_pool_node_put(srv->store, &n, NULL, err);
    char msg[TIDE_REASON_MAX + 96];
    snprintf(msg, sizeof msg, "pool %s: creating %s (%s)", pool->name, n.name, reason);
    if (!rc)
        rc = store_event_add(srv->store, now, "pool_scale_up", 0, n.id, msg, err);
    if (!rc && !cluster_put_node(&srv->cluster, &n))
        rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    struct pool_node_rt *r = rc ? NULL : rt_find(pl, n.id, true);
    if (!rc && !r)
        rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    if (rc)
        return rc;
    r->pool = p;
    r->call_in_flight = true;
    snprintf(r->name, sizeof r->name, "%s", n.name);
    snprintf(call->nodes[call->count].name, sizeof call->nodes[0].name, "%s", n.name);
    call->node_ids[call->count++] = n.id;
    return 0;
}

static int end_node(struct pool_loop *pl, const struct pool_action *a, int64_t now,
                    struct tide_err *err)
{
    struct server *srv = pl->srv;
    struct node *n = cluster_find_node(&srv->cluster, a->node_id);
    if (!n)
        return 0;
    bool keeps = a->type == POOL_DRAIN || a->type == POOL_UNDRAIN; /* the node stays */
    const char *kind = a->type == POOL_DRAIN     ? "node_draining"
                       : a->type == POOL_UNDRAIN ? "node_undrained"
                       : a->type == POOL_RELEASE ? "node_released"
                                                 : "node_failed";
    enum node_state st = a->type == POOL_DRAIN ? NODE_DRAINING
                         : a->type == POOL_UNDRAIN ? NODE_READY : n->state;
    int rc = store_node_set_state(srv->store, n->id, st, err);
    if (!rc && !keeps)
        rc = store_pool_node_put(srv->store, n, NULL, err);
    char msg[TIDE_REASON_MAX + 96];
    snprintf(msg, sizeof msg, "pool %s: %s: %s", srv->cfg.pools[a->pool].name,
             pool_action_type_name(a->type), a->reason);
    if (!rc)
        rc = store_event_add(srv->store, now, kind, 0, n->id, msg, err);
    if (rc || keeps)
        return rc;
    if (a->type == POOL_RELEASE)
        pl->scale_downs[a->pool]++;
    else
        pl->nodes_failed[a->pool]++;
    struct pool_node_rt *r = rt_find(pl, n->id, true);
    if (!r)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    r->pool = a->pool;
    snprintf(r->name, sizeof r->name, "%s", n->name);
    r->destroy_pending = true;
    r->destroy_not_before_ms = 0;
    return 0;
}

/* Under the lock: decide and persist; queues calls on pl->calls. */
static void tick_decide(struct pool_loop *pl, int64_t now)
{
    struct server *srv = pl->srv;
    struct tide_err err;
    tide_err_clear(&err);
    size_t first_call = pl->ncalls;
    pool_mark_spot_nodes(srv);
    /* Interrupted spot nodes at their deadline: what is still there is requeued. */
    action_list_clear(&srv->actions);
    if (spot_check(&srv->cluster, now, &srv->actions) > 0) {
        if (apply_actions(srv, &srv->actions, now, &err) != 0)
            log_error("spot requeue not persisted: %s", err.message);
        sched_loop_kick(srv);
    }
    if (billing_tick(&pl->bill, &srv->cluster, srv->cfg.pools, srv->cfg.npools, now))
        log_error("pool metering ran out of memory");
    if (pool_budgets_tick(srv, pl, now))
        log_error("budget alerts: out of memory");
    pool_action_list_clear(&pl->actions);
    if (autoscaler_decide(&pl->as, &srv->cluster, now, &pl->actions) < 0) {
        log_error("autoscaler ran out of memory");
        pool_budgets_alerts_unsaved(srv, pl);
        return;
    }
    bool undrained = false;
    int rc = store_begin(srv->store, &err);
    for (size_t i = 0; !rc && i < pl->actions.len; i++) {
        const struct pool_action *a = &pl->actions.items[i];
        if (a->type == POOL_CREATE) {
            struct pool_call *call = call_add(pl);
            if (!call) {
                rc = tide_err_set(&err, TIDE_ENOMEM, NULL, "out of memory");
                break;
            }
            call->kind = CALL_CREATE;
            call->pool = a->pool;
            for (int k = 0; !rc && k < a->count && k < POOL_MAX_BATCH; k++)
                rc = add_provisioning_node(pl, a->pool, now, call, a->reason, &err);
            pl->scale_ups[a->pool] += call->count;
        } else {
            rc = end_node(pl, a, now, &err);
            undrained |= a->type == POOL_UNDRAIN;
        }
    }
    if (!rc)
        rc = store_pool_meters_save(srv->store, &pl->bill, srv->cfg.pools, srv->cfg.npools, &err);
    if (!rc)
        rc = usage_meter_save(srv, &err);
    if (!rc && srv->cfg.budgets.count)
        rc = store_budgets_save(srv->store, &srv->cfg.budgets, &err);
    if (!rc)
        rc = pool_budgets_alerts_store(srv, pl, now, &err);
    if (!rc)
        rc = store_commit(srv->store, &err);
    if (!rc) {
        usage_meter_saved(srv, now);
        pool_budgets_alerts_saved(srv, pl);
    }
    for (size_t i = 0; !rc && i < pl->actions.len; i++)
        pl->decisions[pl->actions.items[i].pool][pl->actions.items[i].type]++;
    if (rc) {
        store_rollback(srv->store);
        pool_budgets_alerts_unsaved(srv, pl);
        while (pl->ncalls > first_call) {
            struct pool_call *c = pl->calls[--pl->ncalls];
            call_release_nodes(pl, c);
            call_free(c);
        }
        log_error("pool decisions not persisted (%s); reloading state", err.message);
        server_resync_cluster(srv, now);
        return;
    }
    if (undrained)
        sched_loop_kick(srv);
    /* Deletes due now, including retries; not while a create or an earlier
     * delete of the node is still on its way. */
    for (size_t i = 0; i < pl->nnodes; i++) {
        struct pool_node_rt *r = &pl->nodes[i];
        if (!r->destroy_pending || r->call_in_flight || now < r->destroy_not_before_ms ||
            r->pool < 0)
            continue;
        struct pool_call *call = call_add(pl);
        if (!call)
            break;
        call->kind = CALL_DELETE;
        call->pool = r->pool;
        call->count = 1;
        call->node_ids[0] = r->node_id;
        snprintf(call->nodes[0].name, sizeof call->nodes[0].name, "%s", r->name);
        snprintf(call->nodes[0].id, sizeof call->nodes[0].id, "%s", r->provider_id);
        r->call_in_flight = true;
    }
    /* What each provider holds, every list interval. */
    for (int p = 0; p < srv->cfg.npools; p++) {
        const struct pool *pool = &srv->cfg.pools[p];
        int64_t every_ms = pool->list_interval_s        ? pool->list_interval_s * 1000
                           : pool->billing == BILLING_SPOT ? POOL_LIST_EVERY_MS
                                                           : POOL_LIST_OTHERS_EVERY_MS;
        if (!pl->providers[p].ops->list || now - pl->last_list_ms[p] < every_ms ||
            pool_has_call(pl, p, CALL_LIST))
            continue;
        pl->last_list_ms[p] = now;
        struct pool_call *call = call_add(pl);
        if (call && !(call->listed = calloc(POOL_LIST_MAX, sizeof *call->listed))) {
            pl->ncalls--;
            call_free(call);
            call = NULL;
        }
        if (!call) {
            log_error("pool %s: list: out of memory", srv->cfg.pools[p].name);
            break;
        }
        call->kind = CALL_LIST;
        call->pool = p;
    }
}

/* Makes one call (without the lock) and marks it done. */
static void call_make(struct pool_call *c)
{
    struct pool_loop *pl = c->pl;
    const struct pool *pool = &pl->srv->cfg.pools[c->pool];
    struct provider *prov = &pl->providers[c->pool];
    struct tide_err err;
    tide_err_clear(&err);
    c->rc = c->kind == CALL_CREATE   ? prov->ops->create(prov, pool, c->nodes, c->count, &err)
            : c->kind == CALL_DELETE ? prov->ops->destroy(prov, pool, &c->nodes[0], &err)
                                     : prov->ops->list(prov, pool, c->listed, POOL_LIST_MAX, &err);
    if (c->rc < 0)
        snprintf(c->error, sizeof c->error, "%s", err.message[0] ? err.message : "failed");
    atomic_store(&c->done, 1);
}

static void *call_thread(void *arg)
{
    call_make(arg);
    return NULL;
}

/* Without the lock: makes the queued calls of non-blocking providers and
 * starts those of blocking ones on worker threads, at most
 * POOL_MAX_IN_FLIGHT at once, the pool with the fewest running first. */
static void tick_call(struct pool_loop *pl)
{
    for (;;) {
        struct pool_call *next = NULL;
        for (size_t i = 0; i < pl->ncalls; i++) {
            struct pool_call *c = pl->calls[i];
            if (c->started || atomic_load(&c->done))
                continue;
            if (!pl->providers[c->pool].ops->blocking)
                call_make(c);
            else if (pl->in_flight < POOL_MAX_IN_FLIGHT &&
                     (!next || pl->pool_in_flight[c->pool] < pl->pool_in_flight[next->pool]))
                next = c;
        }
        if (!next)
            return;
        if (pthread_create(&next->thread, NULL, call_thread, next) == 0) {
            next->started = true;
            pl->in_flight++;
            pl->pool_in_flight[next->pool]++;
        } else {
            log_warn("pool %s: no thread for a provider call; making it here",
                     pl->srv->cfg.pools[next->pool].name);
            call_make(next);
        }
    }
}

/* Under the lock: the calls that are done leave pl->calls (joined when on
 * a worker); they are returned in done[] (at most max), oldest first. */
static size_t calls_take_done(struct pool_loop *pl, struct pool_call **done, size_t max)
{
    size_t n = 0, kept = 0;
    for (size_t i = 0; i < pl->ncalls; i++) {
        struct pool_call *c = pl->calls[i];
        if (n == max || !atomic_load(&c->done)) {
            pl->calls[kept++] = c;
            continue;
        }
        if (c->started) {
            pthread_join(c->thread, NULL);
            pl->in_flight--;
            pl->pool_in_flight[c->pool]--;
        }
        call_release_nodes(pl, c);
        done[n++] = c;
    }
    pl->ncalls = kept;
    return n;
}

static void reconcile_listed(struct pool_loop *pl, int p, const struct provider_node *listed,
                             int n, const char *error, bool at_start, int64_t now);

/* Under the lock again: record what the providers did. */
static void tick_results(struct pool_loop *pl, int64_t now)
{
    struct server *srv = pl->srv;
    struct tide_err err;
    tide_err_clear(&err);
    struct pool_call *done[64];
    size_t ndone = calls_take_done(pl, done, sizeof done / sizeof done[0]);
    if (ndone == 0)
        return;
    int rc = store_begin(srv->store, &err);
    bool begun = !rc;
    for (size_t i = 0; !rc && i < ndone; i++) {
        struct pool_call *c = done[i];
        const struct pool *pool = &srv->cfg.pools[c->pool];
        char msg[700];
        if (c->kind == CALL_LIST)
            continue; /* below, each in a transaction of its own */
        pl->provider_calls[c->pool][c->kind]++;
        if (c->rc)
            pl->provider_call_failures[c->pool][c->kind]++;
        if (c->kind == CALL_CREATE && !c->rc) {
            pl->create_failures[c->pool] = 0;
            for (int k = 0; !rc && k < c->count; k++) {
                struct pool_node_rt *r = rt_find(pl, c->node_ids[k], false);
                struct node *n = cluster_find_node(&srv->cluster, c->node_ids[k]);
                if (r)
                    snprintf(r->provider_id, sizeof r->provider_id, "%s", c->nodes[k].id);
                if (n)
                    rc = store_pool_node_put(srv->store, n, c->nodes[k].id, &err);
            }
        } else if (c->kind == CALL_CREATE) {
            int fails = ++pl->create_failures[c->pool];
            pl->provider_failures[c->pool]++;
            int64_t wait = pool_backoff_ms(fails);
            pl->as.state[c->pool].create_not_before_ms = now + wait;
            snprintf(msg, sizeof msg, "pool %s: create %d node%s failed (%d in a row), retrying in %llds: %s",
                     pool->name, c->count, c->count == 1 ? "" : "s", fails,
                     (long long)(wait / 1000), c->error);
            log_warn("%s", msg);
            rc = store_event_add(srv->store, now, "provider_failed", 0, c->node_ids[0], msg, &err);
            for (int k = 0; !rc && k < c->count; k++) {
                struct node *n = cluster_find_node(&srv->cluster, c->node_ids[k]);
                struct pool_node_rt *r = rt_find(pl, c->node_ids[k], false);
                /* what it made before it failed, it named: deleted by that id
                 * (a cloud's, not tide's name) unless its agent came up */
                const char *id = c->nodes[k].id[0] ? c->nodes[k].id : NULL;
                if (r && id)
                    snprintf(r->provider_id, sizeof r->provider_id, "%s", id);
                /* released or failed (its boot timeout) while the create was
                 * on its way: deleted if made; kept if its agent came up */
                if (r)
                    r->destroy_pending = id && !(n && node_state_is_up(n->state));
                if (n && id && n->state != NODE_PROVISIONING)
                    rc = store_pool_node_put(srv->store, n, id, &err);
                if (!n || n->state != NODE_PROVISIONING)
                    continue;
                n->state = NODE_FAILED;
                n->ended_ms = now;
                rc = store_node_set_state(srv->store, n->id, NODE_FAILED, &err);
                if (!rc)
                    rc = store_pool_node_put(srv->store, n, id, &err);
            }
        } else {
            struct pool_node_rt *r = rt_find(pl, c->node_ids[0], false);
            if (!r && c->rc) /* an orphan: the next list tells again */
                log_warn("pool %s: deleting orphan %s failed: %s", pool->name,
                         c->nodes[0].id[0] ? c->nodes[0].id : c->nodes[0].name, c->error);
            if (!r)
                continue;
            if (!c->rc) {
                r->destroy_pending = false;
                r->deleted_ms = now;
                continue;
            }
            r->destroy_failures++;
            pl->provider_failures[c->pool]++;
            int64_t wait = pool_backoff_ms(r->destroy_failures);
            r->destroy_not_before_ms = now + wait;
            snprintf(msg, sizeof msg, "pool %s: delete %s failed (%d in a row), retrying in %llds: %s",
                     pool->name, r->name, r->destroy_failures, (long long)(wait / 1000), c->error);
            log_warn("%s", msg);
            rc = store_event_add(srv->store, now, "provider_failed", 0, r->node_id, msg, &err);
        }
    }
    if (!rc)
        rc = store_commit(srv->store, &err);
    if (rc) {
        if (begun)
            store_rollback(srv->store);
        log_error("pool results not persisted: %s", err.message);
        /* nodes failed and provider ids kept in the cache alone: reload */
        server_resync_cluster(srv, now);
    }
    for (size_t i = 0; i < ndone; i++) {
        struct pool_call *c = done[i];
        if (c->kind == CALL_LIST && !srv->stopping)
            reconcile_listed(pl, c->pool, c->listed, c->rc, c->error, false, now);
        call_free(c);
    }
    sched_loop_kick(srv);
}


/* Under the lock: one pool's list against the cluster. Nodes the provider
 * holds that tide released, failed or never knew are orphans to delete
 * (names into orphans); at start, provisioning nodes it does not hold are
 * failed (the autoscaler replaces them); nodes it reports interrupted get
 * the spot interruption. Returns how many orphans. */
static int reconcile_pool(struct pool_loop *pl, int p, const struct provider_node *listed, int n,
                          bool at_start, struct provider_node *orphans, int64_t *interrupted,
                          int *ninterrupted, int64_t now, struct tide_err *err)
{
    struct server *srv = pl->srv;
    const struct pool *pool = &srv->cfg.pools[p];
    int norphans = 0, rc = 0;
    for (int i = 0; !rc && i < n; i++) {
        struct node *node = NULL;
        bool elsewhere = false; /* another pool's, or joined by hand */
        for (size_t k = 0; k < pl->nnodes && !node && !elsewhere; k++)
            if (listed[i].id[0] && !strcmp(pl->nodes[k].provider_id, listed[i].id)) {
                node = cluster_find_node(&srv->cluster, pl->nodes[k].node_id);
                elsewhere = pl->nodes[k].pool != p;
            }
        /* by name, and by id as a name: a create that returned no id has
         * its node's name recorded as the id */
        if (!node && !elsewhere && listed[i].name[0])
            node = cluster_find_node_by_name(&srv->cluster, listed[i].name);
        if (!node && !elsewhere && listed[i].id[0])
            node = cluster_find_node_by_name(&srv->cluster, listed[i].id);
        if (node && strcmp(node->pool, pool->name))
            elsewhere = true;
        if (elsewhere)
            continue; /* a list may match more than its pool's: never delete those */
        struct pool_node_rt *r = node ? rt_find(pl, node->id, false) : NULL;
        if (r && listed[i].id[0] && (!r->provider_id[0] || !strcmp(r->provider_id, node->name)) &&
            strcmp(listed[i].id, node->name) != 0) {
            /* found by name while tide has no id for it (a create that
             * failed or gave none): the provider's id is what deletes it */
            snprintf(r->provider_id, sizeof r->provider_id, "%s", listed[i].id);
            if ((rc = store_pool_node_put(srv->store, node, listed[i].id, err)) != 0)
                break;
        }
        if ((!node && pool_has_call(pl, p, CALL_CREATE)) || delete_queued(pl, p, &listed[i]))
            continue; /* what a create on its way makes, or going already */
        if (r && r->deleted_ms && now - r->deleted_ms < POOL_DELETE_SETTLE_MS)
            continue; /* deleted lately: clouds list a VM while it goes */
        if (!node || ((node->state == NODE_RELEASED || node->state == NODE_FAILED) &&
                      !(r && r->destroy_pending))) {
            orphans[norphans++] = listed[i];
            char msg[2 * PROVIDER_ID_MAX + 160]; /* a name, or an id in its place, and an id */
            snprintf(msg, sizeof msg, "pool %s: provider holds %s%s%s, which tide %s: deleting it",
                     pool->name, listed[i].name[0] ? listed[i].name : listed[i].id,
                     listed[i].name[0] && listed[i].id[0] ? " " : "", listed[i].name[0] ? listed[i].id : "",
                     node ? "released" : "does not know");
            log_warn("%s", msg);
            rc = store_event_add(srv->store, now, "provider_orphan", 0, node ? node->id : 0, msg, err);
        } else if (listed[i].interrupted) {
            if (!node->interrupt_deadline_ms && *ninterrupted < POOL_LIST_MAX)
                interrupted[(*ninterrupted)++] = node->id;
        }
    }
    for (size_t k = 0; at_start && !rc && k < srv->cluster.nnodes; k++) {
        struct node *node = &srv->cluster.nodes[k];
        if (node->state != NODE_PROVISIONING || strcmp(node->pool, pool->name))
            continue;
        bool held = false;
        struct pool_node_rt *r = rt_find(pl, node->id, false);
        for (int i = 0; i < n && !held; i++)
            held = !strcmp(listed[i].name, node->name) ||
                   (r && r->provider_id[0] && !strcmp(listed[i].id, r->provider_id));
        if (held)
            continue;
        /* A create on its way when the last leader stopped short (kill -9,
         * a failover: docs/ha.md) may still bring the node up: it stays
         * provisioning, counted as coming capacity so it is not asked for
         * twice, until it registers (adopted by name) or boot_timeout_s
         * fails and deletes it as for any create. */
        if (now - node->created_ms <= pool->boot_timeout_s * 1000) {
            char msg[TIDE_NAME_MAX * 2 + 160];
            snprintf(msg, sizeof msg,
                     "pool %s: %s is not listed yet; its create may still be running: "
                     "waiting for it up to boot_timeout %llds",
                     pool->name, node->name, (long long)pool->boot_timeout_s);
            log_info("%s", msg);
            rc = store_event_add(srv->store, now, "node_adopting", 0, node->id, msg, err);
            continue;
        }
        node->state = NODE_FAILED;
        node->ended_ms = now;
        pl->nodes_failed[p]++;
        char msg[200];
        snprintf(msg, sizeof msg, "pool %s: fail: the provider does not hold %s", pool->name,
                 node->name);
        rc = store_node_set_state(srv->store, node->id, NODE_FAILED, err);
        if (!rc)
            rc = store_pool_node_put(srv->store, node, NULL, err);
        if (!rc)
            rc = store_event_add(srv->store, now, "node_failed", 0, node->id, msg, err);
    }
    return rc ? rc : norphans;
}

/* Under the lock: pool p's list (n nodes, or a negative code and error)
 * against the cluster, in a transaction of its own; the orphans are queued
 * for deletion. */
static void reconcile_listed(struct pool_loop *pl, int p, const struct provider_node *listed,
                             int n, const char *error, bool at_start, int64_t now)
{
    struct server *srv = pl->srv;
    const struct pool *pool = &srv->cfg.pools[p];
    struct tide_err err;
    tide_err_clear(&err);
    struct provider_node *orphans = calloc(POOL_LIST_MAX, sizeof *orphans);
    int64_t interrupted[POOL_LIST_MAX];
    int ninterrupted = 0;
    if (!orphans) {
        log_error("pool %s: reconcile: out of memory", pool->name);
        return;
    }
    pl->provider_calls[p][CALL_LIST]++;
    if (n < 0)
        pl->provider_call_failures[p][CALL_LIST]++;
    int rc = store_begin(srv->store, &err);
    bool begun = !rc;
    if (!rc && n < 0) {
        pl->provider_failures[p]++;
        char msg[600];
        snprintf(msg, sizeof msg, "pool %s: list failed: %s", pool->name, error);
        log_warn("%s", msg);
        rc = store_event_add_in(srv->store, now, "provider_failed", 0, 0, pool->name, NULL, msg, &err);
    } else if (!rc) {
        rc = reconcile_pool(pl, p, listed, n, at_start, orphans, interrupted, &ninterrupted, now,
                            &err);
    }
    int norphans = rc > 0 ? rc : 0;
    if (rc >= 0)
        rc = store_commit(srv->store, &err);
    for (int i = 0; rc >= 0 && i < ninterrupted; i++)
        if (pool_spot_interrupt(srv, interrupted[i], "reported by the provider", now, &err) < 0)
            log_warn("pool %s: interruption: %s", pool->name, err.message);
    if (rc < 0) {
        if (begun)
            store_rollback(srv->store);
        norphans = 0;
        log_error("pool %s: reconcile not persisted (%s); reloading", pool->name, err.message);
        server_resync_cluster(srv, now);
    }
    for (int i = 0; i < norphans; i++) {
        struct pool_call *call = call_add(pl);
        if (!call) {
            log_error("pool %s: orphan delete: out of memory", pool->name);
            break;
        }
        call->kind = CALL_DELETE;
        call->pool = p;
        call->nodes[0] = orphans[i]; /* no node_ids[0]: tide keeps no record to update */
    }
    free(orphans);
    sched_loop_kick(srv);
}

/* At start, without the lock: asks each provider that can list what it
 * holds, one after another, and reconciles. */
static void reconcile_at_start(struct pool_loop *pl)
{
    struct server *srv = pl->srv;
    for (int p = 0; p < srv->cfg.npools; p++)
        pl->last_list_ms[p] = clock_now_ms();
    struct provider_node *listed = calloc(POOL_LIST_MAX, sizeof *listed);
    if (!listed) {
        log_error("pool reconcile: out of memory");
        return;
    }
    for (int p = 0; p < srv->cfg.npools && !srv->stopping; p++) {
        struct provider *prov = &pl->providers[p];
        if (!prov->ops->list)
            continue;
        struct tide_err err;
        tide_err_clear(&err);
        int n = prov->ops->list(prov, &srv->cfg.pools[p], listed, POOL_LIST_MAX, &err);
        pthread_mutex_lock(&srv->lock);
        reconcile_listed(pl, p, listed, n, err.message, true, clock_now_ms());
        pthread_mutex_unlock(&srv->lock);
    }
    free(listed);
}

/* At stop, without the lock: waits for the calls on workers (the exec
 * provider stops its programs once srv->stopping is set), records what
 * they did and drops the calls never started (their nodes stay
 * provisioning; the provider's list at the next start settles them). */
static void calls_finish(struct pool_loop *pl)
{
    struct server *srv = pl->srv;
    for (size_t i = 0; i < pl->ncalls; i++)
        if (pl->calls[i]->started)
            while (!atomic_load(&pl->calls[i]->done))
                clock_sleep_ms(50, NULL);
    pthread_mutex_lock(&srv->lock);
    while (pl->in_flight > 0)
        tick_results(pl, clock_now_ms());
    pthread_mutex_unlock(&srv->lock);
    for (size_t i = 0; i < pl->ncalls; i++)
        call_free(pl->calls[i]);
    pl->ncalls = 0;
}

static void *pool_thread(void *arg)
{
    struct pool_loop *pl = arg;
    struct server *srv = pl->srv;
    reconcile_at_start(pl);
    while (!srv->stopping) {
        pthread_mutex_lock(&srv->lock);
        tick_decide(pl, clock_now_ms());
        pthread_mutex_unlock(&srv->lock);
        tick_call(pl);
        pthread_mutex_lock(&srv->lock);
        tick_results(pl, clock_now_ms());
        pthread_mutex_unlock(&srv->lock);
        for (int p = 0; p < srv->cfg.npools; p++)
            if (pl->providers[p].ops->poll)
                pl->providers[p].ops->poll(&pl->providers[p]);
        clock_sleep_ms(POOL_TICK_MS, &srv->stopping);
    }
    calls_finish(pl);
    return NULL;
}

int pool_loop_start(struct server *srv, int port, struct tide_err *err)
{
    if (srv->cfg.npools == 0)
        return 0;
    struct pool_loop *pl = calloc(1, sizeof *pl);
    if (!pl)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    pl->srv = srv;
    autoscaler_init(&pl->as, srv->cfg.pools, srv->cfg.npools);
    pl->as.budgets = srv->cfg.budgets.count ? &srv->cfg.budgets : NULL;
    billing_init(&pl->bill);
    pl->bill.ledger = srv->usage ? &srv->usage->ledger : NULL; /* usage_meter.h */
    pool_action_list_init(&pl->actions);
    for (int p = 0; p < srv->cfg.npools; p++) {
        struct provider *prov = &pl->providers[p];
        prov->ops = provider_by_name(srv->cfg.pools[p].provider);
        /* Local agents reach a TLS server by a name its certificate can hold;
         * with an agent listener, they use it. */
        const char *host =
            srv->cfg.agent_listen ? srv->cfg.agent_listen_host : srv->cfg.listen_host;
        bool any = !strcmp(host, "0.0.0.0");
        snprintf(prov->env.server_url, sizeof prov->env.server_url, "%s://%s:%d",
                 srv->cfg.tls_cert[0] ? "https" : "http",
                 any && srv->cfg.tls_cert[0] ? "127.0.0.1" : host, port);
        /* several servers (docs/ha.md): the node must find whichever leads */
        if (srv->cfg.agent_servers[0])
            snprintf(prov->env.server_url, sizeof prov->env.server_url, "%s",
                     srv->cfg.agent_servers);
        snprintf(prov->env.join_token_path, sizeof prov->env.join_token_path, "%s/join.token",
                 srv->cfg.data_dir);
        snprintf(prov->env.data_dir, sizeof prov->env.data_dir, "%s", srv->cfg.data_dir);
        prov->env.stopping = &srv->stopping;
    }
    pthread_mutex_lock(&srv->lock);
    int rc = store_pool_nodes_load(srv->store, &srv->cluster, on_loaded_node, pl, err);
    if (!rc)
        rc = store_pool_meters_load(srv->store, &pl->bill, srv->cfg.pools, srv->cfg.npools, err);
    /* Each pool node's record (its pool and name). A released node whose
     * delete a stop cut short is still listed by its provider: the list at
     * start, or a periodic one, deletes it as an orphan. */
    for (size_t i = 0; !rc && i < srv->cluster.nnodes; i++) {
        const struct node *n = &srv->cluster.nodes[i];
        struct pool_node_rt *r = n->pool[0] ? rt_find(pl, n->id, true) : NULL;
        if (!r)
            continue;
        r->pool = pool_find(srv->cfg.pools, srv->cfg.npools, n->pool);
        snprintf(r->name, sizeof r->name, "%s", n->name);
    }
    srv->pool_loop = pl;
    pthread_mutex_unlock(&srv->lock);
    if (!rc && pthread_create(&pl->thread, NULL, pool_thread, pl) != 0)
        rc = tide_err_set(err, TIDE_EIO, NULL, "cannot start the pool thread");
    if (rc) {
        pthread_mutex_lock(&srv->lock);
        srv->pool_loop = NULL;
        pthread_mutex_unlock(&srv->lock);
        autoscaler_release(&pl->as);
        billing_release(&pl->bill);
        pool_action_list_release(&pl->actions);
        free(pl);
        return rc;
    }
    pl->started = true;
    log_info("%d elastic pool%s", srv->cfg.npools, srv->cfg.npools == 1 ? "" : "s");
    return 0;
}

void pool_loop_stop(struct server *srv)
{
    struct pool_loop *pl = srv->pool_loop;
    if (!pl)
        return;
    if (pl->started)
        pthread_join(pl->thread, NULL);
    for (int p = 0; p < srv->cfg.npools; p++)
        if (pl->providers[p].ops->shutdown)
            pl->providers[p].ops->shutdown(&pl->providers[p]);
    pthread_mutex_lock(&srv->lock);
    srv->pool_loop = NULL;
    pthread_mutex_unlock(&srv->lock);
    autoscaler_release(&pl->as);
    billing_release(&pl->bill);
    pool_action_list_release(&pl->actions);
    free(pl->budget_alerts);
    free(pl->nodes);
    for (size_t i = 0; i < pl->ncalls; i++) /* none once the thread has finished them */
        call_free(pl->calls[i]);
    free(pl->calls);
    free(pl);
}

int pool_loop_node_registered(struct server *srv, struct node *node, const struct node *old,
                              const char *pool_field, int64_t now_ms, struct tide_err *err)
{
    if (old && old->pool[0]) {
        snprintf(node->pool, sizeof node->pool, "%s", old->pool);
        node->created_ms = old->created_ms;
        node->ready_ms = old->ready_ms ? old->ready_ms : now_ms;
        node->ended_ms = old->ended_ms;
        if (old->ended_ms) { /* back after it was released: a new lifetime */
            node->created_ms = node->ready_ms = now_ms;
            node->ended_ms = 0;
        }
    } else if (pool_field && *pool_field &&
               pool_find(srv->cfg.pools, srv->cfg.npools, pool_field) >= 0) {
        snprintf(node->pool, sizeof node->pool, "%s", pool_field);
        node->created_ms = node->ready_ms = now_ms;
    }
    if (!node->pool[0] || !srv->pool_loop)
        return 0;
    int p = pool_find(srv->cfg.pools, srv->cfg.npools, node->pool);
    /* Joining (not an agent restarting on a node already in the pool): the
     * pool's cost and its autoscaler count on its nodes' GPUs. */
    bool joining = !old || !old->pool[0] || !old->ready_ms || old->ended_ms;
    char why[TIDE_REASON_MAX + 128];
    if (p >= 0 && joining && pool_node_differs(&srv->cfg.pools[p], node, why, sizeof why)) {
        log_warn("registration refused: %s", why);
        return tide_err_set(err, TIDE_EINVAL, "pool", "pool: %s: not taken into the pool", why);
    }
    node->spot = p >= 0 && srv->cfg.pools[p].billing == BILLING_SPOT;
    if (old && old->interrupt_deadline_ms) { /* reclaimed: stays on its way out */
        node->state = NODE_DRAINING;
        node->interrupt_deadline_ms = old->interrupt_deadline_ms;
    }
    return store_pool_node_put(srv->store, node, NULL, err);
}
