/* Unit tests for the agent's server list (src/agent/agent_servers.c) and
 * --server URL lists (src/agent/agent_opts.c): leader following against
 * real HTTP servers on loopback (libmicrohttpd) and the epoch check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_opts.h"
#include "agent/agent_servers.h"
#include "common/http_client.h"

/* One fake server: answers every request with status and body, counting them. */
struct fake {
    struct MHD_Daemon *d;
    int port;
    int status;
    char body[256];
    int hits;
    char url[64];
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **con_cls)
{
    (void)url, (void)method, (void)version, (void)data;
    struct fake *f = cls;
    if (!*con_cls) {
        *con_cls = f;
        return MHD_YES;
    }
    if (*size) {
        *size = 0;
        return MHD_YES;
    }
    __atomic_fetch_add(&f->hits, 1, __ATOMIC_RELAXED);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(f->body), f->body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)f->status, r);
    MHD_destroy_response(r);
    return ok;
}

static void fake_start(struct fake *f, int status, const char *body)
{
    memset(f, 0, sizeof *f);
    f->status = status;
    snprintf(f->body, sizeof f->body, "%s", body);
    f->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
                            NULL, NULL, on_request, f, MHD_OPTION_END);
    assert_non_null(f->d);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
    assert_non_null(info);
    f->port = info->port;
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d", f->port);
}

static void fake_stop(struct fake *f)
{
    MHD_stop_daemon(f->d);
}

/* A loopback URL nothing listens on: a port a stopped fake had. */
static void dead_url(char *buf, size_t n)
{
    struct fake f;
    fake_start(&f, 200, "{}");
    snprintf(buf, n, "%s", f.url);
    fake_stop(&f);
}

static void follower_of(struct fake *f, const char *leader)
{
    char body[200];
    snprintf(body, sizeof body, "{\"error\":\"not the leader\",\"leader\":\"%s\"}", leader);
    fake_start(f, 503, body);
}

static int request(struct agent_servers *s, long *status)
{
    struct http_response resp;
    struct tide_err err;
    tide_err_clear(&err);
    int rc =
        agent_servers_request(s, "POST", "/v1/agent/heartbeat", "tok", "{}", 3000, &resp, &err);
    *status = rc == 0 ? resp.status : 0;
    if (rc == 0)
        http_response_release(&resp);
    return rc;
}

static void test_a_follower_sends_the_agent_to_the_leader_it_names(void **state)
{
    (void)state;
    struct fake leader, follower;
    fake_start(&leader, 200, "{\"actions\":[]}");
    follower_of(&follower, leader.url);
    char *urls[] = {follower.url, leader.url};
    struct agent_servers s;
    assert_int_equal(agent_servers_init(&s, urls, 2), 0);
    long status;
    assert_int_equal(request(&s, &status), 0);
    assert_int_equal(status, 200);
    assert_int_equal(follower.hits, 1);
    assert_int_equal(leader.hits, 1);
    assert_int_equal(s.current, 1);
    /* the next request goes straight to the leader */
    assert_int_equal(request(&s, &status), 0);
    assert_int_equal(follower.hits, 1);
    assert_int_equal(leader.hits, 2);
    agent_servers_release(&s);
    fake_stop(&leader);
    fake_stop(&follower);
}

static void test_an_unreachable_server_is_skipped(void **state)
{
    (void)state;
    struct fake leader;
    char dead[64];
    dead_url(dead, sizeof dead);
    fake_start(&leader, 200, "{}");
    char *urls[] = {dead, leader.url};
    struct agent_servers s;
    assert_int_equal(agent_servers_init(&s, urls, 2), 0);
    long status;
    assert_int_equal(request(&s, &status), 0);
    assert_int_equal(status, 200);
    assert_int_equal(s.current, 1);
    agent_servers_release(&s);
    fake_stop(&leader);
}

static void test_a_leader_outside_the_list_is_never_contacted(void **state)
{
    (void)state;
    struct fake trap, follower, other;
    fake_start(&trap, 200, "{}");
    follower_of(&follower, trap.url);
    fake_start(&other, 200, "{}");
    char *urls[] = {follower.url, other.url};
    struct agent_servers s;
    assert_int_equal(agent_servers_init(&s, urls, 2), 0);
    long status;
    assert_int_equal(request(&s, &status), 0);
    assert_int_equal(status, 200);
    assert_int_equal(trap.hits, 0);
    assert_int_equal(other.hits, 1);
    agent_servers_release(&s);
    fake_stop(&trap);
    fake_stop(&follower);
    fake_stop(&other);
}

static void test_when_nobody_leads_the_caller_sees_the_503(void **state)
{
    (void)state;
    struct fake a, b;
    follower_of(&a, "");
    follower_of(&b, "");
    char *urls[] = {a.url, b.url};
    struct agent_servers s;
    assert_int_equal(agent_servers_init(&s, urls, 2), 0);
    long status;
    assert_int_equal(request(&s, &status), 0);
    assert_int_equal(status, 503);
    assert_true(a.hits + b.hits <= 3); /* each once, plus at most one hop */
    agent_servers_release(&s);
    fake_stop(&a);
    fake_stop(&b);
}

