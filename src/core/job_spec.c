/* Field-by-field validation of job specs with messages that name the field. */
#include "core/job_spec.h"

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse_scalar.h"
#include "core/gpu_share.h"
#include "core/image.h"
#include "core/image_ref.h"

#include "core/core_banned.h"

#define MAX_MIB (16LL * 1024 * 1024) /* 16 TiB: anything above is a typo */

typedef int (*field_check)(json_t *value, const char *field, json_t *spec, struct job *job,
                           struct tide_err *err);

/* Copies an accepted field into the canonical spec. */
static int keep_field(json_t *spec, const char *field, json_t *value, struct tide_err *err)
{
    if (json_object_set(spec, field, value) != 0)
        return tide_err_set(err, TIDE_ENOMEM, field, "%s: out of memory", field);
    return 0;
}

static int want_integer(json_t *v, const char *field, long long lo, long long hi, long long *out,
                        struct tide_err *err)
{
    if (!json_is_integer(v))
        return tide_err_set(err, TIDE_EINVAL, field, "%s: must be an integer, got %s", field,
                            json_is_real(v) ? "a fraction" : json_is_string(v) ? "a string"
                            : json_is_boolean(v) ? "a boolean" : json_is_null(v) ? "null"
                                                               : "an object or array");
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return tide_err_set(err, TIDE_EINVAL, field, "%s: must be between %lld and %lld, got %lld",
                            field, lo, hi, x);
    *out = x;
    return 0;
}

static int want_string(json_t *v, const char *field, size_t min_len, size_t max_len,
                       const char **out, struct tide_err *err)
{
    if (!json_is_string(v))
        return tide_err_set(err, TIDE_EINVAL, field, "%s: must be a string", field);
    size_t n = json_string_length(v);
    if (n < min_len || n > max_len)
        return tide_err_set(err, TIDE_EINVAL, field,
                            "%s: must be %zu to %zu bytes long (UTF-8), got %zu", field,
                            min_len, max_len, n);
    const char *s = json_string_value(v);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return tide_err_set(err, TIDE_EINVAL, field, "%s: must not contain control characters",
                                field);
    *out = s;
    return 0;
}

