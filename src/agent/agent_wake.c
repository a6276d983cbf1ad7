/* The long-poll thread of the agent (agent_wake.h). */
#include "agent/agent_wake.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_servers.h"
#include "common/fsutil.h"
#include "common/http_client.h"
#include "common/log.h"

/* Beyond the server's hold: the answer's way back. */
#define WAKE_SLACK_MS 5000
/* The longest wait the server accepts. */
#define WAKE_MAX_WAIT_MS 30000
/* After a failed wait (server down, restarting): the main loop's
 * heartbeats find out when it is back; this only retries. */
#define WAKE_RETRY_MS 1000
/* How long agent_wake_stop waits for the thread (the HTTP client sees the
 * stop within about a second even without the signal). */
#define WAKE_STOP_MS 3000

/* The pipe's write end for on_child (a signal handler sees only globals). */
static int child_wake_fd = -1;
/* Set by on_child, cleared by agent_wake_child_exited. */
static volatile sig_atomic_t child_exited;
/* on_child is SIGCHLD's handler */
static bool child_handler;

/* A task exited: wake the main loop to reap it now rather than at its next
 * tick (self-pipe; async-signal-safe). */
static void on_child(int sig)
{
    (void)sig;
    int saved = errno;
    child_exited = 1; /* before the byte: the loop that wakes sees it */
    char byte = 2;
    if (write(child_wake_fd, &byte, 1) < 0) {
        /* full pipe: a wake is already pending */
    }
    errno = saved;
}

static bool stopping(struct agent_wake *w)
{
    return __atomic_load_n(&w->stop, __ATOMIC_ACQUIRE) != 0;
}

/* Waits ms on w->cond, under w->mu, until stopped or (when done_only) the
 * thread is done; false when that did not happen in time. */
static bool cond_wait_ms(struct agent_wake *w, int64_t ms, bool done_only)
{
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    at.tv_sec += ms / 1000;
    at.tv_nsec += (ms % 1000) * 1000000;
    if (at.tv_nsec >= 1000000000) {
        at.tv_sec++;
        at.tv_nsec -= 1000000000;
    }
    while (!(done_only ? w->done : stopping(w)))
        if (pthread_cond_timedwait(&w->cond, &w->mu, &at) != 0)
            return done_only ? w->done : stopping(w);
    return true;
}

/* Sleeps ms, or less when the wake is stopped. */
static void nap_ms(struct agent_wake *w, int64_t ms)
{
    pthread_mutex_lock(&w->mu);
    cond_wait_ms(w, ms, false);
    pthread_mutex_unlock(&w->mu);
}

static void wake_loop(struct agent_wake *w)
{
    char token[sizeof w->token];
    char body[64];
    while (!stopping(w)) {
        pthread_mutex_lock(&w->mu);
        memcpy(token, w->token, sizeof token);
        int wait_ms = w->wait_ms;
        pthread_mutex_unlock(&w->mu);
        if (!token[0]) {
            nap_ms(w, 100);
            continue;
        }
        snprintf(body, sizeof body, "{\"wait_ms\": %d}", wait_ms);
        struct http_response resp;
        struct tide_err err;
        tide_err_clear(&err);
        if (agent_servers_request(w->servers, "POST", "/v1/agent/wait", token, body,
                                  wait_ms + WAKE_SLACK_MS, &resp, &err) != 0) {
            nap_ms(w, WAKE_RETRY_MS);
            continue;
        }
        long status = resp.status;
        json_t *root = status == 200 ? json_loads(resp.body, 0, NULL) : NULL;
        bool wake = json_is_true(json_object_get(root, "wake"));
        if (wake && json_array_size(json_object_get(root, "actions")) > 0) {
            /* the main loop acts on it (agent_wake_take); a newer answer
             * replaces an older one, as both are derived from the state */
            char *answer = resp.body ? strdup(resp.body) : NULL;
            pthread_mutex_lock(&w->mu);
            free(w->answer);
            w->answer = answer;
            memcpy(w->answer_token, token, sizeof w->answer_token);
            pthread_mutex_unlock(&w->mu);
        }
        json_decref(root);
        http_response_release(&resp);
        if (status == 404) {
            log_info("the server has no /v1/agent/wait: heartbeats on the interval only");
            return;
        }
        if (status != 200) {
            nap_ms(w, WAKE_RETRY_MS);
            continue;
        }
        if (wake) {
            char byte = 1;
            if (write(w->fds[1], &byte, 1) < 0 && errno != EAGAIN)
                log_warn("agent wake pipe: %s", strerror(errno));
            /* no pause: the server marked what it answered as delivered,
             * so the next wait parks until something new is decided */
        }
    }
}

