/* Trace readers (src/sim/trace*.c) on small fixtures in the real formats,
 * bad rows included, and on the real traces when ../shared has them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/trace.h"

#define DATA TIDE_TEST_DATA_DIR "/sim/"

struct warnings {
    int n;
    long lines[16];
    char reasons[16][96];
};

static void record(void *ctx, const char *path, long line, const char *reason)
{
    (void)path;
    struct warnings *w = ctx;
    if (w->n < 16) {
        w->lines[w->n] = line;
        snprintf(w->reasons[w->n], sizeof w->reasons[0], "%s", reason);
    }
    w->n++;
}

static int load(struct trace *t, struct warnings *w, const char *format, const char *path)
{
    trace_init(t);
    t->warn = record;
    t->warn_ctx = w;
    struct tide_err err = {0};
    return trace_load(t, trace_reader_by_name(format), path, &err);
}

/* Reads text as a file of format, as trace_load would (without its
 * "no usable rows" check): the reader's return code. */
static int read_text(struct trace *t, struct warnings *w, const char *format, const char *text)
{
    trace_init(t);
    t->warn = record;
    t->warn_ctx = w;
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(f);
    struct tide_err err = {0};
    int rc = trace_reader_by_name(format)->read(f, t, &err);
    fclose(f);
    if (rc == 0)
        trace_normalise(t);
    return rc;
}

static void test_philly_reader_keeps_good_rows_and_names_bad_lines(void **state)
{
    (void)state;
    struct trace t;
    struct warnings w = {0};
    assert_int_equal(load(&t, &w, "philly", DATA "philly_small.csv"), 0);
    assert_int_equal(t.rows_read, 14);
    assert_int_equal(t.njobs, 10);
    assert_int_equal(t.rows_dropped, 4);
    assert_int_equal(w.n, 4);
    long expect[] = {10, 11, 12, 13};
    for (int i = 0; i < 4; i++)
        assert_int_equal(w.lines[i], expect[i]);
    /* Sorted by submit: the 2017-09-29 row (line 4) comes first at 0. */
    assert_int_equal(t.jobs[0].line, 4);
    assert_int_equal(t.jobs[0].submit_ms, 0);
    assert_int_equal(t.jobs[0].duration_ms, 860662000);
    assert_string_equal(t.jobs[0].project, "6c71a0");
    /* 2017-10-06 14:37:26 is 7 days 6:38:54 after 2017-09-29 07:58:32. */
    assert_int_equal(t.jobs[1].submit_ms, (7 * 86400 + 6 * 3600 + 38 * 60 + 54) * 1000LL);
    assert_int_equal(t.jobs[1].gpus, 32);
    trace_release(&t);
}

static void test_itp_reader_drops_bad_numbers(void **state)
{
    (void)state;
    struct trace t;
    struct warnings w = {0};
    assert_int_equal(load(&t, &w, "itp", DATA "itp_small.csv"), 0);
    assert_int_equal(t.rows_read, 8);
    assert_int_equal(t.njobs, 5);
    assert_int_equal(t.rows_dropped, 3);
    assert_int_equal(t.ndrops, 3);
    assert_int_equal(t.drops[0].first_line, 7);
    assert_int_equal(t.jobs[0].gpus, 64);
    assert_int_equal(t.jobs[0].duration_ms, 2429000);
    assert_int_equal(t.jobs[1].submit_ms, (2000581 - 1932025) * 1000LL);
    trace_release(&t);
}

static void test_tide_csv_reads_optional_columns_and_decimals(void **state)
{
    (void)state;
    struct trace t;
    struct warnings w = {0};
    assert_int_equal(load(&t, &w, "csv", DATA "tide_bad.csv"), 0);
    assert_int_equal(t.njobs, 2);
    assert_int_equal(t.rows_dropped, 4);
    assert_int_equal(t.jobs[1].submit_ms, 10500);
    assert_int_equal(t.jobs[1].duration_ms, 90250);
    assert_int_equal(t.jobs[1].gpu_memory_mib, 16384);
    assert_int_equal(t.jobs[1].priority, 5);
    assert_string_equal(t.jobs[1].queue, "batch");
    long expect[] = {4, 5, 6, 7};
    for (int i = 0; i < 4; i++)
        assert_int_equal(w.lines[i], expect[i]);
    trace_release(&t);
}

