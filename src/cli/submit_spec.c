/* The job spec from flags and files (see submit_spec.h). */
#include "cli/submit_spec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/yaml_json.h"
#include "common/fsutil.h"
#include "core/job_spec.h"

/* Server refuses bodies over 1 MiB, so a bigger file cannot be a job. */
#define CLI_SPEC_FILE_MAX (1024 * 1024)

enum spec_type { SPEC_STRING, SPEC_INT, SPEC_BOOL, SPEC_ENV, SPEC_IDS, SPEC_LIST, SPEC_ARRAY };

struct spec_flag {
    const char *flag;
    const char *field;
    enum spec_type type;
};

static const struct spec_flag spec_flags[] = {
    {"--name", "name", SPEC_STRING},
    {"--queue", "queue", SPEC_STRING},
    {"--project", "project", SPEC_STRING},
    {"--priority", "priority", SPEC_INT},
    {"--gpus", "gpus", SPEC_INT},
    {"--gpu-memory", "gpu_memory", SPEC_INT},
    {"--mig", "mig", SPEC_STRING},
    {"--gpu-model", "gpu_model", SPEC_STRING},
    {"--cpus", "cpus", SPEC_INT},
    {"--memory", "memory", SPEC_INT},
    {"--env", "env", SPEC_ENV},
    {"--workdir", "workdir", SPEC_STRING},
    {"--user", "user", SPEC_STRING},
    {"--image", "image", SPEC_STRING},
    {"--mount", "mounts", SPEC_LIST},
    {"--max-runtime", "max_runtime", SPEC_INT},
    {"--est-runtime", "est_runtime", SPEC_INT},
    {"--retries", "retries", SPEC_INT},
    {"--preemptible", "preemptible", SPEC_BOOL},
    {"--checkpoint-signal", "checkpoint_signal", SPEC_STRING},
    {"--depends-on", "depends_on", SPEC_IDS},
    {"--array", "array", SPEC_ARRAY},
    {"--nodes", "nodes", SPEC_INT},
};

#define SPEC_FLAG_COUNT (sizeof spec_flags / sizeof spec_flags[0])

size_t cli_spec_flag_count(void)
{
    return SPEC_FLAG_COUNT;
}

void cli_spec_flag_opts(struct cli_opt *opts)
{
    for (size_t i = 0; i < SPEC_FLAG_COUNT; i++) {
        opts[i].name = spec_flags[i].flag;
        opts[i].kind = spec_flags[i].type == SPEC_BOOL ? CLI_OPT_OPTIONAL : CLI_OPT_VALUE;
        opts[i].id = (int)i + 1;
    }
}

const char *cli_spec_flag_help(void)
{
    return "  --name NAME            job name\n"
           "  --queue Q              queue (default \"default\")\n"
           "  --project P            project (default \"default\")\n"
           "  --priority N           priority within the queue (default 0)\n"
           "  --gpus N               GPUs, may be 0 (default 1)\n"
           "  --gpu-memory MIB       GPU memory; with --gpus 1 less than a GPU asks for a share\n"
           "  --mig PROFILE          MIG profile, e.g. 1g.18gb\n"
           "  --gpu-model GLOB       GPU model, e.g. 'H200*'\n"
           "  --cpus N               CPU cores (whole cores)\n"
           "  --memory MIB           host memory\n"
           "  --env K=V              environment variable (repeatable)\n"
           "  --workdir DIR          working directory on the node (default: the current\n"
           "                         directory)\n"
           "  --user NAME            user the job runs as on its node (the agent's\n"
           "                         --job-user or one of its --allow-users)\n"
           "  --image IMAGE          run in a container of IMAGE (podman or docker)\n"
           "  --mount HOST:CTR[:ro]  bind mount into the container (repeatable)\n"
           "  --max-runtime S        kill the job after S seconds (0: no limit)\n"
           "  --est-runtime S        expected runtime, for backfill\n"
           "  --retries N            attempts after a failure\n"
           "  --preemptible[=BOOL]   may be preempted by higher-priority work\n"
           "  --checkpoint-signal S  signal sent before preemption, e.g. SIGUSR1\n"
           "  --depends-on ID        start after job ID succeeds (repeatable)\n"
           "  --array N|0-M          submit N (or M+1) copies as an array job; each gets\n"
           "                         TIDE_ARRAY_INDEX 0, 1, ...\n"
           "  --nodes K              may run as a gang over up to K nodes, GPUs split evenly\n";
}

