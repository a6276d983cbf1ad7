/* Unit tests for the CLI's server URL list (src/cli/server_list.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "cli/server_list.h"

static struct cli_server_list l;
static struct tide_err err;

static int teardown(void **state)
{
    (void)state;
    cli_server_list_release(&l);
    tide_err_clear(&err);
    return 0;
}

static void test_one_url_is_a_list_of_one(void **state)
{
    (void)state;
    assert_int_equal(cli_server_list_parse(&l, "http://127.0.0.1:8080", "--server", &err), 0);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.urls[0], "http://127.0.0.1:8080");
}

static void test_commas_split_urls_in_order_and_spaces_and_slashes_go(void **state)
{
    (void)state;
    assert_int_equal(cli_server_list_parse(&l, " http://a:1/ , https://b:2//,http://c", "--server",
                                           &err),
                     0);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.urls[0], "http://a:1");
    assert_string_equal(l.urls[1], "https://b:2");
    assert_string_equal(l.urls[2], "http://c");
}

static void test_an_address_without_scheme_means_plain_http(void **state)
{
    (void)state;
    assert_int_equal(cli_server_list_parse(&l, "127.0.0.1:8080,[::1]:9", "TIDE_SERVER", &err), 0);
    assert_string_equal(l.urls[0], "http://127.0.0.1:8080");
    assert_string_equal(l.urls[1], "http://[::1]:9");
}

static void assert_bad(const char *raw, const char *part)
{
    tide_err_clear(&err);
    assert_int_equal(cli_server_list_parse(&l, raw, "TIDE_SERVER", &err), TIDE_EINVAL);
    assert_string_equal(err.field, "TIDE_SERVER");
    if (!strstr(err.message, part))
        fail_msg("'%s': message '%s' lacks '%s'", raw, err.message, part);
    assert_int_equal(l.n, 0);
}

static void test_bad_lists_are_refused_naming_where_they_came_from(void **state)
{
    (void)state;
    assert_bad("http://a,,http://b", "empty URL");
    assert_bad("http://a,", "empty URL");
    assert_bad("", "empty URL");
    assert_bad("ftp://a", "only http:// and https://");
    assert_bad("http://a,gopher://b", "'gopher://b'");
    assert_bad("http://", "names no host");
    assert_bad("http://:8080", "names no host");
}

static void test_more_than_the_maximum_is_refused(void **state)
{
    (void)state;
    char raw[2048] = "";
    for (int i = 0; i <= CLI_SERVERS_MAX; i++)
        snprintf(raw + strlen(raw), sizeof raw - strlen(raw), "%shttp://h%d", i ? "," : "", i);
    assert_bad(raw, "more than");
}

static void test_find_matches_host_case_and_trailing_slash_only(void **state)
{
    (void)state;
    assert_int_equal(
        cli_server_list_parse(&l, "http://Leader.example:8080,https://b:2/api", "--server", &err),
        0);
    assert_int_equal(cli_server_list_find(&l, "http://leader.example:8080/"), 0);
    assert_int_equal(cli_server_list_find(&l, "HTTP://LEADER.EXAMPLE:8080"), 0);
    assert_int_equal(cli_server_list_find(&l, "https://b:2/api/"), 1);
    assert_int_equal(cli_server_list_find(&l, "https://b:2/API"), -1); /* paths keep case */
    assert_int_equal(cli_server_list_find(&l, "http://leader.example:8081"), -1);
    assert_int_equal(cli_server_list_find(&l, "https://leader.example:8080"), -1);
    assert_int_equal(cli_server_list_find(&l, "http://leader.example:8080.evil"), -1);
    assert_int_equal(cli_server_list_find(&l, "http://evil/http://leader.example:8080"), -1);
    assert_int_equal(cli_server_list_find(&l, ""), -1);
    assert_int_equal(cli_server_list_find(&l, NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_one_url_is_a_list_of_one, teardown),
        cmocka_unit_test_teardown(test_commas_split_urls_in_order_and_spaces_and_slashes_go,
                                  teardown),
        cmocka_unit_test_teardown(test_an_address_without_scheme_means_plain_http, teardown),
        cmocka_unit_test_teardown(test_bad_lists_are_refused_naming_where_they_came_from,
                                  teardown),
        cmocka_unit_test_teardown(test_more_than_the_maximum_is_refused, teardown),
        cmocka_unit_test_teardown(test_find_matches_host_case_and_trailing_slash_only, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
