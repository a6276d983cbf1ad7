/*
 * tide's own trace CSV (docs/sim.md): a header naming the columns, then one
 * job per row. submit_time and duration (seconds, decimals allowed) and gpus
 * are required; gpu_memory (MiB per GPU), project, queue, priority and
 * gpu_util (percent of the job's GPUs busy while it runs, 0 to 100,
 * decimals allowed; empty: unknown) are optional. An unknown column is an
 * error, so a misspelt one is not ignored.
 */
#include <string.h>

#include "sim/trace.h"
#include "sim/trace_columns.h"

static int csv_read(FILE *f, struct trace *t, struct tide_err *err)
{
    static const char *const names[] = {"submit_time", "duration", "gpus",
                                        "gpu_memory",  "project",  "queue",
                                        "priority",    "gpu_util", NULL};
    static const bool required[] = {true, true, true, false, false, false, false, false};
    enum { C_SUBMIT, C_DUR, C_GPUS, C_MEM, C_PROJECT, C_QUEUE, C_PRIO, C_UTIL };
    struct trace_columns cols;
    int rc = trace_columns_read_header_strict(&cols, f, names, required, "csv", err);
    if (rc != 0)
        return rc;
    t->util_column = cols.index[C_UTIL] >= 0;
    char *fields[TRACE_MAX_FIELDS];
    int n;
    while ((n = trace_columns_next_row(&cols, t, fields, err)) > 0) {
        struct trace_job job = {.line = cols.line};
        long long v;
        const char *s;
        int r = trace_parse_time_ms(fields[cols.index[C_SUBMIT]], &job.submit_ms);
        if (r != 0) {
            trace_drop_row(t, cols.line,
                           r == TRACE_TOO_LARGE ? "submit_time is too large (more than 100 years)"
                                                : "submit_time is not a number of seconds >= 0");
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
        if (trace_parse_int(fields[cols.index[C_GPUS]], 0, 1000000, &v) != 0) {
            trace_drop_row(t, cols.line, "gpus is not a whole number from 0 to 1000000");
            continue;
        }
        job.gpus = (int)v;
        if (cols.index[C_MEM] >= 0 && (s = fields[cols.index[C_MEM]])[0]) {
            if (trace_parse_int(s, 0, INT64_MAX / 2, &v) != 0) {
                trace_drop_row(t, cols.line, "gpu_memory is not a whole number of MiB >= 0");
                continue;
            }
            job.gpu_memory_mib = v;
        }
        if (cols.index[C_PRIO] >= 0 && (s = fields[cols.index[C_PRIO]])[0]) {
            if (trace_parse_int(s, -1000000, 1000000, &v) != 0) {
                trace_drop_row(t, cols.line, "priority is not a whole number from -1000000 to 1000000");
                continue;
            }
            job.priority = (int)v;
        }
        if (cols.index[C_UTIL] >= 0 && (s = fields[cols.index[C_UTIL]])[0]) {
            int64_t milli; /* thousandths of a percent, exactly */
            if (trace_parse_seconds_ms(s, &milli) != 0 || milli > 100000) {
                trace_drop_row(t, cols.line, "gpu_util is not a percentage from 0 to 100");
                continue;
            }
            job.has_util = true;
            job.util_bp = (int32_t)((milli + 5) / 10);
        }
        s = cols.index[C_PROJECT] >= 0 ? fields[cols.index[C_PROJECT]] : "";
        if (strlen(s) >= sizeof job.project) {
            trace_drop_row(t, cols.line, "project is longer than 63 bytes");
            continue;
        }
        snprintf(job.project, sizeof job.project, "%s", s[0] ? s : "default");
        s = cols.index[C_QUEUE] >= 0 ? fields[cols.index[C_QUEUE]] : "";
        if (strlen(s) >= sizeof job.queue) {
            trace_drop_row(t, cols.line, "queue is longer than 63 bytes");
            continue;
        }
        snprintf(job.queue, sizeof job.queue, "%s", s[0] ? s : "default");
        if ((n = trace_columns_push(&cols, t, &job, err)) != 0)
            break;
    }
    trace_columns_release(&cols);
    return n;
}

const struct trace_reader_ops trace_reader_csv = {
    .name = "csv",
    .summary = "tide CSV: submit_time,duration,gpus[,gpu_memory,project,queue,priority,gpu_util] "
               "(seconds; gpu_util in percent)",
    .read = csv_read,
};
