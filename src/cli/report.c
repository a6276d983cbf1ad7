/* Error lines and raw JSON output for the client subcommands. */
#include "cli/report.h"

#include <stdio.h>

int cli_fail(const char *cmd, const struct tide_err *err)
{
    fprintf(stderr, "tide %s: %s\n", cmd, err->message[0] ? err->message : "failed");
    return 1;
}

int cli_usage_fail(const char *cmd, const struct tide_err *err)
{
    fprintf(stderr, "tide %s: %s\n(see 'tide %s --help')\n", cmd, err->message, cmd);
    return 2;
}

int cli_input_fail(const char *cmd, const struct tide_err *err)
{
    fprintf(stderr, "tide %s: %s\n", cmd, err->message);
    return 2;
}

int cli_print_body(const char *body, size_t len)
{
    if (fwrite(body, 1, len, stdout) != len)
        return 1;
    if ((len == 0 || body[len - 1] != '\n') && putchar('\n') == EOF)
        return 1;
    return fflush(stdout) == 0 ? 0 : 1;
}

int cli_request_and_print(struct cli_client *c, const char *method, const char *path,
                          const char *body, struct tide_err *err)
{
    struct http_response resp;
    int rc = cli_client_request(c, method, path, body, CLI_TIMEOUT_MS, &resp, err);
    if (rc < 0)
        return rc;
    if (cli_print_body(resp.body, resp.len) != 0)
        rc = tide_err_set(err, TIDE_EIO, NULL, "cannot write to stdout");
    http_response_release(&resp);
    return rc;
}
