/* `tide cancel ID [ID...]`: DELETE each job; goes on past failures and
 * exits 1 if any cancel failed. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/fmt.h"
#include "cli/report.h"
#include "cli/roles.h"

static const char cancel_usage[] =
    "usage: tide cancel ID [ID...] [--json] [--server URL] [--token T]\n"
    "\n"
    "Cancels jobs. A pending job is cancelled at once; a running one is stopped\n"
    "by its agent (SIGTERM, then SIGKILL after the grace period).\n";

static const struct cli_opt cancel_opts[] = {CLI_COMMON_OPTS, {NULL, 0, 0}};

static int cancel_one(struct cli_client *c, long long id)
{
    struct tide_err err = {0};
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", id);
    if (c->json) {
        if (cli_request_and_print(c, "DELETE", path, NULL, &err) < 0)
            return cli_fail("cancel", &err);
        return 0;
    }
    json_t *job;
    if (cli_client_request_json(c, "DELETE", path, NULL, &job, &err) < 0)
        return cli_fail("cancel", &err);
    const char *state = cli_json_text(json_object_get(job, "state"), "?");
    if (!strcmp(state, "cancelled"))
        printf("cancelled job %lld\n", id);
    else
        printf("stopping job %lld (%s%s%s)\n", id, state,
               json_is_string(json_object_get(job, "node")) ? " on " : "",
               cli_json_text(json_object_get(job, "node"), ""));
    json_decref(job);
    return 0;
}

int cli_cancel_main(int argc, char **argv)
{
    struct cli_common co = {0};
    struct cli_args a;
    struct tide_err err = {0};
    long long ids[256];
    size_t n = 0;
    const char *v;
    int id, r;
    cli_args_init(&a, argc, argv);
    for (;;) {
        r = cli_args_next(&a, cancel_opts, &id, &v, &err);
        if (r == CLI_ARGS_END && a.next < argc) {
            v = argv[a.next++]; /* ids after "--" */
            r = CLI_ARGS_POSITIONAL;
        }
        if (r == CLI_ARGS_END)
            break;
        if (r < 0)
            return cli_usage_fail("cancel", &err);
        if (r == CLI_ARGS_OPTION) {
            cli_common_apply(&co, id, v);
            continue;
        }
        if (n == sizeof ids / sizeof ids[0]) {
            tide_err_set(&err, TIDE_EINVAL, NULL, "at most %zu jobs at a time", n);
            return cli_usage_fail("cancel", &err);
        }
        if (cli_parse_id("job id", v, &ids[n++], &err) < 0)
            return cli_usage_fail("cancel", &err);
    }
    if (co.help) {
        fputs(cancel_usage, stdout);
        return 0;
    }
    if (n == 0) {
        tide_err_set(&err, TIDE_EINVAL, NULL, "which job? give one or more ids");
        return cli_usage_fail("cancel", &err);
    }
    struct cli_client c;
    if (cli_client_init(&c, &co, &err) < 0)
        return cli_fail("cancel", &err);
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        if (cancel_one(&c, ids[i]) != 0)
            rc = 1;
    cli_client_release(&c);
    if (fflush(stdout) != 0)
        rc = 1;
    return rc;
}
