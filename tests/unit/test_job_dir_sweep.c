/*
 * Unit tests for the retention of job directories on the agent
 * (src/agent/job_dir_sweep.c): a real sweep thread over real directories.
 * The test plays the agent's loop. A directory goes once kept long enough
 * and no task uses it; one in use, one touched, spares and names that are
 * no job's stay; an earlier run's directories are kept once more; trash an
 * earlier run left is finished; what cannot go is set aside.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/job_dir_sweep.h"
#include "temp_dir.h"

static int setup(void **state)
{
    (void)state;
    umask(022);
    return temp_dir_make("tide-job-dir-sweep");
}

static int teardown(void **state)
{
    (void)state;
    return temp_dir_remove();
}

static bool exists(const char *rel)
{
    struct stat st;
    return lstat(in_dir(rel), &st) == 0;
}

/* A job directory with a file in it, last changed age_s ago. */
static void job_dir(const char *name, int age_s)
{
    char rel[64];
    assert_int_equal(mkdir(in_dir(name), 0700), 0);
    snprintf(rel, sizeof rel, "%s/out", name);
    FILE *f = fopen(in_dir(rel), "w");
    assert_non_null(f);
    assert_int_equal(fclose(f), 0);
    struct timespec times[2] = {{.tv_sec = time(NULL) - age_s}, {.tv_sec = time(NULL) - age_s}};
    assert_int_equal(utimensat(AT_FDCWD, in_dir(name), times, 0), 0);
}

static bool in_use_none(int64_t job_id, void *arg)
{
    (void)job_id;
    (void)arg;
    return false;
}

/* Job 6's directory is in use. */
static bool in_use_six(int64_t job_id, void *arg)
{
    (void)arg;
    return job_id == 6;
}

/* Plays the agent's loop (at most 10 s) until rel exists or not, as
 * wanted. */
static bool loop_until(struct job_dir_sweep *s, bool (*in_use)(int64_t, void *), const char *rel,
                       bool wanted)
{
    for (int i = 0; i < 1000 && exists(rel) != wanted; i++) {
        job_dir_sweep_retire_due(s, in_use, NULL);
        usleep(10 * 1000);
    }
    return exists(rel) == wanted;
}

static void test_an_earlier_runs_directories_are_kept_once_more_then_go(void **state)
{
    (void)state;
    job_dir("5", 7200); /* its task may have died with the last run */
    job_dir("x12", 7200); /* no job's name */
    job_dir("012", 7200); /* nor this one */
    job_dir(".spare-1", 7200);
    job_dir(".trash-9", 0); /* an earlier run's removal, cut short */
    time_t before = time(NULL);
    struct job_dir_sweep *s = job_dir_sweep_create(dir, 1);
    assert_non_null(s);
    assert_true(loop_until(s, in_use_none, ".trash-9", false)); /* the first look */
    struct stat st;
    assert_int_equal(stat(in_dir("5"), &st), 0);
    /* counted from that look (not 2 h back), however long a loaded machine took */
    assert_true(st.st_mtime >= before - 1);
    assert_false(exists(".ran"));
    assert_true(loop_until(s, in_use_none, "5", false));
    assert_true(exists(".ran")); /* left before the first rename */
    job_dir_sweep_destroy(s);
    assert_true(exists("x12"));
    assert_true(exists("012"));
    assert_true(exists(".spare-1"));
    assert_false(exists(".trash-5"));
}

static void test_a_directory_in_use_or_touched_stays(void **state)
{
    (void)state;
    struct job_dir_sweep *s = job_dir_sweep_create(dir, 1);
    assert_non_null(s);
    job_dir("6", 0);
    job_dir("8", 0);
    assert_true(loop_until(s, in_use_six, "8", false));
    usleep(2500 * 1000); /* more than two looks */
    assert_true(loop_until(s, in_use_six, "6", true));
    job_dir_sweep_touch(s, 6); /* its task is done: a second from now */
    struct stat st;
    assert_int_equal(stat(in_dir("6"), &st), 0);
    assert_true(st.st_mtime >= time(NULL) - 1);
    assert_true(loop_until(s, in_use_none, "6", false));
    job_dir_sweep_destroy(s);
}

static void test_what_cannot_be_removed_whole_is_set_aside(void **state)
{
    (void)state;
    job_dir("3", 0);
    /* too deep to remove: the rest goes, the tree is renamed once */
    char rel[1024] = "3/deep";
    for (int i = 0; i < 130; i++) {
        assert_int_equal(mkdir(in_dir(rel), 0700), 0);
        strcat(rel, "/d");
    }
    struct job_dir_sweep *s = job_dir_sweep_create(dir, 1);
    assert_non_null(s);
    assert_true(loop_until(s, in_use_none, "3", false));
    assert_true(loop_until(s, in_use_none, ".trash-3", false));
    job_dir_sweep_destroy(s);
    assert_int_equal(count_named(".kept-3-"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_an_earlier_runs_directories_are_kept_once_more_then_go,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_directory_in_use_or_touched_stays, setup, teardown),
        cmocka_unit_test_setup_teardown(test_what_cannot_be_removed_whole_is_set_aside, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
