/* `tide token create|list|revoke|rotate`: API tokens limited to some
 * projects, that may only read /metrics (for Prometheus), or that register
 * one named node once; listing (never the secret) and revoking them by
 * name; replacing the admin or the shared join token. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/fmt.h"
#include "cli/report.h"
#include "cli/roles.h"
#include "cli/table.h"

static const char token_usage[] =
    "usage: tide token create --name NAME --project P [--project P2 ...] [--expires D]\n"
    "       tide token create --name NAME --metrics [--expires D]\n"
    "       tide token create --join --node NODE [--expires D]\n"
    "       tide token list\n"
    "       tide token revoke NAME\n"
    "       tide token rotate admin|join\n"
    "                         [--json] [--server URL] [--token ADMIN_TOKEN]\n"
    "\n"
    "create makes an API token that can submit, list, show, cancel and read logs\n"
    "of the given projects' jobs only, and prints it (it is not shown again).\n"
    "With --metrics the token may read GET /metrics and nothing else: give that\n"
    "one to Prometheus (docs/metrics.md). With --join --node NODE it is a join\n"
    "token that registers only the node called NODE, once (tide agent --token-file\n"
    "on that node); it is named NODE. --expires D (like 3600, 90m, 12h, 30d)\n"
    "makes it stop working after D. list shows the tokens (never their secrets);\n"
    "revoke NAME stops every token of that name at once. rotate admin (or join)\n"
    "replaces the admin token (or the shared join token) for when one leaked: every\n"
    "earlier one stops working at once, also those of other HA servers, and the new\n"
    "one is printed and written to the answering server's DATA/admin.token (or\n"
    "join.token); registered agents keep running. Needs an admin token.\n";

enum { OPT_NAME = 1, OPT_PROJECT, OPT_METRICS, OPT_EXPIRES, OPT_JOIN, OPT_NODE };

static const struct cli_opt token_opts[] = {
    {"--name", CLI_OPT_VALUE, OPT_NAME},
    {"--project", CLI_OPT_VALUE, OPT_PROJECT},
    {"--metrics", CLI_OPT_FLAG, OPT_METRICS},
    {"--expires", CLI_OPT_VALUE, OPT_EXPIRES},
    {"--join", CLI_OPT_FLAG, OPT_JOIN},
    {"--node", CLI_OPT_VALUE, OPT_NODE},
    CLI_COMMON_OPTS,
    {NULL, 0, 0},
};

/* POSTs req to path and prints the answer's token alone on stdout (all of
 * the answer with --json), then says_what(answer) on stderr. */
static int post_for_token(struct cli_client *c, const char *path, const json_t *req,
                          void (*says_what)(const json_t *answer, const void *ctx), const void *ctx)
{
    struct tide_err err = {0};
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    if (!body) {
        tide_err_set(&err, TIDE_ENOMEM, NULL, "out of memory");
        return cli_fail("token", &err);
    }
    int rc = 0;
    json_t *answer = NULL;
    if (c->json) {
        if (cli_request_and_print(c, "POST", path, body, &err) < 0)
            rc = cli_fail("token", &err);
    } else if (cli_client_request_json(c, "POST", path, body, &answer, &err) < 0) {
        rc = cli_fail("token", &err);
    } else {
        const char *token = cli_json_text(json_object_get(answer, "token"), NULL);
        if (!token) {
            tide_err_set(&err, TIDE_EIO, NULL, "the server's answer has no token");
            rc = cli_fail("token", &err);
        } else {
            puts(token);
            says_what(answer, ctx);
            rc = fflush(stdout) == 0 ? 0 : 1;
        }
        json_decref(answer);
    }
    free(body);
    return rc;
}

static void says_created(const json_t *answer, const void *ctx)
{
    (void)ctx;
    fprintf(stderr, "token '%s' created; keep it safe, it is not shown again\n",
            cli_json_text(json_object_get(answer, "name"), ""));
}

static int token_create(struct cli_client *c, json_t *req)
{
    return post_for_token(c, "/v1/tokens", req, says_created, NULL);
}

