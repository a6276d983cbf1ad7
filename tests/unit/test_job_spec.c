/* Unit tests for job spec validation (src/core/job_spec.c, DESIGN.md "Job spec"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core/image.h"
#include "core/job_spec.h"

#define CMD "\"command\": [\"python3\", \"train.py\"]"

struct parsed {
    json_t *spec;
    struct job job;
};

static struct parsed parse_ok(const char *body)
{
    struct parsed p;
    struct tide_err err = {0};
    int rc = job_spec_parse(body, strlen(body), &p.spec, &p.job, &err);
    if (rc != 0)
        print_error("unexpected error: field '%s': %s\n", err.field, err.message);
    assert_int_equal(rc, 0);
    assert_non_null(p.spec);
    return p;
}

/* Parses a body that must be refused; returns the error. */
static struct tide_err parse_err(const char *body)
{
    struct tide_err err = {0};
    json_t *spec = (json_t *)1;
    struct job job;
    int rc = job_spec_parse(body, strlen(body), &spec, &job, &err);
    assert_int_equal(rc, TIDE_EINVAL);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_null(spec);
    assert_true(err.message[0] != '\0');
    return err;
}

/* The body is refused, the error blames field and its message says it. */
static void assert_refused(const char *body, const char *field, const char *message_part)
{
    struct tide_err err = parse_err(body);
    assert_string_equal(err.field, field);
    if (!strstr(err.message, message_part))
        print_error("message '%s' lacks '%s'\n", err.message, message_part);
    assert_non_null(strstr(err.message, message_part));
    /* Messages start with the field so a person sees what to fix. */
    assert_int_equal(strncmp(err.message, field, strlen(field)), 0);
}

static void assert_spec_string(json_t *spec, const char *key, const char *want)
{
    json_t *v = json_object_get(spec, key);
    assert_non_null(v);
    assert_string_equal(json_string_value(v), want);
}

static void assert_spec_integer(json_t *spec, const char *key, long long want)
{
    json_t *v = json_object_get(spec, key);
    assert_true(json_is_integer(v));
    assert_int_equal(json_integer_value(v), want);
}

static void test_minimal_spec_gets_the_documented_defaults(void **state)
{
    (void)state;
    struct parsed p = parse_ok("{" CMD "}");
    assert_spec_string(p.spec, "project", "default");
    assert_spec_string(p.spec, "queue", "default");
    assert_spec_integer(p.spec, "priority", 0);
    assert_spec_integer(p.spec, "gpus", 1);
    assert_spec_integer(p.spec, "retries", 0);
    assert_spec_integer(p.spec, "max_runtime", 0);
    assert_true(json_is_false(json_object_get(p.spec, "preemptible")));
    assert_string_equal(p.job.project, "default");
    assert_string_equal(p.job.queue, "default");
    assert_int_equal(p.job.gpus, 1);
    assert_int_equal(p.job.priority, 0);
    assert_int_equal(p.job.retries, 0);
    json_decref(p.spec);
}

static void test_default_name_is_the_programs_basename(void **state)
{
    (void)state;
    struct parsed p = parse_ok("{\"command\": [\"/usr/bin/python3\", \"x.py\"]}");
    assert_spec_string(p.spec, "name", "python3");
    json_decref(p.spec);
}

/* Found by tests/fuzz (job_spec): a program with a control character, or
 * longer than a name may be, gave a default name the canonical spec then
 * refused, so the stored job could not be read back at the next start. */
static void test_default_name_from_an_odd_program_parses_again(void **state)
{
    (void)state;
    char long_program[600] = "/bin/";
    for (size_t i = strlen(long_program); i + 2 < sizeof long_program - 1; i += 2)
        memcpy(long_program + i, "\xc3\xa9", 2); /* e-acute, two bytes */
    const char *programs[] = {"py\x7f", "a\tb", long_program};
    for (size_t i = 0; i < sizeof programs / sizeof programs[0]; i++) {
        json_t *given = json_pack("{s:[s]}", "command", programs[i]);
        json_t *spec = NULL, *again = NULL;
        struct job job;
        struct tide_err err;
        assert_int_equal(job_spec_from_object(given, &spec, &job, &err), 0);
        const char *name = json_string_value(json_object_get(spec, "name"));
        assert_non_null(name);
        assert_true(strlen(name) <= JOB_SPEC_MAX_NAME);
        assert_int_equal(job_spec_from_object(spec, &again, &job, &err), 0);
        assert_true(json_equal(spec, again));
        json_decref(again);
        json_decref(spec);
        json_decref(given);
    }
    json_t *spec = NULL;
    struct job job;
    struct tide_err err;
    const char *body = "{\"command\": [\"py\\u007f\"]}";
    assert_int_equal(job_spec_parse(body, strlen(body), &spec, &job, &err), 0);
    assert_string_equal(json_string_value(json_object_get(spec, "name")), "py_");
    json_decref(spec);
}

