/* Unit tests for what /metrics counts as it happens (src/server/metrics_counts.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "server/metrics.h"

static int row_of(const struct metrics_counts *c, const char *queue)
{
    for (int i = 0; i < c->nqueues; i++)
        if (!strcmp(c->queues[i], queue))
            return i;
    return -1;
}

static void test_waits_and_finishes_are_counted_by_queue(void **state)
{
    (void)state;
    static struct server_metrics m;
    static struct metrics_counts c;
    server_metrics_init(&m);
    metrics_job_started(&m, "training", 12);
    metrics_job_started(&m, "batch", 0.5);
    metrics_job_started(&m, "training", 7200);
    metrics_job_finished(&m, "training", JOB_SUCCEEDED);
    metrics_job_finished(&m, "batch", JOB_FAILED);
    metrics_job_finished(&m, "batch", JOB_FAILED);
    metrics_copy(&m, &c);
    int t = row_of(&c, "training"), b = row_of(&c, "batch");
    assert_true(t >= 0 && b >= 0);
    assert_int_equal(c.wait_seconds[t].count, 2);
    assert_int_equal(c.wait_seconds[b].count, 1);
    assert_true(c.wait_seconds[t].sum == 7212);
    assert_int_equal(histogram_cumulative(&c.wait_seconds[b], 0), 1); /* 0.5 s <= 1 s */
    assert_int_equal(c.finished[t][JOB_SUCCEEDED], 1);
    assert_int_equal(c.finished[b][JOB_FAILED], 2);
    assert_int_equal(c.finished[b][JOB_SUCCEEDED], 0);
    server_metrics_release(&m);
}

static void test_queues_beyond_the_table_are_counted_as_other(void **state)
{
    (void)state;
    static struct server_metrics m;
    static struct metrics_counts c;
    server_metrics_init(&m);
    metrics_job_started(&m, "other", 1); /* a queue of that name: a row of its own */
    for (int i = 1; i < METRICS_MAX_QUEUES + 5; i++) {
        char q[32];
        snprintf(q, sizeof q, "q%d", i);
        metrics_job_started(&m, q, 1);
    }
    metrics_copy(&m, &c);
    assert_int_equal(c.nqueues, METRICS_MAX_QUEUES);
    int other = row_of(&c, METRICS_OTHER_QUEUE);
    assert_int_equal(other, METRICS_MAX_QUEUES - 1);
    assert_int_equal(c.wait_seconds[other].count, 6); /* the last table row and the 5 beyond */
    assert_int_equal(row_of(&c, "other"), 0);
    assert_int_equal(c.wait_seconds[0].count, 1);
    for (int i = 0; i < c.nqueues; i++) /* no two series of one label */
        for (int k = i + 1; k < c.nqueues; k++)
            assert_string_not_equal(c.queues[i], c.queues[k]);
    server_metrics_release(&m);
}

static void test_pass_and_submit_histograms_have_buckets_from_the_start(void **state)
{
    (void)state;
    static struct server_metrics m;
    static struct metrics_counts c;
    server_metrics_init(&m);
    metrics_observe_pass(&m, 0.002);
    metrics_observe_submit(&m, 0.02);
    metrics_copy(&m, &c);
    assert_true(c.pass_seconds.nbounds > 5 && c.submit_seconds.nbounds > 5);
    assert_int_equal(c.pass_seconds.count, 1);
    assert_int_equal(c.submit_seconds.count, 1);
    assert_int_equal(c.nqueues, 0);
    server_metrics_release(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waits_and_finishes_are_counted_by_queue),
        cmocka_unit_test(test_queues_beyond_the_table_are_counted_as_other),
        cmocka_unit_test(test_pass_and_submit_histograms_have_buckets_from_the_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