static void test_tide_csv_refuses_unknown_column(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct tide_err err = {0};
    assert_int_equal(trace_load(&t, &trace_reader_csv, DATA "tide_unknown_col.csv", &err),
                     TIDE_EINVAL);
    assert_string_equal(err.field, "gpu_mem");
    trace_release(&t);
}

/* gpu_util: percent of the job's GPUs busy, kept in basis points; empty is
 * unknown; over 100 or not a number drops the row. */
static void test_tide_csv_reads_gpu_util(void **state)
{
    (void)state;
    struct trace t;
    struct warnings w = {0};
    assert_int_equal(load(&t, &w, "csv", DATA "tide_util.csv"), 0);
    assert_true(t.util_column);
    assert_int_equal(t.njobs, 4);
    assert_int_equal(t.rows_dropped, 2);
    assert_true(t.jobs[0].has_util);
    assert_int_equal(t.jobs[0].util_bp, 5000);
    assert_int_equal(t.jobs[1].util_bp, 10000);
    assert_int_equal(t.jobs[2].util_bp, 1250);
    assert_false(t.jobs[3].has_util);
    assert_int_equal(w.lines[0], 6);
    assert_int_equal(w.lines[1], 7);
    trace_release(&t);
    /* A file without the column has no utilisation at all. */
    assert_int_equal(load(&t, &w, "csv", DATA "tiny.csv"), 0);
    assert_false(t.util_column);
    assert_false(t.jobs[0].has_util);
    trace_release(&t);
}

/* A column the format reads, given twice in the header, refuses the file
 * and names the column: it silently meant the last one. */
