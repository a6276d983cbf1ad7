/*
 * The usage ledger in the store (src/store/store_usage.c): a day's rows
 * saved and loaded back, and a save never lowering what a day holds (a
 * ledger's rows only grow; a smaller value is a stray row's, not the day's).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "store/store.h"
#include "store/store_usage.h"
#include "test_store_target.h"

struct fixture {
    struct test_store_target t;
    struct store *s;
    struct pool pool;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    test_store_target_make(&f->t);
    f->s = test_store_target_open(&f->t);
    pool_defaults(&f->pool);
    snprintf(f->pool.name, sizeof f->pool.name, "elastic");
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

/* Saves a ledger of one pool day and one use of day 7. */
static void save_day(struct fixture *f, int64_t node_ms, int64_t gpu_ms)
{
    struct usage_ledger l;
    usage_ledger_init(&l);
    assert_int_equal(usage_ledger_add_pool(&l, 7, 0, node_ms, gpu_ms), 0);
    assert_int_equal(usage_ledger_add_user_use(&l, 7, 0, "vision", "q", "ann", gpu_ms), 0);
    assert_int_equal(store_usage_save(f->s, &l, &f->pool, 1, NULL), 0);
    usage_ledger_release(&l);
}

static void test_a_smaller_value_does_not_replace_a_days_usage(void **state)
{
    struct fixture *f = *state;
    save_day(f, 50000, 49000);
    save_day(f, 60000, 59000); /* the day went on */
    save_day(f, 1000, 900);    /* a stray row of the same day */
    struct usage_ledger l;
    usage_ledger_init(&l);
    assert_int_equal(store_usage_load(f->s, &l, &f->pool, 1, NULL), 0);
    assert_int_equal(l.ndays, 1);
    assert_int_equal(l.days[0].node_ms, 60000);
    assert_int_equal(l.days[0].gpu_ms, 59000);
    assert_int_equal(l.nuses, 1);
    assert_int_equal(l.uses[0].gpu_ms, 59000);
    usage_ledger_release(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_smaller_value_does_not_replace_a_days_usage, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
