/*
 * Unit tests for spare task logs (src/agent/log_spares.c): real files in a
 * temporary directory; a spare must be the same file (inode) handed on,
 * emptied, only to its owner, never over an existing log.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/log_spares.h"
#include "temp_dir.h"

static int setup(void **state)
{
    (void)state;
    log_spares_forget();
    return temp_dir_make("tide-log-spares");
}

static int teardown(void **state)
{
    (void)state;
    return temp_dir_remove();
}

/* Writes text to a new file at path; its inode. */
static ino_t write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    close(fd);
    return st.st_ino;
}

static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

static void test_a_drained_log_becomes_the_next_log_of_its_owner_emptied(void **state)
{
    (void)state;
    const char *first = in_dir("1.1.log"), *second = in_dir("2.1.log");
    ino_t ino = write_file(first, "the first job's output\n");
    assert_int_equal(log_spares_put(first), 0);
    assert_false(exists(first));
    assert_true(log_spares_take(second, geteuid()));
    struct stat st;
    assert_int_equal(stat(second, &st), 0);
    assert_int_equal(st.st_ino, ino);
    assert_int_equal(st.st_size, 0);
    /* it was handed on: nothing is left to take */
    assert_false(log_spares_take(in_dir("3.1.log"), geteuid()));
}

static void test_a_spare_goes_to_no_other_owner(void **state)
{
    (void)state;
    write_file(in_dir("1.1.log"), "x");
    assert_int_equal(log_spares_put(in_dir("1.1.log")), 0);
    assert_false(log_spares_take(in_dir("2.1.log"), geteuid() + 1));
    assert_false(exists(in_dir("2.1.log")));
    assert_true(log_spares_take(in_dir("2.1.log"), geteuid()));
}

static void test_a_spare_never_replaces_a_log_already_there(void **state)
{
    (void)state;
    write_file(in_dir("1.1.log"), "x");
    assert_int_equal(log_spares_put(in_dir("1.1.log")), 0);
    ino_t there = write_file(in_dir("2.1.log"), "keep me");
    assert_false(log_spares_take(in_dir("2.1.log"), geteuid()));
    struct stat st;
    assert_int_equal(stat(in_dir("2.1.log"), &st), 0);
    assert_int_equal(st.st_ino, there);
    assert_int_equal(st.st_size, 7);
    /* the spare is still there for another log */
    assert_true(log_spares_take(in_dir("3.1.log"), geteuid()));
}

static void test_logs_beyond_the_spares_kept_are_removed(void **state)
{
    (void)state;
    char name[64];
    for (int i = 0; i < LOG_SPARES_MAX + 3; i++) {
        snprintf(name, sizeof name, "%d.1.log", i);
        write_file(in_dir(name), "x");
        assert_int_equal(log_spares_put(in_dir(name)), 0);
        assert_false(exists(in_dir(name)));
    }
    int taken = 0;
    for (int i = 0; i < LOG_SPARES_MAX + 3; i++) {
        snprintf(name, sizeof name, "new-%d.log", i);
        taken += log_spares_take(in_dir(name), geteuid());
    }
    assert_int_equal(taken, LOG_SPARES_MAX);
}

static void test_spares_of_another_directory_are_not_taken(void **state)
{
    (void)state;
    write_file(in_dir("1.1.log"), "x");
    assert_int_equal(log_spares_put(in_dir("1.1.log")), 0);
    char other[128];
    snprintf(other, sizeof other, "%s/sub", dir);
    assert_int_equal(mkdir(other, 0700), 0);
    char path[256];
    snprintf(path, sizeof path, "%s/2.1.log", other);
    assert_false(log_spares_take(path, geteuid()));
    assert_false(exists(path));
}

static void test_a_taken_spare_is_mode_0600_again(void **state)
{
    (void)state;
    write_file(in_dir("1.1.log"), "x");
    assert_int_equal(log_spares_put(in_dir("1.1.log")), 0);
    /* its user may change the mode of the file it owns */
    assert_int_equal(chmod(in_dir(".spare-0.log"), 0644), 0);
    assert_true(log_spares_take(in_dir("2.1.log"), geteuid()));
    struct stat st;
    assert_int_equal(stat(in_dir("2.1.log"), &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
}

static void test_an_earlier_runs_spares_are_removed_at_start(void **state)
{
    (void)state;
    write_file(in_dir(".spare-7.log"), "");
    write_file(in_dir(".spare-63.log"), "");
    write_file(in_dir("5.2.log"), "a log not yet drained");
    assert_int_equal(log_spares_clear(dir), 2);
    assert_false(exists(in_dir(".spare-7.log")));
    assert_false(exists(in_dir(".spare-63.log")));
    assert_true(exists(in_dir("5.2.log")));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_drained_log_becomes_the_next_log_of_its_owner_emptied,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_spare_goes_to_no_other_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_spare_never_replaces_a_log_already_there, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_logs_beyond_the_spares_kept_are_removed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_spares_of_another_directory_are_not_taken, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_taken_spare_is_mode_0600_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_earlier_runs_spares_are_removed_at_start, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
