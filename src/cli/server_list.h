/*
 * The CLI's list of tide servers: `--server URL[,URL...]` or TIDE_SERVER,
 * for several servers of which one leads (docs/ha.md). Parsing, and the
 * check that keeps a follower's leader hint from sending our token to a
 * server the user did not name.
 */
#ifndef TIDE_CLI_SERVER_LIST_H
#define TIDE_CLI_SERVER_LIST_H

#include <stddef.h>

#include "common/tide_err.h"

#define CLI_SERVERS_MAX 16

struct cli_server_list {
    char *urls[CLI_SERVERS_MAX]; /* normalised: scheme://host[:port][/path], no trailing '/' */
    size_t n;
};

/* Splits raw on commas into list (cleared first). Each entry is trimmed of
 * spaces and trailing '/'; one without a scheme ("127.0.0.1:8080") gets
 * http://. Errors (TIDE_EINVAL, field = the field argument, e.g.
 * "--server"): an empty entry, a scheme other than http or https, a URL
 * without a host, more than CLI_SERVERS_MAX entries. On error the list is
 * left empty. Release with cli_server_list_release. */
int cli_server_list_parse(struct cli_server_list *list, const char *raw, const char *field,
                          struct tide_err *err);

void cli_server_list_release(struct cli_server_list *list);

/* The index of url in list, comparing the scheme and host without regard
 * to case and ignoring trailing '/'; -1 when it is not there. */
int cli_server_list_find(const struct cli_server_list *list, const char *url);

#endif
