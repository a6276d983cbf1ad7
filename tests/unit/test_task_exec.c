/* Unit tests for what a task's vfork child gets ready-made (src/agent/
 * task_exec.c): the set of caught signals it resets, and the PATH cache
 * whose answer must be the file execvpe would run. Real files in a
 * temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/task_exec.h"

static char work[64];

static int setup(void **state)
{
    (void)state;
    snprintf(work, sizeof work, "/tmp/tide-test-exec-XXXXXX");
    return mkdtemp(work) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    return system(cmd) == 0 ? 0 : -1;
}

static bool has_signal(const struct agent_task_signals *s, int sig)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->sigs[i] == sig)
            return true;
    return false;
}

static void on_usr1(int sig)
{
    (void)sig;
}

static void test_the_signal_set_holds_the_caught_ones_and_sigpipe_only(void **state)
{
    (void)state;
    struct sigaction sa, old_usr1, old_usr2, old_pipe;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old_usr1), 0);
    sa.sa_handler = SIG_IGN;
    assert_int_equal(sigaction(SIGUSR2, &sa, &old_usr2), 0);
    assert_int_equal(sigaction(SIGPIPE, &sa, &old_pipe), 0);
    struct agent_task_signals s;
    agent_task_signals_scan(&s);
    assert_true(has_signal(&s, SIGUSR1));
    assert_true(has_signal(&s, SIGPIPE));  /* ignored by the agent, default for the task */
    assert_false(has_signal(&s, SIGUSR2)); /* ignored stays ignored, as exec keeps it */
    assert_false(has_signal(&s, SIGTERM)); /* at its default here */
    /* the kept set sees a new handler only when refreshed */
    agent_task_signals_refresh();
    assert_true(has_signal(agent_task_signals_caught(), SIGUSR1));
    sigaction(SIGUSR1, &old_usr1, NULL);
    sigaction(SIGUSR2, &old_usr2, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    assert_true(has_signal(agent_task_signals_caught(), SIGUSR1));
    agent_task_signals_refresh();
    assert_false(has_signal(agent_task_signals_caught(), SIGUSR1));
}