static void *wake_thread(void *arg)
{
    struct agent_wake *w = arg;
    http_client_cancel_on(&w->stop);
    wake_loop(w);
    http_client_thread_release(); /* its kept connection, now rather than at exit */
    pthread_mutex_lock(&w->mu);
    w->done = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Static: the detached thread outlives agent_loop_run's frame. */
static struct agent_wake the_wake;

struct agent_wake *agent_wake_start(struct agent_servers *servers)
{
    struct agent_wake *w = &the_wake;
    if (w->started)
        return w;
    memset(w, 0, sizeof *w);
    w->fds[0] = w->fds[1] = -1;
    if (pthread_mutex_init(&w->mu, NULL) != 0)
        return NULL;
    if (clock_cond_init(&w->cond, CLOCK_MONOTONIC) != 0)
        return NULL;
    w->servers = servers;
    if (pipe(w->fds) != 0) {
        log_warn("agent wake: %s; heartbeats on the interval only", strerror(errno));
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(w->fds[i], F_SETFL, fcntl(w->fds[i], F_GETFL) | O_NONBLOCK);
        fcntl(w->fds[i], F_SETFD, FD_CLOEXEC); /* tasks do not inherit it */
    }
    w->wait_ms = 1000;
    child_wake_fd = w->fds[1];
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_child;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGCHLD, &sa, NULL) != 0)
        log_warn("agent wake: SIGCHLD: %s; exits are seen on the 50 ms tick", strerror(errno));
    else
        child_handler = true;
    /* joinable, so that agent_wake_stop may signal it until it is joined */
    if (pthread_create(&w->thread, NULL, wake_thread, w) != 0)
        return NULL;
    w->started = true;
    return w;
}

void agent_wake_stop(struct agent_wake *w)
{
    if (!w || !w->started)
        return;
    pthread_mutex_lock(&w->mu);
    __atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
    /* a wait parked in poll() returns at the signal (EINTR) and the HTTP
     * client then sees the flag; on_child only writes a byte to the pipe */
    pthread_kill(w->thread, SIGCHLD);
    pthread_mutex_lock(&w->mu);
    bool done = cond_wait_ms(w, WAKE_STOP_MS, true);
    pthread_mutex_unlock(&w->mu);
    w->started = false;
    if (done) {
        pthread_join(w->thread, NULL); /* it only returns now */
        free(w->answer); /* one the loop did not take */
        w->answer = NULL;
        return;
    }
    log_warn("agent wake: the long-poll thread did not stop within %d ms", WAKE_STOP_MS);
    pthread_detach(w->thread);
}

void agent_wake_set(struct agent_wake *w, const char *token, int wait_ms)
{
    if (!w || !w->started)
        return;
    pthread_mutex_lock(&w->mu);
    snprintf(w->token, sizeof w->token, "%s", token ? token : "");
    /* the server takes 0 to 30000 (docs/api.md) and holds at most half
     * its node timeout anyway */
    w->wait_ms = wait_ms <= 0 ? 1000 : wait_ms > WAKE_MAX_WAIT_MS ? WAKE_MAX_WAIT_MS : wait_ms;
    pthread_mutex_unlock(&w->mu);
}

char *agent_wake_take(struct agent_wake *w, char *token, size_t n)
{
    if (!w || !w->started)
        return NULL;
    pthread_mutex_lock(&w->mu);
    char *answer = w->answer;
    w->answer = NULL;
    if (n)
        snprintf(token, n, "%s", w->answer_token);
    pthread_mutex_unlock(&w->mu);
    return answer;
}

bool agent_wake_watches_children(void)
{
    return child_handler;
}

bool agent_wake_child_exited(void)
{
    if (!child_exited)
        return false;
    child_exited = 0; /* before the caller reaps: a later exit sets it again */
    return true;
}

bool agent_wake_wait(struct agent_wake *w, int64_t ms, const int *fds, size_t nfds)
{
    if (ms < 0)
        ms = 0;
    struct pollfd p[1 + AGENT_WAKE_MAX_FDS];
    size_t n = 0;
    bool wake = w && w->started;
    if (wake)
        p[n++] = (struct pollfd){.fd = w->fds[0], .events = POLLIN};
    for (size_t i = 0; i < nfds && n < sizeof p / sizeof p[0]; i++)
        p[n++] = (struct pollfd){.fd = fds[i], .events = POLLIN};
    /* without descriptors this is a sleep, and a signal still cuts it short */
    if (poll(p, (nfds_t)n, (int)ms) <= 0 || !wake || !p[0].revents)
        return false;
    char buf[64];
    while (read(w->fds[0], buf, sizeof buf) > 0)
        ;
    return true;
}
