/*
 * Commits that wait for the disk and commits that do not (src/store/
 * db_sqlite.c, wal_sync.c, db_sqlite_vfs.c) on a real SQLite file: a
 * deferred commit is visible at once to the file's other connection (its
 * WAL frames are in the file before SQLite publishes them), flushes are
 * counted where they happen, commits from several threads, each followed
 * by its db_sync, all survive a reopen, and one synced before a kill -9
 * survives it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/db.h"
#include "store/wal_sync.h"

static char dir[64], path[128];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tide-db-sync-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/t.db", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static struct db *open_db(bool read_only)
{
    struct db *db = NULL;
    struct tide_err err;
    assert_int_equal(db_sqlite_open(path, read_only, &db, &err), 0);
    return db;
}

static void exec_ok(struct db *db, const char *sql)
{
    struct tide_err err;
    tide_err_clear(&err);
    if (db_exec(db, sql, &err) != 0)
        fail_msg("%s: %s", sql, err.message);
}

/* Inserts rows of size bytes each in one transaction, deferred or not. */
static void insert_rows(struct db *db, int first, int rows, size_t size, bool deferred)
{
    struct tide_err err;
    char *text = malloc(size + 1);
    assert_non_null(text);
    memset(text, 'x', size);
    text[size] = '\0';
    assert_int_equal(db_begin(db, &err), 0);
    struct db_stmt *st = db_prepare(db, "INSERT INTO t(id, body) VALUES(?, ?)", &err);
    assert_non_null(st);
    for (int i = 0; i < rows; i++) {
        db_bind_int64(st, 1, first + i);
        db_bind_text(st, 2, text);
        assert_int_equal(db_step_done(st, "insert", &err), 0);
        db_reset(st);
    }
    db_finalize(st);
    assert_int_equal(deferred ? db_commit_deferred(db, &err) : db_commit(db, &err), 0);
    free(text);
}

static int64_t count_rows(struct db *db)
{
    struct tide_err err;
    struct db_stmt *st = db_prepare(db, "SELECT COUNT(*), COALESCE(SUM(LENGTH(body)), 0) FROM t", &err);
    assert_non_null(st);
    assert_int_equal(db_step(st, "count", &err), DB_ROW);
    int64_t n = db_column_int64(st, 0);
    db_finalize(st);
    return n;
}

static void test_a_deferred_commit_is_seen_at_once_by_the_other_connection(void **state)
{
    (void)state;
    struct db *w = open_db(false);
    exec_ok(w, "CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)");
    struct db *r = open_db(true);
    int64_t have = 0;
    /* small commits (one frame), a few pages, and more than the VFS
     * gathers in one write */
    const size_t sizes[] = {10, 3000, 9000, 40000, 200000};
    for (int round = 0; round < 20; round++) {
        size_t size = sizes[round % 5];
        int rows = round % 3 + 1;
        insert_rows(w, (int)have + 1, rows, size, true);
        have += rows;
        assert_int_equal(count_rows(r), have);
    }
    db_close(r);
    db_close(w);
}

static void test_only_a_plain_commit_flushes_before_it_returns(void **state)
{
    (void)state;
    struct db *w = open_db(false);
    exec_ok(w, "CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)");
    struct tide_err err;
    uint64_t before = db_sync_count(w);
    insert_rows(w, 1, 1, 10, false);
    assert_int_equal(db_sync_count(w), before + 1);
    insert_rows(w, 2, 1, 10, true);
    insert_rows(w, 3, 1, 10, true);
    assert_int_equal(db_sync_count(w), before + 1);
    /* one flush for both */
    assert_int_equal(db_sync(w, &err), 0);
    assert_int_equal(db_sync_count(w), before + 2);
    /* nothing new: nothing to flush */
    assert_int_equal(db_sync(w, &err), 0);
    assert_int_equal(db_sync_count(w), before + 2);
    /* a statement's own commit flushes too (the WAL hook is in place) */
    exec_ok(w, "INSERT INTO t(id, body) VALUES(4, 'x')");
    assert_int_equal(db_sync_count(w), before + 3);
    db_close(w);
    w = open_db(false);
    assert_int_equal(count_rows(w), 4);
    db_close(w);
}

