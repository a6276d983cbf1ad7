/*
 * A small SQL connection layer under the store, so that store_*.c is written
 * once for SQLite (db_sqlite.c) and PostgreSQL (db_pg.c). A connection runs
 * scripts and statements; a statement is prepared from SQL with `?` or `?N`
 * placeholders (PostgreSQL's $N is made from them), bound, stepped row by
 * row, reset and finalized. Only src/store uses this header.
 *
 * Bound text is copied, so the caller's buffer may go once the bind returns.
 * Column text belongs to the statement and lasts until the next step, reset
 * or finalize. Errors fill err with "database: WHAT: <the database's message>".
 */
#ifndef TIDE_STORE_DB_H
#define TIDE_STORE_DB_H

#include <stdbool.h>
#include <stdint.h>

#include "common/tide_err.h"

enum db_dialect { DB_SQLITE, DB_POSTGRES };

/* db_step's answers besides errors (<0). */
enum { DB_DONE = 0, DB_ROW = 1 };

struct db;
struct db_stmt;

struct db_ops {
    void (*close)(struct db *db);
    int (*exec)(struct db *db, const char *sql, struct tide_err *err);
    /* Optional (NULL: exec of the SQL): a transaction's statements kept
     * prepared, for a backend whose exec parses each time. */
    int (*begin)(struct db *db, struct tide_err *err);
    int (*commit)(struct db *db, struct tide_err *err);
    void (*rollback)(struct db *db);
    struct db_stmt *(*prepare)(struct db *db, const char *sql, bool keep, struct tide_err *err);
    void (*bind_int64)(struct db_stmt *st, int i, int64_t v);
    void (*bind_text)(struct db_stmt *st, int i, const char *v);
    void (*bind_text_take)(struct db_stmt *st, int i, char *v);
    void (*bind_null)(struct db_stmt *st, int i);
    int (*step)(struct db_stmt *st, const char *what, struct tide_err *err);
    bool (*column_is_null)(struct db_stmt *st, int i);
    int64_t (*column_int64)(struct db_stmt *st, int i);
    const char *(*column_text)(struct db_stmt *st, int i);
    int64_t (*changes)(struct db_stmt *st);
    void (*reset)(struct db_stmt *st);
    void (*finalize)(struct db_stmt *st);
    bool (*lost)(struct db *db);
    int64_t (*last_insert_id)(struct db_stmt *st);
    int (*reconnect)(struct db *db, struct tide_err *err);
    void (*pin)(struct db *db);
    /* Optional (NULL: commit, and nothing to sync): see db_commit_deferred. */
    int (*commit_deferred)(struct db *db, struct tide_err *err);
    int (*sync)(struct db *db, struct tide_err *err);
    uint64_t (*sync_count)(struct db *db);
};

/* What every backend's connection and statement start with. */
struct db {
    const struct db_ops *ops;
    enum db_dialect dialect;
};

struct db_stmt {
    struct db *db;
};

/* Opens a SQLite file (created if needed; read_only: an existing one) or a
 * PostgreSQL connection from a libpq URL. *out is NULL on failure. */
int db_sqlite_open(const char *path, bool read_only, struct db **out, struct tide_err *err);
int db_pg_open(const char *url, const char *shown_url, struct db **out, struct tide_err *err);

/* Closes db (NULL is fine); its statements must be finalized first. */
void db_close(struct db *db);
enum db_dialect db_dialect(const struct db *db);

/* Runs sql: one or more statements separated by ';', no parameters. */
int db_exec(struct db *db, const char *sql, struct tide_err *err);

/* A transaction on db: SQLite takes its write lock at once (BEGIN IMMEDIATE).
 * A commit, and a write outside a transaction, returns once it is on disk. */
int db_begin(struct db *db, struct tide_err *err);
int db_commit(struct db *db, struct tide_err *err);
void db_rollback(struct db *db);

/* Commits without waiting for the disk: the transaction is visible at once
 * and on disk after the next db_sync (or any later commit's return), which
 * whoever acts on it outside the process must wait for. SQLite only (see
 * wal_sync.h); PostgreSQL commits as db_commit. */
int db_commit_deferred(struct db *db, struct tide_err *err);

/* Returns once every commit made on db so far is on disk; concurrent calls
 * share one flush. Thread-safe; call it without the locks committers take.
 * 0, or TIDE_EIO with err. */
int db_sync(struct db *db, struct tide_err *err);

/* Disk flushes db_sync and commits have made (0 where the backend does not
 * count them). */
uint64_t db_sync_count(struct db *db);

/* A new statement for sql; NULL with err on failure. keep: it will be
 * stepped many times (the database keeps its plan until finalized). */
struct db_stmt *db_prepare(struct db *db, const char *sql, struct tide_err *err);
struct db_stmt *db_prepare_kept(struct db *db, const char *sql, struct tide_err *err);

/* Binds parameter i (from 1). db_bind_text with NULL binds NULL. */
void db_bind_int64(struct db_stmt *st, int i, int64_t v);
void db_bind_text(struct db_stmt *st, int i, const char *v);
void db_bind_null(struct db_stmt *st, int i);
/* Binds text that the statement takes over (it frees v; NULL binds NULL):
 * no copy, for large values such as a job's spec. */
void db_bind_text_take(struct db_stmt *st, int i, char *v);

/* DB_ROW when a row is ready, DB_DONE when there are no more, <0 with err
 * ("database: what: ...") on failure. */
int db_step(struct db_stmt *st, const char *what, struct tide_err *err);

/* Steps a statement that returns no rows: 0 or <0 with err. */
int db_step_done(struct db_stmt *st, const char *what, struct tide_err *err);

/* Column i (from 0) of the current row. NULL reads 0 or NULL text. */
bool db_column_is_null(struct db_stmt *st, int i);
int64_t db_column_int64(struct db_stmt *st, int i);
const char *db_column_text(struct db_stmt *st, int i);

/* Rows changed by the last step of an INSERT, UPDATE or DELETE. */
int64_t db_changes(struct db_stmt *st);

/* SQLite only: the id its last INSERT made on st's connection (0 on
 * PostgreSQL, where an INSERT says RETURNING id). Cheaper than RETURNING on
 * SQLite, which runs a RETURNING clause through a temporary table. */
int64_t db_last_insert_id(struct db_stmt *st);

/* Ready to bind and step again (bindings cleared); NULL is fine. */
void db_reset(struct db_stmt *st);
void db_finalize(struct db_stmt *st);

/* True once the connection to the database server is gone (PostgreSQL);
 * nothing reopens it behind the caller's back. Always false for SQLite. */
bool db_lost(struct db *db);

/* Opens a lost connection again (kept statements are prepared again on
 * their next step); 0 when it was not lost. Refused (TIDE_EIO) once the
 * connection is pinned: a session that held a session lock must not come
 * back as a new session that looks as if it still held it. */
int db_reconnect(struct db *db, struct tide_err *err);

/* Pins db's session: from now on db_reconnect refuses. */
void db_pin(struct db *db);

#endif
