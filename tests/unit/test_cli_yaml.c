/* Unit tests for the YAML to JSON converter behind `tide submit job.yaml`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/submit_spec.h"
#include "cli/yaml_json.h"

static json_t *convert_ok(const char *yaml)
{
    json_t *v = NULL;
    struct tide_err err = {0};
    int rc = cli_yaml_to_json(yaml, strlen(yaml), "job.yaml", &v, &err);
    if (rc != 0)
        print_error("unexpected error: %s\n", err.message);
    assert_int_equal(rc, 0);
    assert_non_null(v);
    return v;
}

static int convert_err(const char *yaml, struct tide_err *err)
{
    json_t *v = (json_t *)1;
    int rc = cli_yaml_to_json(yaml, strlen(yaml), "job.yaml", &v, err);
    assert_null(v);
    return rc;
}

static void assert_json(json_t *v, const char *expected)
{
    char *got = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    assert_non_null(got);
    assert_string_equal(got, expected);
    free(got);
    json_decref(v);
}

static void test_plain_scalars_become_json_types(void **state)
{
    (void)state;
    json_t *v = convert_ok("gpus: 2\n"
                           "priority: -5\n"
                           "cpus: 0.5\n"
                           "preemptible: true\n"
                           "other: False\n"
                           "workdir: null\n"
                           "image: ~\n"
                           "empty:\n"
                           "hex: 0x1f\n"
                           "name: train\n");
    assert_json(v, "{\"cpus\":0.5,\"empty\":null,\"gpus\":2,\"hex\":31,\"image\":null,"
                   "\"name\":\"train\",\"other\":false,\"preemptible\":true,"
                   "\"priority\":-5,\"workdir\":null}");
}

static void test_quoted_scalars_stay_strings(void **state)
{
    (void)state;
    json_t *v = convert_ok("a: \"2\"\n"
                           "b: 'true'\n"
                           "c: !!str 7\n"
                           "d: \"null\"\n"
                           "e: |\n"
                           "  42\n");
    assert_json(v, "{\"a\":\"2\",\"b\":\"true\",\"c\":\"7\",\"d\":\"null\",\"e\":\"42\\n\"}");
}

static void test_yaml_1_1_words_are_strings(void **state)
{
    (void)state;
    json_t *v = convert_ok("a: yes\nb: off\nc: 1.2.3\nd: 12h\n");
    assert_json(v, "{\"a\":\"yes\",\"b\":\"off\",\"c\":\"1.2.3\",\"d\":\"12h\"}");
}

static void test_nested_mappings_and_sequences(void **state)
{
    (void)state;
    json_t *v = convert_ok("env:\n"
                           "  K: V\n"
                           "  N: 3\n"
                           "depends_on: [4, 5]\n"
                           "matrix:\n"
                           "  - {lr: 0.25, tags: [a, b]}\n"
                           "  - []\n");
    assert_json(v, "{\"depends_on\":[4,5],\"env\":{\"K\":\"V\",\"N\":3},"
                   "\"matrix\":[{\"lr\":0.25,\"tags\":[\"a\",\"b\"]},[]]}");
}

static void test_command_sequence_keeps_every_arg_as_text(void **state)
{
    (void)state;
    json_t *v = convert_ok("command:\n"
                           "  - sh\n"
                           "  - -c\n"
                           "  - 'echo step: $1; sleep 3'\n"
                           "  - \"10\"\n");
    assert_json(v, "{\"command\":[\"sh\",\"-c\",\"echo step: $1; sleep 3\",\"10\"]}");
}

static void test_key_order_is_kept(void **state)
{
    (void)state;
    json_t *v = convert_ok("zeta: 1\nalpha: 2\n");
    char *got = json_dumps(v, JSON_COMPACT);
    assert_string_equal(got, "{\"zeta\":1,\"alpha\":2}");
    free(got);
    json_decref(v);
}

static void test_aliases_are_copies_of_anchors(void **state)
{
    (void)state;
    json_t *v = convert_ok("base: &b {gpus: 1}\ncopy: *b\n");
    assert_json(v, "{\"base\":{\"gpus\":1},\"copy\":{\"gpus\":1}}");
}

static void test_syntax_error_names_file_line_and_column(void **state)
{
    (void)state;
    struct tide_err err = {0};
    int rc = convert_err("name: train\n"
                         "gpus: 2\n"
                         "command: [sh, -c\n"
                         "retries: 1\n",
                         &err);
    assert_int_equal(rc, TIDE_EINVAL);
    assert_non_null(strstr(err.message, "job.yaml:4:"));
}

static void test_bad_indentation_reports_its_line(void **state)
{
    (void)state;
    struct tide_err err = {0};
    int rc = convert_err("env:\n"
                         "  A: 1\n"
                         " B: 2\n",
                         &err);
    assert_int_equal(rc, TIDE_EINVAL);
    assert_true(strncmp(err.message, "job.yaml:3:", 11) == 0);
}

static void test_duplicate_key_is_an_error(void **state)
{
    (void)state;
    struct tide_err err = {0};
    int rc = convert_err("gpus: 1\n"
                         "name: a\n"
                         "gpus: 2\n",
                         &err);
    assert_int_equal(rc, TIDE_EINVAL);
    assert_string_equal(err.field, "gpus");
    assert_non_null(strstr(err.message, "job.yaml:3:1:"));
    assert_non_null(strstr(err.message, "duplicate key 'gpus' (first at line 1)"));
}

static void test_duplicate_key_in_nested_mapping_is_an_error(void **state)
{
    (void)state;
    struct tide_err err = {0};
    int rc = convert_err("env:\n  K: 1\n  K: 2\n", &err);
    assert_int_equal(rc, TIDE_EINVAL);
    assert_string_equal(err.field, "K");
    assert_non_null(strstr(err.message, "job.yaml:3:3:"));
}

static void test_empty_input_is_an_error(void **state)
{
    (void)state;
    struct tide_err err = {0};
    assert_int_equal(convert_err("", &err), TIDE_EINVAL);
    assert_non_null(strstr(err.message, "empty document"));
}

static void test_second_document_is_an_error(void **state)
{
    (void)state;
    struct tide_err err = {0};
    assert_int_equal(convert_err("a: 1\n---\nb: 2\n", &err), TIDE_EINVAL);
    assert_non_null(strstr(err.message, "job.yaml:2:1:"));
}

static void test_numbers_json_cannot_hold_are_errors(void **state)
{
    (void)state;
    struct tide_err err = {0};
    assert_int_equal(convert_err("a: 99999999999999999999\n", &err), TIDE_EINVAL);
    assert_non_null(strstr(err.message, "job.yaml:1:4: integer out of range"));
    assert_int_equal(convert_err("a: .inf\n", &err), TIDE_EINVAL);
}

static void test_non_scalar_key_is_an_error(void **state)
{
    (void)state;
    struct tide_err err = {0};
    assert_int_equal(convert_err("? [a, b]\n: 1\n", &err), TIDE_EINVAL);
    assert_non_null(strstr(err.message, "job.yaml:1:3:"));
}

static void test_alias_bomb_is_refused(void **state)
{
    (void)state;
    struct tide_err err = {0};
    const char *bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                       "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                       "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                       "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                       "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n";
    assert_int_equal(convert_err(bomb, &err), TIDE_EINVAL);
    assert_non_null(strstr(err.message, "too large"));
}

static void test_deep_nesting_is_refused(void **state)
{
    (void)state;
    char deep[400];
    memset(deep, '[', 200);
    memset(deep + 200, ']', 199);
    deep[399] = '\0';
    struct tide_err err = {0};
    assert_int_equal(convert_err(deep, &err), TIDE_EINVAL);
    assert_non_null(strstr(err.message, "nested too deeply"));
}

static void test_unknown_alias_is_an_error(void **state)
{
    (void)state;
    struct tide_err err = {0};
    assert_int_equal(convert_err("a: *nope\n", &err), TIDE_EINVAL);
    assert_non_null(strstr(err.message, "job.yaml:1:4:"));
}

static void test_a_job_files_argv_and_env_are_kept_as_written(void **state)
{
    (void)state;
    /* read as numbers or null they came back respelled: 0.1 as
     * 0.10000000000000001, 0x1F as 31, an empty value as "null" */
    char path[] = "/tmp/tide-test-spec-XXXXXX.yaml";
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    static const char yaml[] =
        "gpus: &g 2\n"
        "command: [python3, train.py, --lr, 0.1, --wd, 1e-400, --tag, 0x1F, --zip, 01234,\n"
        "          --n, 1.50, --on, true, --x, .inf, 12345678901234567890, \"q\"]\n"
        "env: {EMPTY: , TILDE: ~, RATE: 0.3, ON: yes, N: *g}\n";
    assert_int_equal(write(fd, yaml, strlen(yaml)), (ssize_t)strlen(yaml));
    close(fd);
    json_t *spec = NULL;
    struct tide_err err = {0};
    int rc = cli_spec_load(path, &spec, &err);
    unlink(path);
    if (rc != 0)
        print_error("unexpected error: %s\n", err.message);
    assert_int_equal(rc, 0);
    assert_json(spec, "{\"command\":[\"python3\",\"train.py\",\"--lr\",\"0.1\",\"--wd\","
                      "\"1e-400\",\"--tag\",\"0x1F\",\"--zip\",\"01234\",\"--n\",\"1.50\","
                      "\"--on\",\"true\",\"--x\",\".inf\",\"12345678901234567890\",\"q\"],"
                      "\"env\":{\"EMPTY\":\"\",\"N\":\"2\",\"ON\":\"yes\",\"RATE\":\"0.3\","
                      "\"TILDE\":\"~\"},\"gpus\":2}");
}

