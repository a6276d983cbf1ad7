/*
 * `tide events`: the event log as a timeline (time, kind, job, node,
 * message), filtered like GET /v1/events, and --follow, which polls with
 * the id cursor and prints new events as they come.
 */
#include <stdbool.h>
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

static const char events_usage[] =
    "usage: tide events [--job ID] [--node N] [--pool P] [--project P] [--kind K]\n"
    "                   [--since ID] [--from T] [--to T] [--tail N | --limit N]\n"
    "                   [-f] [--json] [--server URL] [--token T]\n"
    "\n"
    "Prints what happened, oldest first: jobs submitted, placed, running, finished,\n"
    "preempted and requeued, nodes registered, lost and back, pools scaling,\n"
    "budget alerts. `tide events --job 12` is why job 12 waited or died.\n"
    "\n"
    "  --job ID       only events of job ID\n"
    "  --node N       only events of node N (by name)\n"
    "  --pool P       only events of pool P (its nodes and the jobs on them)\n"
    "  --project P    only events of project P's jobs and budget\n"
    "  --kind K       only kinds K: comma-separated, a trailing _ or * takes every\n"
    "                 kind that starts so (--kind job_preempted,node_)\n"
    "  --since ID     only events after event ID (the cursor --follow uses)\n"
    "  --from T       only events at or after T: Unix seconds or a UTC date\n"
    "                 YYYY-MM-DD[THH:MM[:SS]]\n"
    "  --to T         only events before T\n"
    "  --tail N       the newest N matching events (still printed oldest first)\n"
    "  --limit N      at most N events (server default 1000)\n"
    "  -f, --follow   keep polling and print new events as they come (Ctrl-C stops)\n"
    "  --json         print the API's JSON (with -f: one event object a line)\n"
    "  --server URL[,URL...]  tide server(s), tried in order, the leader followed\n"
    "                 (else $TIDE_SERVER, ~/.config/tide/config,\n"
    "                 ./.tide/server.url, " CLI_DEFAULT_SERVER ")\n"
    "  --token T      API token (else $TIDE_TOKEN, the config, ./.tide/data/admin.token)\n"
    "  --token-file PATH read the API token from a file (--token shows in ps)\n";

enum {
    OPT_JOB = 1, OPT_NODE, OPT_POOL, OPT_PROJECT, OPT_KIND, OPT_SINCE, OPT_FROM, OPT_TO,
    OPT_TAIL, OPT_LIMIT, OPT_FOLLOW
};

static const struct cli_opt events_opts[] = {
    {"--job", CLI_OPT_VALUE, OPT_JOB},         {"--node", CLI_OPT_VALUE, OPT_NODE},
    {"--pool", CLI_OPT_VALUE, OPT_POOL},       {"--project", CLI_OPT_VALUE, OPT_PROJECT},
    {"--kind", CLI_OPT_VALUE, OPT_KIND},       {"--since", CLI_OPT_VALUE, OPT_SINCE},
    {"--from", CLI_OPT_VALUE, OPT_FROM},       {"--to", CLI_OPT_VALUE, OPT_TO},
    {"--tail", CLI_OPT_VALUE, OPT_TAIL},       {"--limit", CLI_OPT_VALUE, OPT_LIMIT},
    {"-f", CLI_OPT_FLAG, OPT_FOLLOW},          {"--follow", CLI_OPT_FLAG, OPT_FOLLOW},
    CLI_COMMON_OPTS,
    {NULL, 0, 0},
};

#define POLL_INTERVAL_MS 1000

/* The query values, in the order of the keys below. */
struct events_query {
    const char *job, *node, *pool, *project, *kind, *since, *from, *to, *tail, *limit;
};

static char *events_path(const struct events_query *q)
{
    const char *pairs[] = {"job", q->job, "node", q->node, "pool", q->pool, "project", q->project,
                           "kind", q->kind, "since", q->since, "from", q->from, "to", q->to,
                           "tail", q->tail, "limit", q->limit, NULL};
    return cli_path_with_query("/v1/events", pairs);
}

static void print_header(void)
{
    printf("%-19s  %-22s  %6s  %-14s  %s\n", "TIME", "KIND", "JOB", "NODE", "MESSAGE");
}

