/* Unit tests for starting tasks (src/agent/task.c): real children, started
 * without waiting for their exec, whose answers come through the start
 * handshake (agent_task_confirm) or are found when the child is reaped
 * (agent_task_poll). The child is vforked, sharing the agent's memory until
 * its exec: tests here check that it leaves the agent as it was (signal
 * mask, and every thread's user when the task switches to another; that one
 * needs root). No cgroups: those have their own tests (test_cgroup) and e2e
 * suites. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/run_as.h"
#include "agent/task.h"
#include "agent/task_exec.h"
#include "common/fsutil.h"

static char work[64];

static int setup(void **state)
{
    (void)state;
    snprintf(work, sizeof work, "/tmp/tide-test-start-XXXXXX");
    return mkdtemp(work) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    return system(cmd) == 0 ? 0 : -1;
}

/* Starts job_id's task running argv (in workdir when not NULL). */
static struct agent_task *start(int64_t job_id, char **argv, const char *workdir)
{
    struct agent_task_spec spec = {
        .job_id = job_id, .attempt = 1, .command = argv, .workdir = workdir, .kill_grace_s = 0};
    struct agent_task_site site = {.work_dir = work};
    struct agent_task *t = NULL;
    struct tide_err err;
    tide_err_clear(&err);
    assert_int_equal(agent_task_start(&spec, &site, 1, &t, &err), 0);
    assert_non_null(t);
    return t;
}

/* Waits (at most 10 s) until t's handshake is answered. */
static void confirm(struct agent_task *t)
{
    for (int i = 0; i < 1000 && agent_task_starting(t) && !agent_task_confirm(t); i++) {
        struct pollfd p = {.fd = agent_task_start_fd(t), .events = POLLIN};
        poll(&p, 1, 10);
    }
    assert_false(agent_task_starting(t));
}

/* Polls t (at most 10 s) until it has exited. */
static void reap(struct agent_task *t)
{
    for (int i = 0; i < 1000 && !agent_task_poll(t, 1); i++)
        usleep(10000);
    assert_int_equal(t->state, AGENT_TASK_EXITED);
}

static void kill_and_destroy(struct agent_task *t)
{
    agent_task_stop(t, "test over", 0, SIGKILL, 1);
    if (t->state == AGENT_TASK_RUNNING)
        reap(t);
    agent_task_destroy(t);
}

/* The task's log, as a new string. */
static char *log_of(const struct agent_task *t)
{
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(fs_read_file(t->log_path, 1 << 16, &text, &len), 0);
    return text;
}

static void test_a_task_that_execs_stays_running_once_confirmed(void **state)
{
    (void)state;
    char *argv[] = {"sleep", "1000", NULL};
    struct agent_task *t = start(1, argv, NULL);
    assert_int_equal(t->state, AGENT_TASK_RUNNING);
    assert_true(t->pid > 0);
    confirm(t);
    assert_int_equal(t->state, AGENT_TASK_RUNNING);
    assert_int_equal(agent_task_start_fd(t), -1);
    assert_false(agent_task_confirm(t)); /* answered once only */
    assert_int_equal(kill(t->pid, 0), 0);
    kill_and_destroy(t);
}

static void test_a_program_that_cannot_exec_fails_with_its_reason(void **state)
{
    (void)state;
    char *argv[] = {"/nonexistent/tide-no-such-program", NULL};
    struct agent_task *t = start(2, argv, NULL);
    confirm(t);
    assert_int_equal(t->state, AGENT_TASK_EXITED);
    assert_string_equal(
        t->reason, "start failed: /nonexistent/tide-no-such-program: No such file or directory");
    assert_true(t->has_exit_code);
    assert_int_equal(t->exit_code, 127);
    char *log = log_of(t);
    assert_non_null(strstr(log, "tide: start failed: /nonexistent/tide-no-such-program"));
    free(log);
    assert_false(agent_task_poll(t, 1)); /* the child was reaped with the answer */
    agent_task_destroy(t);
}

/* The server refuses such images at submit; a job an older server stored,
 * or a start made by hand, is refused here before the runtime (root) runs. */
