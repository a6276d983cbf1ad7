/*
 * Unit tests for the plain HTTP/1.1 client (src/common/http_plain.c): a
 * forked child serves canned answers on a loopback socket, one per path and
 * connection, so framing, headers and failures are checked against real
 * bytes. Kept connections are tested in test_http_client.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/http_plain.h"

static pid_t server_pid;
static int server_port, dead_port;

static void write_str(int fd, const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/* Waits for the client to close (it must stop reading on its own). */
static void drain(int fd)
{
    char buf[512];
    while (read(fd, buf, sizeof buf) > 0)
        ;
}

static void serve_one(int fd)
{
    char req[8192];
    size_t len = 0;
    while (len < sizeof req - 1) {
        ssize_t n = read(fd, req + len, sizeof req - 1 - len);
        if (n <= 0)
            return;
        len += (size_t)n;
        req[len] = '\0';
        char *end = strstr(req, "\r\n\r\n");
        if (!end)
            continue;
        const char *cl = strstr(req, "Content-Length: ");
        size_t want = (size_t)(end + 4 - req) + (cl ? strtoul(cl + 16, NULL, 10) : 0);
        if (len >= want)
            break;
    }
    char path[64] = "";
    sscanf(req, "%*s %63s", path);
    if (!strcmp(path, "/len")) {
        write_str(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
        drain(fd); /* stays open: the length alone must end the answer */
    } else if (!strcmp(path, "/chunked")) {
        write_str(fd, "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n");
        drain(fd);
    } else if (!strcmp(path, "/close")) {
        write_str(fd, "HTTP/1.0 404 Not Found\r\n\r\nno such thing");
    } else if (!strcmp(path, "/leader")) {
        write_str(fd, "HTTP/1.1 503 Service Unavailable\r\nx-tide-leader:  http://10.0.0.2:8080 "
                      "\r\nContent-Length: 50\r\n\r\n"
                      "{\"error\":\"not the leader\",\"leader\":\"http://x:1\"}\n\n");
        drain(fd);
    } else if (!strcmp(path, "/echo")) {
        char head[9000];
        snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%s", len, req);
        write_str(fd, head);
    } else if (!strcmp(path, "/bighead")) {
        char pad[10001];
        memset(pad, 'p', sizeof pad - 1);
        pad[sizeof pad - 1] = '\0';
        write_str(fd, "HTTP/1.1 200 OK\r\nX-Pad: ");
        write_str(fd, pad);
        write_str(fd, "\r\nContent-Length: 2\r\n\r\nok");
        drain(fd);
    } else if (!strcmp(path, "/garbage")) {
        write_str(fd, "SSH-2.0-OpenSSH_9.2\r\n\r\n");
    } else if (!strcmp(path, "/slow")) {
        drain(fd);
    } /* "/early" and anything else: closed without an answer */
}

static int setup(void **state)
{
    (void)state;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    int dead = socket(AF_INET, SOCK_STREAM, 0);
    if (dead < 0 || bind(dead, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(dead, (struct sockaddr *)&a, &alen) != 0)
        return -1;
    dead_port = ntohs(a.sin_port); /* bound, never listening: refused */
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_port = 0;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 16) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &alen) != 0)
        return -1;
    server_port = ntohs(a.sin_port);
    server_pid = fork();
    if (server_pid < 0)
        return -1;
    if (server_pid == 0) {
        for (;;) {
            int fd = accept(ls, NULL, NULL);
            if (fd < 0)
                _exit(0);
            serve_one(fd);
            close(fd);
        }
    }
    close(ls);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kill(server_pid, SIGKILL);
    waitpid(server_pid, NULL, 0);
    return 0;
}

/* After each test: the server here answers one request per connection
 * (some then wait for the client to close), so none is kept for the next. */
static int forget_connections(void **state)
{
    (void)state;
    http_plain_thread_release();
    return 0;
}

static struct http_response resp;
static struct tide_err err;

static int get(const char *path, const char *method, const char *body, struct http_plain_extra *x,
               long timeout_ms)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", server_port, path);
    tide_err_clear(&err);
    return http_plain_request(method, url, "tok", body, timeout_ms, x, &resp, &err);
}

static void test_a_content_length_ends_the_body_without_waiting_for_close(void **state)
{
    (void)state;
    assert_int_equal(get("/len", "GET", NULL, NULL, 5000), 0);
    assert_int_equal(resp.status, 200);
    assert_int_equal(resp.len, 5);
    assert_string_equal(resp.body, "hello");
    http_response_release(&resp);
}

static void test_a_chunked_body_is_joined(void **state)
{
    (void)state;
    assert_int_equal(get("/chunked", "POST", "{}", NULL, 5000), 0);
    assert_int_equal(resp.status, 201);
    assert_string_equal(resp.body, "hello");
    http_response_release(&resp);
}

static void test_a_body_without_length_ends_at_close_and_any_status_is_an_answer(void **state)
{
    (void)state;
    assert_int_equal(get("/close", "GET", NULL, NULL, 5000), 0);
    assert_int_equal(resp.status, 404);
    assert_string_equal(resp.body, "no such thing");
    http_response_release(&resp);
}

static void test_the_leader_header_is_reported(void **state)
{
    (void)state;
    struct http_plain_extra x = {0};
    assert_int_equal(get("/leader", "GET", NULL, &x, 5000), 0);
    assert_int_equal(resp.status, 503);
    assert_string_equal(x.leader, "http://10.0.0.2:8080");
    assert_non_null(strstr(resp.body, "not the leader"));
    http_response_release(&resp);
}

