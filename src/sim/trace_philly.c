/*
 * Philly job table (the Pollux artifact's philly.csv, also in Sia and
 * ElasticFlow): timestamp (submit, "YYYY-MM-DD HH:MM:SS", no zone),
 * duration (s, float), num_gpus, gpu_time, cluster (virtual cluster, used
 * as the project). Columns are found by header name; rows are not sorted.
 */
#include <stdlib.h>
#include <string.h>

#include "sim/trace.h"
#include "sim/trace_columns.h"

/* Days since 1970-01-01 of a proleptic Gregorian date (no libc time zone). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* "2017-10-09 07:01:55" → seconds since the epoch; -1 when malformed. */
static int parse_timestamp(const char *s, int64_t *out_s)
{
    int y, mo, d, h, mi, sec, used = 0;
    if (sscanf(s, "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6 ||
        s[used] != '\0')
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || h < 0 || mi < 0 ||
        sec < 0)
        return -1;
    *out_s = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
    return 0;
}

static int philly_read(FILE *f, struct trace *t, struct tide_err *err)
{
    static const char *const names[] = {"timestamp", "duration", "num_gpus", "cluster", NULL};
    static const bool required[] = {true, true, true, false};
    enum { C_TS, C_DUR, C_GPUS, C_VC };
    struct trace_columns cols;
    int rc = trace_columns_read_header(&cols, f, names, required, "philly", err);
    if (rc != 0)
        return rc;
    char *fields[TRACE_MAX_FIELDS];
    char why[96];
    int n;
    while ((n = trace_columns_next_row(&cols, t, fields, err)) > 0) {
        struct trace_job job = {.line = cols.line};
        int64_t submit_s, dur_ms;
        long long gpus;
        if (parse_timestamp(fields[cols.index[C_TS]], &submit_s) != 0) {
            snprintf(why, sizeof why, "timestamp is not YYYY-MM-DD HH:MM:SS");
            trace_drop_row(t, cols.line, why);
            continue;
        }
        if (trace_parse_seconds_ms(fields[cols.index[C_DUR]], &dur_ms) != 0 || dur_ms <= 0) {
            trace_drop_row(t, cols.line, "duration is not a positive number of seconds");
            continue;
        }
        if (trace_parse_int(fields[cols.index[C_GPUS]], 0, 1000000, &gpus) != 0) {
            trace_drop_row(t, cols.line, "num_gpus is not a whole number from 0 to 1000000");
            continue;
        }
        job.submit_ms = submit_s * 1000;
        job.duration_ms = dur_ms;
        job.gpus = (int)gpus;
        snprintf(job.project, sizeof job.project, "%s",
                 cols.index[C_VC] >= 0 && fields[cols.index[C_VC]][0] ? fields[cols.index[C_VC]]
                                                                      : "default");
        snprintf(job.queue, sizeof job.queue, "default");
        if (trace_push(t, &job) != 0) {
            trace_columns_release(&cols);
            return tide_err_set(err, TIDE_ENOMEM, "trace", "out of memory at line %ld", cols.line);
        }
    }
    trace_columns_release(&cols);
    return n;
}

const struct trace_reader_ops trace_reader_philly = {
    .name = "philly",
    .summary = "Philly job table: timestamp,duration,num_gpus,gpu_time,cluster (Pollux artifact)",
    .read = philly_read,
};
