/*
 * Unit tests for spare directories (src/common/dir_spares.c): a real pool
 * thread making real directories in a temporary directory. A take must hand
 * on an empty directory made ahead, never replace what is at its path, and
 * a new pool must adopt only the clean spares an earlier run left.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dir_spares.h"
#include "common/fsutil.h"
#include "temp_dir.h"

static int setup(void **state)
{
    (void)state;
    umask(022);
    return temp_dir_make("tide-dir-spares");
}

static int teardown(void **state)
{
    (void)state;
    return temp_dir_remove();
}

/* Waits (at most 10 s: the pool waits for quiet first) until s has n ready. */
static void wait_ready(struct dir_spares *s, int n)
{
    for (int i = 0; i < 1000 && dir_spares_ready(s) != n; i++)
        usleep(10 * 1000);
    assert_int_equal(dir_spares_ready(s), n);
}

static ino_t inode_of(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return st.st_ino;
}

static void test_a_pool_makes_its_spares_as_empty_dot_named_directories(void **state)
{
    (void)state;
    struct dir_spares *s = dir_spares_create(dir, 5, 0700);
    assert_non_null(s);
    wait_ready(s, 5);
    assert_int_equal(count_named(".spare-"), 5);
    struct stat st;
    assert_int_equal(lstat(in_dir(".spare-0"), &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0700);
    dir_spares_destroy(s);
}

static void test_a_take_renames_a_spare_into_place_and_it_is_made_again(void **state)
{
    (void)state;
    struct dir_spares *s = dir_spares_create(dir, 3, 0700);
    assert_non_null(s);
    wait_ready(s, 3);
    ino_t spares[3];
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, ".spare-%d", i);
        spares[i] = inode_of(in_dir(name));
    }
    assert_int_equal(dir_spares_take(s, in_dir("17")), 0);
    ino_t got = inode_of(in_dir("17"));
    assert_true(got == spares[0] || got == spares[1] || got == spares[2]);
    assert_int_equal(count_named(".spare-"), 2);
    /* refilled once takes pause */
    wait_ready(s, 3);
    assert_int_equal(count_named(".spare-"), 3);
    dir_spares_destroy(s);
}

static void test_a_take_never_replaces_what_is_at_its_path(void **state)
{
    (void)state;
    struct dir_spares *s = dir_spares_create(dir, 2, 0700);
    assert_non_null(s);
    wait_ready(s, 2);
    assert_int_equal(mkdir(in_dir("9"), 0700), 0);
    ino_t there = inode_of(in_dir("9"));
    /* an empty directory too: rename(2) alone would replace it */
    assert_int_equal(dir_spares_take(s, in_dir("9")), -EEXIST);
    assert_int_equal(inode_of(in_dir("9")), there);
    assert_int_equal(dir_spares_ready(s), 2);
    assert_int_equal(count_named(".spare-"), 2);
    dir_spares_destroy(s);
}

