/*
 * Reading GET /v1/jobs a page at a time (cursor/next), shared by `tide jobs`
 * and `tide cancel --project/--state`, so neither asks for everything in one
 * request.
 */
#ifndef TIDE_CLI_JOBS_FETCH_H
#define TIDE_CLI_JOBS_FETCH_H

#include <jansson.h>

#include "cli/client.h"
#include "common/tide_err.h"

/* Jobs asked for per request: the server's default page. */
#define CLI_JOBS_PAGE 1000

/* The filters of a listing; NULL fields are not sent. */
struct cli_jobs_filter {
    const char *state, *queue, *project;
    const char *order; /* "oldest", or NULL: newest first */
};

/* Fetches up to want jobs (-1: all) a page at a time into a new
 * {"jobs": [...], "next": cursor or null} in *out; next is where a later
 * call would go on. 0, or -1 with err. */
int cli_jobs_fetch(struct cli_client *c, const struct cli_jobs_filter *f, long long want,
                   json_t **out, struct tide_err *err);

#endif
