/*
 * `tide submit --file jobs.jsonl`: many jobs, one JSON spec per line, sent
 * in POST /v1/jobs:batch requests of up to SUBMIT_FILE_CHUNK specs. Each
 * line gets its own id or its own error (named by file and line).
 */
#ifndef TIDE_CLI_SUBMIT_FILE_H
#define TIDE_CLI_SUBMIT_FILE_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "cli/client.h"

#define SUBMIT_FILE_CHUNK 2000
/* The body of one batch request stays well under the server's 1 MiB. */
#define SUBMIT_FILE_MAX_BODY (768 * 1024)

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

/* Reads every spec of f (named path in errors; blank lines and '#'
 * comments skipped) into specs, overrides merged and set_workdir applied,
 * and each one's line number into *lines (malloc'ed, the caller frees).
 * All are read before any is sent, so a malformed file submits nothing.
 * Returns 0, 2 for a malformed or empty file, or a negative code; err
 * says why. */
int cli_submit_file_read(FILE *f, const char *path, json_t *overrides,
                         void (*set_workdir)(json_t *spec), json_t *specs, int **lines,
                         struct tide_err *err);

/* Where the request that starts at specs[first] ends (the index past its
 * last spec): at most SUBMIT_FILE_CHUNK specs, a body of at most max_body
 * bytes, within the server's submit_limits. A request holds at least one
 * spec, even one over these alone. */
size_t cli_submit_file_chunk_end(json_t *specs, size_t first, size_t max_body);

#endif
