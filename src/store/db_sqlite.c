/*
 * SQLite under the connection layer (db.h): one database file in WAL mode.
 * The writer runs at synchronous=NORMAL and flushes the WAL itself
 * (wal_sync.h): a commit is on disk before it returns, so it survives a
 * crash of the process and of the machine, unless db_commit_deferred made
 * it; then db_sync does. Connections are FULLMUTEX, so a read-only one may
 * be shared by threads (WAL lets it read committed data while the writer
 * writes).
 *
 * Files are opened through SQLite's "unix-excl" VFS (under db_sqlite_vfs.h,
 * which gathers a transaction's WAL writes into one): the first lock takes a
 * POSIX write lock on the file for the whole process, held until its last
 * connection closes, so no other process can open the database while this
 * one has it, and the connections of this process coordinate in memory: no
 * fcntl lock per transaction or read, and the WAL index lives in the heap
 * (no -shm file). A read-only connection is opened read-write with
 * query_only: SQLite's read-only open would leave the process regime and
 * take (and release) real POSIX locks, which belong to the process and
 * would drop the writer's.
 */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/db.h"
#include "store/db_sqlite_vfs.h"
#include "store/wal_sync.h"

/* BEGIN IMMEDIATE, COMMIT and ROLLBACK, prepared at their first use:
 * sqlite3_exec would parse them for every transaction. */
enum { TX_BEGIN, TX_COMMIT, TX_ROLLBACK, TX_COUNT };

/* WAL frames after which a commit checkpoints (SQLite's default). */
#define CHECKPOINT_FRAMES 1000

struct db_sqlite {
    struct db base;
    sqlite3 *h;
    sqlite3_stmt *tx[TX_COUNT];
    struct wal_sync *wal; /* a writable file's: its commits' syncs; else NULL */
    bool deferring;       /* the commit under way is db_commit_deferred's */
    char sync_error[sizeof((struct tide_err *)0)->message]; /* why the last commit's sync failed */
};

struct stmt_sqlite {
    struct db_stmt base;
    sqlite3_stmt *st;
};

static sqlite3 *handle(struct db *db)
{
    return ((struct db_sqlite *)db)->h;
}

static sqlite3_stmt *stmt(struct db_stmt *st)
{
    return ((struct stmt_sqlite *)st)->st;
}

static int fail(struct db *db, struct tide_err *err, const char *what)
{
    struct db_sqlite *d = (struct db_sqlite *)db;
    if (d->sync_error[0]) { /* on_commit's own words say more than "disk I/O error" */
        int rc = tide_err_set(err, TIDE_EIO, NULL, "%s", d->sync_error);
        d->sync_error[0] = '\0';
        return rc;
    }
    return tide_err_set(err, TIDE_EIO, NULL, "database: %s: %s", what, sqlite3_errmsg(handle(db)));
}

static void sq_close(struct db *db)
{
    struct db_sqlite *d = (struct db_sqlite *)db;
    for (int i = 0; i < TX_COUNT; i++)
        sqlite3_finalize(d->tx[i]);
    sqlite3_close(d->h);
    wal_sync_free(d->wal);
    free(d);
}

/* Runs transaction statement which (prepared once, then kept). */
static int sq_tx(struct db *db, int which, struct tide_err *err)
{
    static const char *const sql[TX_COUNT] = {"BEGIN IMMEDIATE", "COMMIT", "ROLLBACK"};
    static const char *const what[TX_COUNT] = {"begin", "commit", "rollback"};
    struct db_sqlite *d = (struct db_sqlite *)db;
    if (!d->tx[which] && sqlite3_prepare_v3(d->h, sql[which], -1, SQLITE_PREPARE_PERSISTENT,
                                            &d->tx[which], NULL) != SQLITE_OK) {
        sqlite3_finalize(d->tx[which]);
        d->tx[which] = NULL;
        return fail(db, err, what[which]);
    }
    d->sync_error[0] = '\0';
    int r = sqlite3_step(d->tx[which]);
    int rc = r == SQLITE_DONE ? 0 : fail(db, err, what[which]);
    sqlite3_reset(d->tx[which]);
    return rc;
}