const char *cli_spec_flag_for_field(const char *field)
{
    for (size_t i = 0; i < SPEC_FLAG_COUNT; i++)
        if (!strcmp(spec_flags[i].field, field))
            return spec_flags[i].flag;
    return NULL;
}

static int set_env(json_t *overrides, const char *flag, const char *kv, struct tide_err *err)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return tide_err_set(err, TIDE_EINVAL, "env", "%s: '%s' is not KEY=VALUE", flag, kv);
    json_t *env = json_object_get(overrides, "env");
    if (!env) {
        env = json_object();
        if (!env || json_object_set_new(overrides, "env", env) != 0)
            return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    }
    json_t *value = json_string(eq + 1);
    if (!value)
        return tide_err_set(err, TIDE_EINVAL, "env", "%s: '%s' is not valid UTF-8", flag, kv);
    if (json_object_setn_new(env, kv, (size_t)(eq - kv), value) != 0)
        return tide_err_set(err, TIDE_EINVAL, "env", "%s: '%s' has a bad key", flag, kv);
    return 0;
}

static int add_id(json_t *overrides, const char *flag, const char *s, struct tide_err *err)
{
    long long id;
    int rc = cli_parse_id(flag, s, &id, err);
    if (rc < 0)
        return rc;
    json_t *ids = json_object_get(overrides, "depends_on");
    if (!ids) {
        ids = json_array();
        if (!ids || json_object_set_new(overrides, "depends_on", ids) != 0)
            return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    }
    if (json_array_append_new(ids, json_integer(id)) != 0)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    return 0;
}

/* A repeatable string flag: one more entry of the field's list. */
static int add_string(json_t *overrides, const struct spec_flag *f, const char *s,
                      struct tide_err *err)
{
    json_t *list = json_object_get(overrides, f->field);
    if (!list) {
        list = json_array();
        if (!list || json_object_set_new(overrides, f->field, list) != 0)
            return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    }
    json_t *v = json_string(s);
    if (!v)
        return tide_err_set(err, TIDE_EINVAL, f->field, "%s: not valid UTF-8", f->flag);
    if (json_array_append_new(list, v) != 0)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    return 0;
}
/* --array N, or Slurm's --array 0-M (M+1 tasks, numbered from 0 as the
 * server numbers them); the task count in *count. */
static int parse_array(const char *flag, const char *value, long long *count,
                       struct tide_err *err)
{
    const char *dash = strchr(value, '-');
    if (!dash || dash == value)
        return cli_parse_ll(flag, value, count, err);
    char first[32];
    size_t n = (size_t)(dash - value);
    long long lo, hi;
    if (n >= sizeof first)
        return tide_err_set(err, TIDE_EINVAL, flag, "%s: '%s' is not N or 0-M", flag, value);
    memcpy(first, value, n);
    first[n] = '\0';
    int rc = cli_parse_ll(flag, first, &lo, err);
    if (rc == 0)
        rc = cli_parse_ll(flag, dash + 1, &hi, err);
    if (rc < 0)
        return tide_err_set(err, TIDE_EINVAL, flag, "%s: '%s' is not N or 0-M", flag, value);
    if (lo != 0)
        return tide_err_set(err, TIDE_EINVAL, flag,
                            "%s: '%s': a range starts at 0 (tasks are numbered from 0; "
                            "TIDE_ARRAY_INDEX tells each its number)",
                            flag, value);
    if (hi < lo)
        return tide_err_set(err, TIDE_EINVAL, flag, "%s: '%s': the range is empty", flag,
                            value);
    if (hi >= JOB_SPEC_MAX_ARRAY) /* and hi + 1 must not overflow */
        return tide_err_set(err, TIDE_EINVAL, flag, "%s: '%s': at most %d tasks (0-%d)", flag,
                            value, JOB_SPEC_MAX_ARRAY, JOB_SPEC_MAX_ARRAY - 1);
    *count = hi - lo + 1;
    return 0;
}


