/*
 * Unit tests for the agent's and CLI's HTTP client (src/common/http_client.c)
 * on http:// URLs, which go over the plain-socket client (http_plain.c):
 * connections kept per thread, the "nothing was sent" answer when a kept
 * connection dies under a request, answer framings and whether they leave
 * the connection fit for the next request, and cancelling. A loopback
 * server in this process (a thread per connection) counts the connections
 * and requests it gets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/http_client.h"

#define MAX_CONNS 16

static struct {
    int listen_fd;
    int port;
    pthread_t acceptor;
    pthread_mutex_t mu;
    int conn_fds[MAX_CONNS];
    pthread_t conn_threads[MAX_CONNS];
    int accepted; /* connections accepted */
    int closed;   /* connections the client closed */
    int requests; /* requests read in full */
} srv;

static void write_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/* Reads one request into buf; its path into path. 0, or -1 when the client
 * closed (or the test shut the connection). */
static int read_request(int fd, char *buf, size_t cap, char *path, size_t path_cap)
{
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n <= 0)
            return -1;
        len += (size_t)n;
        buf[len] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (!end)
            continue;
        const char *cl = strstr(buf, "Content-Length: ");
        size_t want = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 16, NULL, 10) : 0);
        if (len >= want)
            break;
    }
    char fmt[16];
    snprintf(fmt, sizeof fmt, "%%*s %%%zus", path_cap - 1);
    if (sscanf(buf, fmt, path) != 1)
        path[0] = '\0';
    return 0;
}

/* Serves one connection, request after request (HTTP/1.1 keep-alive):
 * /ok answers; /answer-then-close answers and closes without saying so;
 * /stop stops listening, then closes without an answer (a server that
 * died with the request in hand); /drop-next answers, then closes at the
 * next request without answering it (while still listening); /chunked
 * answers in chunks with a trailer; /close-header answers with
 * "Connection: close" yet serves on; /until-close answers without a length
 * and closes; /hang never answers. */
static void *serve_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[8192], path[128];
    int drop_next = 0;
    while (read_request(fd, buf, sizeof buf, path, sizeof path) == 0) {
        pthread_mutex_lock(&srv.mu);
        srv.requests++;
        pthread_mutex_unlock(&srv.mu);
        if (!strcmp(path, "/stop")) {
            shutdown(srv.listen_fd, SHUT_RDWR);
            break;
        }
        if (drop_next)
            break;
        if (!strcmp(path, "/hang"))
            continue;
        static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n";
        static const char chunked[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                      "6\r\nhello \r\na;note=1\r\n0123456789\r\n"
                                      "0\r\nX-Trailer: yes\r\n\r\n";
        static const char close_header[] = "HTTP/1.1 200 OK\r\nConnection: close\r\n"
                                           "Content-Length: 3\r\n\r\nok\n";
        static const char until_close[] = "HTTP/1.1 200 OK\r\n\r\nall of it";
        if (!strcmp(path, "/chunked"))
            write_all(fd, chunked, sizeof chunked - 1);
        else if (!strcmp(path, "/close-header"))
            write_all(fd, close_header, sizeof close_header - 1);
        else if (!strcmp(path, "/until-close"))
            write_all(fd, until_close, sizeof until_close - 1);
        else
            write_all(fd, ok, sizeof ok - 1);
        drop_next = !strcmp(path, "/drop-next");
        if (!strcmp(path, "/answer-then-close") || !strcmp(path, "/until-close"))
            break;
    }
    shutdown(fd, SHUT_RDWR);
    pthread_mutex_lock(&srv.mu);
    srv.closed++;
    pthread_mutex_unlock(&srv.mu);
    return NULL;
}

static void *accept_loop(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(srv.listen_fd, NULL, NULL);
        if (fd < 0)
            return NULL;
        pthread_mutex_lock(&srv.mu);
        int i = srv.accepted++;
        if (i >= MAX_CONNS) {
            pthread_mutex_unlock(&srv.mu);
            close(fd);
            continue;
        }
        srv.conn_fds[i] = fd;
        if (pthread_create(&srv.conn_threads[i], NULL, serve_conn, (void *)(intptr_t)fd) != 0)
            srv.conn_fds[i] = -1;
        pthread_mutex_unlock(&srv.mu);
    }
}

