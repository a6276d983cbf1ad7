/* Fake GPUs: parsing --fake-gpus specs and telemetry scripted by tasks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/gpu.h"
#include "agent/gpu_fake.h"
#include "common/fsutil.h"

static void test_spec_with_one_model_gives_numbered_devices(void **state)
{
    (void)state;
    struct gpu_device *d = NULL;
    size_t n = 0;
    struct tide_err err;
    assert_int_equal(gpu_fake_parse_spec("4xH200:141GB", "node-1", &d, &n, &err), 0);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++) {
        char uuid[64];
        snprintf(uuid, sizeof uuid, "GPU-fake-node-1-%zu", i);
        assert_int_equal(d[i].index, (int)i);
        assert_string_equal(d[i].name, "H200");
        assert_string_equal(d[i].uuid, uuid);
        assert_int_equal(d[i].memory_total_mib, 141 * 1024);
        assert_false(d[i].mig_mode);
    }
    free(d);
}

static void test_spec_list_numbers_across_entries_and_reads_mb(void **state)
{
    (void)state;
    struct gpu_device *d = NULL;
    size_t n = 0;
    assert_int_equal(gpu_fake_parse_spec("2xA100:80GB,1xT4:16000MB", "n", &d, &n, NULL), 0);
    assert_int_equal(n, 3);
    assert_string_equal(d[1].name, "A100");
    assert_int_equal(d[1].memory_total_mib, 80 * 1024);
    assert_int_equal(d[2].index, 2);
    assert_string_equal(d[2].name, "T4");
    assert_string_equal(d[2].uuid, "GPU-fake-n-2");
    assert_int_equal(d[2].memory_total_mib, 16000);
    free(d);
}

static void test_spec_units_ignore_case_and_accept_gib_mib(void **state)
{
    (void)state;
    struct gpu_device *d = NULL;
    size_t n = 0;
    assert_int_equal(gpu_fake_parse_spec("1xL4:24gib,1xL4:512MiB", "n", &d, &n, NULL), 0);
    assert_int_equal(d[0].memory_total_mib, 24 * 1024);
    assert_int_equal(d[1].memory_total_mib, 512);
    free(d);
}

static void test_bad_specs_are_refused_with_a_reason(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "0xH200",              /* no GPUs, and no memory */
        "0xH200:141GB",        /* count 0 */
        "4xH200",              /* no memory */
        "4xH200:abc",          /* memory not a number */
        "4xH200:141",          /* memory without a unit */
        "4xH200:141TB",        /* unknown unit */
        "4xH200:0GB",          /* no memory */
        "4xH200:-1GB",         /* negative */
        "x:1GB",               /* no count */
        "4x:1GB",              /* no model */
        "4H200:1GB",           /* no 'x' */
        "-4xH200:1GB",         /* signed count */
        "513xH200:1GB",        /* over the node limit */
        "300xA:1GB,300xB:1GB", /* over it in total */
        "2xH2 00:1GB",         /* space in the model */
        "2xH200:1GB,",         /* empty entry */
        ",2xH200:1GB",
        "",
        "99999999999999999999xH200:1GB",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gpu_device *d = (struct gpu_device *)&d; /* must be reset */
        size_t n = 7;
        struct tide_err err;
        tide_err_clear(&err);
        int rc = gpu_fake_parse_spec(bad[i], "n", &d, &n, &err);
        if (rc != TIDE_EINVAL)
            fail_msg("spec '%s' was accepted", bad[i]);
        assert_null(d);
        assert_int_equal(n, 0);
        assert_string_equal(err.field, "fake-gpus");
        assert_true(strlen(err.message) > 0);
    }
}

static void test_telemetry_text_is_parsed_in_any_order(void **state)
{
    (void)state;
    int util;
    int64_t mem;
    assert_int_equal(gpu_fake_parse_telemetry("util=35 mem=1000\n", &util, &mem), 0);
    assert_int_equal(util, 35);
    assert_int_equal(mem, 1000);
    assert_int_equal(gpu_fake_parse_telemetry("mem=5\tutil=250", &util, &mem), 0);
    assert_int_equal(util, 100); /* clamped */
    assert_int_equal(mem, 5);
    assert_int_equal(gpu_fake_parse_telemetry("util=7", &util, &mem), 0);
    assert_int_equal(util, 7);
    assert_int_equal(mem, 0);
    assert_int_equal(gpu_fake_parse_telemetry("", &util, &mem), 0);
    assert_int_equal(util, 0);
}

