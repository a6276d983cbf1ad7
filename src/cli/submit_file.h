/*
 * `tide submit --file jobs.jsonl`: many jobs, one JSON spec per line, sent
 * in POST /v1/jobs:batch requests of up to SUBMIT_FILE_CHUNK specs. Each
 * line gets its own id or its own error (named by file and line).
 */
#ifndef TIDE_CLI_SUBMIT_FILE_H
#define TIDE_CLI_SUBMIT_FILE_H

#include <jansson.h>
#include <stddef.h>

#include "cli/client.h"

#define SUBMIT_FILE_CHUNK 2000

/* Submits every line of path ('-': stdin) with overrides merged into each
 * (and workdir defaulted by set_workdir). Fills *ids (malloc'ed, the
 * caller frees) with the created jobs' ids in line order, *nids of them;
 * *answers (new reference) collects every line's answer for --json.
 * Returns 0 when every line made its job(s), 1 when some were refused
 * (printed to stderr), 2 for an unreadable or malformed file, or a
 * negative code with err when a request failed. */
int cli_submit_file(struct cli_client *c, const char *path, json_t *overrides,
                    void (*set_workdir)(json_t *spec), long long **ids, size_t *nids,
                    json_t **answers, struct tide_err *err);

#endif
