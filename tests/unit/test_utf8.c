/* Unit tests for UTF-8-safe cutting (src/common/utf8.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/tide_err.h"
#include "common/utf8.h"

static void test_a_copy_that_does_not_fit_is_cut_before_the_character(void **state)
{
    (void)state;
    char out[6];
    utf8_copy(out, sizeof out, "ab\xc3\x84\xc3\x84"); /* "abÄÄ": 6 bytes, room for 5 */
    assert_string_equal(out, "ab\xc3\x84");
    utf8_copy(out, sizeof out, "abcd\xe2\x82\xac"); /* "abcd€": the € would be cut */
    assert_string_equal(out, "abcd");
    utf8_copy(out, sizeof out, "a\xf0\x9f\x98\x80z"); /* a 4-byte one fits whole */
    assert_string_equal(out, "a\xf0\x9f\x98\x80");
    utf8_copy(out, sizeof out, "plain");
    assert_string_equal(out, "plain");
}

static void test_an_incomplete_character_at_the_end_is_dropped(void **state)
{
    (void)state;
    char s1[] = "x\xc3";
    utf8_trim_tail(s1);
    assert_string_equal(s1, "x");
    char s2[] = "x\xe2\x82";
    utf8_trim_tail(s2);
    assert_string_equal(s2, "x");
    char s3[] = "x\xe2\x82\xac";
    utf8_trim_tail(s3);
    assert_string_equal(s3, "x\xe2\x82\xac");
    char s4[] = "";
    utf8_trim_tail(s4);
    assert_string_equal(s4, "");
}

static void test_an_error_message_cut_short_stays_text(void **state)
{
    (void)state;
    struct tide_err err;
    char long_name[600];
    for (size_t i = 0; i + 2 < sizeof long_name; i += 2)
        memcpy(long_name + i, "\xc3\x84", 2);
    long_name[sizeof long_name - 2] = '\0';
    tide_err_set(&err, TIDE_EINVAL, "gpu_model", "xy%s", long_name); /* 383 bytes: cut mid-Ä */
    size_t n = strlen(err.message);
    assert_true(n > 0);
    assert_true(((unsigned char)err.message[n - 1] & 0xc0) == 0x80); /* ends on a whole Ä */
}

static void test_bytes_that_are_not_characters_become_question_marks(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain", "plain"},
        {"\xc3\x84\xe2\x82\xac\xf0\x9f\x98\x80", "\xc3\x84\xe2\x82\xac\xf0\x9f\x98\x80"},
        {"a\xff"
         "b",
         "a?b"}, /* never a UTF-8 byte */
        {"a\x84"
         "b",
         "a?b"},                                  /* a continuation with no lead */
        {"a\xc3", "a?"},                          /* cut at the end */
        {"\xe2\x82x", "??x"},                     /* cut in the middle */
        {"\xc0\xaf", "??"},                       /* overlong '/' */
        {"\xe0\x80\xaf", "???"},                  /* overlong, three bytes */
        {"\xed\xa0\x80", "???"},                  /* a surrogate half */
        {"\xf4\x90\x80\x80", "????"},             /* past U+10FFFF */
        {"\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"}, /* U+10FFFF itself */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "%s", cases[i].in);
        utf8_scrub(buf);
        assert_string_equal(buf, cases[i].out);
        json_t *v = utf8_json_string(cases[i].in); /* what jansson takes, the same */
        assert_non_null(v);
        assert_string_equal(json_string_value(v), cases[i].out);
        json_decref(v);
    }
}

static void test_an_error_quoting_bytes_that_are_not_text_can_be_answered(void **state)
{
    (void)state;
    struct tide_err err;
    tide_err_set(&err, TIDE_EINVAL,
                 "st\xff"
                 "ate",
                 "state: unknown state '%.3s'", "\xc3\x84\xc3\x84");
    assert_string_equal(err.message, "state: unknown state '\xc3\x84?'");
    assert_string_equal(err.field, "st?ate");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_copy_that_does_not_fit_is_cut_before_the_character),
        cmocka_unit_test(test_an_incomplete_character_at_the_end_is_dropped),
        cmocka_unit_test(test_an_error_message_cut_short_stays_text),
        cmocka_unit_test(test_bytes_that_are_not_characters_become_question_marks),
        cmocka_unit_test(test_an_error_quoting_bytes_that_are_not_text_can_be_answered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
