/* `tide jobs`: the job list as a table (or the API's JSON), fetched a page
 * at a time (GET /v1/jobs?cursor=) up to --limit or, with --all, to the end. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/fmt.h"
#include "cli/jobs_fetch.h"
#include "cli/report.h"
#include "cli/roles.h"
#include "cli/table.h"
#include "core/job_state.h"
#include "cli/wait.h"

static const char jobs_usage[] =
    "usage: tide jobs [--state S] [--queue Q] [--project P] [--limit N | --all]\n"
    "                 [--oldest] [-q] [--json] [--server URL] [--token T]\n"
    "\n"
    "Lists jobs, newest first (--oldest: oldest first). AGE/RUNTIME is how long\n"
    "a pending job has waited, how long a running one has run, and how long a\n"
    "finished one ran. ETA is when a pending job is expected to start (\"in 5m\";\n"
    "- when unknown; tide show ID says what it rests on).\n"
    "\n"
    "  --state S     only jobs in state S (pending, running, succeeded, ...)\n"
    "  --queue Q     only jobs in queue Q\n"
    "  --project P   only jobs of project P\n"
    "  --limit N     at most N jobs (default 1000), fetched in pages of 1000\n"
    "  --all         every job that matches, page by page\n"
    "  --oldest      oldest first (the jobs waiting longest, with --state pending)\n"
    "  -q, --quiet   print only job ids, one a line\n"
    "  --json        print the API's JSON\n"
    "  --server URL[,URL...]  tide server(s), tried in order, the leader followed\n"
    "                (else $TIDE_SERVER, ~/.config/tide/config,\n"
    "                ./.tide/server.url, " CLI_DEFAULT_SERVER ")\n"
    "  --token T     API token (else $TIDE_TOKEN, the config, ./.tide/data/admin.token)\n"
    "  --token-file PATH read the API token from a file (--token shows in ps)\n";

enum { OPT_STATE = 1, OPT_QUEUE, OPT_PROJECT, OPT_LIMIT, OPT_QUIET, OPT_ALL, OPT_OLDEST };

static const struct cli_opt jobs_opts[] = {
    {"--state", CLI_OPT_VALUE, OPT_STATE},
    {"--queue", CLI_OPT_VALUE, OPT_QUEUE},
    {"--project", CLI_OPT_VALUE, OPT_PROJECT},
    {"--limit", CLI_OPT_VALUE, OPT_LIMIT},
    {"--all", CLI_OPT_FLAG, OPT_ALL},
    {"--oldest", CLI_OPT_FLAG, OPT_OLDEST},
    {"-q", CLI_OPT_FLAG, OPT_QUIET},
    {"--quiet", CLI_OPT_FLAG, OPT_QUIET},
    CLI_COMMON_OPTS,
    {NULL, 0, 0},
};

static void job_age(json_t *job, const char *state, double now, char *buf, size_t size)
{
    double submit = cli_json_number(json_object_get(job, "submit_time"), -1);
    double start = cli_json_number(json_object_get(job, "start_time"), -1);
    double end = cli_json_number(json_object_get(job, "end_time"), -1);
    if (cli_state_is_final(state) && start >= 0 && end >= 0)
        cli_fmt_duration(end - start, buf, size);
    else if (cli_state_is_final(state))
        snprintf(buf, size, "-");
    else if ((!strcmp(state, "running") || !strcmp(state, "starting")) && start >= 0)
        cli_fmt_duration(now - start, buf, size);
    else if (submit >= 0)
        cli_fmt_duration(now - submit, buf, size);
    else
        snprintf(buf, size, "-");
}

static int add_job_row(struct cli_table *t, json_t *job, double now)
{
    json_t *spec = json_object_get(job, "spec");
    const char *state = cli_json_text(json_object_get(job, "state"), "?");
    char id[24], pri[24], gpus[24], age[16], eta[32] = "";
    snprintf(id, sizeof id, "%.0f", cli_json_number(json_object_get(job, "id"), 0));
    snprintf(pri, sizeof pri, "%.0f", cli_json_number(json_object_get(job, "priority"), 0));
    snprintf(gpus, sizeof gpus, "%.0f", cli_json_number(json_object_get(spec, "gpus"), 1));
    job_age(job, state, now, age, sizeof age);
    if (!strcmp(state, "pending"))
        cli_fmt_eta(json_object_get(job, "eta"), 0, eta, sizeof eta);
    /* A pending job's reason is why it waits; the server may name it apart. */
    const char *reason = cli_json_text(json_object_get(job, "reason"), NULL);
    if (!strcmp(state, "pending"))
        reason = cli_json_text(json_object_get(job, "pending_reason"), reason);
    const char *cells[] = {
        id,
        cli_json_text(json_object_get(job, "name"), NULL),
        cli_json_text(json_object_get(job, "project"), NULL),
        cli_json_text(json_object_get(job, "queue"), NULL),
        pri,
        state,
        gpus,
        cli_json_text(json_object_get(job, "node"), NULL),
        age,
        eta[0] ? eta : NULL,
        reason && *reason ? reason : NULL,
    };
    return cli_table_add(t, cells);
}

