/*
 * Commits made visible under the caller's lock and put on disk by a flush
 * after it (store_commit_nosync, store_flush: src/store/store_open.c,
 * db_sqlite.c). On SQLite, power cuts are simulated: a VFS over the default
 * one, and fdatasync wrapped at link time (-Wl,--wrap=fdatasync, for the
 * flush's own descriptor on the WAL), copy a file's content to
 * FILE.durable whenever it is synced; a power cut is a store opened on
 * those copies, where whatever was written but never synced is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/store.h"
#include "test_store_target.h"

/* ---- the simulated disk: what was synced, per file ---- */

/* Copies path's content to path.durable (what a power cut leaves). */
static void keep_durable(const char *path)
{
    char to[1100];
    snprintf(to, sizeof to, "%s.durable", path);
    int in = open(path, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return;
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(out >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        assert_int_equal(write(out, buf, (size_t)n), n);
    close(in);
    close(out);
}

int __real_fdatasync(int fd);
int __wrap_fdatasync(int fd);
int __wrap_fdatasync(int fd)
{
    char link[64], path[1024];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n > 0) {
        path[n] = '\0';
        keep_durable(path);
    }
    return __real_fdatasync(fd);
}

struct lossy_file {
    sqlite3_file base;
    sqlite3_file *real;
    char path[1024];
};

static sqlite3_vfs lossy_vfs, *real_vfs;

static sqlite3_file *real_of(sqlite3_file *f)
{
    return ((struct lossy_file *)f)->real;
}

static int l_close(sqlite3_file *f)
{
    sqlite3_file *r = real_of(f);
    int rc = r->pMethods->xClose(r);
    free(r);
    return rc;
}

static int l_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o)
{
    return real_of(f)->pMethods->xRead(real_of(f), b, n, o);
}

static int l_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
    return real_of(f)->pMethods->xWrite(real_of(f), b, n, o);
}

static int l_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return real_of(f)->pMethods->xTruncate(real_of(f), size);
}

static int l_sync(sqlite3_file *f, int flags)
{
    int rc = real_of(f)->pMethods->xSync(real_of(f), flags);
    if (rc == SQLITE_OK && ((struct lossy_file *)f)->path[0])
        keep_durable(((struct lossy_file *)f)->path);
    return rc;
}

static int l_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return real_of(f)->pMethods->xFileSize(real_of(f), size);
}

static int l_lock(sqlite3_file *f, int l)
{
    return real_of(f)->pMethods->xLock(real_of(f), l);
}

static int l_unlock(sqlite3_file *f, int l)
{
    return real_of(f)->pMethods->xUnlock(real_of(f), l);
}

static int l_reserved(sqlite3_file *f, int *out)
{
    return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out);
}

static int l_control(sqlite3_file *f, int op, void *arg)
{
    return real_of(f)->pMethods->xFileControl(real_of(f), op, arg);
}

static int l_sector(sqlite3_file *f)
{
    return real_of(f)->pMethods->xSectorSize(real_of(f));
}

static int l_device(sqlite3_file *f)
{
    return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f));
}

static int l_shm_map(sqlite3_file *f, int i, int size, int extend, void volatile **p)
{
    return real_of(f)->pMethods->xShmMap(real_of(f), i, size, extend, p);
}

static int l_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    return real_of(f)->pMethods->xShmLock(real_of(f), offset, n, flags);
}

static void l_shm_barrier(sqlite3_file *f)
{
    real_of(f)->pMethods->xShmBarrier(real_of(f));
}

static int l_shm_unmap(sqlite3_file *f, int del)
{
    return real_of(f)->pMethods->xShmUnmap(real_of(f), del);
}

static int l_fetch(sqlite3_file *f, sqlite3_int64 o, int n, void **p)
{
    *p = NULL; /* no memory-mapped reads: every read goes through xRead */
    (void)f, (void)o, (void)n;
    return SQLITE_OK;
}

static int l_unfetch(sqlite3_file *f, sqlite3_int64 o, void *p)
{
    (void)f, (void)o, (void)p;
    return SQLITE_OK;
}

static const sqlite3_io_methods lossy_io = {
    3,        l_close,  l_read,     l_write,        l_truncate,  l_sync,  l_size,
    l_lock,   l_unlock, l_reserved, l_control,      l_sector,    l_device, l_shm_map,
    l_shm_lock, l_shm_barrier, l_shm_unmap, l_fetch, l_unfetch,
};