static int sq_begin(struct db *db, struct tide_err *err)
{
    return sq_tx(db, TX_BEGIN, err);
}

/* On disk before it returns, with every commit before it: also a commit
 * that wrote nothing (no WAL hook then), which callers may use as a
 * barrier before acting outside the process. */
static int sq_commit(struct db *db, struct tide_err *err)
{
    int rc = sq_tx(db, TX_COMMIT, err);
    struct db_sqlite *d = (struct db_sqlite *)db;
    return rc == 0 && d->wal ? wal_sync_flush(d->wal, err) : rc;
}

static int sq_commit_deferred(struct db *db, struct tide_err *err)
{
    struct db_sqlite *d = (struct db_sqlite *)db;
    d->deferring = true;
    int rc = sq_tx(db, TX_COMMIT, err);
    d->deferring = false;
    return rc;
}

static int sq_sync(struct db *db, struct tide_err *err)
{
    struct db_sqlite *d = (struct db_sqlite *)db;
    return d->wal ? wal_sync_flush(d->wal, err) : 0;
}

static uint64_t sq_sync_count(struct db *db)
{
    struct db_sqlite *d = (struct db_sqlite *)db;
    return d->wal ? wal_sync_count(d->wal) : 0;
}

/* sqlite3_wal_hook: every commit of a writable connection (an explicit
 * one, a statement's own, a script's) lands here once its frames are
 * written and published. What the VFS still gathers goes to the file (the
 * frames' rewritten headers), and the commit is on disk before the
 * statement returns unless db_commit_deferred made it; then the WAL
 * checkpoints as SQLite's own hook would, which this one replaces. An
 * error fails the statement, though its commit stands (it may not survive
 * the machine). */
