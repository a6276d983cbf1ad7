/* Option parsing, the request and --json for listing commands (list_command.h). */
#include "cli/list_command.h"

#include <stdio.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/report.h"

static const struct cli_opt list_opts[] = {
    CLI_COMMON_OPTS,
    {NULL, 0, 0},
};

int cli_list_command_run(const struct cli_list_command *cmd, int argc, char **argv)
{
    struct cli_common co = {0};
    struct cli_args a;
    struct tide_err err = {0};
    const char *v;
    int id, r;
    cli_args_init(&a, argc, argv);
    while ((r = cli_args_next(&a, list_opts, &id, &v, &err)) != CLI_ARGS_END) {
        if (r < 0)
            return cli_usage_fail(cmd->name, &err);
        if (r == CLI_ARGS_POSITIONAL) {
            tide_err_set(&err, TIDE_EINVAL, NULL, "unexpected argument '%s'", v);
            return cli_usage_fail(cmd->name, &err);
        }
        cli_common_apply(&co, id, v);
    }
    if (co.help) {
        fputs(cmd->usage, stdout);
        return 0;
    }
    struct cli_client c;
    if (cli_client_init(&c, &co, &err) < 0)
        return cli_fail(cmd->name, &err);
    int rc;
    json_t *root;
    if (c.json)
        rc = cli_request_and_print(&c, "GET", cmd->path, NULL, &err) < 0 ? cli_fail(cmd->name, &err) : 0;
    else if (cli_client_request_json(&c, "GET", cmd->path, NULL, &root, &err) < 0)
        rc = cli_fail(cmd->name, &err);
    else {
        rc = cmd->print(root);
        json_decref(root);
    }
    cli_client_release(&c);
    return rc;
}