static void test_malformed_telemetry_text_is_refused(void **state)
{
    (void)state;
    int util;
    int64_t mem;
    assert_int_equal(gpu_fake_parse_telemetry("util=abc", &util, &mem), TIDE_EINVAL);
    assert_int_equal(gpu_fake_parse_telemetry("util=5x", &util, &mem), TIDE_EINVAL);
    assert_int_equal(gpu_fake_parse_telemetry("temp=5", &util, &mem), TIDE_EINVAL);
    assert_int_equal(gpu_fake_parse_telemetry("util=-5", &util, &mem), TIDE_EINVAL);
}

/* A temporary telemetry file like the one a task is given. */
static char *temp_file(const char *content)
{
    char *path = strdup("/tmp/tide-test-fake-gpu-XXXXXX");
    assert_non_null(path);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    if (content)
        assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    close(fd);
    return path;
}

static void test_backend_reports_what_tasks_write_on_their_gpus_only(void **state)
{
    (void)state;
    struct gpu_backend be;
    struct tide_err err;
    assert_int_equal(gpu_backend_open(&be, &gpu_fake_ops, "3xH200:141GB", "n", &err), 0);
    assert_string_equal(be.driver, "fake");
    assert_int_equal(be.count, 3);

    char *busy = temp_file("util=80 mem=20000\n");
    int gpus[] = {0, 2};
    struct gpu_claim claim = {gpus, 2, busy, NULL, NULL, 0};
    struct gpu_telemetry out[3];
    assert_int_equal(be.ops->sample(&be, &claim, 1, out, &err), 0);
    assert_int_equal(out[0].utilization_pct, 80);
    assert_int_equal(out[0].memory_used_mib, 20000);
    assert_int_equal(out[2].memory_used_mib, 20000);
    assert_int_equal(out[1].utilization_pct, 0);
    assert_int_equal(out[1].memory_used_mib, 0);
    /* idle is cool and frugal; busy is hotter and draws more */
    assert_int_equal(out[1].temperature_c, 30);
    assert_int_equal(out[1].power_w, 60);
    assert_true(out[0].temperature_c > out[1].temperature_c);
    assert_true(out[0].power_w > out[1].power_w);

    /* the task is gone: its GPUs are idle again */
    assert_int_equal(be.ops->sample(&be, NULL, 0, out, &err), 0);
    assert_int_equal(out[0].utilization_pct, 0);
    assert_int_equal(out[0].memory_used_mib, 0);
    assert_int_equal(out[0].temperature_c, 30);

    unlink(busy);
    free(busy);
    gpu_backend_release(&be);
    gpu_backend_release(&be); /* twice is harmless */
}

static void test_missing_or_garbled_file_means_an_idle_task(void **state)
{
    (void)state;
    struct gpu_backend be;
    assert_int_equal(gpu_backend_open(&be, &gpu_fake_ops, "2xA100:80GB", "n", NULL), 0);
    char *garbled = temp_file("hello world");
    int g0[] = {0}, g1[] = {1};
    struct gpu_claim claims[] = {
        {g0, 1, "/nonexistent/tide/.fake_gpu", NULL, NULL, 0},
        {g1, 1, garbled, NULL, NULL, 0},
    };
    struct gpu_telemetry out[2];
    assert_int_equal(be.ops->sample(&be, claims, 2, out, NULL), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(out[i].utilization_pct, 0);
        assert_int_equal(out[i].memory_used_mib, 0);
    }
    unlink(garbled);
    free(garbled);
    gpu_backend_release(&be);
}

/* Rewrites the file at path with content. */
static void rewrite(const char *path, const char *content)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    assert_int_equal(fclose(f), 0);
}

