/* Trace lists, dropped-row accounting, the reader table and CSV helpers. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* timegm */
#endif
#include "sim/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct trace_reader_ops *const readers[] = {&trace_reader_philly, &trace_reader_itp,
                                                         &trace_reader_alibaba,
                                                         &trace_reader_helios, &trace_reader_csv};

const struct trace_reader_ops *trace_reader_by_name(const char *name)
{
    for (size_t i = 0; i < sizeof readers / sizeof readers[0]; i++)
        if (!strcmp(readers[i]->name, name))
            return readers[i];
    return NULL;
}

const char *trace_reader_names(void)
{
    return "philly, itp, alibaba, helios, csv";
}

void trace_init(struct trace *t)
{
    memset(t, 0, sizeof *t);
}

void trace_release(struct trace *t)
{
    if (!t)
        return;
    free(t->jobs);
    t->jobs = NULL;
    t->njobs = t->cap = 0;
}

int trace_push(struct trace *t, const struct trace_job *job)
{
    if (t->njobs == t->cap) {
        size_t next = t->cap ? t->cap * 2 : 1024;
        struct trace_job *grown = realloc(t->jobs, next * sizeof *grown);
        if (!grown)
            return TIDE_ENOMEM;
        t->jobs = grown;
        t->cap = next;
    }
    t->jobs[t->njobs++] = *job;
    return 0;
}

void trace_drop_row(struct trace *t, long line, const char *reason)
{
    t->rows_dropped++;
    int i = 0;
    while (i < t->ndrops && strcmp(t->drops[i].reason, reason))
        i++;
    if (i == t->ndrops) {
        if (t->ndrops < TRACE_REASONS_MAX) {
            t->ndrops++;
            snprintf(t->drops[i].reason, sizeof t->drops[i].reason, "%s", reason);
            t->drops[i].first_line = line;
        } else {
            i = TRACE_REASONS_MAX - 1;
            snprintf(t->drops[i].reason, sizeof t->drops[i].reason, "other reasons");
        }
    }
    t->drops[i].count++;
    if (t->warn)
        t->warn(t->warn_ctx, t->path ? t->path : "<trace>", line, reason);
}

static int by_submit(const void *a, const void *b)
{
    const struct trace_job *x = a, *y = b;
    if (x->submit_ms != y->submit_ms)
        return x->submit_ms < y->submit_ms ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

void trace_normalise(struct trace *t)
{
    if (t->njobs == 0)
        return;
    qsort(t->jobs, t->njobs, sizeof *t->jobs, by_submit);
    /* Only dates can be that far apart (relative times were bounded when
     * read): the 100 years holding the most rows stay, so a mistyped date
     * drops itself, not the rows of the real trace. */
    size_t lo = 0, kept = 0;
    for (size_t from = 0, to = 0; from < t->njobs; from++) {
        while (to < t->njobs &&
               t->jobs[to].submit_ms - t->jobs[from].submit_ms <= TRACE_MAX_TIME_MS)
            to++;
        if (to - from > kept) {
            lo = from;
            kept = to - from;
        }
    }
    for (size_t i = 0; i < t->njobs; i++)
        if (i < lo || i >= lo + kept)
            trace_drop_row(t, t->jobs[i].line,
                           "submit time is more than 100 years from the trace's other rows");
    int64_t first = t->jobs[lo].submit_ms;
    memmove(t->jobs, t->jobs + lo, kept * sizeof *t->jobs);
    for (size_t i = 0; i < kept; i++)
        t->jobs[i].submit_ms -= first;
    t->njobs = kept;
    t->origin_s += first / 1000;
}

int trace_load(struct trace *t, const struct trace_reader_ops *ops, const char *path,
               struct tide_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return tide_err_set(err, TIDE_ENOENT, "trace", "cannot open %s: %s", path, strerror(errno));
    t->path = path;
    int rc = ops->read(f, t, err);
    if (rc == 0 && ferror(f))
        rc = tide_err_set(err, TIDE_EIO, "trace", "reading %s: %s", path, strerror(errno));
    fclose(f);
    if (rc != 0)
        return rc;
    if (t->njobs == 0)
        return tide_err_set(err, TIDE_EINVAL, "trace",
                            "%s: no usable job rows (%ld read, %ld dropped) for format %s", path,
                            t->rows_read, t->rows_dropped, ops->name);
    trace_normalise(t);
    return 0;
}

long trace_getline(char **buf, size_t *cap, FILE *f)
{
    ssize_t n = getline(buf, cap, f);
    if (n < 0)
        return feof(f) ? 0 : -1;
    return (long)n;
}

int trace_split_csv(char *line, char **fields, int max)
{
    size_t len = strlen(line);
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        line[--len] = '\0';
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return -1;
        if (*p == '"') {
            /* Quoted field: "" is a quote; the field ends at the closing quote. */
            char *out = ++p;
            fields[n++] = out;
            while (*p && !(*p == '"' && p[1] != '"')) {
                if (*p == '"')
                    p++;
                *out++ = *p++;
            }
            if (*p == '"')
                p++;
            *out = '\0';
            while (*p && *p != ',')
                p++;
        } else {
            fields[n++] = p;
            while (*p && *p != ',')
                p++;
        }
        if (*p != ',')
            break;
        *p++ = '\0';
    }
    /* Trim spaces around unquoted values: " 24GB" in Philly's machine list. */
    for (int i = 0; i < n; i++) {
        char *s = fields[i];
        while (*s == ' ' || *s == '\t')
            s++;
        size_t l = strlen(s);
        while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t'))
            s[--l] = '\0';
        fields[i] = s;
    }
    return n;
}

