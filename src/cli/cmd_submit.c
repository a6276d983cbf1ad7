/* `tide submit`: build a job spec from flags and/or a file and POST it. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/fmt.h"
#include "cli/printable.h"
#include "cli/submit_file.h"
#include "cli/submit_spec.h"
#include "cli/report.h"
#include "cli/roles.h"
#include "cli/wait.h"

#define SUBMIT_MAX_OPTS 48

enum { OPT_WAIT = 1000, OPT_FILE };

static void submit_usage(void)
{
    printf("usage: tide submit [FLAGS] [--wait] -- CMD [ARGS...]\n"
           "       tide submit [FLAGS] [--wait] job.yaml|job.json|- [-- CMD [ARGS...]]\n"
           "       tide submit [FLAGS] [--wait] --file jobs.jsonl|-\n"
           "\n"
           "Submits a job and prints its id. A file gives the job spec (YAML or JSON, '-'\n"
           "for stdin; in YAML, command and env values are text as written: 0.1 stays\n"
           "0.1); flags override its fields, --env adds to its env, and a command\n"
           "after -- replaces its command. The job runs in the directory tide submit is\n"
           "run from unless the spec or --workdir names another; a node where that\n"
           "directory does not exist fails the job (start failed: workdir ...). A job\n"
           "with --image runs in a container of that image (podman or docker on the\n"
           "node), in its job directory unless --workdir names a path in the image.\n"
           "\n"
           "%s"
           "  --file FILE            many jobs: one JSON spec per line ('-': stdin; blank\n"
           "                         lines and lines starting with # are skipped), sent\n"
           "                         in batches (POST /v1/jobs:batch); flags apply to\n"
           "                         every line. A line the server refuses is reported\n"
           "                         as FILE:LINE on stderr and the exit status is 1;\n"
           "                         the other lines' jobs are still submitted\n"
           "  --wait                 wait until the job finishes and exit with its status:\n"
           "                         0 if it succeeded, else its exit code, 128+N when\n"
           "                         killed by signal N, 124 timeout, 125 cancelled, 1 failed\n"
           "                         without an exit code (an array: its first such job)\n"
           "  --json                 print only the API's JSON (with --wait: the finished\n"
           "                         job, or {\"jobs\": [...]} for an array)\n"
           "  --server URL[,URL...]  tide server(s), tried in order, the leader followed;\n"
           "                         a retried submit never makes a second job (else\n"
           "                         $TIDE_SERVER, ~/.config/tide/config,\n"
           "                         ./.tide/server.url, " CLI_DEFAULT_SERVER ")\n"
           "  --token T              API token (else $TIDE_TOKEN, the config,\n"
           "                         ./.tide/data/admin.token); seen in ps: prefer\n"
           "  --token-file PATH      or $TIDE_TOKEN\n"
           "\n"
           "example: tide submit --name train --gpus 2 --max-runtime 3600 -- python3 train.py\n",
           cli_spec_flag_help());
}

static int build_opts(struct cli_opt *opts)
{
    static const struct cli_opt rest[] = {
        {"--wait", CLI_OPT_FLAG, OPT_WAIT},
        {"--file", CLI_OPT_VALUE, OPT_FILE},
        CLI_COMMON_OPTS,
        {NULL, 0, 0},
    };
    size_t n = cli_spec_flag_count();
    if (n + sizeof rest / sizeof rest[0] > SUBMIT_MAX_OPTS)
        return -1;
    cli_spec_flag_opts(opts);
    memcpy(opts + n, rest, sizeof rest);
    return 0;
}

static int set_command(json_t *spec, int argc, char **argv, struct tide_err *err)
{
    json_t *cmd = json_array();
    if (!cmd)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    for (int i = 0; i < argc; i++) {
        json_t *arg = json_string(argv[i]);
        if (!arg || json_array_append_new(cmd, arg) != 0) {
            json_decref(cmd);
            return tide_err_set(err, TIDE_EINVAL, "command", "argument %d is not valid UTF-8",
                                i + 1);
        }
    }
    if (json_object_set_new(spec, "command", cmd) != 0)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    return 0;
}

/* The ids of the jobs in a POST /v1/jobs answer: one job object, or (array
 * jobs) {"jobs": [...]} or a bare list. Returns how many, at most max. */