static void test_a_kept_reading_is_reused_briefly_then_the_file_is_read_again(
    void **state)
{
    (void)state;
    struct gpu_backend be;
    assert_int_equal(gpu_backend_open(&be, &gpu_fake_ops, "2xH200:141GB", "n", NULL), 0);
    char *path = temp_file("util=40 mem=100");
    int g0[] = {0}, g1[] = {1};
    struct gpu_claim_reading kept = {0};
    struct gpu_claim claim = {g0, 1, path, &kept, NULL, 0};
    struct gpu_telemetry out[2];
    /* never read: read now, and kept */
    assert_int_equal(be.ops->sample(&be, &claim, 1, out, NULL), 0);
    assert_int_equal(out[0].utilization_pct, 40);
    assert_true(kept.at_ms > 0);
    assert_int_equal(kept.utilization_pct, 40);
    assert_int_equal(kept.memory_used_mib, 100);
    /* the task writes new numbers: a sample right after keeps the reading
     * (its age set so that no pause of this test can make it old), one
     * without a kept reading sees them */
    rewrite(path, "util=90 mem=300");
    kept.at_ms = clock_mono_ms() + 60000;
    assert_int_equal(be.ops->sample(&be, &claim, 1, out, NULL), 0);
    assert_int_equal(out[0].utilization_pct, 40);
    assert_int_equal(out[0].memory_used_mib, 100);
    struct gpu_claim fresh = {g1, 1, path, NULL, NULL, 0};
    assert_int_equal(be.ops->sample(&be, &fresh, 1, out, NULL), 0);
    assert_int_equal(out[1].utilization_pct, 90);
    /* once the reading is a second old it is read again */
    kept.at_ms = clock_mono_ms() - 1000;
    assert_int_equal(be.ops->sample(&be, &claim, 1, out, NULL), 0);
    assert_int_equal(out[0].utilization_pct, 90);
    assert_int_equal(out[0].memory_used_mib, 300);
    assert_int_equal(kept.utilization_pct, 90);
    /* the task ends: its GPU is idle at once, whatever it last read */
    assert_int_equal(be.ops->sample(&be, NULL, 0, out, NULL), 0);
    assert_int_equal(out[0].utilization_pct, 0);
    unlink(path);
    free(path);
    gpu_backend_release(&be);
}

static void test_shared_gpu_adds_up_and_is_capped(void **state)
{
    (void)state;
    struct gpu_backend be;
    assert_int_equal(gpu_backend_open(&be, &gpu_fake_ops, "1xT4:16GB", "n", NULL), 0);
    char *a = temp_file("util=70 mem=10000");
    char *b = temp_file("util=60 mem=10000");
    int g[] = {0};
    struct gpu_claim claims[] = {{g, 1, a, NULL, NULL, 0}, {g, 1, b, NULL, NULL, 0}};
    struct gpu_telemetry out[1];
    assert_int_equal(be.ops->sample(&be, claims, 2, out, NULL), 0);
    assert_int_equal(out[0].utilization_pct, 100);
    assert_int_equal(out[0].memory_used_mib, 16 * 1024);
    unlink(a);
    unlink(b);
    free(a);
    free(b);
    gpu_backend_release(&be);
}

static void test_bad_spec_leaves_backend_empty(void **state)
{
    (void)state;
    struct gpu_backend be;
    struct tide_err err;
    assert_int_equal(gpu_backend_open(&be, &gpu_fake_ops, "4xH200:abc", "n", &err), TIDE_EINVAL);
    assert_int_equal(be.count, 0);
    assert_null(be.devices);
    gpu_backend_release(&be);
}

static void test_injected_faults_are_counted_per_gpu_with_the_latest_named(void **state)
{
    (void)state;
    struct gpu_device devs[4];
    memset(devs, 0, sizeof devs);
    for (int i = 0; i < 4; i++)
        devs[i].index = i;
    struct gpu_health h[4];
    int bad = -1;
    assert_int_equal(gpu_fake_parse_faults("# injected\n0 xid 79\n\n1 ecc 5\n0 temp 95\n3 lost\n",
                                           devs, 4, h, &bad),
                     0);
    assert_int_equal(bad, 0);
    assert_int_equal(h[0].seq, 2);
    assert_string_equal(h[0].what, "temp 95");
    assert_false(h[0].node_wide);
    assert_int_equal(h[1].seq, 1);
    assert_string_equal(h[1].what, "ecc 5");
    assert_int_equal(h[2].seq, 0);
    assert_int_equal(h[3].seq, 1);
    assert_true(h[3].node_wide);
    assert_string_equal(h[3].what, "lost (fell off the bus)");
}

