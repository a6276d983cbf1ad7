/* Unit tests for killing what tasks left behind (src/agent/leftovers.c):
 * real processes with a task's TIDE_WORK_DIR, found through /proc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/leftovers.h"

/* A child in its own session (as `setsid sleep` is) sleeping with
 * TIDE_WORK_DIR=dir in its environment. */
static pid_t sleeper(const char *dir)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setsid();
        char var[512];
        snprintf(var, sizeof var, "TIDE_WORK_DIR=%s", dir);
        char *argv[] = {"sleep", "1000", NULL};
        char *envp[] = {"PATH=/usr/bin:/bin", var, NULL};
        execve("/bin/sleep", argv, envp);
        _exit(127);
    }
    /* until exec has replaced our environment with the one above */
    for (int i = 0; i < 500; i++) {
        char path[64], buf[4096];
        snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f)
            fclose(f);
        if (n >= 5 && !memcmp(buf, "PATH=", 5))
            break;
        usleep(2000);
    }
    return pid;
}

/* Whether pid was killed: reaps it (our child) and tells. */
static bool was_killed(pid_t pid)
{
    int status;
    pid_t r = waitpid(pid, &status, WNOHANG);
    return r == pid && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

static void stop(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void test_only_the_named_jobs_processes_are_killed(void **state)
{
    (void)state;
    pid_t mine = sleeper("/tmp/tide-lo/w/jobs/7");
    pid_t other_job = sleeper("/tmp/tide-lo/w/jobs/77");
    pid_t other_agent = sleeper("/tmp/tide-lo/w2/jobs/7");
    int n = agent_leftovers_kill("/proc", "/tmp/tide-lo/w/jobs", 7);
    usleep(50000);
    assert_int_equal(n, 1);
    assert_true(was_killed(mine));
    assert_false(was_killed(other_job));
    assert_false(was_killed(other_agent));
    stop(other_job);
    stop(other_agent);
}

static void test_every_job_of_this_work_dir_is_killed_at_start(void **state)
{
    (void)state;
    pid_t a = sleeper("/tmp/tide-lo/w/jobs/1");
    pid_t b = sleeper("/tmp/tide-lo/w/jobs/2");
    pid_t other_agent = sleeper("/tmp/tide-lo/w-other/jobs/1");
    pid_t no_job = sleeper("/tmp/tide-lo/w/jobs");
    int n = agent_leftovers_kill("/proc", "/tmp/tide-lo/w/jobs", -1);
    usleep(50000);
    assert_int_equal(n, 2);
    assert_true(was_killed(a));
    assert_true(was_killed(b));
    assert_false(was_killed(other_agent));
    assert_false(was_killed(no_job));
    stop(other_agent);
    stop(no_job);
}

static void test_a_process_is_told_as_its_jobs_by_its_work_dir(void **state)
{
    (void)state;
    /* in a session of its own, out of the task's process group: GPU
     * memory of a share counts it all the same (gpu_nvml.c) */
    pid_t mine = sleeper("/tmp/tide-lo/w/jobs/7");
    assert_true(agent_process_is_jobs("/proc", mine, "/tmp/tide-lo/w/jobs", 7));
    assert_false(agent_process_is_jobs("/proc", mine, "/tmp/tide-lo/w/jobs", 77));
    assert_false(agent_process_is_jobs("/proc", mine, "/tmp/tide-lo/w2/jobs", 7));
    assert_false(agent_process_is_jobs("/proc", getpid(), "/tmp/tide-lo/w/jobs", 7));
    assert_false(agent_process_is_jobs("/proc", 0, "/tmp/tide-lo/w/jobs", 7));
    stop(mine);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_process_is_told_as_its_jobs_by_its_work_dir),
        cmocka_unit_test(test_only_the_named_jobs_processes_are_killed),
        cmocka_unit_test(test_every_job_of_this_work_dir_is_killed_at_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