static int want_identifier(json_t *v, const char *field, const char **out, struct tide_err *err)
{
    int rc = want_string(v, field, 1, TIDE_NAME_MAX - 1, out, err);
    if (rc)
        return rc;
    for (const char *p = *out; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return tide_err_set(err, TIDE_EINVAL, field,
                                "%s: may contain only letters, digits, '-', '_' and '.'", field);
    return 0;
}

static int check_name(json_t *v, const char *f, json_t *spec, struct job *job, struct tide_err *err)
{
    (void)job;
    const char *s = ""; /* set on success; -O3 cannot tell */
    int rc = want_string(v, f, 1, JOB_SPEC_MAX_NAME, &s, err);
    return rc ? rc : keep_field(spec, f, v, err);
}

static int check_queue(json_t *v, const char *f, json_t *spec, struct job *job, struct tide_err *err)
{
    const char *s = ""; /* set on success; -O3 cannot tell */
    int rc = want_identifier(v, f, &s, err);
    if (rc)
        return rc;
    snprintf(job->queue, sizeof job->queue, "%s", s);
    return keep_field(spec, f, v, err);
}

static int check_project(json_t *v, const char *f, json_t *spec, struct job *job,
                         struct tide_err *err)
{
    const char *s = ""; /* set on success; -O3 cannot tell */
    int rc = want_identifier(v, f, &s, err);
    if (rc)
        return rc;
    snprintf(job->project, sizeof job->project, "%s", s);
    return keep_field(spec, f, v, err);
}

#define INTEGER_FIELD(fn, lo, hi, assign)                                                          \
    static int fn(json_t *v, const char *f, json_t *spec, struct job *job, struct tide_err *err)  \
    {                                                                                              \
        long long x = 0;                                                                           \
        int rc = want_integer(v, f, lo, hi, &x, err);                                              \
        if (rc)                                                                                    \
            return rc;                                                                             \
        assign;                                                                                    \
        (void)job;                                                                                 \
        return keep_field(spec, f, v, err);                                                        \
    }

INTEGER_FIELD(check_priority, -JOB_SPEC_MAX_PRIORITY, JOB_SPEC_MAX_PRIORITY, job->priority = (int)x)
INTEGER_FIELD(check_gpus, 0, TIDE_MAX_GPUS_PER_NODE * TIDE_MAX_GANG_NODES, job->gpus = (int)x)
INTEGER_FIELD(check_nodes, 1, TIDE_MAX_GANG_NODES, job->max_nodes = (int)x)
INTEGER_FIELD(check_gpu_memory, 0, MAX_MIB, job->gpu_memory_mib = x)
INTEGER_FIELD(check_cpus, 0, 4096, job->cpus = (int)x)
INTEGER_FIELD(check_memory, 0, MAX_MIB, job->memory_mib = x)
INTEGER_FIELD(check_max_runtime, 0, JOB_SPEC_MAX_RUNTIME_S, job->max_runtime_s = x)
INTEGER_FIELD(check_est_runtime, 0, JOB_SPEC_MAX_RUNTIME_S, job->est_runtime_s = x)
INTEGER_FIELD(check_retries, 0, JOB_SPEC_MAX_RETRIES, job->retries = (int)x)

static int check_gpu_model(json_t *v, const char *f, json_t *spec, struct job *job,
                           struct tide_err *err)
{
    const char *s = ""; /* set on success; -O3 cannot tell */
    int rc = want_string(v, f, 0, sizeof job->gpu_model - 1, &s, err);
    if (rc)
        return rc;
    snprintf(job->gpu_model, sizeof job->gpu_model, "%s", s);
    return keep_field(spec, f, v, err);
}

static int check_mig(json_t *v, const char *f, json_t *spec, struct job *job, struct tide_err *err)
{
    const char *s = ""; /* set on success; -O3 cannot tell */
    int rc = want_string(v, f, 1, sizeof job->mig - 1, &s, err);
    if (rc)
        return rc;
    if (!gpu_mig_profile_valid(s))
        return tide_err_set(err, TIDE_EINVAL, f,
                            "%s: '%.23s' is not a MIG profile like \"1g.10gb\" (<n>g.<m>gb)", f, s);
    snprintf(job->mig, sizeof job->mig, "%s", s);
    return keep_field(spec, f, v, err);
}

static int check_command(json_t *v, const char *f, json_t *spec, struct job *job,
                         struct tide_err *err)
{
    (void)job;
    if (!json_is_array(v) || json_array_size(v) == 0)
        return tide_err_set(err, TIDE_EINVAL, f,
                            "%s: must be a non-empty array of strings (argv)", f);
    if (json_array_size(v) > JOB_SPEC_MAX_ARGS)
        return tide_err_set(err, TIDE_EINVAL, f, "%s: at most %d arguments", f, JOB_SPEC_MAX_ARGS);
    size_t i;
    json_t *arg;
    json_array_foreach(v, i, arg)
    {
        if (!json_is_string(arg))
            return tide_err_set(err, TIDE_EINVAL, f, "%s[%zu]: must be a string", f, i);
        if (i == 0 && json_string_length(arg) == 0)
            return tide_err_set(err, TIDE_EINVAL, f, "%s[0]: the program must not be empty", f);
        if (strlen(json_string_value(arg)) != json_string_length(arg))
            return tide_err_set(err, TIDE_EINVAL, f, "%s[%zu]: must not contain NUL", f, i);
    }
    return keep_field(spec, f, v, err);
}

static int check_env(json_t *v, const char *f, json_t *spec, struct job *job, struct tide_err *err)
{
    (void)job;
    if (!json_is_object(v))
        return tide_err_set(err, TIDE_EINVAL, f, "%s: must be an object of NAME: \"value\"", f);
    /* TIDE_ARRAY_INDEX is not counted: an array member's stored spec gains
     * it, and must read back as its array's did */
    if (json_object_size(v) - (json_object_get(v, "TIDE_ARRAY_INDEX") != NULL) > JOB_SPEC_MAX_ENV)
        return tide_err_set(err, TIDE_EINVAL, f,
                            "%s: at most %d variables (TIDE_ARRAY_INDEX aside)", f,
                            JOB_SPEC_MAX_ENV);
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val)
    {
        bool ok = key[0] && (isalpha((unsigned char)key[0]) || key[0] == '_');
        for (const char *p = key; ok && *p; p++)
            ok = isalnum((unsigned char)*p) || *p == '_';
        if (!ok)
            return tide_err_set(err, TIDE_EINVAL, f,
                                "%s: '%.64s' is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)",
                                f, key);
        if (!json_is_string(val) || strlen(json_string_value(val)) != json_string_length(val))
            return tide_err_set(err, TIDE_EINVAL, f, "%s.%.64s: must be a string without NUL", f,
                                key);
    }
    return keep_field(spec, f, v, err);
}