/* Makes dir (under work) and, unless mode is 0, the file dir/name with mode. */
static void make(const char *dir, const char *name, mode_t mode, char *path, size_t n)
{
    snprintf(path, n, "%s/%s", work, dir);
    mkdir(path, 0755);
    if (!mode)
        return;
    snprintf(path, n, "%s/%s/%s", work, dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\n", f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static void test_the_path_found_is_the_first_executable_file_as_execvpe_runs(void **state)
{
    (void)state;
    char a[200], b[200], c[200], search[700];
    make("a", "prog", 0644, a, sizeof a); /* not executable: execvpe goes on */
    make("b", "prog", 0, b, sizeof b);    /* no such file */
    make("c", "prog", 0755, c, sizeof c);
    char sub[200];
    snprintf(sub, sizeof sub, "%s/b/prog", work);
    assert_int_equal(mkdir(sub, 0755), 0); /* a directory of that name: skipped too */
    snprintf(search, sizeof search, "%s/a:%s/b:%s/c", work, work, work);
    struct agent_exec_cache cache = {0};
    const char *p = agent_exec_cache_find(&cache, "prog", search, 1000);
    assert_non_null(p);
    assert_string_equal(p, c);
    assert_null(agent_exec_cache_find(&cache, "missing", search, 1000));
    agent_exec_cache_release(&cache);
}

static void test_the_child_searches_itself_for_names_with_a_slash_or_a_relative_path(void **state)
{
    (void)state;
    char c[200], search[500];
    make("c", "prog", 0755, c, sizeof c);
    struct agent_exec_cache cache = {0};
    assert_null(agent_exec_cache_find(&cache, "./prog", NULL, 1));
    assert_null(agent_exec_cache_find(&cache, c, NULL, 1));
    assert_null(agent_exec_cache_find(&cache, "", NULL, 1));
    /* an empty entry or "bin" is looked up in the child's own cwd */
    snprintf(search, sizeof search, "%s/c::/bin", work);
    assert_null(agent_exec_cache_find(&cache, "prog", search, 1));
    snprintf(search, sizeof search, "bin:%s/c", work);
    assert_null(agent_exec_cache_find(&cache, "prog", search, 1));
    agent_exec_cache_release(&cache);
}

/* The agent's own PATH is what the cache answers for: set for a test. */
static char saved_path[4096];

static void agent_path_is(const char *search)
{
    const char *was = getenv("PATH");
    snprintf(saved_path, sizeof saved_path, "%s", was ? was : "/usr/bin:/bin");
    assert_int_equal(setenv("PATH", search, 1), 0);
}

static void agent_path_restored(void)
{
    assert_int_equal(setenv("PATH", saved_path, 1), 0);
}

static void test_a_cached_path_is_kept_until_it_expires(void **state)
{
    (void)state;
    char c[200], d[200], search[500];
    make("c", "prog", 0755, c, sizeof c);
    make("d", "prog", 0, d, sizeof d);
    snprintf(search, sizeof search, "%s/d:%s/c", work, work);
    agent_path_is(search);
    struct agent_exec_cache cache = {0};
    assert_string_equal(agent_exec_cache_find(&cache, "prog", NULL, 1000), c);
    /* a program put earlier on PATH is seen once the entry expires */
    make("d", "prog", 0755, d, sizeof d);
    assert_string_equal(agent_exec_cache_find(&cache, "prog", NULL, 1000 + 1), c);
    assert_string_equal(
        agent_exec_cache_find(&cache, "prog", NULL, 1000 + AGENT_EXEC_CACHE_TTL_MS), d);
    /* and a removed one is not answered from the cache after that either */
    assert_int_equal(unlink(d), 0);
    assert_int_equal(unlink(c), 0);
    assert_null(agent_exec_cache_find(&cache, "prog", NULL, 1000 + 2 * AGENT_EXEC_CACHE_TTL_MS));
    agent_exec_cache_release(&cache);
    agent_path_restored();
}

static void test_a_jobs_own_path_finds_its_program_and_is_not_cached_for_others(void **state)
{
    (void)state;
    char sys[200], venv[200], search[500];
    make("sys", "python", 0755, sys, sizeof sys);
    make("venv", "python", 0755, venv, sizeof venv);
    snprintf(search, sizeof search, "%s/sys", work);
    agent_path_is(search);
    struct agent_exec_cache cache = {0};
    assert_string_equal(agent_exec_cache_find(&cache, "python", NULL, 1000), sys);
    /* a job whose env puts its venv first runs the venv's, even with the
     * agent's answer cached */
    snprintf(search, sizeof search, "%s/venv:%s/sys", work, work);
    assert_string_equal(agent_exec_cache_find(&cache, "python", search, 1001), venv);
    /* and the next job without its own PATH still gets the agent's */
    assert_string_equal(agent_exec_cache_find(&cache, "python", NULL, 1002), sys);
    agent_exec_cache_release(&cache);
    agent_path_restored();
}

static void test_more_names_than_slots_replace_the_oldest(void **state)
{
    (void)state;
    char path[200], search[300];
    for (int i = 0; i < AGENT_EXEC_CACHE_SLOTS + 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        make("many", name, 0755, path, sizeof path);
    }
    snprintf(search, sizeof search, "%s/many", work);
    agent_path_is(search);
    struct agent_exec_cache cache = {0};
    for (int i = 0; i < AGENT_EXEC_CACHE_SLOTS + 3; i++) {
        char name[16], want[240];
        snprintf(name, sizeof name, "p%d", i);
        snprintf(want, sizeof want, "%s/many/%s", work, name);
        const char *p = agent_exec_cache_find(&cache, name, NULL, 5);
        assert_non_null(p);
        assert_string_equal(p, want);
    }
    size_t used = 0;
    for (size_t i = 0; i < AGENT_EXEC_CACHE_SLOTS; i++)
        used += cache.slots[i].name != NULL;
    assert_int_equal(used, AGENT_EXEC_CACHE_SLOTS);
    agent_exec_cache_release(&cache);
    agent_path_restored();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_signal_set_holds_the_caught_ones_and_sigpipe_only),
        cmocka_unit_test(test_the_path_found_is_the_first_executable_file_as_execvpe_runs),
        cmocka_unit_test(test_the_child_searches_itself_for_names_with_a_slash_or_a_relative_path),
        cmocka_unit_test(test_a_cached_path_is_kept_until_it_expires),
        cmocka_unit_test(test_a_jobs_own_path_finds_its_program_and_is_not_cached_for_others),
        cmocka_unit_test(test_more_names_than_slots_replace_the_oldest),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
