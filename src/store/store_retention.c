/* Retention deletes in the SQLite store (see store_retention.h). */
#include "store/store_retention.h"

#include <sqlite3.h>

#include "store/store.h"
#include "store/store_pools.h"

int store_retention_init(struct store *s, struct tide_err *err)
{
    return store_sqlite_exec(s, "CREATE INDEX IF NOT EXISTS jobs_by_end ON jobs(end_ms);", err);
}

int store_retention_drop_jobs(struct store *s, int64_t before_ms, size_t max, int64_t *ids,
                              size_t *n, struct tide_err *err)
{
    *n = 0;
    sqlite3 *db = store_sqlite_db(s);
    sqlite3_stmt *pick = NULL, *job = NULL, *events = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT id FROM jobs WHERE end_ms IS NOT NULL AND end_ms < ?1"
                           " AND state IN ('succeeded','failed','cancelled','timeout')"
                           " ORDER BY end_ms LIMIT ?2",
                           -1, &pick, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "DELETE FROM jobs WHERE id=?", -1, &job, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "DELETE FROM events WHERE job_id=?", -1, &events, NULL) != SQLITE_OK) {
        int rc = store_sqlite_fail(s, err, "prepare job retention");
        sqlite3_finalize(pick);
        sqlite3_finalize(job);
        return rc;
    }
    sqlite3_bind_int64(pick, 1, before_ms);
    sqlite3_bind_int64(pick, 2, (sqlite3_int64)max);
    int r;
    while (*n < max && (r = sqlite3_step(pick)) == SQLITE_ROW)
        ids[(*n)++] = sqlite3_column_int64(pick, 0);
    sqlite3_finalize(pick);
    int rc = *n ? store_begin(s, err) : 0;
    for (size_t i = 0; !rc && i < *n; i++) {
        sqlite3_bind_int64(job, 1, ids[i]);
        sqlite3_bind_int64(events, 1, ids[i]);
        if (sqlite3_step(job) != SQLITE_DONE || sqlite3_step(events) != SQLITE_DONE)
            rc = store_sqlite_fail(s, err, "delete an old job");
        sqlite3_reset(job);
        sqlite3_reset(events);
    }
    if (*n && !rc)
        rc = store_commit(s, err);
    else if (*n)
        store_rollback(s);
    if (rc)
        *n = 0;
    sqlite3_finalize(job);
    sqlite3_finalize(events);
    return rc;
}

int store_retention_drop_events(struct store *s, int64_t before_ms, size_t max, size_t *n,
                                struct tide_err *err)
{
    *n = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s),
                           /* ids follow time: only the oldest rows are looked at */
                           "DELETE FROM events WHERE id IN (SELECT id FROM events"
                           " ORDER BY id LIMIT ?2) AND time_ms < ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare event retention");
    sqlite3_bind_int64(st, 1, before_ms);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)max);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : store_sqlite_fail(s, err, "delete old events");
    if (!rc)
        *n = (size_t)sqlite3_changes(store_sqlite_db(s));
    sqlite3_finalize(st);
    return rc;
}
