/* Unit tests for heartbeat log chunks (src/agent/task_log.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Appends text to the file at path. */
static void append(const char *path, const char *text)
{
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void test_a_chunk_is_what_the_log_holds_past_the_offset_and_nothing_else(void **state)
{
    (void)state;
    char dir[] = "/tmp/tide-test-task-log-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/1.1.log", dir);
    char *data = (char *)1;
    size_t len = 9;
    bool more = true;
    /* no file yet: no data, no error */
    assert_int_equal(agent_task_log_chunk(path, 0, 100, false, &data, &len, &more), 0);
    assert_null(data);
    assert_int_equal(len, 0);
    assert_false(more);
    /* an empty one the same */
    append(path, "");
    assert_int_equal(agent_task_log_chunk(path, 0, 100, false, &data, &len, &more), 0);
    assert_null(data);
    append(path, "hello world\n");
    /* from the offset, at most max bytes, and more when some are left */
    assert_int_equal(agent_task_log_chunk(path, 6, 3, false, &data, &len, &more), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(data, "wor", 3);
    assert_true(more);
    free(data);
    assert_int_equal(agent_task_log_chunk(path, 6, 100, false, &data, &len, &more), 0);
    assert_string_equal(data, "world\n");
    assert_false(more);
    free(data);
    /* at the end or past it: nothing */
    assert_int_equal(agent_task_log_chunk(path, 12, 100, false, &data, &len, &more), 0);
    assert_null(data);
    assert_int_equal(agent_task_log_chunk(path, 50, 100, false, &data, &len, &more), 0);
    assert_null(data);
    /* what is written later comes in the next chunk */
    append(path, "again");
    assert_int_equal(agent_task_log_chunk(path, 12, 100, false, &data, &len, &more), 0);
    assert_string_equal(data, "again");
    free(data);
    /* a path that cannot be a file is an error, not "no data" */
    char bad[80];
    snprintf(bad, sizeof bad, "%s/1.1.log/x", dir);
    data = NULL;
    assert_int_equal(agent_task_log_chunk(bad, 0, 100, false, &data, &len, &more), -ENOTDIR);
    assert_null(data);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_text_fits_byte_for_byte),
        cmocka_unit_test(test_control_bytes_are_charged_as_their_escapes),
        cmocka_unit_test(test_a_character_is_never_cut_and_the_count_matches_jansson),
        cmocka_unit_test(test_a_chunk_is_what_the_log_holds_past_the_offset_and_nothing_else),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
