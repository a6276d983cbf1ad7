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
};

static void record(void *ctx, const char *path, long line, const char *reason)
{
    (void)path;
    (void)reason;
    struct warnings *w = ctx;
    if (w->n < 16)
        w->lines[w->n] = line;
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philly_reader_keeps_good_rows_and_names_bad_lines),
        cmocka_unit_test(test_itp_reader_drops_bad_numbers),
        cmocka_unit_test(test_tide_csv_reads_optional_columns_and_decimals),
        cmocka_unit_test(test_tide_csv_refuses_unknown_column),
        cmocka_unit_test(test_a_file_with_no_usable_rows_is_an_error),
        cmocka_unit_test(test_seconds_parse_exactly),
        cmocka_unit_test(test_synthetic_trace_is_the_same_for_a_seed),
        cmocka_unit_test(test_size_mix_rejects_garbage),
        cmocka_unit_test(test_real_philly_trace_reads_every_row),
        cmocka_unit_test(test_real_itp_traces_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