static int check_workdir(json_t *v, const char *f, json_t *spec, struct job *job,
                         struct tide_err *err)
{
    (void)job;
    const char *s = ""; /* set on success; -O3 cannot tell */
    int rc = want_string(v, f, 1, 1024, &s, err);
    if (rc)
        return rc;
    if (s[0] != '/')
        return tide_err_set(err, TIDE_EINVAL, f, "%s: must be an absolute path", f);
    return keep_field(spec, f, v, err);
}

/* The user the job runs as on its node (the agent decides whether it
 * may: its --job-user and --allow-users); a POSIX user name. */
static int check_user(json_t *v, const char *f, json_t *spec, struct job *job,
                      struct tide_err *err)
{
    (void)job;
    const char *s = ""; /* set on success; -O3 cannot tell */
    int rc = want_string(v, f, 1, 32, &s, err);
    if (rc)
        return rc;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.')
            return tide_err_set(err, TIDE_EINVAL, f,
                                "%s: '%s' is not a user name (letters, digits, '.', '_', '-')", f,
                                s);
    if (s[0] == '-' || s[0] == '.')
        return tide_err_set(err, TIDE_EINVAL, f, "%s: '%s' must not start with '-' or '.'", f, s);
    return keep_field(spec, f, v, err);
}

static int check_preemptible(json_t *v, const char *f, json_t *spec, struct job *job,
                             struct tide_err *err)
{
    if (!json_is_boolean(v))
        return tide_err_set(err, TIDE_EINVAL, f, "%s: must be true or false", f);
    job->preemptible = json_is_true(v);
    return keep_field(spec, f, v, err);
}

int job_spec_signal_number(const char *name)
{
    static const struct {
        const char *name;
        int number;
    } signals[] = {{"TERM", SIGTERM}, {"INT", SIGINT}, {"HUP", SIGHUP}, {"USR1", SIGUSR1},
                   {"USR2", SIGUSR2}, {"QUIT", SIGQUIT}, {"KILL", SIGKILL}};
    if (!strncmp(name, "SIG", 3))
        name += 3;
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        if (!strcmp(name, signals[i].name))
            return signals[i].number;
    long long n; /* digits only: " 15" and "+9" are no signal names */
    if (parse_scalar_int(name, &n) == 0 && n >= 1 && n <= 64)
        return (int)n;
    return -1;
}

static int check_checkpoint_signal(json_t *v, const char *f, json_t *spec, struct job *job,
                                   struct tide_err *err)
{
    (void)job;
    const char *s = ""; /* set on success; -O3 cannot tell */
    int rc = want_string(v, f, 1, 16, &s, err);
    if (rc)
        return rc;
    if (job_spec_signal_number(s) < 0)
        return tide_err_set(err, TIDE_EINVAL, f,
                            "%s: '%s' is not a signal (use e.g. SIGTERM, SIGUSR1 or a number)", f, s);
    return keep_field(spec, f, v, err);
}

static int check_depends_on(json_t *v, const char *f, json_t *spec, struct job *job,
                            struct tide_err *err)
{
    if (!json_is_array(v))
        return tide_err_set(err, TIDE_EINVAL, f, "%s: must be an array of job ids", f);
    if (json_array_size(v) > TIDE_MAX_DEPS)
        return tide_err_set(err, TIDE_EINVAL, f, "%s: at most %d jobs", f, TIDE_MAX_DEPS);
    size_t i;
    json_t *id;
    job->ndeps = 0;
    json_array_foreach(v, i, id)
    {
        if (!json_is_integer(id) || json_integer_value(id) < 1)
            return tide_err_set(err, TIDE_EINVAL, f, "%s[%zu]: must be a job id (a positive integer)",
                                f, i);
        job->depends_on[job->ndeps++] = json_integer_value(id);
    }
    job->held = job->ndeps > 0;
    return keep_field(spec, f, v, err);
}

INTEGER_FIELD(check_array, 1, JOB_SPEC_MAX_ARRAY, (void)x)

/* Image references: registry/name[:tag][@digest], no spaces or controls,
 * and no transport (image_ref.h). */
