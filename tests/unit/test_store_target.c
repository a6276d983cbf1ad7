/* Test stores on SQLite or PostgreSQL (test_store_target.h). */
#include "test_store_target.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

/* Drops everything in the database's public schema. */
static void empty_pg(const char *url)
{
    PGconn *c = PQconnectdb(url);
    if (PQstatus(c) != CONNECTION_OK)
        fail_msg("cannot connect to %s: %s", url, PQerrorMessage(c));
    PGresult *r = PQexec(c, "SET client_min_messages = warning;"
                            "DROP SCHEMA public CASCADE; CREATE SCHEMA public;");
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("cannot empty %s: %s", url, PQresultErrorMessage(r));
    PQclear(r);
    PQfinish(c);
}

void test_store_target_make(struct test_store_target *t)
{
    memset(t, 0, sizeof *t);
    const char *url = getenv("TIDE_TEST_STORE_URL");
    if (url && url[0]) {
        t->pg = true;
        snprintf(t->path, sizeof t->path, "%s", url);
        empty_pg(url);
        return;
    }
    snprintf(t->dir, sizeof t->dir, "/tmp/tide-test-store-XXXXXX");
    assert_non_null(mkdtemp(t->dir));
    snprintf(t->path, sizeof t->path, "%s/tide.db", t->dir);
}

void test_store_target_remove(struct test_store_target *t)
{
    if (t->pg) {
        empty_pg(t->path);
        return;
    }
    const char *suffixes[] = {"", "-wal", "-shm"};
    char p[1100];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", t->path, suffixes[i]);
        unlink(p);
    }
    rmdir(t->dir);
}

struct store *test_store_target_open(const struct test_store_target *t)
{
    struct store *s = NULL;
    struct tide_err err = {0};
    if (store_open(t->path, &s, &err) != 0)
        fail_msg("store_open %s: %s", t->path, err.message);
    return s;
}

bool test_store_target_is_pg(const struct test_store_target *t)
{
    return t->pg;
}

int64_t test_store_add_job(struct store *s, const char *project)
{
    struct job *j = calloc(1, sizeof *j);
    assert_non_null(j);
    snprintf(j->project, sizeof j->project, "%s", project);
    snprintf(j->queue, sizeof j->queue, "default");
    json_t *spec = json_pack("{s:s}", "name", "t");
    assert_int_equal(store_job_insert(s, j, spec, "tester", 1000, NULL), 0);
    json_decref(spec);
    int64_t id = j->id;
    free(j);
    return id;
}
