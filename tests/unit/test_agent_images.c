/* Unit tests for the agent's container runtime at start (src/agent/agent_images.c),
 * against a fake runtime: a script that logs the arguments of every call. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_images.h"
#include "common/fsutil.h"

static char dir[64], runtime[128], calls[128], work[128];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tide-test-images-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(runtime, sizeof runtime, "%s/runtime", dir);
    snprintf(calls, sizeof calls, "%s/calls", dir);
    snprintf(work, sizeof work, "%s/work", dir);
    FILE *f = fopen(runtime, "w");
    if (!f)
        return -1;
    fprintf(f, "#!/bin/sh\necho \"$*\" >> %s\n", calls);
    fclose(f);
    return chmod(runtime, 0755) == 0 && mkdir(work, 0700) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Starts the images part of an agent on work with the fake runtime and
 * returns what the runtime was asked (a new string). */
static char *start_and_read_calls(void)
{
    static struct agent_opts opts;
    static struct agent a;
    memset(&opts, 0, sizeof opts);
    memset(&a, 0, sizeof a);
    opts.container_runtime = runtime;
    a.opts = &opts;
    a.work_dir = work;
    unlink(calls);
    agent_images_start(&a, 1);
    assert_non_null(a.container_runtime);
    agent_images_release(&a);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(fs_read_file(calls, 1 << 16, &text, &len), 0);
    return text;
}

static void test_a_work_dir_that_never_ran_a_task_asks_for_no_leftover_containers(void **state)
{
    (void)state;
    char *text = start_and_read_calls();
    assert_non_null(strstr(text, "--version"));
    assert_non_null(strstr(text, "images"));
    assert_null(strstr(text, "ps "));
    free(text);
}

static void test_a_work_dir_with_jobs_has_its_leftover_containers_looked_for(void **state)
{
    (void)state;
    char jobs[160], want[200];
    snprintf(jobs, sizeof jobs, "%s/jobs", work);
    assert_int_equal(mkdir(jobs, 0711), 0);
    char *text = start_and_read_calls();
    snprintf(want, sizeof want, "ps --all --quiet --filter label=tide.agent=%s", work);
    assert_non_null(strstr(text, want));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_work_dir_that_never_ran_a_task_asks_for_no_leftover_containers),
        cmocka_unit_test(test_a_work_dir_with_jobs_has_its_leftover_containers_looked_for),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
