/* GET /v1/events's query parameters into a struct event_filter (see event_params.h). */
#include "server/event_params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const event_params_names[] = {"since", "job",  "node", "pool",  "project",
                                          "kind",  "from", "to",   "tail",  "limit", NULL};

static int parse_int(const char *name, const char *v, long long lo, long long hi, long long *out,
                     struct tide_err *err)
{
    char *end;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || n < lo || n > hi)
        return tide_err_set(err, TIDE_EINVAL, name, "%s: must be an integer from %lld to %lld, not '%.40s'",
                            name, lo, hi, v);
    *out = n;
    return 0;
}

static int parse_name(const char *name, const char *v, const char **out, struct tide_err *err)
{
    size_t n = strlen(v);
    if (n == 0 || n >= TIDE_NAME_MAX)
        return tide_err_set(err, TIDE_EINVAL, name, "%s: must be a name of 1 to %d characters",
                            name, TIDE_NAME_MAX - 1);
    *out = v;
    return 0;
}

/* Digits only, exactly n of them. */
static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* YYYY-MM-DD[THH:MM[:SS]][Z] in UTC. */
static int parse_date(const char *s, int64_t *out_ms)
{
    struct tm tm = {0};
    int y, mo, d, h = 0, mi = 0, sec = 0;
    if (digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) || s[7] != '-' ||
        digits(s + 8, 2, &d))
        return -1;
    const char *p = s + 10;
    if (*p == 'T' || *p == ' ') {
        if (digits(p + 1, 2, &h) || p[3] != ':' || digits(p + 4, 2, &mi))
            return -1;
        p += 6;
        if (*p == ':') {
            if (digits(p + 1, 2, &sec))
                return -1;
            p += 3;
        }
    }
    if (*p == 'Z')
        p++;
    if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return -1;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || tm.tm_mday != d) /* timegm normalises Feb 30 to March */
        return -1;
    *out_ms = (int64_t)t * 1000;
    return 0;
}

int event_params_time_ms(const char *s, int64_t *out_ms)
{
    if (strlen(s) >= 10 && s[4] == '-')
        return parse_date(s, out_ms);
    char *end;
    double v = strtod(s, &end);
    /* Up to year 2286 in seconds; a value in milliseconds is refused, not misread. */
    if (!*s || *end || !(v >= 0 && v < 1e10))
        return -1;
    *out_ms = (int64_t)(v * 1000.0);
    return 0;
}

/* "job_started,node_*" into kb and f->kinds; "job_" counts as "job_*". */
static int parse_kinds(const char *v, struct event_filter *f, struct event_kinds_buf *kb,
                       struct tide_err *err)
{
    size_t used = 0;
    const char *p = v;
    f->nkinds = 0;
    for (;;) {
        size_t n = strcspn(p, ",");
        bool star = n && p[n - 1] == '*';
        size_t body = star ? n - 1 : n;
        bool ok = body > 0 && body < TIDE_NAME_MAX;
        for (size_t i = 0; ok && i < body; i++)
            ok = (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') || p[i] == '_';
        if (!ok)
            return tide_err_set(err, TIDE_EINVAL, "kind",
                                "kind: '%.*s' is not an event kind (lower-case letters, digits and _,"
                                " a trailing * or _ for every kind that starts so)",
                                (int)(n > 64 ? 64 : n), p);
        if (f->nkinds == EVENT_KINDS_MAX)
            return tide_err_set(err, TIDE_EINVAL, "kind", "kind: at most %d kinds", EVENT_KINDS_MAX);
        bool prefix = star || p[body - 1] == '_';
        if (used + body + 2 > sizeof kb->text)
            return tide_err_set(err, TIDE_EINVAL, "kind", "kind: too long");
        char *k = kb->text + used;
        memcpy(k, p, body);
        if (prefix)
            k[body++] = '*';
        k[body] = '\0';
        used += body + 1;
        f->kinds[f->nkinds++] = k;
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

int event_params_parse(const char *(*get)(void *ctx, const char *name), void *ctx,
                       struct event_filter *f, struct event_kinds_buf *kb, struct tide_err *err)
{
    memset(f, 0, sizeof *f);
    long long n = 0;
    const char *v;
    if ((v = get(ctx, "since")) && parse_int("since", v, 0, INT64_MAX, &n, err) == 0)
        f->since_id = n;
    else if (v)
        return err->code;
    if ((v = get(ctx, "job")) && parse_int("job", v, 1, INT64_MAX, &n, err) == 0)
        f->job_id = n;
    else if (v)
        return err->code;
    if ((v = get(ctx, "limit")) && parse_int("limit", v, 1, 100000, &n, err) == 0)
        f->limit = (int)n;
    else if (v)
        return err->code;
    if ((v = get(ctx, "tail")) && parse_int("tail", v, 1, 100000, &n, err) == 0)
        f->tail = (int)n;
    else if (v)
        return err->code;
    if (f->tail && f->limit)
        return tide_err_set(err, TIDE_EINVAL, "tail",
                            "tail: gives the newest N events; it cannot be combined with limit");
    static const char *const names[] = {"node", "pool", "project"};
    const char **outs[] = {&f->node, &f->pool, &f->project};
    for (int i = 0; i < 3; i++)
        if ((v = get(ctx, names[i])) && parse_name(names[i], v, outs[i], err) != 0)
            return err->code;
    if ((v = get(ctx, "kind")) && parse_kinds(v, f, kb, err) != 0)
        return err->code;
    static const char *const times[] = {"from", "to"};
    int64_t *touts[] = {&f->from_ms, &f->to_ms};
    for (int i = 0; i < 2; i++)
        if ((v = get(ctx, times[i])) && event_params_time_ms(v, touts[i]) != 0)
            return tide_err_set(err, TIDE_EINVAL, times[i],
                                "%s: must be Unix seconds or a UTC date YYYY-MM-DD[THH:MM[:SS]], not '%.40s'",
                                times[i], v);
    /* to_ms 0 means no bound: a given "to=0" (or 1970) must not become one */
    if (get(ctx, "to") && f->to_ms <= f->from_ms)
        return tide_err_set(err, TIDE_EINVAL, "to", "to: must be after from (and 1970)");
    return 0;
}
