/* GET /v1/usage's query parameters (see usage_params.h). */
#include "server/usage_params.h"

#include <ctype.h>
#include <stdio.h>
#include <time.h>

#include "core/usage_ledger.h"

const char *const usage_params_names[] = {"by", "from", "to", "project", NULL};

/* "YYYY-MM-DD" into a UTC day number; -1 when it isn't one. Digits where
 * the form has them: sscanf alone took "2025-+1-01", "2025-1-5", " 2025...". */
static int64_t parse_day(const char *s)
{
    for (int i = 0; i < 10; i++)
        if (i == 4 || i == 7 ? s[i] != '-' : !isdigit((unsigned char)s[i]))
            return -1;
    if (s[10])
        return -1;
    int y, m, d;
    if (sscanf(s, "%4d-%2d-%2d", &y, &m, &d) != 3 || m < 1 || m > 12 || d < 1 || d > 31 || y < 1970)
        return -1;
    struct tm tm = {.tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = d};
    time_t t = timegm(&tm);
    if (t < 0 || tm.tm_mday != d) /* 2026-02-30 is normalised away: refuse it */
        return -1;
    return (int64_t)t / 86400;
}

int usage_params_parse(const char *(*get)(void *ctx, const char *name), void *ctx,
                       struct usage_params *p, struct tide_err *err)
{
    const char *by = get(ctx, "by");
    p->from = get(ctx, "from");
    p->to = get(ctx, "to");
    p->project = get(ctx, "project");
    char bad[32];
    p->group = usage_group_parse(by ? by : "project", bad);
    if (p->group < 0)
        return tide_err_set(err, TIDE_EINVAL, "by",
                            "by: unknown key '%s' (known: project, pool, queue, day, user)", bad);
    p->from_day = p->from ? parse_day(p->from) : 0;
    p->to_day = p->to ? parse_day(p->to) : INT64_MAX;
    if (p->from_day < 0)
        return tide_err_set(err, TIDE_EINVAL, "from", "from: must be a date YYYY-MM-DD, not '%s'",
                            p->from);
    if (p->to_day < 0)
        return tide_err_set(err, TIDE_EINVAL, "to", "to: must be a date YYYY-MM-DD, not '%s'",
                            p->to);
    if (p->to_day < p->from_day)
        return tide_err_set(err, TIDE_EINVAL, "to", "to: %s is before from %s", p->to, p->from);
    return 0;
}
