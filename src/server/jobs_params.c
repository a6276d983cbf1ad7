/* GET /v1/jobs's query parameters into a struct job_filter (see jobs_params.h). */
#include "server/jobs_params.h"

#include <string.h>

#include "common/parse_scalar.h"
#include "server/server.h"

const char *const jobs_params_names[] = {"state", "queue",  "project", "order",
                                         "limit", "cursor", NULL};

int jobs_params_parse(const char *(*get)(void *ctx, const char *name), void *ctx,
                      struct job_filter *f, int *limit, struct tide_err *err)
{
    f->state = get(ctx, "state");
    f->queue = get(ctx, "queue");
    f->project = get(ctx, "project");
    enum job_state ignored;
    if (f->state && job_state_parse(f->state, &ignored) != 0)
        return tide_err_set(err, TIDE_EINVAL, "state", "state: unknown state '%.64s'", f->state);
    const char *order = get(ctx, "order");
    if (order && strcmp(order, "newest") != 0 && strcmp(order, "oldest") != 0)
        return tide_err_set(err, TIDE_EINVAL, "order",
                            "order: must be newest (the default) or oldest, not '%.32s'", order);
    f->oldest_first = order && !strcmp(order, "oldest");
    *limit = JOBS_PAGE_DEFAULT;
    const char *given = get(ctx, "limit");
    if (given) {
        long long n = 0; /* digits only: no sign, space or base */
        if (parse_scalar_int(given, &n) != 0 || n < 1 || n > JOBS_PAGE_MAX)
            return tide_err_set(err, TIDE_EINVAL, "limit",
                                "limit: must be 1 to %d; page through more with cursor "
                                "(each reply's next)",
                                JOBS_PAGE_MAX);
        *limit = (int)n;
    }
    /* The cursor is the id of the last job listed (opaque to clients). */
    const char *cursor = get(ctx, "cursor");
    if (cursor) {
        long long id = 0;
        if (parse_scalar_int(cursor, &id) != 0 || id < 1)
            return tide_err_set(err, TIDE_EINVAL, "cursor",
                                "cursor: '%.32s' is not a previous reply's next", cursor);
        f->after_id = id;
    }
    return 0;
}