static void test_token_key_and_body_are_sent(void **state)
{
    (void)state;
    struct http_plain_extra x = {.idempotency_key = "k-123"};
    assert_int_equal(get("/echo", "POST", "{\"a\":1}", &x, 5000), 0);
    assert_int_equal(resp.status, 200);
    assert_non_null(strstr(resp.body, "POST /echo HTTP/1.1\r\n"));
    assert_non_null(strstr(resp.body, "\r\nAuthorization: Bearer tok\r\n"));
    assert_non_null(strstr(resp.body, "\r\nIdempotency-Key: k-123\r\n"));
    assert_non_null(strstr(resp.body, "\r\nContent-Length: 7\r\n"));
    assert_non_null(strstr(resp.body, "\r\n\r\n{\"a\":1}"));
    assert_int_equal(x.unsent, 0);
    assert_string_equal(x.leader, "");
    http_response_release(&resp);
}

static void test_a_long_request_head_and_a_long_answer_head_go_through(void **state)
{
    (void)state;
    char token[3001]; /* a head past the client's stack buffer */
    memset(token, 't', sizeof token - 1);
    token[sizeof token - 1] = '\0';
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/echo", server_port);
    assert_int_equal(http_plain_request("POST", url, token, "{\"b\":2}", 5000, NULL, &resp, &err),
                     0);
    assert_int_equal(resp.status, 200);
    assert_non_null(strstr(resp.body, token));
    assert_non_null(strstr(resp.body, "\r\n\r\n{\"b\":2}"));
    http_response_release(&resp);
    http_plain_thread_release();
    assert_int_equal(get("/bighead", "GET", NULL, NULL, 5000), 0); /* 10 kB of headers */
    assert_int_equal(resp.status, 200);
    assert_string_equal(resp.body, "ok");
    http_response_release(&resp);
}

static void test_a_token_with_a_line_break_is_refused_before_sending(void **state)
{
    (void)state;
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/echo", server_port);
    assert_int_equal(
        http_plain_request("GET", url, "tok\r\nX-Evil: 1", NULL, 5000, NULL, &resp, &err),
        TIDE_EINVAL);
    assert_string_equal(err.field, "token");
}

static void assert_no_answer(const char *path, long timeout_ms, const char *reason)
{
    struct http_plain_extra x = {0};
    assert_int_equal(get(path, "GET", NULL, &x, timeout_ms), TIDE_EIO);
    if (!strstr(err.message, reason))
        fail_msg("%s: '%s' lacks '%s'", path, err.message, reason);
    assert_null(resp.body);
    assert_int_equal(x.unsent, 0);
}

static void test_no_answer_is_an_error_that_says_why(void **state)
{
    (void)state;
    assert_no_answer("/early", 5000, "closed the connection before answering");
    assert_no_answer("/garbage", 5000, "not HTTP");
    assert_no_answer("/slow", 200, "no answer within 200 ms");
}

static void test_a_refused_connection_sent_nothing(void **state)
{
    (void)state;
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/jobs", dead_port);
    struct http_plain_extra x = {0};
    assert_int_equal(http_plain_request("POST", url, NULL, "{}", 5000, &x, &resp, &err), TIDE_EIO);
    assert_non_null(strstr(err.message, "refused"));
    assert_int_equal(x.unsent, 1);
}

static void test_urls_it_cannot_parse_are_refused(void **state)
{
    (void)state;
    const char *bad[] = {"https://127.0.0.1/", "http://",      "http://h:0/",
                         "http://h:99999/",    "http://[::1/", "http://h:80x/"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tide_err_clear(&err);
        assert_int_equal(http_plain_request("GET", bad[i], NULL, NULL, 1000, NULL, &resp, &err),
                         TIDE_EINVAL);
    }
}

static void test_only_numeric_hosts_and_localhost_go_over_plain_http(void **state)
{
    (void)state;
    assert_true(http_plain_handles("http://127.0.0.1:8080/v1/jobs"));
    assert_true(http_plain_handles("http://[::1]:8080/"));
    assert_true(http_plain_handles("http://localhost:1/"));
    assert_true(http_plain_handles("HTTP://10.1.2.3"));
    /* a name waits on the resolver: libcurl's keeps to the time limit */
    assert_false(http_plain_handles("http://tide.example.com:8080/"));
    assert_false(http_plain_handles("http://127.0.0.1.example.com/"));
    assert_false(http_plain_handles("https://127.0.0.1/"));
    assert_false(http_plain_handles("http:///"));
}

int main(void)
{
    /* SIGPIPE keeps its default, as in the CLI: the client must never raise it */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_a_content_length_ends_the_body_without_waiting_for_close,
                                  forget_connections),
        cmocka_unit_test_teardown(test_a_chunked_body_is_joined, forget_connections),
        cmocka_unit_test_teardown(
            test_a_body_without_length_ends_at_close_and_any_status_is_an_answer,
            forget_connections),
        cmocka_unit_test_teardown(test_the_leader_header_is_reported, forget_connections),
        cmocka_unit_test_teardown(test_token_key_and_body_are_sent, forget_connections),
        cmocka_unit_test_teardown(test_a_long_request_head_and_a_long_answer_head_go_through,
                                  forget_connections),
        cmocka_unit_test_teardown(test_a_token_with_a_line_break_is_refused_before_sending,
                                  forget_connections),
        cmocka_unit_test_teardown(test_no_answer_is_an_error_that_says_why, forget_connections),
        cmocka_unit_test_teardown(test_a_refused_connection_sent_nothing, forget_connections),
        cmocka_unit_test_teardown(test_urls_it_cannot_parse_are_refused, forget_connections),
        cmocka_unit_test(test_only_numeric_hosts_and_localhost_go_over_plain_http),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
