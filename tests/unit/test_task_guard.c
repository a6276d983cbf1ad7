/* Unit tests for the task guard (src/agent/task_guard.c): a real guard
 * process and real process groups. Closing the guard's pipe is what the
 * agent's death does; the guard then kills the groups it still watches and
 * removes their containers with a stand-in runtime that notes its calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/task_guard.h"
#include "common/fsutil.h"
#include "temp_dir.h"

static int setup(void **state)
{
    (void)state;
    return temp_dir_make("tide-task-guard");
}

static int teardown(void **state)
{
    (void)state;
    return temp_dir_remove();
}

/* A process group of its own running sleep; its pid is its group. */
static pid_t start_group(void)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        execlp("sleep", "sleep", "1000", (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    return pid;
}

/* What the stand-in runtime was asked, once it has been asked want (at
 * most 10 s); a new string. */
static char *runtime_calls(const char *want)
{
    char *text = NULL;
    for (int i = 0; i < 1000; i++) {
        size_t len = 0;
        free(text);
        text = NULL;
        if (fs_read_file(in_dir("calls"), 1 << 16, &text, &len) == 0 && strstr(text, want))
            break;
        usleep(10000);
    }
    return text;
}

/* A stand-in runtime called name in the temp dir, noting its calls. */
static void make_runtime(char *runtime, size_t n, const char *name)
{
    snprintf(runtime, n, "%s", in_dir(name));
    FILE *f = fopen(runtime, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\necho \"$@\" >> %s\n", in_dir("calls"));
    fclose(f);
    assert_int_equal(chmod(runtime, 0755), 0);
}

static void test_the_agents_death_kills_its_groups_and_removes_their_containers(void **state)
{
    (void)state;
    char runtime[1024];
    make_runtime(runtime, sizeof runtime, "podman");

    struct agent_task_guard g;
    assert_int_equal(agent_task_guard_start(&g), 0);
    pid_t contained = start_group(), bare = start_group(), ended = start_group();
    agent_task_guard_add(&g, contained, runtime, "tide-n-1-1");
    agent_task_guard_add(&g, bare, NULL, NULL);
    agent_task_guard_add(&g, ended, runtime, "tide-n-3-1");
    agent_task_guard_remove(&g, ended); /* its task ended: the agent removed it */
    agent_task_guard_stop(&g);          /* the pipe's EOF, as when the agent dies */

    int status;
    assert_int_equal(waitpid(contained, &status, 0), contained);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_int_equal(waitpid(bare, &status, 0), bare);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* a forgotten group is the agent's business, not the guard's */
    pid_t alive = waitpid(ended, &status, WNOHANG);
    kill(ended, SIGKILL);
    waitpid(ended, &status, 0);
    assert_int_equal(alive, 0);
    char *calls = runtime_calls("tide-n-1-1");
    assert_non_null(calls);
    assert_string_equal(calls, "rm --force --time=0 tide-n-1-1\n");
    free(calls);
}

/* docker rm has no --time (it refused the whole call): its --force kills
 * at once anyway. */
static void test_docker_is_asked_without_podmans_time_flag(void **state)
{
    (void)state;
    char runtime[1024];
    make_runtime(runtime, sizeof runtime, "docker");
    struct agent_task_guard g;
    assert_int_equal(agent_task_guard_start(&g), 0);
    pid_t contained = start_group();
    agent_task_guard_add(&g, contained, runtime, "tide-n-2-1");
    agent_task_guard_stop(&g);
    int status;
    assert_int_equal(waitpid(contained, &status, 0), contained);
    char *calls = runtime_calls("tide-n-2-1");
    assert_non_null(calls);
    assert_string_equal(calls, "rm --force tide-n-2-1\n");
    free(calls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_the_agents_death_kills_its_groups_and_removes_their_containers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_docker_is_asked_without_podmans_time_flag, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