/* tide sim --config: numbers and booleans as the server's tide.yaml reader takes them. */
static void test_a_config_keeps_what_the_server_would_not_read_as_a_number_as_text(void **state)
{
    (void)state;
    const char *yaml = "a: 0x1F\nb: 0o17\nc: +5\nd: True\ne: FALSE\nf: 8\ng: -3\nh: 1.5\n"
                       "i: true\nj: ~\nk: +1.5\n";
    json_t *v = NULL;
    struct tide_err err = {0};
    assert_int_equal(cli_yaml_config_to_json(yaml, strlen(yaml), "tide.yaml", &v, &err), 0);
    assert_json(v, "{\"a\":\"0x1F\",\"b\":\"0o17\",\"c\":\"+5\",\"d\":\"True\",\"e\":\"FALSE\","
                   "\"f\":8,\"g\":-3,\"h\":1.5,\"i\":true,\"j\":null,\"k\":\"+1.5\"}");
    /* A job file still reads them by YAML's rules. */
    assert_json(convert_ok("a: 0x1F\nd: True\n"), "{\"a\":31,\"d\":true}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_scalars_become_json_types),
        cmocka_unit_test(test_quoted_scalars_stay_strings),
        cmocka_unit_test(test_yaml_1_1_words_are_strings),
        cmocka_unit_test(test_nested_mappings_and_sequences),
        cmocka_unit_test(test_command_sequence_keeps_every_arg_as_text),
        cmocka_unit_test(test_key_order_is_kept),
        cmocka_unit_test(test_aliases_are_copies_of_anchors),
        cmocka_unit_test(test_syntax_error_names_file_line_and_column),
        cmocka_unit_test(test_bad_indentation_reports_its_line),
        cmocka_unit_test(test_duplicate_key_is_an_error),
        cmocka_unit_test(test_duplicate_key_in_nested_mapping_is_an_error),
        cmocka_unit_test(test_empty_input_is_an_error),
        cmocka_unit_test(test_second_document_is_an_error),
        cmocka_unit_test(test_numbers_json_cannot_hold_are_errors),
        cmocka_unit_test(test_non_scalar_key_is_an_error),
        cmocka_unit_test(test_alias_bomb_is_refused),
        cmocka_unit_test(test_deep_nesting_is_refused),
        cmocka_unit_test(test_unknown_alias_is_an_error),
        cmocka_unit_test(test_a_job_files_argv_and_env_are_kept_as_written),
        cmocka_unit_test(test_a_config_keeps_what_the_server_would_not_read_as_a_number_as_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
