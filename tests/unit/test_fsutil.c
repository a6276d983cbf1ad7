/* fs_mkdir_p: one mkdir when the parents are there, the walk when one is
 * missing, 0 for a directory already there, and the error otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"

static char dir[64];

static bool is_dir_with_mode(const char *path, mode_t mode)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == mode;
}

static void test_mkdir_p_makes_missing_parents_and_takes_what_is_there(void **state)
{
    (void)state;
    char deep[128], file[128], under_file[160];
    snprintf(deep, sizeof deep, "%s/a/b/c", dir);
    mode_t old = umask(0);
    assert_int_equal(fs_mkdir_p(deep, 0750), 0); /* the walk: a and b are missing */
    assert_true(is_dir_with_mode(deep, 0750));
    snprintf(deep, sizeof deep, "%s/a/b", dir);
    assert_true(is_dir_with_mode(deep, 0750));
    assert_int_equal(fs_mkdir_p(deep, 0700), 0); /* there already: left as it is */
    assert_true(is_dir_with_mode(deep, 0750));
    snprintf(deep, sizeof deep, "%s/a/b/d", dir);
    assert_int_equal(fs_mkdir_p(deep, 0700), 0); /* one call: its parent is there */
    assert_true(is_dir_with_mode(deep, 0700));
    umask(old);
    snprintf(file, sizeof file, "%s/file", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(under_file, sizeof under_file, "%s/x/y", file);
    assert_int_equal(fs_mkdir_p(under_file, 0700), -ENOTDIR);
    assert_int_equal(fs_mkdir_p("", 0700), -ENAMETOOLONG);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tide-test-fsutil-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_a_deadline_in_microseconds_carries_into_seconds(void **state)
{
    (void)state;
    struct timespec before, after;
    clock_gettime(CLOCK_MONOTONIC, &before);
    struct timespec t = clock_in_us(CLOCK_MONOTONIC, 2500000); /* 2.5 s */
    clock_gettime(CLOCK_MONOTONIC, &after);
    assert_true(t.tv_nsec >= 0 && t.tv_nsec < 1000000000);
    int64_t at = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
    assert_true(at >= (int64_t)before.tv_sec * 1000000000 + before.tv_nsec + 2500000000LL);
    assert_true(at <= (int64_t)after.tv_sec * 1000000000 + after.tv_nsec + 2500000000LL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mkdir_p_makes_missing_parents_and_takes_what_is_there,
                                        setup, teardown),
        cmocka_unit_test(test_a_deadline_in_microseconds_carries_into_seconds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
