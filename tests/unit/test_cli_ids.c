/* Unit tests for job id lists and ranges as `tide cancel` reads them (src/cli/id_list.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cli/id_list.h"

static struct cli_id_list l;
static struct tide_err err;

static int setup(void **state)
{
    (void)state;
    cli_id_list_init(&l);
    tide_err_clear(&err);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cli_id_list_release(&l);
    return 0;
}

static void assert_ids(const long long *want, size_t n)
{
    assert_int_equal(l.n, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(l.ids[i], want[i]);
}

static void assert_bad(const char *arg, const char *part)
{
    tide_err_clear(&err);
    int rc = cli_id_list_parse(&l, arg, &err);
    if (rc != TIDE_EINVAL || !strstr(err.message, part))
        print_error("'%s': rc %d, message '%s'\n", arg, rc, err.message);
    assert_int_equal(rc, TIDE_EINVAL);
    assert_non_null(strstr(err.message, part));
}

static void test_single_id_is_one_job(void **state)
{
    (void)state;
    assert_int_equal(cli_id_list_parse(&l, "45", &err), 0);
    assert_ids((long long[]){45}, 1);
}

static void test_range_includes_both_ends(void **state)
{
    (void)state;
    assert_int_equal(cli_id_list_parse(&l, "45-47", &err), 0);
    assert_ids((long long[]){45, 46, 47}, 3);
}

static void test_comma_list_mixes_ids_and_ranges(void **state)
{
    (void)state;
    assert_int_equal(cli_id_list_parse(&l, "50-52,45,7", &err), 0);
    assert_ids((long long[]){7, 45, 50, 51, 52}, 5);
}

static void test_repeats_across_arguments_name_a_job_once(void **state)
{
    (void)state;
    assert_int_equal(cli_id_list_parse(&l, "45-47", &err), 0);
    assert_int_equal(cli_id_list_parse(&l, "46,47,48", &err), 0);
    assert_ids((long long[]){45, 46, 47, 48}, 4);
    assert_true(cli_id_list_has(&l, 48));
    assert_false(cli_id_list_has(&l, 44));
}

static void test_range_of_one_is_one_job(void **state)
{
    (void)state;
    assert_int_equal(cli_id_list_parse(&l, "9-9", &err), 0);
    assert_ids((long long[]){9}, 1);
}

static void test_backwards_range_is_refused_with_the_right_order(void **state)
{
    (void)state;
    assert_bad("47-45", "write 45-47");
    assert_int_equal(l.n, 0);
}

static void test_malformed_items_are_refused_naming_them(void **state)
{
    (void)state;
    assert_bad("45-", "'45-' is not a range");
    assert_bad("-45", "'-45' is not a range");
    assert_bad("45-46-47", "'45-46-47' is not a range");
    assert_bad("abc", "'abc' is not a job id");
    assert_bad("0", "'0' is not a job id");
    assert_bad("4 5", "'4 5' is not a job id");
    assert_bad("+5", "'+5' is not a job id");
    assert_bad("45,,46", "empty item");
    assert_bad("45,", "empty item");
    assert_bad("", "empty");
    assert_bad("99999999999999999999", "not a job id");
}

static void test_huge_range_is_refused_instead_of_listed(void **state)
{
    (void)state;
    assert_bad("1-1000000", "more than 100000");
    assert_int_equal(l.n, 0);
    assert_int_equal(cli_id_list_parse(&l, "1-100000", &err), 0);
    assert_int_equal(l.n, 100000);
    assert_bad("200001-300000", "at most 100000");
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_single_id_is_one_job),
        T(test_range_includes_both_ends),
        T(test_comma_list_mixes_ids_and_ranges),
        T(test_repeats_across_arguments_name_a_job_once),
        T(test_range_of_one_is_one_job),
        T(test_backwards_range_is_refused_with_the_right_order),
        T(test_malformed_items_are_refused_naming_them),
        T(test_huge_range_is_refused_instead_of_listed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
