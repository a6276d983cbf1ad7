/* Unit tests for the agent's container runtime at start and its image
 * listing in the background (src/agent/agent_images.c), against a fake
 * runtime: a script that logs the arguments of every call and lists two
 * images once a file says it may. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_images.h"
#include "common/fsutil.h"

static char dir[64], runtime[128], calls[128], work[128], release[128];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tide-test-images-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(runtime, sizeof runtime, "%s/runtime", dir);
    snprintf(calls, sizeof calls, "%s/calls", dir);
    snprintf(work, sizeof work, "%s/work", dir);
    snprintf(release, sizeof release, "%s/release", dir);
    FILE *f = fopen(runtime, "w");
    if (!f)
        return -1;
    /* `images` waits (at most 20 s) until the release file exists */
    fprintf(f,
            "#!/bin/sh\necho \"$*\" >> %s\n"
            "if [ \"$1\" = images ]; then\n"
            "  echo \"nice $(cut -d' ' -f19 /proc/$$/stat)\" >> %s\n"
            "  i=0; while [ ! -e %s ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\n"
            "  printf 'localhost/a:1\\n<none>:<none>\\nlocalhost/b:2\\n'\n"
            "fi\n",
            calls, calls, release);
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

static struct agent_opts opts;
static struct agent a;

/* Starts the images part of an agent on work with runtime (NULL: found on
 * PATH) at 1 ms, without its first listing. */
static void start_only(const char *with)
{
    memset(&opts, 0, sizeof opts);
    memset(&a, 0, sizeof a);
    opts.container_runtime = (char *)with;
    opts.name = (char *)"node-1";
    a.opts = &opts;
    a.work_dir = work;
    unlink(calls);
    agent_images_start(&a, 1);
}

/* ... and then, once it is due, its first listing, as a heartbeat would. */
static void start(const char *with)
{
    start_only(with);
    agent_images_refresh(&a, 1 + AGENT_IMAGES_FIRST_DELAY_MS);
}

/* Polls the listing as the agent's loop does until a list is taken or it
 * has ended; whether a list was taken. */
static bool wait_listing(void)
{
    for (int i = 0; i < 400; i++) {
        struct pollfd p = {.fd = agent_images_fd(&a), .events = POLLIN};
        poll(&p, p.fd >= 0 ? 1 : 0, 50);
        if (agent_images_poll(&a, 2))
            return true;
        if (a.images_pid <= 0)
            return false;
    }
    return false;
}

/* What the runtime was asked so far (a new string, "" when nothing). */
static char *read_calls(void)
{
    char *text = NULL;
    size_t len = 0;
    if (fs_read_file(calls, 1 << 16, &text, &len) != 0)
        return strdup("");
    return text;
}

static void touch_release(void)
{
    FILE *f = fopen(release, "w");
    assert_non_null(f);
    fclose(f);
}

static void test_a_work_dir_that_never_ran_a_task_asks_for_no_leftover_containers(void **state)
{
    (void)state;
    touch_release();
    start(runtime);
    assert_non_null(a.container_runtime);
    assert_true(wait_listing());
    char *text = read_calls();
    assert_non_null(strstr(text, "images"));
    assert_null(strstr(text, "ps "));
    free(text);
    agent_images_release(&a);
}

/* Starts the images part of an agent in work and checks whether it asked
 * the runtime for this agent's leftover containers (wanted), which it does
 * before agent_images_start returns, not in the background. */
static void check_leftover_containers_looked_for(bool wanted)
{
    char want[200];
    touch_release();
    start(runtime);
    if (!wanted) /* a `ps` would have come before the listing */
        assert_true(wait_listing());
    char *text = read_calls();
    snprintf(want, sizeof want, "ps --all --quiet --filter label=tide.agent=%s", work);
    if (wanted)
        assert_non_null(strstr(text, want));
    else
        assert_null(strstr(text, "ps "));
    free(text);
    agent_images_release(&a);
}

/* WORK/jobs holding one entry, name (a directory, or a file when not
 * dir): whether the agent then looks for an earlier run's containers. */
static void check_jobs_entry(const char *name, bool dir, bool looked_for)
{
    char jobs[160], entry[200];
    snprintf(jobs, sizeof jobs, "%s/jobs", work);
    snprintf(entry, sizeof entry, "%s/jobs/%s", work, name);
    assert_int_equal(mkdir(jobs, 0711), 0);
    if (dir) {
        assert_int_equal(mkdir(entry, 0700), 0);
    } else {
        FILE *f = fopen(entry, "w");
        assert_non_null(f);
        assert_int_equal(fclose(f), 0);
    }
    check_leftover_containers_looked_for(looked_for);
    assert_int_equal(dir ? rmdir(entry) : unlink(entry), 0);
    assert_int_equal(rmdir(jobs), 0);
}

