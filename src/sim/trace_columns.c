/* Header-driven CSV rows for the trace readers (see trace_columns.h). */
#include "sim/trace_columns.h"

#include <stdlib.h>
#include <string.h>

/* Finds names among the header fields already split from line 1. */
static int match_header(struct trace_columns *c, char **fields, int nf, const char *const *names,
                        const bool *required, const char *format, bool strict, struct tide_err *err)
{
    c->has_header = true;
    c->nfields = nf;
    int nnames = 0;
    for (; names[nnames]; nnames++) {
        c->index[nnames] = -1;
        for (int i = 0; i < nf; i++) {
            if (strcmp(fields[i], names[nnames]))
                continue;
            /* Which of two would be meant cannot be known: refuse the file. */
            if (c->index[nnames] >= 0)
                return tide_err_set(err, TIDE_EINVAL, names[nnames],
                                    "%s trace: column '%s' appears twice in the header "
                                    "(columns %d and %d, line 1)",
                                    format, names[nnames], c->index[nnames] + 1, i + 1);
            c->index[nnames] = i;
        }
        if (c->index[nnames] < 0 && required[nnames])
            return tide_err_set(err, TIDE_EINVAL, names[nnames],
                                "%s trace: header has no column '%s' (line 1)", format,
                                names[nnames]);
    }
    if (strict) {
        for (int i = 0; i < nf; i++) {
            bool known = false;
            for (int k = 0; k < nnames; k++)
                known |= c->index[k] == i;
            if (!known)
                return tide_err_set(err, TIDE_EINVAL, fields[i],
                                    "%s trace: unknown column '%s' in the header (line 1)", format,
                                    fields[i]);
        }
    }
    return 0;
}

/* Reads line 1 and splits it; a UTF-8 byte order mark is dropped. */
static int read_first_line(struct trace_columns *c, FILE *f, char **fields, const char *format,
                           struct tide_err *err)
{
    memset(c, 0, sizeof *c);
    c->f = f;
    long n = trace_getline(&c->buf, &c->cap, f);
    c->line = 1;
    if (n <= 0)
        return tide_err_set(err, TIDE_EINVAL, "trace", "%s trace: no header line", format);
    if (!strncmp(c->buf, "\xEF\xBB\xBF", 3))
        memmove(c->buf, c->buf + 3, (size_t)n - 2);
    int nf = trace_split_csv(c->buf, fields, TRACE_MAX_FIELDS);
    if (nf < 0)
        return tide_err_set(err, TIDE_EINVAL, "trace",
                            "%s trace: more than %d columns in the header", format,
                            TRACE_MAX_FIELDS);
    return nf;
}

static int read_header(struct trace_columns *c, FILE *f, const char *const *names,
                       const bool *required, const char *format, bool strict, struct tide_err *err)
{
    char *fields[TRACE_MAX_FIELDS];
    int nf = read_first_line(c, f, fields, format, err);
    if (nf < 0)
        return nf;
    return match_header(c, fields, nf, names, required, format, strict, err);
}

int trace_columns_read_header_or_positional(struct trace_columns *c, FILE *f,
                                            const char *const *names, const bool *required,
                                            const char *format, struct tide_err *err)
{
    memset(c, 0, sizeof *c);
    c->f = f;
    long n = trace_getline(&c->buf, &c->cap, f);
    if (n <= 0) {
        trace_columns_release(c);
        return tide_err_set(err, TIDE_EINVAL, "trace", "%s trace: empty file", format);
    }
    size_t skip = strncmp(c->buf, "\xEF\xBB\xBF", 3) ? 0 : 3;
    c->pending = strdup(c->buf + skip);
    if (!c->pending) {
        trace_columns_release(c);
        return tide_err_set(err, TIDE_ENOMEM, "trace", "out of memory");
    }
    char *fields[TRACE_MAX_FIELDS];
    int nf = trace_split_csv(c->buf + skip, fields, TRACE_MAX_FIELDS);
    if (nf > 0 && !strcmp(fields[0], names[0])) {
        free(c->pending);
        c->pending = NULL;
        c->line = 1;
        int rc = match_header(c, fields, nf, names, required, format, false, err);
        if (rc)
            trace_columns_release(c);
        return rc;
    }
    /* No header: the documented column order. */
    int k = 0;
    for (; names[k]; k++)
        c->index[k] = k;
    c->nfields = k;
    c->line = 0;
    return 0;
}

/* On failure the line buffer is freed here, so readers just return. */
int trace_columns_read_header(struct trace_columns *c, FILE *f, const char *const *names,
                              const bool *required, const char *format, struct tide_err *err)
{
    int rc = read_header(c, f, names, required, format, false, err);
    if (rc)
        trace_columns_release(c);
    return rc;
}

int trace_columns_read_header_strict(struct trace_columns *c, FILE *f, const char *const *names,
                                     const bool *required, const char *format, struct tide_err *err)
{
    int rc = read_header(c, f, names, required, format, true, err);
    if (rc)
        trace_columns_release(c);
    return rc;
}

int trace_columns_next_row(struct trace_columns *c, struct trace *t, char **fields,
                           struct tide_err *err)
{
    for (;;) {
        long n;
        if (c->pending) {
            free(c->buf);
            c->buf = c->pending;
            c->pending = NULL;
            n = (long)strlen(c->buf);
            c->cap = (size_t)n + 1;
        } else {
            n = trace_getline(&c->buf, &c->cap, c->f);
        }
        if (n == 0)
            return 0;
        if (n < 0)
            return tide_err_set(err, TIDE_EIO, "trace", "read error after line %ld", c->line);
        c->line++;
        if (strspn(c->buf, " \t\r\n") == (size_t)n)
            continue;
        t->rows_read++;
        int nf = trace_split_csv(c->buf, fields, TRACE_MAX_FIELDS);
        if (nf != c->nfields) {
            char why[96];
            if (nf < 0)
                snprintf(why, sizeof why, "more than %d fields", TRACE_MAX_FIELDS);
            else
                snprintf(why, sizeof why, "%d fields where the %s has %d", nf,
                         c->has_header ? "header" : "format", c->nfields);
            /* The count is part of the reason, so rows group by it; that is fine. */
            trace_drop_row(t, c->line, why);
            continue;
        }
        return nf;
    }
}

int trace_columns_push(struct trace_columns *c, struct trace *t, const struct trace_job *job,
                       struct tide_err *err)
{
    if (trace_push(t, job) != 0)
        return tide_err_set(err, TIDE_ENOMEM, "trace", "out of memory at line %ld", c->line);
    return 0;
}

void trace_columns_release(struct trace_columns *c)
{
    free(c->buf);
    c->buf = NULL;
    free(c->pending);
    c->pending = NULL;
}