static int check_image(json_t *v, const char *f, json_t *spec, struct job *job, struct tide_err *err)
{
    const char *s = ""; /* set on success; -O3 cannot tell */
    int rc = want_string(v, f, 1, JOB_SPEC_MAX_IMAGE, &s, err);
    if (rc)
        return rc;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-/:@+", *p))
            return tide_err_set(err, TIDE_EINVAL, f,
                                "%s: '%.64s' is not an image reference (letters, digits and "
                                "._-/:@+ only, e.g. \"docker.io/library/python:3.12\")",
                                f, s);
    if (s[0] == '-' || s[0] == '/' || s[0] == ':')
        return tide_err_set(err, TIDE_EINVAL, f, "%s: must start with a letter or digit", f);
    if (image_ref_has_transport(s))
        return tide_err_set(err, TIDE_EINVAL, f, "%s: '%.64s': " IMAGE_REF_EXPECTED, f, s);
    job->image_key = image_key(s);
    return keep_field(spec, f, v, err);
}

/* An absolute path without ".." components (n bytes of p). */
static bool clean_absolute(const char *p, size_t n)
{
    if (n == 0 || p[0] != '/')
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] == '.' && i + 1 < n && p[i + 1] == '.' && p[i - 1] == '/' &&
            (i + 2 == n || p[i + 2] == '/'))
            return false;
    return true;
}

static int check_mounts(json_t *v, const char *f, json_t *spec, struct job *job,
                        struct tide_err *err)
{
    (void)job;
    if (!json_is_array(v))
        return tide_err_set(err, TIDE_EINVAL, f,
                            "%s: must be an array of \"/host/path:/container/path[:ro]\"", f);
    if (json_array_size(v) > JOB_SPEC_MAX_MOUNTS)
        return tide_err_set(err, TIDE_EINVAL, f, "%s: at most %d mounts", f, JOB_SPEC_MAX_MOUNTS);
    size_t i;
    json_t *m;
    json_array_foreach(v, i, m)
    {
        char field[32];
        snprintf(field, sizeof field, "%s[%zu]", f, i);
        const char *s;
        int rc = want_string(m, field, 3, 4096, &s, err);
        if (rc)
            return rc;
        const char *colon = strchr(s, ':');
        const char *second = colon ? strchr(colon + 1, ':') : NULL;
        size_t target_len = second ? (size_t)(second - colon - 1) : colon ? strlen(colon + 1) : 0;
        if (!colon || !clean_absolute(s, (size_t)(colon - s)) ||
            !clean_absolute(colon + 1, target_len))
            return tide_err_set(err, TIDE_EINVAL, f,
                                "%s: '%.64s' must be HOST:CONTAINER[:ro] with absolute paths "
                                "and no '..'",
                                field, s);
        if (second && strcmp(second + 1, "ro") && strcmp(second + 1, "rw"))
            return tide_err_set(err, TIDE_EINVAL, f, "%s: the option after the paths must be "
                                "ro or rw, got '%.16s'", field, second + 1);
    }
    return keep_field(spec, f, v, err);
}

static const struct {
    const char *name;
    field_check check;
} fields[] = {
    {"name", check_name},
    {"queue", check_queue},
    {"project", check_project},
    {"priority", check_priority},
    {"gpus", check_gpus},
    {"nodes", check_nodes},
    {"gpu_memory", check_gpu_memory},
    {"mig", check_mig},
    {"gpu_model", check_gpu_model},
    {"cpus", check_cpus},
    {"memory", check_memory},
    {"command", check_command},
    {"env", check_env},
    {"workdir", check_workdir},
    {"user", check_user},
    {"image", check_image},
    {"mounts", check_mounts},
    {"max_runtime", check_max_runtime},
    {"est_runtime", check_est_runtime},
    {"retries", check_retries},
    {"preemptible", check_preemptible},
    {"checkpoint_signal", check_checkpoint_signal},
    {"depends_on", check_depends_on},
    {"array", check_array},
};

/* The name a job gets when it has none: its program's basename, made one
 * that check_name accepts, so the canonical spec (stored, and parsed again
 * when the server reloads) is itself valid: control characters become '_',
 * and it is cut to JOB_SPEC_MAX_NAME bytes on a UTF-8 boundary. */
size_t job_spec_cut_utf8(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--; /* s[n] continues a character: cut before that character */
    return n;
}

