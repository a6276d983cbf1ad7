/* `tide token create`: a new API token limited to some projects, or one
 * that may only read /metrics (for Prometheus). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/fmt.h"
#include "cli/report.h"
#include "cli/roles.h"

static const char token_usage[] =
    "usage: tide token create --name NAME --project P [--project P2 ...]\n"
    "       tide token create --name NAME --metrics\n"
    "                         [--json] [--server URL] [--token ADMIN_TOKEN]\n"
    "\n"
    "Creates an API token that can submit, list, show, cancel and read logs of\n"
    "the given projects' jobs only, and prints it (it is not shown again).\n"
    "With --metrics the token may read GET /metrics and nothing else: give that\n"
    "one to Prometheus (docs/metrics.md). Needs an admin token.\n";

enum { OPT_NAME = 1, OPT_PROJECT, OPT_METRICS };

static const struct cli_opt token_opts[] = {
    {"--name", CLI_OPT_VALUE, OPT_NAME},
    {"--project", CLI_OPT_VALUE, OPT_PROJECT},
    {"--metrics", CLI_OPT_FLAG, OPT_METRICS},
    CLI_COMMON_OPTS,
    {NULL, 0, 0},
};

static int token_create(struct cli_client *c, json_t *req)
{
    struct tide_err err = {0};
    char *body = json_dumps(req, JSON_COMPACT);
    if (!body) {
        tide_err_set(&err, TIDE_ENOMEM, NULL, "out of memory");
        return cli_fail("token", &err);
    }
    int rc = 0;
    json_t *answer;
    if (c->json) {
        if (cli_request_and_print(c, "POST", "/v1/tokens", body, &err) < 0)
            rc = cli_fail("token", &err);
    } else if (cli_client_request_json(c, "POST", "/v1/tokens", body, &answer, &err) < 0) {
        rc = cli_fail("token", &err);
    } else {
        const char *token = cli_json_text(json_object_get(answer, "token"), NULL);
        if (!token) {
            tide_err_set(&err, TIDE_EIO, NULL, "the server's answer has no token");
            rc = cli_fail("token", &err);
        } else {
            puts(token);
            fprintf(stderr, "token '%s' created; keep it safe, it is not shown again\n",
                    cli_json_text(json_object_get(req, "name"), ""));
            rc = fflush(stdout) == 0 ? 0 : 1;
        }
        json_decref(answer);
    }
    free(body);
    return rc;
}

int cli_token_main(int argc, char **argv)
{
    struct cli_common co = {0};
    struct cli_args a;
    struct tide_err err = {0};
    const char *name = NULL, *action = NULL, *v;
    bool metrics = false;
    int id, r, rc = 2;
    json_t *projects = json_array();
    if (!projects)
        return 1;
    cli_args_init(&a, argc, argv);
    while ((r = cli_args_next(&a, token_opts, &id, &v, &err)) != CLI_ARGS_END) {
        if (r < 0)
            goto usage;
        if (r == CLI_ARGS_POSITIONAL && action) {
            tide_err_set(&err, TIDE_EINVAL, NULL, "unexpected argument '%s'", v);
            goto usage;
        }
        if (r == CLI_ARGS_POSITIONAL)
            action = v;
        else if (id == OPT_NAME)
            name = v;
        else if (id == OPT_METRICS)
            metrics = true;
        else if (id == OPT_PROJECT) {
            json_t *p = json_string(v);
            if (!p || json_array_append_new(projects, p) != 0) {
                tide_err_set(&err, TIDE_EINVAL, "projects", "--project: not valid UTF-8");
                goto usage;
            }
        } else
            cli_common_apply(&co, id, v);
    }
    if (co.help) {
        fputs(token_usage, stdout);
        rc = 0;
        goto out;
    }
    if (!action || strcmp(action, "create") != 0) {
        tide_err_set(&err, TIDE_EINVAL, NULL, action ? "unknown action '%s' (only 'create')"
                                                     : "missing action: tide token create ...",
                     action);
        goto usage;
    }
    if (metrics && json_array_size(projects) != 0) {
        tide_err_set(&err, TIDE_EINVAL, "project",
                     "--project: a --metrics token reads every project's metrics; leave --project out");
        goto usage;
    }
    if (!name || (!metrics && json_array_size(projects) == 0)) {
        tide_err_set(&err, TIDE_EINVAL, NULL,
                     "create needs --name and at least one --project (or --metrics)");
        goto usage;
    }
    json_t *req = metrics ? json_pack("{s:s, s:s}", "name", name, "kind", "metrics")
                          : json_pack("{s:s, s:O}", "name", name, "projects", projects);
    if (!req) {
        tide_err_set(&err, TIDE_EINVAL, "name", "--name: not valid UTF-8");
        goto usage;
    }
    struct cli_client c;
    if (cli_client_init(&c, &co, &err) < 0) {
        rc = cli_fail("token", &err);
    } else {
        rc = token_create(&c, req);
        cli_client_release(&c);
    }
    json_decref(req);
    goto out;
usage:
    rc = cli_usage_fail("token", &err);
out:
    json_decref(projects);
    return rc;
}