static int l_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags,
                  int *out_flags)
{
    (void)vfs;
    struct lossy_file *lf = (struct lossy_file *)f;
    lf->base.pMethods = NULL;
    lf->real = calloc(1, (size_t)real_vfs->szOsFile);
    if (!lf->real)
        return SQLITE_NOMEM;
    int rc = real_vfs->xOpen(real_vfs, name, lf->real, flags, out_flags);
    if (rc != SQLITE_OK) {
        if (lf->real->pMethods)
            lf->real->pMethods->xClose(lf->real);
        free(lf->real);
        return rc;
    }
    snprintf(lf->path, sizeof lf->path, "%s", name ? name : "");
    lf->base.pMethods = &lossy_io;
    return SQLITE_OK;
}

static int group_setup(void **state)
{
    (void)state;
    real_vfs = sqlite3_vfs_find(NULL);
    lossy_vfs = *real_vfs;
    lossy_vfs.zName = "tide-test-lossy";
    lossy_vfs.szOsFile = (int)sizeof(struct lossy_file);
    lossy_vfs.xOpen = l_open;
    lossy_vfs.pNext = NULL;
    return sqlite3_vfs_register(&lossy_vfs, 1) == SQLITE_OK ? 0 : -1;
}

/* ---- fixture ---- */

struct fixture {
    struct test_store_target t;
    struct store *s;
    char cut_dir[64]; /* after a power cut: the durable copies */
    struct store *after;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    test_store_target_make(&f->t);
    f->s = test_store_target_open(&f->t);
    *state = f;
    return 0;
}

static void remove_files(const char *dir)
{
    static const char *const names[] = {"tide.db", "tide.db-wal", "tide.db-shm"};
    char p[1200];
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
        snprintf(p, sizeof p, "%s/%s.durable", dir, names[i]);
        unlink(p);
    }
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    store_close(f->after);
    store_close(f->s);
    if (f->cut_dir[0]) {
        remove_files(f->cut_dir);
        rmdir(f->cut_dir);
    }
    if (!test_store_target_is_pg(&f->t))
        remove_files(f->t.dir);
    test_store_target_remove(&f->t);
    free(f);
    return 0;
}

static void copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(out >= 0);
    char buf[65536];
    ssize_t n;
    while (in >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        assert_int_equal(write(out, buf, (size_t)n), n);
    if (in >= 0)
        close(in);
    close(out);
}

/* The machine loses power now: a store opened on what f->s's files had
 * synced (f->after; the store f->s keeps running on the originals). */