static int print_jobs(json_t *root, int quiet)
{
    json_t *jobs = json_object_get(root, "jobs");
    if (!json_is_array(jobs)) {
        fprintf(stderr, "tide jobs: the server's answer has no \"jobs\" list\n");
        return 1;
    }
    size_t i;
    json_t *job;
    if (quiet) {
        json_array_foreach(jobs, i, job)
            printf("%.0f\n", cli_json_number(json_object_get(job, "id"), 0));
        return fflush(stdout) == 0 ? 0 : 1;
    }
    static const char *const headers[] = {"ID",   "NAME", "PROJECT",     "QUEUE", "PRI",   "STATE",
                                          "GPUS", "NODE", "AGE/RUNTIME", "ETA",   "REASON"};
    struct cli_table *t = cli_table_create(11, headers);
    if (!t)
        return 1;
    double now = cli_now();
    int rc = 0;
    json_array_foreach(jobs, i, job)
        if (add_job_row(t, job, now) != 0)
            rc = 1;
    if (rc == 0)
        rc = cli_table_print(t, stdout);
    cli_table_destroy(t);
    if (rc)
        fprintf(stderr, "tide jobs: out of memory or cannot write output\n");
    return rc;
}

int cli_jobs_main(int argc, char **argv)
{
    struct cli_common co = {0};
    struct cli_args a;
    struct tide_err err = {0};
    const char *state = NULL, *queue = NULL, *project = NULL, *limit = NULL;
    int quiet = 0, all = 0, oldest = 0, id, r;
    const char *v;
    cli_args_init(&a, argc, argv);
    while ((r = cli_args_next(&a, jobs_opts, &id, &v, &err)) != CLI_ARGS_END) {
        if (r < 0)
            return cli_usage_fail("jobs", &err);
        if (r == CLI_ARGS_POSITIONAL) {
            tide_err_set(&err, TIDE_EINVAL, NULL, "unexpected argument '%s'", v);
            return cli_usage_fail("jobs", &err);
        }
        if (cli_common_apply(&co, id, v))
            continue;
        switch (id) {
        case OPT_STATE:
            state = v;
            break;
        case OPT_QUEUE:
            queue = v;
            break;
        case OPT_PROJECT:
            project = v;
            break;
        case OPT_LIMIT:
            limit = v;
            break;
        case OPT_QUIET:
            quiet = 1;
            break;
        case OPT_ALL:
            all = 1;
            break;
        case OPT_OLDEST:
            oldest = 1;
            break;
        }
    }
    if (co.help) {
        fputs(jobs_usage, stdout);
        return 0;
    }
    if (a.next < argc) {
        tide_err_set(&err, TIDE_EINVAL, NULL, "unexpected argument '%s'", argv[a.next]);
        return cli_usage_fail("jobs", &err);
    }
    bool known = !state;
    for (int s = 0; s < JOB_STATE_COUNT && !known; s++)
        known = !strcmp(state, job_state_name((enum job_state)s));
    if (!known) { /* a usage error, as tide nodes --state gives one (exit 2) */
        tide_err_set(&err, TIDE_EINVAL, "--state",
                     "--state: '%s' is not a job state (pending, starting, running, preempted, "
                     "lost, succeeded, failed, cancelled, timeout)",
                     state);
        return cli_usage_fail("jobs", &err);
    }
    long long want = all ? -1 : CLI_JOBS_PAGE;
    if (all && limit) {
        tide_err_set(&err, TIDE_EINVAL, "limit", "--limit and --all: give one of them");
        return cli_usage_fail("jobs", &err);
    }
    if (limit && cli_parse_range("--limit", limit, 1, 1000000000, &want, &err) < 0)
        return cli_usage_fail("jobs", &err);

    struct cli_client c;
    if (cli_client_init(&c, &co, &err) < 0)
        return cli_fail("jobs", &err);
    json_t *root = NULL;
    int rc;
    struct cli_jobs_filter f = {state, queue, project, oldest ? "oldest" : NULL};
    if (cli_jobs_fetch(&c, &f, want, &root, &err) < 0) {
        rc = cli_fail("jobs", &err);
    } else if (c.json && !quiet) {
        char *text = json_dumps(root, JSON_COMPACT);
        rc = text && cli_print_body(text, strlen(text)) == 0 ? 0 : 1;
        free(text);
    } else {
        rc = print_jobs(root, quiet);
    }
    json_decref(root);
    cli_client_release(&c);
    return rc;
}
