/*
 * Where a store test keeps its store: a fresh SQLite file in a temporary
 * directory, or, when TIDE_TEST_STORE_URL names a PostgreSQL database
 * (tests/e2e/with_pg.py sets it), that database emptied first. The same
 * tests run on both; SQLite-only ones ask test_store_target_is_pg.
 */
#ifndef TIDE_TEST_STORE_TARGET_H
#define TIDE_TEST_STORE_TARGET_H

#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

struct test_store_target {
    char dir[64];
    char path[1024]; /* what store_open is given: the file or the URL */
    bool pg;
};

/* Makes an empty target (exits the test on failure). */
void test_store_target_make(struct test_store_target *t);
/* Removes the target's files (SQLite) or tables (PostgreSQL). */
void test_store_target_remove(struct test_store_target *t);
/* store_open on the target, asserting success. */
struct store *test_store_target_open(const struct test_store_target *t);
bool test_store_target_is_pg(const struct test_store_target *t);

/* Inserts a pending job of project in queue "default" (submitted at 1 s);
 * returns its id. */
int64_t test_store_add_job(struct store *s, const char *project);

#endif