/* Decimal seconds without floating point: whole part, then up to three
 * digits of milliseconds (further digits round half up). A well-formed
 * number too large for int64 milliseconds is TRACE_TOO_LARGE, not -1, so
 * that a reader can say which. */
static int parse_decimal_ms(const char *s, int64_t *out_ms)
{
    const char *p = s;
    if (!*p)
        return -1;
    int64_t whole = 0;
    int digits = 0;
    bool overflow = false;
    while (*p >= '0' && *p <= '9') {
        if (whole > (INT64_MAX / 1000 - 10) / 10)
            overflow = true;
        else
            whole = whole * 10 + (*p - '0');
        p++;
        digits++;
    }
    int64_t frac = 0;
    int fdigits = 0, round = 0;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            if (fdigits < 3)
                frac = frac * 10 + (*p - '0');
            else if (fdigits == 3)
                round = *p >= '5';
            fdigits++;
            digits++;
            p++;
        }
    }
    if (*p || digits == 0)
        return -1;
    if (overflow)
        return TRACE_TOO_LARGE;
    for (int i = fdigits; i < 3; i++)
        frac *= 10;
    *out_ms = whole * 1000 + frac + round;
    return 0;
}

int trace_parse_seconds_ms(const char *s, int64_t *out_ms)
{
    return parse_decimal_ms(s, out_ms) == 0 ? 0 : -1;
}

int trace_parse_time_ms(const char *s, int64_t *out_ms)
{
    int64_t ms;
    int rc = parse_decimal_ms(s, &ms);
    if (rc == 0 && ms > TRACE_MAX_TIME_MS)
        rc = TRACE_TOO_LARGE;
    if (rc == 0)
        *out_ms = ms;
    return rc;
}

int trace_parse_int(const char *s, long long min, long long max, long long *out)
{
    if (!*s)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) {
        /* Accept integral floats such as "8.0". */
        int64_t ms;
        if (trace_parse_seconds_ms(s, &ms) != 0 || ms % 1000 != 0)
            return -1;
        v = ms / 1000;
    }
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int trace_parse_datetime_s(const char *s, int64_t *out_s)
{
    int y, mo, d, h, mi, sec, used = 0;
    if (sscanf(s, "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6 ||
        s[used] != '\0')
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || h < 0 || mi < 0 ||
        sec < 0)
        return -1;
    /* timegm reads the fields as UTC (no time zone) but would move a day
     * past the month's end to the next month: the day's midnight, converted
     * back, must be the same date. The time of day is added after, so a
     * leap second at 23:59:60 is not taken for a day that does not exist. */
    struct tm day = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d};
    errno = 0;
    time_t midnight = timegm(&day);
    if (midnight == (time_t)-1 && errno)
        return -1;
    struct tm back;
    if (!gmtime_r(&midnight, &back) || back.tm_year != y - 1900 || back.tm_mon != mo - 1 ||
        back.tm_mday != d)
        return TRACE_NO_SUCH_DATE;
    *out_s = (int64_t)midnight + h * 3600 + mi * 60 + sec;
    return 0;
}
