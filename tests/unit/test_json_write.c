/* Unit tests for the compact JSON writer (src/common/json_write.c): every
 * answer is compared with what jansson's own json_dumps writes for the same
 * value, so a reply reads the same whichever wrote it, whole or piece by
 * piece (json_buf). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_write.h"

/* v written by both; the texts must be the same bytes. Takes v's reference. */
static void assert_same_as_jansson(json_t *v)
{
    assert_non_null(v);
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_non_null(want);
    size_t len = 0;
    char *got = json_write_compact(v, false, &len);
    assert_non_null(got);
    assert_string_equal(got, want);
    assert_int_equal(len, strlen(want));
    free(got);
    free(want);
    json_decref(v);
}

static void test_a_jobs_reply_is_written_as_jansson_writes_it(void **state)
{
    (void)state;
    assert_same_as_jansson(json_loads(
        "{\"id\":1,\"name\":\"bench\",\"project\":\"default\",\"priority\":0,\"spec\":{\"command\":"
        "[\"true\"],\"gpus\":1,\"env\":{}},\"node\":null,\"gpus\":[],\"exit_code\":null,"
        "\"submit_time\":1796300409.99,\"cancel_requested\":false,\"held\":true}", 0, NULL));
    assert_same_as_jansson(json_object());
    assert_same_as_jansson(json_array());
    assert_same_as_jansson(json_loads("[[],[{}],[[1,[2,[3]]]],{\"a\":{\"b\":{}}}]", 0, NULL));
}

static void test_keys_keep_their_insertion_order(void **state)
{
    (void)state;
    json_t *o = json_object();
    const char *keys[] = {"zeta", "alpha", "mid", "beta", "a", "omega"};
    for (int i = 0; i < 6; i++)
        json_object_set_new(o, keys[i], json_integer(i));
    json_object_del(o, "mid");
    json_object_set_new(o, "mid", json_true());
    char *got = json_write_compact(o, false, NULL);
    assert_string_equal(got, "{\"zeta\":0,\"alpha\":1,\"beta\":3,\"a\":4,\"omega\":5,\"mid\":true}");
    free(got);
    assert_same_as_jansson(o);
}

static void test_strings_escape_quotes_backslashes_and_control_characters(void **state)
{
    (void)state;
    assert_same_as_jansson(json_stringn("a\x01\x1f\x7f\"\\/\b\f\n\r\t\0z", 14));
    assert_same_as_jansson(json_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80 \xef\xbf\xbf"));
    assert_same_as_jansson(json_string(""));
    assert_same_as_jansson(json_pack("{s:s}", "key \"with\"\nescapes\x02", "\\"));
    json_t *tab = json_string("tab\there");
    char *got = json_write_compact(tab, false, NULL);
    assert_string_equal(got, "\"tab\\there\"");
    free(got);
    json_decref(tab);
}

static void test_integers_and_reals_are_written_as_jansson_writes_them(void **state)
{
    (void)state;
    json_int_t ints[] = {0, 1, -1, 9, 10, 1234567890123LL, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        assert_same_as_jansson(json_integer(ints[i]));
    double reals[] = {0.0, -0.0, 0.1, 1.0, 100.0, -2.5, 1e20, 1e-7, 123456789012345678.0,
                      1796300409.99, 5e-324, 1e300, -1.5e-300, 1e16, 1e17, 3.0e-5};
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
        assert_same_as_jansson(json_real(reals[i]));
    assert_same_as_jansson(json_pack("[b,b,n]", 1, 0));
}

/* Reals from 1 to 2^53 (times in seconds, sizes) take an integer path of
 * their own: every one must still read as jansson's %.17g text. */
static void test_reals_of_the_integer_path_are_written_as_jansson_writes_them(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ULL; /* xorshift64: the same values every run */
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        switch (i % 4) {
        case 0: /* a time in ms as seconds, as replies write it */
            v = (double)(int64_t)(1700000000000ULL + x % 200000000000ULL) / 1000.0;
            break;
        case 1: /* any bit pattern from 1 to 2^53 */
            v = ldexp(1.0 + (double)(x >> 12) / 4503599627370496.0, (int)(x % 53));
            break;
        case 2: /* halves and small fractions: ties at the 17th digit */
            v = (double)(x % 100000000000000ULL) + (double)(x % 8) / 8.0;
            break;
        default: /* just below a power of ten: rounding that carries a digit */
            v = nextafter((double)(1ULL << (x % 53)) * 1.0, 0.0) + (double)(x % 3);
            if (v < 1.0)
                v = 1.0;
            break;
        }
        if (x & 1)
            v = -v;
        assert_same_as_jansson(json_real(v));
    }
    double edges[] = {1.0, 9.999999999999999, 9.9999999999999982, 99999999999999.99,
                      9007199254740991.0, 9007199254740990.5, 4503599627370495.5,
                      1234567.5, 0.5 + 1.0, 1764771234.123, 1764771234.0005, 2.5, 3.5};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        assert_same_as_jansson(json_real(edges[i]));
        assert_same_as_jansson(json_real(-edges[i]));
    }
}

