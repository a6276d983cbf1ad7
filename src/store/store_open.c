/*
 * Opening and closing a store: a path is a SQLite file, a postgres:// or
 * postgresql:// URL a PostgreSQL database. Either way the store holds a
 * connection for writes (and reads under the server's lock) and a second
 * one for listings read without the lock, and its schema is migrated to
 * this binary's version before anything else runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store/store_db.h"

struct store {
    struct db *db;
    struct db *reader;
    struct db_stmt *cached[STORE_STMT_COUNT]; /* on db, prepared once */
};

bool store_is_url(const char *url_or_path)
{
    return !strncmp(url_or_path, "postgres://", 11) || !strncmp(url_or_path, "postgresql://", 13);
}

/* Copies src[0..n) to out at *o, within size. */
static void put(char *out, size_t size, size_t *o, const char *src, size_t n)
{
    while (n-- && *o + 1 < size)
        out[(*o)++] = *src++;
    out[*o] = '\0';
}

void store_url_shown(const char *url_or_path, char *out, size_t size)
{
    if (!size)
        return;
    out[0] = '\0';
    size_t o = 0;
    if (!store_is_url(url_or_path)) {
        put(out, size, &o, url_or_path, strlen(url_or_path));
        return;
    }
    const char *p = strstr(url_or_path, "://") + 3;
    put(out, size, &o, url_or_path, (size_t)(p - url_or_path));
    /* user:password@ before the host: the password goes */
    size_t hostpart = strcspn(p, "/?");
    const char *at = memrchr(p, '@', hostpart);
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon) {
            put(out, size, &o, p, (size_t)(colon - p) + 1);
            put(out, size, &o, "***", 3);
            p = at;
        }
    }
    /* ?password=...&...: the value goes */
    while (*p) {
        size_t n = strcspn(p, "?&");
        put(out, size, &o, p, n);
        p += n;
        if (!*p)
            break;
        put(out, size, &o, p, 1);
        p++;
        if (!strncmp(p, "password=", 9)) {
            put(out, size, &o, p, 9);
            put(out, size, &o, "***", 3);
            p += 9 + strcspn(p + 9, "&");
        }
    }
}

int store_open(const char *url_or_path, struct store **out, struct tide_err *err)
{
    *out = NULL;
    if (!url_or_path || !url_or_path[0])
        return tide_err_set(err, TIDE_EINVAL, "store", "store: no database path or URL given");
    struct store *s = calloc(1, sizeof *s);
    if (!s)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    char shown[512];
    store_url_shown(url_or_path, shown, sizeof shown);
    bool pg = store_is_url(url_or_path);
    int rc = pg ? db_pg_open(url_or_path, shown, &s->db, err)
                : db_sqlite_open(url_or_path, false, &s->db, err);
    if (!rc)
        rc = store_schema_migrate(s, err);
    /* SQLite's reader opens after the writer made the file and switched it to WAL. */
    if (!rc)
        rc = pg ? db_pg_open(url_or_path, shown, &s->reader, err)
                : db_sqlite_open(url_or_path, true, &s->reader, err);
    if (rc) {
        store_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

struct db *store_db(struct store *s)
{
    return s->db;
}

struct db *store_reader(struct store *s)
{
    return s->reader;
}

struct db_stmt *store_cached(struct store *s, enum store_stmt_slot slot, const char *sql,
                             struct tide_err *err)
{
    struct db_stmt *st = s->cached[slot];
    if (st) {
        db_reset(st);
        return st;
    }
    st = db_prepare_kept(s->db, sql, err);
    s->cached[slot] = st;
    return st;
}

struct db_stmt *store_cached_multirow(struct store *s, enum store_stmt_slot slot, const char *head,
                                      const char *row, size_t rows, struct tide_err *err)
{
    if (s->cached[slot])
        return store_cached(s, slot, NULL, err);
    char *sql = store_multirow_sql(head, row, rows);
    if (!sql) {
        tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    struct db_stmt *st = store_cached(s, slot, sql, err);
    free(sql);
    return st;
}

const size_t store_multirow_sizes[4] = {64, 16, 4, 1};

size_t store_multirow_chunk(size_t n, int *index)
{
    int i = 0;
    while (i < 3 && store_multirow_sizes[i] > n)
        i++;
    *index = i;
    return store_multirow_sizes[i];
}

char *store_multirow_sql(const char *head, const char *row, size_t rows)
{
    size_t h = strlen(head), r = strlen(row);
    char *sql = malloc(h + rows * (r + 3) + 1);
    if (!sql)
        return NULL;
    memcpy(sql, head, h);
    size_t o = h;
    for (size_t i = 0; i < rows; i++) {
        if (i)
            sql[o++] = ',';
        sql[o++] = '(';
        memcpy(sql + o, row, r);
        o += r;
        sql[o++] = ')';
    }
    sql[o] = '\0';
    return sql;
}

void store_close(struct store *s)
{
    if (!s)
        return;
    for (int i = 0; i < STORE_STMT_COUNT; i++)
        db_finalize(s->cached[i]);
    db_close(s->reader);
    db_close(s->db);
    free(s);
}

int store_begin(struct store *s, struct tide_err *err)
{
    return db_begin(s->db, err);
}

int store_commit(struct store *s, struct tide_err *err)
{
    return db_commit(s->db, err);
}

int store_commit_deferred(struct store *s, struct tide_err *err)
{
    return db_commit_deferred(s->db, err);
}

int store_sync(struct store *s, struct tide_err *err)
{
    return db_sync(s->db, err);
}

uint64_t store_sync_count(struct store *s)
{
    return db_sync_count(s->db);
}

void store_rollback(struct store *s)
{
    db_rollback(s->db);
}
