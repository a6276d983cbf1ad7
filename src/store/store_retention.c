/* Retention deletes in the store (see store_retention.h). */
#include "store/store_retention.h"

#include "store/store.h"
#include "store/store_db.h"

int store_retention_drop_jobs(struct store *s, int64_t before_ms, size_t max, int64_t *ids,
                              size_t *n, struct tide_err *err)
{
    *n = 0;
    struct db *db = store_db(s);
    struct db_stmt *pick = db_prepare(db,
                                      "SELECT id FROM jobs WHERE end_ms IS NOT NULL AND end_ms < ?1"
                                      " AND state IN ('succeeded','failed','cancelled','timeout')"
                                      " ORDER BY end_ms LIMIT ?2",
                                      err);
    struct db_stmt *job = pick ? db_prepare(db, "DELETE FROM jobs WHERE id=?", err) : NULL;
    struct db_stmt *events = job ? db_prepare(db, "DELETE FROM events WHERE job_id=?", err) : NULL;
    if (!events) {
        db_finalize(pick);
        db_finalize(job);
        return TIDE_EIO;
    }
    db_bind_int64(pick, 1, before_ms);
    db_bind_int64(pick, 2, (int64_t)max);
    int r = DB_DONE;
    while (*n < max && (r = db_step(pick, "pick old jobs", err)) == DB_ROW)
        ids[(*n)++] = db_column_int64(pick, 0);
    db_finalize(pick);
    int rc = r < 0 ? r : 0;
    if (rc)
        *n = 0;
    if (*n)
        rc = store_begin(s, err);
    for (size_t i = 0; !rc && i < *n; i++) {
        db_bind_int64(job, 1, ids[i]);
        db_bind_int64(events, 1, ids[i]);
        rc = db_step_done(job, "delete an old job", err);
        if (!rc)
            rc = db_step_done(events, "delete an old job", err);
        db_reset(job);
        db_reset(events);
    }
    if (*n && !rc)
        rc = store_commit(s, err);
    else if (*n)
        store_rollback(s);
    if (rc)
        *n = 0;
    db_finalize(job);
    db_finalize(events);
    return rc;
}

int store_retention_drop_events(struct store *s, int64_t before_ms, size_t max, size_t *n,
                                struct tide_err *err)
{
    *n = 0;
    struct db_stmt *st = db_prepare(store_db(s),
                                    /* ids follow time: only the oldest rows are looked at */
                                    "DELETE FROM events WHERE id IN (SELECT id FROM events"
                                    " ORDER BY id LIMIT ?2) AND time_ms < ?1",
                                    err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, before_ms);
    db_bind_int64(st, 2, (int64_t)max);
    int rc = db_step_done(st, "delete old events", err);
    if (!rc)
        *n = (size_t)db_changes(st);
    db_finalize(st);
    return rc;
}
