/* `tide logs [-f] ID`: a job's output; with -f it streams until the job
 * finishes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/report.h"
#include "cli/roles.h"

/* An error answer starts like this; output that might be one is held back
 * until the HTTP status is known (http_stream tells it only at the end). */
#define ERROR_PREFIX "{\"error\""
#define HOLD_MAX (64 * 1024)

static const char logs_usage[] =
    "usage: tide logs [-f] ID [--server URL] [--token T]\n"
    "\n"
    "Prints the stdout and stderr of every attempt of job ID, as written.\n"
    "  -f, --follow   keep printing new output until the job finishes. A job that\n"
    "                 is still pending is waited for: why it waits is said on\n"
    "                 stderr (again when that changes), then that it started.\n";

enum { OPT_FOLLOW = 1 };

static const struct cli_opt logs_opts[] = {
    {"-f", CLI_OPT_FLAG, OPT_FOLLOW},
    {"--follow", CLI_OPT_FLAG, OPT_FOLLOW},
    CLI_COMMON_OPTS,
    {NULL, 0, 0},
};

struct log_sink {
    char hold[HOLD_MAX];
    size_t held;
    int passing; /* output is known not to be an error body */
    int write_failed;
};

static int sink_flush(struct log_sink *s, const char *data, size_t len)
{
    if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0) {
        s->write_failed = 1;
        return 1;
    }
    return 0;
}

static int on_log_data(const char *data, size_t len, void *ctx)
{
    struct log_sink *s = ctx;
    if (s->passing)
        return sink_flush(s, data, len);
    size_t room = HOLD_MAX - s->held;
    size_t take = len < room ? len : room;
    memcpy(s->hold + s->held, data, take);
    s->held += take;
    size_t cmp = s->held < strlen(ERROR_PREFIX) ? s->held : strlen(ERROR_PREFIX);
    if (memcmp(s->hold, ERROR_PREFIX, cmp) == 0 && take == len && s->held < HOLD_MAX)
        return 0; /* still possibly an error body: keep holding */
    s->passing = 1;
    if (sink_flush(s, s->hold, s->held))
        return 1;
    return take < len ? sink_flush(s, data + take, len - take) : 0;
}

/* Says on stderr why job waits, again whenever that changes, until it is
 * no longer pending; then what it became (nothing for a job that was not
 * pending). Returns 0, or 1 when the job
 * could not be read. job is the caller's first look at it (not released). */
static int wait_until_started(struct cli_client *c, const char *job_path, json_t *job)
{
    char last[256] = "";
    json_incref(job);
    for (;;) {
        const char *state = json_string_value(json_object_get(job, "state"));
        if (!state || strcmp(state, "pending")) {
            const char *node = json_string_value(json_object_get(job, "node"));
            if (last[0]) /* only after saying it waited */
                fprintf(stderr, "tide logs: job %s is %s%s%s\n", strrchr(job_path, '/') + 1,
                    state ? state : "?", node ? " on " : "", node ? node : "");
            json_decref(job);
            return 0;
        }
        const char *why = json_string_value(json_object_get(job, "pending_reason"));
        if (!why)
            why = "waiting for the next scheduling pass";
        if (strcmp(why, last)) {
            fprintf(stderr, "tide logs: job %s is pending (%s); waiting for it to start\n",
                    strrchr(job_path, '/') + 1, why);
            snprintf(last, sizeof last, "%s", why);
        }
        json_decref(job);
        struct timespec pause = {.tv_sec = 1};
        nanosleep(&pause, NULL);
        struct tide_err err = {0};
        if (cli_client_request_json(c, "GET", job_path, NULL, &job, &err) < 0)
            return cli_fail("logs", &err);
    }
}

static int follow_logs(struct cli_client *c, const char *path)
{
    struct tide_err err = {0};
    /* Ask for the job first: a missing job or a bad token fails cleanly. */
    char job_path[64];
    snprintf(job_path, sizeof job_path, "%.*s", (int)(strlen(path) - strlen("/logs")), path);
    json_t *job;
    if (cli_client_request_json(c, "GET", job_path, NULL, &job, &err) < 0)
        return cli_fail("logs", &err);
    int waited = wait_until_started(c, job_path, job);
    json_decref(job);
    if (waited)
        return waited;

    size_t n = strlen(c->server) + strlen(path) + sizeof "?follow=1";
    char *url = malloc(n);
    struct log_sink *sink = calloc(1, sizeof *sink);
    int rc = 1;
    if (!url || !sink) {
        fprintf(stderr, "tide logs: out of memory\n");
        goto out;
    }
    snprintf(url, n, "%s%s?follow=1", c->server, path);
    long status = 0;
    if (http_stream(url, c->token, &status, on_log_data, sink, &err) < 0) {
        tide_err_set(&err, TIDE_EIO, NULL, "lost the log stream from %s: %s", c->server,
                     err.message);
        rc = cli_fail("logs", &err);
    } else if (sink->write_failed) {
        rc = 1;
    } else if (status < 200 || status >= 300) {
        sink->hold[sink->held < HOLD_MAX ? sink->held : HOLD_MAX - 1] = '\0';
        cli_client_http_error(c, status, sink->hold, &err);
        rc = cli_fail("logs", &err);
    } else {
        rc = sink->passing ? 0 : sink_flush(sink, sink->hold, sink->held);
    }
out:
    free(url);
    free(sink);
    return rc;
}

int cli_logs_main(int argc, char **argv)
{
    struct cli_common co = {0};
    struct cli_args a;
    struct tide_err err = {0};
    const char *idtext = NULL, *v;
    int follow = 0, id, r;
    cli_args_init(&a, argc, argv);
    while ((r = cli_args_next(&a, logs_opts, &id, &v, &err)) != CLI_ARGS_END) {
        if (r < 0)
            return cli_usage_fail("logs", &err);
        if (r == CLI_ARGS_POSITIONAL && idtext) {
            tide_err_set(&err, TIDE_EINVAL, NULL, "one job id only (got '%s' too)", v);
            return cli_usage_fail("logs", &err);
        }
        if (r == CLI_ARGS_POSITIONAL)
            idtext = v;
        else if (id == OPT_FOLLOW)
            follow = 1;
        else
            cli_common_apply(&co, id, v);
    }
    if (co.help) {
        fputs(logs_usage, stdout);
        return 0;
    }
    if (!idtext && a.next < argc)
        idtext = argv[a.next];
    long long job_id;
    if (!idtext) {
        tide_err_set(&err, TIDE_EINVAL, NULL, "which job? give its id");
        return cli_usage_fail("logs", &err);
    }
    if (cli_parse_id("job id", idtext, &job_id, &err) < 0)
        return cli_usage_fail("logs", &err);

    struct cli_client c;
    if (cli_client_init(&c, &co, &err) < 0)
        return cli_fail("logs", &err);
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld/logs", job_id);
    int rc = 0;
    if (follow) {
        rc = follow_logs(&c, path);
    } else {
        struct http_response resp;
        /* Logs can be long; give the server more time than for a small answer. */
        if (cli_client_request(&c, "GET", path, NULL, 10 * CLI_TIMEOUT_MS, &resp, &err) < 0) {
            rc = cli_fail("logs", &err);
        } else {
            rc = fwrite(resp.body, 1, resp.len, stdout) != resp.len || fflush(stdout) != 0;
            http_response_release(&resp);
        }
    }
    cli_client_release(&c);
    return rc;
}
