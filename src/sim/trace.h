/*
 * Job traces for the simulator: a reader turns a file in one public format
 * (Philly job table, Microsoft ITP, Alibaba PAI task table, SenseTime
 * Helios cluster log, tide's own CSV) into a list of trace_job sorted by
 * submit time; the synthetic generator makes one from a seed. Each reader
 * is a struct of function pointers in its own file (trace_philly.c, ...),
 * so a new format is a new file.
 *
 * Rows that cannot be used are skipped, never silently: each is counted by
 * reason and handed to the caller's warn callback with its line number.
 */
#ifndef TIDE_SIM_TRACE_H
#define TIDE_SIM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/tide_err.h"

#define TRACE_NAME_MAX 64
#define TRACE_REASONS_MAX 16

/* The latest submit time and the longest duration a trace may give: 100
 * years (of 365.25 days). Rows past it are dropped as too large; no real
 * trace comes near, and it keeps the simulator's sums of virtual times
 * (and GPU-time integrals over them) far from int64 overflow. */
#define TRACE_MAX_YEARS 100 /* the readers' reasons say "100 years" */
#define TRACE_MAX_TIME_MS (TRACE_MAX_YEARS * 36525LL * 86400 * 1000 / 100)

struct trace_job {
    int64_t submit_ms; /* from the start of the trace (the earliest submit is 0) */
    int64_t duration_ms;
    int gpus;
    int64_t gpu_memory_mib; /* 0: any */
    int priority;
    long line; /* line in the source file (0 for synthetic jobs) */
    /* Busy share of the job's GPUs while it runs, from a trace column that
     * has one (tide csv gpu_util, Alibaba gpu_wrk_util): basis points,
     * 0..10000, valid only when has_util. */
    bool has_util;
    int32_t util_bp;
    char project[TRACE_NAME_MAX];
    char queue[TRACE_NAME_MAX];
};

/* Rows dropped for one reason, with the first line that had it. */
struct trace_drop {
    char reason[96];
    long count;
    long first_line;
};

/* Called once per dropped row; ctx is trace.warn_ctx. */
typedef void (*trace_warn_fn)(void *ctx, const char *path, long line, const char *reason);

struct trace {
    struct trace_job *jobs;
    size_t njobs, cap;
    long rows_read; /* data rows seen, header excluded */
    long rows_dropped;
    struct trace_drop drops[TRACE_REASONS_MAX];
    int ndrops; /* distinct reasons; more than TRACE_REASONS_MAX fold into the last */
    int64_t origin_s; /* absolute time of submit_ms 0 when the format has one (Philly), else 0 */
    bool util_column; /* the file had a GPU utilisation column (some rows may leave it empty) */
    trace_warn_fn warn;
    void *warn_ctx;
    const char *path; /* for warnings; not owned */
};

struct trace_reader_ops {
    const char *name;    /* the --format value */
    const char *summary; /* one line for --help */
    /* Reads every row of f into t (appending), dropping bad rows through
     * trace_drop_row. Returns 0, or a negative TIDE_E* code with err set
     * when the file as a whole is unusable (no or wrong header, I/O error,
     * out of memory). */
    int (*read)(FILE *f, struct trace *t, struct tide_err *err);
};

extern const struct trace_reader_ops trace_reader_philly;
extern const struct trace_reader_ops trace_reader_itp;
extern const struct trace_reader_ops trace_reader_csv;
extern const struct trace_reader_ops trace_reader_alibaba;
extern const struct trace_reader_ops trace_reader_helios;

/* The reader for --format name, or NULL. */
const struct trace_reader_ops *trace_reader_by_name(const char *name);
/* "philly, itp, alibaba, helios, csv", for messages. */
const char *trace_reader_names(void);

void trace_init(struct trace *t);
void trace_release(struct trace *t);

/* Opens path and reads it with ops, then sorts the jobs by (submit, line)
 * and shifts submit times so the first is 0. Returns 0 or a TIDE_E* code
 * with err naming the file. A file whose every row was dropped is an error. */