static void test_no_reachable_server_is_an_io_error(void **state)
{
    (void)state;
    char d1[64], d2[64];
    dead_url(d1, sizeof d1);
    dead_url(d2, sizeof d2);
    char *urls[] = {d1, d2};
    struct agent_servers s;
    assert_int_equal(agent_servers_init(&s, urls, 2), 0);
    long status;
    assert_int_equal(request(&s, &status), TIDE_EIO);
    agent_servers_release(&s);
}

static void test_next_prefers_a_listed_leader_and_wraps_otherwise(void **state)
{
    (void)state;
    const char *urls[] = {"http://a:1", "http://b:2", "http://c:3"};
    assert_int_equal(agent_servers_next(urls, 3, 0, "http://c:3"), 2);
    assert_int_equal(agent_servers_next(urls, 3, 0, "http://c:3/"), 2);
    assert_int_equal(agent_servers_next(urls, 3, 0, "http://evil:3"), 1);
    assert_int_equal(agent_servers_next(urls, 3, 2, NULL), 0);
    assert_int_equal(agent_servers_next(urls, 3, 1, ""), 2);
}

static void test_not_leader_bodies_are_told_from_other_errors(void **state)
{
    (void)state;
    char buf[64];
    assert_true(agent_servers_not_leader("{\"error\":\"not the leader\",\"leader\":\"http://x:1\"}",
                                         buf, sizeof buf));
    assert_string_equal(buf, "http://x:1");
    assert_true(agent_servers_not_leader("{\"error\":\"not the leader\"}", buf, sizeof buf));
    assert_string_equal(buf, "");
    assert_false(agent_servers_not_leader("{\"error\":{\"code\":\"io\",\"message\":\"x\"}}", buf,
                                          sizeof buf));
    assert_false(agent_servers_not_leader("not json", buf, sizeof buf));
    assert_false(agent_servers_not_leader(NULL, buf, sizeof buf));
}

static void test_a_lower_epoch_is_refused_once_a_higher_was_seen(void **state)
{
    (void)state;
    char *urls[] = {"http://a:1"};
    struct agent_servers s;
    assert_int_equal(agent_servers_init(&s, urls, 1), 0);
    assert_true(agent_servers_epoch_ok(&s, 3));
    assert_true(agent_servers_epoch_ok(&s, 3));
    assert_false(agent_servers_epoch_ok(&s, 2));
    assert_true(agent_servers_epoch_ok(&s, 0)); /* a reply without one */
    assert_true(agent_servers_epoch_ok(&s, 5));
    assert_false(agent_servers_epoch_ok(&s, 4));
    assert_int_equal(s.epoch, 5);
    agent_servers_release(&s);
}

static int parse(const char *server, struct agent_opts *o, struct tide_err *err)
{
    char *argv[] = {"agent", "--server", (char *)server, "--name", "n1", NULL};
    tide_err_clear(err);
    return agent_opts_parse(5, argv, o, err);
}

static void test_server_lists_are_split_and_trimmed(void **state)
{
    (void)state;
    struct agent_opts o;
    struct tide_err err;
    assert_int_equal(parse("http://a:1/,https://b:2", &o, &err), 0);
    assert_int_equal(o.nservers, 2);
    assert_string_equal(o.server_urls[0], "http://a:1");
    assert_string_equal(o.server_urls[1], "https://b:2");
    agent_opts_release(&o);
    assert_int_equal(parse("http://a:1", &o, &err), 0);
    assert_int_equal(o.nservers, 1);
    agent_opts_release(&o);
}

static void test_bad_server_lists_name_the_flag(void **state)
{
    (void)state;
    struct agent_opts o;
    struct tide_err err;
    const char *bad[] = {"http://a:1,,http://b:2", "http://a:1,", "a:1", "http://a:1,http://a:1/"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse(bad[i], &o, &err), TIDE_EINVAL);
        assert_string_equal(err.field, "--server");
    }
}

int main(void)
{
    http_client_global_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_follower_sends_the_agent_to_the_leader_it_names),
        cmocka_unit_test(test_an_unreachable_server_is_skipped),
        cmocka_unit_test(test_a_leader_outside_the_list_is_never_contacted),
        cmocka_unit_test(test_when_nobody_leads_the_caller_sees_the_503),
        cmocka_unit_test(test_no_reachable_server_is_an_io_error),
        cmocka_unit_test(test_next_prefers_a_listed_leader_and_wraps_otherwise),
        cmocka_unit_test(test_not_leader_bodies_are_told_from_other_errors),
        cmocka_unit_test(test_a_lower_epoch_is_refused_once_a_higher_was_seen),
        cmocka_unit_test(test_server_lists_are_split_and_trimmed),
        cmocka_unit_test(test_bad_server_lists_name_the_flag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