static void test_malformed_fault_lines_are_named_and_the_rest_still_count(void **state)
{
    (void)state;
    struct gpu_device devs[2];
    memset(devs, 0, sizeof devs);
    devs[1].index = 1;
    struct gpu_health h[2];
    int bad = 0;
    static const char *const wrong[] = {"0 xid\n", "0 melt 3\n", "x xid 3\n", "0 lost 2\n",
                                        "7 xid 79\n", "0 xid -1\n", "0 xid 12abc\n"};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        assert_int_equal(gpu_fake_parse_faults(wrong[i], devs, 2, h, &bad), TIDE_EINVAL);
        assert_int_equal(bad, 1);
    }
    assert_int_equal(gpu_fake_parse_faults("1 xid 48\n0 bogus\n1 xid 79\n", devs, 2, h, &bad),
                     TIDE_EINVAL);
    assert_int_equal(bad, 2);
    assert_int_equal(h[1].seq, 2);
    assert_string_equal(h[1].what, "xid 79");
}

static void test_xids_a_program_causes_are_not_the_gpus_faults(void **state)
{
    (void)state;
    struct gpu_device devs[2];
    memset(devs, 0, sizeof devs);
    devs[1].index = 1;
    struct gpu_health h[2];
    int bad = -1;
    assert_int_equal(gpu_fake_parse_faults("0 xid 13\n0 xid 31\n1 xid 43\n1 xid 45\n1 xid 48\n",
                                           devs, 2, h, &bad),
                     0);
    assert_int_equal(h[0].seq, 0);
    assert_int_equal(h[1].seq, 1);
    assert_string_equal(h[1].what, "xid 48");
}

static void append(const char *path, const char *text)
{
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* The faults of an earlier run (lines in the file when the agent starts)
 * are not counted again: the server starts each run's count at 0. */
static void test_only_faults_injected_since_the_agent_started_are_counted(void **state)
{
    (void)state;
    char dir[] = "/tmp/tide-test-faults-XXXXXX", path[64], moved[80];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/faults", dir);
    snprintf(moved, sizeof moved, "%s/faults.old", dir);
    append(path, "0 xid 79\n0 xid 48\n");
    struct gpu_backend be;
    struct tide_err err;
    assert_int_equal(gpu_backend_open(&be, &gpu_fake_ops, "2xH200:141GB", "n", &err), 0);
    gpu_fake_watch_faults(&be, path);
    struct gpu_health h[2];
    assert_int_equal(be.ops->health(&be, h, &err), 0);
    assert_int_equal(h[0].seq, 0);
    append(path, "0 ecc 2\n");
    assert_int_equal(be.ops->health(&be, h, &err), 0);
    assert_int_equal(h[0].seq, 1);
    assert_string_equal(h[0].what, "ecc 2");
    /* another file in its place is new from its first line */
    assert_int_equal(rename(path, moved), 0);
    append(path, "1 xid 79\n0 xid 79\n0 xid 79\n0 xid 79\n");
    assert_int_equal(be.ops->health(&be, h, &err), 0);
    assert_int_equal(h[0].seq, 3);
    assert_int_equal(h[1].seq, 1);
    gpu_backend_release(&be);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(unlink(moved), 0);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_with_one_model_gives_numbered_devices),
        cmocka_unit_test(test_injected_faults_are_counted_per_gpu_with_the_latest_named),
        cmocka_unit_test(test_malformed_fault_lines_are_named_and_the_rest_still_count),
        cmocka_unit_test(test_xids_a_program_causes_are_not_the_gpus_faults),
        cmocka_unit_test(test_only_faults_injected_since_the_agent_started_are_counted),
        cmocka_unit_test(test_spec_list_numbers_across_entries_and_reads_mb),
        cmocka_unit_test(test_spec_units_ignore_case_and_accept_gib_mib),
        cmocka_unit_test(test_bad_specs_are_refused_with_a_reason),
        cmocka_unit_test(test_telemetry_text_is_parsed_in_any_order),
        cmocka_unit_test(test_malformed_telemetry_text_is_refused),
        cmocka_unit_test(test_backend_reports_what_tasks_write_on_their_gpus_only),
        cmocka_unit_test(test_missing_or_garbled_file_means_an_idle_task),
        cmocka_unit_test(test_a_kept_reading_is_reused_briefly_then_the_file_is_read_again),
        cmocka_unit_test(test_shared_gpu_adds_up_and_is_capped),
        cmocka_unit_test(test_bad_spec_leaves_backend_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
