/*
 * Microsoft ITP traces (microsoft/elasticflow-traces raw-traces):
 * job_id, submission_time (s from the start of collection), duration (s),
 * num_gpu. One file per cluster.
 */
#include <string.h>

#include "sim/trace.h"
#include "sim/trace_columns.h"

static int itp_read(FILE *f, struct trace *t, struct tide_err *err)
{
    static const char *const names[] = {"job_id", "submission_time", "duration", "num_gpu", NULL};
    static const bool required[] = {false, true, true, true};
    enum { C_ID, C_SUBMIT, C_DUR, C_GPUS };
    struct trace_columns cols;
    int rc = trace_columns_read_header(&cols, f, names, required, "itp", err);
    if (rc != 0)
        return rc;
    char *fields[TRACE_MAX_FIELDS];
    int n;
    while ((n = trace_columns_next_row(&cols, t, fields, err)) > 0) {
        struct trace_job job = {.line = cols.line};
        long long gpus;
        int r = trace_parse_time_ms(fields[cols.index[C_SUBMIT]], &job.submit_ms);
        if (r != 0) {
            trace_drop_row(t, cols.line,
                           r == TRACE_TOO_LARGE
                               ? "submission_time is too large (more than 100 years)"
                               : "submission_time is not a number of seconds >= 0");
            continue;
        }
        r = trace_parse_time_ms(fields[cols.index[C_DUR]], &job.duration_ms);
        if (r == TRACE_TOO_LARGE) {
            trace_drop_row(t, cols.line, "duration is too large (more than 100 years)");
            continue;
        }
        if (r != 0 || job.duration_ms <= 0) {
            trace_drop_row(t, cols.line, "duration is not a positive number of seconds");
            continue;
        }
        if (trace_parse_int(fields[cols.index[C_GPUS]], 0, 1000000, &gpus) != 0) {
            trace_drop_row(t, cols.line, "num_gpu is not a whole number from 0 to 1000000");
            continue;
        }
        job.gpus = (int)gpus;
        snprintf(job.project, sizeof job.project, "default");
        snprintf(job.queue, sizeof job.queue, "default");
        if ((n = trace_columns_push(&cols, t, &job, err)) != 0)
            break;
    }
    trace_columns_release(&cols);
    return n;
}

const struct trace_reader_ops trace_reader_itp = {
    .name = "itp",
    .summary = "Microsoft ITP (ElasticFlow raw traces): job_id,submission_time,duration,num_gpu",
    .read = itp_read,
};
