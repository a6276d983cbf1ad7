/* Idempotency keys in the SQLite store (see store_idempotency.h). */
#include "store/store_idempotency.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#include "store/store_pools.h"

int store_idempotency_init(struct store *s, struct tide_err *err)
{
    return store_sqlite_exec(s,
        "CREATE TABLE IF NOT EXISTS idempotency(owner TEXT NOT NULL, key TEXT NOT NULL,"
        "  request_hash TEXT NOT NULL, job_ids TEXT NOT NULL, created_ms INTEGER NOT NULL,"
        "  PRIMARY KEY(owner, key));"
        "CREATE INDEX IF NOT EXISTS idempotency_by_age ON idempotency(created_ms);",
        err);
}

int store_idempotency_get(struct store *s, const char *owner, const char *key, int64_t now_ms,
                          char request_hash[65], json_t **job_ids, struct tide_err *err)
{
    *job_ids = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s),
                           "SELECT request_hash, job_ids FROM idempotency"
                           " WHERE owner=?1 AND key=?2 AND created_ms >= ?3",
                           -1, &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare idempotency lookup");
    sqlite3_bind_text(st, 1, owner, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, now_ms - IDEMPOTENCY_KEEP_MS);
    int r = sqlite3_step(st), rc = TIDE_ENOENT;
    if (r == SQLITE_ROW) {
        snprintf(request_hash, 65, "%s", (const char *)sqlite3_column_text(st, 0));
        *job_ids = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);
        rc = json_is_array(*job_ids) ? 0
                                     : tide_err_set(err, TIDE_EIO, NULL,
                                                    "idempotency key '%s' has unreadable job ids", key);
    } else if (r != SQLITE_DONE) {
        rc = store_sqlite_fail(s, err, "read idempotency key");
    }
    sqlite3_finalize(st);
    if (rc) {
        json_decref(*job_ids);
        *job_ids = NULL;
    }
    return rc;
}

int store_idempotency_put(struct store *s, const char *owner, const char *key,
                          const char *request_hash, const int64_t *job_ids, int count,
                          int64_t now_ms, struct tide_err *err)
{
    json_t *ids = json_array();
    for (int i = 0; ids && i < count; i++)
        json_array_append_new(ids, json_integer(job_ids[i]));
    char *text = ids ? json_dumps(ids, JSON_COMPACT) : NULL;
    json_decref(ids);
    if (!text)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    sqlite3 *db = store_sqlite_db(s);
    sqlite3_stmt *drop = NULL, *put = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(db, "DELETE FROM idempotency WHERE created_ms < ?1", -1, &drop, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT OR REPLACE INTO idempotency(owner, key, request_hash, job_ids,"
                           " created_ms) VALUES(?1,?2,?3,?4,?5)",
                           -1, &put, NULL) != SQLITE_OK) {
        rc = store_sqlite_fail(s, err, "prepare idempotency write");
    } else {
        sqlite3_bind_int64(drop, 1, now_ms - IDEMPOTENCY_KEEP_MS);
        sqlite3_bind_text(put, 1, owner, -1, SQLITE_STATIC);
        sqlite3_bind_text(put, 2, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(put, 3, request_hash, -1, SQLITE_STATIC);
        sqlite3_bind_text(put, 4, text, -1, SQLITE_STATIC);
        sqlite3_bind_int64(put, 5, now_ms);
        if (sqlite3_step(drop) != SQLITE_DONE || sqlite3_step(put) != SQLITE_DONE)
            rc = store_sqlite_fail(s, err, "write idempotency key");
    }
    sqlite3_finalize(drop);
    sqlite3_finalize(put);
    free(text);
    return rc;
}
