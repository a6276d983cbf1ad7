/*
 * store_jobs_list's pages (src/store/store_sqlite.c) on a real SQLite file:
 * newest first, after_id continues below a job, filters and project limits
 * apply within a page, and rows are read on the read-only connection (a
 * transaction not yet committed is not seen).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/store.h"
#include "test_store_target.h"

#define NJOBS 10

struct fixture {
    struct test_store_target t;
    struct store *s;
    int64_t ids[NJOBS]; /* oldest first; even ones in project "vision" */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    test_store_target_make(&f->t);
    f->s = test_store_target_open(&f->t);
    for (int i = 0; i < NJOBS; i++)
        f->ids[i] = test_store_add_job(f->s, i % 2 ? "speech" : "vision");
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

/* The ids store_jobs_list gives for flt, into ids (at most NJOBS + 1). */
static size_t list_ids(struct store *s, const struct job_filter *flt, int64_t *ids)
{
    json_t *jobs = NULL;
    assert_int_equal(store_jobs_list(s, flt, &jobs, NULL), 0);
    size_t n = json_array_size(jobs);
    assert_true(n <= NJOBS + 1);
    for (size_t i = 0; i < n; i++)
        ids[i] = json_integer_value(json_object_get(json_array_get(jobs, i), "id"));
    json_decref(jobs);
    return n;
}

static void test_pages_after_an_id_continue_below_it_newest_first(void **state)
{
    struct fixture *f = *state;
    int64_t got[NJOBS + 1];
    struct job_filter flt = {.limit = 4};
    assert_int_equal(list_ids(f->s, &flt, got), 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(got[i], f->ids[NJOBS - 1 - i]);
    flt.after_id = got[3];
    assert_int_equal(list_ids(f->s, &flt, got), 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(got[i], f->ids[NJOBS - 5 - i]);
    flt.after_id = got[3];
    assert_int_equal(list_ids(f->s, &flt, got), 2);
    assert_int_equal(got[1], f->ids[0]);
    flt.after_id = f->ids[0];
    assert_int_equal(list_ids(f->s, &flt, got), 0);
}

static void test_project_limits_and_filters_apply_within_a_page(void **state)
{
    struct fixture *f = *state;
    int64_t got[NJOBS + 1];
    json_t *vision = json_pack("[s]", "vision");
    struct job_filter flt = {.limit = 2, .projects = vision, .after_id = f->ids[7]};
    assert_int_equal(list_ids(f->s, &flt, got), 2);
    assert_int_equal(got[0], f->ids[6]);
    assert_int_equal(got[1], f->ids[4]);
    json_decref(vision);
    struct job_filter by_project = {.limit = NJOBS, .project = "speech", .after_id = f->ids[3]};
    assert_int_equal(list_ids(f->s, &by_project, got), 1);
    assert_int_equal(got[0], f->ids[1]);
}

static void test_the_listing_sees_only_committed_jobs(void **state)
{
    struct fixture *f = *state;
    int64_t got[NJOBS + 1];
    struct job_filter flt = {.limit = NJOBS + 1};
    assert_int_equal(store_begin(f->s, NULL), 0);
    test_store_add_job(f->s, "vision");
    assert_int_equal(list_ids(f->s, &flt, got), NJOBS);
    assert_int_equal(store_commit(f->s, NULL), 0);
    assert_int_equal(list_ids(f->s, &flt, got), NJOBS + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pages_after_an_id_continue_below_it_newest_first,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_project_limits_and_filters_apply_within_a_page, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_the_listing_sees_only_committed_jobs, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
