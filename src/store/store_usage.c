/* The usage ledger's tables in the SQLite store (see store_usage.h). */
#include "store/store_usage.h"

#include <sqlite3.h>

#include "store/store_pools.h"

int store_usage_init(struct store *s, struct tide_err *err)
{
    static const char schema[] =
        "CREATE TABLE IF NOT EXISTS usage_pool_days(day INTEGER NOT NULL, pool TEXT NOT NULL,"
        "  node_ms INTEGER NOT NULL, gpu_ms INTEGER NOT NULL, PRIMARY KEY(day, pool));"
        "CREATE TABLE IF NOT EXISTS usage_uses(day INTEGER NOT NULL, pool TEXT NOT NULL,"
        "  project TEXT NOT NULL, queue TEXT NOT NULL, user TEXT NOT NULL DEFAULT '',"
        "  gpu_ms INTEGER NOT NULL, PRIMARY KEY(day, pool, project, queue, user));";
    int rc = store_sqlite_exec(s, schema, err);
    if (rc)
        return rc;
    /* Ledgers from before per-user usage: the user joins the key, so the
     * table is copied into the new shape (their rows' user is ""). */
    sqlite3_stmt *probe = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s), "SELECT user FROM usage_uses LIMIT 0", -1, &probe,
                           NULL) == SQLITE_OK) {
        sqlite3_finalize(probe);
        return 0;
    }
    sqlite3_finalize(probe);
    return store_sqlite_exec(s,
        "BEGIN IMMEDIATE;"
        "CREATE TABLE usage_uses_by_user(day INTEGER NOT NULL, pool TEXT NOT NULL,"
        "  project TEXT NOT NULL, queue TEXT NOT NULL, user TEXT NOT NULL DEFAULT '',"
        "  gpu_ms INTEGER NOT NULL, PRIMARY KEY(day, pool, project, queue, user));"
        "INSERT INTO usage_uses_by_user(day, pool, project, queue, user, gpu_ms)"
        "  SELECT day, pool, project, queue, '', gpu_ms FROM usage_uses;"
        "DROP TABLE usage_uses;"
        "ALTER TABLE usage_uses_by_user RENAME TO usage_uses;"
        "COMMIT;", err);
}

int store_usage_save(struct store *s, const struct usage_ledger *l, const struct pool *pools,
                     int npools, struct tide_err *err)
{
    sqlite3 *db = store_sqlite_db(s);
    sqlite3_stmt *day_st = NULL, *use_st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO usage_pool_days(day, pool, node_ms, gpu_ms)"
                               " VALUES(?,?,?,?)", -1, &day_st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO usage_uses(day, pool, project, queue, user,"
                               " gpu_ms) VALUES(?,?,?,?,?,?)", -1, &use_st, NULL) != SQLITE_OK) {
        int rc = store_sqlite_fail(s, err, "prepare usage");
        sqlite3_finalize(day_st);
        return rc;
    }
    int rc = 0;
    for (size_t i = l->days_dirty_from; !rc && i < l->ndays; i++) {
        const struct usage_pool_day *d = &l->days[i];
        if (!d->dirty || d->pool < 0 || d->pool >= npools)
            continue;
        sqlite3_bind_int64(day_st, 1, d->day);
        sqlite3_bind_text(day_st, 2, pools[d->pool].name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(day_st, 3, d->node_ms);
        sqlite3_bind_int64(day_st, 4, d->gpu_ms);
        rc = sqlite3_step(day_st) == SQLITE_DONE ? 0 : store_sqlite_fail(s, err, "store usage day");
        sqlite3_reset(day_st);
    }
    for (size_t i = l->uses_dirty_from; !rc && i < l->nuses; i++) {
        const struct usage_use *u = &l->uses[i];
        if (!u->dirty || u->pool < 0 || u->pool >= npools)
            continue;
        sqlite3_bind_int64(use_st, 1, u->day);
        sqlite3_bind_text(use_st, 2, pools[u->pool].name, -1, SQLITE_STATIC);
        sqlite3_bind_text(use_st, 3, u->project, -1, SQLITE_STATIC);
        sqlite3_bind_text(use_st, 4, u->queue, -1, SQLITE_STATIC);
        sqlite3_bind_text(use_st, 5, u->user, -1, SQLITE_STATIC);
        sqlite3_bind_int64(use_st, 6, u->gpu_ms);
        rc = sqlite3_step(use_st) == SQLITE_DONE ? 0 : store_sqlite_fail(s, err, "store usage");
        sqlite3_reset(use_st);
    }
    sqlite3_finalize(day_st);
    sqlite3_finalize(use_st);
    return rc;
}

/* Runs sql (day, pool, ...) and hands each row of a configured pool to fn. */
static int load_rows(struct store *s, const char *sql, const struct pool *pools, int npools,
                     int (*fn)(struct usage_ledger *, sqlite3_stmt *, int), struct usage_ledger *l,
                     struct tide_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s), sql, -1, &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare usage load");
    int r, rc = 0;
    while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
        int p = pool_find(pools, npools, (const char *)sqlite3_column_text(st, 1));
        if (p >= 0 && fn(l, st, p))
            rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    }
    if (!rc && r != SQLITE_DONE)
        rc = store_sqlite_fail(s, err, "load usage");
    sqlite3_finalize(st);
    return rc;
}

static int add_day(struct usage_ledger *l, sqlite3_stmt *st, int pool)
{
    return usage_ledger_add_pool(l, sqlite3_column_int64(st, 0), pool, sqlite3_column_int64(st, 2),
                                 sqlite3_column_int64(st, 3));
}

static int add_use(struct usage_ledger *l, sqlite3_stmt *st, int pool)
{
    return usage_ledger_add_user_use(l, sqlite3_column_int64(st, 0), pool,
                                     (const char *)sqlite3_column_text(st, 2),
                                     (const char *)sqlite3_column_text(st, 3),
                                     (const char *)sqlite3_column_text(st, 4),
                                     sqlite3_column_int64(st, 5));
}

int store_usage_load(struct store *s, struct usage_ledger *l, const struct pool *pools, int npools,
                     struct tide_err *err)
{
    int rc = load_rows(s, "SELECT day, pool, node_ms, gpu_ms FROM usage_pool_days ORDER BY day",
                       pools, npools, add_day, l, err);
    if (!rc)
        rc = load_rows(s, "SELECT day, pool, project, queue, user, gpu_ms FROM usage_uses ORDER BY day",
                       pools, npools, add_use, l, err);
    if (!rc)
        usage_ledger_clean(l);
    return rc;
}