static void test_given_values_fill_the_scheduling_fields_of_the_job(void **state)
{
    (void)state;
    struct parsed p = parse_ok("{\"name\": \"train\", \"queue\": \"gpu-long\", \"project\": \"vision\","
                               " \"priority\": 7, \"gpus\": 4, \"gpu_memory\": 80000,"
                               " \"gpu_model\": \"H200*\", \"cpus\": 16, \"memory\": 65536,"
                               " \"max_runtime\": 3600, \"est_runtime\": 1800, \"retries\": 2,"
                               " \"preemptible\": true, \"checkpoint_signal\": \"SIGUSR1\","
                               " \"env\": {\"SEED\": \"1\"}, \"workdir\": \"/data\", " CMD "}");
    assert_string_equal(p.job.queue, "gpu-long");
    assert_string_equal(p.job.project, "vision");
    assert_int_equal(p.job.priority, 7);
    assert_int_equal(p.job.gpus, 4);
    assert_int_equal(p.job.gpu_memory_mib, 80000);
    assert_string_equal(p.job.gpu_model, "H200*");
    assert_int_equal(p.job.cpus, 16);
    assert_int_equal(p.job.memory_mib, 65536);
    assert_int_equal(p.job.max_runtime_s, 3600);
    assert_int_equal(p.job.retries, 2);
    /* Identity, state and times are the store's business. */
    assert_int_equal(p.job.id, 0);
    assert_int_equal(p.job.state, JOB_PENDING);
    assert_int_equal(p.job.attempt, 0);
    assert_int_equal(p.job.submit_ms, 0);
    assert_int_equal(p.job.node_id, 0);
    json_decref(p.spec);
}

static void test_canonical_spec_keeps_given_values(void **state)
{
    (void)state;
    struct parsed p = parse_ok("{\"name\": \"train\", \"gpus\": 0, \"preemptible\": true, "
                               "\"env\": {\"A\": \"b\"}, " CMD "}");
    assert_spec_string(p.spec, "name", "train");
    assert_spec_integer(p.spec, "gpus", 0);
    assert_true(json_is_true(json_object_get(p.spec, "preemptible")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(p.spec, "env"), "A")),
                        "b");
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(p.spec, "command"), 1)), "train.py");
    assert_int_equal(p.job.gpus, 0);
    json_decref(p.spec);
}

static void test_integer_fields_refuse_strings_and_fractions_naming_the_field(void **state)
{
    (void)state;
    static const char *const fields[] = {"priority", "gpus",        "gpu_memory", "cpus",
                                         "memory",   "max_runtime", "est_runtime", "retries"};
    char body[256];
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        snprintf(body, sizeof body, "{\"%s\": \"2\", " CMD "}", fields[i]);
        assert_refused(body, fields[i], "must be an integer, got a string");
        snprintf(body, sizeof body, "{\"%s\": 1.5, " CMD "}", fields[i]);
        assert_refused(body, fields[i], "must be an integer, got a fraction");
        snprintf(body, sizeof body, "{\"%s\": true, " CMD "}", fields[i]);
        assert_refused(body, fields[i], "must be an integer, got a boolean");
    }
}

static void test_string_fields_refuse_numbers_naming_the_field(void **state)
{
    (void)state;
    static const char *const fields[] = {"name",    "queue",   "project",
                                         "gpu_model", "workdir", "checkpoint_signal"};
    char body[256];
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        snprintf(body, sizeof body, "{\"%s\": 5, " CMD "}", fields[i]);
        assert_refused(body, fields[i], "must be a string");
    }
}

static void test_preemptible_must_be_a_boolean(void **state)
{
    (void)state;
    assert_refused("{\"preemptible\": \"yes\", " CMD "}", "preemptible", "true or false");
    assert_refused("{\"preemptible\": 1, " CMD "}", "preemptible", "true or false");
}