/* A child commits (deferred), asks db_sync, and is killed without closing
 * anything: what it was told is on disk must be found by the next open.
 * The transaction outgrows a tiny page cache, so SQLite writes pages to
 * the WAL early, writes them again and, at the commit, rewrites the frames'
 * headers with no page after the last one (what the VFS must not keep). */
static void test_a_synced_deferred_commit_survives_a_kill(void **state)
{
    (void)state;
    struct db *w = open_db(false);
    exec_ok(w, "CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)");
    db_close(w);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct db *c = NULL;
        struct tide_err err;
        if (db_sqlite_open(path, false, &c, &err) != 0 ||
            db_exec(c, "PRAGMA cache_size=2", &err) != 0 || db_begin(c, &err) != 0 ||
            db_exec(c, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400)"
                       " INSERT INTO t(id, body) SELECT i, printf('%0500d', i) FROM n", &err) != 0 ||
            db_exec(c, "UPDATE t SET body = printf('%0600d', id)", &err) != 0 ||
            db_commit_deferred(c, &err) != 0 || db_sync(c, &err) != 0)
            _exit(3);
        raise(SIGKILL);
        _exit(4);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    w = open_db(false);
    assert_int_equal(count_rows(w), 400);
    struct tide_err err;
    struct db_stmt *st = db_prepare(w, "SELECT COUNT(*) FROM t WHERE LENGTH(body) = 600", &err);
    assert_non_null(st);
    assert_int_equal(db_step(st, "count", &err), DB_ROW);
    assert_int_equal(db_column_int64(st, 0), 400);
    db_finalize(st);
    db_close(w);
}

#define THREADS 4
#define COMMITS 40

static pthread_mutex_t writer_mu = PTHREAD_MUTEX_INITIALIZER;

struct worker {
    struct db *w;
    int index;
    int failures;
};

/* As the server's threads do: commit under the lock, flush outside it. */
static void *commit_and_sync(void *arg)
{
    struct worker *k = arg;
    for (int i = 0; i < COMMITS; i++) {
        pthread_mutex_lock(&writer_mu);
        insert_rows(k->w, k->index * COMMITS + i + 1, 1, 100, true);
        pthread_mutex_unlock(&writer_mu);
        struct tide_err err;
        if (db_sync(k->w, &err) != 0)
            k->failures++;
    }
    return NULL;
}

static void test_commits_of_several_threads_each_synced_all_survive_a_reopen(void **state)
{
    (void)state;
    struct db *w = open_db(false);
    exec_ok(w, "CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)");
    uint64_t before = db_sync_count(w);
    pthread_t threads[THREADS];
    struct worker workers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (struct worker){.w = w, .index = i};
        assert_int_equal(pthread_create(&threads[i], NULL, commit_and_sync, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(workers[i].failures, 0);
    }
    /* never more flushes than asked for */
    assert_true(db_sync_count(w) - before <= THREADS * COMMITS);
    db_close(w);
    w = open_db(false);
    assert_int_equal(count_rows(w), THREADS * COMMITS);
    db_close(w);
}

static void test_a_failed_wal_write_fails_every_later_flush(void **state)
{
    (void)state;
    struct db *db = open_db(false);
    exec_ok(db, "CREATE TABLE t(v)");
    db_close(db);
    struct wal_sync *w = wal_sync_new(path);
    assert_non_null(w);
    struct tide_err err;
    tide_err_clear(&err);
    wal_sync_note_write();
    assert_int_equal(wal_sync_flush(w, &err), 0);
    wal_sync_fail(w, ENOSPC);
    for (int i = 0; i < 2; i++) { /* for good, whether anything was written since or not */
        wal_sync_note_write();
        assert_int_equal(wal_sync_flush(w, &err), TIDE_EIO);
        assert_non_null(strstr(err.message, strerror(ENOSPC)));
    }
    assert_int_equal(wal_sync_flush(w, &err), TIDE_EIO);
    wal_sync_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_deferred_commit_is_seen_at_once_by_the_other_connection,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_only_a_plain_commit_flushes_before_it_returns, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_commits_of_several_threads_each_synced_all_survive_a_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_wal_write_fails_every_later_flush, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_synced_deferred_commit_survives_a_kill, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