/* "3600", "90s", "90m", "12h" or "30d" as seconds (1 s to 10 years). */
static int parse_expiry(const char *v, long long *seconds, struct tide_err *err)
{
    char *end;
    long long n = strtoll(v, &end, 10);
    long long unit = !*end ? 1 : !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60
                   : !strcmp(end, "h") ? 3600 : !strcmp(end, "d") ? 86400 : 0;
    if (end == v || !unit || n < 1 || n > 10LL * 365 * 86400 / unit)
        return tide_err_set(err, TIDE_EINVAL, "expires",
                            "--expires: '%s' is not a duration from 1s to 10 years (like 90m, "
                            "12h, 30d)", v);
    *seconds = n * unit;
    return 0;
}

static int token_list(struct cli_client *c)
{
    struct tide_err err = {0};
    if (c->json)
        return cli_request_and_print(c, "GET", "/v1/tokens", NULL, &err) < 0 ? cli_fail("token", &err)
                                                                            : 0;
    json_t *answer = NULL;
    if (cli_client_request_json(c, "GET", "/v1/tokens", NULL, &answer, &err) < 0)
        return cli_fail("token", &err);
    static const char *const headers[] = {"NAME", "KIND", "PROJECTS", "CREATED", "EXPIRES"};
    struct cli_table *t = cli_table_create(5, headers);
    size_t i;
    json_t *tok;
    json_array_foreach(json_object_get(answer, "tokens"), i, tok)
    {
        char projects[256] = "", created[64], expires[64] = "never";
        size_t k;
        json_t *p;
        json_array_foreach(json_object_get(tok, "projects"), k, p)
        {
            size_t used = strlen(projects);
            snprintf(projects + used, sizeof projects - used, "%s%s", k ? "," : "",
                     cli_json_text(p, "?"));
        }
        cli_fmt_time(json_object_get(tok, "created"), created, sizeof created);
        if (json_is_number(json_object_get(tok, "expires")))
            cli_fmt_time(json_object_get(tok, "expires"), expires, sizeof expires);
        const char *kind = cli_json_text(json_object_get(tok, "kind"), "user");
        if (json_is_true(json_object_get(tok, "used")))
            kind = "join (used)";
        const char *row[] = {cli_json_text(json_object_get(tok, "name"), "?"), kind,
                             projects[0] ? projects : "-", created, expires};
        cli_table_add(t, row);
    }
    int rc = cli_table_print(t, stdout) == 0 ? 0 : 1;
    cli_table_destroy(t);
    json_decref(answer);
    return rc;
}

static int token_revoke(struct cli_client *c, const char *name)
{
    struct tide_err err = {0};
    char path[256];
    if (!*name || strchr(name, '/') || strlen(name) > 128) {
        tide_err_set(&err, TIDE_EINVAL, "name", "revoke: '%s' is not a token name", name);
        return cli_usage_fail("token", &err);
    }
    snprintf(path, sizeof path, "/v1/tokens/%s", name);
    json_t *answer = NULL;
    if (cli_client_request_json(c, "DELETE", path, NULL, &answer, &err) < 0)
        return cli_fail("token", &err);
    printf("revoked %lld token(s) named '%s'\n",
           (long long)json_integer_value(json_object_get(answer, "tokens")), name);
    json_decref(answer);
    return fflush(stdout) == 0 ? 0 : 1;
}

static void says_rotated(const json_t *answer, const void *kind)
{
    const char *file_error = cli_json_text(json_object_get(answer, "file_error"), NULL);
    fprintf(stderr,
            "%s token rotated: %lld earlier one(s) stop working; the new one is above and %s\n",
            (const char *)kind, (long long)json_integer_value(json_object_get(answer, "rotated")),
            file_error ? "ONLY there, keep it: the server could not write its file"
                       : "in the server's data directory");
    if (file_error)
        fprintf(stderr, "tide token: %s\n", file_error);
}

static int token_rotate(struct cli_client *c, const char *kind)
{
    json_t *req = json_pack("{s:s}", "kind", kind);
    int rc = post_for_token(c, "/v1/tokens:rotate", req, says_rotated, kind);
    json_decref(req);
    return rc;
}

