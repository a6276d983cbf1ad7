/*
 * Alibaba PAI GPU cluster trace 2020 (alibaba/clusterdata,
 * cluster-trace-gpu-v2020), the task table pai_task_table.csv: job_name,
 * task_name, inst_num, status, start_time, end_time, plan_cpu, plan_mem,
 * plan_gpu, gpu_type. The public release has no header line; a file whose
 * first field is "job_name" is read by header names instead.
 *
 * One task row is one simulated job. Used: start_time (s; the arrival, as
 * the task table has no submit time), end_time - start_time (duration),
 * plan_gpu (percent of one GPU per instance, 100 = one GPU) and inst_num:
 * each instance gets whole GPUs, ceil(plan_gpu / 100), so the task asks
 * for inst_num * ceil(plan_gpu / 100) GPUs (a 50 % instance takes a whole
 * GPU; 2 instances of 50 % are 2 GPUs). A task with no GPU (plan_gpu empty
 * or 0: parameter servers, CPU jobs) is dropped, as is one without both
 * times (Running, Waiting) or with end_time <= start_time. status,
 * plan_cpu, plan_mem and gpu_type are not used (a trace_job has no CPU,
 * host memory or GPU model request); every status with both times is kept.
 *
 * A file with a header may also have gpu_wrk_util: the task's instances'
 * mean of pai_sensor_table's gpu_wrk_util (GPUs used in percent, 50 = half
 * a GPU), for a task table joined with the sensor table. The busy share of
 * the job's GPUs is then gpu_wrk_util / (100 x GPUs per instance), at most
 * 1. The public task table has no such column (header-less files never do).
 */
#include <string.h>

#include "sim/trace.h"
#include "sim/trace_columns.h"

#define ALIBABA_MAX_GPUS 1000000

static int alibaba_read(FILE *f, struct trace *t, struct tide_err *err)
{
    static const char *const names[] = {"job_name",   "task_name", "inst_num",     "status",
                                        "start_time", "end_time",  "plan_cpu",     "plan_mem",
                                        "plan_gpu",   "gpu_type",  "gpu_wrk_util", NULL};
    static const bool required[] = {true,  false, true, false, true, true,
                                    false, false, true, false, false};
    enum { C_JOB, C_TASK, C_INST, C_STATUS, C_START, C_END, C_CPU, C_MEM, C_GPU, C_TYPE, C_UTIL };
    struct trace_columns cols;
    int rc = trace_columns_read_header_or_positional(&cols, f, names, required, "alibaba", err);
    if (rc != 0)
        return rc;
    if (!cols.has_header) { /* the published layout: the ten columns, no utilisation */
        cols.index[C_UTIL] = -1;
        cols.nfields = C_UTIL;
    }
    t->util_column = cols.index[C_UTIL] >= 0;
    char *fields[TRACE_MAX_FIELDS];
    int n;
    while ((n = trace_columns_next_row(&cols, t, fields, err)) > 0) {
        struct trace_job job = {.line = cols.line};
        int64_t start_ms, end_ms, plan_milli;
        long long inst;
        const char *start = fields[cols.index[C_START]], *end = fields[cols.index[C_END]];
        if (!start[0] || !end[0]) {
            trace_drop_row(t, cols.line,
                           "start_time or end_time is empty (task never ran or did not end)");
            continue;
        }
        int rs = trace_parse_time_ms(start, &start_ms), re = trace_parse_time_ms(end, &end_ms);
        if (rs == TRACE_TOO_LARGE || re == TRACE_TOO_LARGE) {
            trace_drop_row(t, cols.line,
                           "start_time or end_time is too large (more than 100 years)");
            continue;
        }
        if (rs != 0 || re != 0) {
            trace_drop_row(t, cols.line, "start_time or end_time is not a number of seconds >= 0");
            continue;
        }
        if (end_ms <= start_ms) {
            trace_drop_row(t, cols.line, "end_time is not after start_time");
            continue;
        }
        if (trace_parse_int(fields[cols.index[C_INST]], 1, ALIBABA_MAX_GPUS, &inst) != 0) {
            trace_drop_row(t, cols.line, "inst_num is not a whole number from 1 to 1000000");
            continue;
        }
        /* plan_gpu in thousandths of a percent, exactly (trace_parse_seconds_ms
         * is a fixed-point decimal parser). */
        const char *plan = fields[cols.index[C_GPU]];
        if (!plan[0]) {
            trace_drop_row(t, cols.line, "no GPU (plan_gpu empty): CPU-only task");
            continue;
        }
        if (trace_parse_seconds_ms(plan, &plan_milli) != 0 ||
            plan_milli > (int64_t)ALIBABA_MAX_GPUS * 100000) {
            trace_drop_row(t, cols.line, "plan_gpu is not a percentage of a GPU >= 0");
            continue;
        }
        if (plan_milli == 0) {
            trace_drop_row(t, cols.line, "no GPU (plan_gpu 0): CPU-only task");
            continue;
        }
        int64_t per_inst = (plan_milli + 100000 - 1) / 100000;
        if (per_inst * inst > ALIBABA_MAX_GPUS) {
            trace_drop_row(t, cols.line, "inst_num x plan_gpu is more than 1000000 GPUs");
            continue;
        }
        const char *util = cols.index[C_UTIL] >= 0 ? fields[cols.index[C_UTIL]] : "";
        if (util[0]) {
            int64_t util_milli; /* thousandths of a percent of one GPU */
            if (trace_parse_seconds_ms(util, &util_milli) != 0) {
                trace_drop_row(t, cols.line, "gpu_wrk_util is not a percentage of a GPU >= 0");
                continue;
            }
            int64_t bp = (util_milli / per_inst + 5) / 10; /* of the instance's whole GPUs */
            job.has_util = true;
            job.util_bp = (int32_t)(bp < 10000 ? bp : 10000);
        }
        job.submit_ms = start_ms;
        job.duration_ms = end_ms - start_ms;
        job.gpus = (int)(per_inst * inst);
        snprintf(job.project, sizeof job.project, "default");
        snprintf(job.queue, sizeof job.queue, "default");
        if ((n = trace_columns_push(&cols, t, &job, err)) != 0)
            break;
    }
    trace_columns_release(&cols);
    return n;
}

const struct trace_reader_ops trace_reader_alibaba = {
    .name = "alibaba",
    .summary = "Alibaba PAI 2020 pai_task_table.csv (header optional): GPUs = inst_num x "
               "ceil(plan_gpu/100)",
    .read = alibaba_read,
};
