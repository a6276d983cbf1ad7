/*
 * The query parameters of GET /v1/usage (by, from, to, project) read into
 * a grouping and a range of UTC days, apart from the HTTP layer (as
 * event_params.h is for /v1/events) so the rules can be tested and fuzzed
 * on their own. Whether the token may see project is the handler's check.
 */
#ifndef TIDE_SERVER_USAGE_PARAMS_H
#define TIDE_SERVER_USAGE_PARAMS_H

#include <stdint.h>

#include "common/tide_err.h"

/* The parameter names GET /v1/usage knows, NULL-terminated. */
extern const char *const usage_params_names[];

struct usage_params {
    int group;                /* USAGE_BY_* mask (by project when not given) */
    int64_t from_day, to_day; /* UTC day numbers, inclusive (0, INT64_MAX: all) */
    const char *from, *to;    /* as given, or NULL */
    const char *project;      /* or NULL */
};

/* Reads the parameters through get(ctx, name) (NULL when absent) into p;
 * its strings point into get's values. Returns 0, or TIDE_EINVAL with
 * err->field the parameter and a message saying what it accepts. */
int usage_params_parse(const char *(*get)(void *ctx, const char *name), void *ctx,
                       struct usage_params *p, struct tide_err *err);

#endif
