/* Token expiry, listing, revocation and node-bound join tokens' single use
 * in the SQLite store (store_tokens.h). */
#include "store/store_tokens.h"

#include <sqlite3.h>

#include "store/store.h"
#include "store/store_pools.h"

int store_tokens_init(struct store *s, struct tide_err *err)
{
    /* Databases made before expiry lack the column; adding it twice fails harmlessly. */
    sqlite3_exec(store_sqlite_db(s), "ALTER TABLE tokens ADD COLUMN expires_ms INTEGER", NULL, NULL,
                 NULL);
    return store_sqlite_exec(s, "CREATE INDEX IF NOT EXISTS tokens_by_name ON tokens(name);", err);
}

int store_token_set_expiry(struct store *s, const char *hash, int64_t expires_ms,
                           struct tide_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s), "UPDATE tokens SET expires_ms=?2 WHERE hash=?1", -1,
                           &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare token expiry");
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    if (expires_ms)
        sqlite3_bind_int64(st, 2, expires_ms);
    else
        sqlite3_bind_null(st, 2);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : store_sqlite_fail(s, err, "set token expiry");
    sqlite3_finalize(st);
    return rc;
}

int store_tokens_list(struct store *s, json_t **out, struct tide_err *err)
{
    *out = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s),
                           "SELECT name, projects, created_ms, expires_ms, kind FROM tokens"
                           " WHERE kind IN (?1, ?2, ?3, ?4) ORDER BY name, created_ms",
                           -1, &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare token list");
    sqlite3_bind_int(st, 1, TOKEN_USER);
    sqlite3_bind_int(st, 2, TOKEN_METRICS);
    sqlite3_bind_int(st, 3, TOKEN_JOIN_BOUND);
    sqlite3_bind_int(st, 4, TOKEN_JOIN_USED);
    json_t *list = json_array();
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        const char *projects = (const char *)sqlite3_column_text(st, 1);
        json_t *p = projects ? json_loads(projects, 0, NULL) : NULL;
        int kind = sqlite3_column_int(st, 4);
        bool join = kind == TOKEN_JOIN_BOUND || kind == TOKEN_JOIN_USED;
        json_t *t = json_pack("{s:s, s:s, s:o, s:f, s:o}", "name",
                              (const char *)sqlite3_column_text(st, 0), "kind",
                              join ? "join" : kind == TOKEN_METRICS ? "metrics" : "user",
                              "projects", p ? p : json_null(), "created",
                              (double)sqlite3_column_int64(st, 2) / 1000.0, "expires",
                              sqlite3_column_type(st, 3) == SQLITE_NULL
                                  ? json_null()
                                  : json_real((double)sqlite3_column_int64(st, 3) / 1000.0));
        if (t && join)
            json_object_set_new(t, "used", json_boolean(kind == TOKEN_JOIN_USED));
        json_array_append_new(list, t);
    }
    int rc = r == SQLITE_DONE ? 0 : store_sqlite_fail(s, err, "list tokens");
    sqlite3_finalize(st);
    if (rc)
        json_decref(list);
    else
        *out = list;
    return rc;
}

int store_token_use_join(struct store *s, const char *hash, struct tide_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s), "UPDATE tokens SET kind=?2 WHERE hash=?1 AND kind=?3",
                           -1, &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare join token use");
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, TOKEN_JOIN_USED);
    sqlite3_bind_int(st, 3, TOKEN_JOIN_BOUND);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : store_sqlite_fail(s, err, "use join token");
    if (!rc && sqlite3_changes(store_sqlite_db(s)) != 1)
        rc = tide_err_set(err, TIDE_EAUTH, NULL, "this join token was already used");
    sqlite3_finalize(st);
    return rc;
}

int store_tokens_revoke(struct store *s, const char *name, int *count, struct tide_err *err)
{
    *count = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s),
                           "DELETE FROM tokens WHERE kind IN (?1, ?3, ?4, ?5) AND name=?2", -1,
                           &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare token revoke");
    sqlite3_bind_int(st, 1, TOKEN_USER);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, TOKEN_METRICS);
    sqlite3_bind_int(st, 4, TOKEN_JOIN_BOUND);
    sqlite3_bind_int(st, 5, TOKEN_JOIN_USED);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : store_sqlite_fail(s, err, "revoke token");
    if (!rc)
        *count = sqlite3_changes(store_sqlite_db(s));
    sqlite3_finalize(st);
    return rc;
}