static void test_a_jobs_dir_with_no_job_in_it_asks_for_no_leftovers(void **state)
{
    (void)state;
    /* a spare job directory made ahead (dir_spares.h) is no job's */
    check_jobs_entry(".spare-0", true, false);
}

static void test_a_work_dir_with_jobs_has_its_leftover_containers_looked_for(void **state)
{
    (void)state;
    check_jobs_entry("7", true, true);
}

/* Once the sweep removed every job directory (job_dir_sweep.h), its
 * marker still says tasks ran here. */
static void test_a_jobs_dir_whose_job_directories_were_removed_still_counts_as_used(void **state)
{
    (void)state;
    check_jobs_entry(".ran", false, true);
}

static void test_the_images_are_listed_in_the_background_and_reported_once_in(void **state)
{
    (void)state;
    unlink(release);
    start(runtime);
    /* start returned with the runtime still held in `images` */
    assert_non_null(a.container_runtime);
    assert_true(agent_images_fd(&a) >= 0);
    assert_null(agent_images_json(&a)); /* not known yet: no list sent */
    assert_false(agent_images_poll(&a, 2));
    touch_release();
    assert_true(wait_listing());
    assert_int_equal(agent_images_fd(&a), -1);
    json_t *list = agent_images_json(&a);
    assert_non_null(list);
    assert_int_equal(json_array_size(list), 2);
    assert_string_equal(json_string_value(json_array_get(list, 0)), "localhost/a:1");
    assert_string_equal(json_string_value(json_array_get(list, 1)), "localhost/b:2");
    json_decref(list);
    /* not due again for a while; then again in the background, and the
     * same list is no news (no heartbeat asked for) but still the list */
    int64_t first = 1 + AGENT_IMAGES_FIRST_DELAY_MS;
    assert_int_equal(a.images_at_ms, first);
    agent_images_refresh(&a, first + 3);
    assert_int_equal(a.images_pid, 0);
    agent_images_refresh(&a, first + AGENT_IMAGES_REFRESH_MS);
    assert_true(a.images_pid > 0);
    assert_false(wait_listing());
    assert_int_equal(a.images_pid, 0);
    assert_int_equal(a.images_at_ms, first + AGENT_IMAGES_REFRESH_MS);
    list = agent_images_json(&a);
    assert_int_equal(json_array_size(list), 2);
    json_decref(list);
    agent_images_release(&a);
}

/* A listing that does not end within a refresh (a runtime stuck on its
 * lock) is stopped, the last list kept, and the next one runs later. */
static void test_a_listing_stuck_for_a_refresh_is_stopped_and_the_last_list_kept(void **state)
{
    (void)state;
    touch_release();
    start(runtime);
    assert_true(wait_listing());
    int64_t first = a.images_at_ms;
    unlink(release); /* the next `images` hangs */
    agent_images_refresh(&a, first + AGENT_IMAGES_REFRESH_MS);
    assert_true(a.images_pid > 0);
    agent_images_refresh(&a, first + 2 * AGENT_IMAGES_REFRESH_MS - 1);
    assert_true(a.images_pid > 0); /* not yet a refresh old */
    agent_images_refresh(&a, first + 2 * AGENT_IMAGES_REFRESH_MS);
    assert_false(wait_listing()); /* stopped: no new list */
    assert_int_equal(a.images_pid, 0);
    json_t *list = agent_images_json(&a);
    assert_int_equal(json_array_size(list), 2); /* the last one */
    json_decref(list);
    touch_release();
    agent_images_refresh(&a, first + 3 * AGENT_IMAGES_REFRESH_MS);
    assert_true(a.images_pid > 0); /* and the next is due a refresh later */
    agent_images_release(&a);
}

/* The nice value the fake runtime's `images` ran with (-100: none seen). */
static int listing_nice(void)
{
    char *text = read_calls();
    const char *at = strstr(text, "nice ");
    int n = at ? atoi(at + 5) : -100;
    free(text);
    return n;
}

static void test_the_first_listing_waits_for_its_delay_and_runs_nicer(void **state)
{
    (void)state;
    touch_release();
    start_only(runtime);
    assert_non_null(a.container_runtime);
    /* nothing runs at start, nor at a heartbeat before the delay is over */
    assert_int_equal(a.images_pid, 0);
    assert_int_equal(agent_images_fd(&a), -1);
    agent_images_refresh(&a, AGENT_IMAGES_FIRST_DELAY_MS);
    assert_int_equal(a.images_pid, 0);
    assert_null(agent_images_json(&a));
    /* then the heartbeat of an idle node starts it */
    agent_images_refresh(&a, 1 + AGENT_IMAGES_FIRST_DELAY_MS);
    assert_true(a.images_pid > 0);
    assert_true(wait_listing());
    /* 10 nicer than the agent (19 at most) */
    errno = 0;
    int mine = getpriority(PRIO_PROCESS, 0);
    assert_int_equal(errno, 0);
    assert_int_equal(listing_nice(), mine + 10 > 19 ? 19 : mine + 10);
    agent_images_release(&a);
}

