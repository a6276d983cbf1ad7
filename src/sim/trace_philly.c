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
    int n;
    while ((n = trace_columns_next_row(&cols, t, fields, err)) > 0) {
        struct trace_job job = {.line = cols.line};
        int64_t submit_s, dur_ms;
        long long gpus;
        int d = trace_parse_datetime_s(fields[cols.index[C_TS]], &submit_s);
        if (d != 0) {
            trace_drop_row(t, cols.line,
                           d == TRACE_NO_SUCH_DATE ? "timestamp: date does not exist"
                                                   : "timestamp is not YYYY-MM-DD HH:MM:SS");
            continue;
        }
        int r = trace_parse_time_ms(fields[cols.index[C_DUR]], &dur_ms);
        if (r == TRACE_TOO_LARGE) {
            trace_drop_row(t, cols.line, "duration is too large (more than 100 years)");
            continue;
        }
        if (r != 0 || dur_ms <= 0) {
            trace_drop_row(t, cols.line, "duration is not a positive number of seconds");
            continue;
        }
        if (trace_parse_int(fields[cols.index[C_GPUS]], 0, 1000000, &gpus) != 0) {
            trace_drop_row(t, cols.line, "num_gpus is not a whole number from 0 to 1000000");
            continue;
        }
        const char *vc = cols.index[C_VC] >= 0 ? fields[cols.index[C_VC]] : "";
        if (strlen(vc) >= sizeof job.project) { /* as csv and helios: never cut */
            trace_drop_row(t, cols.line, "cluster is longer than 63 bytes");
            continue;
        }
        job.submit_ms = submit_s * 1000;
        job.duration_ms = dur_ms;
        job.gpus = (int)gpus;
        snprintf(job.project, sizeof job.project, "%s", vc[0] ? vc : "default");
        snprintf(job.queue, sizeof job.queue, "default");
        if ((n = trace_columns_push(&cols, t, &job, err)) != 0)
            break;
    }
    trace_columns_release(&cols);
    return n;
}

const struct trace_reader_ops trace_reader_philly = {
    .name = "philly",
    .summary = "Philly job table: timestamp,duration,num_gpus,gpu_time,cluster (Pollux artifact)",
    .read = philly_read,
};