static json_t *default_name(const char *program)
{
    const char *base = strrchr(program, '/');
    base = base && base[1] ? base + 1 : program;
    char name[JOB_SPEC_MAX_NAME + 1];
    size_t n = strlen(base);
    n = job_spec_cut_utf8(base, n, JOB_SPEC_MAX_NAME);
    for (size_t i = 0; i < n; i++)
        name[i] = ((unsigned char)base[i] < 0x20 || base[i] == 0x7f) ? '_' : base[i];
    name[n] = '\0';
    return json_string(n ? name : "job");
}

/* Sets key to the value make builds, unless the spec has it: nothing is
 * built for a field the submitter gave. */
#define SET_DEFAULT(spec, key, make)                                                               \
    do {                                                                                           \
        if (!json_object_get(spec, key))                                                           \
            json_object_set_new(spec, key, make);                                                  \
    } while (0)

int job_spec_from_object(json_t *obj, json_t **spec_out, struct job *job, struct tide_err *err)
{
    *spec_out = NULL;
    memset(job, 0, sizeof *job);
    if (!json_is_object(obj))
        return tide_err_set(err, TIDE_EINVAL, NULL, "the job spec must be a JSON object");
    json_t *spec = json_object();
    if (!spec)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    job->gpus = 1;
    snprintf(job->project, sizeof job->project, "default");
    snprintf(job->queue, sizeof job->queue, "default");

    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value)
    {
        field_check check = NULL;
        for (size_t i = 0; !check && i < sizeof fields / sizeof fields[0]; i++)
            if (!strcmp(key, fields[i].name))
                check = fields[i].check;
        if (!check) {
            json_decref(spec);
            return tide_err_set(err, TIDE_EINVAL, key, "%.64s: unknown field", key);
        }
        int rc = check(value, key, spec, job, err);
        if (rc) {
            json_decref(spec);
            return rc;
        }
    }
    if (job->max_nodes < 1)
        job->max_nodes = 1;
    if (job->gpus > TIDE_MAX_GPUS_PER_NODE * job->max_nodes) {
        json_decref(spec);
        return tide_err_set(err, TIDE_EINVAL, "gpus",
                            "gpus: %d GPUs need more than %d node%s of at most %d GPUs; ask for "
                            "more nodes with `nodes: k` (up to %d)",
                            job->gpus, job->max_nodes, job->max_nodes == 1 ? "" : "s",
                            TIDE_MAX_GPUS_PER_NODE, TIDE_MAX_GANG_NODES);
    }
    if (job->mig[0] && (job->gpus != 1 || job->gpu_memory_mib)) {
        json_decref(spec);
        return tide_err_set(err, TIDE_EINVAL, "mig",
                            "mig: asks for one MIG instance, whose profile sets its memory; "
                            "use gpus: 1 and no gpu_memory");
    }
    if (json_object_get(spec, "mounts") && !job->image_key) {
        json_decref(spec);
        return tide_err_set(err, TIDE_EINVAL, "mounts",
                            "mounts: only a job with an image (a container) has mounts");
    }
    json_t *command = json_object_get(spec, "command");
    if (!command) {
        json_decref(spec);
        return tide_err_set(err, TIDE_EINVAL, "command",
                            "command: required (an argv array such as [\"python3\", \"train.py\"])");
    }
    SET_DEFAULT(spec, "name", default_name(json_string_value(json_array_get(command, 0))));
    SET_DEFAULT(spec, "project", json_string(job->project));
    SET_DEFAULT(spec, "queue", json_string(job->queue));
    SET_DEFAULT(spec, "priority", json_integer(job->priority));
    SET_DEFAULT(spec, "gpus", json_integer(job->gpus));
    SET_DEFAULT(spec, "retries", json_integer(job->retries));
    SET_DEFAULT(spec, "max_runtime", json_integer(job->max_runtime_s));
    SET_DEFAULT(spec, "preemptible", json_false());
    *spec_out = spec;
    return 0;
}

int job_spec_parse(const char *body, size_t len, json_t **spec_out, struct job *job,
                   struct tide_err *err)
{
    *spec_out = NULL;
    json_error_t jerr;
    json_t *obj = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!obj)
        return tide_err_set(err, TIDE_EINVAL, NULL, "invalid JSON at line %d column %d: %s",
                            jerr.line, jerr.column, jerr.text);
    int rc = job_spec_from_object(obj, spec_out, job, err);
    json_decref(obj);
    return rc;
}
