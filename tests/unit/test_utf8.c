/* Unit tests for UTF-8-safe cutting (src/common/utf8.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_copy_that_does_not_fit_is_cut_before_the_character),
        cmocka_unit_test(test_an_incomplete_character_at_the_end_is_dropped),
        cmocka_unit_test(test_an_error_message_cut_short_stays_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
