/* start and stop actions (agent_actions.h). */
#include "agent/agent_actions.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

/* Bounds on what one action may ask for, so a broken server cannot make
 * the agent allocate without limit. */
#define ACTION_MAX_ARGS 4096
#define ACTION_MAX_ENV 4096
#define ACTION_MAX_MOUNTS 64

/* Everything a parsed start action owns; strings point into the JSON. */
struct start_args {
    char **command;
    char **env;
    size_t nenv;
    int *gpus;
    size_t ngpus;
    char **uuids;
    char *workdir;
    char **mounts; /* point into the JSON */
    size_t nmounts;
    char invalid[256];
};

static void start_args_release(struct start_args *s)
{
    free(s->command);
    for (size_t i = 0; i < s->nenv; i++)
        free(s->env[i]);
    free(s->env);
    free(s->gpus);
    free(s->uuids);
    free(s->workdir);
    free(s->mounts);
}

/* Records the first reason the action cannot run; returns -1 for chaining. */
static int invalid(struct start_args *s, const char *fmt, const char *what)
{
    if (!s->invalid[0])
        snprintf(s->invalid, sizeof s->invalid, fmt, what);
    return -1;
}

static int parse_command(json_t *action, struct start_args *s)
{
    json_t *cmd = json_object_get(action, "command");
    size_t n = json_array_size(cmd);
    if (!json_is_array(cmd) || n == 0 || n > ACTION_MAX_ARGS)
        return invalid(s, "%s must be a non-empty array of strings", "command");
    s->command = calloc(n + 1, sizeof *s->command);
    if (!s->command)
        return invalid(s, "%s", "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *arg = json_string_value(json_array_get(cmd, i));
        if (!arg)
            return invalid(s, "%s must be a non-empty array of strings", "command");
        s->command[i] = (char *)arg; /* exec's argv type; never written */
    }
    if (!*s->command[0])
        return invalid(s, "%s[0] must not be empty", "command");
    return 0;
}

static int parse_env(json_t *action, struct start_args *s)
{
    json_t *env = json_object_get(action, "env");
    if (!env || json_is_null(env))
        return 0;
    if (!json_is_object(env) || json_object_size(env) > ACTION_MAX_ENV)
        return invalid(s, "%s must be an object of strings", "env");
    s->env = calloc(json_object_size(env) + 1, sizeof *s->env);
    if (!s->env)
        return invalid(s, "%s", "out of memory");
    const char *key;
    json_t *val;
    json_object_foreach(env, key, val)
    {
        if (!json_is_string(val))
            return invalid(s, "env.%s must be a string", key);
        if (!*key || strchr(key, '='))
            return invalid(s, "env name '%s' must be non-empty and without '='", key);
        char *entry = NULL;
        if (asprintf(&entry, "%s=%s", key, json_string_value(val)) < 0)
            return invalid(s, "%s", "out of memory");
        s->env[s->nenv++] = entry;
    }
    return 0;
}

static int parse_gpus(struct agent *a, json_t *action, struct start_args *s)
{
    json_t *gpus = json_object_get(action, "gpus");
    if (!gpus || json_is_null(gpus))
        return 0;
    size_t n = json_array_size(gpus);
    if (!json_is_array(gpus) || n > GPU_MAX_DEVICES)
        return invalid(s, "%s must be an array of GPU indices", "gpus");
    if (n == 0)
        return 0;
    s->gpus = calloc(n, sizeof *s->gpus);
    s->uuids = calloc(n, sizeof *s->uuids);
    if (!s->gpus || !s->uuids)
        return invalid(s, "%s", "out of memory");
    json_t *uuids = json_object_get(action, "gpu_uuids");
    bool given = json_is_array(uuids) && json_array_size(uuids) == n;
    for (size_t i = 0; i < n; i++) {
        json_t *g = json_array_get(gpus, i);
        const struct gpu_device *d =
            json_is_integer(g) ? gpu_backend_find(&a->gpus, (int)json_integer_value(g)) : NULL;
        if (!d || json_integer_value(g) != d->index) {
            char idx[32];
            snprintf(idx, sizeof idx, "%lld", (long long)json_integer_value(g));
            return invalid(s, "gpu %s is not on this node", json_is_integer(g) ? idx : "?");
        }
        for (size_t j = 0; j < i; j++)
            if (s->gpus[j] == d->index)
                return invalid(s, "%s lists a GPU twice", "gpus");
        s->gpus[i] = d->index;
        /* the server's UUIDs win: with MIG they name instances, not boards */
        const char *u = given ? json_string_value(json_array_get(uuids, i)) : NULL;
        s->uuids[i] = (char *)(u ? u : d->uuid);
    }
    s->ngpus = n;
    return 0;
}