static int on_commit(void *arg, sqlite3 *h, const char *schema, int frames)
{
    struct db_sqlite *d = arg;
    sqlite3_file *wal = NULL;
    if (sqlite3_file_control(h, schema, SQLITE_FCNTL_JOURNAL_POINTER, &wal) == SQLITE_OK) {
        int rc = db_sqlite_vfs_flush_wal(wal);
        if (rc != SQLITE_OK) {
            /* the commit is visible but its frames' headers may not be in
             * the file: recovery would stop there, and lose what follows */
            wal_sync_fail(d->wal, EIO);
            snprintf(d->sync_error, sizeof d->sync_error,
                     "database: cannot write the WAL's frames; what is committed from now on may "
                     "be lost with the machine: restart the server");
            return rc;
        }
    }
    if (!d->deferring) {
        struct tide_err err;
        if (wal_sync_flush(d->wal, &err) != 0) {
            snprintf(d->sync_error, sizeof d->sync_error, "%s", err.message);
            return SQLITE_IOERR_FSYNC;
        }
    }
    if (frames >= CHECKPOINT_FRAMES)
        sqlite3_wal_checkpoint_v2(h, schema, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return SQLITE_OK;
}

static void sq_rollback(struct db *db)
{
    struct tide_err ignored;
    sq_tx(db, TX_ROLLBACK, &ignored);
}

static int sq_exec(struct db *db, const char *sql, struct tide_err *err)
{
    struct db_sqlite *d = (struct db_sqlite *)db;
    d->sync_error[0] = '\0';
    char *msg = NULL;
    if (sqlite3_exec(handle(db), sql, NULL, NULL, &msg) != SQLITE_OK) {
        int rc = tide_err_set(err, TIDE_EIO, NULL, "database: %s",
                              d->sync_error[0] ? d->sync_error : msg ? msg : "error");
        sqlite3_free(msg);
        return rc;
    }
    return 0;
}

static struct db_stmt *sq_prepare(struct db *db, const char *sql, bool keep, struct tide_err *err)
{
    struct stmt_sqlite *s = calloc(1, sizeof *s);
    if (!s) {
        tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    if (sqlite3_prepare_v3(handle(db), sql, -1, keep ? SQLITE_PREPARE_PERSISTENT : 0, &s->st,
                           NULL) != SQLITE_OK) {
        fail(db, err, "prepare");
        sqlite3_finalize(s->st);
        free(s);
        return NULL;
    }
    s->base.db = db;
    return &s->base;
}

static void sq_bind_int64(struct db_stmt *st, int i, int64_t v)
{
    sqlite3_bind_int64(stmt(st), i, v);
}

static void sq_bind_text(struct db_stmt *st, int i, const char *v)
{
    sqlite3_bind_text(stmt(st), i, v, -1, SQLITE_TRANSIENT);
}

static void sq_bind_text_take(struct db_stmt *st, int i, char *v)
{
    sqlite3_bind_text(stmt(st), i, v, -1, free); /* frees v even on failure */
}

static void sq_bind_null(struct db_stmt *st, int i)
{
    sqlite3_bind_null(stmt(st), i);
}

static int sq_step(struct db_stmt *st, const char *what, struct tide_err *err)
{
    ((struct db_sqlite *)st->db)->sync_error[0] = '\0';
    int r = sqlite3_step(stmt(st));
    if (r == SQLITE_ROW)
        return DB_ROW;
    if (r == SQLITE_DONE)
        return DB_DONE;
    return fail(st->db, err, what);
}

static bool sq_column_is_null(struct db_stmt *st, int i)
{
    return sqlite3_column_type(stmt(st), i) == SQLITE_NULL;
}

static int64_t sq_column_int64(struct db_stmt *st, int i)
{
    return sqlite3_column_int64(stmt(st), i);
}

static const char *sq_column_text(struct db_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(stmt(st), i);
}

static int64_t sq_changes(struct db_stmt *st)
{
    return sqlite3_changes(handle(st->db));
}

static void sq_reset(struct db_stmt *st)
{
    sqlite3_reset(stmt(st));
    sqlite3_clear_bindings(stmt(st));
}

static void sq_finalize(struct db_stmt *st)
{
    sqlite3_finalize(stmt(st));
    free(st);
}

static bool sq_lost(struct db *db)
{
    (void)db;
    return false;
}

static int64_t sq_last_insert_id(struct db_stmt *st)
{
    return sqlite3_last_insert_rowid(handle(st->db));
}

static int sq_reconnect(struct db *db, struct tide_err *err)
{
    (void)db;
    (void)err;
    return 0;
}

static void sq_pin(struct db *db)
{
    (void)db;
}

static const struct db_ops sqlite_ops = {
    .close = sq_close,
    .exec = sq_exec,
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .prepare = sq_prepare,
    .bind_int64 = sq_bind_int64,
    .bind_text = sq_bind_text,
    .bind_text_take = sq_bind_text_take,
    .bind_null = sq_bind_null,
    .step = sq_step,
    .column_is_null = sq_column_is_null,
    .column_int64 = sq_column_int64,
    .column_text = sq_column_text,
    .changes = sq_changes,
    .reset = sq_reset,
    .finalize = sq_finalize,
    .lost = sq_lost,
    .last_insert_id = sq_last_insert_id,
    .reconnect = sq_reconnect,
    .pin = sq_pin,
    .commit_deferred = sq_commit_deferred,
    .sync = sq_sync,
    .sync_count = sq_sync_count,
};

/* The database holds tokens' hashes and jobs' env secrets: only the server's
 * user may read it. SQLite gives its -wal file the database's mode, so
 * creating it 0600 covers it; older databases are tightened too (and an
 * older tide's -shm until it is removed at open). */
static int restrict_db_files(const char *path, struct tide_err *err)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || fchmod(fd, 0600) != 0) {
        int rc =
            tide_err_set(err, TIDE_EIO, NULL, "cannot open database %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return rc;
    }
    close(fd);
    static const char *const companions[] = {"-wal", "-shm"};
    for (size_t i = 0; i < sizeof companions / sizeof companions[0]; i++) {
        char other[4096];
        if ((size_t)snprintf(other, sizeof other, "%s%s", path, companions[i]) < sizeof other &&
            chmod(other, 0600) != 0 && errno != ENOENT)
            return tide_err_set(err, TIDE_EIO, NULL, "cannot restrict %s: %s", other,
                                strerror(errno));
    }
    return 0;
}

/* What an open failure says: a database another process holds gets its own words. */
static int open_failed(struct db_sqlite *d, const char *path, bool read_only, int code,
                       const char *msg, struct tide_err *err)
{
    int rc;
    if ((code & 0xff) == SQLITE_BUSY)
        rc = tide_err_set(err, TIDE_EIO, NULL,
                          "database %s is in use by another process (tide's server holds its "
                          "SQLite file alone: stop the other one first)",
                          path);
    else
        rc = tide_err_set(err, TIDE_EIO, NULL, "cannot open database %s%s: %s", path,
                          read_only ? " for reading" : "", msg);
    sq_close(&d->base);
    return rc;
}

/* Runs sql at open; SQLite's code (SQLITE_OK on success), its message in msg. */
static int open_exec(struct db_sqlite *d, const char *sql, char *msg, size_t size)
{
    char *m = NULL;
    int r = sqlite3_exec(d->h, sql, NULL, NULL, &m);
    if (r != SQLITE_OK)
        snprintf(msg, size, "%s", m ? m : sqlite3_errstr(r));
    sqlite3_free(m);
    return r;
}

int db_sqlite_open(const char *path, bool read_only, struct db **out, struct tide_err *err)
{
    *out = NULL;
    bool memory = strcmp(path, ":memory:") == 0;
    if (!read_only && !memory) {
        int rc = restrict_db_files(path, err);
        if (rc)
            return rc;
    }
    struct db_sqlite *d = calloc(1, sizeof *d);
    if (!d)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    d->base.ops = &sqlite_ops;
    d->base.dialect = DB_SQLITE;
    const char *vfs = memory ? NULL : db_sqlite_vfs(err);
    if (!memory && !vfs) {
        free(d);
        return TIDE_EIO;
    }
    int flags = SQLITE_OPEN_READWRITE | (read_only ? 0 : SQLITE_OPEN_CREATE) | SQLITE_OPEN_FULLMUTEX;
    int r = sqlite3_open_v2(path, &d->h, flags, vfs);
    if (r != SQLITE_OK)
        return open_failed(d, path, read_only, r, d->h ? sqlite3_errmsg(d->h) : "out of memory",
                           err);
    sqlite3_busy_timeout(d->h, 5000);
    char msg[256];
    r = open_exec(d,
                  read_only ? "PRAGMA query_only=ON; SELECT COUNT(*) FROM sqlite_master;"
                            : "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                              " PRAGMA foreign_keys=ON;",
                  msg, sizeof msg);
    if (r != SQLITE_OK)
        return open_failed(d, path, read_only, r, msg, err);
    if (!read_only && !memory) {
        /* commits sync through on_commit: at synchronous=NORMAL SQLite
         * itself syncs the WAL only to checkpoint it */
        d->wal = wal_sync_new(path);
        if (!d->wal)
            return open_failed(d, path, read_only, SQLITE_NOMEM, "out of memory", err);
        sqlite3_wal_hook(d->h, on_commit, d);
        r = open_exec(d, "PRAGMA synchronous=NORMAL;", msg, sizeof msg);
        if (r != SQLITE_OK)
            return open_failed(d, path, read_only, r, msg, err);
        /* An older tide's shared WAL index: nobody else can use it now. */
        char shm[4096];
        if ((size_t)snprintf(shm, sizeof shm, "%s-shm", path) < sizeof shm)
            unlink(shm);
    }
    *out = &d->base;
    return 0;
}