static void test_queue_and_project_must_be_identifiers(void **state)
{
    (void)state;
    assert_refused("{\"queue\": \"a b\", " CMD "}", "queue", "only letters, digits");
    assert_refused("{\"project\": \"x/y\", " CMD "}", "project", "only letters, digits");
    assert_refused("{\"project\": \"\", " CMD "}", "project", "bytes long");
}

static void test_unknown_field_is_refused_by_name(void **state)
{
    (void)state;
    assert_refused("{\"gpu\": 2, " CMD "}", "gpu", "unknown field");
}

static void test_negative_gpu_count_is_refused(void **state)
{
    (void)state;
    assert_refused("{\"gpus\": -1, " CMD "}", "gpus", "must be between 0 and");
}

static void test_absurd_gpu_count_is_refused(void **state)
{
    (void)state;
    assert_refused("{\"gpus\": 10000, " CMD "}", "gpus", "got 10000");
}

static void test_out_of_range_values_say_the_allowed_range(void **state)
{
    (void)state;
    assert_refused("{\"priority\": 1001, " CMD "}", "priority", "between -1000 and 1000");
    assert_refused("{\"retries\": -1, " CMD "}", "retries", "between 0 and 100");
    assert_refused("{\"max_runtime\": -5, " CMD "}", "max_runtime", "between 0 and");
}

static void test_ten_thousand_character_name_is_refused(void **state)
{
    (void)state;
    size_t n = 10000;
    char *body = malloc(n + 64);
    assert_non_null(body);
    size_t used = (size_t)sprintf(body, "{\"name\": \"");
    memset(body + used, 'a', n);
    used += n;
    sprintf(body + used, "\", " CMD "}");
    assert_refused(body, "name", "got 10000");
    free(body);
}

static void test_name_of_the_maximum_length_is_accepted(void **state)
{
    (void)state;
    char body[JOB_SPEC_MAX_NAME + 64];
    size_t used = (size_t)sprintf(body, "{\"name\": \"");
    memset(body + used, 'n', JOB_SPEC_MAX_NAME);
    used += JOB_SPEC_MAX_NAME;
    sprintf(body + used, "\", " CMD "}");
    struct parsed p = parse_ok(body);
    assert_int_equal(json_string_length(json_object_get(p.spec, "name")), JOB_SPEC_MAX_NAME);
    json_decref(p.spec);
}

static void test_name_with_control_characters_is_refused(void **state)
{
    (void)state;
    assert_refused("{\"name\": \"a\\nb\", " CMD "}", "name", "control characters");
}

static void test_invalid_utf8_is_refused(void **state)
{
    (void)state;
    struct tide_err err = parse_err("{\"name\": \"\xc3\x28\", " CMD "}");
    assert_non_null(strstr(err.message, "invalid JSON"));
}

static void test_duplicate_keys_are_refused(void **state)
{
    (void)state;
    struct tide_err err = parse_err("{\"gpus\": 1, \"gpus\": 8, " CMD "}");
    assert_non_null(strstr(err.message, "duplicate"));
}

static void test_body_that_is_not_an_object_is_refused(void **state)
{
    (void)state;
    struct tide_err err = parse_err("[\"python3\"]");
    assert_non_null(strstr(err.message, "JSON object"));
}

static void test_body_need_not_be_nul_terminated(void **state)
{
    (void)state;
    const char body[] = "{" CMD "}garbage";
    json_t *spec = NULL;
    struct job job;
    struct tide_err err = {0};
    assert_int_equal(job_spec_parse(body, strlen("{" CMD "}"), &spec, &job, &err), 0);
    json_decref(spec);
}

static void test_missing_command_is_refused(void **state)
{
    (void)state;
    assert_refused("{\"name\": \"x\"}", "command", "required");
}

static void test_empty_command_is_refused(void **state)
{
    (void)state;
    assert_refused("{\"command\": []}", "command", "non-empty array");
}

static void test_command_as_a_string_is_refused(void **state)
{
    (void)state;
    assert_refused("{\"command\": \"python3 train.py\"}", "command", "non-empty array");
}

static void test_command_with_a_non_string_argument_is_refused(void **state)
{
    (void)state;
    assert_refused("{\"command\": [\"sleep\", 10]}", "command", "command[1]: must be a string");
}

static void test_command_with_an_empty_program_is_refused(void **state)
{
    (void)state;
    assert_refused("{\"command\": [\"\", \"x\"]}", "command", "program must not be empty");
}