/* Optional non-negative integer field; null or absent gives dflt. */
static int opt_uint(json_t *action, const char *key, int64_t dflt, int64_t max, int64_t *out,
                    struct start_args *s)
{
    json_t *v = json_object_get(action, key);
    *out = dflt;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
        return invalid(s, "%s must be a non-negative integer", key);
    *out = json_integer_value(v);
    return 0;
}

static int parse_workdir(struct agent *a, json_t *action, int64_t job_id, struct start_args *s)
{
    json_t *w = json_object_get(action, "workdir");
    if (!w || json_is_null(w))
        return 0;
    const char *dir = json_string_value(w);
    if (!dir || !*dir)
        return invalid(s, "%s must be a non-empty string or null", "workdir");
    /* a relative workdir is taken from the job's directory, the only
     * directory a job can count on */
    int n = dir[0] == '/'
                ? asprintf(&s->workdir, "%s", dir)
                : asprintf(&s->workdir, "%s/jobs/%" PRId64 "/%s", a->work_dir, job_id, dir);
    if (n < 0) {
        s->workdir = NULL;
        return invalid(s, "%s", "out of memory");
    }
    return 0;
}

/* The user the job runs as (run_as.h): its optional `user`, else the
 * agent's default; a refusal makes the action invalid. */
static int parse_user(struct agent *a, json_t *action, struct agent_run_as *r,
                      struct start_args *s, int64_t now_ms)
{
    json_t *u = json_object_get(action, "user");
    if (u && !json_is_null(u) && (!json_is_string(u) || !*json_string_value(u)))
        return invalid(s, "%s must be a non-empty string or null", "user");
    char why[256];
    if (agent_run_as_resolve_cached(a->opts, u && !json_is_null(u) ? json_string_value(u) : NULL,
                                    r, why, sizeof why, now_ms) != 0)
        return invalid(s, "%s", why);
    return 0;
}

/* A container's mounts, checked again here: the agent trusts no path it
 * did not check (HOST:CONTAINER[:ro|rw], both absolute). */
static int parse_mounts(json_t *action, struct start_args *s)
{
    json_t *m = json_object_get(action, "mounts");
    if (!m || json_is_null(m))
        return 0;
    size_t n = json_array_size(m);
    if (!json_is_array(m) || n > ACTION_MAX_MOUNTS)
        return invalid(s, "%s must be an array of HOST:CONTAINER strings", "mounts");
    s->mounts = calloc(n + 1, sizeof *s->mounts);
    if (!s->mounts)
        return invalid(s, "%s", "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *v = json_string_value(json_array_get(m, i));
        const char *colon = v ? strchr(v, ':') : NULL;
        if (!v || v[0] != '/' || !colon || colon[1] != '/' || strstr(v, "/../") ||
            strstr(v, "/..:"))
            return invalid(s, "%s entries must be /HOST:/CONTAINER[:ro]", "mounts");
        s->mounts[s->nmounts++] = (char *)v;
    }
    return 0;
}