static void test_a_take_without_a_spare_or_pool_tells_the_caller_to_make_its_own(void **state)
{
    (void)state;
    assert_int_equal(dir_spares_take(NULL, in_dir("1")), -ENOENT);
    char sub[128], away[128], path[160];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    snprintf(away, sizeof away, "%s/away", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    struct dir_spares *s = dir_spares_create(sub, 1, 0700);
    assert_non_null(s);
    wait_ready(s, 1);
    /* its parent moved away: the spare is not where the pool made it (and
     * is let go), and the pool can make no other */
    assert_int_equal(rename(sub, away), 0);
    snprintf(path, sizeof path, "%s/1", away);
    assert_int_equal(dir_spares_take(s, path), -ENOENT);
    assert_int_equal(dir_spares_ready(s), 0);
    snprintf(path, sizeof path, "%s/2", away);
    assert_int_equal(dir_spares_take(s, path), -ENOENT);
    assert_int_equal(access(path, F_OK), -1);
    dir_spares_destroy(s);
    assert_int_equal(rename(away, sub), 0);
}

static void test_make_takes_a_spare_or_makes_the_directory_itself(void **state)
{
    (void)state;
    bool made = false;
    char deep[128];
    snprintf(deep, sizeof deep, "%s/a/b", dir);
    assert_int_equal(dir_spares_make(NULL, in_dir("1"), 0700, &made), 0);
    assert_true(made);
    assert_int_equal(dir_spares_make(NULL, in_dir("1"), 0700, &made), 0);
    assert_false(made); /* kept as it was */
    assert_int_equal(dir_spares_make(NULL, deep, 0700, &made), 0);
    assert_false(made); /* its parent too: it may have raced */
    assert_int_equal(access(deep, F_OK), 0);
    struct dir_spares *s = dir_spares_create(dir, 1, 0700);
    assert_non_null(s);
    wait_ready(s, 1);
    ino_t spare = inode_of(in_dir(".spare-0"));
    assert_int_equal(dir_spares_make(s, in_dir("1"), 0700, &made), 0);
    assert_false(made);
    assert_int_equal(dir_spares_ready(s), 1); /* not spent on a directory already there */
    assert_int_equal(dir_spares_make(s, in_dir("2"), 0700, &made), 0);
    assert_true(made);
    assert_int_equal(inode_of(in_dir("2")), spare);
    dir_spares_destroy(s);
}

static void test_a_missing_target_directory_keeps_the_spare(void **state)
{
    (void)state;
    struct dir_spares *s = dir_spares_create(dir, 1, 0700);
    assert_non_null(s);
    wait_ready(s, 1);
    assert_int_equal(dir_spares_take(s, in_dir("no-such-dir/5")), -ENOENT);
    assert_int_equal(dir_spares_ready(s), 1);
    assert_int_equal(dir_spares_take(s, in_dir("5")), 0);
    dir_spares_destroy(s);
}

static void test_only_an_earlier_runs_clean_spares_are_adopted(void **state)
{
    (void)state;
    assert_int_equal(mkdir(in_dir(".spare-3"), 0700), 0); /* clean */
    assert_int_equal(mkdir(in_dir(".spare-8"), 0700), 0); /* something inside */
    int fd = open(in_dir(".spare-8/left"), O_WRONLY | O_CREAT, 0600);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(mkdir(in_dir(".spare-11"), 0700), 0);
    assert_int_equal(chmod(in_dir(".spare-11"), 0755), 0); /* not the pool's mode */
    assert_int_equal(mkdir(in_dir(".spare-2"), 0700), 0);
    assert_int_equal(chmod(in_dir(".spare-2"), 0500), 0);
    assert_int_equal(mkdir(in_dir(".spare-x"), 0700), 0);  /* not a spare's name */
    assert_int_equal(mkdir(in_dir(".spare-05"), 0700), 0); /* nor this: never written so */
    ino_t clean = inode_of(in_dir(".spare-3"));
    struct dir_spares *s = dir_spares_create(dir, 1, 0700);
    assert_non_null(s);
    wait_ready(s, 1); /* adopted: the pool is full, none made */
    assert_int_equal(count_named(".spare-"), 6);
    assert_int_equal(dir_spares_take(s, in_dir("40")), 0);
    assert_int_equal(inode_of(in_dir("40")), clean);
    /* the others are left alone, and a new spare takes a fresh name */
    wait_ready(s, 1);
    assert_int_equal(access(in_dir(".spare-8/left"), F_OK), 0);
    assert_int_equal(access(in_dir(".spare-12"), F_OK), 0);
    assert_int_equal(count_named(".spare-"), 6);
    dir_spares_destroy(s);
}

static void test_spares_outlive_their_pool(void **state)
{
    (void)state;
    struct dir_spares *s = dir_spares_create(dir, 2, 0700);
    assert_non_null(s);
    wait_ready(s, 2);
    dir_spares_destroy(s);
    assert_int_equal(count_named(".spare-"), 2);
    dir_spares_destroy(NULL);
}

static void test_bad_arguments_give_no_pool(void **state)
{
    (void)state;
    errno = 0;
    assert_null(dir_spares_create(dir, 0, 0700));
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_null(dir_spares_create(dir, DIR_SPARES_MAX + 1, 0700));
    assert_int_equal(errno, EINVAL);
    assert_null(dir_spares_create(in_dir("missing"), 1, 0700));
    assert_int_equal(errno, ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_pool_makes_its_spares_as_empty_dot_named_directories,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_take_renames_a_spare_into_place_and_it_is_made_again,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_take_never_replaces_what_is_at_its_path, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_a_take_without_a_spare_or_pool_tells_the_caller_to_make_its_own, setup, teardown),
        cmocka_unit_test_setup_teardown(test_make_takes_a_spare_or_makes_the_directory_itself,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_missing_target_directory_keeps_the_spare, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_only_an_earlier_runs_clean_spares_are_adopted, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_spares_outlive_their_pool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments_give_no_pool, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