static void test_a_string_that_is_not_utf8_is_refused_as_jansson_refuses_it(void **state)
{
    (void)state;
    const char *bad[] = {"\xff", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                         "\xe2\x82", "\x80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *s = json_stringn_nocheck(bad[i], strlen(bad[i]));
        json_t *o = json_pack("{s:o}", "x", s);
        assert_null(json_dumps(o, JSON_COMPACT));
        assert_null(json_write_compact(o, false, NULL));
        json_decref(o);
    }
}

static void test_newline_is_added_after_the_text_when_asked(void **state)
{
    (void)state;
    json_t *o = json_pack("{s:i}", "id", 7);
    size_t len = 0;
    char *got = json_write_compact(o, true, &len);
    assert_string_equal(got, "{\"id\":7}\n");
    assert_int_equal(len, 9);
    free(got);
    json_decref(o);
}

static void test_nesting_past_the_depth_limit_is_refused(void **state)
{
    (void)state;
    json_t *root = json_array(), *at = root;
    for (int i = 0; i < JSON_WRITE_MAX_DEPTH + 5; i++) {
        json_t *inner = json_array();
        json_array_append_new(at, inner);
        at = inner;
    }
    assert_null(json_write_compact(root, false, NULL));
    json_decref(root);
}

static void test_a_long_text_grows_the_buffer_and_stays_whole(void **state)
{
    (void)state;
    json_t *a = json_array();
    for (int i = 0; i < 5000; i++)
        json_array_append_new(a, json_pack("{s:i, s:s}", "i", i, "s", "some text \"quoted\""));
    assert_same_as_jansson(a);
}

static void test_a_text_written_piece_by_piece_reads_as_the_same_values(void **state)
{
    (void)state;
    struct json_buf b = {0};
    json_buf_text(&b, "{\"id\":");
    json_buf_integer(&b, -42);
    json_buf_text(&b, ",\"name\":");
    json_buf_string(&b, "caf\xc3\xa9 \"x\"\t");
    json_buf_text(&b, ",\"t\":");
    json_buf_real(&b, 1796300409.5);
    json_buf_text(&b, ",\"spec\":{\"command\":[\"echo\"]}}"); /* a stored spec text */
    size_t len = 0;
    char *got = json_buf_finish(&b, &len);
    assert_non_null(got);
    assert_int_equal(len, strlen(got));
    json_t *want = json_pack("{s:i, s:s, s:f, s:{s:[s]}}", "id", -42, "name",
                             "caf\xc3\xa9 \"x\"\t", "t", 1796300409.5, "spec", "command", "echo");
    char *want_text = json_dumps(want, JSON_COMPACT);
    assert_string_equal(got, want_text);
    assert_null(b.data); /* b is empty again */
    free(got);
    free(want_text);
    json_decref(want);
}

static void test_a_piece_that_fails_fails_the_whole_text(void **state)
{
    (void)state;
    struct json_buf b = {0};
    json_buf_text(&b, "[");
    json_buf_string(&b, "\xff"); /* not UTF-8 */
    json_buf_text(&b, "]");
    assert_null(json_buf_finish(&b, NULL));
    json_buf_text(&b, "abandoned");
    json_buf_release(&b); /* (ASan would see a leak otherwise) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_jobs_reply_is_written_as_jansson_writes_it),
        cmocka_unit_test(test_keys_keep_their_insertion_order),
        cmocka_unit_test(test_strings_escape_quotes_backslashes_and_control_characters),
        cmocka_unit_test(test_integers_and_reals_are_written_as_jansson_writes_them),
        cmocka_unit_test(test_reals_of_the_integer_path_are_written_as_jansson_writes_them),
        cmocka_unit_test(test_a_string_that_is_not_utf8_is_refused_as_jansson_refuses_it),
        cmocka_unit_test(test_newline_is_added_after_the_text_when_asked),
        cmocka_unit_test(test_nesting_past_the_depth_limit_is_refused),
        cmocka_unit_test(test_a_long_text_grows_the_buffer_and_stays_whole),
        cmocka_unit_test(test_a_text_written_piece_by_piece_reads_as_the_same_values),
        cmocka_unit_test(test_a_piece_that_fails_fails_the_whole_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
