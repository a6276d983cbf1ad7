/* The server's tide.yaml reader (src/server/config*.c): what it refuses, naming line and key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/sched.h"
#include "server/config.h"
#include "server/server.h"

static struct server_config *cfg;
static struct sched_config sc;
static struct tide_err err;

/* The defaults server_main starts from. */
static int setup(void **state)
{
    (void)state;
    cfg = calloc(1, sizeof *cfg);
    assert_non_null(cfg);
    cfg->node_timeout_ms = 30000;
    cfg->heartbeat_interval_ms = 1000;
    queue_set_defaults(&cfg->queues);
    fairshare_init(&cfg->fairshare, 3600);
    sched_config_defaults(&sc);
    tide_err_clear(&err);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(cfg);
    return 0;
}

/* Loads yaml from a file called tide.yaml (so messages read "tide.yaml:N: ..."). */
static int load(const char *yaml)
{
    char dir[] = "/tmp/tide-test-config-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/tide.yaml", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(yaml, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    tide_err_clear(&err);
    int rc = config_load(path, cfg, &sc, &err);
    unlink(path);
    rmdir(dir);
    return rc;
}

/* yaml is refused with a message holding want (after the directory). */
static void assert_refused(const char *yaml, const char *want)
{
    int rc = load(yaml);
    if (rc != TIDE_EINVAL || !strstr(err.message, want))
        fail_msg("%s\nwanted: %s\ngot (%d): %s", yaml, want, rc, err.message);
}

static void test_an_integer_is_digits_with_an_optional_minus(void **state)
{
    (void)state;
    assert_refused("server:\n  heartbeat_ms: \" 1000\"\n",
                   "tide.yaml:2: server.heartbeat_ms: must be an integer, got ' 1000'");
    assert_refused("server:\n  heartbeat_ms: +1000\n", "must be an integer, got '+1000'");
    assert_refused("server:\n  heartbeat_ms: \"1000 \"\n", "must be an integer, got '1000 '");
    assert_refused("server:\n  heartbeat_ms: 0x400\n", "must be an integer, got '0x400'");
    assert_refused("server:\n  heartbeat_ms: 99999999999999999999\n",
                   "server.heartbeat_ms: must be from 50 to 600000, got 99999999999999999999");
    assert_refused("pools:\n  - name: p\n    max_nodes: \" 3\"\n",
                   "tide.yaml:3: pools[0].max_nodes: must be an integer, got ' 3'");
    assert_refused("pools:\n  - name: p\n    max_nodes: +3\n", "must be an integer, got '+3'");
    assert_int_equal(load("server:\n  heartbeat_ms: 250\n"), 0);
    assert_int_equal(cfg->heartbeat_interval_ms, 250);
    assert_int_equal(load("queues:\n  - name: q\n    priority_min: -5\n    priority: -5\n"), 0);
    assert_int_equal(cfg->queues.queues[0].priority_min, -5);
}

static void test_host_port_takes_a_port_of_digits_only(void **state)
{
    (void)state;
    char host[64];
    int port = 0;
    static const char *const bad[] = {
        "127.0.0.1:+80",  "127.0.0.1: 80",   "127.0.0.1:80 ", "127.0.0.1:-0",
        "127.0.0.1:0x50", "127.0.0.1:65536", "127.0.0.1:",    ":80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (config_host_port("listen", "--listen", bad[i], host, sizeof host, &port, &err) !=
            TIDE_EINVAL)
            fail_msg("%s was taken", bad[i]);
    assert_int_equal(
        config_host_port("listen", "--listen", "localhost:80", host, sizeof host, &port, &err), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 80);
    assert_refused("server:\n  agent_listen: \"127.0.0.1:+80\"\n",
                   "tide.yaml:2: server.agent_listen: must be HOST:PORT");
}

/* One spelling in every section: server.* took yes and no, the rest did not. */
static void test_every_section_takes_the_same_booleans(void **state)
{
    (void)state;
    assert_refused("server:\n  insecure_plain_http: yes\n",
                   "tide.yaml:2: server.insecure_plain_http: must be true or false, got 'yes'");
    assert_refused("server:\n  shared_join_token: no\n",
                   "server.shared_join_token: must be true or false, got 'no'");
    assert_refused("scheduler:\n  backfill: yes\n",
                   "tide.yaml:2: scheduler.backfill: must be true or false, got 'yes'");
    assert_refused("queues:\n  - name: q\n    preemptible: True\n",
                   "tide.yaml:3: queues[0].preemptible: must be true or false, got 'True'");
    assert_refused("projects:\n  - name: p\n    budget_daily: 1\n    hard_cap: 1\n",
                   "tide.yaml:4: projects[0].hard_cap: must be true or false, got '1'");
    assert_refused("pools:\n  - name: p\n    predictive: yes\n",
                   "tide.yaml:3: pools[0].predictive: must be true or false, got 'yes'");
    assert_int_equal(load("server:\n  insecure_plain_http: true\n  shared_join_token: false\n"
                          "scheduler:\n  backfill: false\n"),
                     0);
    assert_true(cfg->insecure_plain_http);
    assert_true(cfg->shared_join_token_off);
    assert_false(sc.backfill);
}

static void test_a_queue_priority_outside_its_range_is_refused_not_replaced(void **state)
{
    (void)state;
    assert_refused("queues:\n  - name: q\n    priority_min: 0\n    priority_max: 99\n"
                   "    priority: 150\n",
                   "tide.yaml:5: queues[0].priority: must be from priority_min (0) to "
                   "priority_max (99), got 150");
    /* The range may come after the priority. */
    assert_refused("queues:\n  - name: q\n    priority: -1\n    priority_min: 0\n",
                   "tide.yaml:3: queues[0].priority: must be from priority_min (0) to "
                   "priority_max (1000), got -1");
    /* Not given: the nearest end of the range, as before. */
    assert_int_equal(load("queues:\n  - name: q\n    priority_min: 100\n    priority_max: 200\n"),
                     0);
    assert_int_equal(cfg->queues.queues[0].priority_default, 100);
    assert_int_equal(load("queues:\n  - name: q\n    priority_min: 10\n    priority_max: 20\n"
                          "    priority: 20\n"),
                     0);
    assert_int_equal(cfg->queues.queues[0].priority_default, 20);
}

/* In every mapping of the file; the last one silently won. */
static void test_a_key_given_twice_is_refused_naming_it_and_both_lines(void **state)
{
    (void)state;
    assert_refused("server:\n  heartbeat_ms: 1000\nserver:\n  kill_grace_s: 5\n",
                   "tide.yaml:3: server: duplicate key (first at line 1)");
    assert_refused("server:\n  heartbeat_ms: 1000\n  heartbeat_ms: 2000\n",
                   "tide.yaml:3: server.heartbeat_ms: duplicate key (first at line 2)");
    assert_refused("server: {heartbeat_ms: 1000, heartbeat_ms: 2000}\n",
                   "tide.yaml:1: server.heartbeat_ms: duplicate key (first at line 1)");
    assert_refused("scheduler:\n  backfill: true\n  policy: fifo\n  backfill: false\n",
                   "tide.yaml:4: scheduler.backfill: duplicate key (first at line 2)");
    assert_refused("retention:\n  sweep_s: 5\n  sweep_s: 6\n",
                   "tide.yaml:3: retention.sweep_s: duplicate key (first at line 2)");
    assert_refused("queues:\n  - name: a\n    max_running_jobs: 1\n    max_running_jobs: 2\n",
                   "tide.yaml:4: queues[0].max_running_jobs: duplicate key (first at line 3)");
    assert_refused("queues:\n  - name: a\n    name: b\n",
                   "tide.yaml:3: queues[0].name: duplicate key (first at line 2)");
    assert_refused("projects:\n  - name: p\n    weight: 1\n    weight: 2\n",
                   "tide.yaml:4: projects[0].weight: duplicate key (first at line 3)");
    assert_refused("pools:\n  - name: p\n    max_nodes: 1\n    max_nodes: 2\n",
                   "tide.yaml:4: pools[0].max_nodes: duplicate key (first at line 3)");
    assert_refused("pools:\n  - name: p\n    max_nodes: 1\n    schedule:\n      - days: all\n"
                   "        from: \"09:00\"\n        to: \"10:00\"\n        days: mon\n",
                   "tide.yaml:8: pools[0].schedule[0].days: duplicate key (first at line 5)");
    assert_refused("pools:\n  - name: p\n    max_nodes: 1\n    steps:\n      - add: 1\n"
                   "        add: 2\n",
                   "tide.yaml:6: pools[0].steps[0].add: duplicate key (first at line 5)");
}

/* Keys are matched as written: foo.name is not name. */
static void test_a_dotted_key_is_unknown_not_taken_for_its_last_part(void **state)
{
    (void)state;
    assert_refused("queues:\n  - name: a\n    foo.name: renamed\n",
                   "tide.yaml:3: queues[0].foo.name: unknown key");
    assert_refused("queues:\n  - name: a\n    bar.max_running_jobs: 3\n",
                   "tide.yaml:3: queues[0].bar.max_running_jobs: unknown key");
    assert_refused("pools:\n  - name: p\n    x.max_nodes: 3\n",
                   "tide.yaml:3: pools[0].x.max_nodes: unknown key");
    assert_refused("pools:\n  - name: p\n    max_nodes: 1\n    schedule:\n      - x.days: all\n",
                   "tide.yaml:5: pools[0].schedule[0].x.days: unknown key");
    assert_refused("pools:\n  - name: p\n    max_nodes: 1\n    steps:\n      - x.add: 1\n",
                   "tide.yaml:5: pools[0].steps[0].x.add: unknown key");
    assert_refused("server:\n  x.heartbeat_ms: 5\n",
                   "tide.yaml:2: server.x.heartbeat_ms: unknown key");
    assert_refused("server:\n  ? [heartbeat_ms]\n  : 5\n",
                   "tide.yaml:2: server.?: a key must be plain text");
    /* A NUL inside a quoted key or value would cut it short into a known one. */
    assert_refused("server:\n  \"heartbeat_ms\\0x\": 500\n", "tide.yaml:2: server.heartbeat_ms");
    assert_refused("server:\n  heartbeat_ms: \"500\\0x\"\n",
                   "tide.yaml:2: server.heartbeat_ms: must be a number");
}

/* A second document was never read, even with a syntax error in it. */
static void test_a_file_of_more_than_one_document_is_refused(void **state)
{
    (void)state;
    assert_refused("server:\n  heartbeat_ms: 1000\n---\nserver:\n  heartbeat_ms: 2000\n",
                   "tide.yaml:3: (top): a second YAML document starts here");
    assert_refused("server:\n  heartbeat_ms: 1000\n---\n: : : [\n", "tide.yaml:4:");
    assert_refused("server:\n  heartbeat_ms: 1000\n---\n", "tide.yaml:3: (top): a second");
    assert_int_equal(load("---\nserver:\n  heartbeat_ms: 700\n...\n"), 0);
    assert_int_equal(cfg->heartbeat_interval_ms, 700);
    assert_int_equal(load(""), 0);
    assert_int_equal(load("# nothing but a comment\n"), 0);
}

/* Each project is one entry: a second one, whatever keys it holds, is refused. */
static void test_a_project_listed_twice_is_refused(void **state)
{
    (void)state;
    assert_refused("projects:\n  - name: p\n    user: u\n  - name: p\n    budget_daily: 5\n",
                   "tide.yaml:4: projects[1]: project 'p' is listed twice (first at line 2)");
    assert_refused("projects:\n  - name: p\n    quota_gpus: 4\n  - name: q\n"
                   "  - name: p\n    budget_daily: 5\n",
                   "tide.yaml:5: projects[2]: project 'p' is listed twice (first at line 2)");
    assert_refused("projects:\n  - name: p\n  - name: p\n",
                   "tide.yaml:3: projects[1]: project 'p' is listed twice (first at line 2)");
    assert_int_equal(load("projects:\n  - name: p\n    quota_gpus: 4\n    budget_daily: 5\n"
                          "    user: u\n  - name: q\n    user: v\n"),
                     0);
    assert_int_equal(cfg->fairshare.count, 1);
    assert_int_equal(cfg->budgets.count, 1);
    assert_int_equal(cfg->nproject_users, 2);
    /* A later file's projects: replaces an earlier one's, users included. */
    assert_int_equal(load("projects:\n  - name: q\n    user: w\n"), 0);
    assert_int_equal(cfg->nproject_users, 1);
    assert_string_equal(cfg->project_users[0].user, "w");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_an_integer_is_digits_with_an_optional_minus, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_host_port_takes_a_port_of_digits_only, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_every_section_takes_the_same_booleans, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_a_queue_priority_outside_its_range_is_refused_not_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_key_given_twice_is_refused_naming_it_and_both_lines,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_dotted_key_is_unknown_not_taken_for_its_last_part,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_file_of_more_than_one_document_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_project_listed_twice_is_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
