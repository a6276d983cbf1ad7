/* Unit tests for the log chunks a heartbeat body carries (src/agent/
 * agent_heartbeat.c): a running task's log that had nothing new is looked
 * at again only after most of a heartbeat interval (heartbeats follow every
 * start and exit, and a stat per task each time was most of the agent's
 * file system calls), while an exited task's is read at every heartbeat.
 * A real log file; an agent without GPUs, images or a probe. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_heartbeat.h"

static char work[64], log_path[128];
static struct agent a;
static struct agent_task task;

static void append(const char *text)
{
    FILE *f = fopen(log_path, "a");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Whether a heartbeat body now carries text in its logs. */
static bool body_has(const char *text)
{
    bool more;
    char *body = agent_heartbeat_body(&a, &more);
    assert_non_null(body);
    const char *logs = strstr(body, "\"logs\"");
    assert_non_null(logs);
    bool has = strstr(logs, text) != NULL;
    free(body);
    return has;
}

static void test_an_idle_running_log_is_looked_at_again_after_most_of_an_interval(void **state)
{
    (void)state;
    snprintf(work, sizeof work, "/tmp/tide-test-hblog-XXXXXX");
    assert_non_null(mkdtemp(work));
    snprintf(log_path, sizeof log_path, "%s/1.1.log", work);
    memset(&a, 0, sizeof a);
    memset(&task, 0, sizeof task);
    task.job_id = 1;
    task.attempt = 1;
    task.state = AGENT_TASK_RUNNING;
    task.log_path = log_path;
    a.tasks[0] = &task;
    a.ntasks = 1;
    a.heartbeat_ms = 60000; /* no recheck during the test, unless told */
    append("first");
    assert_true(body_has("first"));
    task.log_acked = 5;             /* as the reply says */
    assert_false(body_has("first")); /* nothing new: noted as idle */
    append("second");
    assert_false(body_has("second")); /* not looked at yet */
    task.log_idle_ms -= 30000;        /* half an interval on: not yet */
    assert_false(body_has("second"));
    task.log_idle_ms -= 24000; /* nine tenths */
    assert_true(body_has("second"));
    /* output flowing: every heartbeat looks */
    assert_true(body_has("second"));
    task.log_acked = 11;
    assert_false(body_has("second"));
    append("third");
    assert_false(body_has("third"));
    /* an exited task's log goes with the next heartbeat, idle or not */
    task.state = AGENT_TASK_EXITED;
    snprintf(task.reason, sizeof task.reason, "exit 0");
    assert_true(body_has("third"));
    unlink(log_path);
    rmdir(work);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_idle_running_log_is_looked_at_again_after_most_of_an_interval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