static void test_env_names_must_be_shell_identifiers(void **state)
{
    (void)state;
    assert_refused("{\"env\": {\"1X\": \"v\"}, " CMD "}", "env", "'1X' is not a valid variable name");
    assert_refused("{\"env\": {\"A-B\": \"v\"}, " CMD "}", "env", "not a valid variable name");
    assert_refused("{\"env\": {\"\": \"v\"}, " CMD "}", "env", "not a valid variable name");
}

static void test_env_values_must_be_strings(void **state)
{
    (void)state;
    assert_refused("{\"env\": {\"N\": 3}, " CMD "}", "env", "env.N: must be a string");
}

/* A body with n variables (the last TIDE_ARRAY_INDEX when named) and the
 * array field when array > 0. New string. */
static char *env_body(int n, bool index_named, int array)
{
    json_t *env = json_object(), *body = json_pack("{s:[s], s:i}", "command", "true", "gpus", 0);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, i == n - 1 && index_named ? "TIDE_ARRAY_INDEX" : "V%d", i);
        json_object_set_new(env, name, json_string("x"));
    }
    json_object_set_new(body, "env", env);
    if (array)
        json_object_set_new(body, "array", json_integer(array));
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    return text;
}

static void test_an_array_members_spec_with_its_index_reads_back(void **state)
{
    (void)state;
    /* each member's stored spec gains TIDE_ARRAY_INDEX and is read back
     * at every start: 1025 variables there stopped the server loading */
    char *over = env_body(JOB_SPEC_MAX_ENV + 1, false, 2);
    assert_refused(over, "env", "at most 1024 variables");
    free(over);
    int fit[][3] = {{JOB_SPEC_MAX_ENV, 0, 2}, {JOB_SPEC_MAX_ENV, 1, 2}, {JOB_SPEC_MAX_ENV, 0, 0}};
    for (size_t i = 0; i < sizeof fit / sizeof fit[0]; i++) {
        char *body = env_body(fit[i][0], fit[i][1], fit[i][2]);
        struct parsed p = parse_ok(body);
        if (fit[i][2]) {
            json_object_set_new(json_object_get(p.spec, "env"), "TIDE_ARRAY_INDEX",
                                json_string("1"));
            json_object_del(p.spec, "array");
        }
        char *member = json_dumps(p.spec, JSON_COMPACT); /* as a member is stored */
        json_decref(p.spec);
        p = parse_ok(member);
        json_decref(p.spec);
        free(member);
        free(body);
    }
}

static void test_env_must_be_an_object(void **state)
{
    (void)state;
    assert_refused("{\"env\": [\"A=b\"], " CMD "}", "env", "must be an object");
}

static void test_relative_workdir_is_refused(void **state)
{
    (void)state;
    assert_refused("{\"workdir\": \"data/run\", " CMD "}", "workdir", "absolute path");
}

static void test_checkpoint_signal_accepts_names_with_or_without_sig_and_numbers(void **state)
{
    (void)state;
    assert_int_equal(job_spec_signal_number("SIGTERM"), SIGTERM);
    assert_int_equal(job_spec_signal_number("TERM"), SIGTERM);
    assert_int_equal(job_spec_signal_number("SIGUSR1"), SIGUSR1);
    assert_int_equal(job_spec_signal_number("USR2"), SIGUSR2);
    assert_int_equal(job_spec_signal_number("15"), 15);
    struct parsed p = parse_ok("{\"checkpoint_signal\": \"USR1\", " CMD "}");
    assert_spec_string(p.spec, "checkpoint_signal", "USR1");
    json_decref(p.spec);
}

static void test_checkpoint_signal_refuses_what_is_not_a_signal(void **state)
{
    (void)state;
    assert_int_equal(job_spec_signal_number("SIGNOPE"), -1);
    assert_int_equal(job_spec_signal_number("0"), -1);
    assert_int_equal(job_spec_signal_number("65"), -1);
    assert_int_equal(job_spec_signal_number(""), -1);
    assert_int_equal(job_spec_signal_number(" 15"), -1); /* stored as given, it was taken */
    assert_int_equal(job_spec_signal_number("+9"), -1);
    assert_refused("{\"checkpoint_signal\": \"SIGNOPE\", " CMD "}", "checkpoint_signal",
                   "'SIGNOPE' is not a signal");
}

