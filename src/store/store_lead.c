/*
 * Leadership in the store (store_lead.h). PostgreSQL: the leader lock is a
 * session advisory lock taken on the write connection, so only the session
 * that holds it writes, and losing that connection loses the lock (once the
 * lock is taken the connection is pinned: never reopened). A follower's lost
 * connection is reopened when it next tries to lead. SQLite: always granted.
 */
#include "store/store_lead.h"

#include <stdio.h>
#include <string.h>

#include "store/store_db.h"

/* pg_try_advisory_lock's key for leadership ("tide" and 1). */
#define LEAD_LOCK_KEY "1953063013001"

int store_lead_init(struct store *s, struct tide_err *err)
{
    /* The leader table is made by the schema's migrations (store_schema.c). */
    (void)s;
    (void)err;
    return 0;
}

/* Bumps the epoch and records url: 0 with *epoch, or <0. */
static int bump_epoch(struct store *s, const char *url, int64_t now_ms, int64_t *epoch,
                      struct tide_err *err)
{
    struct db_stmt *st =
        db_prepare(store_db(s),
                   "INSERT INTO leader(id, epoch, url, since_ms) VALUES (1, 1, ?1, ?2)"
                   " ON CONFLICT(id) DO UPDATE SET epoch = leader.epoch + 1,"
                   " url = ?1, since_ms = ?2 RETURNING epoch",
                   err);
    if (!st)
        return TIDE_EIO;
    db_bind_text(st, 1, url ? url : "");
    db_bind_int64(st, 2, now_ms);
    int r = db_step(st, "take leadership", err), rc = 0;
    if (r == DB_ROW)
        *epoch = db_column_int64(st, 0);
    else
        rc = r < 0 ? r : tide_err_set(err, TIDE_EIO, NULL, "database: take leadership: no epoch");
    db_finalize(st);
    return rc;
}

/* 1 when this session now holds the leader lock, 0 when another does, <0. */
static int take_lock(struct store *s, struct tide_err *err)
{
    struct db_stmt *st =
        db_prepare(store_db(s), "SELECT pg_try_advisory_lock(" LEAD_LOCK_KEY ")", err);
    if (!st)
        return TIDE_EIO;
    int r = db_step(st, "take the leader lock", err);
    int rc = r < 0 ? r : r == DB_ROW && !strcmp(db_column_text(st, 0), "t");
    db_finalize(st);
    return rc;
}

int store_try_lead(struct store *s, const char *url, int64_t now_ms, int64_t *epoch,
                   struct tide_err *err)
{
    struct db *db = store_db(s);
    if (db_dialect(db) == DB_SQLITE) { /* one server per data directory */
        int rc = bump_epoch(s, url, now_ms, epoch, err);
        return rc ? rc : 1;
    }
    /* A follower may come back on a new session; a leader's lost session
     * stays lost (its connection is pinned). */
    int got = db_reconnect(db, err);
    if (!got)
        got = take_lock(s, err);
    if (got <= 0)
        return got;
    /* A session that breaks before the epoch is committed loses the lock
     * with it and fails what follows (it is never reopened by itself), so
     * this server has not led: it stays free to reconnect and try again.
     * Pinned only once it leads: from then on, losing this session loses
     * the lead (pinned before, a break here left it unable to ever lead). */
    int rc = db_begin(db, err);
    if (!rc)
        rc = bump_epoch(s, url, now_ms, epoch, err);
    if (!rc)
        rc = db_commit(db, err);
    if (rc) {
        db_rollback(db);
        db_exec(db, "SELECT pg_advisory_unlock(" LEAD_LOCK_KEY ")", NULL);
        return rc;
    }
    db_pin(db);
    return 1;
}

int store_leader_get(struct store *s, struct store_leader *out, struct tide_err *err)
{
    memset(out, 0, sizeof *out);
    struct db_stmt *st =
        db_prepare(store_db(s), "SELECT epoch, url, since_ms FROM leader WHERE id = 1", err);
    if (!st)
        return TIDE_EIO;
    int r = db_step(st, "read leader", err), rc = 0;
    if (r == DB_ROW) {
        out->epoch = db_column_int64(st, 0);
        const char *url = db_column_text(st, 1);
        snprintf(out->url, sizeof out->url, "%s", url ? url : "");
        out->since_ms = db_column_int64(st, 2);
    } else if (r == DB_DONE) {
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "no server has led this store yet");
    } else {
        rc = r;
    }
    db_finalize(st);
    return rc;
}

bool store_lead_lost(struct store *s)
{
    return db_lost(store_db(s));
}