static void test_an_image_with_a_transport_fails_without_running_the_runtime(void **state)
{
    (void)state;
    char runtime[128], ran[128];
    snprintf(runtime, sizeof runtime, "%s/podman", work);
    snprintf(ran, sizeof ran, "%s/ran", work);
    FILE *f = fopen(runtime, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\ntouch %s\n", ran);
    fclose(f);
    assert_int_equal(chmod(runtime, 0755), 0);
    static const char *const images[] = {"docker-archive:/tmp/x.tar", "oci:/srv/layout",
                                         "--privileged"};
    static const char *const why[] = {"a registry reference is expected",
                                      "a registry reference is expected",
                                      "must start with a letter or digit"};
    char *argv[] = {"true", NULL};
    for (int i = 0; i < 3; i++) {
        struct agent_task_spec spec = {
            .job_id = 40 + i, .attempt = 1, .command = argv, .image = images[i]};
        struct agent_task_site site = {.work_dir = work, .container_runtime = runtime};
        struct agent_task *t = NULL;
        struct tide_err err;
        tide_err_clear(&err);
        assert_int_equal(agent_task_start(&spec, &site, 1, &t, &err), 0);
        if (t->state == AGENT_TASK_RUNNING)
            reap(t);
        char want[256];
        snprintf(want, sizeof want, "start failed: image %s: %s", images[i], why[i]);
        if (strncmp(t->reason, want, strlen(want)))
            print_error("reason '%s' is not '%s...'\n", t->reason, want);
        assert_int_equal(strncmp(t->reason, want, strlen(want)), 0);
        agent_task_destroy(t);
    }
    assert_int_equal(access(ran, F_OK), -1);
}

/* A program found on PATH is remembered (task_exec.h); once it is gone the
 * child searches again and fails as execvpe always did, and one that is
 * put back runs. */
static void test_a_program_gone_from_path_fails_as_before_and_runs_when_back(void **state)
{
    (void)state;
    char bin[128], prog[160], path[4200];
    snprintf(bin, sizeof bin, "%s/bin", work);
    assert_int_equal(mkdir(bin, 0755), 0);
    snprintf(prog, sizeof prog, "%s/tide-test-prog", bin);
    assert_int_equal(symlink("/bin/true", prog), 0);
    const char *old = getenv("PATH");
    char *saved = strdup(old ? old : "/usr/bin:/bin");
    snprintf(path, sizeof path, "%s:%s", bin, saved);
    assert_int_equal(setenv("PATH", path, 1), 0);
    char *argv[] = {"tide-test-prog", NULL};
    struct agent_task *t = start(60, argv, NULL);
    confirm(t);
    assert_int_equal(t->state, AGENT_TASK_RUNNING);
    reap(t);
    assert_string_equal(t->reason, "exit 0");
    agent_task_destroy(t);
    assert_int_equal(unlink(prog), 0);
    t = start(61, argv, NULL);
    confirm(t);
    assert_int_equal(t->state, AGENT_TASK_EXITED);
    assert_string_equal(t->reason, "start failed: tide-test-prog: No such file or directory");
    agent_task_destroy(t);
    /* back as a script without #!: execvpe's own fallback runs it with sh */
    FILE *f = fopen(prog, "w");
    assert_non_null(f);
    fputs("exit 3\n", f);
    fclose(f);
    assert_int_equal(chmod(prog, 0755), 0);
    t = start(62, argv, NULL);
    confirm(t);
    reap(t);
    assert_string_equal(t->reason, "exit 3");
    agent_task_destroy(t);
    assert_int_equal(setenv("PATH", saved, 1), 0);
    free(saved);
}

/* The logs directory is made at the first start only; one removed since
 * is made again when a log cannot be opened. */
static void test_a_start_after_the_logs_directory_was_removed_makes_it_again(void **state)
{
    (void)state;
    char *argv[] = {"true", NULL};
    struct agent_task *t = start(70, argv, NULL);
    confirm(t);
    reap(t);
    agent_task_destroy(t);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/logs'", work);
    assert_int_equal(system(cmd), 0);
    t = start(71, argv, NULL);
    confirm(t);
    reap(t);
    assert_string_equal(t->reason, "exit 0");
    struct stat st;
    assert_int_equal(stat(t->log_path, &st), 0);
    agent_task_destroy(t);
}

static void test_a_failed_start_found_by_poll_keeps_its_reason(void **state)
{
    (void)state;
    char *argv[] = {"/nonexistent/tide-never-confirmed", NULL};
    struct agent_task *t = start(3, argv, NULL);
    /* only the reaping path: the exit must not read as a plain `exit 127` */
    reap(t);
    assert_string_equal(
        t->reason, "start failed: /nonexistent/tide-never-confirmed: No such file or directory");
    assert_int_equal(t->exit_code, 127);
    agent_task_destroy(t);
}

static void test_a_missing_workdir_fails_naming_the_workdir(void **state)
{
    (void)state;
    char *argv[] = {"true", NULL};
    struct agent_task *t = start(4, argv, "/nonexistent/tide-no-such-dir");
    confirm(t);
    assert_int_equal(t->state, AGENT_TASK_EXITED);
    assert_non_null(strstr(t->reason, "start failed: workdir /nonexistent/tide-no-such-dir: No "
                                      "such file or directory on this node"));
    agent_task_destroy(t);
}

static void test_a_task_that_ends_at_once_reports_its_exit_not_a_start_failure(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "exit 3", NULL};
    struct agent_task *t = start(5, argv, NULL);
    reap(t); /* exec'd and exited before anyone read the handshake */
    assert_string_equal(t->reason, "exit 3");
    assert_int_equal(t->exit_code, 3);
    agent_task_destroy(t);
}

