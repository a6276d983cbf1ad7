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
    static const char *const bad[] = {"127.0.0.1:+80", "127.0.0.1: 80", "127.0.0.1:80 ",
                                      "127.0.0.1:-0",  "127.0.0.1:0x50", "127.0.0.1:65536",
                                      "127.0.0.1:",    ":80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (config_host_port("listen", "--listen", bad[i], host, sizeof host, &port, &err) !=
            TIDE_EINVAL)
            fail_msg("%s was taken", bad[i]);
    assert_int_equal(config_host_port("listen", "--listen", "localhost:80", host, sizeof host,
                                      &port, &err),
                     0);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
