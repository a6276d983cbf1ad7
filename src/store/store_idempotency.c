/* Idempotency keys in the store (see store_idempotency.h). */
#include "store/store_idempotency.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/json_write.h"
#include "store/store_db.h"

int store_idempotency_get(struct store *s, const char *owner, const char *key, int64_t now_ms,
                          char request_hash[65], json_t **job_ids, struct tide_err *err)
{
    *job_ids = NULL;
    /* Prepared once: every `tide submit` and each spec of a keyed batch asks. */
    struct db_stmt *st = store_cached(s, STORE_STMT_IDEMPOTENCY_GET,
                                      "SELECT request_hash, job_ids FROM idempotency"
                                      " WHERE owner=?1 AND key=?2 AND created_ms >= ?3",
                                      err);
    if (!st)
        return TIDE_EIO;
    db_bind_text(st, 1, owner);
    db_bind_text(st, 2, key);
    db_bind_int64(st, 3, now_ms - IDEMPOTENCY_KEEP_MS);
    int r = db_step(st, "read idempotency key", err), rc = TIDE_ENOENT;
    if (r == DB_ROW) {
        snprintf(request_hash, 65, "%s", db_column_text(st, 0));
        *job_ids = json_loads(db_column_text(st, 1), 0, NULL);
        rc = json_is_array(*job_ids)
                 ? 0
                 : tide_err_set(err, TIDE_EIO, NULL, "idempotency key '%s' has unreadable job ids",
                                key);
    } else if (r < 0) {
        rc = r;
    }
    db_reset(st);
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
    char *text = ids ? json_write_compact(ids, false, NULL) : NULL;
    json_decref(ids);
    if (!text)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    /* Both prepared once (one store_cached at a time: each resets its own). */
    struct db_stmt *drop = store_cached(s, STORE_STMT_IDEMPOTENCY_DROP,
                                        "DELETE FROM idempotency WHERE created_ms < ?1", err);
    int rc = drop ? 0 : TIDE_EIO;
    if (!rc) {
        db_bind_int64(drop, 1, now_ms - IDEMPOTENCY_KEEP_MS);
        rc = db_step_done(drop, "write idempotency key", err);
        db_reset(drop);
    }
    struct db_stmt *put =
        rc ? NULL
           : store_cached(s, STORE_STMT_IDEMPOTENCY_PUT,
                          "INSERT INTO idempotency(owner, key, request_hash, job_ids, created_ms)"
                          " VALUES(?1,?2,?3,?4,?5) ON CONFLICT(owner, key) DO UPDATE SET"
                          " request_hash=excluded.request_hash, job_ids=excluded.job_ids,"
                          " created_ms=excluded.created_ms",
                          err);
    if (!rc && !put)
        rc = TIDE_EIO;
    if (!rc) {
        db_bind_text(put, 1, owner);
        db_bind_text(put, 2, key);
        db_bind_text(put, 3, request_hash);
        db_bind_text_take(put, 4, text);
        text = NULL;
        db_bind_int64(put, 5, now_ms);
        rc = db_step_done(put, "write idempotency key", err);
        db_reset(put);
    }
    free(text);
    return rc;
}
