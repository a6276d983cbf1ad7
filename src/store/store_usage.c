/* The usage ledger's rows in the store (see store_usage.h). */
#include "store/store_usage.h"

#include "store/store_db.h"

int store_usage_save(struct store *s, const struct usage_ledger *l, const struct pool *pools,
                     int npools, struct tide_err *err)
{
    struct db *db = store_db(s);
    /* A ledger's rows only grow: a smaller value is not the day's whole (a
     * stray row of it), so it never replaces what is stored. */
    struct db_stmt *day_st =
        db_prepare(db,
                   "INSERT INTO usage_pool_days(day, pool, node_ms, gpu_ms) VALUES(?,?,?,?)"
                   " ON CONFLICT(day, pool) DO UPDATE SET node_ms=excluded.node_ms,"
                   " gpu_ms=excluded.gpu_ms WHERE excluded.node_ms >= usage_pool_days.node_ms"
                   " AND excluded.gpu_ms >= usage_pool_days.gpu_ms",
                   err);
    /* "user" is quoted: PostgreSQL reserves the word. */
    struct db_stmt *use_st =
        day_st ? db_prepare(db,
                            "INSERT INTO usage_uses(day, pool, project, queue, \"user\", gpu_ms)"
                            " VALUES(?,?,?,?,?,?) ON CONFLICT(day, pool, project, queue, \"user\")"
                            " DO UPDATE SET gpu_ms=excluded.gpu_ms"
                            " WHERE excluded.gpu_ms >= usage_uses.gpu_ms",
                            err)
               : NULL;
    if (!use_st) {
        db_finalize(day_st);
        return TIDE_EIO;
    }
    int rc = 0;
    for (size_t i = l->days_dirty_from; !rc && i < l->ndays; i++) {
        const struct usage_pool_day *d = &l->days[i];
        if (!d->dirty || d->pool < 0 || d->pool >= npools)
            continue;
        db_bind_int64(day_st, 1, d->day);
        db_bind_text(day_st, 2, pools[d->pool].name);
        db_bind_int64(day_st, 3, d->node_ms);
        db_bind_int64(day_st, 4, d->gpu_ms);
        rc = db_step_done(day_st, "store usage day", err);
        db_reset(day_st);
    }
    for (size_t i = l->uses_dirty_from; !rc && i < l->nuses; i++) {
        const struct usage_use *u = &l->uses[i];
        if (!u->dirty || u->pool < 0 || u->pool >= npools)
            continue;
        db_bind_int64(use_st, 1, u->day);
        db_bind_text(use_st, 2, pools[u->pool].name);
        db_bind_text(use_st, 3, u->project);
        db_bind_text(use_st, 4, u->queue);
        db_bind_text(use_st, 5, u->user);
        db_bind_int64(use_st, 6, u->gpu_ms);
        rc = db_step_done(use_st, "store usage", err);
        db_reset(use_st);
    }
    db_finalize(day_st);
    db_finalize(use_st);
    return rc;
}

/* Runs sql (day, pool, ...) and hands each row of a configured pool to fn. */
static int load_rows(struct store *s, const char *sql, const struct pool *pools, int npools,
                     int (*fn)(struct usage_ledger *, struct db_stmt *, int),
                     struct usage_ledger *l, struct tide_err *err)
{
    struct db_stmt *st = db_prepare(store_db(s), sql, err);
    if (!st)
        return TIDE_EIO;
    int r = DB_DONE, rc = 0;
    while (!rc && (r = db_step(st, "load usage", err)) == DB_ROW) {
        int p = pool_find(pools, npools, db_column_text(st, 1));
        if (p >= 0 && fn(l, st, p))
            rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    }
    if (!rc && r != DB_DONE)
        rc = r;
    db_finalize(st);
    return rc;
}

static int add_day(struct usage_ledger *l, struct db_stmt *st, int pool)
{
    return usage_ledger_add_pool(l, db_column_int64(st, 0), pool, db_column_int64(st, 2),
                                 db_column_int64(st, 3));
}

static int add_use(struct usage_ledger *l, struct db_stmt *st, int pool)
{
    return usage_ledger_add_user_use(l, db_column_int64(st, 0), pool, db_column_text(st, 2),
                                     db_column_text(st, 3), db_column_text(st, 4),
                                     db_column_int64(st, 5));
}

int store_usage_load(struct store *s, struct usage_ledger *l, const struct pool *pools, int npools,
                     struct tide_err *err)
{
    int rc = load_rows(s, "SELECT day, pool, node_ms, gpu_ms FROM usage_pool_days ORDER BY day",
                       pools, npools, add_day, l, err);
    if (!rc)
        rc = load_rows(s,
                       "SELECT day, pool, project, queue, \"user\", gpu_ms FROM usage_uses"
                       " ORDER BY day",
                       pools, npools, add_use, l, err);
    if (!rc)
        usage_ledger_clean(l);
    return rc;
}
