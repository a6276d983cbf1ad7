/* Token expiry, listing, revocation and node-bound join tokens' single use
 * in the store (store_tokens.h). */
#include "store/store_tokens.h"

#include <stdbool.h>

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
                   " WHERE kind IN (?1, ?2, ?3, ?4) ORDER BY name, created_ms",
                   err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, TOKEN_USER);
    db_bind_int64(st, 2, TOKEN_METRICS);
    db_bind_int64(st, 3, TOKEN_JOIN_BOUND);
    db_bind_int64(st, 4, TOKEN_JOIN_USED);
    json_t *list = json_array();
    int r;
    while ((r = db_step(st, "list tokens", err)) == DB_ROW) {
        const char *projects = db_column_text(st, 1);
        json_t *p = projects ? json_loads(projects, 0, NULL) : NULL;
        int kind = (int)db_column_int64(st, 4);
        bool join = kind == TOKEN_JOIN_BOUND || kind == TOKEN_JOIN_USED;
        json_t *t = json_pack("{s:s, s:s, s:o, s:f, s:o}", "name", db_column_text(st, 0), "kind",
                              join ? "join" : kind == TOKEN_METRICS ? "metrics" : "user",
                              "projects", p ? p : json_null(), "created",
                              (double)db_column_int64(st, 2) / 1000.0, "expires",
                              db_column_is_null(st, 3)
                                  ? json_null()
                                  : json_real((double)db_column_int64(st, 3) / 1000.0));
        if (t && join)
            json_object_set_new(t, "used", json_boolean(kind == TOKEN_JOIN_USED));
        json_array_append_new(list, t);
    }
    int rc = r == DB_DONE ? 0 : r;
    db_finalize(st);
    if (rc)
        json_decref(list);
    else
        *out = list;
    return rc;
}

int store_token_use_join(struct store *s, const char *hash, struct tide_err *err)
{
    struct db_stmt *st =
        db_prepare(store_db(s), "UPDATE tokens SET kind=?2 WHERE hash=?1 AND kind=?3", err);
    if (!st)
        return TIDE_EIO;
    db_bind_text(st, 1, hash);
    db_bind_int64(st, 2, TOKEN_JOIN_USED);
    db_bind_int64(st, 3, TOKEN_JOIN_BOUND);
    int rc = db_step_done(st, "use join token", err);
    if (!rc && db_changes(st) != 1)
        rc = tide_err_set(err, TIDE_EAUTH, NULL, "this join token was already used");
    db_finalize(st);
    return rc;
}

int store_tokens_revoke(struct store *s, const char *name, int *count, struct tide_err *err)
{
    *count = 0;
    struct db_stmt *st = db_prepare(
        store_db(s), "DELETE FROM tokens WHERE kind IN (?1, ?3, ?4, ?5) AND name=?2", err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, TOKEN_USER);
    db_bind_text(st, 2, name);
    db_bind_int64(st, 3, TOKEN_METRICS);
    db_bind_int64(st, 4, TOKEN_JOIN_BOUND);
    db_bind_int64(st, 5, TOKEN_JOIN_USED);
    int rc = db_step_done(st, "revoke token", err);
    if (!rc)
        *count = (int)db_changes(st);
    db_finalize(st);
    return rc;
}

int store_tokens_rotate(struct store *s, enum token_kind kind, int *count, struct tide_err *err)
{
    *count = 0;
    struct db_stmt *st = db_prepare(store_db(s), "UPDATE tokens SET kind=?2 WHERE kind=?1", err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, kind);
    db_bind_int64(st, 2, TOKEN_ROTATED);
    int rc = db_step_done(st, "rotate tokens", err);
    if (!rc)
        *count = (int)db_changes(st);
    db_finalize(st);
    return rc;
}