static size_t answer_ids(json_t *root, long long *ids, size_t max)
{
    if (json_is_number(json_object_get(root, "id"))) {
        ids[0] = (long long)cli_json_number(json_object_get(root, "id"), 0);
        return 1;
    }
    json_t *list = json_is_array(root) ? root : json_object_get(root, "jobs");
    size_t n = 0, i;
    json_t *job;
    json_array_foreach(list, i, job)
    {
        if (n < max && json_is_number(json_object_get(job, "id")))
            ids[n++] = (long long)cli_json_number(json_object_get(job, "id"), 0);
    }
    return n;
}

static void print_submitted(const long long *ids, size_t n)
{
    int contiguous = 1;
    for (size_t i = 1; i < n; i++)
        if (ids[i] != ids[i - 1] + 1)
            contiguous = 0;
    if (n == 1) {
        printf("submitted job %lld\n", ids[0]);
    } else if (contiguous) {
        printf("submitted jobs %lld-%lld\n", ids[0], ids[n - 1]);
    } else {
        printf("submitted jobs");
        for (size_t i = 0; i < n; i++)
            printf(" %lld", ids[i]);
        putchar('\n');
    }
    fflush(stdout);
}

static void print_outcome(json_t *job)
{
    const char *state = cli_json_text(json_object_get(job, "state"), "?");
    const char *reason = cli_json_text(json_object_get(job, "reason"), NULL);
    printf("job %.0f ", cli_json_number(json_object_get(job, "id"), 0));
    cli_put_printable(state, stdout);
    if (reason && *reason) { /* another user's words, maybe (a requeue): escaped */
        fputs(": ", stdout);
        cli_put_printable(reason, stdout);
    }
    putchar('\n');
}

/* After an error about one field the user set by flag, name the flag. */
static int submit_fail(json_t *overrides, struct tide_err *err)
{
    const char *flag = err->field[0] ? cli_spec_flag_for_field(err->field) : NULL;
    if (flag && json_object_get(overrides, err->field)) {
        size_t n = strlen(err->message);
        snprintf(err->message + n, sizeof err->message - n, " (%s)", flag);
    }
    return cli_fail("submit", err);
}

/* An array's ids through POST /v1/jobs:batch, which answers ids only: the
 * answer of POST /v1/jobs holds every task as stored, which the server
 * builds and this process parses only to read the ids back. Returns how
 * many (0 with err set: the server's refusal as POST /v1/jobs words it). */
static size_t submit_array_ids(struct cli_client *c, json_t *spec, const char *key,
                               long long **ids, struct tide_err *err)
{
    *ids = NULL;
    json_t *req = json_pack("{s:[O]}", "jobs", spec);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body) {
        tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        return 0;
    }
    json_t *root = NULL;
    int rc = cli_client_request_json_keyed(c, "POST", "/v1/jobs:batch", body, key, &root, err);
    free(body);
    if (rc < 0)
        return 0;
    json_t *entry = json_array_get(json_object_get(root, "jobs"), 0);
    json_t *all = json_object_get(entry, "ids");
    size_t n = json_array_size(all);
    if (json_object_get(entry, "error")) {
        char *text = json_dumps(entry, JSON_COMPACT);
        json_int_t status = json_integer_value(json_object_get(entry, "status"));
        cli_client_http_error(c, status ? (long)status : 400, text, err);
        free(text);
        n = 0;
    } else if (n == 0 || !(*ids = malloc(n * sizeof **ids))) {
        tide_err_set(err, TIDE_EIO, NULL, "the server accepted the job but its answer has "
                                          "no job id");
        n = 0;
    }
    for (size_t i = 0; *ids && i < n; i++)
        (*ids)[i] = (long long)cli_json_number(json_array_get(all, i), 0);
    json_decref(root);
    return n;
}

/* What submit_ids did with an answer it printed as it came (--json, no
 * --wait) instead of reading ids from it. */
struct answer_printed {
    bool done;  /* printed: there are no ids, and the command is over */
    int status; /* the command's exit status then (1: stdout failed) */
};

/* The ids of the job(s) spec makes, through POST /v1/jobs; with --json and
 * no --wait its answer is printed instead (printed->done set). Returns how
 * many (0 with err set, or when printed). */