static bool apply_start(struct agent *a, json_t *action, int64_t job_id, int64_t attempt,
                        int64_t now_ms)
{
    if (agent_find_task(a, job_id, attempt) || agent_was_forgotten(a, job_id, attempt))
        return false; /* a resend: the server has not seen our report yet */
    if (a->shutting_down) {
        log_info("job %" PRId64 ".%" PRId64 ": not started, the agent is stopping", job_id,
                 attempt);
        return false;
    }
    if (a->ntasks >= AGENT_MAX_TASKS) {
        log_warn("job %" PRId64 ".%" PRId64 ": not started, already %d tasks", job_id, attempt,
                 AGENT_MAX_TASKS);
        return false;
    }
    struct start_args s;
    memset(&s, 0, sizeof s);
    int64_t max_runtime = 0, grace = a->opts->kill_grace_s, gpu_limit = 0, memory = 0, cpus = 0;
    static struct agent_run_as run_as; /* large (paths); the agent is single-threaded */
    memset(&run_as, 0, sizeof run_as);
    /* each parser stops at its first problem; s.invalid keeps the first */
    (void)(parse_command(action, &s) || parse_env(action, &s) || parse_gpus(a, action, &s) ||
           opt_uint(action, "max_runtime", 0, INT64_MAX / 2000, &max_runtime, &s) ||
           opt_uint(action, "kill_grace_s", a->opts->kill_grace_s, 86400, &grace, &s) ||
           opt_uint(action, "gpu_memory_limit_mib", 0, INT64_MAX / 2, &gpu_limit, &s) ||
           opt_uint(action, "memory_mib", 0, INT64_MAX >> 20, &memory, &s) ||
           opt_uint(action, "cpus", 0, 1000000, &cpus, &s) || parse_workdir(a, action, job_id, &s) ||
           parse_user(a, action, &run_as, &s, now_ms) || parse_mounts(action, &s));
    json_t *image = json_object_get(action, "image");
    if (image && !json_is_null(image) && (!json_is_string(image) || !json_string_length(image)))
        invalid(&s, "%s must be a non-empty string", "image");
    static int minors[GPU_MAX_DEVICES], deny[GPU_MAX_DEVICES];
    for (size_t i = 0; i < s.ngpus; i++) { /* (parse_gpus found each) */
        const struct gpu_device *d = gpu_backend_find(&a->gpus, s.gpus[i]);
        minors[i] = d ? d->minor : -1;
    }
    size_t ndeny = gpu_backend_denied_minors(&a->gpus, s.gpus, s.ngpus, deny);
    struct agent_task_spec spec = {
        .job_id = job_id,
        .attempt = attempt,
        .command = s.command,
        .env = s.env,
        .nenv = s.nenv,
        .gpus = s.gpus,
        .ngpus = s.ngpus,
        .gpu_uuids = s.uuids,
        .gpu_minors = minors,
        .deny_minors = deny,
        .ndeny = ndeny,
        .max_runtime_s = max_runtime,
        .workdir = s.workdir,
        .kill_grace_s = (int)grace,
        .gpu_memory_limit_mib = gpu_limit,
        .memory_mib = memory,
        .cpus = (int)cpus,
        .checkpoint_dir = json_string_value(json_object_get(action, "checkpoint_dir")),
        .image = json_string_value(image),
        .mounts = s.mounts,
        .nmounts = s.nmounts,
        .invalid = s.invalid[0] ? s.invalid : NULL,
        .run_as = &run_as,
    };
    struct agent_task_site site = {
        .work_dir = a->work_dir,
        .visible_by_index = a->gpus.ops && a->gpus.ops->visible_by_index,
        .fake_telemetry = a->gpus.ops && a->gpus.ops->visible_by_index,
        .guard = &a->guard,
        .cgroups = &a->cgroups,
        .container_runtime = a->container_runtime,
        .job_dirs = a->job_dirs,
    };
    struct agent_task *t = NULL;
    struct tide_err err;
    tide_err_clear(&err);
    int rc = agent_task_start(&spec, &site, now_ms, &t, &err);
    start_args_release(&s);
    if (rc != 0) {
        /* not even a failure report could be made; the server will resend */
        log_error("job %" PRId64 ".%" PRId64 ": %s", job_id, attempt, err.message);
        return false;
    }
    a->tasks[a->ntasks++] = t;
    if (spec.image) /* the runtime pulls what it lacks: the cache changes */
        a->images_stale = true;
    if (t->state == AGENT_TASK_RUNNING)
        log_info("job %" PRId64 ".%" PRId64 ": started pid %d", job_id, attempt, (int)t->pid);
    else
        log_warn("job %" PRId64 ".%" PRId64 ": %s", job_id, attempt, t->reason);
    return true;
}

static bool apply_stop(struct agent *a, json_t *action, int64_t job_id, int64_t attempt,
                       int64_t now_ms)
{
    struct agent_task *t = agent_find_task(a, job_id, attempt);
    if (!t || t->state != AGENT_TASK_RUNNING)
        return false; /* already over: its report says how it ended */
    const char *reason = json_string_value(json_object_get(action, "reason"));
    json_t *g = json_object_get(action, "kill_grace_s");
    int grace = t->kill_grace_s;
    if (json_is_integer(g) && json_integer_value(g) >= 0 && json_integer_value(g) <= 86400)
        grace = (int)json_integer_value(g);
    if (!reason || !*reason)
        reason = "cancelled";
    json_t *sig = json_object_get(action, "signal");
    int first_signal = json_is_integer(sig) ? (int)json_integer_value(sig) : SIGTERM;
    log_info("job %" PRId64 ".%" PRId64 ": stopping (%s) with signal %d, SIGKILL in %d s", job_id,
             attempt, reason, first_signal, grace);
    agent_task_stop(t, reason, grace, first_signal, now_ms);
    return false;
}

bool agent_actions_apply(struct agent *a, json_t *action, int64_t now_ms)
{
    const char *type = json_string_value(json_object_get(action, "type"));
    json_t *jid = json_object_get(action, "job_id"), *jat = json_object_get(action, "attempt");
    if (!type || !json_is_integer(jid) || !json_is_integer(jat)) {
        log_warn("ignoring an action without type, job_id or attempt");
        return false;
    }
    int64_t job_id = json_integer_value(jid), attempt = json_integer_value(jat);
    if (!strcmp(type, "start"))
        return apply_start(a, action, job_id, attempt, now_ms);
    if (!strcmp(type, "stop"))
        return apply_stop(a, action, job_id, attempt, now_ms);
    log_warn("ignoring unknown action '%s' for job %" PRId64, type, job_id);
    return false;
}