static void print_event(json_t *e)
{
    char when[32] = "-", job[24] = "-";
    double t = cli_json_number(json_object_get(e, "time"), -1);
    if (t >= 0) {
        time_t secs = (time_t)t;
        struct tm tm;
        if (localtime_r(&secs, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    }
    json_t *j = json_object_get(e, "job_id");
    if (json_is_integer(j))
        snprintf(job, sizeof job, "%lld", (long long)json_integer_value(j));
    printf("%-19s  %-22s  %6s  %-14s  ", when, cli_json_text(json_object_get(e, "kind"), "?"), job,
           cli_json_text(json_object_get(e, "node"), "-"));
    cli_put_printable(cli_json_text(json_object_get(e, "message"), ""), stdout);
    putchar('\n');
}

/* Prints one answer's events; *last gets the last id. Returns 0 or 1. */
static int print_events(json_t *root, int json_lines, long long *last)
{
    json_t *events = json_object_get(root, "events");
    if (!json_is_array(events)) {
        fprintf(stderr, "tide events: the server's answer has no \"events\" list\n");
        return 1;
    }
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        if (json_lines) {
            char *s = json_dumps(e, JSON_COMPACT);
            if (!s)
                return 1;
            puts(s);
            free(s);
        } else {
            print_event(e);
        }
        *last = (long long)cli_json_number(json_object_get(e, "id"), (double)*last);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

/* A bad filter is the user's input: exit status 2, like a bad flag. */
static int request_fail(const struct tide_err *err)
{
    return err->code == TIDE_EINVAL ? cli_input_fail("events", err) : cli_fail("events", err);
}

/* Polls for ever (until the process is stopped or a request fails). */
static int follow(struct cli_client *c, struct events_query *q, int json_lines, long long last)
{
    char since[24];
    q->tail = NULL;
    for (;;) {
        snprintf(since, sizeof since, "%lld", last);
        q->since = since;
        char *path = events_path(q);
        json_t *root = NULL;
        struct tide_err err = {0};
        if (!path) {
            tide_err_set(&err, TIDE_ENOMEM, NULL, "out of memory");
            return cli_fail("events", &err);
        }
        int rc = cli_client_request_json(c, "GET", path, NULL, &root, &err);
        free(path);
        if (rc < 0)
            return request_fail(&err);
        rc = print_events(root, json_lines, &last);
        bool more = json_is_true(json_object_get(root, "more"));
        json_decref(root);
        if (rc)
            return rc;
        if (!more) {
            struct timespec ts = {POLL_INTERVAL_MS / 1000, (POLL_INTERVAL_MS % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
}

static int run(struct cli_client *c, struct events_query *q, int follow_flag)
{
    struct tide_err err = {0};
    char *path = events_path(q);
    if (!path) {
        tide_err_set(&err, TIDE_ENOMEM, NULL, "out of memory");
        return cli_fail("events", &err);
    }
    if (c->json && !follow_flag) {
        int rc = cli_request_and_print(c, "GET", path, NULL, &err);
        free(path);
        return rc < 0 ? request_fail(&err) : 0;
    }
    json_t *root = NULL;
    int rc = cli_client_request_json(c, "GET", path, NULL, &root, &err);
    free(path);
    if (rc < 0)
        return request_fail(&err);
    long long last = 0;
    if (q->since)
        last = strtoll(q->since, NULL, 10);
    if (!c->json)
        print_header();
    rc = print_events(root, c->json, &last);
    bool more = json_is_true(json_object_get(root, "more"));
    json_decref(root);
    if (rc)
        return rc;
    if (follow_flag)
        return follow(c, q, c->json, last);
    if (more && q->tail) /* the newest were shown: what was left out is older */
        fprintf(stderr, "tide events: older events match too; see them with a larger --tail\n");
    else if (more)
        fprintf(stderr, "tide events: more events match; see them with --since %lld\n", last);
    return 0;
}

int cli_events_main(int argc, char **argv)
{
    struct cli_common co = {0};
    struct cli_args a;
    struct tide_err err = {0};
    struct events_query q = {0};
    int follow_flag = 0, id, r;
    const char *v;
    cli_args_init(&a, argc, argv);
    while ((r = cli_args_next(&a, events_opts, &id, &v, &err)) != CLI_ARGS_END) {
        if (r < 0)
            return cli_usage_fail("events", &err);
        if (r == CLI_ARGS_POSITIONAL) {
            tide_err_set(&err, TIDE_EINVAL, NULL, "unexpected argument '%s'", v);
            return cli_usage_fail("events", &err);
        }
        if (cli_common_apply(&co, id, v))
            continue;
        switch (id) {
        case OPT_JOB: q.job = v; break;
        case OPT_NODE: q.node = v; break;
        case OPT_POOL: q.pool = v; break;
        case OPT_PROJECT: q.project = v; break;
        case OPT_KIND: q.kind = v; break;
        case OPT_SINCE: q.since = v; break;
        case OPT_FROM: q.from = v; break;
        case OPT_TO: q.to = v; break;
        case OPT_TAIL: q.tail = v; break;
        case OPT_LIMIT: q.limit = v; break;
        case OPT_FOLLOW: follow_flag = 1; break;
        }
    }
    if (co.help) {
        fputs(events_usage, stdout);
        return 0;
    }
    if (a.next < argc) {
        tide_err_set(&err, TIDE_EINVAL, NULL, "unexpected argument '%s'", argv[a.next]);
        return cli_usage_fail("events", &err);
    }
    long long n;
    if ((q.job && cli_parse_id("--job", q.job, &n, &err) < 0) ||
        (q.since && cli_parse_ll("--since", q.since, &n, &err) < 0) ||
        (q.tail && cli_parse_ll("--tail", q.tail, &n, &err) < 0) ||
        (q.limit && cli_parse_ll("--limit", q.limit, &n, &err) < 0))
        return cli_usage_fail("events", &err);
    if (q.tail && q.limit) {
        tide_err_set(&err, TIDE_EINVAL, "tail", "--tail and --limit cannot be combined");
        return cli_usage_fail("events", &err);
    }
    struct cli_client c;
    if (cli_client_init(&c, &co, &err) < 0)
        return cli_fail("events", &err);
    int rc = run(&c, &q, follow_flag);
    cli_client_release(&c);
    return rc;
}