static void test_image_and_mounts_are_kept_and_give_the_job_an_image_key(void **state)
{
    (void)state;
    struct parsed p = parse_ok("{\"image\": \"localhost/tide-test:1\", \"mounts\": "
                               "[\"/data:/data:ro\", \"/scratch:/scratch\"], " CMD "}");
    assert_spec_string(p.spec, "image", "localhost/tide-test:1");
    assert_int_equal(json_array_size(json_object_get(p.spec, "mounts")), 2);
    assert_true(p.job.image_key != 0);
    assert_true(p.job.image_key == image_key("localhost/tide-test:1"));
    json_decref(p.spec);
    struct parsed bare = parse_ok("{" CMD "}");
    assert_true(bare.job.image_key == 0);
    assert_null(json_object_get(bare.spec, "image"));
    json_decref(bare.spec);
}

static void test_image_without_tag_means_latest(void **state)
{
    (void)state;
    assert_true(image_key("busybox") == image_key("busybox:latest"));
    assert_true(image_key("localhost:5000/busybox") == image_key("localhost:5000/busybox:latest"));
    assert_true(image_key("busybox:1") != image_key("busybox:2"));
    assert_true(image_key("") == 0);
}

static void test_bad_images_and_mounts_are_refused_naming_the_field(void **state)
{
    (void)state;
    assert_refused("{\"image\": \"\", " CMD "}", "image", "bytes long");
    assert_refused("{\"image\": \"py torch\", " CMD "}", "image", "not an image reference");
    assert_refused("{\"image\": \"--privileged\", " CMD "}", "image", "letter or digit");
    assert_refused("{\"image\": 3, " CMD "}", "image", "string");
    assert_refused("{\"image\": \"a:1\", \"mounts\": \"/a:/b\", " CMD "}", "mounts", "array");
    assert_refused("{\"image\": \"a:1\", \"mounts\": [\"data:/data\"], " CMD "}", "mounts",
                   "absolute");
    assert_refused("{\"image\": \"a:1\", \"mounts\": [\"/data\"], " CMD "}", "mounts",
                   "HOST:CONTAINER");
    assert_refused("{\"image\": \"a:1\", \"mounts\": [\"/a/../etc:/b\"], " CMD "}", "mounts",
                   "..");
    assert_refused("{\"image\": \"a:1\", \"mounts\": [\"/a:/b/..\"], " CMD "}", "mounts", "..");
    assert_refused("{\"image\": \"a:1\", \"mounts\": [\"/a:/b:rx\"], " CMD "}", "mounts",
                   "ro or rw");
    assert_refused("{\"mounts\": [\"/a:/b\"], " CMD "}", "mounts", "only a job with an image");
}

#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* A transport makes the runtime (root) read the node's files or another
 * store, and store the result under a name of the archive's choosing. */
static void test_images_with_a_transport_are_refused_and_registry_forms_kept(void **state)
{
    (void)state;
    static const char *const refused[] = {
        "docker-archive:/tmp/x.tar",
        "docker-archive:x.tar", /* a path relative to the runtime's directory */
        "oci-archive:/tmp/x.tar",
        "oci:/srv/layout:tag",
        "dir:/srv/image",
        "containers-storage:docker.io/library/python:3.12",
        "docker-daemon:python:3.12",
        "docker://docker.io/library/python:3.12",
        "sif:/tmp/x.sif",
        "ostree:name@/ostree/repo",
        "tarball:/tmp/x.tar",
        "Docker-Archive:/tmp/x.tar",
        "other-transport:/tmp/x", /* one no list knows yet */
        "host:port/name:1",
    };
    char body[256];
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        snprintf(body, sizeof body, "{\"image\": \"%s\", " CMD "}", refused[i]);
        assert_refused(body, "image", "a registry reference is expected");
    }
    static const char *const kept[] = {
        "python",
        "python:3.12",
        "localhost/tide-test:1",
        "docker.io/library/python:3.12",
        "registry.example.com:5000/team/name:tag",
        "localhost:5000/name",
        "python@" DIGEST,
        "host:5000/name:tag@" DIGEST,
        "dirt:1", /* names that only start like a transport */
        "oci-tools/image:2",
        "docker:24-dind", /* Docker Hub's docker image: the transport needs docker:// */
    };
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        snprintf(body, sizeof body, "{\"image\": \"%s\", " CMD "}", kept[i]);
        struct parsed p = parse_ok(body);
        assert_spec_string(p.spec, "image", kept[i]);
        json_decref(p.spec);
    }
}

