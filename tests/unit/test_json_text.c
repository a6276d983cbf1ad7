/*
 * json_text_compact (src/common/json_text.c) writes what
 * json_dumps(v, JSON_COMPACT) writes: checked against jansson itself on
 * specs, escapes, UTF-8, integers at the edges, reals and nesting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/json_text.h"

static void same_as_jansson(json_t *v)
{
    assert_non_null(v);
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    char *got = json_text_compact(v);
    assert_non_null(want);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(want);
    free(got);
    json_decref(v);
}

static void test_a_job_spec_reads_as_jansson_writes_it(void **state)
{
    (void)state;
    same_as_jansson(json_loads(
        "{\"command\": [\"python3\", \"train.py\", \"--lr\", \"0.1\"], \"gpus\": 2,"
        " \"name\": \"train[3]\", \"env\": {\"A\": \"b\", \"TIDE_ARRAY_INDEX\": \"3\"},"
        " \"project\": \"vision\", \"priority\": -5, \"preemptible\": false,"
        " \"depends_on\": [], \"mounts\": {}, \"memory\": null, \"ok\": true}",
        0, NULL));
}

static void test_strings_are_escaped_as_jansson_escapes_them(void **state)
{
    (void)state;
    const char raw[] = "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f caf\xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x9a\x80";
    json_t *o = json_object();
    json_object_set_new(o, "k\"\n", json_string(raw));
    json_object_set_new(o, "nul", json_stringn("a\0b", 3));
    same_as_jansson(o);
    same_as_jansson(json_string(""));
}

static void test_numbers_read_as_jansson_writes_them(void **state)
{
    (void)state;
    json_int_t ints[] = {0, 1, -1, 9, 10, 1234567890123LL, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        same_as_jansson(json_integer(ints[i]));
    double reals[] = {0.0, -0.0, 1.0, 0.1, -2.5, 1e20, 1e-7, 123456789.125, 1.7976931348623157e308,
                      5e-324, 3.0e100};
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
        same_as_jansson(json_real(reals[i]));
}

static void test_nesting_reads_as_jansson_writes_it_and_too_deep_is_refused(void **state)
{
    (void)state;
    same_as_jansson(json_loads("[[], {}, [1, [2, {\"a\": [true, null]}]], {\"x\": {\"y\": {}}}]", 0,
                               NULL));
    json_t *deep = json_array();
    for (int i = 0; i < 100; i++) {
        json_t *outer = json_array();
        json_array_append_new(outer, deep);
        deep = outer;
    }
    assert_null(json_text_compact(deep));
    json_decref(deep);
    assert_null(json_text_compact(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_job_spec_reads_as_jansson_writes_it),
        cmocka_unit_test(test_strings_are_escaped_as_jansson_escapes_them),
        cmocka_unit_test(test_numbers_read_as_jansson_writes_them),
        cmocka_unit_test(test_nesting_reads_as_jansson_writes_it_and_too_deep_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
