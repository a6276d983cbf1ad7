/*
 * Unit tests for removing trees a job filled (src/common/remove_tree.c,
 * and fs_remove_tree over it): real files in a temporary directory. What a
 * link points to and what a mount shows must survive; what is too deep
 * stays; directories their owner left 0500 or 0000 still go; a stopped
 * removal ends early.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/remove_tree.h"
#include "temp_dir.h"

static int setup(void **state)
{
    (void)state;
    umask(022);
    return temp_dir_make("tide-remove-tree");
}

static int teardown(void **state)
{
    (void)state;
    return temp_dir_remove();
}

static void make_file(const char *rel, const char *text)
{
    FILE *f = fopen(in_dir(rel), "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static bool exists(const char *rel)
{
    struct stat st;
    return lstat(in_dir(rel), &st) == 0;
}

static void test_a_tree_goes_but_not_what_its_links_point_to(void **state)
{
    (void)state;
    assert_int_equal(mkdir(in_dir("outside"), 0700), 0);
    make_file("outside/precious", "keep me");
    assert_int_equal(mkdir(in_dir("job"), 0700), 0);
    assert_int_equal(mkdir(in_dir("job/a"), 0700), 0);
    assert_int_equal(mkdir(in_dir("job/a/b"), 0700), 0);
    make_file("job/a/b/data", "scratch");
    make_file("job/top", "scratch");
    assert_int_equal(symlink(in_dir("outside"), in_dir("job/a/to-dir")), 0);
    assert_int_equal(symlink(in_dir("outside/precious"), in_dir("job/to-file")), 0);
    assert_int_equal(mkfifo(in_dir("job/a/fifo"), 0600), 0);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    assert_int_equal(remove_tree_at(fd, "job", NULL), 0);
    assert_false(exists("job"));
    assert_true(exists("outside/precious"));
    assert_int_equal(remove_tree_at(fd, "job", NULL), 0); /* already gone */
    close(fd);
}

/* Makes job/locked (0500) and job/closed (0000), each with a file, and
 * removes job: 0 when all went. */
static int remove_read_only_tree(void)
{
    if (mkdir(in_dir("job"), 0700) != 0 || mkdir(in_dir("job/locked"), 0700) != 0 ||
        mkdir(in_dir("job/closed"), 0700) != 0)
        return -1;
    FILE *f = fopen(in_dir("job/locked/f"), "w");
    FILE *g = fopen(in_dir("job/closed/g"), "w");
    if (!f || !g || fclose(f) != 0 || fclose(g) != 0)
        return -1;
    if (chmod(in_dir("job/locked"), 0500) != 0 || chmod(in_dir("job/closed"), 0) != 0)
        return -1;
    return fs_remove_tree(in_dir("job/")) == 0 && !exists("job") ? 0 : -1;
}

static void test_read_only_directories_of_the_owner_go_too(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        assert_int_equal(remove_read_only_tree(), 0);
        return;
    }
    /* root may write anywhere: the owner's case needs another user */
    assert_int_equal(chown(dir, 65534, 65534), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(setgid(65534) == 0 && setuid(65534) == 0 && remove_read_only_tree() == 0 ? 0 : 1);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_a_stopped_removal_ends_early(void **state)
{
    (void)state;
    assert_int_equal(mkdir(in_dir("job"), 0700), 0);
    make_file("job/a", "x");
    make_file("job/b", "x");
    bool stop = true;
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    assert_int_equal(remove_tree_at(fd, "job", &stop), -ECANCELED);
    assert_true(exists("job/a") && exists("job/b"));
    stop = false;
    assert_int_equal(remove_tree_at(fd, "job", &stop), 0);
    assert_false(exists("job"));
    close(fd);
}

static void test_a_mount_point_is_not_entered(void **state)
{
    (void)state;
    assert_int_equal(mkdir(in_dir("outside"), 0700), 0);
    make_file("outside/precious", "keep me");
    assert_int_equal(mkdir(in_dir("job"), 0700), 0);
    assert_int_equal(mkdir(in_dir("job/mnt"), 0700), 0);
    make_file("job/scratch", "x");
    /* a bind mount of the same filesystem: only its mount id tells it */
    if (mount(in_dir("outside"), in_dir("job/mnt"), "none", MS_BIND, NULL) != 0) {
        print_message("cannot bind-mount here: %s\n", strerror(errno));
        skip();
    }
    int rc = fs_remove_tree(in_dir("job"));
    bool precious = exists("outside/precious") && exists("job/mnt/precious");
    assert_int_equal(umount(in_dir("job/mnt")), 0);
    assert_int_equal(rc, -EXDEV);
    assert_true(precious);
    assert_false(exists("job/scratch")); /* the rest of the tree went */
    assert_int_equal(fs_remove_tree(in_dir("job")), 0);
    assert_true(exists("outside/precious"));
}

static void test_deeper_than_the_limit_stays(void **state)
{
    (void)state;
    char rel[4096] = "job";
    for (int i = 0; i <= REMOVE_TREE_MAX_DEPTH; i++) {
        assert_int_equal(mkdir(in_dir(rel), 0700), 0);
        strcat(rel, "/d");
    }
    assert_int_equal(fs_remove_tree(in_dir("job")), -ELOOP);
    assert_true(exists("job"));
}

static void test_paths_fs_remove_tree_refuses(void **state)
{
    (void)state;
    assert_int_equal(fs_remove_tree(in_dir(".")), -EINVAL);
    assert_int_equal(fs_remove_tree(in_dir("missing/..")), -EINVAL);
    assert_int_equal(fs_remove_tree(in_dir("missing/x")), 0);
    assert_true(exists(""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_tree_goes_but_not_what_its_links_point_to, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_read_only_directories_of_the_owner_go_too, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_stopped_removal_ends_early, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_mount_point_is_not_entered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deeper_than_the_limit_stays, setup, teardown),
        cmocka_unit_test_setup_teardown(test_paths_fs_remove_tree_refuses, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
