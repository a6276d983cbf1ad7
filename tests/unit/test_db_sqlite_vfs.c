/*
 * The store's VFS (src/store/db_sqlite_vfs.c) against SQLite itself: a
 * commit another connection can read is in the file, whole, even when the
 * transaction spilled pages early and SQLite rewrote the frames' checksums
 * as it committed (the last rewrite has no write after it to carry it out).
 * As the store does, the WAL is not synced at a commit (synchronous=
 * NORMAL). The child installs its own WAL hook, which runs right after SQLite
 * publishes the commit (before the store's hook would flush anything): it
 * reads the rows through a second connection and dies there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/db_sqlite_vfs.h"

#define ROWS 2000

static char dir[64], path[128];

static int64_t count(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM t", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* In the child: what a reader sees once the commit is published; then the
 * process dies before anything else is written. */
static int read_then_die(void *ctx, sqlite3 *db, const char *name, int pages)
{
    (void)ctx;
    (void)db;
    (void)name;
    (void)pages;
    sqlite3 *r = NULL;
    if (sqlite3_open_v2(path, &r, SQLITE_OPEN_READONLY, db_sqlite_vfs(NULL)) != SQLITE_OK)
        _exit(3);
    _exit(count(r) == ROWS + 1 ? 0 : 4);
}

static void test_a_commit_a_reader_saw_is_whole_in_the_file(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tide-vfs-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.db", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        sqlite3 *w = NULL;
        if (sqlite3_open_v2(path, &w, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                            db_sqlite_vfs(NULL)) != SQLITE_OK ||
            sqlite3_exec(w,
                         "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=20;"
                         "CREATE TABLE t(id INTEGER PRIMARY KEY, body BLOB);"
                         "INSERT INTO t VALUES(0, zeroblob(100));",
                         NULL, NULL, NULL) != SQLITE_OK)
            _exit(2);
        sqlite3_wal_hook(w, read_then_die, NULL);
        /* more than the cache holds, then pages written before rewritten */
        sqlite3_exec(w,
                     "BEGIN;"
                     "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)"
                     " INSERT INTO t SELECT i, randomblob(300) FROM n;"
                     "UPDATE t SET body = randomblob(310) WHERE id <= 300;"
                     "COMMIT;",
                     NULL, NULL, NULL);
        _exit(5); /* the hook did not run */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0); /* the reader saw every row */
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, db_sqlite_vfs(NULL)), SQLITE_OK);
    int64_t n = count(db);
    sqlite3_close(db);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(n, ROWS + 1); /* what the reader saw survived */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_commit_a_reader_saw_is_whole_in_the_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