int cli_spec_apply_flag(json_t *overrides, int id, const char *value, struct tide_err *err)
{
    if (id < 1 || (size_t)id > SPEC_FLAG_COUNT)
        return tide_err_set(err, TIDE_EINVAL, NULL, "internal: unknown spec flag %d", id);
    const struct spec_flag *f = &spec_flags[id - 1];
    json_t *v = NULL;
    long long n;
    int b, rc;
    switch (f->type) {
    case SPEC_ENV: return set_env(overrides, f->flag, value, err);
    case SPEC_IDS: return add_id(overrides, f->flag, value, err);
    case SPEC_LIST: return add_string(overrides, f, value, err);
    case SPEC_STRING:
        v = json_string(value);
        if (!v)
            return tide_err_set(err, TIDE_EINVAL, f->field, "%s: not valid UTF-8", f->flag);
        break;
    case SPEC_INT:
        if ((rc = cli_parse_ll(f->flag, value, &n, err)) < 0)
            return rc;
        v = json_integer(n);
        break;
    case SPEC_ARRAY:
        if ((rc = parse_array(f->flag, value, &n, err)) < 0)
            return rc;
        v = json_integer(n);
        break;
    case SPEC_BOOL:
        if ((rc = cli_parse_bool(f->flag, value, &b, err)) < 0)
            return rc;
        v = json_boolean(b);
        break;
    }
    if (!v || json_object_set_new(overrides, f->field, v) != 0)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcasecmp(s + n - m, suffix);
}

static const char *kind_of(json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "a string";
    case JSON_NULL: return "nothing";
    default: return "a single value";
    }
}

static int parse_json_spec(const char *name, const char *text, size_t len, json_t **out,
                           struct tide_err *err)
{
    json_error_t jerr;
    *out = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!*out)
        return tide_err_set(err, TIDE_EINVAL, NULL, "%s:%d:%d: %s", name, jerr.line, jerr.column,
                            jerr.text);
    return 0;
}

int cli_spec_load(const char *path, json_t **out, struct tide_err *err)
{
    *out = NULL;
    int from_stdin = !strcmp(path, "-");
    const char *name = from_stdin ? "<stdin>" : path;
    char *text;
    size_t len;
    int rc = fs_read_file(from_stdin ? "/dev/stdin" : path, CLI_SPEC_FILE_MAX, &text, &len);
    if (rc == -EFBIG)
        return tide_err_set(err, TIDE_EINVAL, NULL, "%s: larger than 1 MiB, the server's limit",
                            name);
    if (rc < 0)
        return tide_err_set(err, TIDE_EINVAL, NULL, "cannot read %s: %s", name, strerror(-rc));
    const char *first = text + strspn(text, " \t\r\n");
    int is_json = ends_with(name, ".json") || (!ends_with(name, ".yaml") &&
                                               !ends_with(name, ".yml") && *first == '{');
    /* argv and environment values are text as written: `--lr 0.1` */
    static const char *const text_keys[] = {"command", "env", NULL};
    if (is_json)
        rc = parse_json_spec(name, text, len, out, err);
    else
        rc = cli_yaml_to_json_keeping_text(text, len, name, text_keys, out, err);
    free(text);
    if (rc < 0)
        return rc;
    if (!json_is_object(*out)) {
        rc = tide_err_set(err, TIDE_EINVAL, NULL,
                          "%s: a job spec must be a mapping of fields (name, gpus, command, "
                          "...), found %s",
                          name, kind_of(*out));
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

int cli_spec_merge(json_t *spec, json_t *overrides, struct tide_err *err)
{
    const char *key;
    json_t *value;
    json_object_foreach(overrides, key, value)
    {
        json_t *have = json_object_get(spec, key);
        int rc;
        if (!strcmp(key, "env") && json_is_object(have))
            rc = json_object_update(have, value);
        else
            rc = json_object_set(spec, key, value);
        if (rc != 0)
            return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    }
    return 0;
}