static void test_dependencies_hold_the_job_and_bad_ids_are_refused(void **state)
{
    (void)state;
    json_t *spec = NULL;
    struct job job;
    const char *body = "{\"depends_on\": [3, 4], " CMD "}";
    assert_int_equal(job_spec_parse(body, strlen(body), &spec, &job, NULL), 0);
    assert_true(job.held);
    assert_int_equal(job.ndeps, 2);
    assert_int_equal(job.depends_on[1], 4);
    json_decref(spec);
    assert_refused("{\"depends_on\": [0], " CMD "}", "depends_on", "depends_on[0]: must be a job id");
    assert_refused("{\"depends_on\": 3, " CMD "}", "depends_on", "must be an array");
    assert_refused("{\"array\": 0, " CMD "}", "array", "between 1 and 10000");
    assert_refused("{\"array\": 10001, " CMD "}", "array", "between 1 and 10000, got 10001");
}

static void test_refused_spec_without_err_leaves_spec_out_null(void **state)
{
    (void)state;
    json_t *spec = (json_t *)1;
    struct job job;
    const char *body = "{\"gpus\": -1, " CMD "}";
    assert_int_equal(job_spec_parse(body, strlen(body), &spec, &job, NULL), TIDE_EINVAL);
    assert_null(spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal_spec_gets_the_documented_defaults),
        cmocka_unit_test(test_default_name_is_the_programs_basename),
        cmocka_unit_test(test_default_name_from_an_odd_program_parses_again),
        cmocka_unit_test(test_given_values_fill_the_scheduling_fields_of_the_job),
        cmocka_unit_test(test_canonical_spec_keeps_given_values),
        cmocka_unit_test(test_integer_fields_refuse_strings_and_fractions_naming_the_field),
        cmocka_unit_test(test_string_fields_refuse_numbers_naming_the_field),
        cmocka_unit_test(test_preemptible_must_be_a_boolean),
        cmocka_unit_test(test_queue_and_project_must_be_identifiers),
        cmocka_unit_test(test_unknown_field_is_refused_by_name),
        cmocka_unit_test(test_negative_gpu_count_is_refused),
        cmocka_unit_test(test_absurd_gpu_count_is_refused),
        cmocka_unit_test(test_out_of_range_values_say_the_allowed_range),
        cmocka_unit_test(test_ten_thousand_character_name_is_refused),
        cmocka_unit_test(test_name_of_the_maximum_length_is_accepted),
        cmocka_unit_test(test_name_with_control_characters_is_refused),
        cmocka_unit_test(test_invalid_utf8_is_refused),
        cmocka_unit_test(test_duplicate_keys_are_refused),
        cmocka_unit_test(test_body_that_is_not_an_object_is_refused),
        cmocka_unit_test(test_body_need_not_be_nul_terminated),
        cmocka_unit_test(test_missing_command_is_refused),
        cmocka_unit_test(test_empty_command_is_refused),
        cmocka_unit_test(test_command_as_a_string_is_refused),
        cmocka_unit_test(test_command_with_a_non_string_argument_is_refused),
        cmocka_unit_test(test_command_with_an_empty_program_is_refused),
        cmocka_unit_test(test_env_names_must_be_shell_identifiers),
        cmocka_unit_test(test_env_values_must_be_strings),
        cmocka_unit_test(test_env_must_be_an_object),
        cmocka_unit_test(test_an_array_members_spec_with_its_index_reads_back),
        cmocka_unit_test(test_relative_workdir_is_refused),
        cmocka_unit_test(test_checkpoint_signal_accepts_names_with_or_without_sig_and_numbers),
        cmocka_unit_test(test_checkpoint_signal_refuses_what_is_not_a_signal),
        cmocka_unit_test(test_image_and_mounts_are_kept_and_give_the_job_an_image_key),
        cmocka_unit_test(test_image_without_tag_means_latest),
        cmocka_unit_test(test_bad_images_and_mounts_are_refused_naming_the_field),
        cmocka_unit_test(test_images_with_a_transport_are_refused_and_registry_forms_kept),
        cmocka_unit_test(test_dependencies_hold_the_job_and_bad_ids_are_refused),
        cmocka_unit_test(test_refused_spec_without_err_leaves_spec_out_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