static int setup(void **state)
{
    (void)state;
    memset(&srv, 0, sizeof srv);
    pthread_mutex_init(&srv.mu, NULL);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    srv.listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (srv.listen_fd < 0 || bind(srv.listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(srv.listen_fd, 16) != 0 ||
        getsockname(srv.listen_fd, (struct sockaddr *)&a, &alen) != 0)
        return -1;
    srv.port = ntohs(a.sin_port);
    return pthread_create(&srv.acceptor, NULL, accept_loop, NULL) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    shutdown(srv.listen_fd, SHUT_RDWR);
    pthread_join(srv.acceptor, NULL);
    close(srv.listen_fd);
    pthread_mutex_lock(&srv.mu);
    int n = srv.accepted < MAX_CONNS ? srv.accepted : MAX_CONNS;
    for (int i = 0; i < n; i++)
        if (srv.conn_fds[i] >= 0)
            shutdown(srv.conn_fds[i], SHUT_RDWR); /* a kept connection: end its reader */
    pthread_mutex_unlock(&srv.mu);
    for (int i = 0; i < n; i++)
        if (srv.conn_fds[i] >= 0) {
            pthread_join(srv.conn_threads[i], NULL);
            close(srv.conn_fds[i]);
        }
    pthread_mutex_destroy(&srv.mu);
    return 0;
}

static int counter(const int *field)
{
    pthread_mutex_lock(&srv.mu);
    int v = *field;
    pthread_mutex_unlock(&srv.mu);
    return v;
}

/* The body and error of the last request(). */
static char last_body[256];
static _Thread_local struct tide_err last_err;

/* One request to path on the test server, waiting at most timeout_ms; the
 * HTTP status, or -1 when it failed (x, when given, says whether it was
 * sent). */
static long request_within(const char *method, const char *path, long timeout_ms,
                           struct http_request_extra *x)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", srv.port, path);
    struct http_response resp;
    tide_err_clear(&last_err);
    const char *body = strcmp(method, "GET") ? "{\"n\": 1}" : NULL;
    if (http_request_ex(method, url, "tok", body, timeout_ms, x, &resp, &last_err) != 0)
        return -1;
    long status = resp.status;
    snprintf(last_body, sizeof last_body, "%s", resp.body);
    http_response_release(&resp);
    return status;
}

static long request(const char *method, const char *path, struct http_request_extra *x)
{
    return request_within(method, path, 3000, x);
}

static void sleep_ms(long ms)
{
    nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L}, NULL);
}

static void test_requests_of_one_thread_share_one_connection(void **state)
{
    (void)state;
    for (int i = 0; i < 5; i++)
        assert_int_equal(request(i % 2 ? "POST" : "GET", "/ok", NULL), 200);
    assert_int_equal(counter(&srv.requests), 5);
    assert_int_equal(counter(&srv.accepted), 1);
}

static void *three_requests(void *arg)
{
    long *statuses = arg;
    for (int i = 0; i < 3; i++)
        statuses[i] = request("POST", "/ok", NULL);
    return NULL;
}

static void test_each_thread_has_its_own_connection_closed_when_it_ends(void **state)
{
    (void)state;
    assert_int_equal(request("GET", "/ok", NULL), 200);
    long statuses[3] = {0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, three_requests, statuses), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(statuses[i], 200);
    assert_int_equal(request("GET", "/ok", NULL), 200);
    assert_int_equal(counter(&srv.requests), 5);
    assert_int_equal(counter(&srv.accepted), 2);
    /* the thread's connection closed as it ended; this thread's stays open */
    for (int i = 0; i < 500 && counter(&srv.closed) < 1; i++)
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    assert_int_equal(counter(&srv.closed), 1);
}

static void test_a_post_without_a_key_is_not_sent_again_when_its_kept_connection_dies(void **state)
{
    (void)state;
    assert_int_equal(request("GET", "/drop-next", NULL), 200);
    struct http_request_extra x = {0};
    /* the server may have done it before the connection died: not twice */
    assert_int_equal(request("POST", "/ok", &x), -1);
    assert_int_equal(x.unsent, 0);
    assert_int_equal(counter(&srv.requests), 2);
    assert_int_equal(counter(&srv.accepted), 1);
}

