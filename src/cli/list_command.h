/*
 * The body shared by read-only listing commands (`tide queues`, `tide usage`,
 * `tide pools`): common options only, GET one path, then either the raw JSON
 * (--json) or a table printed by the command's own function.
 */
#ifndef TIDE_CLI_LIST_COMMAND_H
#define TIDE_CLI_LIST_COMMAND_H

#include <jansson.h>

struct cli_list_command {
    const char *name;  /* "queues", for messages */
    const char *usage; /* printed by --help */
    const char *path;  /* "/v1/queues" */
    int (*print)(json_t *root); /* the table; returns 0 or 1 */
};

/* Runs the command; returns the process exit status. */
int cli_list_command_run(const struct cli_list_command *cmd, int argc, char **argv);

#endif
