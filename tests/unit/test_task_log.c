/* Unit tests for heartbeat log chunks (src/agent/task_log.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <string.h>

#include "agent/task_log.h"

/* What jansson really writes for data[0..n) as a string, quotes included. */
static size_t json_size(const char *data, size_t n)
{
    json_t *s = json_stringn(data, n);
    assert_non_null(s);
    char *text = json_dumps(s, JSON_ENCODE_ANY | JSON_COMPACT);
    size_t len = strlen(text);
    free(text);
    json_decref(s);
    return len;
}

static void test_plain_text_fits_byte_for_byte(void **state)
{
    (void)state;
    size_t encoded;
    assert_int_equal(agent_task_log_fit_json("hello\n", 6, 100, &encoded), 6);
    assert_int_equal(encoded, json_size("hello\n", 6));
}

static void test_control_bytes_are_charged_as_their_escapes(void **state)
{
    (void)state;
    char data[600];
    memset(data, 0x01, sizeof data); /* each is written \u0001: six bytes */
    size_t encoded;
    size_t fits = agent_task_log_fit_json(data, sizeof data, 602, &encoded);
    assert_int_equal(fits, 100);
    assert_int_equal(encoded, json_size(data, fits));
    assert_true(encoded <= 602);
}

static void test_a_character_is_never_cut_and_the_count_matches_jansson(void **state)
{
    (void)state;
    const char *data = "a\"b\\c\td\xc3\xa9" "e\xe2\x82\xac" "f\xf0\x9f\x98\x80\x7f";
    size_t len = strlen(data);
    for (size_t budget = 2; budget < 40; budget++) {
        size_t encoded;
        size_t fits = agent_task_log_fit_json(data, len, budget, &encoded);
        assert_true(encoded <= budget);
        assert_int_equal(encoded, json_size(data, fits)); /* also: fits ends on a character */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_text_fits_byte_for_byte),
        cmocka_unit_test(test_control_bytes_are_charged_as_their_escapes),
        cmocka_unit_test(test_a_character_is_never_cut_and_the_count_matches_jansson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
