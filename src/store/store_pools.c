/* The elastic pools' tables in the SQLite store (see store_pools.h). */
#include "store/store_pools.h"

#include <stdio.h>
#include <string.h>

int store_pools_init(struct store *s, struct tide_err *err)
{
    static const char schema[] =
        "CREATE TABLE IF NOT EXISTS pool_nodes(node_id INTEGER PRIMARY KEY, pool TEXT NOT NULL,"
        "  created_ms INTEGER NOT NULL, ready_ms INTEGER, ended_ms INTEGER, provider_id TEXT,"
        "  interrupt_deadline_ms INTEGER);"
        "CREATE TABLE IF NOT EXISTS pool_meters(pool TEXT NOT NULL, project TEXT NOT NULL,"
        "  node_ms INTEGER NOT NULL, gpu_ms INTEGER NOT NULL, PRIMARY KEY(pool, project));"
        "CREATE TABLE IF NOT EXISTS budget_state(project TEXT NOT NULL, period_kind INTEGER NOT NULL,"
        "  period INTEGER NOT NULL, spent_micros INTEGER NOT NULL, spent_rem INTEGER NOT NULL,"
        "  alerted_pct INTEGER NOT NULL, PRIMARY KEY(project, period_kind));";
    int rc = store_sqlite_exec(s, schema, err);
    if (rc)
        return rc;
    /* Databases from before spot deadlines were kept lack the column;
     * adding it twice fails harmlessly. */
    sqlite3_exec(store_sqlite_db(s), "ALTER TABLE pool_nodes ADD COLUMN interrupt_deadline_ms INTEGER",
                 NULL, NULL, NULL);
    return 0;
}

static void bind_ms(sqlite3_stmt *st, int i, int64_t ms)
{
    if (ms)
        sqlite3_bind_int64(st, i, ms);
    else
        sqlite3_bind_null(st, i);
}

int store_pool_node_put(struct store *s, const struct node *node, const char *provider_id,
                        struct tide_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s),
            "INSERT INTO pool_nodes(node_id, pool, created_ms, ready_ms, ended_ms, provider_id,"
            " interrupt_deadline_ms) VALUES(?1,?2,?3,?4,?5,?6,?7) ON CONFLICT(node_id) DO UPDATE"
            " SET pool=?2, created_ms=?3, ready_ms=?4, ended_ms=?5,"
            " provider_id=COALESCE(?6, provider_id), interrupt_deadline_ms=?7",
            -1, &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare pool node");
    sqlite3_bind_int64(st, 1, node->id);
    sqlite3_bind_text(st, 2, node->pool, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, node->created_ms);
    bind_ms(st, 4, node->ready_ms);
    bind_ms(st, 5, node->ended_ms);
    if (provider_id)
        sqlite3_bind_text(st, 6, provider_id, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 6);
    bind_ms(st, 7, node->interrupt_deadline_ms);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : store_sqlite_fail(s, err, "store pool node");
    sqlite3_finalize(st);
    return rc;
}

int store_pool_nodes_load(struct store *s, struct cluster *c,
                          void (*fn)(int64_t node_id, const char *provider_id, void *ctx),
                          void *ctx, struct tide_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s),
            "SELECT node_id, pool, created_ms, ready_ms, ended_ms, provider_id, interrupt_deadline_ms"
            " FROM pool_nodes",
            -1, &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare pool nodes");
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        struct node *n = cluster_find_node(c, sqlite3_column_int64(st, 0));
        if (!n)
            continue;
        snprintf(n->pool, sizeof n->pool, "%s", (const char *)sqlite3_column_text(st, 1));
        n->created_ms = sqlite3_column_int64(st, 2);
        n->ready_ms = sqlite3_column_int64(st, 3);
        n->ended_ms = sqlite3_column_int64(st, 4);
        n->interrupt_deadline_ms = sqlite3_column_int64(st, 6);
        if (fn)
            fn(n->id, (const char *)sqlite3_column_text(st, 5), ctx);
    }
    int rc = r == SQLITE_DONE ? 0 : store_sqlite_fail(s, err, "load pool nodes");
    sqlite3_finalize(st);
    return rc;
}