int trace_load(struct trace *t, const struct trace_reader_ops *ops, const char *path,
               struct tide_err *err);

/* Appends a copy of job; TIDE_ENOMEM when out of memory. */
int trace_push(struct trace *t, const struct trace_job *job);

/* Counts a dropped row under reason and tells the warn callback. */
void trace_drop_row(struct trace *t, long line, const char *reason);

/* Sorts by submit time (line breaks ties) and makes the earliest submit 0.
 * Rows submitted more than TRACE_MAX_TIME_MS after the earliest (dates far
 * apart, in formats with absolute times) are dropped as too large. */
void trace_normalise(struct trace *t);

/* Synthetic traces: Poisson arrivals, log-uniform durations and a GPU-count
 * mix, all from one seed, so the same parameters give the same trace. */
struct trace_synth_params {
    long njobs;
    uint64_t seed;
    double arrivals_per_hour;
    int64_t min_duration_s, max_duration_s; /* log-uniform between these */
    /* GPU counts and their weights, e.g. {1,2,4,8} with {70,10,10,10}. */
    int mix_gpus[16];
    int mix_weight[16];
    int nmix;
    int nprojects; /* jobs spread over project-0 .. project-(n-1) */
};

void trace_synth_defaults(struct trace_synth_params *p);

/* Parses a mix like "1:70,2:10,4:10,8:10" into p. TIDE_EINVAL with err. */
int trace_synth_parse_mix(struct trace_synth_params *p, const char *mix, struct tide_err *err);

/* The lowest arrival rate (jobs per hour) at which p->njobs arrivals are
 * expected within TRACE_MAX_TIME_MS: 0 for a single job. */
double trace_synth_min_rate(const struct trace_synth_params *p);

/* Fills t with p->njobs jobs. Returns 0, TIDE_ENOMEM, or TIDE_ETOOBIG when
 * an arrival falls more than TRACE_MAX_TIME_MS after the first (a rate at
 * or near trace_synth_min_rate). */
int trace_synth_generate(struct trace *t, const struct trace_synth_params *p);

/* --- helpers shared by the readers (trace.c) --- */

#define TRACE_MAX_FIELDS 32

/* Splits a CSV line in place at commas (double quotes group a field;
 * no embedded newlines). Strips the line end. Returns the field count, or
 * -1 when there are more than max fields. */
int trace_split_csv(char *line, char **fields, int max);

/* Whole-field number parsers: 0 on success, -1 when s is not such a number
 * (empty, trailing junk, out of range, negative where not allowed). */
int trace_parse_seconds_ms(const char *s, int64_t *out_ms); /* "12", "12.5", >= 0 */
int trace_parse_int(const char *s, long long min, long long max, long long *out);

/* What the time parsers below return besides 0 and -1. */
#define TRACE_TOO_LARGE (-2)    /* a number of seconds over TRACE_MAX_TIME_MS */
#define TRACE_NO_SUCH_DATE (-3) /* a day past its month's end, such as 2017-02-30 */

/* A submit time or duration in seconds, as trace_parse_seconds_ms, that
 * must be at most TRACE_MAX_TIME_MS: 0, -1 when s is not a number of
 * seconds >= 0, TRACE_TOO_LARGE when it is a larger one. */
int trace_parse_time_ms(const char *s, int64_t *out_ms);
/* "2017-10-09 07:01:55" (no zone, read as UTC) → seconds since the epoch:
 * 0, -1 when s is not in that form, TRACE_NO_SUCH_DATE when the date does
 * not exist (2017-02-30, 2017-04-31, 2100-02-29). A leap second (:60) is
 * the next minute's first. */
int trace_parse_datetime_s(const char *s, int64_t *out_s);

/* Reads one line of any length into *buf (grown as needed). Returns the
 * length, 0 at end of file, or -1 on error. */
long trace_getline(char **buf, size_t *cap, FILE *f);

#endif