static void test_a_kept_connection_the_server_closed_is_replaced(void **state)
{
    (void)state;
    assert_int_equal(request("GET", "/answer-then-close", NULL), 200);
    /* the close may reach the client after it picked the connection again:
     * then only a request the server does nothing twice for is repeated */
    struct http_request_extra x = {.repeatable = 1};
    assert_int_equal(request("POST", "/ok", &x), 200);
    assert_int_equal(counter(&srv.requests), 2);
    assert_int_equal(counter(&srv.accepted), 2);
}

static void test_a_request_lost_on_a_kept_connection_is_sent_again_on_a_new_one(void **state)
{
    (void)state;
    assert_int_equal(request("GET", "/drop-next", NULL), 200);
    struct http_request_extra x = {.idempotency_key = "k1"};
    assert_int_equal(request("POST", "/ok", &x), 200);
    assert_string_equal(last_body, "ok\n");
    assert_int_equal(x.unsent, 0);
    assert_int_equal(counter(&srv.requests), 3); /* the lost one, and again */
    assert_int_equal(counter(&srv.accepted), 2);
}

static void test_a_request_lost_on_a_kept_connection_does_not_count_as_unsent(void **state)
{
    (void)state;
    assert_int_equal(request("GET", "/ok", NULL), 200);
    /* sent on the kept connection; the server stops listening and drops it
     * unanswered, so the retry on a new connection is refused */
    struct http_request_extra x = {.idempotency_key = "k1"};
    assert_int_equal(request("POST", "/stop", &x), -1);
    assert_int_equal(counter(&srv.requests), 2);
    assert_int_equal(x.unsent, 0);
}

static void test_a_refused_connection_counts_as_unsent(void **state)
{
    (void)state;
    assert_int_equal(request("GET", "/ok", NULL), 200);
    assert_int_equal(request("POST", "/stop", NULL), -1);
    /* nothing listens now and the kept connection is gone */
    struct http_request_extra x = {0};
    assert_int_equal(request("POST", "/ok", &x), -1);
    assert_int_equal(x.unsent, 1);
    assert_int_equal(counter(&srv.requests), 2);
}

static void test_a_thread_cancelled_sends_nothing_and_says_so(void **state)
{
    (void)state;
    assert_int_equal(request("GET", "/ok", NULL), 200);
    int flag = 1;
    http_client_cancel_on(&flag);
    assert_true(http_client_cancelled());
    assert_int_equal(request("POST", "/ok", NULL), -1);
    http_client_cancel_on(NULL);
    assert_false(http_client_cancelled());
    assert_int_equal(request("GET", "/ok", NULL), 200);
    assert_int_equal(counter(&srv.requests), 2);
}

static void test_releasing_a_threads_handle_closes_its_connection(void **state)
{
    (void)state;
    assert_int_equal(request("GET", "/ok", NULL), 200);
    http_client_thread_release();
    for (int i = 0; i < 500 && counter(&srv.closed) < 1; i++)
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    assert_int_equal(counter(&srv.closed), 1);
    assert_int_equal(request("GET", "/ok", NULL), 200); /* a new handle, a new connection */
    assert_int_equal(counter(&srv.accepted), 2);
}

static void test_a_chunked_answer_is_joined_and_its_connection_kept(void **state)
{
    (void)state;
    assert_int_equal(request("GET", "/chunked", NULL), 200);
    assert_string_equal(last_body, "hello 0123456789");
    /* the trailer was read too: the next answer is not taken for garbage */
    assert_int_equal(request("POST", "/ok", NULL), 200);
    assert_string_equal(last_body, "ok\n");
    assert_int_equal(counter(&srv.accepted), 1);
}

static void test_an_answer_saying_connection_close_does_not_keep_it(void **state)
{
    (void)state;
    assert_int_equal(request("GET", "/close-header", NULL), 200);
    assert_string_equal(last_body, "ok\n");
    /* the server here would serve on; the client must not ask it to */
    assert_int_equal(request("GET", "/ok", NULL), 200);
    assert_int_equal(counter(&srv.accepted), 2);
    assert_int_equal(counter(&srv.requests), 2);
}

static void test_an_answer_without_length_ends_at_close_and_the_next_opens_anew(void **state)
{
    (void)state;
    assert_int_equal(request("GET", "/until-close", NULL), 200);
    assert_string_equal(last_body, "all of it");
    assert_int_equal(request("GET", "/ok", NULL), 200);
    assert_int_equal(counter(&srv.accepted), 2);
}

