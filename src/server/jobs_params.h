/*
 * The query parameters of GET /v1/jobs turned into a store filter and a
 * page size, apart from the HTTP layer (as event_params.h is for
 * /v1/events) so the rules can be tested and fuzzed on their own.
 */
#ifndef TIDE_SERVER_JOBS_PARAMS_H
#define TIDE_SERVER_JOBS_PARAMS_H

#include "store/store.h"

/* The parameter names GET /v1/jobs knows, NULL-terminated. */
extern const char *const jobs_params_names[];

/* Reads state, queue, project, order and cursor through get(ctx, name)
 * (NULL when absent) into f, and the page size into *limit
 * (JOBS_PAGE_DEFAULT when not given). f's other fields are left as they
 * are; its strings point into get's values. Returns 0, or TIDE_EINVAL with
 * err->field the parameter and a message saying what it accepts. */
int jobs_params_parse(const char *(*get)(void *ctx, const char *name), void *ctx,
                      struct job_filter *f, int *limit, struct tide_err *err);

#endif
