/*
 * store_jobs_insert_many and store_events_add_many (src/store/store_jobs.c,
 * store_events.c) on SQLite and PostgreSQL: rows in multi-row statements of
 * every chunk size, ids increasing and never one in use (also after a
 * reopen and after single inserts), each row's own fields read back, each
 * job its own event, and a rolled-back batch leaving nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/store.h"
#include "store/store_events.h"
#include "test_store_target.h"

/* 64 + 64 + 16 + 4 + 1 + 1: every chunk size and a remainder. */
#define NROWS 150

struct fixture {
    struct test_store_target t;
    struct store *s;
    struct job jobs[2];
    char names[NROWS][32];
    struct store_new_job rows[NROWS];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    test_store_target_make(&f->t);
    f->s = test_store_target_open(&f->t);
    snprintf(f->jobs[0].project, sizeof f->jobs[0].project, "vision");
    snprintf(f->jobs[0].queue, sizeof f->jobs[0].queue, "default");
    f->jobs[0].priority = 3;
    snprintf(f->jobs[1].project, sizeof f->jobs[1].project, "speech");
    snprintf(f->jobs[1].queue, sizeof f->jobs[1].queue, "batch");
    f->jobs[1].priority = -2;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    store_close(f->s);
    test_store_target_remove(&f->t);
    free(f);
    return 0;
}

/* n rows: even ones of jobs[0] owned by alice, odd ones of jobs[1] by bob. */
static void make_rows(struct fixture *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(f->names[i], sizeof f->names[i], "task[%zu]", i);
        f->rows[i].job = &f->jobs[i % 2];
        f->rows[i].name = f->names[i];
        f->rows[i].owner = i % 2 ? "bob" : "alice";
        char *spec = NULL;
        assert_true(asprintf(&spec, "{\"name\": \"%s\", \"command\": [\"true\"], \"n\": %zu}",
                             f->names[i], i) > 0);
        f->rows[i].spec = spec;
        f->rows[i].id = 0;
    }
}

static void test_many_jobs_and_their_events_are_each_stored_with_their_own_fields(void **state)
{
    struct fixture *f = *state;
    int64_t before = test_store_add_job(f->s, "vision");
    make_rows(f, NROWS);
    assert_int_equal(store_begin(f->s, NULL), 0);
    assert_int_equal(store_jobs_insert_many(f->s, f->rows, NROWS, 7000, NULL), 0);
    struct store_new_event events[NROWS];
    for (size_t i = 0; i < NROWS; i++) {
        assert_null(f->rows[i].spec); /* taken */
        assert_true(f->rows[i].id > (i ? f->rows[i - 1].id : before));
        events[i].job_id = f->rows[i].id;
        events[i].project = f->jobs[i % 2].project;
        events[i].message = i % 2 ? "odd" : "even";
    }
    assert_int_equal(store_events_add_many(f->s, 7000, "job_submitted", events, NROWS, NULL), 0);
    assert_int_equal(store_commit(f->s, NULL), 0);
    for (size_t i = 0; i < NROWS; i++) {
        json_t *job = NULL;
        assert_int_equal(store_job_get(f->s, f->rows[i].id, &job, NULL), 0);
        assert_string_equal(json_string_value(json_object_get(job, "name")), f->names[i]);
        assert_string_equal(json_string_value(json_object_get(job, "project")),
                            f->jobs[i % 2].project);
        assert_string_equal(json_string_value(json_object_get(job, "queue")),
                            f->jobs[i % 2].queue);
        assert_int_equal(json_integer_value(json_object_get(job, "priority")),
                         f->jobs[i % 2].priority);
        assert_string_equal(json_string_value(json_object_get(job, "owner")),
                            i % 2 ? "bob" : "alice");
        assert_string_equal(json_string_value(json_object_get(job, "state")), "pending");
        json_t *spec = json_object_get(job, "spec");
        assert_int_equal(json_integer_value(json_object_get(spec, "n")), (json_int_t)i);
        json_decref(job);
        struct event_filter flt = {0};
        flt.job_id = f->rows[i].id;
        json_t *evs = NULL;
        bool more;
        assert_int_equal(store_events_query(f->s, &flt, &evs, &more, NULL), 0);
        assert_int_equal(json_array_size(evs), 1);
        json_t *e = json_array_get(evs, 0);
        assert_string_equal(json_string_value(json_object_get(e, "kind")), "job_submitted");
        assert_string_equal(json_string_value(json_object_get(e, "message")),
                            i % 2 ? "odd" : "even");
        assert_string_equal(json_string_value(json_object_get(e, "project")),
                            f->jobs[i % 2].project);
        assert_true(json_is_null(json_object_get(e, "node")));
        json_decref(evs);
    }
    /* A single insert after them, and a batch after a reopen, get new ids. */
    int64_t after = test_store_add_job(f->s, "vision");
    assert_true(after > f->rows[NROWS - 1].id);
    int64_t last = f->rows[NROWS - 1].id;
    store_close(f->s);
    f->s = test_store_target_open(&f->t);
    make_rows(f, 3);
    assert_int_equal(store_begin(f->s, NULL), 0);
    assert_int_equal(store_jobs_insert_many(f->s, f->rows, 3, 8000, NULL), 0);
    assert_int_equal(store_commit(f->s, NULL), 0);
    assert_true(f->rows[0].id > after && f->rows[0].id > last);
    assert_true(f->rows[1].id > f->rows[0].id && f->rows[2].id > f->rows[1].id);
}

static void test_a_rolled_back_batch_leaves_no_job_and_no_event(void **state)
{
    struct fixture *f = *state;
    make_rows(f, 70);
    assert_int_equal(store_begin(f->s, NULL), 0);
    assert_int_equal(store_jobs_insert_many(f->s, f->rows, 70, 7000, NULL), 0);
    struct store_new_event e = {.job_id = f->rows[0].id, .project = "vision", .message = "x"};
    assert_int_equal(store_events_add_many(f->s, 7000, "job_submitted", &e, 1, NULL), 0);
    store_rollback(f->s);
    json_t *job = NULL;
    struct tide_err err = {0};
    assert_int_equal(store_job_get(f->s, f->rows[0].id, &job, &err), TIDE_ENOENT);
    struct event_filter flt = {0};
    json_t *evs = NULL;
    bool more;
    assert_int_equal(store_events_query(f->s, &flt, &evs, &more, NULL), 0);
    assert_int_equal(json_array_size(evs), 0);
    json_decref(evs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_many_jobs_and_their_events_are_each_stored_with_their_own_fields, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_a_rolled_back_batch_leaves_no_job_and_no_event,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
