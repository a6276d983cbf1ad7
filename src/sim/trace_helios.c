/*
 * SenseTime Helios (S-Lab/HeliosData, cluster_log.csv, one file per
 * cluster: Earth, Saturn, Uranus, Venus): job_id, user, vc, jobname,
 * gpu_num, cpu_num, node_num, state, submit_time, start_time, end_time,
 * duration, queue. Times are "YYYY-MM-DD HH:MM:SS" (no zone); duration
 * (run time) and queue (queueing delay, start - submit) are seconds.
 * Columns are found by header name.
 *
 * Used: submit_time (arrival), duration (else end_time - start_time),
 * gpu_num, vc (as the project). Every state is kept (a FAILED or
 * CANCELLED job that ran held its GPUs); a job that never ran has no
 * positive duration and is dropped. The trace's own queueing delay is not
 * used: the simulator makes its own.
 */
#include <string.h>

#include "sim/trace.h"
#include "sim/trace_columns.h"

static int helios_read(FILE *f, struct trace *t, struct tide_err *err)
{
    static const char *const names[] = {"job_id",   "vc",          "gpu_num",
                                        "state",    "submit_time", "start_time",
                                        "end_time", "duration",    NULL};
    static const bool required[] = {false, false, true, false, true, false, false, false};
    enum { C_ID, C_VC, C_GPUS, C_STATE, C_SUBMIT, C_START, C_END, C_DUR };
    struct trace_columns cols;
    int rc = trace_columns_read_header(&cols, f, names, required, "helios", err);
    if (rc != 0)
        return rc;
    if (cols.index[C_DUR] < 0 && (cols.index[C_START] < 0 || cols.index[C_END] < 0)) {
        trace_columns_release(&cols);
        return tide_err_set(err, TIDE_EINVAL, "duration",
                            "helios trace: header has neither 'duration' nor 'start_time' and "
                            "'end_time' (line 1)");
    }
    char *fields[TRACE_MAX_FIELDS];
    int n;
    while ((n = trace_columns_next_row(&cols, t, fields, err)) > 0) {
        struct trace_job job = {.line = cols.line};
        int64_t submit_s, start_s, end_s;
        long long gpus;
        int d = trace_parse_datetime_s(fields[cols.index[C_SUBMIT]], &submit_s);
        if (d != 0) {
            trace_drop_row(t, cols.line,
                           d == TRACE_NO_SUCH_DATE ? "submit_time: date does not exist"
                                                   : "submit_time is not YYYY-MM-DD HH:MM:SS");
            continue;
        }
        const char *dur = cols.index[C_DUR] >= 0 ? fields[cols.index[C_DUR]] : "";
        if (dur[0]) {
            int r = trace_parse_time_ms(dur, &job.duration_ms);
            if (r != 0) {
                trace_drop_row(t, cols.line,
                               r == TRACE_TOO_LARGE ? "duration is too large (more than 100 years)"
                                                    : "duration is not a number of seconds >= 0");
                continue;
            }
        } else if (cols.index[C_START] >= 0 && cols.index[C_END] >= 0 &&
                   fields[cols.index[C_START]][0] && fields[cols.index[C_END]][0]) {
            int ds = trace_parse_datetime_s(fields[cols.index[C_START]], &start_s);
            int de = trace_parse_datetime_s(fields[cols.index[C_END]], &end_s);
            if (ds == TRACE_NO_SUCH_DATE || de == TRACE_NO_SUCH_DATE) {
                trace_drop_row(t, cols.line, "start_time or end_time: date does not exist");
                continue;
            }
            if (ds != 0 || de != 0) {
                trace_drop_row(t, cols.line, "start_time or end_time is not YYYY-MM-DD HH:MM:SS");
                continue;
            }
            job.duration_ms = (end_s - start_s) * 1000;
        } else {
            trace_drop_row(t, cols.line, "no duration and no start_time/end_time (never ran)");
            continue;
        }
        if (job.duration_ms <= 0) {
            trace_drop_row(t, cols.line, "duration is not positive (never ran)");
            continue;
        }
        if (job.duration_ms > TRACE_MAX_TIME_MS) { /* end_time - start_time */
            trace_drop_row(t, cols.line, "duration is too large (more than 100 years)");
            continue;
        }
        if (trace_parse_int(fields[cols.index[C_GPUS]], 0, 1000000, &gpus) != 0) {
            trace_drop_row(t, cols.line, "gpu_num is not a whole number from 0 to 1000000");
            continue;
        }
        job.submit_ms = submit_s * 1000;
        job.gpus = (int)gpus;
        const char *vc = cols.index[C_VC] >= 0 ? fields[cols.index[C_VC]] : "";
        if (strlen(vc) >= sizeof job.project) {
            trace_drop_row(t, cols.line, "vc is longer than 63 bytes");
            continue;
        }
        snprintf(job.project, sizeof job.project, "%s", vc[0] ? vc : "default");
        snprintf(job.queue, sizeof job.queue, "default");
        if ((n = trace_columns_push(&cols, t, &job, err)) != 0)
            break;
    }
    trace_columns_release(&cols);
    return n;
}

const struct trace_reader_ops trace_reader_helios = {
    .name = "helios",
    .summary =
        "SenseTime Helios cluster_log.csv: submit_time,duration,gpu_num,vc (YYYY-MM-DD HH:MM:SS)",
    .read = helios_read,
};
