/* Unit tests for the kept answers of agent_run_as_resolve (src/agent/
 * run_as.c): the same options and `user` within the time get the same
 * user without reading the password files again; other options, another
 * user or a refusal are asked anew. Needs root (an agent that is not root
 * cannot switch users): skipped otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <unistd.h>

#include "agent/run_as.h"

static void test_a_kept_answer_is_the_resolved_one_and_keyed_by_options_and_user(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    struct agent_opts roots = {0}, plain = {0};
    roots.job_user = "root";
    roots.allow_root_jobs = true;
    plain.job_user = "root"; /* root without --allow-root-jobs: refused */
    plain.allow_users = "nobody";
    struct agent_run_as fresh, kept;
    char why[256] = "";
    assert_int_equal(agent_run_as_resolve(&roots, NULL, &fresh, why, sizeof why), 0);
    assert_int_equal(agent_run_as_resolve_cached(&roots, NULL, &kept, why, sizeof why, 1000), 0);
    assert_int_equal(agent_run_as_resolve_cached(&roots, NULL, &kept, why, sizeof why, 1001), 0);
    assert_true(kept.change);
    assert_int_equal(kept.uid, fresh.uid);
    assert_int_equal(kept.ngroups, fresh.ngroups);
    assert_string_equal(kept.name, "root");
    /* other options: not the kept answer */
    assert_int_equal(agent_run_as_resolve_cached(&plain, NULL, &kept, why, sizeof why, 1002), -1);
    assert_non_null(strstr(why, "--allow-root-jobs"));
    /* a refusal stays one, with its reason, each time */
    why[0] = '\0';
    assert_int_equal(agent_run_as_resolve_cached(&plain, "daemon", &kept, why, sizeof why, 1003), -1);
    assert_non_null(strstr(why, "not allowed"));
    why[0] = '\0';
    assert_int_equal(agent_run_as_resolve_cached(&plain, "daemon", &kept, why, sizeof why, 1004), -1);
    assert_non_null(strstr(why, "not allowed"));
    /* another user under the same options is its own entry */
    assert_int_equal(agent_run_as_resolve_cached(&plain, "nobody", &kept, why, sizeof why, 1005), 0);
    assert_string_equal(kept.name, "nobody");
    assert_int_equal(agent_run_as_resolve_cached(&roots, NULL, &kept, why, sizeof why,
                                                 1000 + RUN_AS_CACHE_TTL_MS),
                     0);
    assert_string_equal(kept.name, "root");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_kept_answer_is_the_resolved_one_and_keyed_by_options_and_user),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
