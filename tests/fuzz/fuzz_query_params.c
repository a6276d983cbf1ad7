/*
 * Fuzz target: the query strings of GET /v1/events, /v1/jobs and /v1/usage
 * (server/event_params.c, jobs_params.c, usage_params.c). The input is a
 * query string: '&' between parameters, '=' between name and value, %XX
 * and '+' decoded, a name without '=' given no value and the first of a
 * repeated name the one read, as libmicrohttpd hands them to the server.
 * Each endpoint's parser reads the same parameters. A refusal must name a
 * parameter that endpoint knows and the request gave, begin with that name,
 * and be text (UTF-8) a reply can carry; what is accepted must be within
 * the documented ranges.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/job_state.h"
#include "fuzz.h"
#include "server/event_params.h"
#include "server/jobs_params.h"
#include "server/server.h"
#include "server/usage_params.h"

#define QUERY_PARAMS_MAX 64

struct query {
    char *names[QUERY_PARAMS_MAX];
    char *values[QUERY_PARAMS_MAX]; /* NULL: the name came without '=' */
    int n;
};

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes %XX and '+' in place; a decoded NUL ends the string, as it does
 * for the server's C strings. */
static void url_decode(char *s)
{
    char *out = s;
    for (const char *p = s; *p; p++) {
        int hi, lo;
        if (*p == '+') {
            *out++ = ' ';
        } else if (*p == '%' && (hi = hex_digit(p[1])) >= 0 && (lo = hex_digit(p[2])) >= 0) {
            *out++ = (char)(hi * 16 + lo);
            p += 2;
        } else {
            *out++ = *p;
        }
    }
    *out = '\0';
}

/* Cuts text (modified in place) into q's names and values. */
static void query_split(char *text, struct query *q)
{
    q->n = 0;
    for (char *p = text; p && q->n < QUERY_PARAMS_MAX;) {
        char *amp = strchr(p, '&');
        if (amp)
            *amp = '\0';
        if (*p) {
            char *eq = strchr(p, '=');
            if (eq)
                *eq = '\0';
            url_decode(p);
            if (eq)
                url_decode(eq + 1);
            q->names[q->n] = p;
            q->values[q->n++] = eq ? eq + 1 : NULL;
        }
        p = amp ? amp + 1 : NULL;
    }
}

static const char *query_get(void *ctx, const char *name)
{
    const struct query *q = ctx;
    for (int i = 0; i < q->n; i++)
        if (!strcmp(q->names[i], name))
            return q->values[i];
    return NULL;
}

static bool is_utf8(const char *s)
{
    json_t *j = json_string(s); /* jansson refuses what is not UTF-8 */
    json_decref(j);
    return j != NULL;
}

/* A refusal names a parameter of known that the request gave, and says so
 * first ("limit: must be ..."), in text a reply can carry. */
static void check_refusal(int rc, const struct tide_err *err, const char *const *known,
                          struct query *q)
{
    if (rc != TIDE_EINVAL || err->code != TIDE_EINVAL)
        abort();
    if (!is_utf8(err->message) || !is_utf8(err->field))
        abort();
    bool listed = false;
    for (const char *const *k = known; *k; k++)
        listed |= !strcmp(*k, err->field);
    if (!listed || !query_get(q, err->field))
        abort();
    size_t n = strlen(err->field);
    if (strncmp(err->message, err->field, n) != 0 || err->message[n] != ':')
        abort();
}

static void check_events(struct query *q)
{
    struct event_filter f;
    struct event_kinds_buf kb;
    struct tide_err err;
    tide_err_clear(&err);
    int rc = event_params_parse(query_get, q, &f, &kb, &err);
    if (rc != 0) {
        check_refusal(rc, &err, event_params_names, q);
        return;
    }
    if (f.since_id < 0 || f.job_id < 0 || f.limit < 0 || f.limit > 100000 || f.tail < 0 ||
        f.tail > 100000 || (f.limit && f.tail) || (f.to_ms && f.to_ms <= f.from_ms))
        abort();
    const char *names[] = {f.node, f.pool, f.project};
    for (int i = 0; i < 3; i++)
        if (names[i] && (!names[i][0] || strlen(names[i]) >= TIDE_NAME_MAX))
            abort();
    if (f.nkinds < 0 || f.nkinds > EVENT_KINDS_MAX)
        abort();
    for (int i = 0; i < f.nkinds; i++) {
        const char *k = f.kinds[i];
        size_t n = strspn(k, "abcdefghijklmnopqrstuvwxyz0123456789_");
        if (n == 0 || !(k[n] == '\0' || (k[n] == '*' && k[n + 1] == '\0')))
            abort(); /* a kind, or a prefix with its one trailing '*' */
    }
}

static void check_jobs(struct query *q)
{
    struct job_filter f = {0};
    int limit = 0;
    struct tide_err err;
    tide_err_clear(&err);
    int rc = jobs_params_parse(query_get, q, &f, &limit, &err);
    if (rc != 0) {
        check_refusal(rc, &err, jobs_params_names, q);
        return;
    }
    enum job_state state;
    if (limit < 1 || limit > JOBS_PAGE_MAX || f.after_id < 0 ||
        (f.state && job_state_parse(f.state, &state) != 0))
        abort();
}

static void check_usage(struct query *q)
{
    struct usage_params p;
    struct tide_err err;
    tide_err_clear(&err);
    int rc = usage_params_parse(query_get, q, &p, &err);
    if (rc != 0) {
        check_refusal(rc, &err, usage_params_names, q);
        return;
    }
    if (p.group < 0 || p.group > 31 || p.from_day < 0 || p.to_day < p.from_day)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_strndup(data, size);
    if (!text)
        return 0;
    struct query q;
    query_split(text, &q);
    check_events(&q);
    check_jobs(&q);
    check_usage(&q);
    free(text);
    return 0;
}
