/*
 * Header-driven CSV reading shared by the trace readers: find the columns a
 * format needs by name, then hand out rows split into fields, dropping rows
 * whose field count is wrong (with their line number).
 */
#ifndef TIDE_SIM_TRACE_COLUMNS_H
#define TIDE_SIM_TRACE_COLUMNS_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/trace.h"

struct trace_columns {
    FILE *f;
    char *buf;
    size_t cap;
    long line;                   /* line number of the row last returned (the header is line 1) */
    int nfields;                 /* fields in the header */
    int index[TRACE_MAX_FIELDS]; /* per wanted name: its column, or -1 when absent */
    char *pending; /* a header-less file's first line, returned by the first next_row */
    bool has_header;
};

/* Reads the header line and finds each of names (NULL-terminated; at most
 * TRACE_MAX_FIELDS). A required name that is missing, one of names given
 * twice, or an empty file is TIDE_EINVAL naming format (and err->field the
 * column). */
int trace_columns_read_header(struct trace_columns *c, FILE *f, const char *const *names,
                              const bool *required, const char *format, struct tide_err *err);

/* Like trace_columns_read_header, but any header column not in names is an
 * error too (tide's own CSV, where a misspelt column must not be ignored). */
int trace_columns_read_header_strict(struct trace_columns *c, FILE *f, const char *const *names,
                                     const bool *required, const char *format,
                                     struct tide_err *err);

/* For formats published without a header (Alibaba PAI): when the first
 * line's first field is names[0] it is a header, read as by
 * trace_columns_read_header; otherwise the file has exactly the columns of
 * names in that order and the first line is the first data row (line 1). */
int trace_columns_read_header_or_positional(struct trace_columns *c, FILE *f,
                                            const char *const *names, const bool *required,
                                            const char *format, struct tide_err *err);

/* Next data row split into fields (blank lines skipped; rows with the
 * wrong field count dropped through trace_drop_row). Returns the field
 * count, 0 at the end, or a TIDE_E* code. Counts t->rows_read. */
int trace_columns_next_row(struct trace_columns *c, struct trace *t, char **fields,
                           struct tide_err *err);

/* Appends the row's job to t (trace_push). Returns 0, or TIDE_ENOMEM with
 * err naming the row's line. */
int trace_columns_push(struct trace_columns *c, struct trace *t, const struct trace_job *job,
                       struct tide_err *err);

void trace_columns_release(struct trace_columns *c);

#endif
