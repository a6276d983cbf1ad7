/* Spot interruptions of pool nodes: told by `tide nodes interrupt` or a
 * provider's list (see core/spot.h for what happens to the jobs). */
#include <stdio.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "core/spot.h"
#include "server/pool_loop.h"
#include "server/pool_loop_state.h"
#include "store/store_pools.h"

/* Nodes of spot pools take only preemptible work (queue_allows_node). */
void pool_mark_spot_nodes(struct server *srv)
{
    for (size_t i = 0; i < srv->cluster.nnodes; i++) {
        struct node *n = &srv->cluster.nodes[i];
        int p = n->pool[0] ? pool_find(srv->cfg.pools, srv->cfg.npools, n->pool) : -1;
        n->spot = p >= 0 && srv->cfg.pools[p].billing == BILLING_SPOT;
    }
}

int pool_spot_interrupt(struct server *srv, int64_t node_id, const char *why, int64_t now_ms,
                        struct tide_err *err)
{
    struct pool_loop *pl = srv->pool_loop;
    struct node *n = cluster_find_node(&srv->cluster, node_id);
    if (!n)
        return tide_err_set(err, TIDE_ENOENT, "id", "no node %lld", (long long)node_id);
    int p = pl && n->pool[0] ? pool_find(srv->cfg.pools, srv->cfg.npools, n->pool) : -1;
    if (p < 0)
        return tide_err_set(err, TIDE_ECONFLICT, "id", "node %s is in no elastic pool", n->name);
    const struct pool *pool = &srv->cfg.pools[p];
    char name[TIDE_NAME_MAX];
    snprintf(name, sizeof name, "%s", n->name);
    action_list_clear(&srv->actions);
    int asked = spot_interrupt(&srv->cluster, n, now_ms, pool->interruption_grace_s * 1000, why,
                               &srv->actions);
    if (asked == TIDE_EINVAL)
        return tide_err_set(err, TIDE_ECONFLICT, "id", "node %s is already interrupted or gone",
                            name);
    if (asked < 0)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    int rc = apply_actions(srv, &srv->actions, now_ms, err);
    char msg[TIDE_REASON_MAX + 200];
    snprintf(msg, sizeof msg, "pool %s: spot interruption of %s (%s): %d job%s asked to checkpoint, gone in %llds",
             pool->name, name, why, asked, asked == 1 ? "" : "s",
             (long long)pool->interruption_grace_s);
    if (!rc)
        rc = store_begin(srv->store, err);
    if (!rc) {
        rc = store_node_set_state(srv->store, node_id, NODE_DRAINING, err);
        struct node *now_node = cluster_find_node(&srv->cluster, node_id);
        if (!rc && now_node) /* its deadline, so a restart still requeues on time */
            rc = store_pool_node_put(srv->store, now_node, NULL, err);
        if (!rc)
            rc = store_event_add(srv->store, now_ms, "node_interrupted", 0, node_id, msg, err);
        if (!rc)
            rc = store_commit(srv->store, err);
        if (rc)
            store_rollback(srv->store);
    }
    if (rc)
        return rc;
    pl->interruptions[p]++;
    log_info("%s", msg);
    sched_loop_kick(srv);
    return asked;
}

int api_nodes_interrupt(struct server *srv, struct api_request *req, int64_t id,
                        struct api_reply *reply)
{
    if (req->token.kind != TOKEN_ADMIN)
        return api_error_msg(reply, TIDE_EPERM, NULL, "interrupting a node needs the admin token");
    struct tide_err err;
    tide_err_clear(&err);
    pthread_mutex_lock(&srv->lock);
    int rc = pool_spot_interrupt(srv, id, "told by tide nodes interrupt", clock_now_ms(), &err);
    pthread_mutex_unlock(&srv->lock);
    if (rc < 0)
        return api_error(reply, &err);
    reply->json = json_pack("{s:I, s:i}", "node_id", (json_int_t)id, "jobs_preempted", rc);
    return 0;
}
