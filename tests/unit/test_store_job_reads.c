/*
 * The store's hot paths with kept statements (src/store/store_jobs.c,
 * db_sqlite.c): job updates, the job, spec, run and queue reads and token
 * lookups give each call its own answer however often the statement is
 * reused, and transactions begun and ended through kept statements commit
 * and roll back as before.
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
#include "test_store_target.h"

struct fixture {
    struct test_store_target t;
    struct store *s;
    int64_t a, b;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    test_store_target_make(&f->t);
    f->s = test_store_target_open(&f->t);
    f->a = test_store_add_job(f->s, "vision");
    f->b = test_store_add_job(f->s, "speech");
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

static void update(struct store *s, int64_t id, enum job_state state, int64_t start_ms)
{
    struct job_update u = {.job_id = id, .state = state, .reason = job_state_name(state),
                           .attempt = -1, .node_id = -1, .exit_code = -2, .signal = -1,
                           .start_ms = start_ms, .cancel_requested = -1};
    assert_int_equal(store_job_update(s, &u, NULL), 0);
}

static const char *state_of(struct store *s, int64_t id, char *buf, size_t len)
{
    json_t *job = NULL;
    assert_int_equal(store_job_get(s, id, &job, NULL), 0);
    snprintf(buf, len, "%s", json_string_value(json_object_get(job, "state")));
    json_decref(job);
    return buf;
}

static void test_updates_and_reads_reusing_their_statements_answer_each_call(void **state)
{
    struct fixture *f = *state;
    char buf[32];
    for (int round = 0; round < 3; round++) {
        update(f->s, f->a, round % 2 ? JOB_RUNNING : JOB_STARTING, 0);
        update(f->s, f->b, round % 2 ? JOB_STARTING : JOB_RUNNING, 0);
        assert_string_equal(state_of(f->s, f->a, buf, sizeof buf),
                            round % 2 ? "running" : "starting");
        assert_string_equal(state_of(f->s, f->b, buf, sizeof buf),
                            round % 2 ? "starting" : "running");
    }
}

static void test_update_of_an_unknown_job_is_not_found_and_the_next_one_works(void **state)
{
    struct fixture *f = *state;
    struct job_update u = {.job_id = 999999, .state = JOB_RUNNING, .reason = "x", .attempt = -1,
                           .node_id = -1, .exit_code = -2, .signal = -1, .cancel_requested = -1};
    struct tide_err err;
    assert_int_equal(store_job_update(f->s, &u, &err), TIDE_ENOENT);
    update(f->s, f->a, JOB_RUNNING, 0);
    char buf[32];
    assert_string_equal(state_of(f->s, f->a, buf, sizeof buf), "running");
}

static void test_spec_read_gives_the_stored_spec_of_each_job(void **state)
{
    struct fixture *f = *state;
    json_t *spec = NULL;
    assert_int_equal(store_job_spec(f->s, f->a, &spec, NULL), 0);
    assert_string_equal(json_string_value(json_object_get(spec, "name")), "t");
    json_decref(spec);
    assert_int_equal(store_job_spec(f->s, f->b, &spec, NULL), 0);
    assert_non_null(spec);
    json_decref(spec);
    struct tide_err err;
    assert_int_equal(store_job_spec(f->s, 424242, &spec, &err), TIDE_ENOENT);
    assert_null(spec);
}

static void test_run_read_gives_project_queue_and_the_start_once_running(void **state)
{
    struct fixture *f = *state;
    char project[TIDE_NAME_MAX], queue[TIDE_NAME_MAX];
    int64_t start_ms = -1;
    assert_int_equal(store_job_ran(f->s, f->a, project, queue, &start_ms, NULL), 0);
    assert_string_equal(project, "vision");
    assert_string_equal(queue, "default");
    assert_int_equal(start_ms, 0); /* never ran */
    update(f->s, f->b, JOB_RUNNING, 5000);
    assert_int_equal(store_job_ran(f->s, f->b, project, queue, &start_ms, NULL), 0);
    assert_string_equal(project, "speech");
    assert_int_equal(start_ms, 5000);
    struct tide_err err;
    assert_int_equal(store_job_ran(f->s, 424242, project, queue, &start_ms, &err), TIDE_ENOENT);
    assert_int_equal(store_job_queue(f->s, f->b, queue, NULL), 0);
    assert_string_equal(queue, "default");
}

static void test_transactions_on_kept_statements_commit_and_roll_back(void **state)
{
    struct fixture *f = *state;
    char buf[32];
    for (int round = 0; round < 3; round++) { /* each begin and commit reuses its statement */
        assert_int_equal(store_begin(f->s, NULL), 0);
        update(f->s, f->a, round % 2 ? JOB_STARTING : JOB_RUNNING, 0);
        assert_int_equal(store_commit(f->s, NULL), 0);
        assert_string_equal(state_of(f->s, f->a, buf, sizeof buf),
                            round % 2 ? "starting" : "running");
    }
    assert_int_equal(store_begin(f->s, NULL), 0);
    update(f->s, f->a, JOB_FAILED, 0);
    store_rollback(f->s);
    assert_string_equal(state_of(f->s, f->a, buf, sizeof buf), "running");
    /* SQLite: a commit with no transaction fails, naming the database, and
     * the next transaction works (PostgreSQL only warns) */
    struct tide_err err;
    tide_err_clear(&err);
    if (!test_store_target_is_pg(&f->t)) {
        assert_int_not_equal(store_commit(f->s, &err), 0);
        assert_non_null(strstr(err.message, "database: commit"));
    }
    assert_int_equal(store_begin(f->s, NULL), 0);
    update(f->s, f->a, JOB_STARTING, 0);
    assert_int_equal(store_commit(f->s, NULL), 0);
    assert_string_equal(state_of(f->s, f->a, buf, sizeof buf), "starting");
}

static void test_token_lookups_reusing_their_statement_answer_each_call(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(store_token_put(f->s, "hash-one", TOKEN_ADMIN, "one", NULL, 0, 1000, NULL), 0);
    assert_int_equal(store_token_put(f->s, "hash-two", TOKEN_NODE, "two", NULL, 7, 1000, NULL), 0);
    for (int round = 0; round < 2; round++) {
        struct token_info info;
        assert_int_equal(store_token_get(f->s, "hash-two", &info, NULL), 0);
        assert_string_equal(info.name, "two");
        assert_int_equal(info.node_id, 7);
        token_info_release(&info);
        assert_int_equal(store_token_get(f->s, "hash-one", &info, NULL), 0);
        assert_string_equal(info.name, "one");
        token_info_release(&info);
        struct tide_err err;
        assert_int_equal(store_token_get(f->s, "hash-none", &info, &err), TIDE_ENOENT);
        token_info_release(&info);
    }
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_updates_and_reads_reusing_their_statements_answer_each_call),
        T(test_update_of_an_unknown_job_is_not_found_and_the_next_one_works),
        T(test_spec_read_gives_the_stored_spec_of_each_job),
        T(test_run_read_gives_project_queue_and_the_start_once_running),
        T(test_transactions_on_kept_statements_commit_and_roll_back),
        T(test_token_lookups_reusing_their_statement_answer_each_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
