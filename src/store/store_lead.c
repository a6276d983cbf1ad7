/* Leadership in the SQLite store (store_lead.h): always granted. */
#include "store/store_lead.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "store/store_pools.h"

int store_lead_init(struct store *s, struct tide_err *err)
{
    return store_sqlite_exec(s,
                             "CREATE TABLE IF NOT EXISTS leader(id INTEGER PRIMARY KEY CHECK (id = 1),"
                             "  epoch INTEGER NOT NULL, url TEXT NOT NULL, since_ms INTEGER NOT NULL);",
                             err);
}

int store_try_lead(struct store *s, const char *url, int64_t now_ms, int64_t *epoch,
                   struct tide_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s),
                           "INSERT INTO leader(id, epoch, url, since_ms) VALUES (1, 1, ?1, ?2)"
                           " ON CONFLICT(id) DO UPDATE SET epoch = epoch + 1, url = ?1, since_ms = ?2"
                           " RETURNING epoch",
                           -1, &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare leader");
    sqlite3_bind_text(st, 1, url ? url : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now_ms);
    int rc = 1;
    if (sqlite3_step(st) == SQLITE_ROW)
        *epoch = sqlite3_column_int64(st, 0);
    else
        rc = store_sqlite_fail(s, err, "take leadership");
    sqlite3_finalize(st);
    return rc;
}

int store_leader_get(struct store *s, struct store_leader *out, struct tide_err *err)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s), "SELECT epoch, url, since_ms FROM leader WHERE id = 1",
                           -1, &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare leader lookup");
    int r = sqlite3_step(st), rc = 0;
    if (r == SQLITE_ROW) {
        out->epoch = sqlite3_column_int64(st, 0);
        const char *url = (const char *)sqlite3_column_text(st, 1);
        snprintf(out->url, sizeof out->url, "%s", url ? url : "");
        out->since_ms = sqlite3_column_int64(st, 2);
    } else if (r == SQLITE_DONE) {
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "no server has led this store yet");
    } else {
        rc = store_sqlite_fail(s, err, "read leader");
    }
    sqlite3_finalize(st);
    return rc;
}

bool store_lead_lost(struct store *s)
{
    (void)s;
    return false;
}