static void test_tasks_started_back_to_back_each_get_their_own_answer(void **state)
{
    (void)state;
    enum { N = 8 };
    struct agent_task *tasks[N];
    char names[N][64];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "/nonexistent/tide-program-%d", i);
        char *bad[] = {names[i], NULL};
        char *good[] = {"sleep", "1000", NULL};
        /* every task is forked before any answer is read */
        tasks[i] = start(10 + i, i % 2 ? bad : good, NULL);
    }
    for (int i = 0; i < N; i++) {
        confirm(tasks[i]);
        if (i % 2 == 0) {
            assert_int_equal(tasks[i]->state, AGENT_TASK_RUNNING);
            continue;
        }
        char want[640];
        snprintf(want, sizeof want, "start failed: %s: No such file or directory", names[i]);
        assert_int_equal(tasks[i]->state, AGENT_TASK_EXITED);
        assert_string_equal(tasks[i]->reason, want);
    }
    for (int i = 0; i < N; i++)
        kill_and_destroy(tasks[i]);
}

static void test_a_task_stopped_before_its_answer_is_read_ends_with_the_stop(void **state)
{
    (void)state;
    char *argv[] = {"sleep", "1000", NULL};
    struct agent_task *t = start(30, argv, NULL);
    /* at once: the child may not have exec'd yet; its group exists */
    agent_task_stop(t, "cancelled", 0, SIGKILL, 1);
    reap(t);
    assert_string_equal(t->reason, "cancelled");
    assert_false(agent_task_starting(t));
    agent_task_destroy(t);
}

/* The hex mask of the "Name:" line of /proc/<pid>/status ("self/task/N"
 * for a thread); 0 when the line is missing. */
static unsigned long long status_mask(const char *proc, const char *name)
{
    char path[96], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "/proc/%s/status", proc);
    assert_int_equal(fs_read_file(path, 1 << 16, &text, &len), 0);
    const char *line = strstr(text, name);
    unsigned long long v = line ? strtoull(line + strlen(name), NULL, 16) : 0;
    free(text);
    return v;
}

/* Bit of sig in a /proc status signal mask. */
static unsigned long long sig_bit(int sig)
{
    return 1ULL << (sig - 1);
}

static void on_usr1(int sig)
{
    (void)sig;
}

static void test_a_task_starts_with_no_signal_blocked_and_sigpipe_default(void **state)
{
    (void)state;
    /* the agent catches some signals, ignores SIGPIPE, may block others */
    struct sigaction sa, old_usr1, old_pipe;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old_usr1), 0);
    sa.sa_handler = SIG_IGN;
    assert_int_equal(sigaction(SIGPIPE, &sa, &old_pipe), 0);
    agent_task_signals_refresh(); /* installed after earlier tests' starts */
    sigset_t usr2, before, after;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    assert_int_equal(pthread_sigmask(SIG_BLOCK, &usr2, &before), 0);

    char *argv[] = {"sleep", "1000", NULL};
    struct agent_task *t = start(40, argv, NULL);
    confirm(t);
    assert_int_equal(t->state, AGENT_TASK_RUNNING);
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)t->pid);
    assert_int_equal(status_mask(pid, "SigBlk:"), 0);
    assert_int_equal(status_mask(pid, "SigIgn:") & sig_bit(SIGPIPE), 0);
    assert_int_equal(status_mask(pid, "SigCgt:"), 0);
    /* and the agent's own mask is as it was: SIGUSR2 blocked, no more */
    assert_int_equal(pthread_sigmask(SIG_SETMASK, NULL, &after), 0);
    assert_true(sigismember(&after, SIGUSR2));
    assert_false(sigismember(&after, SIGUSR1));
    assert_false(sigismember(&after, SIGTERM));
    kill_and_destroy(t);

    assert_int_equal(pthread_sigmask(SIG_SETMASK, &before, NULL), 0);
    sigaction(SIGUSR1, &old_usr1, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    agent_task_signals_refresh();
}