int cli_token_main(int argc, char **argv)
{
    struct cli_common co = {0};
    struct cli_args a;
    struct tide_err err = {0};
    const char *name = NULL, *node = NULL, *action = NULL, *target = NULL, *v;
    bool metrics = false, join = false;
    long long expires_s = 0;
    int id, r, rc = 2;
    json_t *projects = json_array();
    if (!projects)
        return 1;
    cli_args_init(&a, argc, argv);
    while ((r = cli_args_next(&a, token_opts, &id, &v, &err)) != CLI_ARGS_END) {
        if (r < 0)
            goto usage;
        if (r == CLI_ARGS_POSITIONAL && action &&
            (target || (strcmp(action, "revoke") && strcmp(action, "rotate")))) {
            tide_err_set(&err, TIDE_EINVAL, NULL, "unexpected argument '%s'", v);
            goto usage;
        }
        if (r == CLI_ARGS_POSITIONAL && action)
            target = v;
        else if (r == CLI_ARGS_POSITIONAL)
            action = v;
        else if (id == OPT_EXPIRES) {
            if (parse_expiry(v, &expires_s, &err))
                goto usage;
        }
        else if (id == OPT_NAME)
            name = v;
        else if (id == OPT_METRICS)
            metrics = true;
        else if (id == OPT_JOIN)
            join = true;
        else if (id == OPT_NODE)
            node = v;
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
    if (!action || (strcmp(action, "create") && strcmp(action, "list") &&
                    strcmp(action, "revoke") && strcmp(action, "rotate"))) {
        tide_err_set(&err, TIDE_EINVAL, NULL,
                     action ? "unknown action '%s' (create, list, revoke or rotate)"
                            : "missing action: tide token create|list|revoke|rotate ...",
                     action);
        goto usage;
    }
    if (strcmp(action, "create") != 0) {
        if (!strcmp(action, "revoke") && !target) {
            tide_err_set(&err, TIDE_EINVAL, NULL, "revoke needs the token's NAME");
            goto usage;
        }
        if (!strcmp(action, "rotate") &&
            (!target || (strcmp(target, "admin") && strcmp(target, "join")))) {
            tide_err_set(&err, TIDE_EINVAL, NULL, "rotate needs 'admin' or 'join'%s%s%s",
                         target ? ", not '" : "", target ? target : "", target ? "'" : "");
            goto usage;
        }
        struct cli_client c;
        if (cli_client_init(&c, &co, &err) < 0) {
            rc = cli_fail("token", &err);
        } else {
            rc = !strcmp(action, "list")     ? token_list(&c)
                 : !strcmp(action, "revoke") ? token_revoke(&c, target)
                                             : token_rotate(&c, target);
            cli_client_release(&c);
        }
        goto out;
    }
    if (join || node) {
        if (!join || !node || name || metrics || json_array_size(projects) != 0) {
            tide_err_set(&err, TIDE_EINVAL, join ? "node" : "join",
                         "a join token needs --join and --node NODE, and takes no --name, "
                         "--project or --metrics (it is named for its node)");
            goto usage;
        }
    } else if (metrics && json_array_size(projects) != 0) {
        tide_err_set(&err, TIDE_EINVAL, "project",
                     "--project: a --metrics token reads every project's metrics; leave --project out");
        goto usage;
    }
    if (!join && (!name || (!metrics && json_array_size(projects) == 0))) {
        tide_err_set(&err, TIDE_EINVAL, NULL,
                     "create needs --name and at least one --project (or --metrics)");
        goto usage;
    }
    json_t *req = join      ? json_pack("{s:s, s:s}", "kind", "join", "node", node)
                  : metrics ? json_pack("{s:s, s:s}", "name", name, "kind", "metrics")
                          : json_pack("{s:s, s:O}", "name", name, "projects", projects);
    if (!req) {
        tide_err_set(&err, TIDE_EINVAL, join ? "node" : "name", "%s: not valid UTF-8",
                     join ? "--node" : "--name");
        goto usage;
    }
    if (expires_s)
        json_object_set_new(req, "expires_in_s", json_integer(expires_s));
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
