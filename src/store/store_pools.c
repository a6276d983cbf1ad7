/* The elastic pools' rows in the store (see store_pools.h). */
#include "store/store_pools.h"

#include <stdio.h>
#include <string.h>

#include "store/store_db.h"

static void bind_ms(struct db_stmt *st, int i, int64_t ms)
{
    if (ms)
        db_bind_int64(st, i, ms);
    else
        db_bind_null(st, i);
}

int store_pool_node_put(struct store *s, const struct node *node, const char *provider_id,
                        struct tide_err *err)
{
    struct db_stmt *st = db_prepare(
        store_db(s),
        "INSERT INTO pool_nodes(node_id, pool, created_ms, ready_ms, ended_ms, provider_id,"
        " interrupt_deadline_ms) VALUES(?1,?2,?3,?4,?5,?6,?7) ON CONFLICT(node_id) DO UPDATE"
        " SET pool=?2, created_ms=?3, ready_ms=?4, ended_ms=?5,"
        " provider_id=COALESCE(?6, pool_nodes.provider_id), interrupt_deadline_ms=?7",
        err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, node->id);
    db_bind_text(st, 2, node->pool);
    db_bind_int64(st, 3, node->created_ms);
    bind_ms(st, 4, node->ready_ms);
    bind_ms(st, 5, node->ended_ms);
    db_bind_text(st, 6, provider_id); /* NULL binds NULL */
    bind_ms(st, 7, node->interrupt_deadline_ms);
    int rc = db_step_done(st, "store pool node", err);
    db_finalize(st);
    return rc;
}

int store_pool_nodes_load(struct store *s, struct cluster *c,
                          void (*fn)(int64_t node_id, const char *provider_id, void *ctx),
                          void *ctx, struct tide_err *err)
{
    struct db_stmt *st = db_prepare(
        store_db(s),
        "SELECT node_id, pool, created_ms, ready_ms, ended_ms, provider_id, interrupt_deadline_ms"
        " FROM pool_nodes",
        err);
    if (!st)
        return TIDE_EIO;
    int r;
    while ((r = db_step(st, "load pool nodes", err)) == DB_ROW) {
        struct node *n = cluster_find_node(c, db_column_int64(st, 0));
        if (!n)
            continue;
        snprintf(n->pool, sizeof n->pool, "%s", db_column_text(st, 1));
        n->created_ms = db_column_int64(st, 2);
        n->ready_ms = db_column_int64(st, 3);
        n->ended_ms = db_column_int64(st, 4);
        n->interrupt_deadline_ms = db_column_int64(st, 6);
        if (fn)
            fn(n->id, db_column_text(st, 5), ctx);
    }
    int rc = r == DB_DONE ? 0 : r;
    db_finalize(st);
    return rc;
}

static int put_meter(struct store *s, const char *pool, const char *project, int64_t node_ms,
                     int64_t gpu_ms, struct tide_err *err)
{
    struct db_stmt *st =
        db_prepare(store_db(s),
                   "INSERT INTO pool_meters(pool, project, node_ms, gpu_ms) VALUES(?,?,?,?)"
                   " ON CONFLICT(pool, project) DO UPDATE SET node_ms=excluded.node_ms,"
                   " gpu_ms=excluded.gpu_ms",
                   err);
    if (!st)
        return TIDE_EIO;
    db_bind_text(st, 1, pool);
    db_bind_text(st, 2, project);
    db_bind_int64(st, 3, node_ms);
    db_bind_int64(st, 4, gpu_ms);
    int rc = db_step_done(st, "store meter", err);
    db_finalize(st);
    return rc;
}

int store_pool_meters_save(struct store *s, const struct billing *b, const struct pool *pools,
                           int npools, struct tide_err *err)
{
    int rc = 0;
    /* The pool's own row has project ''; projects have node_ms 0. */
    for (int p = 0; !rc && p < npools; p++)
        rc = put_meter(s, pools[p].name, "", b->pools[p].node_ms, b->pools[p].gpu_ms, err);
    for (size_t i = 0; !rc && i < b->nusage; i++)
        rc = put_meter(s, pools[b->usage[i].pool].name, b->usage[i].project, 0, b->usage[i].gpu_ms,
                       err);
    return rc;
}

int store_pool_meters_load(struct store *s, struct billing *b, const struct pool *pools, int npools,
                           struct tide_err *err)
{
    struct db_stmt *st =
        db_prepare(store_db(s), "SELECT pool, project, node_ms, gpu_ms FROM pool_meters", err);
    if (!st)
        return TIDE_EIO;
    int r, rc = 0;
    while (!rc && (r = db_step(st, "load meters", err)) == DB_ROW) {
        int p = pool_find(pools, npools, db_column_text(st, 0));
        if (p < 0)
            continue; /* a pool no longer configured */
        const char *project = db_column_text(st, 1);
        if (!project[0]) {
            b->pools[p].node_ms = db_column_int64(st, 2);
            b->pools[p].gpu_ms = db_column_int64(st, 3);
        } else if (billing_add_usage(b, project, p, db_column_int64(st, 3))) {
            rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        }
    }
    if (!rc && r != DB_DONE)
        rc = r;
    db_finalize(st);
    return rc;
}

int store_budgets_save(struct store *s, const struct budget_set *bs, struct tide_err *err)
{
    struct db_stmt *st =
        db_prepare(store_db(s),
                   "INSERT INTO budget_state(project, period_kind, period, spent_micros,"
                   " spent_rem, alerted_pct) VALUES(?,?,?,?,?,?) ON CONFLICT(project, period_kind)"
                   " DO UPDATE SET period=excluded.period, spent_micros=excluded.spent_micros,"
                   " spent_rem=excluded.spent_rem, alerted_pct=excluded.alerted_pct",
                   err);
    if (!st)
        return TIDE_EIO;
    int rc = 0;
    for (int i = 0; !rc && i < bs->count; i++)
        for (int k = 0; !rc && k < BUDGET_PERIODS; k++) {
            const struct budget *b = &bs->items[i];
            db_bind_text(st, 1, b->project);
            db_bind_int64(st, 2, k);
            db_bind_int64(st, 3, b->period[k]);
            db_bind_int64(st, 4, b->spent_micros[k]);
            db_bind_int64(st, 5, b->spent_rem[k]);
            db_bind_int64(st, 6, b->alerted_pct[k]);
            rc = db_step_done(st, "store budget state", err);
            db_reset(st);
        }
    db_finalize(st);
    return rc;
}

int store_budgets_load(struct store *s, struct budget_set *bs, struct tide_err *err)
{
    struct db_stmt *st =
        db_prepare(store_db(s),
                   "SELECT project, period_kind, period, spent_micros, spent_rem, alerted_pct"
                   " FROM budget_state",
                   err);
    if (!st)
        return TIDE_EIO;
    int r;
    while ((r = db_step(st, "load budget state", err)) == DB_ROW) {
        struct budget *b = (struct budget *)budget_find(bs, db_column_text(st, 0));
        int k = (int)db_column_int64(st, 1);
        if (!b || k < 0 || k >= BUDGET_PERIODS)
            continue; /* a project no longer budgeted */
        b->period[k] = db_column_int64(st, 2);
        b->spent_micros[k] = db_column_int64(st, 3);
        b->spent_rem[k] = db_column_int64(st, 4);
        b->alerted_pct[k] = (int)db_column_int64(st, 5);
    }
    int rc = r == DB_DONE ? 0 : r;
    db_finalize(st);
    return rc;
}