/* A thread of the agent's (libcurl's resolver, the wake thread): waits for
 * its pipe to close. */
static void *idle_thread(void *arg)
{
    char c;
    while (read(*(int *)arg, &c, 1) > 0)
        ;
    return NULL;
}

/* The "Uid:" line's real uid of /proc/<proc>/status. */
static long status_uid(const char *proc)
{
    char path[96], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "/proc/%s/status", proc);
    assert_int_equal(fs_read_file(path, 1 << 16, &text, &len), 0);
    const char *line = strstr(text, "Uid:");
    assert_non_null(line);
    long uid = strtol(line + 4, NULL, 10);
    free(text);
    return uid;
}

/* Guards the outcome: the user switch happens in the child only. It would
 * not catch glibc's set*id wrappers put back in the vfork child (their
 * signal to the agent's other threads is lost rather than seen), which is
 * why run_as.c makes the system calls itself. */
static void test_a_task_run_as_another_user_leaves_every_agent_thread_root(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    struct agent_opts o;
    memset(&o, 0, sizeof o);
    o.job_user = "nobody";
    struct agent_run_as r;
    char why[256];
    assert_int_equal(agent_run_as_resolve(&o, NULL, &r, why, sizeof why), 0);
    assert_true(r.change);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, idle_thread, &p[0]), 0);

    /* as the agent sets them at its start (docs/agent.md): the user
     * enters its job directory through these */
    char jobs[96];
    snprintf(jobs, sizeof jobs, "%s/jobs", work);
    assert_int_equal(chmod(work, 0711), 0);
    assert_int_equal(fs_mkdir_p(jobs, 0711), 0);
    assert_int_equal(chmod(jobs, 0711), 0);
    char *argv[] = {"sleep", "1000", NULL};
    struct agent_task_spec spec = {
        .job_id = 41, .attempt = 1, .command = argv, .kill_grace_s = 0, .run_as = &r};
    struct agent_task_site site = {.work_dir = work};
    struct agent_task *t = NULL;
    struct tide_err err;
    tide_err_clear(&err);
    assert_int_equal(agent_task_start(&spec, &site, 1, &t, &err), 0);
    confirm(t);
    assert_string_equal(t->reason, "");
    assert_int_equal(t->state, AGENT_TASK_RUNNING);
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)t->pid);
    assert_int_equal(status_uid(pid), (long)r.uid);
    /* the switch was the child's alone: the agent and its other thread
     * are still root */
    assert_int_equal(geteuid(), 0);
    assert_int_equal(status_uid("self"), 0);
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int threads = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char proc[300];
        snprintf(proc, sizeof proc, "self/task/%s", e->d_name);
        assert_int_equal(status_uid(proc), 0);
        threads++;
    }
    closedir(d);
    assert_true(threads >= 2);
    kill_and_destroy(t);
    close(p[1]);
    pthread_join(th, NULL);
    close(p[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_task_that_execs_stays_running_once_confirmed),
        cmocka_unit_test(test_a_program_that_cannot_exec_fails_with_its_reason),
        cmocka_unit_test(test_an_image_with_a_transport_fails_without_running_the_runtime),
        cmocka_unit_test(test_a_program_gone_from_path_fails_as_before_and_runs_when_back),
        cmocka_unit_test(test_a_start_after_the_logs_directory_was_removed_makes_it_again),
        cmocka_unit_test(test_a_failed_start_found_by_poll_keeps_its_reason),
        cmocka_unit_test(test_a_missing_workdir_fails_naming_the_workdir),
        cmocka_unit_test(test_a_task_that_ends_at_once_reports_its_exit_not_a_start_failure),
        cmocka_unit_test(test_tasks_started_back_to_back_each_get_their_own_answer),
        cmocka_unit_test(test_a_task_stopped_before_its_answer_is_read_ends_with_the_stop),
        cmocka_unit_test(test_a_task_starts_with_no_signal_blocked_and_sigpipe_default),
        cmocka_unit_test(test_a_task_run_as_another_user_leaves_every_agent_thread_root),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