static int put_meter(struct store *s, const char *pool, const char *project, int64_t node_ms,
                     int64_t gpu_ms, struct tide_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s),
            "INSERT OR REPLACE INTO pool_meters(pool, project, node_ms, gpu_ms) VALUES(?,?,?,?)",
            -1, &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare meter");
    sqlite3_bind_text(st, 1, pool, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, project, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, node_ms);
    sqlite3_bind_int64(st, 4, gpu_ms);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : store_sqlite_fail(s, err, "store meter");
    sqlite3_finalize(st);
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
        rc = put_meter(s, pools[b->usage[i].pool].name, b->usage[i].project, 0,
                       b->usage[i].gpu_ms, err);
    return rc;
}

int store_pool_meters_load(struct store *s, struct billing *b, const struct pool *pools,
                           int npools, struct tide_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s),
            "SELECT pool, project, node_ms, gpu_ms FROM pool_meters", -1, &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare meters");
    int r, rc = 0;
    while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
        int p = pool_find(pools, npools, (const char *)sqlite3_column_text(st, 0));
        if (p < 0)
            continue; /* a pool no longer configured */
        const char *project = (const char *)sqlite3_column_text(st, 1);
        if (!project[0]) {
            b->pools[p].node_ms = sqlite3_column_int64(st, 2);
            b->pools[p].gpu_ms = sqlite3_column_int64(st, 3);
        } else if (billing_add_usage(b, project, p, sqlite3_column_int64(st, 3))) {
            rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        }
    }
    if (!rc && r != SQLITE_DONE)
        rc = store_sqlite_fail(s, err, "load meters");
    sqlite3_finalize(st);
    return rc;
}

int store_budgets_save(struct store *s, const struct budget_set *bs, struct tide_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s),
            "INSERT OR REPLACE INTO budget_state(project, period_kind, period, spent_micros,"
            " spent_rem, alerted_pct) VALUES(?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare budget state");
    int rc = 0;
    for (int i = 0; !rc && i < bs->count; i++)
        for (int k = 0; !rc && k < BUDGET_PERIODS; k++) {
            const struct budget *b = &bs->items[i];
            sqlite3_bind_text(st, 1, b->project, -1, SQLITE_STATIC);
            sqlite3_bind_int(st, 2, k);
            sqlite3_bind_int64(st, 3, b->period[k]);
            sqlite3_bind_int64(st, 4, b->spent_micros[k]);
            sqlite3_bind_int64(st, 5, b->spent_rem[k]);
            sqlite3_bind_int(st, 6, b->alerted_pct[k]);
            rc = sqlite3_step(st) == SQLITE_DONE ? 0 : store_sqlite_fail(s, err, "store budget state");
            sqlite3_reset(st);
        }
    sqlite3_finalize(st);
    return rc;
}

int store_budgets_load(struct store *s, struct budget_set *bs, struct tide_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s),
            "SELECT project, period_kind, period, spent_micros, spent_rem, alerted_pct"
            " FROM budget_state", -1, &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare budget state");
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        struct budget *b = (struct budget *)budget_find(bs, (const char *)sqlite3_column_text(st, 0));
        int k = sqlite3_column_int(st, 1);
        if (!b || k < 0 || k >= BUDGET_PERIODS)
            continue; /* a project no longer budgeted */
        b->period[k] = sqlite3_column_int64(st, 2);
        b->spent_micros[k] = sqlite3_column_int64(st, 3);
        b->spent_rem[k] = sqlite3_column_int64(st, 4);
        b->alerted_pct[k] = sqlite3_column_int(st, 5);
    }
    int rc = r == SQLITE_DONE ? 0 : store_sqlite_fail(s, err, "load budget state");
    sqlite3_finalize(st);
    return rc;
}
