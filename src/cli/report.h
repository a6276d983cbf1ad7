/*
 * How client subcommands end: error lines on stderr in one format
 * ("tide CMD: message") with the exit status that goes with them, and the
 * raw JSON that --json prints.
 */
#ifndef TIDE_CLI_REPORT_H
#define TIDE_CLI_REPORT_H

#include <stddef.h>

#include "cli/client.h"
#include "common/tide_err.h"

/* Prints err for subcommand cmd and returns 1 (a failed request or task). */
int cli_fail(const char *cmd, const struct tide_err *err);

/* Prints err and a pointer to --help; returns 2 (bad usage or bad input). */
int cli_usage_fail(const char *cmd, const struct tide_err *err);

/* Prints err without the --help pointer and returns 2: for bad local input
 * such as an unreadable or malformed job file. */
int cli_input_fail(const char *cmd, const struct tide_err *err);

/* Writes a JSON body to stdout as the server sent it, ending with a newline.
 * Returns 0, or 1 when stdout could not be written. */
int cli_print_body(const char *body, size_t len);

/* For --json: sends the request and prints the answer's body as it came.
 * Returns 0, or a negative code with err set (TIDE_EIO when stdout fails). */
int cli_request_and_print(struct cli_client *c, const char *method, const char *path,
                          const char *body, struct tide_err *err);

#endif