static size_t submit_ids(struct cli_client *c, json_t *spec, const char *key, int wait,
                         long long **ids, struct answer_printed *printed, struct tide_err *err)
{
    *ids = NULL;
    char *body = json_dumps(spec, JSON_COMPACT);
    if (!body) {
        tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        return 0;
    }
    struct http_response resp;
    int rc = cli_client_send(c, "POST", "/v1/jobs", body, key, CLI_TIMEOUT_MS, &resp, err);
    free(body);
    if (rc < 0)
        return 0;
    if (c->json && !wait) {
        printed->done = true;
        printed->status = cli_print_body(resp.body, resp.len);
        http_response_release(&resp);
        return 0;
    }
    json_t *root = json_loadb(resp.body, resp.len, 0, NULL);
    http_response_release(&resp);
    json_t *list = json_is_array(root) ? root : json_object_get(root, "jobs");
    size_t max = json_array_size(list) ? json_array_size(list) : 1;
    *ids = malloc(max * sizeof **ids); /* an array answers one entry per task */
    size_t n = root && *ids ? answer_ids(root, *ids, max) : 0;
    json_decref(root);
    if (n == 0)
        tide_err_set(err, TIDE_EIO, NULL, "the server accepted the job but its answer has "
                                          "no job id");
    return n;
}

static int submit_and_report(struct cli_client *c, json_t *spec, json_t *overrides, int wait)
{
    struct tide_err err = {0};
    char key[CLI_IDEMPOTENCY_KEY_SIZE]; /* a retry on another server must not submit twice */
    cli_idempotency_key_new(key);
    long long *ids = NULL;
    struct answer_printed printed = {.done = false};
    /* An array printed as ids, or waited for, needs only its ids. */
    bool array = json_integer_value(json_object_get(spec, "array")) > 1;
    size_t n = array && !(c->json && !wait)
                   ? submit_array_ids(c, spec, key, &ids, &err)
                   : submit_ids(c, spec, key, wait, &ids, &printed, &err);
    if (printed.done)
        return printed.status;
    if (n == 0) {
        free(ids);
        return submit_fail(overrides, &err);
    }
    if (!c->json)
        print_submitted(ids, n);
    if (!wait) {
        free(ids);
        return 0;
    }
    json_t *final;
    int failed = cli_wait_jobs(c, ids, n, &final, &err);
    free(ids);
    if (failed < 0)
        return cli_fail("submit", &err);
    size_t i;
    json_t *job;
    int status = 0;
    json_array_foreach(final, i, job)
    {
        if (!c->json)
            print_outcome(job);
        if (!status)
            status = cli_job_exit_status(job);
    }
    if (c->json) {
        json_t *out = n == 1 ? json_incref(json_array_get(final, 0))
                             : json_pack("{s:O}", "jobs", final);
        char *text = out ? json_dumps(out, JSON_COMPACT) : NULL;
        json_decref(out);
        if (!text || puts(text) < 0)
            status = status ? status : 1;
        free(text);
    }
    json_decref(final);
    if (fflush(stdout) != 0 && !status)
        status = 1;
    return status;
}

/* Like Slurm, a job runs where it was submitted from unless told otherwise:
 * sets workdir to the current directory when the spec has none. */
static void default_workdir(json_t *spec)
{
    /* a container's workdir is a path in its image, not here */
    if (json_object_get(spec, "workdir") || json_object_get(spec, "image"))
        return;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) {
        fprintf(stderr,
                "tide submit: warning: cannot read the current directory (%s); the job runs "
                "in its job directory on the node\n",
                strerror(errno));
        return;
    }
    json_t *dir = json_string(cwd);
    if (!dir || json_object_set_new(spec, "workdir", dir) != 0)
        fprintf(stderr, "tide submit: warning: the current directory %s cannot be sent as "
                        "workdir (not UTF-8?); the job runs in its job directory\n",
                cwd);
}