static struct store *power_cut(struct fixture *f)
{
    store_close(f->after);
    f->after = NULL;
    if (!f->cut_dir[0]) {
        snprintf(f->cut_dir, sizeof f->cut_dir, "/tmp/tide-test-cut-XXXXXX");
        assert_non_null(mkdtemp(f->cut_dir));
    }
    remove_files(f->cut_dir);
    static const char *const names[] = {"tide.db", "tide.db-wal"};
    for (size_t i = 0; i < 2; i++) {
        char from[1200], to[1200];
        snprintf(from, sizeof from, "%s/%s.durable", f->t.dir, names[i]);
        snprintf(to, sizeof to, "%s/%s", f->cut_dir, names[i]);
        copy_file(from, to); /* never synced: an empty file */
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/tide.db", f->cut_dir);
    struct tide_err err = {0};
    if (store_open(path, &f->after, &err) != 0)
        fail_msg("store_open after the power cut: %s", err.message);
    return f->after;
}

static bool has_job(struct store *s, int64_t id)
{
    enum job_state state;
    int rc = store_job_state(s, id, &state, NULL, NULL);
    assert_true(rc == 0 || rc == TIDE_ENOENT);
    return rc == 0;
}

/* One job in its own transaction, committed without a flush. */
static int64_t add_job_nosync(struct store *s, uint64_t *seq)
{
    assert_int_equal(store_begin(s, NULL), 0);
    int64_t id = test_store_add_job(s, "p");
    assert_int_equal(store_commit_nosync(s, seq, NULL), 0);
    return id;
}

/* ---- tests ---- */

static void test_commits_are_numbered_in_order_and_visible_before_any_flush(void **state)
{
    struct fixture *f = *state;
    uint64_t before = store_committed(f->s), a, b;
    int64_t ja = add_job_nosync(f->s, &a);
    int64_t jb = add_job_nosync(f->s, &b);
    assert_int_equal(a, before + 1);
    assert_int_equal(b, before + 2);
    assert_int_equal(store_committed(f->s), b);
    assert_true(has_job(f->s, ja) && has_job(f->s, jb));
}

static void test_one_flush_covers_every_commit_before_it(void **state)
{
    struct fixture *f = *state;
    uint64_t a, b, c;
    add_job_nosync(f->s, &a);
    add_job_nosync(f->s, &b);
    add_job_nosync(f->s, &c);
    uint64_t syncs = store_flush_count(f->s);
    assert_int_equal(store_flush(f->s, a, NULL), 0);
    assert_true(store_flushed(f->s) >= c);
    /* the later commits went with that flush: no sync of their own */
    assert_int_equal(store_flush(f->s, b, NULL), 0);
    assert_int_equal(store_flush(f->s, c, NULL), 0);
    uint64_t made = store_flush_count(f->s) - syncs;
    assert_int_equal(made, test_store_target_is_pg(&f->t) ? 0 : 1);
}

static void test_a_commit_leaves_nothing_to_flush_once_durable(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(store_begin(f->s, NULL), 0);
    test_store_add_job(f->s, "p");
    assert_int_equal(store_commit(f->s, NULL), 0);
    assert_true(store_flushed(f->s) >= store_committed(f->s));
    uint64_t syncs = store_flush_count(f->s);
    assert_int_equal(store_flush(f->s, store_committed(f->s), NULL), 0);
    assert_int_equal(store_flush_count(f->s), syncs);
}

static void test_a_statement_outside_a_transaction_is_counted_as_a_commit(void **state)
{
    struct fixture *f = *state;
    if (test_store_target_is_pg(&f->t))
        skip(); /* durable when it returns: nothing to flush, no count needed */
    uint64_t before = store_committed(f->s);
    test_store_add_job(f->s, "p"); /* autocommit */
    assert_int_equal(store_committed(f->s), before + 1);
}

static void test_a_power_cut_keeps_flushed_commits_and_loses_unflushed_ones(void **state)
{
    struct fixture *f = *state;
    if (test_store_target_is_pg(&f->t))
        skip(); /* PostgreSQL's commits are durable when they return */
    uint64_t a, b;
    int64_t ja = add_job_nosync(f->s, &a);
    assert_int_equal(store_flush(f->s, a, NULL), 0);
    int64_t jb = add_job_nosync(f->s, &b);
    struct store *cut = power_cut(f);
    assert_true(has_job(cut, ja));
    /* committed (and visible) but not flushed: SQLite did not sync it, so
     * it is gone; were it there, commits would still sync on their own */
    assert_false(has_job(cut, jb));
    assert_int_equal(store_flush(f->s, b, NULL), 0);
    cut = power_cut(f);
    assert_true(has_job(cut, ja) && has_job(cut, jb));
}

static void test_flushed_commits_survive_a_checkpoint_and_the_wal_restarting(void **state)
{
    struct fixture *f = *state;
    if (test_store_target_is_pg(&f->t))
        skip();
    /* enough commits for SQLite's auto-checkpoint, then the WAL restarts
     * from its start with new salts: later flushes must still cover */
    int64_t last = 0;
    uint64_t seq = 0;
    for (int i = 0; i < 1500; i++) {
        last = add_job_nosync(f->s, &seq);
        if (i % 100 == 0)
            assert_int_equal(store_flush(f->s, seq, NULL), 0);
    }
    assert_int_equal(store_flush(f->s, seq, NULL), 0);
    int64_t unflushed = add_job_nosync(f->s, &seq);
    struct store *cut = power_cut(f);
    assert_true(has_job(cut, last));
    assert_true(has_job(cut, 1));
    assert_false(has_job(cut, unflushed));
}

static void test_closing_the_store_flushes_what_nobody_flushed(void **state)
{
    struct fixture *f = *state;
    if (test_store_target_is_pg(&f->t))
        skip();
    /* another connection stays open, so SQLite's own checkpoint at the
     * last close does not run: only the store's flush can save the job */
    struct store *other = test_store_target_open(&f->t);
    int64_t id = test_store_add_job(f->s, "p"); /* autocommit, not flushed */
    store_close(f->s);
    f->s = NULL;
    struct store *cut = power_cut(f);
    assert_true(has_job(cut, id));
    store_close(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_commits_are_numbered_in_order_and_visible_before_any_flush, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_flush_covers_every_commit_before_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_commit_leaves_nothing_to_flush_once_durable,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_statement_outside_a_transaction_is_counted_as_a_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_power_cut_keeps_flushed_commits_and_loses_unflushed_ones, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_flushed_commits_survive_a_checkpoint_and_the_wal_restarting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_closing_the_store_flushes_what_nobody_flushed, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
