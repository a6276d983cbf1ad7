/*
 * A temporary directory for the unit tests that work on real files: each
 * test gets a new one under /tmp (temp_dir_make, from its cmocka setup)
 * and loses it with all it holds (temp_dir_remove, from its teardown, by
 * rm -rf: not tide's own removal, which some of them test). Static
 * functions: include it, after cmocka.h, in one file of a test program.
 */
#ifndef TIDE_TESTS_TEMP_DIR_H
#define TIDE_TESTS_TEMP_DIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The directory of the test under way. */
static char dir[64];

/* Makes dir as /tmp/<prefix>-XXXXXX: 0, or -1 (a cmocka setup's answer). */
static int temp_dir_make(const char *prefix)
{
    snprintf(dir, sizeof dir, "/tmp/%s-XXXXXX", prefix);
    return mkdtemp(dir) ? 0 : -1;
}

/* Removes dir and everything in it: 0, or -1. */
static int temp_dir_remove(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The path of rel in dir, in one of four buffers taken in turn (so a
 * call may use up to four). */
static const char *in_dir(const char *rel)
{
    static char paths[4][1024];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", dir, rel);
    return p;
}

/* How many entries of dir have names starting with prefix. */
static inline int count_named(const char *prefix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += !strncmp(e->d_name, prefix, strlen(prefix));
    closedir(d);
    return n;
}

#endif