/* tide submit --file: every line's job, then (with --wait) all of them. */
static int submit_many(const struct cli_common *co, const char *path, json_t *overrides, int wait)
{
    struct tide_err err = {0};
    struct cli_client c;
    if (cli_client_init(&c, co, &err) < 0)
        return cli_fail("submit", &err);
    long long *ids = NULL;
    size_t n = 0;
    json_t *answers = NULL;
    int rc = cli_submit_file(&c, path, overrides, default_workdir, &ids, &n, &answers, &err);
    if (rc == 2) {
        rc = cli_input_fail("submit", &err);
    } else if (rc < 0) {
        if (n > 0 && !c.json)
            print_submitted(ids, n); /* what earlier batches made */
        rc = cli_fail("submit", &err);
    } else {
        int refused = rc;
        if (c.json && !wait) {
            json_t *out = json_pack("{s:O}", "jobs", answers);
            char *text = out ? json_dumps(out, JSON_COMPACT) : NULL;
            json_decref(out);
            if (!text || puts(text) < 0)
                refused = 1;
            free(text);
        } else if (n > 0 && !c.json) {
            print_submitted(ids, n);
        }
        rc = refused;
        if (wait && n > 0) {
            json_t *final;
            int failed = cli_wait_jobs(&c, ids, n, &final, &err);
            if (failed < 0) {
                rc = cli_fail("submit", &err);
            } else {
                size_t i;
                json_t *job;
                json_array_foreach(final, i, job)
                {
                    if (!c.json)
                        print_outcome(job);
                    if (!rc)
                        rc = cli_job_exit_status(job);
                }
                if (c.json) {
                    json_t *out = json_pack("{s:O}", "jobs", final);
                    char *text = out ? json_dumps(out, JSON_COMPACT) : NULL;
                    json_decref(out);
                    if (!text || puts(text) < 0)
                        rc = rc ? rc : 1;
                    free(text);
                }
                json_decref(final);
            }
        }
    }
    json_decref(answers);
    free(ids);
    cli_client_release(&c);
    if (fflush(stdout) != 0 && !rc)
        rc = 1;
    return rc;
}

int cli_submit_main(int argc, char **argv)
{
    struct cli_opt opts[SUBMIT_MAX_OPTS];
    struct cli_common co = {0};
    struct cli_args a;
    struct tide_err err = {0};
    const char *file = NULL, *many = NULL, *v;
    int wait = 0, id, r, rc = 2;
    if (build_opts(opts) < 0)
        return 1;
    json_t *overrides = json_object(), *spec = NULL;
    if (!overrides)
        return 1;
    cli_args_init(&a, argc, argv);
    while ((r = cli_args_next(&a, opts, &id, &v, &err)) != CLI_ARGS_END) {
        if (r < 0)
            goto usage;
        if (r == CLI_ARGS_POSITIONAL) {
            if (file) {
                tide_err_set(&err, TIDE_EINVAL, NULL,
                             "unexpected argument '%s' (put the command after --)", v);
                goto usage;
            }
            file = v;
        } else if (id == OPT_WAIT) {
            wait = 1;
        } else if (id == OPT_FILE) {
            many = v;
        } else if (!cli_common_apply(&co, id, v) &&
                   cli_spec_apply_flag(overrides, id, v, &err) < 0) {
            goto usage;
        }
    }
    if (co.help) {
        submit_usage();
        rc = 0;
        goto out;
    }
    int ncmd = argc - a.next;
    if (many && (file || ncmd > 0)) {
        tide_err_set(&err, TIDE_EINVAL, "--file",
                     "--file: each line is a whole job spec; give no job file or command too");
        goto usage;
    }
    if (many) {
        rc = submit_many(&co, many, overrides, wait);
        goto out;
    }
    if (!file && ncmd == 0) {
        tide_err_set(&err, TIDE_EINVAL, NULL,
                     "nothing to run: give a command after -- or a job file");
        goto usage;
    }
    if (file && cli_spec_load(file, &spec, &err) < 0) {
        rc = cli_input_fail("submit", &err);
        goto out;
    }
    if (!file && !(spec = json_object()))
        goto out;
    if (cli_spec_merge(spec, overrides, &err) < 0 ||
        (ncmd > 0 && set_command(spec, ncmd, argv + a.next, &err) < 0))
        goto usage;

    default_workdir(spec);

    struct cli_client c;
    if (cli_client_init(&c, &co, &err) < 0) {
        rc = cli_fail("submit", &err);
        goto out;
    }
    rc = submit_and_report(&c, spec, overrides, wait);
    cli_client_release(&c);
    goto out;
usage:
    rc = cli_usage_fail("submit", &err);
out:
    json_decref(spec);
    json_decref(overrides);
    return rc;
}