static void test_a_connection_idle_past_the_keep_limit_is_closed_not_reused(void **state)
{
    (void)state;
    assert_int_equal(request("GET", "/ok", NULL), 200);
    sleep_ms(5200);                            /* past CLIENT_KEEP_IDLE_S (http_plain.h) */
    assert_int_equal(counter(&srv.closed), 0); /* the server here never closes it */
    assert_int_equal(request("GET", "/ok", NULL), 200);
    assert_int_equal(counter(&srv.accepted), 2);
    for (int i = 0; i < 500 && counter(&srv.closed) < 1; i++)
        sleep_ms(10);
    assert_int_equal(counter(&srv.closed), 1);
}

struct cancel_run {
    int flag;
    long status;
    char message[512];
};

static void *request_until_cancelled(void *arg)
{
    struct cancel_run *run = arg;
    http_client_cancel_on(&run->flag);
    run->status = request_within("GET", "/hang", 60000, NULL);
    snprintf(run->message, sizeof run->message, "%s", last_err.message);
    http_client_thread_release();
    return NULL;
}

static void test_a_request_under_way_stops_when_its_flag_is_set(void **state)
{
    (void)state;
    struct cancel_run run = {0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, request_until_cancelled, &run), 0);
    for (int i = 0; i < 500 && counter(&srv.requests) < 1; i++)
        sleep_ms(10);
    assert_int_equal(counter(&srv.requests), 1); /* it is waiting for the answer */
    __atomic_store_n(&run.flag, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(run.status, -1);
    /* not the 60 s timeout's "no answer within" */
    if (!strstr(run.message, "cancelled"))
        fail_msg("'%s' does not say cancelled", run.message);
}

static void test_a_forked_child_neither_uses_nor_closes_its_parents_connection(void **state)
{
    (void)state;
    assert_int_equal(request("GET", "/ok", NULL), 200);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        long status = request("GET", "/ok", NULL);
        http_client_thread_release();
        _exit(status == 200 ? 0 : 1);
    }
    int wstatus = 0;
    assert_int_equal(waitpid(pid, &wstatus, 0), pid);
    assert_true(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
    assert_int_equal(counter(&srv.accepted), 2); /* the child's own */
    assert_int_equal(request("GET", "/ok", NULL), 200);
    assert_int_equal(counter(&srv.accepted), 2); /* the parent's still up, reused */
    assert_int_equal(counter(&srv.requests), 3);
}

/* Last: every request above went to an http:// URL. */
static void test_http_requests_never_load_libcurl(void **state)
{
    (void)state;
    assert_int_equal(request("GET", "/ok", NULL), 200);
    FILE *maps = fopen("/proc/self/maps", "r");
    assert_non_null(maps);
    char line[512];
    int found = 0, lines = 0;
    while (fgets(line, sizeof line, maps)) {
        lines++;
        found |= strstr(line, "libcurl") != NULL;
    }
    fclose(maps);
    assert_true(lines > 0);
    assert_false(found);
}

int main(void)
{
    /* SIGPIPE keeps its default, as in the CLI: the client must never raise it */
    if (http_client_global_init() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_requests_of_one_thread_share_one_connection, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_each_thread_has_its_own_connection_closed_when_it_ends,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_post_without_a_key_is_not_sent_again_when_its_kept_connection_dies, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_a_kept_connection_the_server_closed_is_replaced, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_a_request_lost_on_a_kept_connection_is_sent_again_on_a_new_one, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_request_lost_on_a_kept_connection_does_not_count_as_unsent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_refused_connection_counts_as_unsent, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_thread_cancelled_sends_nothing_and_says_so, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_releasing_a_threads_handle_closes_its_connection,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_chunked_answer_is_joined_and_its_connection_kept,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_answer_saying_connection_close_does_not_keep_it,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_an_answer_without_length_ends_at_close_and_the_next_opens_anew, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_connection_idle_past_the_keep_limit_is_closed_not_reused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_request_under_way_stops_when_its_flag_is_set, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_a_forked_child_neither_uses_nor_closes_its_parents_connection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_requests_never_load_libcurl, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
