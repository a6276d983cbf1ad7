/* `tide show ID`: one job as aligned "key: value" lines, nested objects
 * indented. Keys are printed generically, in the server's order, so fields
 * the server adds later show up without a CLI change. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/fmt.h"
#include "cli/printable.h"
#include "cli/report.h"
#include "cli/roles.h"

static const char show_usage[] = "usage: tide show ID [--json] [--server URL] [--token T]\n"
                                 "\n"
                                 "Shows every field of job ID, its spec included, and its last\n"
                                 "events (the whole timeline: tide events --job ID). A pending\n"
                                 "job's eta says when it is expected to start and what that\n"
                                 "rests on (docs/api.md).\n";

static const struct cli_opt show_opts[] = {CLI_COMMON_OPTS, {NULL, 0, 0}};

static int is_time_key(const char *key)
{
    size_t n = strlen(key);
    return (n > 5 && !strcmp(key + n - 5, "_time")) || !strcmp(key, "last_heartbeat") ||
           !strcmp(key, "time");
}

static int needs_quotes(const char *s)
{
    if (!*s)
        return 1;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%",
                    *s))
            return 1;
    return 0;
}

/* A command argv as a shell would read it back: sh -c 'echo hi'. */
static void print_argv(json_t *arr)
{
    size_t i;
    json_t *arg;
    json_array_foreach(arr, i, arg)
    {
        const char *s = json_string_value(arg);
        if (i)
            putchar(' ');
        if (!needs_quotes(s)) {
            cli_put_printable(s, stdout);
            continue;
        }
        putchar('\'');
        for (const char *q; (q = strchr(s, '\'')); s = q + 1) {
            char *part = strndup(s, (size_t)(q - s));
            cli_put_printable(part ? part : "?", stdout);
            free(part);
            fputs("'\\''", stdout);
        }
        cli_put_printable(s, stdout);
        putchar('\'');
    }
}

static int all_strings(json_t *arr)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (!json_is_string(v))
            return 0;
    }
    return 1;
}

static void print_scalar(const char *key, json_t *v)
{
    char buf[96];
    switch (json_typeof(v)) {
    case JSON_STRING: cli_put_printable(json_string_value(v), stdout); break;
    case JSON_INTEGER:
        if (is_time_key(key)) {
            cli_fmt_time(v, buf, sizeof buf);
            fputs(buf, stdout);
        } else {
            printf("%lld", (long long)json_integer_value(v));
        }
        break;
    case JSON_REAL:
        if (is_time_key(key)) {
            cli_fmt_time(v, buf, sizeof buf);
            fputs(buf, stdout);
        } else {
            printf("%g", json_real_value(v));
        }
        break;
    case JSON_TRUE: fputs("true", stdout); break;
    case JSON_FALSE: fputs("false", stdout); break;
    case JSON_NULL: fputs("-", stdout); break;
    case JSON_ARRAY:
        if (!strcmp(key, "command") && all_strings(v)) {
            print_argv(v);
        } else {
            /* ENSURE_ASCII: no raw C1 control (or any other) byte reaches the terminal */
            char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
            fputs(text ? text : "?", stdout);
            free(text);
        }
        break;
    case JSON_OBJECT: break;
    }
}

static void print_object(json_t *obj, int indent)
{
    const char *key;
    json_t *v;
    size_t width = 0;
    json_object_foreach(obj, key, v)
    {
        if (!json_is_object(v) || json_object_size(v) == 0)
            width = strlen(key) > width ? strlen(key) : width;
    }
    json_object_foreach(obj, key, v)
    {
        if (indent == 0 && !strcmp(key, "eta") && json_is_object(v)) {
            char eta[128];
            cli_fmt_eta(v, 1, eta, sizeof eta);
            printf("%s:%*s %s\n", key, (int)(width > 3 ? width - 3 : 0), "", eta);
            continue;
        }
        if (json_is_object(v) && json_object_size(v) > 0) {
            printf("%*s%s:\n", indent, "", key);
            print_object(v, indent + 2);
            continue;
        }
        printf("%*s%s:%*s ", indent, "", key, (int)(width - strlen(key)), "");
        if (json_is_object(v))
            fputs("{}", stdout);
        else
            print_scalar(key, v);
        putchar('\n');
    }
}

#define SHOW_EVENTS 5

/* The job's last few events, after its fields; a failure only notes itself. */
static void print_last_events(struct cli_client *c, long long job_id)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/events?job=%lld&tail=%d", job_id, SHOW_EVENTS);
    json_t *root;
    struct tide_err err = {0};
    if (cli_client_request_json(c, "GET", path, NULL, &root, &err) < 0) {
        fprintf(stderr, "tide show: cannot read the job's events: %s\n", err.message);
        return;
    }
    json_t *events = json_object_get(root, "events");
    printf("last events:%s\n", json_array_size(events) ? "" : " none");
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        char when[32] = "-";
        time_t secs = (time_t)cli_json_number(json_object_get(e, "time"), 0);
        struct tm tm;
        if (localtime_r(&secs, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        printf("  %s  %-20s  ", when, cli_json_text(json_object_get(e, "kind"), "?"));
        cli_put_printable(cli_json_text(json_object_get(e, "message"), ""), stdout);
        putchar('\n');
    }
    json_decref(root);
}

int cli_show_main(int argc, char **argv)
{
    struct cli_common co = {0};
    struct cli_args a;
    struct tide_err err = {0};
    const char *idtext = NULL, *v;
    int id, r;
    cli_args_init(&a, argc, argv);
    while ((r = cli_args_next(&a, show_opts, &id, &v, &err)) != CLI_ARGS_END) {
        if (r < 0)
            return cli_usage_fail("show", &err);
        if (r == CLI_ARGS_OPTION) {
            cli_common_apply(&co, id, v);
        } else if (idtext) {
            tide_err_set(&err, TIDE_EINVAL, NULL, "one job id only (got '%s' too)", v);
            return cli_usage_fail("show", &err);
        } else {
            idtext = v;
        }
    }
    if (co.help) {
        fputs(show_usage, stdout);
        return 0;
    }
    if (!idtext && a.next < argc)
        idtext = argv[a.next++];
    long long job_id;
    if (!idtext) {
        tide_err_set(&err, TIDE_EINVAL, NULL, "which job? give its id");
        return cli_usage_fail("show", &err);
    }
    if (cli_parse_id("job id", idtext, &job_id, &err) < 0)
        return cli_usage_fail("show", &err);

    struct cli_client c;
    if (cli_client_init(&c, &co, &err) < 0)
        return cli_fail("show", &err);
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", job_id);
    int rc = 0;
    json_t *job;
    if (c.json) {
        if (cli_request_and_print(&c, "GET", path, NULL, &err) < 0)
            rc = cli_fail("show", &err);
    } else if (cli_client_request_json(&c, "GET", path, NULL, &job, &err) < 0) {
        rc = cli_fail("show", &err);
    } else {
        if (json_is_object(job)) {
            print_object(job, 0);
            print_last_events(&c, job_id);
        }
        json_decref(job);
        rc = fflush(stdout) == 0 ? 0 : 1;
    }
    cli_client_release(&c);
    return rc;
}
