/* The connection layer's calls (db.h), handed to the backend's db_ops. */
#include "store/db.h"

#include <stddef.h>

void db_close(struct db *db)
{
    if (db)
        db->ops->close(db);
}

enum db_dialect db_dialect(const struct db *db)
{
    return db->dialect;
}

int db_exec(struct db *db, const char *sql, struct tide_err *err)
{
    return db->ops->exec(db, sql, err);
}

int db_begin(struct db *db, struct tide_err *err)
{
    if (db->ops->begin)
        return db->ops->begin(db, err);
    return db_exec(db, db->dialect == DB_SQLITE ? "BEGIN IMMEDIATE" : "BEGIN", err);
}

int db_commit(struct db *db, struct tide_err *err)
{
    if (db->ops->commit)
        return db->ops->commit(db, err);
    return db_exec(db, "COMMIT", err);
}

int db_commit_deferred(struct db *db, struct tide_err *err)
{
    if (db->ops->commit_deferred)
        return db->ops->commit_deferred(db, err);
    return db_commit(db, err);
}

int db_sync(struct db *db, struct tide_err *err)
{
    return db->ops->sync ? db->ops->sync(db, err) : 0;
}

uint64_t db_sync_count(struct db *db)
{
    return db->ops->sync_count ? db->ops->sync_count(db) : 0;
}

void db_rollback(struct db *db)
{
    if (db->ops->rollback)
        db->ops->rollback(db);
    else
        db_exec(db, "ROLLBACK", NULL);
}

struct db_stmt *db_prepare(struct db *db, const char *sql, struct tide_err *err)
{
    return db->ops->prepare(db, sql, false, err);
}

struct db_stmt *db_prepare_kept(struct db *db, const char *sql, struct tide_err *err)
{
    return db->ops->prepare(db, sql, true, err);
}

void db_bind_int64(struct db_stmt *st, int i, int64_t v)
{
    st->db->ops->bind_int64(st, i, v);
}

void db_bind_text(struct db_stmt *st, int i, const char *v)
{
    if (v)
        st->db->ops->bind_text(st, i, v);
    else
        st->db->ops->bind_null(st, i);
}

void db_bind_null(struct db_stmt *st, int i)
{
    st->db->ops->bind_null(st, i);
}

void db_bind_text_take(struct db_stmt *st, int i, char *v)
{
    if (v)
        st->db->ops->bind_text_take(st, i, v);
    else
        st->db->ops->bind_null(st, i);
}

int db_step(struct db_stmt *st, const char *what, struct tide_err *err)
{
    return st->db->ops->step(st, what, err);
}

int db_step_done(struct db_stmt *st, const char *what, struct tide_err *err)
{
    int r = db_step(st, what, err);
    return r < 0 ? r : 0;
}

bool db_column_is_null(struct db_stmt *st, int i)
{
    return st->db->ops->column_is_null(st, i);
}

int64_t db_column_int64(struct db_stmt *st, int i)
{
    return st->db->ops->column_int64(st, i);
}

const char *db_column_text(struct db_stmt *st, int i)
{
    return st->db->ops->column_text(st, i);
}

int64_t db_changes(struct db_stmt *st)
{
    return st->db->ops->changes(st);
}

void db_reset(struct db_stmt *st)
{
    if (st)
        st->db->ops->reset(st);
}

void db_finalize(struct db_stmt *st)
{
    if (st)
        st->db->ops->finalize(st);
}

int64_t db_last_insert_id(struct db_stmt *st)
{
    return st->db->ops->last_insert_id(st);
}

bool db_lost(struct db *db)
{
    return db->ops->lost(db);
}

int db_reconnect(struct db *db, struct tide_err *err)
{
    return db->ops->reconnect(db, err);
}

void db_pin(struct db *db)
{
    db->ops->pin(db);
}
