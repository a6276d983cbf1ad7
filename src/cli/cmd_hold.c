/* `tide hold`, `tide release`, `tide requeue`: an operator's hand on jobs
 * (POST /v1/jobs/ID/hold|release|requeue). One file: the three differ only
 * in the word they post and what they say. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/fmt.h"
#include "cli/report.h"
#include "cli/roles.h"

struct job_op {
    const char *name;
    const char *usage;
    const char *done; /* printed as "<done> job ID" */
    int takes_reason;
};

static const struct job_op hold_op = {
    "hold",
    "usage: tide hold ID [ID...] [--reason TEXT] [--json] [--server URL] [--token T]\n"
    "\n"
    "Holds pending jobs: they stay pending and are never started (nor make\n"
    "pools grow) until `tide release`. `tide jobs` and `tide show` say\n"
    "\"held: REASON\". Only a pending job can be held; requeue a running one first.\n"
    "  --reason TEXT   why (shown with the job; default \"by operator\")\n",
    "held", 1};

static const struct job_op release_op = {
    "release",
    "usage: tide release ID [ID...] [--json] [--server URL] [--token T]\n"
    "\n"
    "Releases held jobs: they wait and start like any pending job again.\n",
    "released", 0};

static const struct job_op requeue_op = {
    "requeue",
    "usage: tide requeue ID [ID...] [--reason TEXT] [--json] [--server URL] [--token T]\n"
    "\n"
    "Puts starting or running jobs back in the queue: the agent stops each one\n"
    "with its checkpoint signal (SIGTERM unless the job set checkpoint_signal),\n"
    "the job passes through \"preempted\" and is pending again. This uses none\n"
    "of its retries. Combine with `tide hold` to keep it from starting again.\n"
    "  --reason TEXT   why (in the job's reason and the event log)\n",
    "requeueing", 1};

enum { OPT_REASON = 1 };

static const struct cli_opt reason_opts[] = {
    {"--reason", CLI_OPT_VALUE, OPT_REASON},
    CLI_COMMON_OPTS,
    {NULL, 0, 0},
};
static const struct cli_opt plain_opts[] = {CLI_COMMON_OPTS, {NULL, 0, 0}};

static int operate_one(struct cli_client *c, const struct job_op *op, long long id,
                       const char *body)
{
    struct tide_err err = {0};
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld/%s", id, op->name);
    if (c->json)
        return cli_request_and_print(c, "POST", path, body, &err) < 0 ? cli_fail(op->name, &err)
                                                                      : 0;
    json_t *job;
    if (cli_client_request_json(c, "POST", path, body, &job, &err) < 0)
        return cli_fail(op->name, &err);
    const char *why = cli_json_text(json_object_get(job, "hold_reason"), NULL);
    printf("%s job %lld (%s%s%s)\n", op->done, id,
           cli_json_text(json_object_get(job, "state"), "?"), why ? ", held: " : "",
           why ? why : "");
    json_decref(job);
    return 0;
}

static int job_op_main(const struct job_op *op, int argc, char **argv)
{
    struct cli_common co = {0};
    struct cli_args a;
    struct tide_err err = {0};
    long long ids[256];
    size_t n = 0;
    const char *v, *reason = NULL;
    int id, r;
    cli_args_init(&a, argc, argv);
    while ((r = cli_args_next(&a, op->takes_reason ? reason_opts : plain_opts, &id, &v, &err)) !=
           CLI_ARGS_END) {
        if (r < 0)
            return cli_usage_fail(op->name, &err);
        if (r == CLI_ARGS_OPTION) {
            if (id == OPT_REASON)
                reason = v;
            else
                cli_common_apply(&co, id, v);
            continue;
        }
        if (n == sizeof ids / sizeof ids[0]) {
            tide_err_set(&err, TIDE_EINVAL, NULL, "at most %zu jobs at a time", n);
            return cli_usage_fail(op->name, &err);
        }
        if (cli_parse_id("job id", v, &ids[n++], &err) < 0)
            return cli_usage_fail(op->name, &err);
    }
    if (co.help) {
        fputs(op->usage, stdout);
        return 0;
    }
    if (n == 0) {
        tide_err_set(&err, TIDE_EINVAL, NULL, "which job? give one or more ids");
        return cli_usage_fail(op->name, &err);
    }
    char *body = NULL;
    if (reason) {
        json_t *o = json_pack("{s:s}", "reason", reason);
        body = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (!body) {
            tide_err_set(&err, TIDE_ENOMEM, NULL, "out of memory");
            return cli_fail(op->name, &err);
        }
    }
    struct cli_client c;
    if (cli_client_init(&c, &co, &err) < 0) {
        free(body);
        return cli_fail(op->name, &err);
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        if (operate_one(&c, op, ids[i], body) != 0)
            rc = 1;
    cli_client_release(&c);
    free(body);
    return rc;
}

int cli_hold_main(int argc, char **argv)
{
    return job_op_main(&hold_op, argc, argv);
}

int cli_release_main(int argc, char **argv)
{
    return job_op_main(&release_op, argc, argv);
}

int cli_requeue_main(int argc, char **argv)
{
    return job_op_main(&requeue_op, argc, argv);
}
