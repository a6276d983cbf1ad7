/* Token expiry, listing and revocation in the store (store_tokens.h). */
#include "store/store_tokens.h"

#include "store/store.h"
#include "store/store_db.h"

int store_token_set_expiry(struct store *s, const char *hash, int64_t expires_ms,
                           struct tide_err *err)
{
    struct db_stmt *st =
        db_prepare(store_db(s), "UPDATE tokens SET expires_ms=?2 WHERE hash=?1", err);
    if (!st)
        return TIDE_EIO;
    db_bind_text(st, 1, hash);
    if (expires_ms)
        db_bind_int64(st, 2, expires_ms);
    else
        db_bind_null(st, 2);
    int rc = db_step_done(st, "set token expiry", err);
    db_finalize(st);
    return rc;
}

int store_tokens_list(struct store *s, json_t **out, struct tide_err *err)
{
    *out = NULL;
    struct db_stmt *st =
        db_prepare(store_db(s),
                   "SELECT name, projects, created_ms, expires_ms, kind FROM tokens"
                   " WHERE kind IN (?1, ?2) ORDER BY name, created_ms",
                   err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, TOKEN_USER);
    db_bind_int64(st, 2, TOKEN_METRICS);
    json_t *list = json_array();
    int r;
    while ((r = db_step(st, "list tokens", err)) == DB_ROW) {
        const char *projects = db_column_text(st, 1);
        json_t *p = projects ? json_loads(projects, 0, NULL) : NULL;
        json_array_append_new(
            list, json_pack("{s:s, s:s, s:o, s:f, s:o}", "name", db_column_text(st, 0), "kind",
                            (int)db_column_int64(st, 4) == TOKEN_METRICS ? "metrics" : "user",
                            "projects", p ? p : json_null(), "created",
                            (double)db_column_int64(st, 2) / 1000.0, "expires",
                            db_column_is_null(st, 3)
                                ? json_null()
                                : json_real((double)db_column_int64(st, 3) / 1000.0)));
    }
    int rc = r == DB_DONE ? 0 : r;
    db_finalize(st);
    if (rc)
        json_decref(list);
    else
        *out = list;
    return rc;
}

int store_tokens_revoke(struct store *s, const char *name, int *count, struct tide_err *err)
{
    *count = 0;
    struct db_stmt *st =
        db_prepare(store_db(s), "DELETE FROM tokens WHERE kind IN (?1, ?3) AND name=?2", err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, TOKEN_USER);
    db_bind_text(st, 2, name);
    db_bind_int64(st, 3, TOKEN_METRICS);
    int rc = db_step_done(st, "revoke token", err);
    if (!rc)
        *count = (int)db_changes(st);
    db_finalize(st);
    return rc;
}