static void test_a_busy_node_lists_its_images_once_idle_or_30_s_after_its_start(void **state)
{
    (void)state;
    touch_release();
    struct agent_task running = {.state = AGENT_TASK_RUNNING, .start_fd = -1};
    /* a task runs: past the delay, no listing yet */
    start_only(runtime);
    a.tasks[0] = &running;
    a.ntasks = 1;
    agent_images_refresh(&a, 1 + AGENT_IMAGES_FIRST_DELAY_MS);
    agent_images_refresh(&a, AGENT_IMAGES_REFRESH_MS);
    assert_int_equal(a.images_pid, 0);
    /* it ended (exited, not yet acknowledged): the node is idle */
    running.state = AGENT_TASK_EXITED;
    agent_images_refresh(&a, AGENT_IMAGES_REFRESH_MS);
    assert_true(a.images_pid > 0);
    assert_true(wait_listing());
    agent_images_release(&a);
    /* one that stays busy lists 30 s after the start all the same */
    running.state = AGENT_TASK_RUNNING;
    start_only(runtime);
    a.tasks[0] = &running;
    a.ntasks = 1;
    agent_images_refresh(&a, AGENT_IMAGES_REFRESH_MS);
    assert_int_equal(a.images_pid, 0);
    agent_images_refresh(&a, 1 + AGENT_IMAGES_REFRESH_MS);
    assert_true(a.images_pid > 0);
    assert_true(wait_listing());
    a.ntasks = 0;
    agent_images_release(&a);
}

static void test_the_runtime_is_found_on_path_without_being_run(void **state)
{
    (void)state;
    char podman[160];
    snprintf(podman, sizeof podman, "%s/podman", dir);
    assert_int_equal(symlink(runtime, podman), 0);
    const char *saved = getenv("PATH");
    char *old = saved ? strdup(saved) : NULL;
    setenv("PATH", dir, 1);
    unlink(release);
    start(NULL);
    assert_non_null(a.container_runtime);
    assert_string_equal(a.container_runtime, "podman");
    agent_images_release(&a); /* kills the listing before it could ask */
    char *text = read_calls();
    assert_null(strstr(text, "--version"));
    free(text);
    if (old)
        setenv("PATH", old, 1);
    free(old);
    unlink(podman);
}

static void test_a_given_runtime_that_does_not_run_is_dropped_with_its_first_call(void **state)
{
    (void)state;
    char broken[160];
    snprintf(broken, sizeof broken, "%s/broken", dir);
    FILE *f = fopen(broken, "w");
    assert_non_null(f);
    fprintf(f, "#!%s/no-such-interpreter\n", dir);
    fclose(f);
    assert_int_equal(chmod(broken, 0755), 0);
    start(broken);
    assert_non_null(a.container_runtime); /* an executable file: found */
    assert_false(wait_listing());
    assert_null(a.container_runtime);
    assert_null(agent_images_json(&a));
    agent_images_release(&a);
    /* one that is not there at all is none from the start */
    snprintf(broken, sizeof broken, "%s/not-there", dir);
    start(broken);
    assert_null(a.container_runtime);
    assert_int_equal(agent_images_fd(&a), -1);
    agent_images_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_work_dir_that_never_ran_a_task_asks_for_no_leftover_containers),
        cmocka_unit_test(test_a_jobs_dir_with_no_job_in_it_asks_for_no_leftovers),
        cmocka_unit_test(test_a_work_dir_with_jobs_has_its_leftover_containers_looked_for),
        cmocka_unit_test(test_a_jobs_dir_whose_job_directories_were_removed_still_counts_as_used),
        cmocka_unit_test(test_the_images_are_listed_in_the_background_and_reported_once_in),
        cmocka_unit_test(test_a_listing_stuck_for_a_refresh_is_stopped_and_the_last_list_kept),
        cmocka_unit_test(test_the_first_listing_waits_for_its_delay_and_runs_nicer),
        cmocka_unit_test(test_a_busy_node_lists_its_images_once_idle_or_30_s_after_its_start),
        cmocka_unit_test(test_the_runtime_is_found_on_path_without_being_run),
        cmocka_unit_test(test_a_given_runtime_that_does_not_run_is_dropped_with_its_first_call),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
