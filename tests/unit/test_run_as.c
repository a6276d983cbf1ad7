/* Unit tests for choosing and becoming a job's user (src/agent/run_as.c)
 * and the agent flags behind it (src/agent/agent_opts.c). The switching
 * tests need root; elsewhere they check that no switch is offered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent_opts.h"
#include "agent/run_as.h"

static int parse(struct agent_opts *o, struct tide_err *err, const char *a, const char *b)
{
    char *argv[] = {"agent", "--server", "http://x", "--name", "n", (char *)a, (char *)b, NULL};
    return agent_opts_parse(b ? 7 : 6, argv, o, err);
}

static void test_bad_user_flags_are_refused_naming_the_flag(void **state)
{
    (void)state;
    struct agent_opts o;
    struct tide_err err;
    tide_err_clear(&err);
    assert_int_equal(parse(&o, &err, "--job-user", "bad name"), TIDE_EINVAL);
    assert_string_equal(err.field, "--job-user");
    tide_err_clear(&err);
    assert_int_equal(parse(&o, &err, "--allow-users", "a,,b"), TIDE_EINVAL);
    assert_string_equal(err.field, "--allow-users");
    tide_err_clear(&err);
    assert_int_equal(parse(&o, &err, "--allow-users", "alice,bob"), 0);
    assert_string_equal(o.allow_users, "alice,bob");
    agent_opts_release(&o);
    assert_int_equal(parse(&o, &err, "--allow-root-jobs", NULL), 0);
    assert_true(o.allow_root_jobs);
    agent_opts_release(&o);
}

static void test_the_policy_refuses_root_and_unlisted_users(void **state)
{
    (void)state;
    struct agent_opts o;
    memset(&o, 0, sizeof o);
    o.job_user = "nobody";
    struct agent_run_as r;
    char why[256];
    if (geteuid() != 0) {
        /* no switch: the agent's own user, and no other may be asked for */
        assert_int_equal(agent_run_as_resolve(&o, NULL, &r, why, sizeof why), 0);
        assert_false(r.change);
        assert_int_equal(agent_run_as_resolve(&o, "root", &r, why, sizeof why), -1);
        return;
    }
    struct passwd *nobody = getpwnam("nobody");
    assert_non_null(nobody);
    assert_int_equal(agent_run_as_resolve(&o, NULL, &r, why, sizeof why), 0);
    assert_true(r.change);
    assert_int_equal(r.uid, nobody->pw_uid);
    assert_int_equal(agent_run_as_resolve(&o, "root", &r, why, sizeof why), -1);
    assert_non_null(strstr(why, "not allowed"));
    o.allow_users = "daemon,root,no-such-user-tide";
    assert_int_equal(agent_run_as_resolve(&o, "root", &r, why, sizeof why), -1);
    assert_non_null(strstr(why, "--allow-root-jobs"));
    assert_int_equal(agent_run_as_resolve(&o, "no-such-user-tide", &r, why, sizeof why), -1);
    assert_non_null(strstr(why, "no such user"));
    assert_int_equal(agent_run_as_resolve(&o, "daemon", &r, why, sizeof why), 0);
    assert_int_equal(r.uid, getpwnam("daemon")->pw_uid);
    o.allow_root_jobs = true;
    assert_int_equal(agent_run_as_resolve(&o, "root", &r, why, sizeof why), 0);
    assert_int_equal(r.uid, 0);
    o.job_user = "root";
    o.allow_root_jobs = false;
    assert_int_equal(agent_run_as_resolve(&o, NULL, &r, why, sizeof why), -1);
}

static void test_a_switched_child_cannot_become_root_again(void **state)
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
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (agent_run_as_enter(&r) != 0)
            _exit(2);
        if (getuid() != r.uid || geteuid() != r.uid || getgid() != r.gid)
            _exit(3);
        if (setuid(0) == 0 || access("/root", W_OK) == 0)
            _exit(4);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_user_flags_are_refused_naming_the_flag),
        cmocka_unit_test(test_the_policy_refuses_root_and_unlisted_users),
        cmocka_unit_test(test_a_switched_child_cannot_become_root_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