static void test_a_header_with_a_column_twice_is_refused(void **state)
{
    (void)state;
    static const struct {
        const char *format, *text, *column;
    } cases[] = {
        {"csv", "submit_time,duration,gpus,duration\n0,60,1,3600\n", "duration"},
        {"philly", "timestamp,duration,num_gpus,timestamp\n2017-10-09 07:01:55,60,1,x\n",
         "timestamp"},
        {"itp", "job_id,submission_time,duration,num_gpu,num_gpu\n1,0,60,1,8\n", "num_gpu"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct trace t;
        trace_init(&t);
        FILE *f = fmemopen((void *)cases[i].text, strlen(cases[i].text), "r");
        assert_non_null(f);
        struct tide_err err = {0};
        assert_int_equal(trace_reader_by_name(cases[i].format)->read(f, &t, &err), TIDE_EINVAL);
        fclose(f);
        assert_string_equal(err.field, cases[i].column);
        assert_non_null(strstr(err.message, "appears twice"));
        assert_int_equal(t.njobs, 0);
        trace_release(&t);
    }
}

static void test_a_file_with_no_usable_rows_is_an_error(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct tide_err err = {0};
    /* The ITP fixture read as Philly has the wrong header. */
    assert_int_equal(trace_load(&t, &trace_reader_philly, DATA "itp_small.csv", &err), TIDE_EINVAL);
    assert_non_null(strstr(err.message, "timestamp"));
    trace_release(&t);
}

static void test_seconds_parse_exactly(void **state)
{
    (void)state;
    int64_t ms;
    assert_int_equal(trace_parse_seconds_ms("66.0", &ms), 0);
    assert_int_equal(ms, 66000);
    assert_int_equal(trace_parse_seconds_ms("0.0015", &ms), 0);
    assert_int_equal(ms, 2);
    assert_int_equal(trace_parse_seconds_ms("1e3", &ms), -1);
    assert_int_equal(trace_parse_seconds_ms("", &ms), -1);
    assert_int_equal(trace_parse_seconds_ms("-1", &ms), -1);
}

static void test_datetimes_are_read_as_utc(void **state)
{
    (void)state;
    int64_t s;
    assert_int_equal(trace_parse_datetime_s("1970-01-01 00:00:00", &s), 0);
    assert_int_equal(s, 0);
    assert_int_equal(trace_parse_datetime_s("2017-10-03 08:27:51", &s), 0);
    assert_int_equal(s, 1507019271);
    assert_int_equal(trace_parse_datetime_s("2000-02-29 12:00:00", &s), 0); /* leap day */
    assert_int_equal(s, 951825600);
    assert_int_equal(trace_parse_datetime_s("2100-03-01 00:00:00", &s), 0); /* 2100: no leap */
    assert_int_equal(s, 4107542400);
    /* -1 is a real second, not an error. */
    assert_int_equal(trace_parse_datetime_s("1969-12-31 23:59:59", &s), 0);
    assert_int_equal(s, -1);
    /* Daylight saving does not exist in UTC, whatever TZ says. */
    assert_int_equal(trace_parse_datetime_s("2020-03-08 02:30:00", &s), 0);
    assert_int_equal(s, 1583634600);
    assert_int_equal(trace_parse_datetime_s("2017-13-01 00:00:00", &s), -1);
    assert_int_equal(trace_parse_datetime_s("2017-10-03 08:27:51Z", &s), -1);
    assert_int_equal(trace_parse_datetime_s("2017-10-03", &s), -1);
}

/* Submit times and durations past 100 years are dropped as too large, not
 * read (an overflowing sum of them crashed the report) and not called
 * "not a number" when they are one. */
static void test_times_over_100_years_are_dropped_as_too_large(void **state)
{
    (void)state;
    struct trace t;
    struct warnings w = {0};
    assert_int_equal(read_text(&t, &w, "itp",
                               "job_id,submission_time,duration,num_gpu\n"
                               "1,0,10,1\n"
                               "2,10000000,9223372036854000,1\n" /* 292 million years */
                               "3,10,9223372036854775,1\n"       /* past int64 ms */
                               "4,3155760001,10,1\n"             /* 100 years and 1 s */
                               "5,3155760000,3155760000,1\n"),   /* exactly 100 years */
                     0);
    assert_int_equal(t.njobs, 2);
    assert_int_equal(t.jobs[1].line, 6);
    assert_int_equal(t.jobs[1].duration_ms, TRACE_MAX_TIME_MS);
    assert_int_equal(w.n, 3);
    assert_string_equal(w.reasons[0], "duration is too large (more than 100 years)");
    assert_string_equal(w.reasons[1], "duration is too large (more than 100 years)");
    assert_string_equal(w.reasons[2], "submission_time is too large (more than 100 years)");
    trace_release(&t);
    /* tide's csv, the same bound. */
    w.n = 0;
    assert_int_equal(read_text(&t, &w, "csv",
                               "submit_time,duration,gpus\n0,10,1\n0,9000000000000000,1\n"
                               "99999999999999999999,1,1\n"),
                     0);
    assert_int_equal(t.njobs, 1);
    assert_int_equal(w.n, 2);
    assert_string_equal(w.reasons[0], "duration is too large (more than 100 years)");
    assert_string_equal(w.reasons[1], "submit_time is too large (more than 100 years)");
    trace_release(&t);
}

/* Dates (Philly, Helios) are absolute: rows outside the 100 years that
 * hold the most rows are dropped, at either end. */
static void test_dates_outside_the_100_years_of_most_rows_are_dropped(void **state)
{
    (void)state;
    struct trace t;
    struct warnings w = {0};
    assert_int_equal(read_text(&t, &w, "philly",
                               "timestamp,duration,num_gpus,gpu_time,cluster\n"
                               "2017-10-01 00:00:00,60,1,60,a\n"
                               "9017-10-01 00:00:00,60,1,60,a\n"
                               "2117-10-01 00:00:00,60,1,60,a\n"),
                     0);
    assert_int_equal(t.njobs, 2);
    assert_int_equal(t.jobs[1].line, 4);
    assert_int_equal(w.n, 1);
    assert_int_equal(w.lines[0], 3);
    assert_string_equal(w.reasons[0],
                        "submit time is more than 100 years from the trace's other rows");
    assert_int_equal(t.rows_dropped, 1);
    trace_release(&t);
    /* a mistyped early date drops itself, not the three real rows after it */
    struct warnings w2 = {0};
    assert_int_equal(read_text(&t, &w2, "philly",
                               "timestamp,duration,num_gpus,gpu_time,cluster\n"
                               "1907-10-03 00:00:00,60,1,60,a\n"
                               "2017-10-03 00:00:00,60,1,60,a\n"
                               "2017-10-03 00:01:00,60,1,60,a\n"
                               "2017-10-03 00:02:00,60,1,60,a\n"),
                     0);
    assert_int_equal(t.njobs, 3);
    assert_int_equal(t.jobs[0].line, 3);
    assert_int_equal(t.jobs[2].submit_ms, 120000);
    assert_int_equal(w2.n, 1);
    assert_int_equal(w2.lines[0], 2);
    trace_release(&t);
}

/* A day past its month's end does not exist: refused, not moved into the
 * next month as timegm would (2017-02-30 became 2017-03-02). A leap
 * second is still the next minute's first. */
static void test_dates_that_do_not_exist_are_refused(void **state)
{
    (void)state;
    int64_t s;
    assert_int_equal(trace_parse_datetime_s("2017-02-30 07:02:03", &s), TRACE_NO_SUCH_DATE);
    assert_int_equal(trace_parse_datetime_s("2017-04-31 00:00:00", &s), TRACE_NO_SUCH_DATE);
    assert_int_equal(trace_parse_datetime_s("2017-02-29 00:00:00", &s), TRACE_NO_SUCH_DATE);
    assert_int_equal(trace_parse_datetime_s("2100-02-29 00:00:00", &s), TRACE_NO_SUCH_DATE);
    assert_int_equal(trace_parse_datetime_s("2016-02-29 00:00:00", &s), 0);
    assert_int_equal(trace_parse_datetime_s("2016-12-31 23:59:60", &s), 0);
    assert_int_equal(s, 1483228800); /* 2017-01-01 00:00:00 */
}

/* The readers drop such a row with that reason; it no longer becomes the
 * trace's origin (a Philly row of 2017-02-30 put the real October rows
 * 221 days after it). */
static void test_readers_drop_rows_whose_date_does_not_exist(void **state)
{
    (void)state;
    struct trace t;
    struct warnings w = {0};
    assert_int_equal(read_text(&t, &w, "philly",
                               "timestamp,duration,num_gpus,gpu_time,cluster\n"
                               "2017-10-09 07:01:55,66.0,1,66.0,vc1\n"
                               "2017-02-30 07:02:03,100,1,0,vc2\n"
                               "2017-10-09 07:02:55,60,1,60,vc1\n"),
                     0);
    assert_int_equal(t.njobs, 2);
    assert_int_equal(t.jobs[0].line, 2);
    assert_int_equal(t.jobs[1].submit_ms, 60000);
    assert_int_equal(w.n, 1);
    assert_int_equal(w.lines[0], 3);
    assert_string_equal(w.reasons[0], "timestamp: date does not exist");
    trace_release(&t);
    w.n = 0;
    assert_int_equal(read_text(&t, &w, "helios",
                               "job_id,vc,gpu_num,submit_time,start_time,end_time,duration\n"
                               "1,vcA,1,2020-06-30 00:00:00,,,60\n"
                               "2,vcA,1,2020-06-31 00:00:00,,,60\n"
                               "3,vcA,1,2020-06-30 00:00:00,2020-06-30 00:00:10,"
                               "2020-06-31 00:00:10,\n"),
                     0);
    assert_int_equal(t.njobs, 1);
    assert_int_equal(w.n, 2);
    assert_string_equal(w.reasons[0], "submit_time: date does not exist");
    assert_string_equal(w.reasons[1], "start_time or end_time: date does not exist");
    trace_release(&t);
}

/* A Philly cluster (the project) too long for a project name drops the
 * row, as csv and helios do, rather than being cut to 63 bytes. */
static void test_philly_cluster_too_long_drops_the_row(void **state)
{
    (void)state;
    struct trace t;
    struct warnings w = {0};
    char text[512];
    snprintf(text, sizeof text,
             "timestamp,duration,num_gpus,gpu_time,cluster\n"
             "2017-10-09 07:01:55,60,1,60,%063d\n"  /* 63 bytes: kept */
             "2017-10-09 07:01:56,60,1,60,%064d\n", /* 64: dropped */
             0, 0);
    assert_int_equal(read_text(&t, &w, "philly", text), 0);
    assert_int_equal(t.njobs, 1);
    assert_int_equal(strlen(t.jobs[0].project), 63);
    assert_int_equal(w.n, 1);
    assert_int_equal(w.lines[0], 3);
    assert_string_equal(w.reasons[0], "cluster is longer than 63 bytes");
    trace_release(&t);
}

static void test_synthetic_trace_is_the_same_for_a_seed(void **state)
{
    (void)state;
    struct trace_synth_params p;
    trace_synth_defaults(&p);
    p.njobs = 500;
    p.seed = 42;
    p.arrivals_per_hour = 100;
    struct trace a, b;
    trace_init(&a);
    trace_init(&b);
    assert_int_equal(trace_synth_generate(&a, &p), 0);
    assert_int_equal(trace_synth_generate(&b, &p), 0);
    assert_int_equal(a.njobs, 500);
    assert_memory_equal(a.jobs, b.jobs, 500 * sizeof *a.jobs);
    for (size_t i = 1; i < a.njobs; i++)
        assert_true(a.jobs[i].submit_ms >= a.jobs[i - 1].submit_ms);
    p.seed = 43;
    trace_release(&b);
    trace_init(&b);
    assert_int_equal(trace_synth_generate(&b, &p), 0);
    assert_true(memcmp(a.jobs, b.jobs, 500 * sizeof *a.jobs) != 0);
    trace_release(&a);
    trace_release(&b);
}

/* Arrivals that would pass 100 years are refused, not converted from a
 * double too large for int64 (at 1e-15 per hour the second job came at
 * about 1e24 ms). One job per 100 years is the lowest rate that fits. */
static void test_synthetic_arrivals_past_100_years_are_refused(void **state)
{
    (void)state;
    struct trace_synth_params p;
    trace_synth_defaults(&p);
    p.njobs = 3;
    p.arrivals_per_hour = 1e-15;
    struct trace t;
    trace_init(&t);
    assert_int_equal(trace_synth_generate(&t, &p), TIDE_ETOOBIG);
    trace_release(&t);
    assert_true(trace_synth_min_rate(&p) == 2 / (TRACE_MAX_TIME_MS / 3600000.0));
    p.njobs = 1;
    assert_true(trace_synth_min_rate(&p) == 0);
    trace_init(&t);
    assert_int_equal(trace_synth_generate(&t, &p), 0); /* one job arrives at 0 */
    assert_int_equal(t.jobs[0].submit_ms, 0);
    trace_release(&t);
}

static void test_size_mix_rejects_garbage(void **state)
{
    (void)state;
    struct trace_synth_params p;
    trace_synth_defaults(&p);
    struct tide_err err = {0};
    assert_int_equal(trace_synth_parse_mix(&p, "1:50,8:50", &err), 0);
    assert_int_equal(p.nmix, 2);
    assert_int_equal(p.mix_gpus[1], 8);
    assert_int_equal(trace_synth_parse_mix(&p, "1:50,8", &err), TIDE_EINVAL);
    assert_int_equal(trace_synth_parse_mix(&p, "1:0", &err), TIDE_EINVAL);
}

/* The real traces, when the shared data directory is there. */
static void test_real_philly_trace_reads_every_row(void **state)
{
    (void)state;
    const char *path = TIDE_SHARED_TRACES "/philly-pollux/philly.csv";
    if (access(path, R_OK) != 0) {
        print_message("skipped: %s not present (shared traces are not in the repo)\n", path);
        skip();
    }
    struct trace t;
    struct warnings w = {0};
    assert_int_equal(load(&t, &w, "philly", path), 0);
    assert_int_equal(t.rows_read, 82247);
    assert_int_equal(t.njobs + (size_t)t.rows_dropped, 82247);
    assert_int_equal(t.rows_dropped, 0);
    trace_release(&t);
}

static void test_real_itp_traces_read(void **state)
{
    (void)state;
    const char *path = TIDE_SHARED_TRACES "/microsoft-itp/cluster01.csv";
    if (access(path, R_OK) != 0) {
        print_message("skipped: %s not present\n", path);
        skip();
    }
    struct trace t;
    struct warnings w = {0};
    assert_int_equal(load(&t, &w, "itp", path), 0);
    assert_int_equal(t.rows_read, 1595);
    assert_int_equal(t.njobs, 1595);
    trace_release(&t);
}

/* Alibaba PAI 2020 task table as released: no header, documented order. */
static void test_alibaba_reader_reads_headerless_task_table(void **state)
{
    (void)state;
    struct trace t;
    struct warnings w = {0};
    assert_int_equal(load(&t, &w, "alibaba", DATA "alibaba_task_small.csv"), 0);
    assert_int_equal(t.rows_read, 11);
    assert_int_equal(t.njobs, 4);
    assert_int_equal(t.rows_dropped, 7);
    long expect[] = {2, 5, 6, 7, 8, 9, 11};
    assert_int_equal(w.n, 7);
    for (int i = 0; i < 7; i++)
        assert_int_equal(w.lines[i], expect[i]);
    /* plan_gpu empty (line 2) and plan_gpu 0 (line 9) are two reasons. */
    assert_int_equal(t.ndrops, 7);
    assert_int_equal(t.drops[0].first_line, 2);
    assert_non_null(strstr(t.drops[0].reason, "CPU-only"));
    /* Sorted by start_time: line 3 (250.5 s) is 0; 1 instance x 50 % = 1 GPU. */
    assert_int_equal(t.jobs[0].line, 3);
    assert_int_equal(t.jobs[0].submit_ms, 0);
    assert_int_equal(t.jobs[0].duration_ms, 60000);
    assert_int_equal(t.jobs[0].gpus, 1);
    /* 2 instances x 100 % = 2 GPUs, 749.5 s later, 3,600 s long. */
    assert_int_equal(t.jobs[1].line, 1);
    assert_int_equal(t.jobs[1].submit_ms, 749500);
    assert_int_equal(t.jobs[1].duration_ms, 3600000);
    assert_int_equal(t.jobs[1].gpus, 2);
    /* 4 instances x 200 % = 8 GPUs. */
    assert_int_equal(t.jobs[2].gpus, 8);
    assert_int_equal(t.jobs[2].duration_ms, 7200000);
    /* 3 instances x 25 %: each instance takes a whole GPU, 3 GPUs. */
    assert_int_equal(t.jobs[3].gpus, 3);
    assert_int_equal(t.jobs[3].submit_ms, 6749500);
    assert_string_equal(t.jobs[3].project, "default");
    assert_int_equal(t.origin_s, 250);
    trace_release(&t);
}

/* The same table with a header line, columns found by name in any order. */
static void test_alibaba_reader_accepts_a_header(void **state)
{
    (void)state;
    struct trace t;
    struct warnings w = {0};
    assert_int_equal(load(&t, &w, "alibaba", DATA "alibaba_task_header.csv"), 0);
    assert_int_equal(t.rows_read, 2);
    assert_int_equal(t.njobs, 2);
    assert_int_equal(w.n, 0);
    assert_int_equal(t.jobs[0].line, 3); /* line 1 is the header */
    assert_int_equal(t.jobs[0].gpus, 2); /* 150 % -> 2 whole GPUs */
    assert_int_equal(t.jobs[1].gpus, 8);
    assert_int_equal(t.jobs[1].submit_ms, 50000);
    assert_int_equal(t.jobs[1].duration_ms, 600000);
    trace_release(&t);
}

/* A task table joined with the sensor table: gpu_wrk_util is percent of
 * one GPU per instance, so the busy share is util / (100 x GPUs per
 * instance), at most 1. The header-less public layout has no such column. */
static void test_alibaba_reader_reads_gpu_wrk_util(void **state)
{
    (void)state;
    struct trace t;
    struct warnings w = {0};
    assert_int_equal(load(&t, &w, "alibaba", DATA "alibaba_task_util.csv"), 0);
    assert_true(t.util_column);
    assert_int_equal(t.njobs, 4);
    assert_int_equal(t.rows_dropped, 1);       /* "lots" */
    assert_int_equal(t.jobs[0].gpus, 2);       /* 2 instances of 50 %: a whole GPU each */
    assert_int_equal(t.jobs[0].util_bp, 1606); /* 16.0625 % of each instance's GPU */
    assert_int_equal(t.jobs[1].gpus, 2);
    assert_int_equal(t.jobs[1].util_bp, 7500); /* 150 % of a 2-GPU instance */
    assert_false(t.jobs[2].has_util);
    assert_int_equal(t.jobs[3].util_bp, 10000); /* 250 % of one GPU: capped */
    trace_release(&t);
    assert_int_equal(load(&t, &w, "alibaba", DATA "alibaba_task_small.csv"), 0);
    assert_false(t.util_column);
    trace_release(&t);
}

static void test_helios_reader_keeps_ran_jobs_and_names_bad_lines(void **state)
{
    (void)state;
    struct trace t;
    struct warnings w = {0};
    assert_int_equal(load(&t, &w, "helios", DATA "helios_small.csv"), 0);
    assert_int_equal(t.rows_read, 10);
    assert_int_equal(t.njobs, 5);
    assert_int_equal(t.rows_dropped, 5);
    long expect[] = {5, 6, 7, 10, 11};
    assert_int_equal(w.n, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(w.lines[i], expect[i]);
    /* 2020-03-31 23:59:50 UTC is the origin; that FAILED job is kept. */
    assert_int_equal(t.origin_s, 1585699190);
    assert_int_equal(t.jobs[0].line, 3);
    assert_int_equal(t.jobs[0].submit_ms, 0);
    assert_int_equal(t.jobs[0].duration_ms, 45000);
    assert_string_equal(t.jobs[0].project, "vcB");
    assert_int_equal(t.jobs[1].submit_ms, 20000);
    assert_int_equal(t.jobs[1].gpus, 8);
    assert_int_equal(t.jobs[2].gpus, 16);
    assert_int_equal(t.jobs[2].duration_ms, 86400000);
    /* A CPU job (gpu_num 0) is kept, as in the other readers. */
    assert_int_equal(t.jobs[3].gpus, 0);
    /* Empty duration: end_time - start_time. */
    assert_int_equal(t.jobs[4].line, 9);
    assert_int_equal(t.jobs[4].submit_ms, 850000);
    assert_int_equal(t.jobs[4].duration_ms, 600000);
    trace_release(&t);
}

static void test_helios_reader_needs_its_header(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct tide_err err = {0};
    assert_int_equal(trace_load(&t, &trace_reader_helios, DATA "philly_small.csv", &err),
                     TIDE_EINVAL);
    assert_non_null(strstr(err.message, "gpu_num"));
    trace_release(&t);
    /* The Alibaba reader on a file with another header reads it as rows and
     * finds none usable. */
    trace_init(&t);
    assert_int_equal(trace_load(&t, &trace_reader_alibaba, DATA "helios_small.csv", &err),
                     TIDE_EINVAL);
    assert_int_equal(t.njobs, 0);
    trace_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philly_reader_keeps_good_rows_and_names_bad_lines),
        cmocka_unit_test(test_itp_reader_drops_bad_numbers),
        cmocka_unit_test(test_tide_csv_reads_optional_columns_and_decimals),
        cmocka_unit_test(test_tide_csv_refuses_unknown_column),
        cmocka_unit_test(test_tide_csv_reads_gpu_util),
        cmocka_unit_test(test_a_header_with_a_column_twice_is_refused),
        cmocka_unit_test(test_a_file_with_no_usable_rows_is_an_error),
        cmocka_unit_test(test_seconds_parse_exactly),
        cmocka_unit_test(test_datetimes_are_read_as_utc),
        cmocka_unit_test(test_times_over_100_years_are_dropped_as_too_large),
        cmocka_unit_test(test_dates_outside_the_100_years_of_most_rows_are_dropped),
        cmocka_unit_test(test_dates_that_do_not_exist_are_refused),
        cmocka_unit_test(test_readers_drop_rows_whose_date_does_not_exist),
        cmocka_unit_test(test_philly_cluster_too_long_drops_the_row),
        cmocka_unit_test(test_synthetic_trace_is_the_same_for_a_seed),
        cmocka_unit_test(test_synthetic_arrivals_past_100_years_are_refused),
        cmocka_unit_test(test_size_mix_rejects_garbage),
        cmocka_unit_test(test_real_philly_trace_reads_every_row),
        cmocka_unit_test(test_real_itp_traces_read),
        cmocka_unit_test(test_alibaba_reader_reads_headerless_task_table),
        cmocka_unit_test(test_alibaba_reader_accepts_a_header),
        cmocka_unit_test(test_alibaba_reader_reads_gpu_wrk_util),
        cmocka_unit_test(test_helios_reader_keeps_ran_jobs_and_names_bad_lines),
        cmocka_unit_test(test_helios_reader_needs_its_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
